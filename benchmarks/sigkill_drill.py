"""Worker crash drill: SIGKILL the Celery worker again and again while it ingests a seeded event stream,
then check that the end state equals an uninterrupted run of the same stream.

    CAIRN_DATA_DIR=/tmp/cairn-drill .venv/bin/python -m benchmarks.sigkill_drill --events 1000 --kills 20 --seed 7

One command does everything: it starts the embedded stack (``cairn.stack.Stack``, a fresh ``cairn_drill``
database migrated as the owner role, Redis flushed); with ``DATABASE_URL`` / ``REDIS_URL`` already set it
uses those services as they are.  Then:

* ``make_stream(n, seed)`` builds a deterministic stream for one tenant: creates, content updates of the
  same document (increasing versions), ACL-only re-sends, ACL events (the permissions fast path),
  out-of-order re-sends of an older version, deletes and re-creates, duplicated event ids, and group
  membership changes (those are direct writes, not events, so they are applied at their place in the
  stream in both runs).  Documents are 1-2 chunks so embedding stays cheap.
* Run A (reference) applies the stream in tenant A uninterrupted: every event goes through the real
  actions and is applied right away in this process (``retrieval.tasks.process_pending_inline``), in
  stream order.
* Run B enqueues the same stream in tenant B through the same actions (their Celery messages go to a
  queue of their own, ``CAIRN['INGEST_QUEUE']`` / ``CAIRN['PERMISSIONS_QUEUE']``) and a real worker
  subprocess (``celery -A cairn worker -c 1``, acks_late, prefetch 1) consumes it.  At seeded moments
  (a seeded share of the stream applied, then a seeded delay once an event is in flight; for the first
  kill, instead, once a task waits on the tenant's index lock, which the drill holds) the drill sends
  SIGKILL, alternating by seed between the whole worker (main process and pool child: the message stays
  unacknowledged in Redis until the visibility timeout, so only the beat sweeper brings the event back)
  and the pool child alone (the main process rejects the message and Redis redelivers it at once).  A
  killed worker is started again.  When the queues are empty, nothing moved for a while and events are
  still pending, the drill does what beat does (``retrieval.tasks.sweep_pending_events``, limited to
  tenant B so it cannot touch other tenants' events).
* Both tenants are reduced to a tenant-independent canonical form (documents, chunks with offsets and
  embeddings, postings, term statistics, ACL sets, groups, ingest events) and compared; each tenant's
  derived tables are also checked against each other (document frequencies equal posting counts, corpus
  counters equal the chunk rows, denormalised ACL ids equal the document's, no duplicate chunks).

Writes ``benchmarks/out/sigkill_drill.json`` (or ``--out``): events, kills, redeliveries, sweeps, drain
seconds, differences (must be 0), the command, git commit and machine.  Exit status 1 when any difference
or invariant violation was found.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks._stack import git_commit

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out"
DB_NAME = "cairn_drill"

USERS = [f"user:u{i}@drill.example" for i in range(8)]
GROUPS = [f"confluence:group:g{i}" for i in range(4)]
PRINCIPALS = [*USERS, *GROUPS, "public:tenant"]
WORDS = (
    "invoice ledger rotation pager escalation runbook vendor budget quarter audit policy retention backup "
    "restore latency cluster replica failover tenant contract renewal onboarding laptop badge visitor "
    "expense travel approval payroll benefits holiday roadmap release feature incident postmortem "
    "capacity storage network firewall certificate rotation secret vault compliance privacy training"
).split()
EMBEDDING_TOLERANCE = 1e-4


def log(msg: str) -> None:
    print(f"[drill] {msg}", flush=True)


# ------------------------------------------------------------------ the stream


@dataclass(frozen=True)
class StreamOp:
    """One step of the stream: an ingest event (upsert / delete / acl) or a group change."""

    seq: int
    label: str  # create, update, acl_only, acl_event, out_of_order, delete, recreate, duplicate, group
    kind: str  # upsert | delete | acl | group
    external_id: str = ""
    event_id: str = ""
    version: int | None = None
    title: str = ""
    content: str = ""
    media_type: str = "text/plain"
    acl: tuple[tuple[str, ...], ...] = ()
    members: tuple[str, ...] = ()


@dataclass
class _DocState:
    version: int = 0
    deleted: bool = False
    # Every upsert sent so far for this document, so an older one can be re-sent out of order.
    sent: list[StreamOp] = field(default_factory=list)
    acl: tuple[tuple[str, ...], ...] = ()
    title: str = ""
    content: str = ""
    media_type: str = "text/plain"


def _random_acl(rng: random.Random) -> tuple[tuple[str, ...], ...]:
    if rng.random() < 0.1:
        return (("public:tenant",),)
    clauses = [tuple(sorted(set(rng.sample(PRINCIPALS, rng.randint(1, 3))))) for _ in range(rng.randint(1, 2))]
    return tuple(sorted(set(clauses)))


def _random_text(rng: random.Random, title: str) -> tuple[str, str]:
    """1-2 chunks: mostly a short paragraph or two, sometimes long enough for a second chunk."""
    n_words = rng.randint(230, 300) if rng.random() < 0.2 else rng.randint(25, 120)
    words = [rng.choice(WORDS) for _ in range(n_words)]
    sentences, i = [], 0
    while i < len(words):
        k = rng.randint(6, 14)
        sentences.append(" ".join(words[i : i + k]).capitalize() + ".")
        i += k
    half = len(sentences) // 2
    body = " ".join(sentences[:half]) + "\n\n" + " ".join(sentences[half:])
    if rng.random() < 0.3:
        return f"# {title}\n\n{body}\n", "text/markdown"
    return body, "text/plain"


def make_stream(n_events: int, seed: int) -> list[StreamOp]:
    """A deterministic stream of ``n_events`` steps (the same seed always gives the same stream)."""
    rng = random.Random(seed)
    docs: dict[str, _DocState] = {}
    events: list[StreamOp] = []  # every event sent, for duplicates
    ops: list[StreamOp] = []
    n_created = 0

    def new_id(kind: str) -> str:
        return f"drill-{seed}-{kind}-{len(ops)}"

    def upsert(label: str, ext: str, st: _DocState, *, new_text: bool, new_acl: bool) -> StreamOp:
        st.version += 1
        if new_text or not st.content:
            st.title = f"{rng.choice(WORDS).capitalize()} {rng.choice(WORDS)} {ext.rsplit('-', 1)[1]}"
            st.content, st.media_type = _random_text(rng, st.title)
        if new_acl or not st.acl:
            st.acl = _random_acl(rng)
        st.deleted = False
        op = StreamOp(len(ops), label, "upsert", ext, new_id("upsert"), st.version, st.title, st.content,
                      st.media_type, st.acl)  # fmt: skip
        st.sent.append(op)
        return op

    while len(ops) < n_events:
        live = [e for e, s in docs.items() if not s.deleted]
        gone = [e for e, s in docs.items() if s.deleted]
        roll = rng.random()
        op: StreamOp | None = None
        if roll < 0.22 or not live:
            ext = f"doc-{n_created}"
            n_created += 1
            docs[ext] = _DocState()
            op = upsert("create", ext, docs[ext], new_text=True, new_acl=True)
        elif roll < 0.44:
            ext = rng.choice(live)
            op = upsert("update", ext, docs[ext], new_text=True, new_acl=rng.random() < 0.3)
        elif roll < 0.54:
            ext = rng.choice(live)
            op = upsert("acl_only", ext, docs[ext], new_text=False, new_acl=True)
        elif roll < 0.66:
            ext = rng.choice(live)
            st = docs[ext]
            st.acl = _random_acl(rng)
            # Half carry the version the ACL was read at, half none (sources without one).
            version = st.version if rng.random() < 0.5 else None
            op = StreamOp(len(ops), "acl_event", "acl", ext, new_id("acl"), version, acl=st.acl)
        elif roll < 0.74:
            older = [e for e in live + gone if len(docs[e].sent) >= 2]
            if older:
                ext = rng.choice(older)
                old = rng.choice(docs[ext].sent[:-1])
                # The same older version again, under a new event id (a late redelivery at the source).
                op = StreamOp(len(ops), "out_of_order", "upsert", ext, new_id("late"), old.version, old.title,
                              old.content, old.media_type, old.acl)  # fmt: skip
        elif roll < 0.80:
            ext = rng.choice(live)
            st = docs[ext]
            st.version += 1
            st.deleted = True
            op = StreamOp(len(ops), "delete", "delete", ext, new_id("delete"), st.version)
        elif roll < 0.86:
            if gone:
                ext = rng.choice(gone)
                op = upsert("recreate", ext, docs[ext], new_text=True, new_acl=True)
        elif roll < 0.94:
            if events:
                original = rng.choice(events)
                op = StreamOp(**{**original.__dict__, "seq": len(ops), "label": "duplicate"})
        else:
            group = rng.choice(GROUPS)
            members = tuple(sorted(rng.sample(USERS, rng.randint(0, 4))))
            op = StreamOp(len(ops), "group", "group", group, members=members)
        if op is None:
            continue
        ops.append(op)
        if op.kind != "group" and op.label != "duplicate":
            events.append(op)
    return ops


# ------------------------------------------------------------------ applying the stream to a tenant


def _timestamp(op: StreamOp) -> datetime:
    # Deterministic per version, so both tenants store the same source dates.
    return datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=op.version or 0)


def send(tenant_id: int, source_pk: int, op: StreamOp) -> bool:
    """Put one step through the real actions; False when it was a duplicate event id (not stored)."""
    from retrieval.actions import do_enqueue_acl_update, do_enqueue_delete, do_enqueue_document, do_set_group_members
    from retrieval.contracts import SourceDocument
    from retrieval.models import Source
    from tenants.context import tenant_context

    with tenant_context(tenant_id):
        source = Source.objects.get(pk=source_pk)
        if op.kind == "group":
            do_set_group_members(op.external_id, list(op.members), display_name=op.external_id,
                                 source_kind="confluence")  # fmt: skip
            return True
        if op.kind == "upsert":
            doc = SourceDocument(
                external_id=op.external_id, title=op.title, url=f"https://wiki.drill.example/{op.external_id}",
                content=op.content.encode(), media_type=op.media_type, acl=op.acl, source_version=int(op.version or 0),
                container="DRILL", author="drill", created_at=datetime(2026, 1, 1, tzinfo=UTC),
                updated_at=_timestamp(op),
            )  # fmt: skip
            return do_enqueue_document(source, doc, event_id=op.event_id) is not None
        if op.kind == "delete":
            return (
                do_enqueue_delete(source, op.external_id, source_version=op.version, event_id=op.event_id) is not None
            )
        return (
            do_enqueue_acl_update(source, op.external_id, op.acl, source_version=op.version, event_id=op.event_id)
            is not None
        )


def _original_of(ops: list[StreamOp]) -> dict[str, StreamOp]:
    return {op.event_id: op for op in ops if op.kind != "group" and op.label != "duplicate"}


def resolved(ops: list[StreamOp]) -> list[StreamOp]:
    """Duplicates carry exactly the original's fields (so the actions see the very same event again)."""
    originals = _original_of(ops)
    return [
        StreamOp(**{**originals[op.event_id].__dict__, "seq": op.seq, "label": "duplicate"})
        if op.label == "duplicate"
        else op
        for op in ops
    ]


