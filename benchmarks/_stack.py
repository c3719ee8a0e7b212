"""Shared by the benchmarks that run their own stack: ports, provenance, machine facts, and the
embedded services plus a Celery worker and gunicorn (connector_latency, load_soak).

The drills (fault_drill, sigkill_drill) start their processes their own way (own queues, log
files, process-group kills) and take only the small helpers from here.
"""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def git_commit() -> str:
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True)
        return sha.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def machine() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"platform": platform.platform(), "python": platform.python_version(), "cpu": cpu,
            "cpus": os.cpu_count(), "loadavg_at_start": loadavg()}  # fmt: skip


class BenchServices:
    """The embedded stack (or the external one from the environment), plus child processes."""

    def __init__(self, log_dir: Path, label: str, log: Callable[[str], None]) -> None:
        from cairn.stack import Stack

        self.stack = Stack()
        self.log_dir = log_dir
        self.label = label
        self.log = log
        self.base_url = ""

    def start_stack(self, db_name: str, env: dict[str, str] | None = None) -> None:
        """A fresh database (migrated as the owner role), an empty Redis, Django set up in this process."""
        self.stack.start_services(db_name, recreate_db=True)
        if not os.environ.get("DATABASE_URL"):
            self.log(f"migrating the {db_name} database (as the owner role)")
            self.stack.manage("migrate", "--noinput", "-v", "0", owner=True)
        if self.stack.redis is not None:
            # A recreated database restarts ids: cached permission sets and answers of an earlier
            # run would match new rows.
            import redis

            redis.Redis(unix_socket_path=str(self.stack.redis.socket)).flushall()
        self.stack.env.update(env or {})
        os.environ.update(self.stack.env)
        import django

        django.setup()

    def spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        out = open(self.log_dir / f"{self.label}.{name}.log", "wb")  # noqa: SIM115 - lives as long as the child
        proc = subprocess.Popen(argv, env=self.stack.env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip
        self.stack.children.append((name, proc))
        return proc

    def wait_ready(self, timeout: float) -> None:
        """Until a Celery worker answers a ping and gunicorn's /healthz is 200; a child that exits fails it."""
        import requests

        from cairn.celery import app

        deadline = time.time() + timeout
        worker_ok = web_ok = False
        while time.time() < deadline and not (worker_ok and web_ok):
            for name, proc in self.stack.children:
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited with {proc.returncode}; see {self.log_dir}")
            if not worker_ok:
                worker_ok = bool(app.control.ping(timeout=0.5))
            if not web_ok:
                try:
                    web_ok = requests.get(f"{self.base_url}/healthz", timeout=2).status_code == 200
                except requests.RequestException:
                    time.sleep(0.3)
        if not (worker_ok and web_ok):
            raise RuntimeError(
                f"not ready after {timeout:.0f} s (worker={worker_ok}, web={web_ok}); see {self.log_dir}"
            )
        self.log(f"worker and web ({self.base_url}) ready")

    def stop(self) -> None:
        self.stack.stop()
