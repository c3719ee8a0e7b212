"""Claim-support pairs (SUPPORT / CONTRADICT / NEI) for the support classifier (issue 18 section 3).

``manage.py train_support`` trains on them (``--data-only`` builds and summarises them without torch);
the classifier is measured but not used by the verifier (docs/models.md says why).

* ``scifact-claims-train``: SciFact claims **train** (``scifact_claims_train.jsonl``), built exactly as
  the verifier suite builds its dev items: SUPPORT / CONTRADICT claim + rationale sentences, NEI claim +
  the first three sentences of the cited abstract.  The dev split is never read.
* ``synthetic-18f`` / ``synthetic-sec10q`` (FactCC-style, from the corpora's prose sections): a sentence
  and the 3-sentence window around it -> SUPPORT; the same sentence with one number, year, negation
  or capitalised entity swapped -> CONTRADICT; a sentence from another document (BM25-similar) with
  the window -> NEI.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass

from evaluation.datasets import data_root
from evaluation.training.data import _bm25, _sections_18f, _sections_sec10q, _top


@dataclass
class Pair:
    source: str
    claim: str
    evidence: str
    label: str  # SUPPORT | CONTRADICT | NEI
    transform: str = ""


_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_NUM = re.compile(r"\b\d[\d,]*(?:\.\d+)?\b")
_YEAR = re.compile(r"\b(19|20)\d{2}\b")
_ENTITY = re.compile(r"\b[A-Z][a-z]+(?:\s[A-Z][a-z]+)*\b")
_NEGATABLE = re.compile(r"\b(is|are|was|were|can|will|should|must|does|do|has|have)\b")


def scifact_claim_pairs() -> list[Pair]:
    corpus: dict[str, str] = {}
    root = data_root() / "beir_scifact"
    for part in sorted(root.glob("corpus.part*.jsonl")):
        for line in part.open(encoding="utf-8"):
            if line.strip():
                row = json.loads(line)
                corpus[str(row["_id"])] = row.get("text", "")
    out: list[Pair] = []
    path = data_root() / "scifact_claims" / "scifact_claims_train.jsonl"
    for line in path.open(encoding="utf-8"):
        if not line.strip():
            continue
        c = json.loads(line)
        if c["evidence"]:
            for ev in c["evidence"].values():
                out.append(Pair("scifact-claims-train", c["claim"], " ".join(ev["rationale_sentences"]), ev["label"]))
        else:
            for doc_id in c["cited_doc_ids"][:1]:
                text = corpus.get(str(doc_id), "")
                if text:
                    out.append(Pair("scifact-claims-train", c["claim"], " ".join(_SENT.split(text)[:3]), "NEI"))
    return out


def corrupt(sentence: str, rng: random.Random, entities: list[str]) -> tuple[str, str] | None:
    """One FactCC-style swap (number, year, negation, entity); None when none applies."""
    options = []
    if _YEAR.search(sentence):
        options.append("year")
    if _NUM.search(sentence):
        options.append("number")
    if _NEGATABLE.search(sentence):
        options.append("negation")
    ents = [e for e in _ENTITY.findall(sentence[1:]) if e in entities]
    if ents and len(set(entities)) > 1:
        options.append("entity")
    if not options:
        return None
    kind = rng.choice(options)
    if kind == "year":
        m = rng.choice(list(_YEAR.finditer(sentence)))
        y = int(m.group()) + rng.choice([-3, -2, -1, 1, 2, 3])
        return sentence[: m.start()] + str(y) + sentence[m.end() :], kind
    if kind == "number":
        m = rng.choice(list(_NUM.finditer(sentence)))
        raw = m.group().replace(",", "")
        val = float(raw) * rng.choice([0.5, 2, 3, 1.5, 0.25]) if raw else 0.0
        new = f"{val:,.0f}" if "." not in raw else f"{val:,.2f}"
        if new == m.group():
            new = f"{val + 7:,.0f}"
        return sentence[: m.start()] + new + sentence[m.end() :], kind
    if kind == "negation":
        neg = _NEGATABLE.search(sentence)
        assert neg is not None
        return sentence[: neg.end()] + " not" + sentence[neg.end() :], kind
    e = rng.choice(ents)
    other = rng.choice([x for x in set(entities) if x != e])
    return sentence.replace(e, other, 1), kind


def synthetic_pairs(source: str, sections: list[tuple[str, str, str, str]], rng: random.Random,
                    per_section: int = 1) -> list[Pair]:  # fmt: skip
    docs = []
    for doc, _title, _heading, body in sections:
        sents = [s.strip() for s in _SENT.split(re.sub(r"\s+", " ", body)) if 40 <= len(s.strip()) <= 300]
        if len(sents) >= 3:
            docs.append((doc, sents))
    entities = sorted({e for _, sents in docs for s in sents for e in _ENTITY.findall(s[1:])})
    r, st = _bm25([" ".join(s) for _, s in docs])
    out: list[Pair] = []
    for doc, sents in docs:
        for _ in range(per_section):
            k = rng.randrange(len(sents))
            window = " ".join(sents[max(0, k - 1) : k + 2])
            out.append(Pair(source, sents[k], window, "SUPPORT", "same"))
            bad = corrupt(sents[k], rng, entities)
            if bad:
                out.append(Pair(source, bad[0], window, "CONTRADICT", bad[1]))
            others = [j for j in _top(r, st, [sents[k]], 6)[0] if docs[j][0] != doc]
            if others:
                j = rng.choice(others)
                out.append(Pair(source, rng.choice(docs[j][1]), window, "NEI", "other-document"))
    return out


def build(seed: int = 13) -> list[Pair]:
    rng = random.Random(seed)
    pairs = scifact_claim_pairs()
    pairs += synthetic_pairs("synthetic-18f", _sections_18f(), rng)
    pairs += synthetic_pairs("synthetic-sec10q", _sections_sec10q(), rng)
    rng.shuffle(pairs)
    return pairs
