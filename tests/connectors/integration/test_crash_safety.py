"""Crash safety: SIGKILL a real Celery worker in the middle of a full sync, start another one,
and the end state equals an uninterrupted run's: nothing lost, nothing duplicated."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from cairn.celery import app
from connectors.actions import do_request_sync
from connectors.models import SyncState
from connectors.tasks import resume_stalled_syncs
from retrieval.models import Chunk, IngestEvent
from retrieval.tasks import process_pending_inline
from tenants.context import tenant_context
from tests.connectors.confluence.fake_confluence import TOKEN, FakeConfluence
from tests.connectors.confluence.helpers import ALICE, BOB, CAROL
from tests.connectors.integration.helpers import (
    documents,
    expected_table,
    make_instance,
    map_identities,
    table,
    tiny_docx,
    tiny_pdf,
)
from tests.connectors.integration.readers import READERS
from tests.support import ROOT, unique


def start_worker(queue: str) -> subprocess.Popen[bytes]:
    name = f"crash-{uuid.uuid4().hex[:6]}@%h"
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "cairn", "worker", "-Q", queue, "-c", "1", "--loglevel", "WARNING",
         "-n", name],
        cwd=ROOT, env={**os.environ, "CAIRN_CONNECTOR_QUEUE": queue}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    deadline = time.time() + 60
    while time.time() < deadline:
        if any(name.split("@")[0] in n for reply in app.control.ping(timeout=0.5) for n in reply):
            return proc
        assert proc.poll() is None, "worker exited during start-up"
    raise AssertionError("worker did not answer a ping")


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
        proc.wait(30)


@pytest.fixture
def slow_site() -> Iterator[FakeConfluence]:
    fake = FakeConfluence()
    fake.blobs["/wiki/download/attachments/101/runbook.pdf"] = tiny_pdf("Runbook for the on-call rotation")
    fake.blobs["/wiki/download/attachments/106/notes.docx"] = tiny_docx("Bob private notes on the quarterly review")
    respond = fake._respond

    def slow(*args: Any) -> Any:
        time.sleep(0.05)  # long enough that the kill lands mid-run
        return respond(*args)

    fake._respond = slow  # type: ignore[method-assign]
    fake.start()
    yield fake
    fake.stop()


def _state(tenant_id: int, pk: int) -> SyncState:
    with tenant_context(tenant_id):
        return SyncState.objects.get(pk=pk)


def test_it_resumes_a_killed_full_sync_and_ends_exactly_like_an_uninterrupted_run(cast, slow_site, settings) -> None:
    queue = unique("crash-q")
    settings.CAIRN = {**settings.CAIRN, "CONNECTOR_QUEUE": queue}
    tenant = cast.tenant_a.pk
    instance = make_instance(tenant, "confluence", unique("wiki"), {"site_url": slow_site.url, "page_size": 1},
                             {"email": "svc@acme.example", "api_token": TOKEN})  # fmt: skip
    map_identities(tenant, {ALICE: cast.alice, BOB: cast.bob, CAROL: cast.carol})
    worker = start_worker(queue)
    try:
        with tenant_context(tenant):
            state = do_request_sync(instance, "full")  # queued on commit to the worker's queue
        deadline = time.time() + 60
        while _state(tenant, state.pk).ops_applied < 4:
            assert time.time() < deadline, "the sync made no progress"
            time.sleep(0.05)
        stop(worker, signal.SIGKILL)
        killed = _state(tenant, state.pk)
        assert killed.status == "running" and killed.checkpoint
        assert 4 <= killed.ops_applied < 20  # really in the middle
    finally:
        stop(worker, signal.SIGKILL)

    worker = start_worker(queue)
    try:
        assert resume_stalled_syncs(stale_after_seconds=0) >= 1  # what beat does for abandoned runs
        deadline = time.time() + 120
        while _state(tenant, state.pk).status != "done":
            assert time.time() < deadline, _state(tenant, state.pk).last_error
            time.sleep(0.2)
    finally:
        stop(worker)
    process_pending_inline(tenant)

    docs = documents(tenant, instance)
    assert set(docs) == set(READERS)  # nothing lost
    with tenant_context(tenant):
        created = Counter(
            IngestEvent.objects.filter(source_id=instance.source_id, kind="upsert", outcome="created").values_list(
                "external_id", flat=True
            )
        )
        assert created and max(created.values()) == 1  # nothing written twice
        for doc in docs.values():
            ords = list(Chunk.objects.filter(document=doc).values_list("ord", flat=True))
            assert sorted(ords) == list(range(len(ords)))  # no duplicated chunks
    assert table(cast, docs) == expected_table(READERS)  # same readers as an uninterrupted run
