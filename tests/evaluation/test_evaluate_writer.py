"""``manage.py evaluate --writer``: the measured writer is chosen per run, whatever the tenant's settings."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from answers.models import AnswerSettings
from answers.writers import evaluated_writer, writer_for_tenant
from answers.writers.extractive import ExtractiveWriter
from answers.writers.openai_compat import OpenAICompatibleWriter
from tenants.context import tenant_context


def test_the_openai_compatible_writer_needs_an_endpoint_and_says_so(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CommandError, match="--writer-url"):
        call_command("evaluate", suite="answers", writer="openai_compatible", out=str(tmp_path), no_progress=True)


def test_an_evaluated_writer_replaces_the_tenants_writer_only_inside_the_run(cast) -> None:  # type: ignore[no-untyped-def]
    with tenant_context(cast.tenant_a.pk):
        AnswerSettings.objects.update_or_create(defaults={"writer": AnswerSettings.Writer.EXTRACTIVE})
        measured = OpenAICompatibleWriter("http://127.0.0.1:9/v1", "local")
        with evaluated_writer(measured):
            writer, notes = writer_for_tenant()
            assert writer is measured and notes == ["evaluation writer: openai-compatible"]
        writer, notes = writer_for_tenant()
        assert isinstance(writer, ExtractiveWriter) and notes == []


def test_the_local_writer_needs_a_running_model_server_and_says_so(tmp_path, settings) -> None:  # type: ignore[no-untyped-def]
    settings.CAIRN = {**settings.CAIRN, "LLM_SERVER_URL": ""}
    with pytest.raises(CommandError, match="CAIRN_LLM_SERVER_URL"):
        call_command("evaluate", suite="answers", writer="llama_cpp", out=str(tmp_path), no_progress=True)


def test_the_local_judge_needs_a_running_model_server_and_says_so(tmp_path, settings) -> None:  # type: ignore[no-untyped-def]
    settings.CAIRN = {**settings.CAIRN, "LLM_SERVER_URL": ""}
    with pytest.raises(CommandError, match="--judge-local"):
        call_command("evaluate", suite="verifier", judge_local=True, out=str(tmp_path), no_progress=True)
