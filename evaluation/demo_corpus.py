"""The demo tenants (acme + globex) loaded through the real connectors, for the correctness suite.

The bundled sample-export server (``connectors.demo.server.DemoSources``) runs in this process; the
demo's connector instances are pointed at it, each full sync runs its task body here
(``connectors.tasks.execute_sync``, as the Celery worker would) and the ingest outbox is applied with
``retrieval.tasks.process_pending_inline`` (the worker's code).  Nothing is written to the index
except through the connectors.

Reuse: embedding ~20 filings and ~250 pages is the cost of a run, so a tenant whose every demo
instance has a finished full sync and holds exactly the documents the exports list is used as it is
(no server, no sync).  A slice (``pages``/``pdfs`` given) loads into its own pair of tenants named
after the slice's digest, so a small run never prunes the full demo tenant and vice versa.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.test.utils import override_settings

from connectors.actions import do_request_sync
from connectors.confluence.mapping import external_id
from connectors.demo.exports import DRIVE_ID, Exports
from connectors.demo.loader import (
    DEMO_LOGINS,
    DemoConnector,
    DemoSourcesEndpoint,
    data_dir,
    demo_connectors,
    do_point_demo_instance,
    ensure_tenants,
    handbook_pages,
)
from connectors.demo.server import DemoSources
from connectors.models import ConnectorInstance, SyncState
from connectors.sharepoint.mapping import driveitem_external_id
from connectors.tasks import execute_sync
from retrieval.models import Document, IngestEvent
from retrieval.tasks import process_ingest_event
from tenants.actions import do_add_member, do_create_tenant, do_create_user
from tenants.context import tenant_context
from tenants.models import Tenant, User


@dataclass
class DemoCorpus:
    tenants: dict[str, Tenant]  # "acme" / "globex" -> the tenant holding that demo company
    users: dict[str, tuple[int, User]]  # demo login -> (tenant id, user)
    # dataset doc key ("handbook:pages/….md", "sec10q:<file>", "eng:<page id>") -> Document pk, per tenant
    documents: dict[int, dict[str, int]] = field(default_factory=dict)
    doc_keys: dict[int, dict[int, str]] = field(default_factory=dict)  # tenant id -> Document pk -> doc key
    synced_now: bool = False
    seconds: float = 0.0
    failed_documents: list[str] = field(default_factory=list)  # exported but not in the index (e.g. unreadable)


def handbook_key(n: int, handbook_ids: list[str]) -> str:
    return f"handbook:{handbook_ids[n]}"


def export_keys(ex: Exports, handbook_ids: list[str]) -> dict[str, str]:
    """Connector external id -> dataset doc key, for every exported document."""

    out: dict[str, str] = {}
    for pid in ex.pages:
        n = int(pid)
        if 20000 <= n < 30000:
            key = handbook_key(n - 20000, handbook_ids)
        elif 30000 <= n < 40000:
            key = "globex:" + handbook_ids[n - 30000]
        elif n >= 40000:
            key = f"eng:{pid}"
        else:
            key = f"section:{pid}"
        out[external_id("page", pid)] = key
    for item_id, path in ex.pdfs.items():
        out[driveitem_external_id(DRIVE_ID, item_id)] = f"sec10q:{path.name}"
    return out


def _ensure_tenants(prefix: str) -> dict[str, Tenant]:
    """The demo's two tenants and four logins (``connectors.demo.loader.ensure_tenants`` for the full demo)."""
    if not prefix:
        return ensure_tenants()
    acme = do_create_tenant(f"{prefix}-acme", f"Acme Corp (evaluation slice {prefix})")
    globex = do_create_tenant(f"{prefix}-globex", f"Globex (evaluation slice {prefix})")
    for login in DEMO_LOGINS:
        domain = "globex" if login.tenant == "globex" else "acme"
        user = do_create_user(login.username, f"{login.username}@{domain}.example", login.password,
                              email_verified=True)  # fmt: skip
        do_add_member(acme if domain == "acme" else globex, user, role="member")
    return {"acme": acme, "globex": globex}


