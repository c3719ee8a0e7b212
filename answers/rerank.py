"""The reranking stage: re-score the fused top candidates, then apply the signals a text pair cannot see.

Pluggable by dotted path (``settings.CAIRN["RERANKER"]``, env ``CAIRN_RERANKER``), loaded with
``core.backends.get_backend("RERANKER")``.  Every reranker returns a ``RerankOutcome`` whose
``signals[chunk_id]`` records each signal's contribution, for the trace.

* ``MiniLMFusionReranker`` (default, ships offline): no cross-encoder ships offline (see
  ../shared/MODELS.md), so the text score fuses what we do have — the MiniLM passage similarity
  (the stored chunk vector when a tenant is active, else embedded), the best single-sentence
  similarity (for the ``RERANKER_SENTENCE_DEPTH`` most similar candidates, at most 3 sentences
  each picked by query-term overlap, vectors cached), BM25-style term proximity, title/heading
  matches and the retrieval rank — as a weighted sum of z-scores within the candidate set.
* ``OnnxCrossEncoderReranker``: a cross-encoder the operator provides as a local directory
  (``model.onnx`` + ``tokenizer.json``; ``CAIRN_RERANKER_MODEL_DIR``).
* ``TrainedCrossEncoderReranker``: Cairn's own MiniLM-L6 cross-encoder (int8 ONNX in
  ``models/reranker-minilm-l6-ce``, sha256 pinned; ``manage.py train_reranker``, docs/models.md).
* ``HttpCrossEncoderReranker``: a rerank endpoint (Cohere / Jina ``/v1/rerank`` or Hugging Face
  TEI ``/rerank`` JSON; ``CAIRN_RERANKER_URL``) through the hardened client in ``core/http.py``.

All of them then apply the policy signals (``policy_adjustments``): authority tier (lower = more
authoritative), recency only inside the plan's time scope or when the plan asks for the latest
(never a global "newer is better"), and version match against the plan's version scope.
Chunks past the reranking depth keep their retrieval order after the reranked head.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from django.conf import settings

from answers.lexicon import attribute_synonyms, content_stems
from answers.verification import answer_type, attribute_terms
from core.backends import embedder, get_backend
from core.crypto import sha256_file
from core.http import build_session
from retrieval.chunking import split_sentences
from retrieval.models import Chunk
from retrieval.search import RankedChunk
from tenants.context import current_tenant_id

if TYPE_CHECKING:
    from answers.contracts import QueryPlan


@dataclass
class RerankOutcome:
    chunks: list[RankedChunk]
    signals: dict[int, dict[str, float]] = field(default_factory=dict)
    name: str = ""
    version: str = ""


# --------------------------------------------------------------------------------------------------
# Tokenisation for the lexical features (Snowball English, a small stopword list)
# --------------------------------------------------------------------------------------------------

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOP = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having
    he her here hers herself him himself his how i if in into is it its itself just me more most my myself no
    nor not of off on once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too under until up very
    was we were what when where which while who whom why will with would you your yours yourself yourselves
    s t don""".split()
)


def _stemmer() -> Any:
    import Stemmer  # PyStemmer: the Snowball stemmers, also what the reference BM25 uses

    return Stemmer.Stemmer("english")


_STEM = threading.local()


def terms(text: str) -> list[str]:
    """Lower-cased, stopword-free Snowball stems, in order (positions matter for proximity)."""
    st = getattr(_STEM, "s", None)
    if st is None:
        st = _STEM.s = _stemmer()
    words = [w for w in _WORD.findall(text.lower()) if w not in _STOP]
    return st.stemWords(words)


def proximity_score(q_terms: Sequence[str], doc_terms: Sequence[str], idf: dict[str, float]) -> float:
    """BM25TP-style proximity: for every pair of distinct query terms, idf-weighted 1/d² of their
    closest occurrence (d = distance in terms, capped at 10), plus the idf mass matched."""
    qset = list(dict.fromkeys(q_terms))
    positions: dict[str, list[int]] = {}
    for i, t in enumerate(doc_terms):
        if t in idf and t in qset:
            positions.setdefault(t, []).append(i)
    matched = sum(idf[t] for t in positions)
    prox = 0.0
    present = list(positions)
    for a in range(len(present)):
        for b in range(a + 1, len(present)):
            pa, pb = positions[present[a]], positions[present[b]]
            d = min(abs(x - y) for x in pa[:20] for y in pb[:20])
            if d <= 10:
                prox += min(idf[present[a]], idf[present[b]]) / (d * d)
    return matched + prox


