"""How far a tenant's loading has got: the one answer the portal's status line and ``bin/cairn run`` share.

"Loading" means more content is still on its way: an ingest event waits to be applied, or a full sync
is queued, running or throttled (it will write more events).  Routine incremental and permission syncs
do not count: every few minutes they would otherwise make a loaded tenant say "still loading".  Counting pending events alone said "done"
in the gap between a finished sync and the events of the next one, so the portal and the command line
disagreed about when the demo had finished.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Min, Q

from connectors.models import SyncState
from retrieval.models import Document, IngestEvent

ACTIVE_SYNC = (SyncState.Status.QUEUED, SyncState.Status.RUNNING, SyncState.Status.THROTTLED)


@dataclass(frozen=True)
class Progress:
    pending: int  # ingest events still to apply
    done: int  # ingest events applied (or skipped / failed: nothing more will happen to them)
    documents: int  # searchable documents
    full_syncs: int  # full syncs queued, running or throttled
    active_syncs: int  # sync runs of any mode queued, running or throttled
    oldest_pending_at: datetime | None

    @property
    def loading(self) -> bool:
        return self.pending > 0 or self.full_syncs > 0


def tenant_progress() -> Progress:
    """The active tenant's progress (call inside ``tenant_context``)."""
    agg = IngestEvent.objects.aggregate(
        pending=Count("pk", filter=Q(status=IngestEvent.Status.PENDING)),
        done=Count("pk", filter=~Q(status=IngestEvent.Status.PENDING)),
        oldest=Min("created_at", filter=Q(status=IngestEvent.Status.PENDING)),
    )
    syncs = SyncState.objects.filter(status__in=ACTIVE_SYNC).aggregate(
        all=Count("pk"), full=Count("pk", filter=Q(mode=SyncState.Mode.FULL))
    )
    return Progress(
        pending=agg["pending"],
        done=agg["done"],
        documents=Document.objects.filter(deleted=False).count(),
        full_syncs=syncs["full"],
        active_syncs=syncs["all"],
        oldest_pending_at=agg["oldest"],
    )


def combined(parts: list[Progress]) -> Progress:
    """Several tenants' progress as one (the demo loads two)."""
    oldest = [p.oldest_pending_at for p in parts if p.oldest_pending_at is not None]
    return Progress(
        pending=sum(p.pending for p in parts),
        done=sum(p.done for p in parts),
        documents=sum(p.documents for p in parts),
        full_syncs=sum(p.full_syncs for p in parts),
        active_syncs=sum(p.active_syncs for p in parts),
        oldest_pending_at=min(oldest) if oldest else None,
    )
