from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand

from connectors.progress import Progress, combined, tenant_progress
from tenants.context import tenant_context
from tenants.models import Tenant


def progress() -> Progress:
    """All tenants' loading progress, from the same function as the portal's status line."""
    parts = []
    for tenant_id in Tenant.objects.values_list("pk", flat=True):
        with tenant_context(tenant_id):
            parts.append(tenant_progress())
    return combined(parts)


class Command(BaseCommand):
    help = "Print ingestion progress of all tenants (--follow until loading has finished)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--follow", action="store_true")
        parser.add_argument("--interval", type=float, default=3.0)
        parser.add_argument("--demo", action="store_true", help="the demo was loaded: say so when it has finished")

    def handle(self, *args: Any, **opts: Any) -> None:
        last = None
        started = time.monotonic()
        while True:
            p = progress()
            if (p.pending, p.done, p.full_syncs) != last:
                total = p.pending + p.done
                pct = 100 * p.done // total if total else 100
                syncs = f", {p.full_syncs} sync{'s' if p.full_syncs != 1 else ''} running" if p.full_syncs else ""
                self.stdout.write(
                    f"[cairn] ingest: {p.done}/{total} events applied ({pct}%), {p.documents} documents searchable"
                    + syncs
                )
                self.stdout.flush()
                last = (p.pending, p.done, p.full_syncs)
            if not p.loading:
                # The line the portal agrees with: its "still loading" note disappears on the same condition.
                if opts["follow"]:
                    minutes = (time.monotonic() - started) / 60
                    what = "demo finished loading" if opts["demo"] else "loading finished"
                    self.stdout.write(f"[cairn] {what}: {p.documents} documents searchable ({minutes:.1f} min); "
                                      'the portal no longer says "still loading"')  # fmt: skip
                    self.stdout.flush()
                return
            if not opts["follow"]:
                return
            time.sleep(opts["interval"])
