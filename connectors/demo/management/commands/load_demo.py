from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from connectors.demo.loader import DEMO_LOGINS, DemoSourcesEndpoint, load_demo, sync_progress


class Command(BaseCommand):
    help = (
        "Create the demo tenants and their connector instances (pointed at the local sample-export server) "
        "and run the real connector syncs (idempotent: a finished full sync is followed by an incremental one)."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--sources", type=Path, required=True,
                            help="the ready file written by `python -m connectors.demo.server`")  # fmt: skip
        parser.add_argument("--wait-first", type=float, default=180.0,
                            help="seconds to wait (printing progress) for the first, small wiki space")  # fmt: skip
        parser.add_argument("--print-logins", action="store_true")
        parser.add_argument("--url", default="http://127.0.0.1:8000/")

    def _requested(self, runs: list[Any]) -> None:
        for _, instance, mode in runs:
            self.stdout.write(f"[cairn] demo connector {instance.source.name!r}: {mode} sync requested")

    def handle(self, *args: Any, **opts: Any) -> None:
        deadline = time.monotonic() + 30
        while not opts["sources"].exists():
            if time.monotonic() > deadline:
                raise CommandError(f"the demo source server did not start ({opts['sources']} missing)")
            time.sleep(0.2)
        ready = json.loads(opts["sources"].read_text())
        endpoint = DemoSourcesEndpoint(ready["base_url"], ready["ca_file"])
        runs = load_demo(endpoint, stage=1)
        self._requested(runs)
        # The first instance is the small onboarding space: wait for it so the portal can answer.
        deadline = time.monotonic() + opts["wait_first"]
        last = None
        while time.monotonic() < deadline:
            rows = sync_progress(runs)
            line = ", ".join(f"{name} {status} ({docs} docs)" for name, _, status, docs in rows)
            if line != last:
                self.stdout.write(f"[cairn] sync: {line}")
                self.stdout.flush()
                last = line
            if rows[0][2] in ("done", "failed"):
                break
            time.sleep(2)
        self._requested(load_demo(endpoint, stage=2))
        if opts["print_logins"]:
            self.stdout.write("")
            self.stdout.write(f"  Cairn is running at {opts['url']}")
            self.stdout.write("  Demo logins (username / password — what they can read):")
            for login in DEMO_LOGINS:
                self.stdout.write(f"    {login.username:8} / {login.password:13} tenant {login.tenant}: {login.sees}")
            self.stdout.write("  Press Ctrl-C to stop everything.")
            self.stdout.write("")
