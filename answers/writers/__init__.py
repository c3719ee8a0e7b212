"""Writers and the per-tenant choice between them.

A tenant without ``AnswerSettings`` uses ``settings.CAIRN["WRITER"]`` (extractive by
default).  ``openai_compatible`` talks to any OpenAI-compatible endpoint through
``core.http``; ``llama_cpp`` is the optional local model behind llama.cpp's server on loopback
(operator-configured ``CAIRN_LLM_SERVER_URL``, set by ``bin/cairn run``; without one the engine
falls back to the default writer and says so).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

from django.conf import settings

from core.backends import writer as default_writer


def decrypt_api_key(token: str) -> str:
    """The tenant's LLM API key, through the one credentials helper (registered with log redaction)."""
    from core.crypto import decrypt_text

    return decrypt_text(token)


# Set only by ``manage.py evaluate --writer``: the evaluation measures one writer on the labelled set
# whatever the evaluation tenant's own settings say.  Never set on the request path.
_EVALUATED_WRITER: contextvars.ContextVar[Any | None] = contextvars.ContextVar("evaluated_writer", default=None)


@contextlib.contextmanager
def evaluated_writer(writer: Any) -> Iterator[None]:
    """Answer with ``writer`` inside this block (evaluation runs only)."""
    token = _EVALUATED_WRITER.set(writer)
    try:
        yield
    finally:
        _EVALUATED_WRITER.reset(token)


def writer_for_tenant() -> tuple[Any, list[str]]:
    """The current tenant's writer (call inside tenant_context) and notes for the trace."""
    from answers.models import AnswerSettings  # here: `python -m answers.writers.local_model` runs without Django

    forced = _EVALUATED_WRITER.get()
    if forced is not None:
        return forced, [f"evaluation writer: {getattr(forced, 'name', type(forced).__name__)}"]
    row = AnswerSettings.objects.first()
    if row is None or row.writer == AnswerSettings.Writer.EXTRACTIVE:
        return default_writer(), []
    if row.writer == AnswerSettings.Writer.OPENAI_COMPATIBLE:
        from answers.writers.openai_compat import OpenAICompatibleWriter

        return OpenAICompatibleWriter(row.endpoint_url, row.model, decrypt_api_key(row.api_key_encrypted),
                                      timeout=float(settings.CAIRN["WRITER_TIMEOUT_SECONDS"])), []  # fmt: skip
    from answers.writers import llama_local

    # The server address comes from the operator's CAIRN_LLM_SERVER_URL, never from the tenant row.
    if llama_local.available():
        return llama_local.LlamaCppWriter(), []
    return default_writer(), ["llama_cpp_unavailable: fell back to the default writer"]
