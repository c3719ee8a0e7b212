"""Train (or retrain) tenants' vector centroids and reassign their chunks (retrieval/clustering.py).

    manage.py vector_clusters                      # every tenant that is due (past the threshold / grown)
    manage.py vector_clusters --tenant 7 --force   # retrain tenant 7 now, whatever its size
    manage.py vector_clusters --status             # print each tenant's clustering, change nothing
    manage.py vector_clusters --queue              # queue the Celery task instead of running inline

Idempotent: a tenant that is not due is left alone; an interrupted reassignment is resumed.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from retrieval import clustering
from retrieval.models import VectorClustering
from retrieval.tasks import train_vector_clusters
from tenants.context import tenant_context
from tenants.models import Tenant


class Command(BaseCommand):
    help = "Train tenants' vector centroids for the clustered exact scan and reassign their chunks."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", type=int, action="append", default=[], help="tenant id (repeatable)")
        parser.add_argument("--force", action="store_true", help="retrain even when not due")
        parser.add_argument("--status", action="store_true", help="only print the state of each tenant")
        parser.add_argument("--queue", action="store_true", help="queue the task (acks_late) instead")

    def handle(self, *args: Any, **opts: Any) -> None:
        tenants = opts["tenant"] or list(Tenant.objects.order_by("id").values_list("id", flat=True))
        for tid in tenants:
            if opts["status"]:
                with tenant_context(tid):
                    c = VectorClustering.objects.first()
                    line = ("no clustering" if c is None else
                            f"generation {c.generation}, {c.nlist} lists on {c.trained_chunks} chunks, {c.state}")  # fmt: skip
                self.stdout.write(f"tenant {tid}: {line}")
            elif opts["queue"]:
                train_vector_clusters.delay(tid, opts["force"])
                self.stdout.write(f"tenant {tid}: queued")
            else:
                self.stdout.write(f"tenant {tid}: {json.dumps(clustering.train(tid, force=opts['force']))}")
