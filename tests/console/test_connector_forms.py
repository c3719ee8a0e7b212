"""The console's typed connector forms and the step-by-step connection test (views and connectors.checks)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from connectors.actions import do_update_connector_instance
from connectors.checks import run_checks
from connectors.models import ConnectorInstance
from core.crypto import decrypt_json
from tenants.audit import SYSTEM
from tenants.context import tenant_context
from tenants.models import AuditEvent
from tests.connectors.confluence.fake_confluence import TOKEN as CONFLUENCE_TOKEN
from tests.connectors.confluence.fake_confluence import FakeConfluence
from tests.connectors.integration.helpers import make_instance
from tests.connectors.slack.fake_slack import TOKEN as SLACK_TOKEN
from tests.connectors.slack.fake_slack import FakeSlackServer
from tests.security.secret_canary import secret
from tests.support import client_for, field_errors, signed_in, unique


@pytest.fixture(autouse=True)
def _private_queue(settings: Any) -> None:
    # A SharePoint instance queues its Graph subscriptions on commit; keep them off the shared queue.
    settings.CAIRN = {**settings.CAIRN, "CONNECTOR_QUEUE": unique("test-inline")}


def steps(html: str) -> dict[str, str]:
    return dict(re.findall(r'data-step="([a-z]+)" data-status="([a-z]+)"', html))


def instances_named(tenant_id: int, name: str) -> int:
    with tenant_context(tenant_id):
        return ConnectorInstance.objects.filter(source__name=name).count()


# --- the forms -----------------------------------------------------------------------------------------------


def test_a_half_configured_sharepoint_connector_gets_field_errors_and_is_not_saved(cast) -> None:
    alice, name = signed_in(cast.alice), unique("Intranet")
    page = alice.post("/console/connectors/new", {"kind": "sharepoint", "name": name})
    assert page.status_code == 400
    errors = field_errors(page.content.decode())
    assert errors["tenant_id"] == errors["client_id"] == errors["site_ids"] == "This setting is required."
    assert "client_secret" in errors  # a new connector cannot connect without a secret or certificate
    # The raw JSON behind "advanced" meets the same validation: {} is refused per field, not crashed on later.
    raw = alice.post("/console/connectors/new", {"kind": "sharepoint", "name": name, "advanced": "on",
                                                 "raw_config": "{}", "client_secret": "s"})  # fmt: skip
    assert raw.status_code == 400
    assert "missing config keys: tenant_id, client_id, site_ids (invalid_config)" in raw.content.decode()
    assert instances_named(cast.tenant_a.pk, name) == 0


def test_the_api_names_the_same_fields_the_console_marks(cast) -> None:
    api = client_for(cast.tokens["alice"]).post("/api/v1/connectors", {
        "kind": "sharepoint", "name": unique("Intranet"), "config": {"site_ids": "not-a-list"}}, format="json")  # fmt: skip
    assert api.status_code == 400
    fields = api.json()["error"]["detail"]["fields"]
    assert set(fields) == {"tenant_id", "client_id", "site_ids"}
    # A string would have become one "site" per character in the factory.
    assert fields["site_ids"] == "site_ids must be a list of non-empty strings"


def test_a_confluence_connector_is_typed_into_its_settings_and_its_secret_never_comes_back(cast) -> None:
    alice, name, token = signed_in(cast.alice), unique("Wiki"), secret("console-api-token")
    form = {"kind": "confluence", "name": name, "site_url": "http://wiki.example.com", "space_keys": "ENG, OPS",
            "include_blogposts": "on", "email": "bot@example.com", "api_token": token}  # fmt: skip
    refused = alice.post("/console/connectors/new", form)
    assert refused.status_code == 400
    assert field_errors(refused.content.decode())["site_url"] == "site_url must be an https URL without credentials"
    assert token not in refused.content.decode()  # not even when the form comes back with errors
    created = alice.post("/console/connectors/new", {**form, "site_url": "https://wiki.example.com"})
    assert created.status_code == 302
    with tenant_context(cast.tenant_a.pk):
        instance = ConnectorInstance.objects.get(source__name=name)
        assert instance.config == {"site_url": "https://wiki.example.com", "space_keys": ["ENG", "OPS"],
                                   "include_blogposts": True, "include_attachments": False}  # fmt: skip
        assert decrypt_json(instance.credentials_encrypted) == {"email": "bot@example.com", "api_token": token}
    detail = alice.get(created["Location"]).content.decode()
    assert token not in detail and "ENG\nOPS</textarea>" in detail  # the typed field shows the list back


def test_an_edit_keeps_the_stored_secret_and_the_settings_without_a_field(cast) -> None:
    instance = make_instance(cast.tenant_a.pk, "slack", unique("Slack"), {"team_id": "T0CAIRN", "page_size": 50},
                             {"token": "xoxb-1", "signing_secret": "s1"})  # fmt: skip
    alice = signed_in(cast.alice)
    # The page says which secrets are stored (token, signing secret), never what they are.
    shown = alice.get(f"/console/connectors/{instance.pk}/").content.decode()
    assert shown.count("Stored; leave empty to keep it.") == 2 and "xoxb-1" not in shown
    saved = alice.post(f"/console/connectors/{instance.pk}/", {"op": "save", "name": "Team chat", "team_id": "T0OTHER",
                                                               "include_bot_messages": "on", "signing_secret": "s2"})  # fmt: skip
    assert saved.status_code == 302
    with tenant_context(cast.tenant_a.pk):
        instance.refresh_from_db()
    assert instance.config == {"team_id": "T0OTHER", "page_size": 50, "include_bot_messages": True,
                               "non_marketplace": False}  # fmt: skip
    assert decrypt_json(instance.credentials_encrypted) == {"token": "xoxb-1", "signing_secret": "s2"}
    bad = alice.post(f"/console/connectors/{instance.pk}/", {"op": "save", "name": "Team chat", "team_id": "nope"})
    assert bad.status_code == 400 and "team_id" in field_errors(bad.content.decode())


# --- the step-by-step test -----------------------------------------------------------------------------------


@pytest.fixture
def slack() -> Iterator[FakeSlackServer]:
    with FakeSlackServer() as server:
        yield server


def slack_instance(cast: Any, slack: FakeSlackServer, token: str = SLACK_TOKEN) -> ConnectorInstance:
    # The operator approves the loopback fake (allow_private_network); a tenant admin could not.
    return make_instance(cast.tenant_a.pk, "slack", unique("Slack"), {"base_url": slack.base_url, "team_id": "T0CAIRN"},
                         {"token": token, "signing_secret": "s"})  # fmt: skip


def test_a_healthy_slack_app_passes_every_step_and_is_told_to_register_its_events_url(cast, slack) -> None:
    instance = slack_instance(cast, slack)
    with tenant_context(cast.tenant_a.pk):
        result = {s.step: s.status for s in run_checks(instance)}
    assert result == {"auth": "ok", "listing": "ok", "permissions": "ok", "webhook": "warning"}


def test_a_missing_bot_scope_fails_the_permissions_step_by_name(cast, slack) -> None:
    slack.fake.scopes.discard("users:read")
    instance = slack_instance(cast, slack)
    alice = signed_in(cast.alice)
    page = alice.post(f"/console/connectors/{instance.pk}/", {"op": "test"}).content.decode()
    assert steps(page) == {"auth": "ok", "listing": "ok", "permissions": "failed", "webhook": "warning"}
    assert "lacks the scope users:read" in page
    with tenant_context(cast.tenant_a.pk):
        row = AuditEvent.objects.filter(action="connector.tested", target_id=str(instance.pk)).get()
    assert row.details["ok"] is False and row.details["steps"]["permissions"] == "failed"


def test_a_wrong_token_fails_authentication_and_skips_the_steps_that_need_it(cast, slack) -> None:
    instance = slack_instance(cast, slack, token="xoxb-wrong")
    with tenant_context(cast.tenant_a.pk):
        result = {s.step: s.status for s in run_checks(instance)}
    assert result == {"auth": "failed", "listing": "skipped", "permissions": "skipped", "webhook": "warning"}


def test_the_outbound_policy_applies_once_an_admin_points_the_connector_elsewhere(cast, slack) -> None:
    instance = slack_instance(cast, slack)
    port = slack.base_url.split(":")[2].split("/")[0]
    with tenant_context(cast.tenant_a.pk):
        # An https loopback URL passes the form's check, but it withdraws the operator's trust.
        do_update_connector_instance(instance, config={"base_url": f"https://127.0.0.1:{port}/api/"}, actor=SYSTEM)
        first = run_checks(instance)[0]
    assert first.status == "failed" and "outbound policy refused" in first.message
    assert slack.fake.calls_to("auth.test") == []


def test_a_confluence_site_is_checked_step_by_step(cast) -> None:
    site = FakeConfluence().start()
    try:
        instance = make_instance(cast.tenant_a.pk, "confluence", unique("Wiki"), {"site_url": site.url},
                                 {"email": "svc@acme.example", "api_token": CONFLUENCE_TOKEN})  # fmt: skip
        wrong = make_instance(cast.tenant_a.pk, "confluence", unique("Wiki"), {"site_url": site.url},
                              {"email": "svc@acme.example", "api_token": "nope"})  # fmt: skip
        with tenant_context(cast.tenant_a.pk):
            good = {s.step: s.status for s in run_checks(instance)}
            bad = run_checks(wrong)
    finally:
        site.stop()
    assert good == {"auth": "ok", "listing": "ok", "permissions": "ok", "webhook": "warning"}
    assert bad[0].status == "failed" and "rejected the e-mail / API token" in bad[0].message


@pytest.fixture(scope="module")
def graph_cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    from tests.connectors.sharepoint.fake_graph import write_self_signed_cert

    return write_self_signed_cert(tmp_path_factory.mktemp("graph-tls"))


@pytest.fixture
def graph(graph_cert: tuple[Any, Any]) -> Iterator[Any]:
    from tests.connectors.sharepoint.fake_graph import FakeGraph

    fake = FakeGraph(*graph_cert)
    fake.start()
    yield fake
    fake.stop()


def sharepoint_instance(cast: Any, graph: Any, cert: Any, client_secret: str) -> ConnectorInstance:
    return make_instance(
        cast.tenant_a.pk, "sharepoint", unique("Intranet"),
        graph.connector_config(),
        {"client_secret": client_secret}, tls_ca_file=str(cert[0]),
    )  # fmt: skip


def test_a_sharepoint_app_is_checked_step_by_step_and_told_which_graph_permission_it_lacks(cast, graph,
                                                                                          graph_cert) -> None:  # fmt: skip
    from tests.connectors.sharepoint.fake_graph import CLIENT_SECRET

    instance = sharepoint_instance(cast, graph, graph_cert, CLIENT_SECRET)
    with tenant_context(cast.tenant_a.pk):
        granted = run_checks(instance)
        assert {s.step: s.status for s in granted} == {"auth": "ok", "listing": "ok", "permissions": "ok",
                                                       "webhook": "warning"}  # fmt: skip
        assert "GroupMember.Read.All" in granted[0].message  # the token's application permissions, read back
        graph.roles = {"Sites.Read.All", "User.Read.All"}
        no_groups = run_checks(instance)[2]
        assert no_groups.status == "warning" and "GroupMember.Read.All" in no_groups.message
        graph.roles = {"User.Read.All"}
        no_sites = run_checks(instance)[2]
        assert no_sites.status == "failed" and "Sites.Read.All or Sites.Selected" in no_sites.message
        wrong = run_checks(sharepoint_instance(cast, graph, graph_cert, "not-the-secret"))
    assert [s.status for s in wrong] == ["failed", "skipped", "skipped", "warning"]
    assert "Entra refused the app credentials" in wrong[0].message
