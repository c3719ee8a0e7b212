from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand
from django.db.models import Count, Q

from retrieval.models import Document, IngestEvent
from tenants.context import tenant_context
from tenants.models import Tenant


def progress() -> tuple[int, int, int]:
    pending = done = docs = 0
    for tenant_id in Tenant.objects.values_list("pk", flat=True):
        with tenant_context(tenant_id):
            agg = IngestEvent.objects.aggregate(
                p=Count("pk", filter=Q(status=IngestEvent.Status.PENDING)),
                d=Count("pk", filter=~Q(status=IngestEvent.Status.PENDING)),
            )
            pending += agg["p"]
            done += agg["d"]
            docs += Document.objects.filter(deleted=False).count()
    return pending, done, docs


class Command(BaseCommand):
    help = "Print ingestion progress of all tenants (--follow until the queue is empty)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--follow", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        last = None
        while True:
            pending, done, docs = progress()
            if (pending, done) != last:
                total = pending + done
                pct = 100 * done // total if total else 100
                self.stdout.write(
                    f"[cairn] ingest: {done}/{total} events applied ({pct}%), {docs} documents searchable"
                )
                self.stdout.flush()
                last = (pending, done)
            if not opts["follow"] or pending == 0:
                return
            time.sleep(3)
