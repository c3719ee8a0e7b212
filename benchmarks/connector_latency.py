"""Connector latency: event -> searchable and revocation -> enforced, per source, end to end.

    CAIRN_DATA_DIR=/tmp/cairn-bench .venv/bin/python -m benchmarks.connector_latency --events 20

One command does everything: it starts the embedded stack (``cairn.stack.Stack``, a fresh
``cairn_bench`` database, migrated as the owner role, Redis flushed), a REAL Celery worker
(``celery -A cairn worker -Q ingest,permissions,answers -c 2``) and the Django app under gunicorn
on a free 127.0.0.1 port, plus the local fake sources the integration tests use
(``tests/connectors/{confluence/fake_confluence,sharepoint/fake_graph,slack/fake_slack}.py``).
With ``DATABASE_URL`` / ``REDIS_URL`` already set (inside ``bin/cairn test``) it uses those
services as they are and only starts the worker and the web server.

Per source, after an initial permission + full sync run by the worker:

* event -> searchable: the change is made at the fake source, then delivered over HTTP to the
  real hook view (Confluence ``page_created`` with the shared secret; a Graph change
  notification with ``clientState``; a signed Slack ``message`` event).  The clock starts
  right before that POST and stops when ``GET /api/v1/search`` (a reader's Bearer token) first
  returns the new item (matched by a unique token in its title/snippet).
* revocation -> enforced: the item's permission is narrowed at the source, then
  Confluence: ``POST /api/v1/connectors/<id>/sync {"mode": "permission"}`` (admin token;
  Confluence sends no webhook for restriction changes); SharePoint (``--sharepoint-revocation
  delta``, the default): the file's organization link is removed and a Graph change notification
  is POSTed, whose delta run (``Prefer: deltashowsharingchanges``, the app holding
  Sites.FullControl.All) reports the sharing change; ``--sharepoint-revocation permission``
  narrows the permissions and requests a permission sync instead; Slack: a signed
  ``member_left_channel`` event.  The clock stops when
  the search API no longer returns the item to the revoked user.  For Slack the member is
  re-added (``member_joined_channel``) between samples; that latency is recorded as ``grant``.

Samples run one after another on an otherwise idle stack (no beat), so each is the latency of
one change, not of a backlog.  The poll interval (``--poll``, default 0.1 s) bounds resolution.

Writes ``benchmarks/out/connector_latency.json`` (every sample, p50/p95, git commit, machine,
date, command) and ``benchmarks/out/connector_latency.png`` (box plot per source and kind).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks._stack import BenchServices, free_port, git_commit, machine

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out"
DB_NAME = "cairn_bench"
SOURCES = ("confluence", "sharepoint", "slack")
KINDS = ("event_to_searchable", "revocation_to_enforced", "grant")
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def log(msg: str) -> None:
    print(f"[bench] {msg}", flush=True)


def unique_token() -> str:
    """A made-up lower-case word: the lexical index finds it and nothing else contains it."""
    n = uuid.uuid4().int
    return "zq" + "".join(LETTERS[(n >> (5 * i)) % 26] for i in range(10))


def pct(xs: list[float], p: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    # Linear interpolation between closest ranks (numpy's default).
    k = (len(s) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return round(s[lo] + (s[hi] - s[lo]) * (k - lo), 4)


# ------------------------------------------------------------------ generated source content (--items)

WORDS = (
    "budget forecast roadmap incident review onboarding release migration quarterly policy vendor "
    "contract invoice latency outage rollout hiring security audit design spec backlog sprint retro "
    "customer renewal pricing launch training compliance storage network database cache deploy"
).split()


def generated_text(rng: Any, k: int, words: int = 14) -> str:
    """A short deterministic text (one chunk) for the ``k``-th generated item."""
    return f"Item {k}: " + " ".join(rng.choice(WORDS) for _ in range(words)) + "."


def acl_kind(rng: Any) -> str:
    """The realistic mix of a generated item's permission: 55 % open, 30 % a group, 15 % named users."""
    x = rng.random()
    return "open" if x < 0.55 else "group" if x < 0.85 else "users"


def timed_syncs(people: People, instance: Any, modes: tuple[str, ...]) -> dict[str, float]:
    """Like ``request_syncs``, with each mode's wall time (request until done and drained)."""
    out: dict[str, float] = {}
    for mode in modes:
        t0 = time.perf_counter()
        request_syncs(people, instance, (mode,), timeout=4 * 3600)
        out[f"{mode}_sync_s"] = round(time.perf_counter() - t0, 2)
    return out


# ------------------------------------------------------------------ processes