def make_tenant(tag: str) -> tuple[int, int]:
    from retrieval.actions import do_create_source
    from tenants.actions import do_create_tenant
    from tenants.context import tenant_context

    tenant = do_create_tenant(f"drill-{tag}-{uuid.uuid4().hex[:8]}", f"Crash drill {tag}")
    with tenant_context(tenant.pk):
        source = do_create_source("confluence", "Drill wiki")
    return tenant.pk, source.pk


# ------------------------------------------------------------------ the worker


def queue_names(tag: str) -> tuple[str, str]:
    return f"drill-{tag}-ingest", f"drill-{tag}-permissions"


class Worker:
    """A real Celery worker subprocess on the drill's own queues; killable and restartable."""

    def __init__(self, queues: tuple[str, ...], log_path: Path | None, env: dict[str, str] | None = None) -> None:
        self.queues = queues
        self.log_path = log_path
        self.env = env or dict(os.environ)
        self.proc: subprocess.Popen[bytes] | None = None
        self.name = ""
        self.starts = 0

    def start(self, timeout: float = 120) -> float:
        from cairn.celery import app

        began = time.monotonic()
        self.name = f"drill-{uuid.uuid4().hex[:6]}"
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115 - the child's log
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "cairn", "worker", "-Q", ",".join(self.queues), "-c", "1",
             "--loglevel", "WARNING", "-n", f"{self.name}@%h"],
            cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        self.starts += 1
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(self.name in n for reply in app.control.ping(timeout=0.5) for n in reply):
                return time.monotonic() - began
            if self.proc.poll() is not None:
                raise RuntimeError(f"the worker exited during start-up ({self.proc.returncode})")
        raise RuntimeError("the worker did not answer a ping")

    def pool_child(self) -> int | None:
        if self.proc is None:
            return None
        try:
            kids = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()
        except OSError:
            return None
        return int(kids[0]) if kids else None

    def kill_all(self) -> None:
        """SIGKILL the main process and its pool child at once (a lost node)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)

    def kill_child(self) -> bool:
        """SIGKILL only the pool process running the task; the main process forks a new one."""
        child = self.pool_child()
        if child is None:
            return False
        os.kill(child, signal.SIGKILL)
        return True

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)


def queue_length(name: str) -> int:
    from cairn.celery import app

    with app.connection_for_write() as conn:
        # kombu's Redis transport keeps one list per priority step; _size sums them.
        return int(conn.default_channel._size(name))


def purge_queue(name: str) -> int:
    from cairn.celery import app

    with app.connection_for_write() as conn:
        return int(conn.default_channel.queue_purge(name) or 0)


# ------------------------------------------------------------------ event bookkeeping


def event_counts(tenant_id: int) -> dict[str, int]:
    from django.db.models import Count

    from retrieval.models import IngestEvent
    from tenants.context import tenant_context

    with tenant_context(tenant_id):
        rows = IngestEvent.objects.values("status").annotate(n=Count("id"))
        return {r["status"]: r["n"] for r in rows}


def in_flight(tenant_id: int) -> set[int]:
    """Events a worker has started (attempts counted) but not finished."""
    from retrieval.models import IngestEvent
    from tenants.context import tenant_context

    with tenant_context(tenant_id):
        return set(
            IngestEvent.objects.filter(status=IngestEvent.Status.PENDING, attempts__gt=0).values_list("pk", flat=True)
        )


@contextmanager
def index_lock_held(tenant_id: int) -> Iterator[int]:
    """Hold the tenant's ``IndexState`` row lock in a connection of our own; yields that connection's pid.

    Every write of an ingest takes this lock first (``retrieval.pipeline``), after the task has counted its
    attempt.  A task that reaches it waits, so a kill while it waits is certain to land mid-task, where a kill
    after a seeded delay may come just after the task finished (the task takes ~40 ms).
    """
    from django.db import connections

    conn = connections.create_connection("default")
    try:
        conn.set_autocommit(False)
        with conn.cursor() as cur:
            cur.execute("SELECT set_config('app.tenant_id', %s, true)", [str(tenant_id)])
            cur.execute("SELECT 1 FROM retrieval_indexstate WHERE tenant_id = %s FOR UPDATE", [tenant_id])
            if cur.fetchone() is None:
                raise RuntimeError(f"tenant {tenant_id} has no index state to lock")
            cur.execute("SELECT pg_backend_pid()")
            yield int(cur.fetchone()[0])
    finally:
        conn.rollback()
        conn.close()


def wait_for_a_blocked_task(lock_pid: int, timeout: float = 60.0) -> None:
    """Wait until another backend (the worker's) waits on the lock ``lock_pid`` holds."""
    from django.db import connection

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with connection.cursor() as cur:  # autocommit: every query sees a fresh pg_stat_activity
            cur.execute("SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))", [lock_pid])
            if cur.fetchone()[0]:
                return
        time.sleep(0.005)
    raise RuntimeError("no task waited on the index lock")


# ------------------------------------------------------------------ canonical form


def canonical_state(tenant_id: int) -> dict[str, Any]:
    """Everything ingestion wrote for the tenant, keyed by source-side names instead of row ids."""
    import numpy as np
    from django.db import connection

    from retrieval.models import AclSet, Chunk, Document, IndexState, IngestEvent
    from tenants.context import tenant_context
    from tenants.models import Group, GroupMember

    with tenant_context(tenant_id):
        acls = {a.pk: tuple(tuple(c) for c in a.clauses) for a in AclSet.objects.all()}
        docs: dict[str, Any] = {}
        ext_of: dict[int, str] = {}
        for d in Document.objects.all().order_by("external_id"):
            ext_of[d.pk] = d.external_id
            docs[d.external_id] = {
                "source_version": d.source_version, "deleted": d.deleted, "title": d.title, "url": d.url,
                "canonical_url": d.canonical_url, "container": d.container, "author": d.author,
                "created_at_source": d.created_at_source.isoformat() if d.created_at_source else None,
                "updated_at_source": d.updated_at_source.isoformat() if d.updated_at_source else None,
                "version_label": d.version_label, "authority_tier": d.authority_tier, "media_type": d.media_type,
                "metadata": d.metadata, "content_fingerprint": d.content_fingerprint, "simhash": d.simhash,
                "snapshot_sha256": d.snapshot_sha256, "text_sha256": hashlib.sha256(d.text.encode()).hexdigest(),
                "acl": acls.get(d.acl_set_id) if d.acl_set_id else None,
            }  # fmt: skip
        chunks: dict[str, Any] = {}
        embeddings: dict[str, Any] = {}
        chunk_key: dict[int, str] = {}
        chunk_acl: dict[int, int] = {}
        for c in Chunk.objects.all():
            key = f"{ext_of[c.document_id]}#{c.ord}"
            chunk_key[c.pk] = key
            chunk_acl[c.pk] = c.acl_set_id_denorm
            chunks[key] = chunks.get(key, []) + [{
                "text": c.text, "heading": c.heading, "char_start": c.char_start, "char_end": c.char_end,
                "length": c.length, "acl": acls.get(c.acl_set_id_denorm), "source_system": c.source_system,
                "container": c.container, "authority_tier": c.authority_tier, "version_label": c.version_label,
                "updated_at_source": c.updated_at_source.isoformat() if c.updated_at_source else None,
                "document_acl_matches": c.acl_set_id_denorm == Document.objects.get(pk=c.document_id).acl_set_id,
            }]  # fmt: skip
            embeddings.setdefault(key, []).append(np.asarray(c.embedding, dtype=np.float32))
        with connection.cursor() as cur:
            cur.execute("SELECT chunk_id, lexeme, tf, dl, acl_set_id FROM retrieval_posting")
            postings = sorted(
                (chunk_key.get(cid, f"orphan:{cid}"), lex, tf, dl, str(acls.get(acl)), acl == chunk_acl.get(cid))
                for cid, lex, tf, dl, acl in cur.fetchall()
            )
            cur.execute("SELECT lexeme, df FROM retrieval_termstat WHERE df <> 0")
            termstats = dict(sorted(cur.fetchall()))
        state = IndexState.objects.first()
        groups = {
            g.principal: sorted(GroupMember.objects.filter(group=g).values_list("member_principal", flat=True))
            for g in Group.objects.all()
        }
        events = {
            e["event_id"]: {
                "status": e["status"],
                "outcome": e["outcome"],
                "kind": e["kind"],
                "attempts": e["attempts"],
            }
            for e in IngestEvent.objects.values("event_id", "status", "outcome", "kind", "attempts")
        }
    return {
        "documents": docs, "chunks": chunks, "embeddings": embeddings, "postings": postings,
        "termstats": termstats, "groups": groups, "events": events,
        "corpus": {"n_chunks": state.n_chunks if state else 0, "total_length": state.total_length if state else 0},
    }  # fmt: skip


def invariants(state: dict[str, Any]) -> list[str]:
    """Internal consistency of one tenant's derived tables (independent of the other run)."""
    problems: list[str] = []
    for key, rows in state["chunks"].items():
        if len(rows) != 1:
            problems.append(f"duplicate chunk {key} x{len(rows)}")
        for row in rows:
            if not row["document_acl_matches"]:
                problems.append(f"chunk {key} carries another ACL than its document")
    for ext, doc in state["documents"].items():
        has_chunks = any(k.rsplit("#", 1)[0] == ext for k in state["chunks"])
        if doc["deleted"] and has_chunks:
            problems.append(f"deleted document {ext} still has chunks")
    n_chunks = sum(len(v) for v in state["chunks"].values())
    total = sum(r["length"] for v in state["chunks"].values() for r in v)
    if state["corpus"] != {"n_chunks": n_chunks, "total_length": total}:
        problems.append(f"corpus counters {state['corpus']} != chunk rows ({n_chunks}, {total})")
    df = Counter(p[1] for p in state["postings"])
    if dict(df) != state["termstats"]:
        bad = sorted(set(df.items()) ^ set(state["termstats"].items()))[:5]
        problems.append(f"term statistics differ from postings, e.g. {bad}")
    for p in state["postings"]:
        if p[0].startswith("orphan:") or not p[5]:
            problems.append(f"posting {p[:3]} is orphaned or has a stale ACL")
            break
    stuck = [eid for eid, e in state["events"].items() if e["status"] != "done"]
    if stuck:
        problems.append(f"{len(stuck)} events not done, e.g. {stuck[:3]}")
    return problems


def differences(a: dict[str, Any], b: dict[str, Any], limit: int = 20) -> tuple[int, list[str]]:
    """Count what differs between two canonical states; a few examples for the report."""
    import numpy as np

    out: list[str] = []
    count = 0

    def note(msg: str) -> None:
        nonlocal count
        count += 1
        if len(out) < limit:
            out.append(msg)

    def fields(value: Any) -> dict[str, Any]:
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
        return value if isinstance(value, dict) else {"value": value}

    for part in ("documents", "chunks", "groups", "termstats", "corpus"):
        left, right = a[part], b[part]
        for key in sorted(set(left) | set(right)):
            if left.get(key) != right.get(key):
                fa, fb = fields(left.get(key)), fields(right.get(key))
                changed = {k: (fa.get(k), fb.get(k)) for k in sorted(set(fa) | set(fb)) if fa.get(k) != fb.get(k)}
                note(f"{part}[{key}] A vs B: {str(changed)[:300]}")
    if a["postings"] != b["postings"]:
        only_a, only_b = set(a["postings"]) - set(b["postings"]), set(b["postings"]) - set(a["postings"])
        for p in sorted(only_a)[:3]:
            note(f"posting only in A: {p}")
        for p in sorted(only_b)[:3]:
            note(f"posting only in B: {p}")
        if not only_a and not only_b:
            note("postings: same rows, different multiplicity")
    for key in sorted(set(a["embeddings"]) & set(b["embeddings"])):
        ea, eb = a["embeddings"][key], b["embeddings"][key]
        if len(ea) != len(eb) or any(
            float(np.max(np.abs(x - y))) > EMBEDDING_TOLERANCE for x, y in zip(ea, eb, strict=True)
        ):
            note(f"embedding of {key} differs")
    for eid in sorted(set(a["events"]) | set(b["events"])):
        ea, eb = a["events"].get(eid), b["events"].get(eid)
        if ea is None or eb is None or ea["status"] != eb["status"] or ea["kind"] != eb["kind"]:
            note(f"event {eid}: A={ea} B={eb}")
    return count, out


def outcome_mismatches(a: dict[str, Any], b: dict[str, Any]) -> dict[str, int]:
    """How often an event's recorded outcome differs (it may, when B applied events in another order)."""
    pairs: Counter[str] = Counter()
    for eid, ea in a["events"].items():
        eb = b["events"].get(eid)
        if eb is not None and ea["outcome"] != eb["outcome"]:
            pairs[f"{ea['outcome']}->{eb['outcome']}"] += 1
    return dict(pairs)


# ------------------------------------------------------------------ the drill


@dataclass
class DrillConfig:
    events: int = 200
    kills: int = 4
    seed: int = 7
    # Run B's drain must finish within this many seconds after the last kill.
    drain_timeout: float = 600.0
    # Seconds without progress (queues empty, events pending) before the drill plays beat's sweeper.
    idle_before_sweep: float = 3.0
    # The first this many kills land while a task waits on the tenant's index lock, which the drill holds:
    # such a kill always interrupts a task (see ``index_lock_held``).  The others land at seeded moments.
    pinned_kills: int = 1
    log_dir: Path | None = None


def run_reference(tenant_id: int, source_pk: int, ops: list[StreamOp], sink_queues: tuple[str, str]) -> float:
    """Run A: every step applied right away in this process, in stream order."""
    from django.conf import settings

    from retrieval.tasks import process_pending_inline

    began = time.monotonic()
    before = dict(settings.CAIRN)
    # Run A's Celery messages go to queues nobody consumes (purged below): the events are applied here.
    settings.CAIRN = {**before, "INGEST_QUEUE": sink_queues[0], "PERMISSIONS_QUEUE": sink_queues[1]}
    try:
        for op in ops:
            send(tenant_id, source_pk, op)
            process_pending_inline(tenant_id)
    finally:
        settings.CAIRN = before
        for q in sink_queues:
            purge_queue(q)
    return time.monotonic() - began


def run_with_kills(tenant_id: int, source_pk: int, ops: list[StreamOp], cfg: DrillConfig,
                   queues: tuple[str, str]) -> dict[str, Any]:  # fmt: skip
    """Run B: enqueue the stream for a real worker, kill it ``cfg.kills`` times, restart it, drain."""
    from django.conf import settings

    from retrieval.tasks import sweep_pending_events

    rng = random.Random(cfg.seed * 7919 + 1)
    before = dict(settings.CAIRN)
    settings.CAIRN = {**before, "INGEST_QUEUE": queues[0], "PERMISSIONS_QUEUE": queues[1]}
    # The worker needs no setting: it consumes these queues, and a retry goes back to the queue it came from.
    worker = Worker(queues, cfg.log_dir / "sigkill_drill.worker.log" if cfg.log_dir else None)
    kills: list[dict[str, Any]] = []
    left_behind: set[int] = set()
    sweeps: list[int] = []
    try:
        began = time.monotonic()
        stored = sum(send(tenant_id, source_pk, op) for op in ops)
        enqueue_s = time.monotonic() - began
        n_events = sum(event_counts(tenant_id).values())
        # Kill points: distinct shares of the stream, spread over the run (seeded).
        points = sorted(rng.sample(range(max(1, n_events // 20), max(2, n_events * 9 // 10)), cfg.kills))
        start_s = [worker.start()]
        run_began = time.monotonic()
        for i, point in enumerate(points):
            deadline = time.monotonic() + cfg.drain_timeout
            while event_counts(tenant_id).get("done", 0) < point:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no progress towards kill point {point}")
                time.sleep(0.02)
            delay = rng.uniform(0.0, 0.08)  # drawn for a pinned kill too: the later kills keep their seeded moments
            mode = "worker" if rng.random() < 0.5 else "pool_child"
            pinned = i < cfg.pinned_kills
            with ExitStack() as held:
                if pinned:
                    wait_for_a_blocked_task(held.enter_context(index_lock_held(tenant_id)))
                else:
                    # Wait (briefly) for a task to be in flight, then a seeded delay into it.
                    wait_until = time.monotonic() + 2.0
                    while not in_flight(tenant_id) - left_behind and time.monotonic() < wait_until:
                        time.sleep(0.005)
                    time.sleep(delay)
                # Events a worker started and has not finished, less those an earlier kill left behind.
                flying = in_flight(tenant_id) - left_behind
                left_behind |= flying
                done_at_kill = event_counts(tenant_id).get("done", 0)
                if mode == "pool_child" and not worker.kill_child():
                    mode = "worker"
                if mode == "worker":
                    worker.kill_all()
            # The lock is released only now: the killed task's transaction never commits.
            kills.append({"n": i + 1, "mode": mode, "pinned": pinned, "done_before": done_at_kill,
                          "in_flight": len(flying)})  # fmt: skip
            if mode == "worker":
                start_s.append(worker.start())
        last_kill = time.monotonic()
        quiet_since = time.monotonic()
        last_done = -1
        deadline = time.monotonic() + cfg.drain_timeout
        while True:
            counts = event_counts(tenant_id)
            if counts.get("pending", 0) == 0:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"events still pending after {cfg.drain_timeout} s: {counts}")
            if counts.get("done", 0) != last_done:
                last_done, quiet_since = counts.get("done", 0), time.monotonic()
            elif (time.monotonic() - quiet_since > cfg.idle_before_sweep
                  and all(queue_length(q) == 0 for q in queues)):  # fmt: skip
                # What beat does every minute: re-queue events left pending (lost messages).
                sweeps.append(sweep_pending_events(older_than_seconds=0, tenant_ids=[tenant_id]))
                quiet_since = time.monotonic()
            time.sleep(0.1)
        finished = time.monotonic()
    finally:
        worker.stop()
        settings.CAIRN = before
    return {
        "events_stored": stored, "enqueue_s": round(enqueue_s, 2), "kills": kills,
        "worker_starts": worker.starts, "worker_start_s": [round(s, 2) for s in start_s],
        "sweeps": len(sweeps), "swept_events": sum(sweeps),
        "drain_s": round(finished - last_kill, 2), "run_s": round(finished - run_began, 2),
    }  # fmt: skip


def run_drill(cfg: DrillConfig) -> dict[str, Any]:
    """The whole drill on the configured database; returns the report (``differences`` must be 0)."""
    ops = resolved(make_stream(cfg.events, cfg.seed))
    tag = uuid.uuid4().hex[:8]
    tenant_a, source_a = make_tenant(f"a-{tag}")
    tenant_b, source_b = make_tenant(f"b-{tag}")
    log(f"stream: {len(ops)} steps {dict(Counter(op.label for op in ops))}")
    ref_s = run_reference(tenant_a, source_a, ops, queue_names(f"sink-{tag}"))
    log(f"run A (uninterrupted, in-process) took {ref_s:.1f} s")
    run_b = run_with_kills(tenant_b, source_b, ops, cfg, queue_names(tag))
    log(f"run B: {len(run_b['kills'])} kills, drained {run_b['drain_s']} s after the last one")
    state_a, state_b = canonical_state(tenant_a), canonical_state(tenant_b)
    n_diff, examples = differences(state_a, state_b)
    events_b = state_b["events"]
    return {
        "events": len(ops),
        "stream": dict(Counter(op.label for op in ops)),
        "ingest_events": len(events_b),
        "kills": len(run_b["kills"]),
        "kills_by_mode": dict(Counter(k["mode"] for k in run_b["kills"])),
        "kills_with_event_in_flight": sum(1 for k in run_b["kills"] if k["in_flight"]),
        "pinned_kills": sum(1 for k in run_b["kills"] if k["pinned"]),
        "redelivered_events": sum(1 for e in events_b.values() if e["attempts"] > 1),
        "max_attempts": max((e["attempts"] for e in events_b.values()), default=0),
        "sweeps": run_b["sweeps"],
        "swept_events": run_b["swept_events"],
        "drain_seconds": run_b["drain_s"],
        "run_b_seconds": run_b["run_s"],
        "run_a_seconds": round(ref_s, 2),
        "documents": len(state_b["documents"]),
        "chunks": sum(len(v) for v in state_b["chunks"].values()),
        "postings": len(state_b["postings"]),
        "differences": n_diff,
        "difference_examples": examples,
        "invariant_violations": {"A": invariants(state_a), "B": invariants(state_b)},
        "outcome_mismatches": outcome_mismatches(state_a, state_b),
        "run_b": run_b,
        "seed": cfg.seed,
    }


# ------------------------------------------------------------------ command line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=OUT / "sigkill_drill.json")
    args = parser.parse_args(argv)

    from cairn.stack import Stack

    stack = Stack()
    external = bool(os.environ.get("DATABASE_URL"))
    try:
        stack.start_services(DB_NAME, recreate_db=True)
        if not external:
            log("migrating the drill database (as the owner role)")
            stack.manage("migrate", "--noinput", "-v", "0", owner=True)
        if stack.redis is not None:
            import redis

            # A recreated database restarts ids; cached permission sets of an earlier run would match new rows.
            redis.Redis(unix_socket_path=str(stack.redis.socket)).flushall()
        os.environ.update(stack.env)
        import django

        django.setup()
        args.out.parent.mkdir(parents=True, exist_ok=True)
        cfg = DrillConfig(events=args.events, kills=args.kills, seed=args.seed, log_dir=args.out.parent)
        load = os.getloadavg()
        report = run_drill(cfg)
    finally:
        stack.stop()
    report.update({
        "command": " ".join([".venv/bin/python -m benchmarks.sigkill_drill", *sys.argv[1:]]),
        "git_commit": git_commit(), "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "loadavg_at_start": [round(x, 2) for x in load]},
    })  # fmt: skip
    args.out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    log(f"differences={report['differences']} invariant violations="
        f"{sum(len(v) for v in report['invariant_violations'].values())}; report: {args.out}")  # fmt: skip
    bad = report["differences"] or any(report["invariant_violations"].values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