def _zscores(values: Sequence[float]) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    sd = arr.std()
    if len(arr) < 2 or sd < 1e-9:
        return np.zeros_like(arr)
    return (arr - arr.mean()) / sd


# --------------------------------------------------------------------------------------------------
# Policy signals (shared by every reranker)
# --------------------------------------------------------------------------------------------------


def _as_date(value: Any) -> date | None:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    return None


def _norm_version(v: str) -> str:
    return re.sub(r"[^a-z0-9]", "", (v or "").lower())


# A statement row rendered at ingestion (retrieval/extract/tables.py): "Gross margin: $6,535 million, three
# months ended October 1, 2022; ...".  For a how-much question about a company's figure the row names the
# measure and carries every period's value, where the prose around it often states only the change
# ("gross margin dollars decreased by $4.2 billion").
_STATEMENT_ROW_RE = re.compile(r"(?m)^([A-Z][^:\n]{1,160}?): -?\$[\d,]+(?:\.\d+)? (?:million|billion|thousand)\b")
STATEMENT_ROW_WEIGHT = 1.0  # a row naming what is asked
STATEMENT_CELL_WEIGHT = 5.0  # ... that also holds the resolved quarter's cell: it states the answer
_MIN_ROW_COVER = 0.5
_GENERIC_ROW_WORDS = frozenset(content_stems("total net consolidated"))


def statement_row_cover(asked: frozenset[str], text: str, cells: Sequence[str] = ()) -> tuple[float, bool]:
    """How well the best statement row's label names the question's attribute terms (0 when it names fewer
    than half; a label's extra words lower it), and whether that row holds a cell of the resolved period
    (``cells``: "months ended July 30, 2023")."""
    if not asked:
        return 0.0, False
    best, in_period = 0.0, False
    forms = set(asked).union(*(attribute_synonyms(t) for t in asked))
    for m in _STATEMENT_ROW_RE.finditer(text):
        label = set(content_stems(m.group(1)))
        named = sum(1 for t in asked if ({t} | attribute_synonyms(t)) & label)
        if named < min(2, len(asked)) or named / len(asked) < _MIN_ROW_COVER:
            continue  # "net income" is not answered by a "net revenue" row
        end = text.find("\n", m.end())
        row = text[m.start() : end if end != -1 else len(text)]
        has_cell = any(c in row for c in cells)
        # Of two rows that name "revenue", "Total net revenue" is the figure asked for, not a segment's
        # "Other (Client Computing, net revenue)": the label's other words count against it.
        core = label - _GENERIC_ROW_WORDS
        precision = len(core & forms) / max(len(core), 1)
        quality = named / len(asked) * (0.7 + 0.3 * precision)
        if (has_cell, quality) > (in_period, best):
            best, in_period = quality, has_cell
    return best, in_period


def period_cells(period_ends: Sequence[str]) -> list[str]:
    """ISO period ends as statement cells read: "2023-07-30" -> "months ended July 30, 2023"."""
    out = []
    for iso in period_ends:
        try:
            end = date.fromisoformat(iso[:10])
        except ValueError:
            continue
        out.append(f"months ended {end:%B} {end.day}, {end.year}")
    return out