class Services(BenchServices):
    """The embedded stack (or the external one from the environment), a worker and gunicorn."""

    def __init__(self, log_dir: Path) -> None:
        super().__init__(log_dir, "connector_latency", log)

    def start(self) -> None:
        self.start_stack(DB_NAME)
        self.spawn("worker", [sys.executable, "-m", "celery", "-A", "cairn", "worker",
                              "-Q", "ingest,permissions,answers", "-c", "2", "--loglevel", "WARNING",
                              "-n", f"bench-{uuid.uuid4().hex[:6]}@%h"])  # fmt: skip
        port = free_port()
        self.spawn("web", [sys.executable, "-m", "gunicorn", "cairn.wsgi:application", "-b", f"127.0.0.1:{port}",
                           "-k", "gthread", "-w", "1", "--threads", "4", "--timeout", "120"])  # fmt: skip
        self.base_url = f"http://127.0.0.1:{port}"
        self.wait_ready(180)


# ------------------------------------------------------------------ the tenant and its people


@dataclass
class People:
    tenant_id: int
    users: dict[str, Any]
    tokens: dict[str, str]


def make_people() -> People:
    from tenants.actions import do_add_member, do_create_api_token, do_create_tenant, do_create_user

    tag = uuid.uuid4().hex[:6]
    tenant = do_create_tenant(f"bench-{tag}", "Latency bench")
    users, tokens = {}, {}
    for name, role in (("alice", "admin"), ("bob", "member"), ("carol", "member"), ("gail", "member")):
        username = f"{name}-{tag}"
        user = do_create_user(username, f"{username}@example.com", "pw-" + username, email_verified=True)
        users[name] = user
        tokens[name] = do_create_api_token(do_add_member(tenant, user, role=role))
    return People(tenant.pk, users, tokens)


# ------------------------------------------------------------------ HTTP + polling


@dataclass
class Api:
    base_url: str
    session: Any = field(default=None)

    def __post_init__(self) -> None:
        import requests

        self.session = requests.Session()

    def search(self, token: str, q: str, limit: int = 50) -> list[dict[str, Any]]:
        resp = self.session.get(f"{self.base_url}/api/v1/search", params={"q": q, "limit": limit},
                                headers={"Authorization": f"Bearer {token}"}, timeout=30)  # fmt: skip
        if resp.status_code == 429:  # our own polling hit the per-user rate limit: back off, keep going
            time.sleep(float(resp.headers.get("Retry-After", "1")))
            return self.search(token, q, limit)
        resp.raise_for_status()
        return list(resp.json()["results"])

    def post(self, path: str, *, data: bytes, headers: dict[str, str] | None = None) -> Any:
        resp = self.session.post(f"{self.base_url}{path}", data=data, timeout=30,
                                 headers={"Content-Type": "application/json", **(headers or {})})  # fmt: skip
        if resp.status_code >= 300:
            raise RuntimeError(f"POST {path.split('?')[0]} -> {resp.status_code} {resp.text[:300]}")
        return resp

    def request_sync(self, admin_token: str, instance_pk: int, mode: str) -> None:
        self.post(f"/api/v1/connectors/{instance_pk}/sync", data=json.dumps({"mode": mode}).encode(),
                  headers={"Authorization": f"Bearer {admin_token}"})  # fmt: skip


def found(results: list[dict[str, Any]], *, token: str | None = None, document_id: int | None = None) -> bool:
    for r in results:
        if document_id is not None and r.get("document_id") == document_id:
            return True
        if token is not None and token in f"{r.get('title') or ''} {r.get('snippet') or ''}".lower():
            return True
    return False


def wait_until(check: Callable[[], bool], *, poll: float, timeout: float, what: str) -> float:
    """Seconds from now until ``check()`` holds (polled every ``poll`` s)."""
    t0 = time.perf_counter()
    while True:
        if check():
            return time.perf_counter() - t0
        if time.perf_counter() - t0 > timeout:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(poll)


def measure(deliver: Callable[[], None], check: Callable[[], bool], *, poll: float, timeout: float,
            what: str) -> float:  # fmt: skip
    t0 = time.perf_counter()
    deliver()
    wait_until(check, poll=poll, timeout=timeout, what=what)
    return time.perf_counter() - t0


def wait_for_syncs(people: People, instance: Any, modes: tuple[str, ...], timeout: float = 600) -> None:
    """Until the worker finished ``modes`` of ``instance`` and drained every ingest event."""
    from connectors.models import SyncState
    from retrieval.models import IngestEvent
    from tenants.context import tenant_context

    deadline = time.time() + timeout
    while time.time() < deadline:
        with tenant_context(people.tenant_id):
            states = {s.mode: s for s in SyncState.objects.filter(instance=instance, mode__in=modes)}
            pending = IngestEvent.objects.filter(status=IngestEvent.Status.PENDING).exists()
        for s in states.values():
            if s.status == SyncState.Status.FAILED:
                raise RuntimeError(f"{instance.kind} {s.mode} sync failed: {s.last_error} ({s.last_error_item})")
        if (
            len(states) == len(modes)
            and all(s.status == SyncState.Status.DONE for s in states.values())
            and not pending
        ):
            return
        time.sleep(0.5)
    raise TimeoutError(f"{instance.kind} syncs {modes} not done within {timeout:.0f} s")


