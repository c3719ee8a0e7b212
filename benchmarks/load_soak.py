"""Load and soak: search + answers traffic from three tenants against a real gunicorn, then a long soak.

    CAIRN_DATA_DIR=/tmp/cairn-load .venv/bin/python -m benchmarks.load_soak            # full sweep + 10 min soak
    CAIRN_DATA_DIR=/tmp/cairn-load .venv/bin/python -m benchmarks.load_soak --concurrency 4 \\
        --phase-seconds 15 --soak-seconds 0 --docs-per-tenant 10                    # a quick look

One command does everything: it starts the embedded stack (``cairn.stack.Stack``: Postgres + Redis
under ``$CAIRN_DATA_DIR``, a fresh ``cairn_load`` database migrated as the owner role, Redis flushed),
a real Celery worker (``-Q ingest,permissions,answers -c 2``, as ``bin/cairn run``) and the app under
gunicorn with the production-like settings of ``bin/cairn run`` (``-k gthread -w 2 --threads 8``) on a
free 127.0.0.1 port.  With ``DATABASE_URL`` / ``REDIS_URL`` already set (inside ``bin/cairn test``) it
uses those services and only starts the worker and gunicorn.  ``--url`` targets a server that is
already running instead (the seeding still writes through ``DATABASE_URL``, which must be that
server's database, and that server's worker ingests; no RSS sampling unless ``--pid`` names processes).

The rate limits (``CAIRN_RATE_USER`` / ``CAIRN_RATE_TENANT``, defaults 1200/min and 6000/min) are raised
to ``--rate`` for the processes this command starts: the sweep measures capacity, and a 429 counts as
an error like any other non-2xx.  With ``--url`` the operator has to raise them on that server.

Seeding goes through the real ingestion pipeline (``do_enqueue_document`` -> Celery worker: extract,
chunk, embed, write).  Three tenants, each with three users whose readable sets differ:

* ``handbook``: pages of the 18F handbook (``../shared/data/18f_handbook``); questions made from the
  pages' headings and titles.
* ``sci-a``, ``sci-b``: SciFact abstracts (``../shared/data/beir_scifact``), disjoint slices, each
  holding the abstracts judged relevant for its own half of the SciFact queries; questions are those
  queries (the claims), topped up with the other half's.

Each document is ``all`` (``public:tenant``), ``staff`` (group *staff*) or ``secret`` (*staff* AND
*secret*, a two-clause CNF).  Per tenant: ``admin`` (staff + secret: reads everything), ``member``
(staff) and ``guest`` (no group: ``all`` only).  Every document's URL carries its tenant slug and
class, so every result of every response is checked against the requesting user (``leak_check``).

Load: closed-loop virtual users (one thread and one keep-alive HTTP connection each, no think time);
each request picks a random user of the nine, ``GET /api/v1/search`` or ``POST /api/v1/answers``
(``--answer-share``), and a question drawn uniformly from that tenant's pool, so the per-permission
answer/search cache serves some but not all (hit ratio reported).  Any non-2xx (429 and 503
included), timeout or connection error is an error, counted and listed.  Then the soak: ``--soak-
concurrency`` users for ``--soak-seconds`` while every gunicorn process, the Celery worker (main +
pool), Postgres (postmaster + backends) and Redis are sampled every ``--sample-seconds``; the linear
slope of each after ``--warmup-seconds`` says whether memory stays flat.

Writes ``benchmarks/out/load_soak.json`` and, unless ``--no-plot``, ``load_soak_latency.png``,
``load_soak_throughput.png`` and ``load_soak_rss.png`` next to it.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from benchmarks._stack import BenchServices, free_port, git_commit, loadavg, machine

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out"
DATA = Path(os.environ.get("CAIRN_DEMO_DATA_DIR") or ROOT.parent / "shared" / "data")
DB_NAME = "cairn_load"
URL_BASE = "https://load.example"
CLASSES = ("all", "staff", "secret")
ROLES: dict[str, tuple[str, tuple[str, ...]]] = {
    # role name -> (membership role, document classes the user may read)
    "admin": ("admin", ("all", "staff", "secret")),
    "member": ("member", ("all", "staff")),
    "guest": ("member", ("all",)),
}
ACLS: dict[str, list[list[str]]] = {
    "all": [["public:tenant"]],
    "staff": [["confluence:group:staff"]],
    "secret": [["confluence:group:staff"], ["confluence:group:secret"]],
}
GROUPS_OF: dict[str, tuple[str, ...]] = {
    "admin": ("confluence:group:staff", "confluence:group:secret"),
    "member": ("confluence:group:staff",),
    "guest": (),
}
URL_RE = re.compile(r"^https://load\.example/([a-z0-9-]+)/(all|staff|secret)/")
# A slope inside this bound (MB per minute, after warm-up) counts as flat: 1 MB/min is 10 MB over the
# 10-minute soak, well below one gunicorn worker's ~300 MB, and above the sampling noise of RSS.
FLAT_BOUND_MB_PER_MIN = 1.0


def log(msg: str) -> None:
    print(f"[load] {msg}", flush=True)


def pct(xs: list[float], p: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    # Linear interpolation between closest ranks (numpy's default).
    k = (len(s) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return round(s[lo] + (s[hi] - s[lo]) * (k - lo), 4)


# ------------------------------------------------------------------ processes


class Services(BenchServices):
    """The embedded stack (or the one from the environment), a Celery worker and gunicorn."""

    def __init__(self, log_dir: Path, *, rate: str, web_workers: int, web_threads: int, worker_concurrency: int,
                 url: str | None) -> None:  # fmt: skip
        super().__init__(log_dir, "load_soak", log)
        self.rate = rate
        self.web_workers = web_workers
        self.web_threads = web_threads
        self.worker_concurrency = worker_concurrency
        self.base_url = url.rstrip("/") if url else ""
        self.external_url = bool(url)
        self.web: subprocess.Popen[bytes] | None = None
        self.worker: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        if self.external_url and not os.environ.get("DATABASE_URL"):
            raise SystemExit("--url needs DATABASE_URL / REDIS_URL of that server's database (for the seeding)")
        # Raised for the processes started here only; the sweep measures capacity, not the limiter.
        self.start_stack(DB_NAME, {"CAIRN_RATE_USER": self.rate, "CAIRN_RATE_TENANT": self.rate})
        if self.external_url:
            return
        self.worker = self.spawn("worker", [sys.executable, "-m", "celery", "-A", "cairn", "worker",
                                            "-Q", "ingest,permissions,answers", "-c", str(self.worker_concurrency),
                                            "--loglevel", "WARNING", "-n", f"load-{uuid.uuid4().hex[:6]}@%h"])  # fmt: skip
        port = free_port()
        self.web = self.spawn("web", [sys.executable, "-m", "gunicorn", "cairn.wsgi:application",
                                      "-b", f"127.0.0.1:{port}", "-k", "gthread", "-w", str(self.web_workers),
                                      "--threads", str(self.web_threads), "--timeout", "120",
                                      "--graceful-timeout", "10"])  # fmt: skip
        self.base_url = f"http://127.0.0.1:{port}"
        self.wait_ready(240)


# ------------------------------------------------------------------ memory sampling


def _proc_mem(proc: Any) -> tuple[float, float]:
    """(RSS, PSS) in MB of one process; PSS splits shared pages (Postgres' shared_buffers) fairly."""
    try:
        info = proc.memory_full_info()
        return info.rss / 2**20, getattr(info, "pss", info.rss) / 2**20
    except Exception:  # gone between listing and reading, or not ours to read
        return 0.0, 0.0


def _postmaster_pid(root: Path) -> int | None:
    try:
        return int((root / "pg" / "postmaster.pid").read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return None


def _redis_pid(services: Services) -> int | None:
    """The redis-server of this data dir (never another engineer's): ours, or found by its socket path."""
    import psutil

    if services.stack.redis is not None and services.stack.redis.proc is not None:
        return int(services.stack.redis.proc.pid)
    # redis-server retitles itself "redis-server unixsocket:<path>", so match the socket path.
    sock = str(services.stack.root / "redis" / "redis.sock")
    for p in psutil.process_iter(["name", "cmdline"]):
        try:
            if "redis" in (p.info["name"] or "") and sock in " ".join(p.info["cmdline"] or []):
                return int(p.pid)
        except (psutil.Error, TypeError):
            continue
    return None


def memory_targets(services: Services | None, extra_pids: dict[str, int]) -> dict[str, tuple[int, bool]]:
    """name -> (pid, include children).  gunicorn workers and Celery pool processes are sampled one by one."""
    import psutil

    targets: dict[str, tuple[int, bool]] = {}
    if services is not None and services.web is not None:
        targets["gunicorn master"] = (services.web.pid, False)
        for i, child in enumerate(sorted(psutil.Process(services.web.pid).children(), key=lambda c: c.pid)):
            targets[f"gunicorn worker {i + 1}"] = (child.pid, False)
    if services is not None and services.worker is not None:
        targets["celery worker (main)"] = (services.worker.pid, False)
        for i, child in enumerate(sorted(psutil.Process(services.worker.pid).children(), key=lambda c: c.pid)):
            targets[f"celery pool {i + 1}"] = (child.pid, False)
    if services is not None:
        pm = _postmaster_pid(services.stack.root)
        if pm:
            targets["postgres (all processes)"] = (pm, True)
        rd = _redis_pid(services)
        if rd:
            targets["redis"] = (rd, False)
    for name, pid in extra_pids.items():
        targets[name] = (pid, True)
    return targets


def cpu_seconds(targets: dict[str, tuple[int, bool]]) -> dict[str, float]:
    """User + system CPU seconds used so far by each target (and its children where it includes them)."""
    import psutil

    out: dict[str, float] = {}
    for name, (pid, children) in targets.items():
        try:
            root = psutil.Process(pid)
            procs = [root, *(root.children(recursive=True) if children else [])]
        except psutil.Error:
            continue
        total = 0.0
        for proc in procs:
            try:
                t = proc.cpu_times()
                total += t.user + t.system
            except psutil.Error:  # a Postgres backend that just exited
                continue
        out[name] = total
    return out


def cpu_per_request(before: dict[str, float], after: dict[str, float], requests: int) -> dict[str, Any]:
    """CPU the server side spent per request: unlike latency, it hardly depends on how busy the machine is."""
    groups: dict[str, float] = defaultdict(float)
    for name, end in after.items():
        group = name.split(" ")[0]  # gunicorn / celery / postgres / redis
        groups[group] += max(0.0, end - before.get(name, 0.0))
    return {"cpu_s": {g: round(v, 2) for g, v in groups.items()},
            "cpu_s_per_request": {g: round(v / requests, 4) if requests else None for g, v in groups.items()}}  # fmt: skip


@dataclass
class MemorySampler:
    targets: dict[str, tuple[int, bool]]
    interval: float
    samples: list[dict[str, Any]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    t0: float = 0.0

    def sample(self) -> None:
        import psutil

        row: dict[str, Any] = {"t_s": round(time.perf_counter() - self.t0, 2), "loadavg": loadavg()[0]}
        for name, (pid, children) in self.targets.items():
            try:
                root = psutil.Process(pid)
                procs = [root, *(root.children(recursive=True) if children else [])]
            except psutil.Error:
                row[name] = None
                continue
            rss = pss = 0.0
            for p in procs:
                r, s = _proc_mem(p)
                rss, pss = rss + r, pss + s
            row[name] = {"rss_mb": round(rss, 2), "pss_mb": round(pss, 2), "processes": len(procs)}
        self.samples.append(row)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def start(self) -> None:
        self.t0 = time.perf_counter()
        self.sample()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()
        self.sample()


def slope_mb_per_min(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of (seconds, MB) in MB/min."""
    if len(points) < 3:
        return None
    n = len(points)
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    sxx = sum((t - mx) ** 2 for t, _ in points)
    if sxx == 0:
        return None
    return round(60 * sum((t - mx) * (v - my) for t, v in points) / sxx, 3)


def summarise_memory(samples: list[dict[str, Any]], warmup_s: float) -> dict[str, Any]:
    names = [k for k in (samples[0] if samples else {}) if k not in ("t_s", "loadavg")]
    out: dict[str, Any] = {}
    for name in names:
        # Postgres' backends all map shared_buffers: their RSS sum counts it once per backend, so
        # the group is judged on PSS; single processes on RSS, as asked.
        metric = "pss_mb" if name.startswith("postgres") else "rss_mb"
        series = [(s["t_s"], s[name][metric]) for s in samples if s.get(name)]
        after = [(t, v) for t, v in series if t >= warmup_s]
        slope = slope_mb_per_min(after)
        out[name] = {
            "metric": metric,
            "start_mb": series[0][1] if series else None,
            "after_warmup_mb": after[0][1] if after else None,
            "end_mb": series[-1][1] if series else None,
            "max_mb": max((v for _, v in series), default=None),
            "slope_after_warmup_mb_per_min": slope,
            "slope_whole_run_mb_per_min": slope_mb_per_min(series),
            "flat": slope is not None and abs(slope) <= FLAT_BOUND_MB_PER_MIN,
        }
    return out


# ------------------------------------------------------------------ corpus, tenants, users


@dataclass
class SeedUser:
    key: str
    tenant_key: str
    tenant_id: int
    tenant_slug: str
    username: str
    role: str
    readable: tuple[str, ...]
    token: str
    user_id: int

    def public(self) -> dict[str, Any]:
        return {"tenant": self.tenant_key, "tenant_id": self.tenant_id, "tenant_slug": self.tenant_slug,
                "username": self.username, "user_id": self.user_id, "role": self.role,
                "readable_classes": list(self.readable)}  # fmt: skip


@dataclass
class Corpus:
    docs: list[tuple[str, str, str, str]]  # external id, title, text, media type
    questions: list[str]


def doc_class(i: int) -> str:
    """60 % all, 30 % staff, 10 % secret: each user reads a different share of the tenant."""
    r = i % 10
    return "all" if r < 6 else "staff" if r < 9 else "secret"


def _valid_questions(candidates: list[str], want: int) -> tuple[list[str], int]:
    """Up to ``want`` distinct questions the product's query parser accepts, and how many were dropped.

    A pool entry that is a 400 would be our bug, not the product's; duplicates and very short
    headings are dropped too.  Stops at ``want`` (parsing thousands of candidates costs seconds).
    """
    from answers.query_parser import QueryError, parse_query

    now = datetime.now(UTC)
    seen: set[str] = set()
    ok: list[str] = []
    examined = 0
    for q in candidates:
        if len(ok) >= want:
            break
        examined += 1
        q = " ".join(q.split())[:300]
        if len(q) < 8 or q.lower() in seen:
            continue
        try:
            parse_query(q, now)
        except QueryError:
            continue
        seen.add(q.lower())
        ok.append(q)
    return ok, examined - len(ok)


def handbook_corpus(n_docs: int, pool: int, rng: random.Random) -> tuple[Corpus, int]:
    pages = [json.loads(line) for line in (DATA / "18f_handbook" / "pages_current.jsonl").open()]
    # Smallest pages first: a few hundred pages of the handbook embed in minutes, not an hour.
    pages.sort(key=lambda p: (len(p["text"]), p["id"]))
    pages = pages[:n_docs]
    front = re.compile(r"\A---\n.*?\n---\n", re.S)
    docs, raw_q = [], []
    for p in pages:
        text = front.sub("", p["text"])
        docs.append((p["id"], p["title"], f"# {p['title']}\n\n{text}", "text/markdown"))
        raw_q.append(f"What does the handbook say about {p['title']}?")
        for h in re.findall(r"^#{2,4}\s+(.+)$", text, re.M):
            h = re.sub(r"[^\w\s'’,.?()/&-]", " ", h).strip()
            if len(h.split()) >= 2:
                raw_q.append(rng.choice(["{}", "How does {} work?", "What is the process for {}?", "{} guidance"])
                             .format(h.lower()))  # fmt: skip
    rng.shuffle(raw_q)
    questions, rejected = _valid_questions(raw_q, pool)
    return Corpus(docs, questions), rejected


def scifact_corpora(n_docs: int, pool: int, rng: random.Random) -> tuple[list[Corpus], int]:
    base = DATA / "beir_scifact"
    corpus: dict[str, dict[str, Any]] = {}
    for part in sorted(base.glob("corpus.part*.jsonl")):
        for line in part.open():
            d = json.loads(line)
            corpus[str(d["_id"])] = d
    queries = {str(q["_id"]): q["text"] for q in map(json.loads, (base / "queries.jsonl").open())}
    rel: dict[str, list[str]] = defaultdict(list)
    for qrels in sorted((base / "qrels").glob("*.tsv")):
        for line in qrels.open():
            parts = line.split()
            if len(parts) >= 3 and parts[0] in queries and parts[1] in corpus:
                rel[parts[0]].append(parts[1])
    qids = sorted(rel, key=int)
    halves = [qids[0::2], qids[1::2]]
    used: set[str] = set()
    out: list[Corpus] = []
    rejected = 0
    for i, half in enumerate(halves):
        ids: list[str] = []
        for q in half:  # the abstracts this half's questions are about, as long as they fit
            for d in rel[q]:
                if d not in used and len(ids) < n_docs:
                    ids.append(d)
                    used.add(d)
        fill = [d for d in sorted(corpus, key=int) if d not in used]
        rng.shuffle(fill)
        for d in fill[: n_docs - len(ids)]:
            ids.append(d)
            used.add(d)
        docs = [(f"scifact-{d}", corpus[d].get("title") or f"Abstract {d}",
                 f"{corpus[d].get('title', '')}\n\n{corpus[d]['text']}", "text/plain") for d in ids]  # fmt: skip
        own_q, other_q = [queries[q] for q in half], [queries[q] for q in halves[1 - i]]
        rng.shuffle(own_q)
        rng.shuffle(other_q)
        own, rej1 = _valid_questions(own_q, pool)
        other, rej2 = _valid_questions(other_q, pool - len(own))
        rejected += rej1 + rej2
        out.append(Corpus(docs, own + other))
    return out, rejected


def seed(n_docs: int, pool: int, rng: random.Random, tag: str) -> tuple[dict[str, SeedUser], dict[str, Any]]:
    """Tenants, users, groups, tokens; documents enqueued through the real pipeline."""
    from retrieval.actions import do_create_source, do_enqueue_document, do_record_identity, do_set_group_members
    from retrieval.contracts import SourceDocument
    from tenants.actions import do_add_member, do_create_api_token, do_create_tenant, do_create_user
    from tenants.context import tenant_context

    hb, rej_hb = handbook_corpus(n_docs, pool, rng)
    (sa, sb), rej_sf = scifact_corpora(n_docs, pool, rng)
    corpora = {"handbook": hb, "sci-a": sa, "sci-b": sb}
    users: dict[str, SeedUser] = {}
    info: dict[str, Any] = {
        "tenants": {},
        "questions_dropped": rej_hb + rej_sf,
        "questions_dropped_why": "duplicate, under 8 characters, or refused by the query parser",
    }
    for tkey, corpus in corpora.items():
        slug = f"load-{tkey}-{tag}"
        tenant = do_create_tenant(slug, f"Load {tkey}")
        members = {}
        for role, (mrole, readable) in ROLES.items():
            username = f"{role}-{tkey}-{tag}"
            user = do_create_user(username, f"{username}@example.com", None, email_verified=True)
            token = do_create_api_token(do_add_member(tenant, user, role=mrole), name="load")
            users[f"{tkey}/{role}"] = SeedUser(f"{tkey}/{role}", tkey, tenant.pk, slug, username, role, readable,
                                               token, user.pk)  # fmt: skip
            members[role] = user
        counts: Counter[str] = Counter()
        with tenant_context(tenant.pk):
            groups: dict[str, list[str]] = defaultdict(list)
            for role, user in members.items():
                principal = f"confluence:user:{user.username}"
                do_record_identity(principal, email=user.email, email_verified=True, display_name=user.username)
                for g in GROUPS_OF[role]:
                    groups[g].append(principal)
            for g, principals in groups.items():
                do_set_group_members(g, principals)
            source = do_create_source("confluence", f"load-{tkey}")
            for i, (ext, title, text, media) in enumerate(corpus.docs):
                cls = doc_class(i)
                counts[cls] += 1
                do_enqueue_document(source, SourceDocument(
                    external_id=ext, title=title, url=f"{URL_BASE}/{slug}/{cls}/{i}", content=text.encode(),
                    media_type=media, acl=tuple(tuple(c) for c in ACLS[cls]), source_version=1,
                    container=tkey.upper(), updated_at=datetime(2026, 1, 15, tzinfo=UTC)))  # fmt: skip
        info["tenants"][tkey] = {"tenant_id": tenant.pk, "slug": slug, "documents": len(corpus.docs),
                                 "documents_by_class": dict(counts), "question_pool": len(corpus.questions)}  # fmt: skip
    info["pools"] = {k: c.questions for k, c in corpora.items()}
    return users, info


def wait_for_ingestion(users: dict[str, SeedUser], timeout: float) -> dict[str, Any]:
    from retrieval.models import Chunk, Document, IngestEvent
    from tenants.context import tenant_context

    tenants = {u.tenant_key: u.tenant_id for u in users.values()}
    t0 = time.perf_counter()
    last = -1
    while True:
        pending = 0
        for tid in tenants.values():
            with tenant_context(tid):
                pending += IngestEvent.objects.filter(status=IngestEvent.Status.PENDING).count()
        if pending == 0:
            break
        if time.perf_counter() - t0 > timeout:
            raise TimeoutError(f"{pending} ingest events still pending after {timeout:.0f} s")
        if pending != last and (last < 0 or last - pending >= 50):
            log(f"ingesting: {pending} events pending ({time.perf_counter() - t0:.0f} s)")
            last = pending
        time.sleep(1)
    out: dict[str, Any] = {"seconds": round(time.perf_counter() - t0, 1), "tenants": {}}
    for tkey, tid in tenants.items():
        with tenant_context(tid):
            out["tenants"][tkey] = {
                "documents": Document.objects.count(),
                "chunks": Chunk.objects.count(),
                "events_failed": IngestEvent.objects.filter(status=IngestEvent.Status.FAILED).count(),
            }
    return out


# ------------------------------------------------------------------ the load generator


class Connection:
    """One keep-alive HTTP/1.1 connection (what one virtual user holds)."""

    def __init__(self, base_url: str, timeout: float) -> None:
        u = urlsplit(base_url)
        self.host, self.port, self.https = u.hostname or "127.0.0.1", u.port, u.scheme == "https"
        self.prefix = u.path.rstrip("/")
        self.timeout = timeout
        self.conn: http.client.HTTPConnection | None = None
        self.stale_retries = 0

    def _connect(self) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
        return cls(self.host, self.port, timeout=self.timeout)

    def request(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> tuple[int, bytes]:
        reused = self.conn is not None
        if self.conn is None:
            self.conn = self._connect()
        try:
            self.conn.request(method, self.prefix + path, body=body, headers=headers)
            resp = self.conn.getresponse()
            data = resp.read()
            if resp.getheader("Connection", "").lower() == "close":
                self.close()
            return resp.status, data
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            self.close()
            if not reused:
                raise
            # The server closed an idle keep-alive connection as we reused it (no byte of a
            # response was read): what every HTTP client retries.  Counted in the report.
            self.stale_retries += 1
            return self.request(method, path, body, headers)
        except Exception:
            self.close()
            raise

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


@dataclass
class Sample:
    t_s: float
    endpoint: str
    user: str
    status: int
    latency_s: float
    cache: str | None
    error: str | None


@dataclass
class LeakCheck:
    results_checked: int = 0
    responses_checked: int = 0
    violations: list[dict[str, Any]] = field(default_factory=list)
    returned: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def check(self, user: SeedUser, body: dict[str, Any]) -> None:
        """Every result / evidence record: the requesting user's tenant and a class the user may read."""
        items = list(body.get("results") or []) + list(body.get("evidence") or [])
        bad, ids = [], set()
        for item in items:
            url = item.get("url") or item.get("canonical_url") or ""
            m = URL_RE.match(url)
            if not m or m.group(1) != user.tenant_slug or m.group(2) not in user.readable:
                bad.append({"user": user.key, "url": url, "document_id": item.get("document_id")})
            if isinstance(item.get("document_id"), int):
                ids.add(item["document_id"])
        with self.lock:
            self.responses_checked += 1
            self.results_checked += len(items)
            self.violations.extend(bad[:5])
            self.returned[user.key].update(ids)


def run_load(base_url: str, users: dict[str, SeedUser], pools: dict[str, list[str]], *, concurrency: int,
             seconds: float, answer_share: float, seed_value: int, leak: LeakCheck, timeout: float,
             limit: int) -> tuple[list[Sample], float, int]:  # fmt: skip
    """``concurrency`` closed-loop users for ``seconds``; returns the samples, wall time, stale retries."""
    user_list = sorted(users.values(), key=lambda u: u.key)
    samples: list[Sample] = []
    lock = threading.Lock()
    t0 = time.perf_counter()
    deadline = t0 + seconds
    retries = [0]

    def virtual_user(n: int) -> None:
        rng = random.Random(seed_value * 1000 + n)
        conn = Connection(base_url, timeout)
        mine: list[Sample] = []
        while time.perf_counter() < deadline:
            user = rng.choice(user_list)
            q = rng.choice(pools[user.tenant_key])
            headers = {"Authorization": f"Bearer {user.token}", "Accept": "application/json"}
            if rng.random() < answer_share:
                endpoint, method, path = "answers", "POST", "/api/v1/answers"
                body: bytes | None = json.dumps({"question": q}).encode()
                headers["Content-Type"] = "application/json"
            else:
                endpoint, method, path, body = (
                    "search",
                    "GET",
                    "/api/v1/search?" + urlencode({"q": q, "limit": limit}),
                    None,
                )
            start = time.perf_counter()
            status, cache, error = 0, None, None
            try:
                status, data = conn.request(method, path, body, headers)
                if 200 <= status < 300:
                    payload = json.loads(data)
                    cache = (payload.get("trace") or {}).get("cache")
                    leak.check(user, payload)
                else:
                    try:
                        error = str(json.loads(data).get("error", {}).get("code") or data[:120])
                    except (ValueError, AttributeError):
                        error = data[:120].decode(errors="replace")
            except Exception as exc:  # timeouts, refused or reset connections: errors like any non-2xx
                error = f"{type(exc).__name__}: {exc}"[:200]
            end = time.perf_counter()
            mine.append(Sample(round(start - t0, 4), endpoint, user.key, status, end - start, cache, error))
        conn.close()
        with lock:
            samples.extend(mine)
            retries[0] += conn.stale_retries

    threads = [threading.Thread(target=virtual_user, args=(n,), daemon=True) for n in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + timeout + 30)
    # Requests still in flight at the deadline finish and are counted; the window is until the last one.
    wall = max([s.t_s + s.latency_s for s in samples], default=seconds)
    return sorted(samples, key=lambda s: s.t_s), max(wall, seconds), retries[0]


def summarise_phase(samples: list[Sample], wall_s: float, concurrency: int, retries: int) -> dict[str, Any]:
    out: dict[str, Any] = {"concurrency": concurrency, "wall_s": round(wall_s, 2), "requests": len(samples),
                           "throughput_rps": round(len(samples) / wall_s, 3) if wall_s else None,
                           "stale_keepalive_retries": retries, "endpoints": {}}  # fmt: skip
    errors = [s for s in samples if s.error is not None or not 200 <= s.status < 300]
    out["errors"] = len(errors)
    kinds = Counter(f"{s.endpoint} {s.status} {s.error}" for s in errors)
    out["error_kinds"] = [{"what": k, "count": n} for k, n in kinds.most_common()]
    for endpoint in ("search", "answers"):
        xs = [s for s in samples if s.endpoint == endpoint]
        ok = [s.latency_s for s in xs if s.error is None and 200 <= s.status < 300]
        caches = Counter(s.cache for s in xs if s.error is None)
        hits = caches.get("hit", 0)
        out["endpoints"][endpoint] = {
            "requests": len(xs),
            "errors": sum(1 for s in xs if s.error is not None or not 200 <= s.status < 300),
            "throughput_rps": round(len(xs) / wall_s, 3) if wall_s else None,
            "latency_s": {
                "p50": pct(ok, 50),
                "p95": pct(ok, 95),
                "p99": pct(ok, 99),
                "mean": round(sum(ok) / len(ok), 4) if ok else None,
                "max": round(max(ok), 4) if ok else None,
            },  # fmt: skip
            "cache": dict(caches),
            "cache_hit_ratio": round(hits / sum(caches.values()), 3) if caches else None,
        }
    ok_all = [s.latency_s for s in samples if s.error is None and 200 <= s.status < 300]
    out["latency_s_all"] = {"p50": pct(ok_all, 50), "p95": pct(ok_all, 95), "p99": pct(ok_all, 99)}
    out["requests_by_tenant"] = dict(Counter(s.user.split("/")[0] for s in samples))
    return out


def timeline(samples: list[Sample], bucket_s: float) -> list[dict[str, Any]]:
    """Throughput and p95 per time bucket (the soak must not degrade either)."""
    buckets: dict[int, list[Sample]] = defaultdict(list)
    for s in samples:
        buckets[int(s.t_s // bucket_s)].append(s)
    return [{"t_s": b * bucket_s, "requests": len(xs), "rps": round(len(xs) / bucket_s, 3),
             "errors": sum(1 for s in xs if s.error is not None or not 200 <= s.status < 300),
             "p95_s": pct([s.latency_s for s in xs], 95)} for b, xs in sorted(buckets.items())]  # fmt: skip


# ------------------------------------------------------------------ plots


def plot(report: dict[str, Any], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[Path] = []
    sweep = report["sweep"]
    conc = [p["concurrency"] for p in sweep]
    during = [p["start"][0] for p in report["machine"].get("loadavg_per_phase", [])]
    during += [x for x in ((report.get("soak") or {}).get("loadavg_start", [None])[:1]) if x is not None]
    load = f"{min(during):.0f}-{max(during):.0f}" if during else str(report["machine"]["loadavg_at_start"][0])
    subtitle = f"{report['date'][:16]}, {report['machine']['cpus']} CPUs shared, 1-min load avg {load}"
    if sweep:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
        for ax, endpoint in zip(axes, ("search", "answers"), strict=True):
            for q, style in (("p50", "o-"), ("p95", "s--"), ("p99", "^:")):
                ys = [p["endpoints"][endpoint]["latency_s"][q] for p in sweep]
                ax.plot(conc, ys, style, label=q)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xticks(conc, [str(c) for c in conc])
            ax.set_xlabel("concurrent users")
            ax.set_title(f"{endpoint}")
            ax.grid(alpha=0.3, which="both")
            ax.legend()
        axes[0].set_ylabel("latency (s)")
        fig.suptitle(f"Latency vs concurrency ({subtitle})", fontsize=9)
        fig.tight_layout()
        path = out.parent / f"{out.stem}_latency.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)

        fig, ax = plt.subplots(figsize=(6.5, 4.5))
        ax.plot(conc, [p["throughput_rps"] for p in sweep], "o-", label="all")
        for endpoint in ("search", "answers"):
            ax.plot(conc, [p["endpoints"][endpoint]["throughput_rps"] for p in sweep], "s--", label=endpoint)
        ax.set_xscale("log", base=2)
        ax.set_xticks(conc, [str(c) for c in conc])
        ax.set_xlabel("concurrent users")
        ax.set_ylabel("requests / s")
        ax.set_title(f"Throughput vs concurrency\n{subtitle}", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        path = out.parent / f"{out.stem}_throughput.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    soak = report.get("soak") or {}
    mem = soak.get("memory_samples") or []
    if mem:
        names = [k for k in mem[0] if k not in ("t_s", "loadavg")]
        fig, ax = plt.subplots(figsize=(10, 5))
        for name in names:
            metric = soak["memory"][name]["metric"]
            pts = [(s["t_s"] / 60, s[name][metric]) for s in mem if s.get(name)]
            ax.plot([t for t, _ in pts], [v for _, v in pts], label=f"{name} ({metric.split('_')[0].upper()})")
        ax.axvline(soak["warmup_s"] / 60, color="grey", ls=":", lw=1)
        ax.set_xlabel("minutes into the soak (dotted: end of warm-up)")
        ax.set_ylabel("MB")
        ax.set_title(f"Memory during the soak at concurrency {soak['concurrency']} ({subtitle})", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.tight_layout()
        path = out.parent / f"{out.stem}_rss.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    return written


# ------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--concurrency", default="1,4,16,64", help="comma-separated sweep levels")
    ap.add_argument("--phase-seconds", type=float, default=60.0, help="duration of each sweep level")
    ap.add_argument(
        "--warmup-requests-seconds",
        type=float,
        default=10.0,
        help="unmeasured traffic at concurrency 4 before the sweep (imports, model, caches)",
    )
    ap.add_argument("--soak-seconds", type=float, default=600.0, help="0 skips the soak")
    ap.add_argument("--soak-concurrency", type=int, default=16)
    ap.add_argument("--sample-seconds", type=float, default=5.0, help="memory sampling interval")
    ap.add_argument("--warmup-seconds", type=float, default=120.0, help="soak start excluded from the slope")
    ap.add_argument("--answer-share", type=float, default=0.35, help="share of POST /api/v1/answers")
    ap.add_argument("--docs-per-tenant", type=int, default=300)
    ap.add_argument("--pool-size", type=int, default=1000, help="questions per tenant (at most)")
    ap.add_argument("--limit", type=int, default=10, help="search results per request")
    ap.add_argument("--rate", default="1000000/min", help="CAIRN_RATE_USER and CAIRN_RATE_TENANT for the run")
    ap.add_argument("--web-workers", type=int, default=2, help="gunicorn -w (bin/cairn run: 2)")
    ap.add_argument("--web-threads", type=int, default=8, help="gunicorn --threads (bin/cairn run: 8)")
    ap.add_argument("--worker-concurrency", type=int, default=2, help="celery -c (bin/cairn run: 2)")
    ap.add_argument("--request-timeout", type=float, default=180.0)
    ap.add_argument("--ingest-timeout", type=float, default=3600.0)
    ap.add_argument("--url", help="target a running server instead of starting one")
    ap.add_argument(
        "--pid",
        action="append",
        default=[],
        metavar="NAME=PID",
        help="with --url: a process (and its children) to sample during the soak",
    )
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path, default=OUT / "load_soak.json")
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--replot", type=Path, metavar="JSON", help="only redraw the PNGs of an earlier report")
    args = ap.parse_args(argv)
    if args.replot:
        for path in plot(json.loads(args.replot.read_text()), args.replot):
            log(f"wrote {path}")
        return 0
    levels = [int(c) for c in args.concurrency.split(",") if c.strip()]
    if not levels or min(levels) < 1:
        ap.error("--concurrency needs positive integers")
    extra_pids = {}
    for spec in args.pid:
        name, _, pid = spec.partition("=")
        extra_pids[name] = int(pid)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cairn.settings")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    started = datetime.now(UTC)
    rng = random.Random(args.seed)
    report: dict[str, Any] = {
        "date": started.isoformat(timespec="seconds"), "git_commit": git_commit(), "machine": machine(),
        "command": "python -m benchmarks.load_soak " + " ".join(argv if argv is not None else sys.argv[1:]),
        "config": {"concurrency": levels, "phase_seconds": args.phase_seconds, "soak_seconds": args.soak_seconds,
                   "soak_concurrency": args.soak_concurrency, "answer_share": args.answer_share,
                   "docs_per_tenant": args.docs_per_tenant, "pool_size": args.pool_size, "limit": args.limit,
                   "rate_limits": {"CAIRN_RATE_USER": args.rate, "CAIRN_RATE_TENANT": args.rate,
                                   "note": "raised for the run (defaults 1200/min per user, 6000/min per tenant)"
                                   if not args.url else "as configured on the target server"},
                   "web": args.url or f"gunicorn cairn.wsgi -k gthread -w {args.web_workers} "
                                      f"--threads {args.web_threads} --timeout 120 on 127.0.0.1",
                   "worker": f"celery -A cairn worker -Q ingest,permissions,answers -c {args.worker_concurrency}",
                   "flat_bound_mb_per_min": FLAT_BOUND_MB_PER_MIN, "warmup_s": args.warmup_seconds},
        "errors_total": None, "sweep": [], "soak": None,
    }  # fmt: skip
    services = Services(args.out.parent, rate=args.rate, web_workers=args.web_workers, web_threads=args.web_threads,
                        worker_concurrency=args.worker_concurrency, url=args.url)  # fmt: skip
    failure: str | None = None
    timings: dict[str, float] = {}
    report["timings_s"] = timings
    mark = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal mark
        timings[name] = round(time.perf_counter() - mark, 1)
        mark = time.perf_counter()

    try:
        services.start()
        lap("start_services")
        report["target"] = services.base_url
        tag = uuid.uuid4().hex[:6]
        users, info = seed(args.docs_per_tenant, args.pool_size, rng, tag)
        pools = info.pop("pools")
        report["seed"] = info
        report["users"] = {k: u.public() for k, u in users.items()}
        log(f"seeded {sum(t['documents'] for t in info['tenants'].values())} documents in 3 tenants; ingesting")
        lap("seed")
        report["ingestion"] = wait_for_ingestion(users, args.ingest_timeout)
        lap("ingest")
        log(f"ingested in {report['ingestion']['seconds']} s: {report['ingestion']['tenants']}")
        leak = LeakCheck()
        common = {"answer_share": args.answer_share, "leak": leak, "timeout": args.request_timeout,
                  "limit": args.limit}  # fmt: skip
        if args.warmup_requests_seconds > 0:
            s, wall, _ = run_load(services.base_url, users, pools, concurrency=4,
                                  seconds=args.warmup_requests_seconds, seed_value=args.seed + 99, **common)  # fmt: skip
            report["warmup"] = summarise_phase(s, wall, 4, 0)
            log(f"warm-up: {len(s)} requests, {report['warmup']['errors']} errors")
        lap("warmup")
        all_errors = 0
        targets = memory_targets(services if not args.url else None, extra_pids)
        for i, c in enumerate(levels):
            report["machine"].setdefault("loadavg_per_phase", []).append({"phase": f"c{c}", "start": loadavg()})
            cpu0 = cpu_seconds(targets)
            s, wall, retries = run_load(services.base_url, users, pools, concurrency=c, seconds=args.phase_seconds,
                                        seed_value=args.seed + i, **common)  # fmt: skip
            phase = summarise_phase(s, wall, c, retries)
            phase["server"] = cpu_per_request(cpu0, cpu_seconds(targets), len(s))
            phase["loadavg_end"] = loadavg()
            report["sweep"].append(phase)
            all_errors += phase["errors"]
            log(f"c={c}: {phase['requests']} req, {phase['throughput_rps']} req/s, errors {phase['errors']}, "
                f"search p50/p95/p99 {phase['endpoints']['search']['latency_s']['p50']}/"
                f"{phase['endpoints']['search']['latency_s']['p95']}/{phase['endpoints']['search']['latency_s']['p99']}"
                f" s, answers p50/p95/p99 {phase['endpoints']['answers']['latency_s']['p50']}/"
                f"{phase['endpoints']['answers']['latency_s']['p95']}/"
                f"{phase['endpoints']['answers']['latency_s']['p99']} s")  # fmt: skip
        lap("sweep")
        if args.soak_seconds > 0:
            sampler = MemorySampler(memory_targets(services if not args.url else None, extra_pids),
                                    args.sample_seconds)  # fmt: skip
            load_start = loadavg()
            sampler.start()
            cpu0 = cpu_seconds(sampler.targets)
            s, wall, retries = run_load(services.base_url, users, pools, concurrency=args.soak_concurrency,
                                        seconds=args.soak_seconds, seed_value=args.seed + 50, **common)  # fmt: skip
            sampler.stop()
            phase = summarise_phase(s, wall, args.soak_concurrency, retries)
            phase["server"] = cpu_per_request(cpu0, cpu_seconds(sampler.targets), len(s))
            all_errors += phase["errors"]
            memory = summarise_memory(sampler.samples, args.warmup_seconds)
            report["soak"] = {**phase, "warmup_s": args.warmup_seconds, "sample_s": args.sample_seconds,
                              "loadavg_start": load_start, "loadavg_end": loadavg(),
                              "timeline": timeline(s, 30.0), "memory": memory,
                              "memory_flat": all(m["flat"] for m in memory.values()) if memory else None,
                              "memory_samples": sampler.samples}  # fmt: skip
            log(f"soak: {phase['requests']} req, {phase['throughput_rps']} req/s, errors {phase['errors']}")
            for name, m in memory.items():
                log(
                    f"  {name:<26} {m['metric']} {m['start_mb']} -> {m['end_mb']} MB, slope after warm-up "
                    f"{m['slope_after_warmup_mb_per_min']} MB/min {'flat' if m['flat'] else 'NOT FLAT'}"
                )
        lap("soak")
        report["errors_total"] = all_errors
        report["leak_check"] = {"responses_checked": leak.responses_checked, "results_checked": leak.results_checked,
                                "violations": leak.violations[:50], "violation_count": len(leak.violations),
                                # A sample per user for an independent check against the database (the smoke test).
                                "returned_document_ids": {k: sorted(v)[:25] for k, v in leak.returned.items()}}  # fmt: skip
    except Exception as exc:
        failure = f"{type(exc).__name__}: {exc}"
        log(f"FAILED: {failure}")
    finally:
        services.stop()
        lap("stop_services")
    report["failure"] = failure
    report["machine"]["loadavg_at_end"] = loadavg()
    report["duration_s"] = round((datetime.now(UTC) - started).total_seconds(), 1)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    if not args.no_plot and failure is None:
        for path in plot(report, args.out):
            log(f"wrote {path}")
    log(f"wrote {args.out}")
    leaks = (report.get("leak_check") or {}).get("violation_count")
    return 1 if failure or report["errors_total"] or leaks else 0


if __name__ == "__main__":
    sys.exit(main())