def policy_adjustments(plan: QueryPlan | None, chunks: Sequence[RankedChunk]) -> list[dict[str, float]]:
    """Additive score adjustments (in units of the fused text score's z-scale) per chunk.

    * authority: +0.15 per tier above the least authoritative candidate (tiers 0..3).
    * recency: only when the plan has a time scope or asks for the latest: outside the scope's
      window a chunk is gated (-3.0); inside it (or over the candidates, for "latest") the newest
      gets up to +0.5, linearly by date.  Without either, no recency signal at all.
    * version: the plan names a version (``version_scope``): match +1.0, a different labelled
      version -1.0, unlabelled 0.
    * statement row: a how-much question bound to a company or period, and a chunk with a statement row
      whose label names at least half of what is asked: up to +1.0, up to +5.0 when that row holds the
      resolved quarter's cell (``statement_row_cover``).
    """
    n = len(chunks)
    out: list[dict[str, float]] = [{} for _ in range(n)]
    if not n:
        return out
    tiers = [c.authority_tier for c in chunks]
    worst = max(tiers)
    for i, c in enumerate(chunks):
        out[i]["authority"] = 0.15 * (worst - c.authority_tier)
    if plan is None:
        return out
    scope = plan.parsed.time_filter if plan.parsed is not None else None
    wants_latest = bool(plan.parsed.wants_latest or plan.needs_current_version) if plan.parsed else False
    dates = [_as_date(c.updated_at) or _as_date(c.created_at) for c in chunks]
    if scope is not None and (scope.after or scope.before):
        for i, d in enumerate(dates):
            if d is None:
                continue
            if (scope.after and d < scope.after) or (scope.before and d >= scope.before):
                out[i]["time_scope_gate"] = -3.0
    if wants_latest or (scope is not None and (scope.after or scope.before)):
        inside = [d for i, d in enumerate(dates) if d is not None and "time_scope_gate" not in out[i]]
        if inside:
            lo, hi = min(inside), max(inside)
            span = (hi - lo).days
            for i, d in enumerate(dates):
                if d is None or "time_scope_gate" in out[i]:
                    continue
                out[i]["recency"] = 0.5 * ((d - lo).days / span) if span > 0 else 0.0
    parsed = plan.parsed
    if parsed is not None and (parsed.entities or parsed.periods) and answer_type(parsed.original) == "number":
        asked = attribute_terms(plan)
        cells = period_cells(plan.period_scope)
        for i, c in enumerate(chunks):
            cover, in_period = statement_row_cover(asked, c.text, cells)
            if cover:
                # The row names the measure and holds the resolved quarter's cell: it states the answer.
                out[i]["statement_row"] = (STATEMENT_CELL_WEIGHT if in_period else STATEMENT_ROW_WEIGHT) * cover
    want = _norm_version(getattr(plan, "version_scope", ""))
    if want:
        for i, c in enumerate(chunks):
            have = _norm_version(c.version_label)
            if have:
                out[i]["version"] = 1.0 if (have == want or want in have or have in want) else -1.0
    return out


def _finish(name: str, version: str, chunks: list[RankedChunk], depth: int, text_scores: np.ndarray,
            features: list[dict[str, float]], plan: QueryPlan | None) -> RerankOutcome:  # fmt: skip
    head = chunks[:depth]
    policy = policy_adjustments(plan, head)
    signals: dict[int, dict[str, float]] = {}
    final: list[tuple[float, int]] = []
    for i, c in enumerate(head):
        adj = policy[i]
        score = float(text_scores[i]) + sum(adj.values())
        sig = {**{k: round(float(v), 6) for k, v in features[i].items()}, "text": round(float(text_scores[i]), 6)}
        sig.update({k: round(v, 6) for k, v in adj.items()})
        sig["final"] = round(score, 6)
        sig["input_rank"] = float(i + 1)
        signals[c.chunk_id] = sig
        final.append((score, i))
    final.sort(key=lambda t: (-t[0], t[1]))
    ordered = [head[i] for _, i in final] + list(chunks[depth:])
    for pos, c in enumerate(ordered[:depth], start=1):
        signals[c.chunk_id]["output_rank"] = float(pos)
    return RerankOutcome(ordered, signals, name, version)


def _passage_input(c: RankedChunk) -> str:
    # The same text the pipeline embeds for a chunk (title — heading, newline, text).
    head = " — ".join(x for x in (c.title.strip(), c.heading.strip()) if x)
    return f"{head}\n{c.text}" if head else c.text


class _LRU:
    def __init__(self, size: int) -> None:
        self.size = size
        self.data: OrderedDict[str, Any] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: str) -> Any:
        with self.lock:
            v = self.data.get(key)
            if v is not None:
                self.data.move_to_end(key)
            return v

    def put(self, key: str, value: Any) -> None:
        with self.lock:
            self.data[key] = value
            self.data.move_to_end(key)
            while len(self.data) > self.size:
                self.data.popitem(last=False)


def _key(chunk: RankedChunk, text: str) -> str:
    # Chunk ids are global; the text digest makes a re-indexed chunk a new key.
    return f"{chunk.chunk_id}:{hashlib.sha1(text.encode()).hexdigest()[:16]}"