def request_syncs(people: People, instance: Any, modes: tuple[str, ...], timeout: float = 600) -> None:
    from connectors.actions import do_request_sync
    from tenants.context import tenant_context

    for mode in modes:
        with tenant_context(people.tenant_id):
            do_request_sync(instance, mode)
        wait_for_syncs(people, instance, (mode,), timeout=timeout)


def permission_run_acl_events(people: People, instance: Any) -> int:
    """``acl`` ingest events queued by the instance's latest permission run (their ids carry its run id)."""
    from connectors.models import SyncState
    from retrieval.models import IngestEvent
    from tenants.context import tenant_context

    with tenant_context(people.tenant_id):
        run_id = SyncState.objects.get(instance=instance, mode="permission").run_id
        return IngestEvent.objects.filter(source_id=instance.source_id, kind="acl",
                                          event_id__startswith=f"acl:{run_id}:").count()  # fmt: skip


def document(people: People, instance: Any, external_id: str) -> Any:
    from retrieval.models import Document
    from tenants.context import tenant_context

    with tenant_context(people.tenant_id):
        return Document.objects.get(source_id=instance.source_id, external_id=external_id)


# ------------------------------------------------------------------ sources


Samples = dict[str, list[float]]


@contextmanager
def confluence_source(
    people: People, api: Api, work: Path, *, items: int = 0, seed: int = 15, report: dict[str, Any] | None = None
) -> Iterator[Callable[[int, Samples, float, float], None]]:
    import copy
    import random

    from core.crypto import decrypt_text
    from tenants.context import tenant_context
    from tests.connectors.confluence.fake_confluence import TOKEN as CONFLUENCE_TOKEN
    from tests.connectors.confluence.fake_confluence import FakeConfluence
    from tests.connectors.confluence.helpers import ALICE, BOB, CAROL
    from tests.connectors.integration.helpers import make_instance, map_identities, tiny_docx, tiny_pdf

    site = FakeConfluence()
    site.blobs["/wiki/download/attachments/101/runbook.pdf"] = tiny_pdf("Runbook for the on-call rotation")
    site.blobs["/wiki/download/attachments/106/notes.docx"] = tiny_docx("Bob private notes on the quarterly review")
    report = {} if report is None else report
    if items:
        report.update(seed_confluence(site, items, random.Random(seed)))
    site.start()
    try:
        instance = make_instance(people.tenant_id, "confluence", f"wiki-{uuid.uuid4().hex[:6]}",
                                 # --items: the connector's default page size (100), not 25.
                                 {"site_url": site.url, "page_size": 100 if items else 25},
                                 {"email": "svc@acme.example", "api_token": CONFLUENCE_TOKEN})  # fmt: skip
        map_identities(people.tenant_id, {ALICE: people.users["alice"], BOB: people.users["bob"],
                                          CAROL: people.users["carol"]})  # fmt: skip
        with tenant_context(people.tenant_id):
            secret = decrypt_text(instance.webhook_secret_encrypted)
        report.update(timed_syncs(people, instance, ("permission", "full")))
        log(f"confluence: initial permission + full sync done (worker): {report}")
        alice_account = ALICE.split(":", 2)[2]

        def add_page(page_id: str, title: str, text: str) -> None:
            # A copy of page 107 (space ENG, child of 101, restricted to the group engineering:
            # alice and bob read it), as Confluence would serve a newly created page.
            with site._lock:
                j = site.json
                page = copy.deepcopy(j["/wiki/api/v2/pages/107"])
                page.update(id=page_id, title=title, position=int(page_id))
                page["version"] = {**page["version"], "number": 1,
                                   "createdAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")}  # fmt: skip
                page["body"]["storage"]["value"] = f"<h2>{title}</h2><p>{text}</p>"
                page["_links"] = {**page["_links"], "webui": f"/spaces/ENG/pages/{page_id}/Bench"}
                base = "/wiki/api/v2/pages"
                j[f"{base}/{page_id}"] = page
                j[f"{base}/{page_id}/ancestors"] = copy.deepcopy(j[f"{base}/107/ancestors"])
                j[f"{base}/{page_id}/attachments"] = copy.deepcopy(j[f"{base}/107/attachments"])
                restriction = copy.deepcopy(j["/wiki/rest/api/content/107/restriction/byOperation/read"])
                restriction["_expandable"] = {"content": f"/rest/api/content/{page_id}"}
                j[f"/wiki/rest/api/content/{page_id}/restriction/byOperation/read"] = restriction
                listing = j[f"/wiki/api/v2/spaces/{page['spaceId']}/pages"]["results"]
                listing.append({k: v for k, v in page.items() if k != "body"})

        def restrict_to_alice(page_id: str) -> None:
            with site._lock:
                r = site.json[f"/wiki/rest/api/content/{page_id}/restriction/byOperation/read"]["restrictions"]
                r["user"].update(results=[{"type": "known", "accountId": alice_account}], size=1)
                r["group"].update(results=[], size=0)

        def run(i: int, samples: Samples, poll: float, timeout: float) -> None:
            token = unique_token()
            page_id = str(900000 + i)
            add_page(page_id, f"Bench page {token}", f"The {token} procedure is described here.")
            body = json.dumps({"userAccountId": BOB.split(":", 2)[2], "accountType": "customer",
                               "timestamp": int(time.time() * 1000),
                               "page": {"id": int(page_id), "spaceKey": "ENG", "version": 1}}).encode()  # fmt: skip
            hook = f"/hooks/confluence/{instance.hook_uuid}/page_created?secret={secret}"
            samples["event_to_searchable"].append(measure(
                lambda: api.post(hook, data=body),
                lambda: found(api.search(people.tokens["bob"], token), token=token),
                poll=poll, timeout=timeout, what=f"confluence page {page_id} searchable"))  # fmt: skip
            doc = document(people, instance, f"page:{page_id}")
            restrict_to_alice(page_id)
            requests_before = len(site.requests)
            samples["revocation_to_enforced"].append(measure(
                lambda: api.request_sync(people.tokens["alice"], instance.pk, "permission"),
                lambda: not found(api.search(people.tokens["bob"], token), document_id=doc.pk),
                poll=poll, timeout=timeout, what=f"confluence page {page_id} hidden from bob"))  # fmt: skip
            # The permission sync may still be finishing (other pages): let it end before the next sample.
            wait_for_syncs(people, instance, ("permission",))
            # What that permission run cost: requests to the fake site, and acl ingest events it queued.
            walk = report.setdefault("permission_runs", [])
            walk.append({"site_requests": len(site.requests) - requests_before,
                         "acl_events": permission_run_acl_events(people, instance)})  # fmt: skip
            assert found(api.search(people.tokens["alice"], token), document_id=doc.pk), "alice lost her page"

        yield run
    finally:
        site.stop()


