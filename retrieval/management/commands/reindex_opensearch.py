"""Rebuild tenants' OpenSearch indexes from Postgres with no downtime.

    manage.py reindex_opensearch [--tenant 7 ...] [--keep-old]

Per tenant: create ``<alias>-v<n+1>`` with the current mapping, point the
``<alias>-next`` alias at it (from then on the outbox drainer writes every change
to both indexes), bulk-copy every live chunk from Postgres with a progress bar,
swap the search alias atomically (one ``_aliases`` call), drain the outbox, run
the consistency check with repair on the new index, and drop the old index.
Searches keep hitting the old index until the swap and the new one after it.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from retrieval import outbox
from retrieval.backends import opensearch as osb
from retrieval.models import Chunk
from tenants.context import tenant_context
from tenants.models import Tenant


def progress(out: Any, done: int, total: int, started: float, label: str) -> None:
    width = 30
    frac = done / total if total else 1.0
    rate = done / max(time.monotonic() - started, 1e-6)
    bar = "#" * int(frac * width) + "." * (width - int(frac * width))
    # ending="": Django's OutputWrapper would otherwise end every redraw with a newline.
    out.write(f"\r{label} [{bar}] {frac * 100:5.1f}% {done}/{total} chunks {rate:,.0f}/s", ending="")
    out.flush()


class Command(BaseCommand):
    help = "Rebuild OpenSearch indexes from Postgres behind an alias (zero downtime)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", type=int, action="append", default=[], help="tenant id (repeatable)")
        parser.add_argument("--batch", type=int, default=500)
        parser.add_argument("--keep-old", action="store_true", help="keep the previous index (for rollback)")

    def handle(self, *args: Any, **opts: Any) -> None:
        if not outbox.enabled():
            raise CommandError("the configured index backend does not use OpenSearch (CAIRN_INDEX_BACKEND)")
        tenants = opts["tenant"] or list(Tenant.objects.order_by("id").values_list("id", flat=True))
        try:
            for tid in tenants:
                self.reindex(tid, opts["batch"], opts["keep_old"])
        except osb.IndexUnavailable as exc:
            raise CommandError(f"OpenSearch is unavailable: {exc}") from exc

    def reindex(self, tid: int, batch: int, keep_old: bool) -> None:
        c = osb.client()
        alias, nxt = osb.alias_name(tid), osb.next_alias_name(tid)
        old = list(c.indices.get_alias(name=alias)) if c.indices.exists_alias(name=alias) else []
        new = osb.create_versioned_index(tid)
        c.indices.update_aliases(body={"actions": [{"add": {"index": new, "alias": nxt}}]})
        try:
            with tenant_context(tid):
                total = Chunk.objects.filter(document__deleted=False).count()
            started, done = time.monotonic(), 0
            out = self.stdout
            knn = osb.has_knn()
            actions: list[dict[str, Any]]
            for sources in outbox.iter_chunk_sources(tid, batch, with_vectors=knn):
                actions = [{"_op_type": "index", "_index": new, "_id": str(s["chunk_id"]), "_source": s}
                           for s in sources]  # fmt: skip
                if outbox._bulk(actions):
                    raise CommandError(f"bulk copy into {new} rejected documents")
                done += len(sources)
                progress(out, done, total, started, f"tenant {tid} -> {new}")
            progress(out, done, total, started, f"tenant {tid} -> {new}")
            self.stdout.write("")
            c.indices.refresh(index=new)
            actions = [{"remove": {"index": o, "alias": alias}} for o in old]
            actions += [{"add": {"index": new, "alias": alias}}, {"remove": {"index": new, "alias": nxt}}]
            c.indices.update_aliases(body={"actions": actions})
        except BaseException:
            # Leave the live alias alone; drop the half-built index.
            c.indices.delete(index=new, ignore_unavailable=True)
            raise
        outbox.drain_all(tid)
        diff = outbox.compare_index(tid)
        if not diff.clean:
            outbox.repair_index(diff)
            diff = outbox.compare_index(tid)
        if not keep_old:
            for o in old:
                c.indices.delete(index=o, ignore_unavailable=True)
        self.stdout.write(f"tenant {tid}: {alias} -> {new} ({diff.postgres} chunks, "
                          f"{'consistent' if diff.clean else 'STILL DIFFERS'}; old: {', '.join(old) or 'none'}"
                          f"{' kept' if keep_old and old else ''})")  # fmt: skip
