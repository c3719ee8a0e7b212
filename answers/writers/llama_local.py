"""Optional writer: a local GGUF model run in-process through ``llama_cpp``.

``llama-cpp-python`` has no binary wheel (it compiles for ~16 minutes, see
``../shared/MODELS.md``), so it lives in ``requirements-llm.txt`` and is installed by
``python -m answers.writers.local_model install``.  The operator names the model file
(``CAIRN_LLM_MODEL_PATH``); a tenant admin only chooses the ``llama_cpp`` writer, never a
path, so an admin cannot make the server open arbitrary files.

The model is loaded once per process (1.1 GB, several seconds) and shared: a
``Llama`` object is not safe for concurrent use, so calls are serialised by a lock
(a 1.5B model on 2 cores is one-request-at-a-time anyway).  Messages, schema and
parser are the OpenAI-compatible writer's, so the same injection boundaries hold:
constant system prompt, passages in a delimited DATA block, no tools, schema-checked
JSON, and every claim still goes through the verifier.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.conf import settings

from answers.contracts import DraftClaim, EvidenceRecord, QueryPlan
from answers.writers import local_model as llm
from answers.writers.openai_compat import RESPONSE_SCHEMA, build_messages, parse_claims

_lock = threading.Lock()
_models: dict[str, Any] = {}


def model_path() -> Path | None:
    return llm.configured_model_path(settings.CAIRN.get("LLM_MODEL_PATH", ""))


def available() -> bool:
    return llm.runtime_available() and model_path() is not None


@atexit.register
def _close_models() -> None:
    # Free the native model before interpreter teardown: llama_cpp's own finaliser runs after
    # its C library handle is gone and prints a TypeError at exit otherwise.
    for model in _models.values():
        model.close()
    _models.clear()


def _model(path: str, n_ctx: int, n_threads: int) -> Any:
    key = f"{path}|{n_ctx}|{n_threads}"
    if key not in _models:
        import llama_cpp

        _models[key] = llama_cpp.Llama(model_path=path, n_ctx=n_ctx, n_threads=n_threads, verbose=False)
    return _models[key]


class LlamaCppWriter:
    name = "llama-cpp-local"
    version = "2"
    prompt_version = "cited-json-v1"
    generative = True

    def __init__(self, path: str | Path | None = None, *, n_ctx: int = 4096, n_threads: int = 2,
                 max_tokens: int = 512) -> None:  # fmt: skip
        path = path or model_path()
        if not llm.runtime_available() or path is None:
            raise RuntimeError(
                "llama_cpp or the model file is missing: run `python -m answers.writers.local_model install`"
            )
        self.model = Path(path).name  # part of the release identity (and so of cache keys)
        self._path = str(path)
        self._n_ctx = n_ctx
        self._n_threads = n_threads
        self._max_tokens = max_tokens

    def complete_json(self, messages: list[dict[str, str]], schema: dict[str, Any]) -> str:
        """One schema-constrained chat completion (also used by the verifier's judge)."""
        with _lock:
            out = _model(self._path, self._n_ctx, self._n_threads).create_chat_completion(
                messages=messages,
                temperature=0,
                max_tokens=self._max_tokens,
                response_format={"type": "json_object", "schema": schema},
            )
        return str(out["choices"][0]["message"]["content"] or "")

    def write(self, plan: QueryPlan, evidence: Sequence[EvidenceRecord], *, max_claims: int = 4,
              info: dict[str, Any] | None = None, **_: Any) -> list[DraftClaim]:  # fmt: skip
        if not evidence:
            return []
        content = self.complete_json(build_messages(plan, evidence), RESPONSE_SCHEMA)
        claims, error = parse_claims(content)
        if info is not None:
            info["raw_chars"] = len(content)
            if error:
                info["error"] = error
        return claims[:max_claims]