@contextmanager
def sharepoint_source(
    people: People,
    api: Api,
    work: Path,
    *,
    identical: bool = False,
    revocation: str = "delta",
    items: int = 0,
    seed: int = 15,
    report: dict[str, Any] | None = None,
) -> Iterator[Callable[[int, Samples, float, float], None]]:
    import random

    from core.crypto import decrypt_text
    from tenants.context import tenant_context
    from tests.connectors.integration.helpers import make_instance, map_identities, tiny_pdf
    from tests.connectors.sharepoint.fake_graph import (
        CLIENT_SECRET,
        FakeGraph,
        write_app_certificate,
        write_self_signed_cert,
    )

    docs, subscription = "b!docs", "sub-docs-1"
    tls = work / "graph-tls"
    tls.mkdir(parents=True, exist_ok=True)
    cert = write_self_signed_cert(tls)
    app_pem, _ = write_app_certificate(tls)  # SharePoint REST (site groups) needs certificate auth
    graph = FakeGraph(*cert)
    graph.register_certificate(app_pem)
    # As in the end-to-end test: fixture file bodies are placeholders; give the pipeline real bytes.
    fixture_items = {i["id"]: i for i in graph.site["drive_items"][docs]}
    fixture_items["i-handbook"]["content"] = tiny_pdf("Employee handbook for the finance team").decode("ascii")
    fixture_items["i-budget"]["file"] = {"mimeType": "text/plain"}
    fixture_items["i-notes"]["file"] = {"mimeType": "text/plain"}
    report = {} if report is None else report
    if items:
        report.update(seed_sharepoint(graph, docs, items, random.Random(seed)))
    graph.start()
    try:
        instance = make_instance(
            people.tenant_id, "sharepoint", f"finance-{uuid.uuid4().hex[:6]}",
            graph.connector_config(sharepoint_base_url=graph.base, subscriptions={subscription: docs}),
            {"client_secret": CLIENT_SECRET, "client_certificate": app_pem}, tls_ca_file=str(cert[0]),
        )  # fmt: skip
        map_identities(people.tenant_id, {"entra:user:u-alice": people.users["alice"],
                                          "entra:user:u-bob": people.users["bob"],
                                          "entra:user:u-carol": people.users["carol"],
                                          "entra:user:u-gail": people.users["gail"]})  # fmt: skip
        with tenant_context(people.tenant_id):
            secret = decrypt_text(instance.webhook_secret_encrypted)
        report.update(timed_syncs(people, instance, ("permission", "full")))
        log(f"sharepoint: initial permission + full sync done (worker): {report}")
        change = {"subscriptionId": subscription, "tenantId": graph.tenant_id, "changeType": "updated",
                  "resource": f"drives/{docs}/root", "subscriptionExpirationDateTime": "2099-01-01T00:00:00Z",
                  "clientState": secret}  # fmt: skip
        hook = f"/hooks/sharepoint/{instance.hook_uuid}/notifications"

        def run(i: int, samples: Samples, poll: float, timeout: float) -> None:
            token = unique_token()
            item_id = f"i-bench-{i}"
            # Shared with the AAD group Finance (alice directly, bob through the nested group) and,
            # for the delta path, through an organization link (what the revocation removes).
            perms = [{"id": "p-fin", "roles": ["read"], "grantedToV2": {"group": {"id": "g-finance"}}}]
            if revocation == "delta":
                perms = [
                    {"id": "p-alice", "roles": ["read"], "grantedToV2": {"user": {"id": "u-alice"}}},
                    {"id": "p-link", "roles": ["read"], "link": {"scope": "organization", "type": "view"}},
                ]
            graph.add_file(docs, {"id": item_id, "name": f"bench-{token}.txt", "file": {"mimeType": "text/plain"},
                                  "content": f"The {token} forecast moves to the second Friday.",
                                  "permissions": perms})  # fmt: skip
            # Graph's driveItem notifications carry no id: two changes to one drive give byte-identical
            # bodies, and the hook view dedupes on the body (its InboundEvent id is a hash of it), so a
            # repeat would be dropped as a retry and no delta would run.  Unless --sharepoint-identical
            # reproduces that, each sample's expiry differs (as after a subscription renewal).
            expiry = "2099-01-01T00:00:00Z" if identical else f"2099-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z"
            body = json.dumps({"value": [{**change, "subscriptionExpirationDateTime": expiry}]}).encode()
            samples["event_to_searchable"].append(measure(
                lambda: api.post(hook, data=body),
                lambda: found(api.search(people.tokens["bob"], token), token=token),
                poll=poll, timeout=timeout, what=f"sharepoint {item_id} searchable"))  # fmt: skip
            # The notification's delta run may still be finishing: let it end first.
            wait_for_syncs(people, instance, ("incremental",))
            doc = document(people, instance, f"driveitem:{docs}:{item_id}")
            alice_only = [{"id": "p-alice", "roles": ["read"], "grantedToV2": {"user": {"id": "u-alice"}}}]
            if revocation == "delta":
                # The organization link is removed: a sharing-only change that Graph delta reports
                # (Prefer: deltashowsharingchanges, Sites.FullControl.All); the next notification's
                # delta run gives the file a fresh ACL.
                rexpiry = f"2098-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z"
                rbody = json.dumps({"value": [{**change, "subscriptionExpirationDateTime": rexpiry}]}).encode()

                def deliver() -> None:
                    graph.set_sharing(docs, item_id, alice_only)
                    api.post(hook, data=rbody)

                modes: tuple[str, ...] = ("incremental",)
            else:
                with graph._lock:  # a sharing change the delta path does not see here
                    graph._item(docs, item_id)["permissions"] = alice_only

                def deliver() -> None:
                    api.request_sync(people.tokens["alice"], instance.pk, "permission")

                modes = ("permission",)
            samples["revocation_to_enforced"].append(measure(
                deliver, lambda: not found(api.search(people.tokens["bob"], token), document_id=doc.pk),
                poll=poll, timeout=timeout, what=f"sharepoint {item_id} hidden from bob"))  # fmt: skip
            wait_for_syncs(people, instance, modes)
            assert found(api.search(people.tokens["alice"], token), document_id=doc.pk), "alice lost her file"

        yield run
    finally:
        graph.stop()