# --------------------------------------------------------------------------------------------------
# The default reranker
# --------------------------------------------------------------------------------------------------

DEFAULT_WEIGHTS: dict[str, float] = {
    "dense": 1.0,
    "sentence_max": 0.8,
    "retrieval": 0.6,
    "proximity": 0.4,
    "title": 0.15,
    "heading": 0.1,
}


class MiniLMFusionReranker:
    """Sentence-level MiniLM similarity + passage similarity + proximity + title/heading + retrieval rank."""

    name = "minilm-fusion"
    version = "3"

    def __init__(self, depth: int | None = None, weights: dict[str, float] | None = None,
                 max_sentences: int = 3, sentence_depth: int | None = None) -> None:  # fmt: skip
        self.depth = int(depth if depth is not None else settings.CAIRN.get("RERANKER_DEPTH", 30))
        self.weights = dict(DEFAULT_WEIGHTS if weights is None else weights)
        self.max_sentences = max_sentences
        # Sentence vectors are the only embedding work on the request path (passage vectors come
        # from the index): only the most promising candidates by passage similarity get them.
        self.sentence_depth = int(
            sentence_depth if sentence_depth is not None else settings.CAIRN.get("RERANKER_SENTENCE_DEPTH", 10)
        )
        self._sent_cache = _LRU(20_000)
        self._passage_cache = _LRU(20_000)

    # -- vectors ------------------------------------------------------------------------------------
    def _stored_vectors(self, chunks: Sequence[RankedChunk]) -> dict[int, np.ndarray]:
        """The vectors the index already holds, when a tenant is active (RLS-scoped read)."""

        if current_tenant_id() is None:
            return {}

        rows = Chunk.objects.filter(pk__in=[c.chunk_id for c in chunks]).values_list("id", "embedding")
        return {int(i): np.asarray(v, dtype=np.float32) for i, v in rows if v is not None}

    def _passage_vectors(self, chunks: Sequence[RankedChunk], emb: Any) -> np.ndarray:
        stored = self._stored_vectors(chunks)
        out = np.zeros((len(chunks), emb.dim), dtype=np.float32)
        todo: list[int] = []
        for i, c in enumerate(chunks):
            if c.chunk_id in stored:
                out[i] = stored[c.chunk_id]
                continue
            v = self._passage_cache.get(_key(c, _passage_input(c)))
            if v is None:
                todo.append(i)
            else:
                out[i] = v
        if todo:
            vecs = emb.embed([_passage_input(chunks[i]) for i in todo])
            for j, i in enumerate(todo):
                out[i] = vecs[j]
                self._passage_cache.put(_key(chunks[i], _passage_input(chunks[i])), vecs[j])
        return out

    def _sentence_vectors(self, chunks: Sequence[RankedChunk], emb: Any, q_terms: Sequence[str],
                          idf: dict[str, float]) -> list[np.ndarray]:  # fmt: skip
        """Vectors of each chunk's most promising sentences (cached per sentence).

        Bounded work: at most ``max_sentences`` per chunk, chosen by idf-weighted overlap with the
        query (ties: earlier first), so a long chunk costs no more than a short one."""
        qset = set(q_terms)
        result: list[list[np.ndarray | None]] = []
        pending: list[tuple[int, int, str, str]] = []
        for i, c in enumerate(chunks):
            spans = split_sentences(c.text) or [(0, len(c.text))]
            sents = [c.text[s:e] for s, e in spans]
            if len(sents) > self.max_sentences:
                scored = sorted(
                    range(len(sents)),
                    key=lambda j: (-sum(idf.get(t, 0.0) for t in qset & set(terms(sents[j]))), j),
                )
                sents = [sents[j] for j in sorted(scored[: self.max_sentences])]
            row: list[np.ndarray | None] = []
            base = _key(c, c.text)
            for j, sent in enumerate(sents):
                key = f"{base}:{hashlib.sha1(sent.encode()).hexdigest()[:12]}"
                v = self._sent_cache.get(key)
                row.append(v)
                if v is None:
                    pending.append((i, j, key, sent))
            result.append(row)
        if pending:
            vecs = emb.embed([p[3] for p in pending], batch_size=8)  # small batches: little padding
            for (i, j, key, _), v in zip(pending, vecs, strict=True):
                result[i][j] = v
                self._sent_cache.put(key, v)
        return [np.stack(r) if r else np.zeros((0, emb.dim), np.float32) for r in result]  # type: ignore[arg-type]

    # -- scoring ------------------------------------------------------------------------------------
    def features(self, query: str, chunks: Sequence[RankedChunk]) -> list[dict[str, float]]:

        emb = embedder()
        qv = np.asarray(emb.embed_query(query), dtype=np.float32)
        feats: list[dict[str, float]] = [{} for _ in chunks]
        w = self.weights
        pv = self._passage_vectors(chunks, emb)
        for i, s in enumerate(pv @ qv):
            feats[i]["dense"] = float(s)
        q_terms = terms(query)
        doc_terms = [terms(c.text) for c in chunks]
        n = len(chunks)
        df: dict[str, int] = {}
        for dt in doc_terms:
            for t in set(dt):
                if t in q_terms:
                    df[t] = df.get(t, 0) + 1
        # idf over the candidate set (+1 smoothing) says which query words discriminate *here*.
        idf = {t: math.log(1.0 + (n - df.get(t, 0) + 0.5) / (df.get(t, 0) + 0.5)) for t in set(q_terms)}
        if w.get("sentence_max"):
            # Best single sentence for the top candidates by passage similarity; the others keep
            # their passage similarity as the estimate (a passage's best sentence rarely scores lower).
            order = sorted(range(len(chunks)), key=lambda i: -feats[i].get("dense", 0.0))
            picked = sorted(order[: self.sentence_depth])
            for i in range(len(chunks)):
                feats[i]["sentence_max"] = feats[i].get("dense", 0.0)
            vectors = self._sentence_vectors([chunks[i] for i in picked], emb, q_terms, idf)
            for i, sv in zip(picked, vectors, strict=True):
                if len(sv):
                    feats[i]["sentence_max"] = max(float((sv @ qv).max()), feats[i]["sentence_max"])
        qset = set(q_terms)
        total_idf = sum(idf.values()) or 1.0
        for i, c in enumerate(chunks):
            feats[i]["proximity"] = proximity_score(q_terms, doc_terms[i], idf)
            feats[i]["title"] = sum(idf[t] for t in qset & set(terms(c.title))) / total_idf
            feats[i]["heading"] = sum(idf[t] for t in qset & set(terms(c.heading))) / total_idf if c.heading else 0.0
            feats[i]["retrieval"] = -math.log(i + 1.0)
        return feats

    def rerank(self, query: str, plan: QueryPlan | None, chunks: list[RankedChunk],
               top_n: int = 50) -> RerankOutcome:  # fmt: skip
        depth = min(len(chunks), top_n, self.depth)
        if depth == 0:
            return RerankOutcome(list(chunks), {}, self.name, self.version)
        head = chunks[:depth]
        feats = self.features(query, head)
        text = np.zeros(depth)
        for name, weight in self.weights.items():
            if weight:
                text += weight * _zscores([f.get(name, 0.0) for f in feats])
        return _finish(self.name, self.version, list(chunks), depth, text, feats, plan)


