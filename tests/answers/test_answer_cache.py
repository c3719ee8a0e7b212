"""Answer and retrieval caches are scoped by tenant + permission set and invalidated by version bumps,
also under concurrency against a real server (gunicorn, threads) with requests cancelled mid-flight."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest

from answers import engine
from retrieval.models import IndexState
from retrieval.permissions import permission_context
from tenants.context import tenant_context
from tests.support import ROOT, client_for, enqueue, grant_groups, ingest_inline, make_doc, source_for

VPN = (
    "The corporate VPN uses WireGuard. If the VPN disconnects repeatedly, restart the client and renew the certificate."
)
VPN2 = "The corporate VPN uses Tailscale since March. If the VPN disconnects repeatedly, sign in to Tailscale again."
QUESTION = "Which protocol does the VPN use?"


@pytest.fixture
def corpus(cast):
    src = source_for(cast.tenant_a)
    enqueue(cast.tenant_a, src, make_doc("vpn", VPN, [["confluence:group:it"]], title="VPN setup"))
    enqueue(cast.tenant_a, src, make_doc("pub", "The VPN help desk is open on weekdays.", [["public:tenant"]],
                                         title="Help desk"))  # fmt: skip
    grant_groups(cast.tenant_a, {"confluence:group:it": [cast.alice]})
    ingest_inline(cast.tenant_a.pk)
    cast.source = src
    return cast


def ask(token: str, question: str = QUESTION) -> dict:
    r = client_for(token).post("/api/v1/answers", {"question": question}, format="json")
    assert r.status_code == 200, r.content
    return r.json()


def test_two_users_with_different_permissions_get_different_cache_keys_and_answers(corpus) -> None:
    with tenant_context(corpus.tenant_a.pk):
        plan = engine.build_plan(QUESTION, datetime.now(UTC), engine.RequestFilters())
        state = IndexState.objects.first()
        keys = {u: engine.cache_key(permission_context(getattr(corpus, u)), plan, state, "answer")
                for u in ("alice", "bob", "carol")}  # fmt: skip
    assert keys["alice"] != keys["bob"]
    assert keys["bob"] == keys["carol"]  # same readable sets: sharing is correct, and cheap
    a1, b1 = ask(corpus.tokens["alice"]), ask(corpus.tokens["bob"])
    a2, b2 = ask(corpus.tokens["alice"]), ask(corpus.tokens["bob"])
    assert (a1["trace"]["cache"], b1["trace"]["cache"], a2["trace"]["cache"], b2["trace"]["cache"]) == (
        "miss", "miss", "hit", "hit")  # fmt: skip
    assert "WireGuard" in json.dumps(a2) and "WireGuard" not in json.dumps(b2)


def test_a_permission_change_and_a_sync_invalidate_cached_answers_and_search_results(corpus) -> None:
    assert ask(corpus.tokens["bob"])["trace"]["cache"] == "miss"
    assert ask(corpus.tokens["bob"])["trace"]["cache"] == "hit"
    s = client_for(corpus.tokens["bob"]).get("/api/v1/search", {"q": "VPN protocol"}).json()
    assert s["trace"]["cache"] == "miss" and all(r["title"] != "VPN setup" for r in s["results"])
    assert (
        client_for(corpus.tokens["bob"]).get("/api/v1/search", {"q": "VPN protocol"}).json()["trace"]["cache"] == "hit"
    )
    grant_groups(corpus.tenant_a, {"confluence:group:it": [corpus.alice, corpus.bob]})  # bumps acl_version
    after_grant = ask(corpus.tokens["bob"])
    assert after_grant["trace"]["cache"] == "miss" and "WireGuard" in json.dumps(after_grant["answer"])
    s = client_for(corpus.tokens["bob"]).get("/api/v1/search", {"q": "VPN protocol"}).json()
    assert s["trace"]["cache"] == "miss" and any(r["title"] == "VPN setup" for r in s["results"])
    assert ask(corpus.tokens["bob"])["trace"]["cache"] == "hit"
    enqueue(corpus.tenant_a, corpus.source, make_doc("vpn", VPN2, [["confluence:group:it"]], title="VPN setup",
                                                     version=2))  # fmt: skip
    ingest_inline(corpus.tenant_a.pk)  # a sync bumps index_version
    after_sync = ask(corpus.tokens["bob"])
    assert after_sync["trace"]["cache"] == "miss"
    assert "Tailscale" in json.dumps(after_sync["answer"]) and "WireGuard" not in json.dumps(after_sync)


# --------------------------------------------------------------------------- a real server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = _free_port()
    log = (
        open(ROOT / "test-artifacts" / "gunicorn-cache-test.log", "wb") if (ROOT / "test-artifacts").exists() else None
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "cairn.wsgi:application", "-b", f"127.0.0.1:{port}", "-k", "gthread",
         "--threads", "8", "-w", "1", "--timeout", "120"],
        cwd=ROOT, env=dict(os.environ), stdout=log or subprocess.DEVNULL, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError("gunicorn exited during start-up") from None
            time.sleep(0.3)
    yield f"127.0.0.1:{port}"
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def _post(host: str, path: str, token: str, body: dict, accept: str = "application/json") -> tuple[int, str]:
    conn = http.client.HTTPConnection(host, timeout=120)
    conn.request("POST", path, json.dumps(body), {"Authorization": f"Bearer {token}", "Accept": accept,
                                                   "Content-Type": "application/json"})  # fmt: skip
    r = conn.getresponse()
    text = r.read().decode()
    conn.close()
    return r.status, text


def _cancelled(host: str, token: str, *, stream: bool) -> None:
    """Send a request and hang up: before any byte of the answer, or after the first SSE event."""
    conn = http.client.HTTPConnection(host, timeout=120)
    path = "/api/v1/answers/stream" if stream else "/api/v1/answers"
    conn.request("POST", path, json.dumps({"question": QUESTION}), {"Authorization": f"Bearer {token}",
                                                                    "Content-Type": "application/json"})  # fmt: skip
    if stream:
        conn.getresponse().read(20)
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()


def test_concurrent_requests_from_differently_permitted_users_never_share_an_entry(corpus, server) -> None:
    alice, bob = corpus.tokens["alice"], corpus.tokens["bob"]
    jobs = []
    with ThreadPoolExecutor(max_workers=12) as pool:
        for i in range(4):
            jobs.append(("alice", pool.submit(_post, server, "/api/v1/answers", alice, {"question": QUESTION})))
            jobs.append(("bob", pool.submit(_post, server, "/api/v1/answers", bob, {"question": QUESTION})))
            pool.submit(_cancelled, server, bob if i % 2 else alice, stream=bool(i % 2))
        jobs.append(("alice", pool.submit(_post, server, "/api/v1/answers/stream", alice, {"question": QUESTION},
                                          "text/event-stream")))  # fmt: skip
        jobs.append(("bob", pool.submit(_post, server, "/api/v1/answers/stream", bob, {"question": QUESTION},
                                        "text/event-stream")))  # fmt: skip
        results = [(who, f.result()) for who, f in jobs]
    for who, (status, text) in results:
        assert status == 200, text
        assert ("WireGuard" in text) == (who == "alice"), (who, text[:500])
    # After the storm (and the hang-ups) the cache still answers each user with their own entry.
    for who in ("bob", "alice"):
        status, text = _post(server, "/api/v1/answers", corpus.tokens[who], {"question": QUESTION})
        body = json.loads(text)
        assert body["trace"]["cache"] == "hit" and ("WireGuard" in text) == (who == "alice")