@contextmanager
def slack_source(
    people: People, api: Api, work: Path, *, items: int = 0, seed: int = 15, report: dict[str, Any] | None = None
) -> Iterator[Callable[[int, Samples, float, float], None]]:
    import random

    from connectors.slack.events import sign
    from tests.connectors.integration.helpers import make_instance, map_identities
    from tests.connectors.slack.fake_slack import TOKEN, FakeSlack, FakeSlackServer

    signing_secret = "bench-signing-secret"
    fake = FakeSlack()
    report = {} if report is None else report
    if items:
        report.update(seed_slack(fake, items, random.Random(seed)))
    with FakeSlackServer(fake) as server:
        instance = make_instance(
            people.tenant_id, "slack", f"slack-{uuid.uuid4().hex[:6]}",
            {"base_url": server.base_url, "team_id": "T0CAIRN"},
            {"token": TOKEN, "signing_secret": signing_secret},
        )  # fmt: skip
        map_identities(people.tenant_id, {"slack:user:U0ALICE": people.users["alice"],
                                          "slack:user:U0BOB": people.users["bob"],
                                          "slack:user:U0CAROL": people.users["carol"],
                                          "slack:user:U0GAIL": people.users["gail"]})  # fmt: skip
        report.update(timed_syncs(people, instance, ("permission", "full")))
        log(f"slack: initial permission + full sync done (worker): {report}")
        hook = f"/hooks/slack/{instance.hook_uuid}/events"
        # gail, a guest, reads the public channel C0PROJ only while she is a member of it.
        proj = document(people, instance, "msg:C0PROJ:1717000600.000900")
        proj_query = (proj.title or proj.text)[:200]
        if not found(api.search(people.tokens["gail"], proj_query), document_id=proj.pk):
            raise RuntimeError("slack set-up: gail does not read the C0PROJ message before the benchmark")

        def deliver(event: dict[str, Any]) -> Callable[[], None]:
            now = int(time.time())
            payload = {"token": "XXYYZZ", "team_id": "T0CAIRN", "api_app_id": "A0CAIRN", "type": "event_callback",
                       "event_id": "Ev" + uuid.uuid4().hex[:12].upper(), "event_time": now,
                       "event": {"team": "T0CAIRN", **event}}  # fmt: skip

            def post() -> None:
                body = json.dumps(payload).encode()
                ts = str(int(time.time()))
                api.post(hook, data=body, headers={"X-Slack-Request-Timestamp": ts,
                                                   "X-Slack-Signature": sign(signing_secret, ts, body)})  # fmt: skip

            return post

        def run(i: int, samples: Samples, poll: float, timeout: float) -> None:
            token = unique_token()
            ts = f"{int(time.time())}.{i:06d}"
            message = {"type": "message", "user": "U0BOB", "text": f"The {token} rollout starts at nine", "ts": ts}
            server.fake.post("C0GENERAL", dict(message))
            samples["event_to_searchable"].append(measure(
                deliver({**message, "channel": "C0GENERAL", "channel_type": "channel", "event_ts": ts}),
                lambda: found(api.search(people.tokens["bob"], token), token=token),
                poll=poll, timeout=timeout, what=f"slack message {ts} searchable"))  # fmt: skip
            wait_for_syncs(people, instance, ("incremental",))

            event_ts = f"{time.time():.6f}"
            server.fake.remove_member("C0PROJ", "U0GAIL")
            samples["revocation_to_enforced"].append(measure(
                deliver({"type": "member_left_channel", "user": "U0GAIL", "channel": "C0PROJ", "channel_type": "C",
                         "event_ts": event_ts}),
                lambda: not found(api.search(people.tokens["gail"], proj_query), document_id=proj.pk),
                poll=poll, timeout=timeout, what="slack C0PROJ hidden from gail"))  # fmt: skip
            wait_for_syncs(people, instance, ("incremental",))

            server.fake.add_member("C0PROJ", "U0GAIL")
            samples["grant"].append(measure(
                deliver({"type": "member_joined_channel", "user": "U0GAIL", "channel": "C0PROJ",
                         "channel_type": "C", "event_ts": f"{time.time():.6f}"}),
                lambda: found(api.search(people.tokens["gail"], proj_query), document_id=proj.pk),
                poll=poll, timeout=timeout, what="slack C0PROJ visible to gail again"))  # fmt: skip
            wait_for_syncs(people, instance, ("incremental",))

        yield run