def _instances(tenants: dict[str, Tenant]) -> list[tuple[int, DemoConnector, ConnectorInstance | None]]:
    out: list[tuple[int, DemoConnector, ConnectorInstance | None]] = []
    for spec in demo_connectors("https://127.0.0.1"):
        tid = tenants[spec.tenant].pk
        with tenant_context(tid):
            inst = ConnectorInstance.objects.select_related("source").filter(source__name=spec.name).first()
        out.append((tid, spec, inst))
    return out


def _indexed(tenant_ids: Iterable[int]) -> dict[int, dict[str, int]]:
    out: dict[int, dict[str, int]] = {}
    for tid in tenant_ids:
        with tenant_context(tid):
            out[tid] = dict(Document.objects.filter(deleted=False).values_list("external_id", "id"))
    return out


def _is_complete(instances: list[tuple[int, DemoConnector, ConnectorInstance | None]],
                 expected: dict[int, set[str]]) -> bool:  # fmt: skip
    for tid, _, inst in instances:
        if inst is None:
            return False
        with tenant_context(tid):
            full = SyncState.objects.filter(instance=inst, mode=SyncState.Mode.FULL).first()
            if full is None or full.status != SyncState.Status.DONE:
                return False
            if IngestEvent.objects.filter(status=IngestEvent.Status.PENDING).exists():
                return False
    have = _indexed(expected)
    # A document the pipeline could not read (an unreadable PDF) never arrives: a finished sync with
    # everything else present is complete, otherwise every rerun would sync again.
    return all(len(expected[tid] - set(have[tid])) <= 1 for tid in expected)


def _sync_inline(tid: int, instance: ConnectorInstance, queue: str) -> SyncState:

    with tenant_context(tid):
        state = do_request_sync(instance, SyncState.Mode.FULL)
    for _ in range(50):  # a throttled run reschedules itself; run it again here at once
        outcome = execute_sync(tid, instance.pk, SyncState.Mode.FULL, state.run_id, queue=queue)
        if outcome not in ("throttled", "retrying", "locked"):
            break
    with tenant_context(tid):
        return SyncState.objects.get(pk=state.pk)