class NoopReranker:
    """Retrieval order plus the policy signals only (the baseline the others are compared to)."""

    name = "none"
    version = "1"

    def rerank(self, query: str, plan: QueryPlan | None, chunks: list[RankedChunk],
               top_n: int = 50) -> RerankOutcome:  # fmt: skip
        depth = min(len(chunks), top_n)
        text = np.asarray([-math.log(i + 1.0) for i in range(depth)])
        feats = [{"retrieval": float(t)} for t in text]
        return _finish(self.name, self.version, list(chunks), depth, text, feats, plan)


# --------------------------------------------------------------------------------------------------
# Cross-encoders the operator provides
# --------------------------------------------------------------------------------------------------


class _CrossEncoderBase:
    """A pair scorer: ``scores(query, passages) -> list[float]``; fused with a little retrieval rank."""

    name = "cross-encoder"
    version = "1"
    retrieval_weight = 0.1

    def __init__(self, depth: int | None = None) -> None:
        self.depth = int(depth if depth is not None else settings.CAIRN.get("RERANKER_DEPTH", 30))

    def scores(self, query: str, passages: list[str]) -> list[float]:  # pragma: no cover - abstract
        raise NotImplementedError

    def rerank(self, query: str, plan: QueryPlan | None, chunks: list[RankedChunk],
               top_n: int = 50) -> RerankOutcome:  # fmt: skip
        depth = min(len(chunks), top_n, self.depth)
        if depth == 0:
            return RerankOutcome(list(chunks), {}, self.name, self.version)
        head = chunks[:depth]
        raw = self.scores(query, [_passage_input(c) for c in head])
        if len(raw) != depth:
            raise ValueError(f"{self.name}: expected {depth} scores, got {len(raw)}")
        feats = [{"cross_encoder": float(s), "retrieval": -math.log(i + 1.0)} for i, s in enumerate(raw)]
        text = _zscores(raw) + self.retrieval_weight * _zscores([f["retrieval"] for f in feats])
        return _finish(self.name, self.version, list(chunks), depth, text, feats, plan)