def seed_confluence(site: Any, n: int, rng: Any) -> dict[str, Any]:
    """``n`` generated pages in the space ENG (children of 101, like page 107), before the first sync."""
    import copy

    from tests.connectors.confluence.helpers import ALICE, BOB

    mix = {"open": 0, "group": 0, "users": 0}
    users = [{"type": "known", "accountId": a.split(":", 2)[2]} for a in (ALICE, BOB)]
    base = "/wiki/api/v2/pages"
    with site._lock:
        j = site.json
        template = j[f"{base}/107"]
        restriction_template = j["/wiki/rest/api/content/107/restriction/byOperation/read"]
        listing = j[f"/wiki/api/v2/spaces/{template['spaceId']}/pages"]["results"]
        for k in range(n):
            page_id = str(200000 + k)
            title = f"Generated page {k}"
            page = copy.deepcopy(template)
            page.update(id=page_id, title=title, position=200000 + k)
            page["body"]["storage"]["value"] = f"<h2>{title}</h2><p>{generated_text(rng, k)}</p>"
            page["_links"] = {**page["_links"], "webui": f"/spaces/ENG/pages/{page_id}/Generated"}
            j[f"{base}/{page_id}"] = page
            j[f"{base}/{page_id}/ancestors"] = copy.deepcopy(j[f"{base}/107/ancestors"])
            j[f"{base}/{page_id}/attachments"] = copy.deepcopy(j[f"{base}/107/attachments"])
            restriction = copy.deepcopy(restriction_template)
            restriction["_expandable"] = {"content": f"/rest/api/content/{page_id}"}
            kind = acl_kind(rng)
            mix[kind] += 1
            r = restriction["restrictions"]
            if kind != "group":  # the template is restricted to the group engineering
                r["group"].update(results=[], size=0)
            if kind == "users":
                r["user"].update(results=copy.deepcopy(users), size=len(users))
            j[f"/wiki/rest/api/content/{page_id}/restriction/byOperation/read"] = restriction
            listing.append({key: value for key, value in page.items() if key != "body"})
    return {"generated_items": n, "acl_mix": {"unrestricted": mix["open"], "group engineering": mix["group"],
                                             "users alice+bob": mix["users"]}}  # fmt: skip


