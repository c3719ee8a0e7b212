"""Peak RSS of the embedded stack while a suite runs.

The processes are found from the services this process is actually connected to, never by name
alone (other stacks may share the machine): the Postgres postmaster is the parent of our own
backend (``pg_backend_pid()``), the Redis server reports its ``process_id``; a Celery worker or a
gunicorn web process counts only when its environment names the same ``DATABASE_URL``.

Two figures per group: the sum of each process's ``VmHWM`` (its own peak; summing over-counts
shared buffers, so it is an upper bound) and the highest sum of ``VmRSS`` seen by a sampler
thread during the suite (what the group held at one moment).
"""

from __future__ import annotations

import os
import threading
from typing import Any, cast

import psutil


def _kb(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree(root: psutil.Process) -> list[psutil.Process]:
    try:
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def stack_processes() -> dict[str, list[psutil.Process]]:
    """{group: [processes]} for postgres, redis, celery_worker, web, evaluation_process."""
    from django.conf import settings
    from django.db import connection

    groups: dict[str, list[psutil.Process]] = {}
    try:
        with connection.cursor() as cur:
            cur.execute("SELECT pg_backend_pid()")
            backend = psutil.Process(int(cur.fetchone()[0]))
        postmaster = backend.parent()
        if postmaster is not None:
            groups["postgres"] = _tree(postmaster)
    except Exception:  # noqa: BLE001 - a remote database has no local processes
        pass
    try:
        import redis

        # cast: a synchronous client returns the INFO reply as a dict (the stub also allows an Awaitable)
        info = cast(dict[str, Any], redis.Redis.from_url(settings.REDIS_URL).info("server"))
        groups["redis"] = _tree(psutil.Process(int(info["process_id"])))
    except Exception:  # noqa: BLE001 - a remote Redis has no local process
        pass
    db_url = os.environ.get("DATABASE_URL", "")
    me = os.getpid()
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmd = " ".join(proc.info.get("cmdline") or [])
        kind = ("celery_worker" if "celery" in cmd and " worker" in cmd
                else "web" if "gunicorn" in cmd and "cairn.wsgi" in cmd else None)  # fmt: skip
        if kind is None or proc.pid == me:
            continue
        try:
            if db_url and proc.environ().get("DATABASE_URL") != db_url:
                continue
        except psutil.Error:
            continue
        groups.setdefault(kind, []).append(proc)
    groups["evaluation_process"] = [psutil.Process(me)]
    return groups


class PeakRss:
    """Samples the stack every ``interval`` seconds from ``start()`` to ``stop()``."""

    def __init__(self, interval: float = 0.5) -> None:
        self.interval = interval
        self.groups = stack_processes()
        self.peak_sum_kb: dict[str, int] = dict.fromkeys(self.groups, 0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="peak-rss")

    def _sample(self) -> None:
        for name, procs in self.groups.items():
            if name in ("postgres", "redis"):  # backends come and go: re-read the tree
                procs = _tree(procs[0]) if procs else []
                self.groups[name] = procs or self.groups[name]
            total = sum(_kb(p.pid, "VmRSS") for p in procs)
            self.peak_sum_kb[name] = max(self.peak_sum_kb[name], total)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def start(self) -> PeakRss:
        self._sample()
        self._thread.start()
        return self

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sample()
        out: dict[str, Any] = {}
        for name, procs in self.groups.items():
            hwm = [_kb(p.pid, "VmHWM") for p in procs]
            out[name] = {
                "processes": len(procs),
                "peak_rss_sampled_mb": round(self.peak_sum_kb[name] / 1024, 1),
                "sum_vmhwm_mb": round(sum(hwm) / 1024, 1),
                "max_process_vmhwm_mb": round(max(hwm, default=0) / 1024, 1),
            }
        for name in ("postgres", "redis", "celery_worker", "web"):
            out.setdefault(name, None)  # None: no such process in this run
        return out
