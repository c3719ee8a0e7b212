"""The console's answer settings page: the API's validation, a write-only key, and a Test with one tiny prompt."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from answers.models import AnswerSettings
from core.crypto import decrypt_text
from tenants.context import tenant_context
from tenants.models import AuditEvent
from tests.answers.helpers import RecordingServer
from tests.security.secret_canary import secret
from tests.support import approve_private_endpoint, client_for, field_errors, signed_in


@pytest.fixture
def llm(settings: Any) -> Iterator[RecordingServer]:
    server = RecordingServer()
    approve_private_endpoint(settings, server.url())  # as the operator would, for a model on the internal network
    yield server
    server.httpd.shutdown()


def completes(server: RecordingServer, content: str, status: int = 200) -> None:
    body = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}).encode()
    server.responses["/v1/chat/completions"] = (status, {"Content-Type": "application/json"}, body)


def test_an_openai_compatible_writer_without_a_model_is_refused_like_the_api_refuses_it(cast) -> None:
    form = {"writer": "openai_compatible", "endpoint_url": "https://llm.example.com/v1", "model": ""}
    api = client_for(cast.tokens["alice"]).put("/api/v1/admin/answer-settings", form, format="json")
    assert api.status_code == 400 and "openai_compatible needs endpoint_url and model" in api.content.decode()
    page = signed_in(cast.alice).post("/console/answers/", form)
    assert page.status_code == 400 and "openai_compatible needs endpoint_url and model" in page.content.decode()
    with tenant_context(cast.tenant_a.pk):
        assert not AnswerSettings.objects.exists()


def test_a_private_endpoint_the_operator_did_not_approve_is_refused_under_its_field(cast) -> None:
    page = signed_in(cast.alice).post("/console/answers/", {"writer": "openai_compatible", "model": "m",
                                                              "endpoint_url": "http://10.0.0.5:8000/v1"})  # fmt: skip
    assert page.status_code == 400
    assert "(endpoint_not_allowed)" in field_errors(page.content.decode())["endpoint_url"]


def test_an_admin_saves_a_writer_whose_key_never_comes_back_and_tests_it_with_one_tiny_prompt(cast, llm) -> None:
    alice, key = signed_in(cast.alice), secret("llm-api-key")
    saved = alice.post("/console/answers/", {"writer": "openai_compatible", "endpoint_url": llm.url("/v1"),
                                             "model": "tiny-model", "api_key": key})  # fmt: skip
    assert saved.status_code == 302
    shown = alice.get("/console/answers/").content.decode()
    assert key not in shown and "Stored; leave empty to keep it." in shown
    completes(llm, '{"ok": true}')
    tested = alice.post("/console/answers/", {"op": "test"}).content.decode()
    assert "Test passed: The model tiny-model answered" in tested
    [request] = llm.requests
    assert request["path"] == "/v1/chat/completions" and request["body"]["model"] == "tiny-model"
    assert request["body"]["max_tokens"] == 16 and len(json.dumps(request["body"]["messages"])) < 300
    # Saving again without a key keeps the stored one.
    assert alice.post("/console/answers/", {"writer": "openai_compatible", "endpoint_url": llm.url("/v1"),
                                            "model": "other-model"}).status_code == 302  # fmt: skip
    with tenant_context(cast.tenant_a.pk):
        row = AnswerSettings.objects.get()
        assert (row.model, decrypt_text(row.api_key_encrypted)) == ("other-model", key)
        assert AuditEvent.objects.filter(action="answer_settings.tested", details__ok=True).count() == 1


def test_the_test_says_when_the_endpoint_does_not_answer_a_chat_completion(cast, llm) -> None:
    alice = signed_in(cast.alice)
    alice.post("/console/answers/", {"writer": "openai_compatible", "endpoint_url": llm.url("/v1"), "model": "m"})
    completes(llm, "", status=500)
    tested = alice.post("/console/answers/", {"op": "test"}).content.decode()
    assert "Test failed: The endpoint did not answer with a chat completion (endpoint_failed)" in tested


def test_the_extractive_writer_needs_no_endpoint_to_pass(cast) -> None:
    tested = signed_in(cast.alice).post("/console/answers/", {"op": "test"}).content.decode()
    assert "Test passed: The extractive writer needs no endpoint" in tested


def test_members_and_other_tenants_cannot_reach_the_page(cast) -> None:
    assert signed_in(cast.bob).get("/console/answers/").status_code == 403
    signed_in(cast.mallory).post("/console/answers/", {"writer": "llama_cpp"})
    with tenant_context(cast.tenant_a.pk):
        assert not AnswerSettings.objects.exists()