def seed_sharepoint(graph: Any, drive: str, n: int, rng: Any) -> dict[str, Any]:
    """``n`` generated text files at the drive's root, before the first sync.

    The fake pages every Graph listing by 2 (to exercise paging in tests); at this size by 200. Graph
    picks the page size itself and documents only the ``@odata.nextLink`` paging
    (https://learn.microsoft.com/en-us/graph/api/driveitem-delta), so 200 is a realistic size, not a
    documented one.
    """
    from tests.connectors.sharepoint import fake_graph

    fake_graph.PAGE_SIZE = 200
    mix = {"open": 0, "group": 0, "users": 0}
    for k in range(n):
        kind = acl_kind(rng)
        mix[kind] += 1
        if kind == "open":
            perms = [{"id": f"p-gen-{k}", "roles": ["read"], "link": {"scope": "organization", "type": "view"}}]
        elif kind == "group":
            perms = [{"id": f"p-gen-{k}", "roles": ["read"], "grantedToV2": {"group": {"id": "g-finance"}}}]
        else:
            perms = [{"id": f"p-gen-{k}-{u}", "roles": ["read"], "grantedToV2": {"user": {"id": f"u-{u}"}}}
                     for u in ("alice", "bob")]  # fmt: skip
        graph.add_file(drive, {"id": f"i-gen-{k}", "name": f"generated-{k:05d}.txt", "file": {"mimeType": "text/plain"},
                               "content": generated_text(rng, k), "permissions": perms})  # fmt: skip
    return {"generated_items": n, "fake_graph_page_size": fake_graph.PAGE_SIZE,
            "acl_mix": {"organization link": mix["open"], "group Finance": mix["group"],
                        "users alice+bob": mix["users"]}}  # fmt: skip


def seed_slack(fake: Any, n: int, rng: Any) -> dict[str, Any]:
    """``n`` generated messages: public #general, public #project-x (gail's, the revocation's), private."""
    channels = {"open": "C0GENERAL", "group": "C0PROJ", "users": "C0SECRET"}
    mix = {c: 0 for c in channels.values()}
    authors = {"C0GENERAL": ["U0ALICE", "U0BOB", "U0CAROL"], "C0PROJ": ["U0ALICE", "U0GAIL"],
               "C0SECRET": ["U0ALICE", "U0CAROL"]}  # fmt: skip
    with fake.lock:
        for k in range(n):
            channel = channels[acl_kind(rng)]
            mix[channel] += 1
            fake.post(channel, {"type": "message", "user": rng.choice(authors[channel]),
                                "text": generated_text(rng, k), "ts": f"{1717100000 + k}.{k % 1000000:06d}"})  # fmt: skip
    return {"generated_items": n, "messages_per_channel": {"C0GENERAL (public)": mix["C0GENERAL"],
                                                           "C0PROJ (public, gail)": mix["C0PROJ"],
                                                           "C0SECRET (private)": mix["C0SECRET"]}}  # fmt: skip


SOURCE_SETUP = {"confluence": confluence_source, "sharepoint": sharepoint_source, "slack": slack_source}


# ------------------------------------------------------------------ report


def summarise(results: dict[str, Samples]) -> dict[str, dict[str, dict[str, Any]]]:
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for source, kinds in results.items():
        out[source] = {}
        for kind, xs in kinds.items():
            if xs:
                out[source][kind] = {"n": len(xs), "p50_s": pct(xs, 50), "p95_s": pct(xs, 95),
                                     "min_s": round(min(xs), 4), "max_s": round(max(xs), 4)}  # fmt: skip
    return out


