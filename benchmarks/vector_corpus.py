"""Real-structure vectors for ``benchmarks/vector_filtered.py --vectors real``: real passages embedded by the product.

    .venv/bin/python benchmarks/vector_corpus.py            # writes benchmarks/out/vector_corpus/

Base set (what the product would store): the passages are cut by the product's own chunker
(``retrieval.chunking.chunk_text``) and embedded by the product's own embedder
(``retrieval.embedder.MiniLMOnnxEmbedder``, all-MiniLM-L6-v2 int8 ONNX, unit vectors), from

- BEIR SciFact: every corpus document, ``title + ". " + abstract`` (5,183 documents);
- the 18F handbook: every current page (``pages_current.jsonl``), markdown extracted by the product's
  extractor (``retrieval.extract.extract_text``, ``text/markdown``) with its headings;
- the 20 SEC 10-Q filings: each PDF through the product's PDF extractor (``application/pdf``).

Queries (never in the base set): every BEIR SciFact query (the claims in ``queries.jsonl``) and every
question of ``sec10q/qna_dev.csv``, embedded with the same embedder.

Output (not committed; ``benchmarks/out/`` is git-ignored): ``base.npy`` (float32, n × 384),
``queries.npy``, ``meta.json`` (sources, counts, timings).  ``vector_filtered.py`` scales the base set to
``--rows`` by Gaussian perturbation (see its ``real_vectors``).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
OUT = Path(__file__).resolve().parent / "out" / "vector_corpus"


def scifact_passages() -> list[str]:
    from retrieval.chunking import chunk_text

    out: list[str] = []
    for part in sorted((DATA / "beir_scifact").glob("corpus.part*.jsonl")):
        for line in part.read_text().splitlines():
            doc = json.loads(line)
            text = f"{doc.get('title', '')}. {doc.get('text', '')}".strip()
            out.extend(c.text for c in chunk_text(text))
    return out


def handbook_passages() -> list[str]:
    from retrieval.chunking import chunk_text
    from retrieval.extract import extract_text

    out: list[str] = []
    for line in (DATA / "18f_handbook" / "pages_current.jsonl").read_text().splitlines():
        page = json.loads(line)
        ext = extract_text(page["text"].encode(), "text/markdown")
        out.extend(c.text for c in chunk_text(ext.text, ext.headings))
    return out


def filing_passages() -> list[str]:
    from retrieval.chunking import chunk_text
    from retrieval.extract import extract_text

    out: list[str] = []
    for pdf in sorted((DATA / "sec10q" / "docs").glob("*.pdf")):
        t0 = time.perf_counter()
        ext = extract_text(pdf.read_bytes(), "application/pdf")
        chunks = chunk_text(ext.text, ext.headings)
        out.extend(c.text for c in chunks)
        print(f"  {pdf.name}: {len(chunks)} chunks ({time.perf_counter() - t0:.1f}s)", flush=True)
    return out


def queries() -> tuple[list[str], dict[str, int]]:
    texts = [json.loads(line)["text"] for line in (DATA / "beir_scifact" / "queries.jsonl").read_text().splitlines()]
    n_scifact = len(texts)
    with (DATA / "sec10q" / "qna_dev.csv").open(newline="", encoding="utf-8", errors="replace") as f:
        texts.extend(row["Question"] for row in csv.DictReader(f) if row.get("Question"))
    return texts, {"scifact_queries": n_scifact, "sec10q_questions": len(texts) - n_scifact}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cairn.settings")
    import django

    django.setup()
    from retrieval.embedder import MiniLMOnnxEmbedder

    args.out.mkdir(parents=True, exist_ok=True)
    embedder = MiniLMOnnxEmbedder(threads=args.threads)
    meta: dict[str, object] = {"embedder": f"{embedder.name} v{embedder.version}", "sources": {}}
    parts: list[np.ndarray] = []
    t_all = time.perf_counter()
    for name, fn in [("scifact", scifact_passages), ("handbook", handbook_passages), ("sec10q", filing_passages)]:
        t0 = time.perf_counter()
        texts = fn()
        t1 = time.perf_counter()
        vecs = embedder.embed(texts, batch_size=32)
        t2 = time.perf_counter()
        parts.append(vecs)
        meta["sources"][name] = {"passages": len(texts), "chunk_s": t1 - t0, "embed_s": t2 - t1,  # type: ignore[index]
                                 "passages_per_s": len(texts) / max(t2 - t1, 1e-9)}  # fmt: skip
        print(f"{name}: {len(texts)} passages, embedded in {t2 - t1:.0f}s", flush=True)
        np.save(args.out / f"base_{name}.npy", vecs)
    base = np.concatenate(parts).astype(np.float32)
    np.save(args.out / "base.npy", base)
    qtexts, qcounts = queries()
    qvecs = embedder.embed(qtexts, batch_size=32)
    np.save(args.out / "queries.npy", qvecs.astype(np.float32))
    meta.update({"base_rows": int(base.shape[0]), "queries": qcounts, "total_s": time.perf_counter() - t_all})
    (args.out / "meta.json").write_text(json.dumps(meta, indent=2))
    print(json.dumps(meta, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
