from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from retrieval.demo import DEMO_LOGINS, load_demo


class Command(BaseCommand):
    help = "Create the demo tenants and queue their content through the ingestion pipeline (idempotent)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--print-logins", action="store_true")
        parser.add_argument("--url", default="http://127.0.0.1:8000/")

    def handle(self, *args: Any, **opts: Any) -> None:
        queued = load_demo()
        self.stdout.write(f"[cairn] demo content: {queued} new item(s) queued for ingestion")
        if opts["print_logins"]:
            self.stdout.write("")
            self.stdout.write(f"  Cairn is running at {opts['url']}")
            self.stdout.write("  Demo logins (username / password — what they can read):")
            for login in DEMO_LOGINS:
                self.stdout.write(f"    {login.username:8} / {login.password:13} tenant {login.tenant}: {login.sees}")
            self.stdout.write("  Press Ctrl-C to stop everything.")
            self.stdout.write("")
