"""Optional adapter: a local GGUF model through ``llama_cpp`` (not installed by default).

``llama-cpp-python`` has no binary wheel and compiles for ~16 minutes (see
``../shared/MODELS.md``), so it is not in requirements.txt and this adapter is NOT
exercised by the test suite.  It reuses the OpenAI-compatible writer's message
layout, schema and parser, so the same injection boundaries apply.  The tested way to
use a local model is ``python -m llama_cpp.server`` + ``OpenAICompatibleWriter``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any

from answers.contracts import DraftClaim, EvidenceRecord, QueryPlan
from answers.writers.openai_compat import RESPONSE_SCHEMA, build_messages, parse_claims


def available() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


class LlamaCppWriter:
    name = "llama-cpp-local"
    version = "1"
    prompt_version = "cited-json-v1"
    generative = True

    def __init__(self, model_path: str, *, n_ctx: int = 4096, n_threads: int = 2) -> None:
        if not available():
            raise RuntimeError("llama_cpp is not installed; use the OpenAI-compatible writer instead")
        import llama_cpp

        self._llm = llama_cpp.Llama(model_path=model_path, n_ctx=n_ctx, n_threads=n_threads, verbose=False)

    def write(self, plan: QueryPlan, evidence: Sequence[EvidenceRecord], *, max_claims: int = 4,
              info: dict[str, Any] | None = None, **_: Any) -> list[DraftClaim]:  # fmt: skip
        if not evidence:
            return []
        out = self._llm.create_chat_completion(
            messages=build_messages(plan, evidence),
            temperature=0,
            response_format={"type": "json_object", "schema": RESPONSE_SCHEMA},
        )
        claims, error = parse_claims(out["choices"][0]["message"]["content"])
        if error and info is not None:
            info["error"] = error
        return claims[:max_claims]
