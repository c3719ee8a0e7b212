"""Readers for the public evaluation data in ``settings.CAIRN["DEMO_DATA_DIR"]`` (../shared/data).

Nothing here is copied into the repository; formats are described in ``../shared/data/README.md``.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings


def data_root() -> Path:
    return Path(settings.CAIRN["DEMO_DATA_DIR"])


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@dataclass(frozen=True)
class CorpusDoc:
    doc_id: str
    title: str
    text: str


@dataclass
class RetrievalSet:
    name: str
    corpus: list[CorpusDoc]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    digest: str = ""


def corpus_digest(docs: list[CorpusDoc]) -> str:
    h = hashlib.sha256()
    for d in docs:
        h.update(d.doc_id.encode() + b"\0" + d.title.encode() + b"\0" + d.text.encode() + b"\1")
    return h.hexdigest()[:12]


def load_scifact(limit: int | None = None, split: str = "test") -> RetrievalSet:
    """BEIR SciFact.  With ``limit``, the first ``limit`` judged queries and a corpus cut down to
    their relevant documents plus a deterministic sample of the others (about 20 per query), so a
    smoke run still has distractors."""
    root = data_root() / "beir_scifact"
    corpus: list[CorpusDoc] = []
    for part in sorted(root.glob("corpus.part*.jsonl")):
        for row in _jsonl(part):
            corpus.append(CorpusDoc(str(row["_id"]), row.get("title", ""), row.get("text", "")))
    queries = {str(r["_id"]): r["text"] for r in _jsonl(root / "queries.jsonl")}
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with (root / "qrels" / f"{split}.tsv").open() as fh:
        reader = csv.reader(fh, delimiter="\t")
        next(reader)
        for qid, did, score in reader:
            qrels[qid][did] = int(score)
    qids = [q for q in queries if q in qrels]
    if limit:
        qids = qids[:limit]
        keep = {d for q in qids for d in qrels[q]}
        others = sorted(
            (d for d in corpus if d.doc_id not in keep), key=lambda d: hashlib.md5(d.doc_id.encode()).hexdigest()
        )
        extra = {d.doc_id for d in others[: 20 * len(qids)]}
        corpus = [d for d in corpus if d.doc_id in keep or d.doc_id in extra]
    rs = RetrievalSet("beir-scifact", corpus, {q: queries[q] for q in qids}, {q: dict(qrels[q]) for q in qids})
    rs.digest = corpus_digest(corpus)
    return rs


@dataclass
class RerankQuery:
    qid: str
    query: str
    candidates: list[tuple[str, str]]  # (docid, passage) in BM25 order
    qrels: dict[str, int] = field(default_factory=dict)


def load_trec_dl19(limit: int | None = None, depth: int = 100) -> list[RerankQuery]:
    root = data_root() / "trec_dl19"
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with (root / "qrels.dl19-passage.txt").open() as fh:
        for line in fh:
            parts = line.split()
            if len(parts) == 4:
                qrels[parts[0]][parts[2]] = int(parts[3])
    raw = json.loads((root / "bm25_retrieve_results_dl19.json").read_text())
    out: list[RerankQuery] = []
    for item in raw:
        hits = item.get("hits") or []
        if not hits:
            continue
        qid = str(hits[0]["qid"])
        query = item["query"]
        cands: list[tuple[str, str]] = []
        for h in hits[:depth]:
            cands.append((str(h["docid"]), h.get("content") or ""))
        if qid in qrels:
            out.append(RerankQuery(qid, query, cands, dict(qrels[qid])))
    return out[:limit] if limit else out


def load_scifact_claims(split: str = "dev", limit: int | None = None) -> list[dict[str, Any]]:
    rows = _jsonl(data_root() / "scifact_claims" / f"scifact_claims_{split}.jsonl")
    return rows[:limit] if limit else rows


def load_ramdocs(limit: int | None = None) -> list[dict[str, Any]]:
    rows = _jsonl(data_root() / "ramdocs" / "ramdocs_dev.jsonl")
    return rows[:limit] if limit else rows


def load_sec10q(limit: int | None = None) -> tuple[list[dict[str, str]], list[Path]]:
    root = data_root() / "sec10q"
    with (root / "qna_dev.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    docs = sorted((root / "docs").glob("*.pdf"))
    return (rows[:limit] if limit else rows), docs
