"""Compare Postgres with the OpenSearch index, tenant by tenant; ``--repair`` fixes the differences.

    manage.py index_check                 # all tenants; exit status 1 when anything differs
    manage.py index_check --tenant 7 --repair

Postgres is the source of truth.  Repair re-queues each differing document
through the index outbox (so it goes the same, idempotent way as every write)
and drains it.  A backlog still in the outbox is drained first, since its rows
are differences that are merely in flight.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from retrieval import outbox
from retrieval.backends.opensearch import IndexUnavailable
from tenants.models import Tenant


class Command(BaseCommand):
    help = "Compare Postgres with OpenSearch per tenant; --repair re-sends what differs."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", type=int, action="append", default=[], help="tenant id (repeatable)")
        parser.add_argument("--repair", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        if not outbox.enabled():
            raise CommandError("the configured index backend does not use OpenSearch (CAIRN_INDEX_BACKEND)")
        tenants = opts["tenant"] or list(Tenant.objects.order_by("id").values_list("id", flat=True))
        dirty = 0
        try:
            for tid in tenants:
                if opts["repair"] and outbox.backlog(tid):
                    outbox.drain_all(tid)
                diff = outbox.compare_index(tid)
                line = (f"tenant {tid}: postgres {diff.postgres} chunks, opensearch {diff.opensearch}; "
                        f"missing {len(diff.missing)}, extra {len(diff.extra)}, mismatched {len(diff.mismatched)}")  # fmt: skip
                if diff.clean:
                    self.stdout.write(line + " -- ok")
                    continue
                if not opts["repair"]:
                    dirty += 1
                    self.stdout.write(line + f" -- DIFFERS (outbox backlog {outbox.backlog(tid)})")
                    continue
                drained = outbox.repair_index(diff)
                after = outbox.compare_index(tid)
                self.stdout.write(line + f" -- repaired {len(diff.documents())} documents ({drained} outbox rows); "
                                  + ("now ok" if after.clean else "STILL DIFFERS"))  # fmt: skip
                dirty += 0 if after.clean else 1
        except IndexUnavailable as exc:
            raise CommandError(f"OpenSearch is unavailable: {exc}") from exc
        if dirty:
            raise CommandError(f"{dirty} tenant(s) differ")
