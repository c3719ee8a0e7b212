"""The connector form, the step-by-step connection test and the answer settings page in a real browser."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from connectors.models import ConnectorInstance
from tenants.context import tenant_context
from tests.answers.helpers import RecordingServer
from tests.browser import Org, gunicorn, login, shot
from tests.connectors.integration.helpers import make_instance
from tests.connectors.slack.fake_slack import TOKEN, FakeSlackServer
from tests.security.secret_canary import secret
from tests.support import unique


def script_errors(page: Any) -> list[str]:
    # A refused form answers 400 on purpose (as the API does); Chromium logs that status as a console error.
    return [e for e in page.js_errors if "status of 400" not in e]


def test_a_half_configured_sharepoint_connector_shows_its_field_errors(web_server: str, page: Any, org: Org) -> None:
    login(page, web_server, org.admin, org.passwords[org.admin.username])
    page.goto(web_server + "/console/connectors/new")
    page.select_option("#c-kind", "sharepoint")
    page.click("form[aria-label='Choose the connector type'] button")
    expect(page.locator("#id_client_id-help")).to_contain_text("Sites.Read.All")
    expect(page.locator("#id_client_id-help")).to_contain_text("GroupMember.Read.All")
    name = unique("Intranet")
    page.fill("#id_name", name)
    page.fill("#id_tenant_id", "contoso.onmicrosoft.com")
    page.click("#connector-form button[type=submit]")
    expect(page.locator("#form-errors")).to_be_visible()
    for field in ("client_id", "site_ids"):
        expect(page.locator(f"[data-field={field}]")).to_have_text("This setting is required.")
    expect(page.locator("[data-field=client_secret]")).to_contain_text("is needed")
    expect(page.locator("#id_tenant_id")).to_have_value("contoso.onmicrosoft.com")  # typed values survive
    # The raw JSON is behind the advanced toggle, and {} there is refused the same way.
    expect(page.locator("#id_raw_config")).to_be_hidden()
    page.click("details.advanced summary")
    page.check("#id_advanced")
    page.fill("#id_raw_config", "{}")
    page.fill("#id_client_secret", "s")
    page.click("#connector-form button[type=submit]")
    expect(page.locator("[data-field=raw_config]")).to_contain_text(
        "missing config keys: tenant_id, client_id, site_ids"
    )
    shot(page, "console-connector-half-configured")
    with tenant_context(org.tenant.pk):
        assert not ConnectorInstance.objects.filter(source__name=name).exists()
    assert script_errors(page) == []


@pytest.fixture
def slack() -> Iterator[FakeSlackServer]:
    with FakeSlackServer() as server:
        yield server


def test_the_connection_test_names_the_step_that_failed(web_server: str, page: Any, org: Org,
                                                        slack: FakeSlackServer) -> None:  # fmt: skip
    slack.fake.scopes.discard("channels:history")
    slack.fake.scopes.discard("users:read")  # the app was installed without it
    # The operator pointed the connector at the loopback fake (a tenant admin could not).
    instance = make_instance(org.tenant.pk, "slack", unique("Team chat"),
                             {"base_url": slack.base_url, "team_id": "T0CAIRN"},
                             {"token": TOKEN, "signing_secret": secret("ui-signing")})  # fmt: skip
    login(page, web_server, org.admin, org.passwords[org.admin.username])
    page.goto(f"{web_server}/console/connectors/{instance.pk}/")
    expect(page.locator("#id_token-help")).to_contain_text("users:read.email")
    page.click("text=Test connection")
    result = page.locator("#test-result")
    expect(result.locator("h3")).to_contain_text("failed")
    expect(result.locator("[data-step=auth] .status")).to_have_text("ok")
    expect(result.locator("[data-step=listing] .status")).to_have_text("ok")
    expect(result.locator("[data-step=permissions] .status")).to_have_text("failed")
    expect(result.locator("[data-step=permissions] .message")).to_contain_text("lacks the scope users:read")
    expect(result.locator("[data-step=webhook]")).to_contain_text("No webhook delivery has arrived yet")
    shot(page, "console-connector-test-steps")
    # Granting the scope turns the step green.
    slack.fake.scopes.add("users:read")
    page.click("text=Test connection")
    expect(result.locator("[data-step=permissions] .status")).to_have_text("ok")
    assert script_errors(page) == []


@pytest.fixture(scope="module")
def llm() -> Iterator[RecordingServer]:
    server = RecordingServer()
    yield server
    server.httpd.shutdown()


@pytest.fixture(scope="module")
def llm_web_server(llm: RecordingServer) -> Iterator[str]:
    # The operator approves the loopback model server for this server process only.
    with gunicorn({"CAIRN_OPERATOR_PRIVATE_ENDPOINTS": llm.url()}, log_name="gunicorn-llm.log") as base:
        yield base


def test_an_admin_sets_an_openai_compatible_writer_and_tests_it(llm_web_server: str, llm: RecordingServer,
                                                                page: Any, org: Org) -> None:  # fmt: skip
    body = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": '{"ok": true}'}}]})
    llm.responses["/v1/chat/completions"] = (200, {"Content-Type": "application/json"}, body.encode())
    key = secret("ui-llm-key")
    login(page, llm_web_server, org.admin, org.passwords[org.admin.username])
    page.click("text=Admin console")
    page.click("nav.console-nav >> text=Answer settings")
    page.select_option("#id_writer", "openai_compatible")
    page.fill("#id_endpoint_url", llm.url("/v1"))
    page.click("#answer-settings-form button[type=submit]")
    expect(page.locator("[data-field=__all__], #form-errors")).to_contain_text("needs endpoint_url and model")
    page.fill("#id_model", "tiny-model")
    page.fill("#id_api_key", key)
    page.click("#answer-settings-form button[type=submit]")
    expect(page.locator(".flash").first).to_contain_text("Answer settings saved")
    expect(page.locator("#id_api_key")).to_have_value("")
    assert key not in page.content()
    page.click("text=Test the writer")
    expect(page.locator("#test-result")).to_contain_text("Test passed: The model tiny-model answered")
    assert llm.requests[-1]["path"] == "/v1/chat/completions"
    shot(page, "console-answer-settings")
    llm.responses["/v1/chat/completions"] = (503, {}, b"")
    page.click("text=Test the writer")
    expect(page.locator("#test-result")).to_contain_text("Test failed")
    assert script_errors(page) == []
