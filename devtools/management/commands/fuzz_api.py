"""``manage.py fuzz_api``: the long schema fuzz of the API (the short one runs in CI).

Runs ``devtools.apifuzz`` for every operation of ``/api/v1/schema`` x four principals x valid and
invalid input, prints a per-operation summary and writes ``reports/latest/api_fuzz.json``.
Exits 1 when any check failed.

    manage.py fuzz_api --examples 100 --seed 7                 # in-process WSGI app
    manage.py fuzz_api --examples 100 --url http://127.0.0.1:8000  # a running server

Both need the database of the server (the principals and their two tenants are created there).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.test.utils import override_settings
from django.utils import timezone

from devtools import apifuzz

DEFAULT_OUTPUT = Path(settings.BASE_DIR) / "reports" / "latest" / "api_fuzz.json"


class Command(BaseCommand):
    help = "Fuzz every API operation from its OpenAPI schema as four principals (schemathesis)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--examples", type=int, default=50,
                            help="generated cases per operation, principal and mode (anonymous gets a fifth)")  # fmt: skip
        parser.add_argument("--seed", type=int, default=None, help="hypothesis seed (default: derandomised)")
        parser.add_argument("--url", default=None, help="base URL of a running server (default: in-process WSGI)")
        parser.add_argument("--operation", action="append", default=[],
                            help="only operations whose 'METHOD /path' contains this (repeatable)")  # fmt: skip
        parser.add_argument("--output", default=str(DEFAULT_OUTPUT))

    def handle(self, *args: Any, **opts: Any) -> None:
        n = max(1, int(opts["examples"]))
        if opts["url"] and not apifuzz.is_loopback_url(opts["url"]):
            # The outbound guard of this process would refuse it, and the run must not leave the machine.
            raise CommandError("--url must name a server on this machine (127.0.0.1, ::1 or localhost)")
        config = apifuzz.FuzzConfig(
            examples={"anonymous": max(2, n // 5), "other_tenant": n, "member": n, "admin": n},
            seed=opts["seed"],
            base_url=opts["url"],
            operations=tuple(opts["operation"]),
        )
        started = time.monotonic()
        world = apifuzz.build_world()
        guard = apifuzz.OutboundGuard()

        def progress(o: apifuzz.Outcome) -> None:
            mark = "FAIL" if o.failures else "ok"
            self.stderr.write(f"  {o.operation} as {o.principal} ({o.mode}): {o.calls} calls, "
                              f"{dict(sorted(o.statuses.items()))}, {o.seconds:.1f}s {mark}")  # fmt: skip

        # The rate limits are tested in tests/security/test_rate_limits.py; here they would only turn most of a
        # long run into 429s. A remote server keeps its own limits (429 is a documented answer).
        rates = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"user": "1000000/min", "tenant": "1000000/min"}}
        try:
            with override_settings(REST_FRAMEWORK=rates), guard.installed():
                outcomes = apifuzz.run_fuzz(world, config, guard=guard, progress=progress)
        finally:
            apifuzz.quiesce_world(world)
        seconds = time.monotonic() - started
        report = build_report(outcomes, guard, config, seconds, opts)
        out = Path(opts["output"])
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=1, default=str) + "\n")
        self.print_summary(report)
        self.stdout.write(f"report: {out}")
        if report["totals"]["failures"] or report["outbound_attempts"]:
            raise SystemExit(1)

    def print_summary(self, report: dict[str, Any]) -> None:
        self.stdout.write(f"{'operation':<52} {'calls':>6} {'2xx':>5} {'4xx':>5} {'5xx':>4} {'fail':>5}")
        for op, row in report["operations"].items():
            by_class = Counter(f"{k[0]}xx" for k, v in row["statuses"].items() for _ in range(v))
            self.stdout.write(f"{op:<52} {row['calls']:>6} {by_class['2xx']:>5} {by_class['4xx']:>5} "
                              f"{by_class['5xx']:>4} {row['failures']:>5}")  # fmt: skip
        t = report["totals"]
        self.stdout.write(f"{t['operations']} operations, {t['calls']} calls in {report['seconds']:.0f} s, "
                          f"{t['failures']} failures, {len(report['outbound_attempts'])} outbound attempts refused")  # fmt: skip
        for line in report["failure_lines"][:50]:
            self.stdout.write("  " + line)


def build_report(outcomes: list[apifuzz.Outcome], guard: apifuzz.OutboundGuard, config: apifuzz.FuzzConfig,
                 seconds: float, opts: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    import schemathesis

    operations = apifuzz.summarise(outcomes)
    statuses: Counter[str] = Counter()
    for row in operations.values():
        statuses.update(row["statuses"])
    return {
        "generated_at": timezone.now().isoformat(),
        "command": "manage.py fuzz_api "
        + " ".join(
            f"--{k} {v}"
            for k, v in (("examples", opts["examples"]), ("seed", opts["seed"]), ("url", opts["url"]))
            if v is not None
        ),  # fmt: skip
        "target": config.base_url or "in-process WSGI",
        "examples": config.examples,
        "seed": config.seed,
        "schemathesis": schemathesis.__version__,
        "python": apifuzz.python_version(),
        "seconds": round(seconds, 1),
        "totals": {
            "operations": len(operations),
            "runs": len(outcomes),
            "calls": sum(r["calls"] for r in operations.values()),
            "failures": sum(r["failures"] for r in operations.values()),
            "statuses": dict(sorted(statuses.items())),
        },
        "outbound_attempts": guard.attempts,
        "operations": operations,
        "failure_lines": apifuzz.failure_lines(outcomes),
        "runs": [o.as_json() for o in outcomes],
    }
