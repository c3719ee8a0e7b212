"""``manage.py evaluate --suite … [--limit N] [--out reports]``: run one evaluation suite.

Writes ``<out>/<suite>/<UTC stamp>/<suite>.{json,md}`` + PNG plots and copies them to
``<out>/latest/``.  See evaluation/ and docs/benchmarks.md "Evaluation".
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from answers.writers import evaluated_writer, llama_local
from answers.writers.extractive import ExtractiveWriter
from answers.writers.openai_compat import OpenAICompatibleWriter
from evaluation.report import write

SUITES = ("retrieval", "reranker", "verifier", "conflicts", "answers", "leaks", "operations", "correctness")


class Command(BaseCommand):
    help = "Run an evaluation suite against public data sets and write JSON + PNG + Markdown reports."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--suite", required=True, choices=SUITES)
        parser.add_argument("--limit", type=int, default=None, help="only the first N queries / items (smoke runs)")
        parser.add_argument("--out", default=None, help="report directory (default: reports/ in the project)")
        parser.add_argument("--depth", type=int, default=None, help="reranking depth (default: the suite's)")
        parser.add_argument("--fresh", action="store_true", help="ingest into a new evaluation tenant")
        parser.add_argument("--no-progress", action="store_true")
        # Verifier suite only: the SciFact claims split (thresholds were tuned on dev) and an optional judge.
        parser.add_argument("--split", default=None, choices=("dev", "train", "test", "all"),
                            help="verifier: SciFact claims split (dev, train; default dev); "
                            "correctness: labelled-set split (dev, test, all; default all)")  # fmt: skip
        parser.add_argument("--ids", default=None,
                            help="correctness: only these labelled items (comma-separated ids, e.g. factual-001)")  # fmt: skip
        parser.add_argument("--data", default=None,
                            help="correctness: another question file in the labelled set's format (e.g. "
                            "evaluation/data/table_probes_r13.jsonl; default: the labelled set)")  # fmt: skip
        parser.add_argument("--full-corpus", action="store_true",
                            help="correctness: with --ids or --limit, still search the whole demo corpus "
                            "(default: only the selected items' documents)")  # fmt: skip
        parser.add_argument("--workers", type=int, default=1,
                            help="correctness: ask the questions in N forked processes (the corpus is loaded once)")  # fmt: skip
        parser.add_argument("--judge-url", default=None, help="verifier: OpenAI-compatible endpoint (…/v1) to judge")
        parser.add_argument("--judge-model", default="local", help="verifier: model name sent to the judge endpoint")
        parser.add_argument("--judge-local", action="store_true",
                            help="verifier: judge with the local model server at CAIRN_LLM_SERVER_URL (docs/models.md)")  # fmt: skip
        # Answer-producing suites (answers, conflicts, correctness): which writer is measured.
        parser.add_argument("--writer", default="default", choices=("default", "extractive", "openai_compatible", "llama_cpp"),
                            help="writer to measure (default: each tenant's configured writer; llama_cpp: the "
                            "local model server at CAIRN_LLM_SERVER_URL, docs/models.md)")  # fmt: skip
        parser.add_argument("--writer-url", default=None, help="openai_compatible: endpoint (…/v1)")
        parser.add_argument("--writer-model", default="local", help="openai_compatible: model name")
        parser.add_argument("--writer-key-env", default="", help="openai_compatible: env variable holding the key")

    def handle(self, *args: Any, **opts: Any) -> None:
        suite = opts["suite"]
        if opts["limit"] is not None and opts["limit"] < 1:
            raise CommandError("--limit must be >= 1")
        split = opts["split"] or ("all" if suite == "correctness" else "dev")
        allowed = ("dev", "test", "all") if suite == "correctness" else ("dev", "train")
        if split not in allowed:
            raise CommandError(
                f"--split {split} is not a split of the {suite} suite (choose from {', '.join(allowed)})"
            )
        if opts["data"] is not None and (suite != "correctness" or not Path(opts["data"]).is_file()):
            raise CommandError("--data names a question file of the correctness suite")
        out = Path(opts["out"]) if opts["out"] else Path(settings.BASE_DIR) / "reports"
        module = importlib.import_module(f"evaluation.suites.{suite}")

        if opts["judge_local"]:
            _require_local_server("--judge-local")
        with _writer_for_run(opts):
            result = module.run(limit=opts["limit"], progress=not opts["no_progress"], depth=opts["depth"],
                                fresh=opts["fresh"], split=split, judge_url=opts["judge_url"],
                                judge_model=opts["judge_model"], judge_local=opts["judge_local"],
                                ids=[i for i in opts["ids"].split(",") if i] if opts["ids"] else None,
                                workers=max(1, opts["workers"]), full_corpus=opts["full_corpus"],
                                data=Path(opts["data"]) if opts["data"] else None)  # fmt: skip
        command = "manage.py evaluate " + " ".join(shlex.quote(a) for a in sys.argv[2:])
        files = write(result, command, out)
        self.stdout.write(result.markdown)
        for kind, path in files.items():
            self.stdout.write(f"{kind}: {path}")


def _writer_for_run(opts: dict[str, Any]) -> contextlib.AbstractContextManager[None]:
    """The writer the run measures, installed for its duration (``answers.writers.evaluated_writer``)."""

    choice = opts.get("writer") or "default"
    if choice == "default":
        return contextlib.nullcontext()
    if choice == "extractive":
        return evaluated_writer(ExtractiveWriter())
    if choice == "llama_cpp":
        # The operator's server (python -m answers.writers.local_model serve), as bin/cairn run hands it over.
        _require_local_server("--writer llama_cpp")
        return evaluated_writer(llama_local.LlamaCppWriter())
    if not opts.get("writer_url"):
        raise CommandError(
            "--writer openai_compatible needs --writer-url (an OpenAI-compatible endpoint, …/v1); none is configured"
        )

    key = os.environ.get(opts["writer_key_env"], "") if opts.get("writer_key_env") else ""
    try:
        writer = OpenAICompatibleWriter(opts["writer_url"], opts["writer_model"], key,
                                        timeout=float(settings.CAIRN["WRITER_TIMEOUT_SECONDS"]))  # fmt: skip
    except ValueError as exc:
        raise CommandError(f"--writer-url: {exc}") from exc
    return evaluated_writer(writer)


def _require_local_server(flag: str) -> None:
    if not llama_local.available():
        raise CommandError(
            f"{flag} needs a running local model server: set CAIRN_LLM_SERVER_URL and CAIRN_LLM_API_KEY "
            "(docs/models.md)"
        )
