"""Test fixtures: real embedded Postgres/Redis (started by ``python -m cairn.stack test``).

Tests run against committed data in a database the stack created and
migrated for this run, connected as the non-owner app role; each test makes
its own tenants with unique names, so nothing needs flushing (the app role
could not TRUNCATE anyway).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import ROOT, Cast, make_cast

# Browser fixtures (web_server, browser, page, org) for tests/portal and tests/console.
pytest_plugins = ["tests.browser"]


@pytest.fixture(scope="session")
def django_db_setup() -> None:
    """The stack already created and migrated the test database (as the owner role)."""


@pytest.fixture(autouse=True)
def _db_access(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    with django_db_blocker.unblock():
        yield


@pytest.fixture
def cast() -> Cast:
    return make_cast()


@pytest.fixture(scope="module")
def module_cast(django_db_blocker: Any) -> Cast:
    """The same cast, shared by one module's tests: for read-only fixtures that ingest (ingesting once per
    module instead of once per test keeps the suite inside CI's limit). Tests using it must not change it."""
    with django_db_blocker.unblock():
        return make_cast()


# Module scope on purpose: a worker left running would race the in-process ingestion
# (`ingest_inline`) of later test modules over the same queued events.
@pytest.fixture(scope="module")
def celery_worker_process() -> Iterator[subprocess.Popen[bytes]]:
    """A real Celery worker process on the embedded broker."""
    from cairn.celery import app

    log = open(ROOT / "test-artifacts" / "celery-worker.log", "wb") if (ROOT / "test-artifacts").exists() else None
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "cairn", "worker", "-Q", "ingest,permissions,answers", "-c", "1",
         "--loglevel", "INFO", "-n", f"test-{uuid.uuid4().hex[:6]}@%h"],
        cwd=ROOT, env=dict(os.environ), stdout=log or subprocess.DEVNULL, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    deadline = time.time() + 60
    while time.time() < deadline:
        if app.control.ping(timeout=0.5):
            break
        if proc.poll() is not None:
            raise RuntimeError("celery worker exited during start-up")
    else:
        raise RuntimeError("celery worker did not answer a ping within 60 s")
    yield proc
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def pytest_configure(config: pytest.Config) -> None:
    # The secret canary (tests/security/secret_canary.py) watches the whole run: logs, responses, the database.
    from tests.security import secret_canary

    secret_canary.register(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    # Embedded servers started by drills in this process log their clean-up at exit, after pytest closed
    # the captured stream the console handler writes to: not an error of the product, so no traceback.
    import logging

    logging.raiseExceptions = False