class OnnxCrossEncoderReranker(_CrossEncoderBase):
    """A cross-encoder exported to ONNX in a directory the operator provides.

    The directory holds ``model.onnx`` and ``tokenizer.json`` (Hugging Face tokenizers format);
    the model takes ``input_ids`` / ``attention_mask`` (and ``token_type_ids`` if it declares it)
    and returns logits of shape (n, 1) — or (n, 2), in which case the last column is "relevant".
    Nothing is downloaded.
    """

    name = "onnx-cross-encoder"

    def __init__(self, model_dir: str | None = None, depth: int | None = None, max_tokens: int = 512) -> None:
        super().__init__(depth)
        self.model_dir = Path(model_dir or settings.CAIRN.get("RERANKER_MODEL_DIR", ""))
        self.max_tokens = max_tokens
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        self.version = ""

    def _load(self) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model, tok = self.model_dir / "model.onnx", self.model_dir / "tokenizer.json"
        if not model.is_file() or not tok.is_file():
            raise FileNotFoundError(f"reranker model dir {self.model_dir} needs model.onnx and tokenizer.json")
        # The release identity names the exact weights.
        self.version = sha256_file(model)[:16]
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = int(settings.CAIRN.get("EMBEDDER_THREADS", 1))
        session = ort.InferenceSession(str(model), sess_options=opts, providers=["CPUExecutionProvider"])
        tokenizer = Tokenizer.from_file(str(tok))
        tokenizer.enable_truncation(max_length=self.max_tokens)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._tokenizer, self._session = tokenizer, session

    def scores(self, query: str, passages: list[str]) -> list[float]:
        if self._session is None:
            with self._lock:
                if self._session is None:
                    self._load()
        inputs = {i.name for i in self._session.get_inputs()}
        out: list[float] = []
        for start in range(0, len(passages), 16):
            encs = self._tokenizer.encode_batch([(query, p) for p in passages[start : start + 16]])
            feed = {
                "input_ids": np.array([e.ids for e in encs], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encs], dtype=np.int64),
            }
            if "token_type_ids" in inputs:
                feed["token_type_ids"] = np.array([e.type_ids for e in encs], dtype=np.int64)
            (logits,) = self._session.run(None, {k: v for k, v in feed.items() if k in inputs})[:1]
            logits = np.asarray(logits, dtype=np.float64).reshape(len(encs), -1)
            out.extend(float(x) for x in logits[:, -1])
        return out


class ModelIntegrityError(RuntimeError):
    """The shipped reranker weights do not match the pinned sha256: refused, never loaded."""


# The weights ``manage.py train_reranker`` produced and the repository ships (models/reranker-minilm-l6-ce/,
# docs/models.md).  A retrained model changes this value (the command prints it) in the same commit.
TRAINED_RERANKER_SHA256 = "8a297f89850ecdebeb35ab20b66dcb02e40c6a263bbc526fe598b80031518219"


def trained_reranker_dir() -> Path:
    return Path(settings.BASE_DIR) / "models" / "reranker-minilm-l6-ce"


