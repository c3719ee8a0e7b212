"""Browser tests: Debian's Chromium driven by Playwright against a real gunicorn serving Cairn.

The server is a subprocess on the embedded stack (same DATABASE_URL / REDIS_URL as the test
run), so every request goes through the real middleware, sessions, CSRF and RLS.  Playwright
never downloads a browser: it launches /usr/bin/chromium (installed by bin/cairn).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support import ROOT, enqueue, ingest_inline, make_doc, source_for, unique

# Playwright's sync API keeps an event loop in this thread; the test's own ORM calls are
# ordinary synchronous code, which Django would otherwise refuse next to a running loop.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ARTIFACTS = ROOT / "test-artifacts" / "ui"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def gunicorn(extra_env: dict[str, str] | None = None, log_name: str = "gunicorn.log") -> Iterator[str]:
    """A gunicorn serving Cairn on a free port; ``extra_env`` is operator configuration for this server only
    (an approved loopback endpoint: the test process's ``settings`` never reach the subprocess)."""
    port = _free_port()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, CAIRN_SECURE_COOKIES="0", CAIRN_DEBUG="0", **(extra_env or {}))
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    log = open(ARTIFACTS / log_name, "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "cairn.wsgi:application", "-b", f"127.0.0.1:{port}",
         "-w", "1", "--threads", "4", "--timeout", "120"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    try:
        while time.time() < deadline:
            try:
                urllib.request.urlopen(base + "/healthz", timeout=2)
                break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError(f"gunicorn exited during start-up; see test-artifacts/ui/{log_name}") from None
                time.sleep(0.3)
        else:
            raise RuntimeError("gunicorn did not answer /healthz within 60 s")
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="session")
def web_server() -> Iterator[str]:
    with gunicorn() as base:
        yield base


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run bin/cairn test (it installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    # A CSP violation or a script error is a failure of the page, not noise.
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.js_errors = errors  # type: ignore[attr-defined]
    yield pg
    context.close()


def shot(page: Any, name: str) -> Path:
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


@dataclass
class Org:
    tenant: Any
    admin: Any
    member: Any
    passwords: dict[str, str]


@pytest.fixture
def org() -> Org:
    """A tenant with an admin (alice) and a member (bob), and a small handbook both may read."""
    from tenants.actions import do_add_member, do_create_tenant, do_create_user

    tenant = do_create_tenant(unique("ui"), "Acme UI")
    users, passwords = {}, {}
    for name, role in (("alice", "admin"), ("bob", "member")):
        username = unique(name)
        passwords[username] = "pw-" + username
        user = do_create_user(username, f"{username}@example.com", passwords[username], email_verified=True)
        do_add_member(tenant, user, role=role)
        users[name] = user
    wiki = source_for(tenant, "handbook", "confluence")
    everyone = [["public:tenant"]]
    docs = [
        ("travel-booking", "Booking travel", "HANDBOOK",
         "Employees book travel through the travel desk at least fourteen days before departure. "
         "The travel desk books flights and hotels for every trip."),
        ("travel-hotels", "Hotel stays", "HANDBOOK",
         "Hotel stays are reimbursed up to the published per diem rate for the city."),
        ("hr-travel-leave", "Leave while travelling", "HR",
         "Employees who book travel during annual leave must tell their supervisor before departure. "
         "HR records the leave in the people system."),
    ]  # fmt: skip
    for ext, title, container, text in docs:
        enqueue(tenant, wiki, make_doc(ext, text, everyone, title=title, container=container))
    ingest_inline(tenant.pk)
    return Org(tenant, users["alice"], users["bob"], passwords)


def login(page: Any, base: str, user: Any, password: str) -> None:
    page.goto(base + "/login/")
    page.fill("#username", user.username)
    page.fill("#password", password)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/login" not in url)