def plot(results: dict[str, Samples], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, data = [], []
    for source, kinds in results.items():
        for kind in KINDS:
            if kinds.get(kind):
                labels.append(source + "\n" + kind.replace("_to_", " →\n"))
                data.append(kinds[kind])
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(data)), 5))
    if data:
        ax.boxplot(data, whis=(5, 95), showfliers=True)
        ax.set_xticks(range(1, len(labels) + 1), labels, fontsize=8)
    ax.set_ylabel("seconds (whiskers: p5–p95)")
    ax.set_title(title, fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def print_table(summary: dict[str, dict[str, dict[str, Any]]]) -> None:
    print(f"{'source':<11} {'kind':<24} {'n':>3} {'p50 s':>8} {'p95 s':>8} {'max s':>8}")
    for source, kinds in summary.items():
        for kind, s in kinds.items():
            print(f"{source:<11} {kind:<24} {s['n']:>3} {s['p50_s']:>8.2f} {s['p95_s']:>8.2f} {s['max_s']:>8.2f}")


def write_report(out: Path, meta: dict[str, Any], results: dict[str, Samples], errors: dict[str, str],
                 started: datetime) -> dict[str, dict[str, dict[str, Any]]]:  # fmt: skip
    """The JSON report of what has been measured so far (written after each source, and at the end)."""
    meta["machine"]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    meta["duration_s"] = round((datetime.now(UTC) - started).total_seconds(), 1)
    summary = summarise(results)
    report = {**meta, "summary": summary, "samples_s": {s: {k: [round(x, 4) for x in v] for k, v in kinds.items()}
                                                        for s, kinds in results.items()}, "errors": errors}  # fmt: skip
    out.write_text(json.dumps(report, indent=2) + "\n")
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=20, help="samples per source and kind")
    ap.add_argument("--sources", default=",".join(SOURCES), help="comma-separated subset of " + ",".join(SOURCES))
    ap.add_argument("--poll", type=float, default=0.1, help="search poll interval (s)")
    ap.add_argument("--timeout", type=float, default=180.0, help="give up on one sample after this many s")
    ap.add_argument("--out", type=Path, default=OUT / "connector_latency.json")
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--items", type=int, default=0,
                    help="seed each fake source with this many generated items (small texts, mixed ACLs) before"
                         " the initial full sync; 0 (default): the fixtures only")  # fmt: skip
    ap.add_argument("--seed", type=int, default=15, help="random seed of the generated items")
    ap.add_argument(
        "--sharepoint-identical",
        action="store_true",
        help="send byte-identical Graph notifications (as Graph does) instead of varying the expiry",
    )
    ap.add_argument(
        "--sharepoint-revocation",
        choices=("delta", "permission"),
        default="delta",
        help="SharePoint revocation path: a link removed + a change notification (delta with sharing changes),"
        " or item permissions narrowed + a requested permission sync",
    )
    args = ap.parse_args(argv)
    sources = [s.strip() for s in args.sources.split(",") if s.strip()]
    unknown = set(sources) - set(SOURCES)
    if unknown:
        ap.error(f"unknown sources: {sorted(unknown)}")

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cairn.settings")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    started = datetime.now(UTC)
    meta = {"date": started.isoformat(timespec="seconds"), "git_commit": git_commit(), "machine": machine(),
            "command": "python -m benchmarks.connector_latency " + " ".join(argv if argv is not None else sys.argv[1:]),
            "events": args.events, "items_per_source": args.items, "seed": args.seed,
            "poll_s": args.poll, "sources": sources,
            "sharepoint_identical_notifications": args.sharepoint_identical,
            "sharepoint_revocation": args.sharepoint_revocation,
            "web": "gunicorn cairn.wsgi (1 worker, gthread, 4 threads) on 127.0.0.1",
            "worker": "celery -A cairn worker -Q ingest,permissions,answers -c 2",
            "paths": {
                "confluence": {"event": "new page at the fake site + POST /hooks/confluence/<uuid>/page_created",
                               "revocation": "read restriction narrowed to alice + POST /api/v1/connectors/<id>/sync"
                                             " {mode: permission}; bob polls"},
                "sharepoint": {"event": "new file at the fake Graph + POST /hooks/sharepoint/<uuid>/notifications"
                                        " (delta run); each sample's subscriptionExpirationDateTime differs unless"
                                        " --sharepoint-identical (identical bodies are deduped by the hook view)",
                               "revocation": "--sharepoint-revocation delta (default): the file's organization link"
                                             " removed at the fake Graph + POST /hooks/sharepoint/<uuid>/notifications"
                                             " (delta with Prefer: deltashowsharingchanges); permission: item"
                                             " permissions narrowed to alice + POST /api/v1/connectors/<id>/sync"
                                             " {mode: permission}; bob polls"},
                "slack": {"event": "signed message event POST /hooks/slack/<uuid>/events (incremental drains inbox)",
                          "revocation": "signed member_left_channel (guest gail leaves C0PROJ); gail polls",
                          "grant": "signed member_joined_channel (gail back in C0PROJ)"},
            }}  # fmt: skip
    results: dict[str, Samples] = {}
    errors: dict[str, str] = {}
    initial_sync: dict[str, dict[str, Any]] = {}
    meta["initial_sync"] = initial_sync
    services = Services(args.out.parent)
    try:
        services.start()
        people = make_people()
        api = Api(services.base_url)
        # Warm the web process (Django, the query embedder) before the first timed request.
        api.search(people.tokens["alice"], "warm up")
        for source in sources:
            samples: Samples = {k: [] for k in KINDS}
            results[source] = samples
            try:
                with ExitStack() as stack:
                    options: dict[str, Any] = (
                        {"identical": args.sharepoint_identical, "revocation": args.sharepoint_revocation}
                        if source == "sharepoint"
                        else {}
                    )
                    initial_sync[source] = {}
                    options.update(items=args.items, seed=args.seed, report=initial_sync[source])
                    run = stack.enter_context(SOURCE_SETUP[source](people, api, args.out.parent, **options))
                    for i in range(args.events):
                        run(i, samples, args.poll, args.timeout)
                        log(f"{source} {i + 1}/{args.events}: " + ", ".join(
                            f"{k}={v[-1]:.2f}s" for k, v in samples.items() if v))  # fmt: skip
            except Exception as exc:  # one source failing must not lose the others' samples
                errors[source] = f"{type(exc).__name__}: {exc}"
                log(f"{source} FAILED: {errors[source]}")
            write_report(args.out, meta, results, errors, started)  # a run stopped later keeps these
    finally:
        services.stop()
    summary = write_report(args.out, meta, results, errors, started)
    if not args.no_plot:
        plot(
            results,
            args.out.with_suffix(".png"),
            f"Connector latency, {args.events} events/source, {meta['date']} ({meta['machine']['cpus']} CPUs)",
        )
    print_table(summary)
    log(f"wrote {args.out}" + ("" if args.no_plot else f" and {args.out.with_suffix('.png')}"))
    if errors:
        log(f"errors: {errors}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