class TrainedCrossEncoderReranker(OnnxCrossEncoderReranker):
    """Cairn's own cross-encoder (MiniLM-L6, int8 ONNX), trained by ``manage.py train_reranker``.

    Ships in the repository (``models/reranker-minilm-l6-ce``); the loader refuses weights whose
    sha256 is not ``TRAINED_RERANKER_SHA256`` (or ``expected_sha256``).  Pairs are truncated to
    128 tokens, as in training (``--max-len 128``)."""

    name = "minilm-l6-cross-encoder"

    def __init__(self, model_dir: str | None = None, depth: int | None = None, max_tokens: int = 128,
                 expected_sha256: str | None = None) -> None:  # fmt: skip
        super().__init__(model_dir=str(model_dir or trained_reranker_dir()), depth=depth, max_tokens=max_tokens)
        self.expected_sha256 = expected_sha256 or TRAINED_RERANKER_SHA256

    def _load(self) -> None:
        model = self.model_dir / "model.onnx"
        if not model.is_file():
            raise FileNotFoundError(f"trained reranker missing: {model}")
        digest = sha256_file(model)
        if digest != self.expected_sha256:
            raise ModelIntegrityError(
                f"{model} has sha256 {digest[:16]}…, expected {self.expected_sha256[:16]}…: refusing to load it"
            )
        super()._load()


class HttpCrossEncoderReranker(_CrossEncoderBase):
    """A rerank endpoint: Cohere / Jina (``{"query", "documents", "top_n"}`` -> ``{"results": [{"index",
    "relevance_score"}]}``) or TEI (``{"query", "texts"}`` -> ``[{"index", "score"}]``), chosen by
    ``CAIRN_RERANKER_HTTP_FORMAT``.  The endpoint's host is the only one the client may reach;
    any error or malformed answer raises (the engine decides how to degrade)."""

    name = "http-cross-encoder"

    def __init__(self, url: str | None = None, *, api_key: str | None = None, model: str | None = None,
                 fmt: str | None = None, depth: int | None = None, timeout: float = 10.0) -> None:  # fmt: skip
        super().__init__(depth)
        from urllib.parse import urlsplit

        cfg = settings.CAIRN
        self.url = url or cfg.get("RERANKER_URL", "")
        if not self.url:
            raise ValueError("HttpCrossEncoderReranker needs CAIRN_RERANKER_URL")
        self.api_key = api_key if api_key is not None else cfg.get("RERANKER_API_KEY", "")
        self.model = model if model is not None else cfg.get("RERANKER_MODEL", "")
        self.fmt = (fmt or cfg.get("RERANKER_HTTP_FORMAT", "cohere")).lower()
        if self.fmt not in ("cohere", "tei"):
            raise ValueError("CAIRN_RERANKER_HTTP_FORMAT must be cohere or tei")
        parts = urlsplit(self.url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        # The operator configured this endpoint (often on a private network): allow exactly it.
        self._session = build_session(allowed_hosts=[f"{parts.hostname}:{port}"], timeout=(3.0, timeout),
                                      max_response_bytes=5_000_000)  # fmt: skip
        self.version = f"{self.fmt}:{self.model or 'default'}"

    def scores(self, query: str, passages: list[str]) -> list[float]:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        if self.fmt == "tei":
            body: dict[str, Any] = {"query": query, "texts": passages, "raw_scores": False, "truncate": True}
        else:
            body = {"query": query, "documents": passages, "top_n": len(passages), "return_documents": False}
            if self.model:
                body["model"] = self.model
        resp = self._session.post(self.url, json=body, headers=headers)
        resp.raise_for_status()
        data = resp.json()
        items = data if self.fmt == "tei" else data.get("results") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise ValueError("rerank endpoint returned an unexpected body")
        key = "score" if self.fmt == "tei" else "relevance_score"
        scores: list[float | None] = [None] * len(passages)
        for item in items:
            idx = item.get("index") if isinstance(item, dict) else None
            if not isinstance(idx, int) or not 0 <= idx < len(passages) or not isinstance(item.get(key), int | float):
                raise ValueError("rerank endpoint returned an unexpected item")
            scores[idx] = float(item[key])
        if any(s is None for s in scores):
            raise ValueError("rerank endpoint did not score every passage")
        return [float(s) for s in scores if s is not None]


def reranker() -> Any:

    return get_backend("RERANKER")


def with_depth(r: Any, depth: int) -> Any:
    """A copy of a reranker object with another depth (evaluation reranks BM25's top 100)."""
    clone = replace(r) if hasattr(r, "__dataclass_fields__") else _shallow_copy(r)
    clone.depth = depth
    return clone


def _shallow_copy(r: Any) -> Any:
    import copy

    return copy.copy(r)
