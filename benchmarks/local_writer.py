"""The local writer (llama.cpp server via xllamacpp) beside the extractive writer on the SEC 10-Q answers suite.

    CAIRN_DATA_DIR=/tmp/cairn-<you> .venv/bin/python -m cairn.stack services --db bench &
    source /tmp/cairn-<you>/env.bench
    DJANGO_SETTINGS_MODULE=cairn.settings .venv/bin/python benchmarks/local_writer.py --limit 3
    ... benchmarks/local_writer.py --filing "2023 Q3 AMZN.pdf" --limit 3 --pages 12

The questions and the filing are the answers suite's smoke slice (``manage.py evaluate --suite answers
--limit N``: the first N dev questions, the one filing they point at, its first 4*N pages).  Each question
is answered twice through ``answers.engine.answer_stages`` in the same tenant: once with the extractive
writer, once with the ``llama_cpp`` writer against ``python -m answers.writers.local_model serve`` (started here, as
``bin/cairn run`` starts it).  Per question: wall time, time to the first verified claim (the first
``claim`` event), abstention, source hit (a cited document matches the question's source glob), and the
llama.cpp server's own prompt / generation token rates (parsed from its log).

Writes ``benchmarks/out/local_writer.json``.  Small on purpose: each local answer costs minutes of CPU.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "benchmarks" / "out"

# llama.cpp's server log, per request (tools/server: slot print_timing).
_PROMPT = re.compile(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
_EVAL = re.compile(r"\beval time =\s*([\d.]+) ms /\s*(\d+) tokens")


def _timings(log_text: str) -> list[dict[str, float]]:
    prompts = _PROMPT.findall(log_text)
    # _EVAL also matches the "prompt eval time" line that precedes each generation line: every second one.
    gens = _EVAL.findall(log_text)[1::2]
    out = []
    for (p_ms, p_n), (g_ms, g_n) in zip(prompts, gens, strict=False):
        out.append({"prompt_tokens": int(p_n), "prompt_tok_s": int(p_n) / (float(p_ms) / 1000) if float(p_ms) else 0,
                    "generated_tokens": int(g_n), "gen_tok_s": int(g_n) / (float(g_ms) / 1000) if float(g_ms) else 0})  # fmt: skip
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=3)
    parser.add_argument(
        "--filing",
        default="",
        help='one filing instead (e.g. "2023 Q3 AMZN.pdf"): the first --limit '
        "dev questions whose source glob matches it, on its first --pages pages",
    )
    parser.add_argument("--pages", type=int, default=12)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    import django

    django.setup()
    from django.conf import settings

    from answers.engine import answer_stages
    from answers.models import AnswerSettings
    from answers.planning import RequestFilters
    from answers.writers import local_model as llm
    from benchmarks._stack import git_commit, loadavg, machine
    from evaluation.datasets import load_sec10q
    from evaluation.suites.answers import pdf_document
    from evaluation.tenancy import ensure_eval_tenant
    from retrieval.models import Document
    from tenants.context import tenant_context

    model = llm.configured_model_path()
    if not (llm.runtime_available() and model):
        raise SystemExit("local model not installed: bin/cairn install-llm")
    if args.filing:
        all_rows, all_pdfs = load_sec10q(None)
        pdfs = [p for p in all_pdfs if p.name == args.filing]
        rows = [r for r in all_rows if fnmatch.fnmatch(args.filing, r["Source Docs"])][: args.limit]
        pages = args.pages
    else:  # the answers suite's smoke slice (manage.py evaluate --suite answers --limit N)
        rows, pdfs = load_sec10q(args.limit)
        pdfs = sorted([p for p in pdfs if any(fnmatch.fnmatch(p.name, r["Source Docs"]) for r in rows)],
                      key=lambda p: p.name, reverse=True)[:1]  # fmt: skip
        rows = [r for r in rows if any(fnmatch.fnmatch(p.name, r["Source Docs"]) for p in pdfs)] or rows[:1]
        pages = 4 * args.limit
    slug = f"bench-localwriter-{os.getpid()}"
    et = ensure_eval_tenant(slug, [pdf_document(p, pages) for p in pdfs], source_kind="sharepoint",
                            source_name="Finance library", authority_tier=0, progress=False)  # fmt: skip
    perm = et.perm()
    with tenant_context(et.tenant.pk):
        files = {d: m.get("file", "") for d, m in Document.objects.values_list("id", "metadata")}
    log_file = OUT / "local_writer_server.log"
    OUT.mkdir(parents=True, exist_ok=True)
    log_file.unlink(missing_ok=True)
    server = llm.LocalServer(model, threads=args.threads)
    t = time.perf_counter()
    server.start(log_file=log_file)
    load_s = time.perf_counter() - t
    settings.CAIRN = {**settings.CAIRN, "ANSWER_CACHE_SECONDS": 0, "LATEST_CACHE_SECONDS": 0,
                      "LLM_SERVER_URL": server.url, "LLM_API_KEY": server.api_key, "WRITER_TIMEOUT_SECONDS": 900}  # fmt: skip
    results: dict[str, list[dict[str, Any]]] = {"extractive": [], "llama_cpp": []}
    try:
        for writer in ("extractive", "llama_cpp"):
            with tenant_context(et.tenant.pk):
                AnswerSettings.objects.update_or_create(tenant=et.tenant, defaults={"writer": writer})
            for row in rows:
                before = log_file.read_text(errors="replace") if log_file.exists() else ""
                t = time.perf_counter()
                first_claim = None
                response: dict[str, Any] = {}
                with tenant_context(et.tenant.pk):
                    for event in answer_stages(perm, row["Question"], RequestFilters()):
                        if event.kind == "claim" and first_claim is None:
                            first_claim = time.perf_counter() - t
                        if event.kind == "done":
                            response = event.data
                wall = time.perf_counter() - t
                ans = response.get("answer") or {}
                ev = {e["id"]: e for e in response.get("evidence", [])}
                cited = sorted({files.get(ev[c["evidence_id"]]["document_id"], "") for cl in ans.get("claims") or []
                                for c in cl.get("citations", []) if c.get("evidence_id") in ev})  # fmt: skip
                after = log_file.read_text(errors="replace") if log_file.exists() else ""
                results[writer].append({
                    "question": row["Question"], "seconds": round(wall, 1),
                    "first_claim_seconds": round(first_claim, 1) if first_claim is not None else None,
                    "claims": len(ans.get("claims") or []),
                    "abstention": (ans.get("abstention") or {}).get("reason") if ans.get("abstention") else None,
                    "source_hit": any(fnmatch.fnmatch(f, row["Source Docs"]) for f in cited),
                    "writer_trace": (response.get("trace") or {}).get("writer"),
                    "server": _timings(after[len(before):]) if writer == "llama_cpp" else [],
                })  # fmt: skip
                print(writer, json.dumps(results[writer][-1])[:400], flush=True)
    finally:
        server.stop()
    summary = {}
    for writer, items in results.items():
        answered = [i for i in items if i["abstention"] is None]
        timings = [s for i in items for s in i["server"]]
        summary[writer] = {
            "questions": len(items), "answered": len(answered),
            "source_hits": sum(i["source_hit"] for i in items),
            "median_seconds": sorted(i["seconds"] for i in items)[len(items) // 2] if items else None,
            "first_claim_seconds": [i["first_claim_seconds"] for i in items],
            "prompt_tok_s": [round(s["prompt_tok_s"], 1) for s in timings],
            "gen_tok_s": [round(s["gen_tok_s"], 1) for s in timings],
        }  # fmt: skip
    report = {"command": "benchmarks/local_writer.py " + " ".join(sys.argv[1:]), "commit": git_commit(),
              "machine": machine(), "loadavg_end": loadavg(), "model_load_seconds": round(load_s, 1),
              "filing": [p.name for p in pdfs], "chunks": et.chunks, "summary": summary, "items": results}  # fmt: skip
    (OUT / "local_writer.json").write_text(json.dumps(report, indent=2, default=str))
    print(json.dumps({"model_load_seconds": report["model_load_seconds"], "summary": summary}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
