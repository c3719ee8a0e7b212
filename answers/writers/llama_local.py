"""The ``llama_cpp`` writer: the local model, served by llama.cpp's own server on loopback.

``bin/cairn install-llm`` installs the prebuilt ``xllamacpp`` wheel and the model
(``answers/writers/local_model.py``); ``bin/cairn run`` starts ``python -m answers.writers.local_model serve`` on 127.0.0.1
with a fresh API key while a tenant has picked this writer, and hands its address and key
to the web and worker processes as ``CAIRN_LLM_SERVER_URL`` / ``CAIRN_LLM_API_KEY``.
Both are operator settings: a tenant admin only chooses ``llama_cpp``, never an address,
so no tenant can point the server's outbound client at loopback (the tenant-supplied
``openai_compatible`` endpoint stays under the full outbound policy).

The HTTP call, messages, schema and parser are the OpenAI-compatible writer's, so the
same injection boundaries hold: constant system prompt, passages in a delimited DATA
block, no tools, schema-constrained JSON (``response_format`` ``json_schema``, which
llama.cpp's server enforces with a grammar), and every claim still goes through the
verifier.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from answers.writers import local_model as llm
from answers.writers.openai_compat import OpenAICompatibleWriter
from core.http import OperatorEndpoints, origin_of


def server_url() -> str:
    return str(settings.CAIRN.get("LLM_SERVER_URL", "") or "").strip()


def available() -> bool:
    """A local server is configured (it may still be starting: then the call fails and the engine abstains)."""
    return bool(server_url())


def _operator_server(url: str) -> OperatorEndpoints:
    """CAIRN_LLM_SERVER_URL is the operator's (bin/cairn run sets it): its exact origin is approved for
    this writer only, on top of CAIRN_OPERATOR_PRIVATE_ENDPOINTS; the tenant's openai_compatible
    endpoint never inherits it."""
    scheme, host, port = origin_of(url)
    literal = f"[{host}]" if ":" in host else host
    return OperatorEndpoints([*settings.CAIRN.get("OPERATOR_PRIVATE_ENDPOINTS", ()), f"{scheme}://{literal}:{port}"])


class LlamaCppWriter(OpenAICompatibleWriter):
    name = "llama-cpp-local"
    version = "3"  # 3: served by xllamacpp's llama.cpp server (2: in-process llama-cpp-python)

    def __init__(self, *, max_tokens: int | None = 512, timeout: float | None = None) -> None:
        url = server_url()
        if not url:
            raise RuntimeError("no local model server configured (CAIRN_LLM_SERVER_URL; bin/cairn install-llm)")
        super().__init__(url, llm.MODEL_ALIAS, str(settings.CAIRN.get("LLM_API_KEY", "") or ""),
                         timeout=float(timeout or settings.CAIRN["WRITER_TIMEOUT_SECONDS"]),
                         endpoints=_operator_server(url))  # fmt: skip
        self._max_tokens = max_tokens

    def _body(self, messages: list[dict[str, str]], schema: dict[str, Any], name: str,
              max_tokens: int | None = None) -> dict[str, Any]:  # fmt: skip
        # A bound on generation: on 2 CPU cores each token costs ~0.2 s.
        return super()._body(messages, schema, name, max_tokens if max_tokens is not None else self._max_tokens)