def _claim(pk: int) -> bool:
    """A session advisory lock per event: several evaluation processes can drain one outbox without
    two of them applying the same event (``process_pending_inline`` alone assumes one consumer)."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT pg_try_advisory_lock(%s, %s)", [EVAL_INGEST_LOCK, pk])
        return bool(cur.fetchone()[0])


def _release(pk: int) -> None:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT pg_advisory_unlock(%s, %s)", [EVAL_INGEST_LOCK, pk])


EVAL_INGEST_LOCK = 0x0CA1  # advisory lock class of the evaluation's ingest consumers


def ingest_pending(tenant_id: int, *, newest_first: bool = False) -> int:
    """Apply the tenant's pending ingest events with the worker's code; returns how many this process
    applied.  Safe to run in several processes at once (``manage.py evaluate_ingest_helper``-style
    shells started by hand on a loaded machine)."""

    done = 0
    order = ("-priority", "-created_at", "-pk") if newest_first else ("priority", "created_at", "pk")
    while True:
        with tenant_context(tenant_id):
            pks = list(IngestEvent.objects.filter(status=IngestEvent.Status.PENDING).order_by(*order)
                       .values_list("pk", flat=True)[:50])  # fmt: skip
        if not pks:
            return done
        claimed = next((pk for pk in pks if _claim(pk)), None)
        if claimed is None:
            return done  # every pending event is being applied by another process
        try:
            process_ingest_event(tenant_id, claimed)
            done += 1
        finally:
            _release(claimed)


def load_demo_corpus(*, pages: set[str] | None = None, pdfs: set[str] | None = None, progress: bool = True,
                     fresh: bool = False) -> DemoCorpus:  # fmt: skip
    """The demo corpus in its tenants, synced through the connectors unless an identical load exists.

    ``pages`` (handbook ids such as ``pages/travel-and-leave/leave.md``, and ``eng:<id>`` keys) and ``pdfs``
    (file names) cut the exports to a slice; None = everything (the real demo tenants).
    """

    t0 = time.perf_counter()
    handbook_ids = [p["id"] for p in handbook_pages()]
    tls = Path(tempfile.mkdtemp(prefix="cairn-eval-demo-tls-"))
    sources = DemoSources(data_dir(), tls)
    ex = sources.exports
    sliced = pages is not None or pdfs is not None
    if sliced:
        keep_pages = pages or set()
        keep: dict[str, Any] = {}
        for pid, page in ex.pages.items():
            n = int(pid)
            hb = (
                handbook_ids[n - 20000] if 20000 <= n < 30000 else handbook_ids[n - 30000] if 30000 <= n < 40000 else ""
            )
            if hb in keep_pages or f"eng:{pid}" in keep_pages:
                keep[pid] = page
        for page in list(keep.values()):  # a restricted page keeps the section page that restricts it
            if page.parent:
                keep[page.parent] = ex.pages[page.parent]
        ex.pages = keep
        ex.space_pages = {key: [p for p in ids if p in keep] for key, ids in ex.space_pages.items()}
        ex.pdfs = {k: v for k, v in ex.pdfs.items() if v.name in (pdfs or set())}
    digest = hashlib.sha256(("|".join(sorted(ex.pages)) + "|" + "|".join(sorted(ex.pdfs))).encode()).hexdigest()[:8]
    prefix = f"eval-{digest}" if sliced else ""
    if fresh:
        prefix = f"eval-{digest}-{int(time.time())}"
    tenants = _ensure_tenants(prefix)
    keys = export_keys(ex, handbook_ids)
    space_of = {pid: p.space for pid, p in ex.pages.items()}

    expected = {tenants["acme"].pk: {e for e, k in keys.items() if not k.startswith("globex:")},
                tenants["globex"].pk: {external_id("page", pid) for pid, s in space_of.items() if s == "GLOBEX"}}  # fmt: skip
    instances = _instances(tenants)
    synced = False
    if not _is_complete(instances, expected):
        synced = True
        endpoint = DemoSourcesEndpoint(sources.base_url, str(sources.cert_path))
        queue = f"eval-demo-{digest}"  # no worker listens here: every run happens in this process
        sources.start()
        try:
            live = {spec.name: spec for spec in demo_connectors(sources.base_url)}
            with override_settings(CAIRN={**settings.CAIRN, "CONNECTOR_QUEUE": queue}):
                for tid, placeholder, _ in instances:
                    spec = live[placeholder.name]
                    if spec.tenant == "globex" and not any(s == "GLOBEX" for s in space_of.values()):
                        continue
                    with tenant_context(tid):
                        inst = do_point_demo_instance(spec, endpoint)
                    state = _sync_inline(tid, inst, queue)
                    if state.status != SyncState.Status.DONE:
                        raise RuntimeError(f"demo sync of {spec.name!r} ended {state.status}: {state.last_error}")
                    with tenant_context(tid):
                        pending = IngestEvent.objects.filter(status=IngestEvent.Status.PENDING).count()
                    t_ingest = time.perf_counter()
                    applied = ingest_pending(tid)
                    # Events another process is still applying: wait for them (nothing is left unindexed).
                    while True:
                        with tenant_context(tid):
                            left = IngestEvent.objects.filter(status=IngestEvent.Status.PENDING).count()
                        if not left:
                            break
                        time.sleep(2)
                        applied += ingest_pending(tid)
                    if progress:
                        print(f"ingest {spec.name}: {pending} events ({applied} in this process) in "
                              f"{time.perf_counter() - t_ingest:.0f} s", flush=True)  # fmt: skip
        finally:
            sources.stop()
    indexed = _indexed(expected)
    corpus = DemoCorpus(tenants=tenants, users={}, synced_now=synced, seconds=time.perf_counter() - t0)
    for tid, docs in indexed.items():
        corpus.documents[tid] = {keys[e]: pk for e, pk in docs.items() if e in keys}
        corpus.doc_keys[tid] = {pk: k for k, pk in corpus.documents[tid].items()}
        corpus.failed_documents += sorted(keys[e] for e in expected[tid] - set(docs))
    for login in DEMO_LOGINS:
        tenant = tenants["globex" if login.tenant == "globex" else "acme"]
        corpus.users[login.username] = (tenant.pk, User.objects.get(username=login.username))
    return corpus
