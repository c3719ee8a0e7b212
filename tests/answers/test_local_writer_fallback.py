"""The llama_cpp writer without a local model server (docs/models.md): the engine says so and stays extractive."""

from __future__ import annotations

from typing import Any

from tests.answers.helpers import add_docs, ask
from tests.support import client_for

EXPENSES = {"id": "travel", "title": "Travel expenses", "text": "Expense reports are due within 30 days of travel."}


def test_the_llama_cpp_writer_falls_back_to_the_extractive_writer_without_a_local_server(cast, settings: Any) -> None:
    settings.CAIRN = {**settings.CAIRN, "ANSWER_CACHE_SECONDS": 0, "LLM_SERVER_URL": ""}
    add_docs(cast.tenant_a, "wiki", 2, [EXPENSES])
    r = client_for(cast.tokens["alice"]).put("/api/v1/admin/answer-settings", {"writer": "llama_cpp"}, format="json")
    assert r.status_code == 200, r.content
    body = ask(cast.tokens["bob"], "When are expense reports due?")
    assert not body["release"]["writer"].startswith("llama-cpp-local@")
    assert "llama_cpp_unavailable: fell back to the default writer" in str(body["trace"])
    assert any("30 days" in c["text"] for c in body["answer"]["claims"])
