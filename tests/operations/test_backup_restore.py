"""Backup and restore with the documented commands; the restored database still keeps every secret.

The canary world of ``tests/security/test_canary_leaks.py`` (restricted, nested, single-user, empty and unknown
ACLs, a second and third tenant) plus a connector with canary credentials is built in a small database
of its own, backed up with ``python -m cairn.stack backup`` (embedded mode, as ``bin/cairn backup``),
and restored with ``python -m cairn.stack restore`` into a fresh database the way an external Postgres
is restored (an administrator created the empty database and the roles; the command runs as the owner
role).  Against the restored database: RLS is still enabled and forced on every tenant table with the
same policies, the app role owns nothing and is no superuser, the connector credentials still decrypt,
no canary secret sits in any clear column, Redis was flushed, and nobody finds a canary they may not
read through the search and answer APIs.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
import redis
from django.conf import settings
from django.core.management import call_command
from django.db import connection, connections
from django.test import override_settings
from rest_framework.test import APIClient

from connectors.models import ConnectorInstance
from core.crypto import decrypt_json
from tenants.audit import do_record_audit_event
from tenants.checks import check_rls_and_role, tenant_tables
from tenants.context import tenant_context
from tests.connectors.integration.helpers import make_instance
from tests.security.canary_world import build_world, generated_queries, without_query_echo
from tests.security.secret_canary import CANARY, Canary, scan_database, secret
from tests.support import ROOT

SUPERUSER_URL = os.environ.get("CAIRN_PG_SUPERUSER_URL", "")


def url_for(url: str, db: str) -> str:
    """The same server and role, another database (``postgresql://role@/db?host=...``)."""
    head, _, tail = url.partition("@/")
    name, sep, query = tail.partition("?")
    return f"{head}@/{db}{sep}{query}"


def role_of(url: str) -> str:
    return url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[0]


@pytest.fixture
def scratch() -> Iterator[Callable[[str], str]]:
    """Names of scratch databases in the test cluster, dropped afterwards."""
    if not SUPERUSER_URL:
        pytest.fail("needs the embedded stack's CAIRN_PG_SUPERUSER_URL (run through bin/cairn test)")
    made: list[str] = []

    def name(prefix: str) -> str:
        made.append(f"{prefix}_{uuid.uuid4().hex[:8]}")
        return made[-1]

    yield name
    connection.close()
    with psycopg.connect(SUPERUSER_URL, autocommit=True) as su:
        for db in made:
            su.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")


def cairn_stack(*args: str, env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-m", "cairn.stack", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def embedded_env(redis_url: str) -> dict[str, str]:
    """bin/cairn's environment: no DATABASE_URL, so the command uses the embedded cluster of
    CAIRN_DATA_DIR (already running here, so it attaches and leaves it running)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DATABASE_OWNER_URL")}
    env["REDIS_URL"] = redis_url
    return env


@contextmanager
def using_database(name: str) -> Iterator[None]:
    """Point this process's Django connection at another database of the same cluster.

    Retrieval legs run in the request thread (no pool threads holding connections to the test
    database) and the cache gets a fresh prefix, so every answer below comes from ``name``.
    """
    conn = connections["default"]
    old = conn.settings_dict["NAME"]
    conn.close()
    conn.settings_dict["NAME"] = name
    caches = {"default": {**settings.CACHES["default"], "KEY_PREFIX": f"restore-{uuid.uuid4().hex[:8]}"}}
    try:
        with override_settings(CAIRN={**settings.CAIRN, "RETRIEVAL_PARALLEL_LEGS": False}, CACHES=caches):
            yield
    finally:
        conn.close()
        conn.settings_dict["NAME"] = old


def security_state(db: str) -> dict[str, Any]:
    """What must survive a restore: forced RLS, the policies, table ownership, the audit triggers."""
    with psycopg.connect(url_for(SUPERUSER_URL, db)) as su:
        rls = su.execute(
            "SELECT relname, relrowsecurity AND relforcerowsecurity, pg_get_userbyid(relowner) FROM pg_class "
            "WHERE relname = ANY(%s) AND relkind = 'r'",
            [tenant_tables()],
        ).fetchall()
        policies = su.execute("SELECT tablename, policyname, qual FROM pg_policies ORDER BY 1, 2").fetchall()
        triggers = su.execute(
            "SELECT tgrelid::regclass::text, tgname FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1, 2"
        ).fetchall()
        grants = su.execute(
            "SELECT table_name, privilege_type FROM information_schema.role_table_grants WHERE grantee = %s "
            "ORDER BY 1, 2",
            [role_of(os.environ["DATABASE_URL"])],
        ).fetchall()
        default_acl = su.execute(
            "SELECT defaclrole::regrole::text, defaclobjtype::text, defaclacl::text FROM pg_default_acl ORDER BY 1, 2"
        ).fetchall()
    return {"rls": sorted(rls), "policies": policies, "triggers": triggers, "grants": grants,
            "default_acl": default_acl}  # fmt: skip


def test_a_restored_backup_keeps_rls_roles_credentials_and_every_canary_from_who_may_not_read_it(
    scratch: Callable[[str], str], tmp_path: Path
) -> None:
    source, restored = scratch("cairn_bk_src"), scratch("cairn_bk_dst")
    # A scratch Redis database: the restore's flush is checked on it, the suite's own stays untouched.
    redis_url = os.environ["REDIS_URL"] + ("&" if "?" in os.environ["REDIS_URL"] else "?") + "db=7"
    env = embedded_env(redis_url)

    # 1. A small database with the app's schema (restored from a schema-only dump, embedded mode).
    schema = tmp_path / "schema.dump"
    subprocess.run([_pg_bin("pg_dump"), "--schema-only", "--format=custom", "--file", str(schema),
                    "--dbname", url_for(SUPERUSER_URL, connection.settings_dict["NAME"])], check=True)  # fmt: skip
    cairn_stack("restore", str(schema), "--db", source, env=env)

    # 2. The canary world and a connector with canary credentials, in that database.
    with using_database(source):
        users, canaries = build_world()
        tenant_id = _tenant_of(users["alice"][0])
        credentials = {"token": secret("xoxb-backup"), "signing_secret": secret("backup-signing")}
        instance = make_instance(tenant_id, "slack", "Backed-up Slack", {"team_id": "T0BACKUP"}, credentials)
        with tenant_context(tenant_id):  # audit rows before the backup; the restored chain must continue
            for n in range(3):
                do_record_audit_event(actor=users["alice"][0], action="connector.tested", target_type="connector",
                                      target_id=instance.pk, details={"ok": n % 2 == 0})  # fmt: skip

    # 3. Back up with the documented command (embedded: the cluster's superuser dumps past forced RLS).
    backup = tmp_path / "cairn.dump"
    out = cairn_stack("backup", str(backup), "--db", source, env=env)
    assert backup.stat().st_size > 0 and "backup written" in out

    # 4. Restore it like an external Postgres: the administrator made the roles (they are cluster-wide)
    #    and an empty database exactly as docker/initdb.sql prepares one (pgvector, grants, the owner's
    #    default privileges); the command runs as the owner role.
    owner, app = role_of(os.environ["DATABASE_OWNER_URL"]), role_of(os.environ["DATABASE_URL"])
    with psycopg.connect(SUPERUSER_URL, autocommit=True) as su:
        su.execute(f"CREATE DATABASE {restored} OWNER {owner}")
    with psycopg.connect(url_for(SUPERUSER_URL, restored), autocommit=True) as su:
        for statement in ("CREATE EXTENSION vector", f"REVOKE ALL ON DATABASE {restored} FROM PUBLIC",
                          f"GRANT CONNECT, TEMPORARY ON DATABASE {restored} TO {app}",
                          f"GRANT CONNECT ON DATABASE {restored} TO {owner}",
                          f"GRANT USAGE ON SCHEMA public TO {app}",
                          f"ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public "
                          f"GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {app}",
                          f"ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public "
                          f"GRANT USAGE, SELECT ON SEQUENCES TO {app}"):  # fmt: skip
            su.execute(statement)
    flushed = redis.Redis.from_url(redis_url)
    flushed.set("cairn:stale-permission-set", "from before the restore")
    external = {**env, "DATABASE_URL": url_for(os.environ["DATABASE_URL"], restored),
                "DATABASE_OWNER_URL": url_for(os.environ["DATABASE_OWNER_URL"], restored)}  # fmt: skip
    cairn_stack("restore", str(backup), "--db", restored, env=external)
    assert flushed.get("cairn:stale-permission-set") is None

    # 5. The security model survived: same forced RLS, policies, triggers and grants; owned by the owner.
    # Compared with the migrated test database itself (the source is only a schema copy of it).
    before, after = security_state(connection.settings_dict["NAME"]), security_state(restored)
    assert after == before
    assert after["rls"] and all(forced and table_owner == owner for _, forced, table_owner in after["rls"])
    with using_database(restored):
        assert [c.id for c in check_rls_and_role(None, databases=["default"])] == []
        with connection.cursor() as cur:
            cur.execute("SELECT current_database(), rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user")
            assert cur.fetchone() == (restored, False, False)
        with tenant_context(tenant_id):
            stored = decrypt_json(ConnectorInstance.objects.get(pk=instance.pk).credentials_encrypted)
        assert stored == credentials
        # 6. The canary suite's assertions, against the restored data only.
        _nobody_sees_what_they_may_not_read(users, canaries)
        # The answers above appended audit rows to the restored chains: still one unbroken chain each.
        report = io.StringIO()
        call_command("audit_verify", stdout=report)
        assert "TAMPERED" not in report.getvalue() and report.getvalue().count(": ok (") == 3, report.getvalue()
    with psycopg.connect(url_for(SUPERUSER_URL, restored)) as su, su.cursor() as cur:
        assert scan_database(cur, [Canary(CANARY, "canary")]) == []


def _tenant_of(user: Any) -> int:
    from tenants.models import Membership

    return int(Membership.objects.get(user=user).tenant_id)


def _pg_bin(name: str) -> str:
    from cairn.stack import pg_binary

    return pg_binary(name)


def _nobody_sees_what_they_may_not_read(users: dict[str, Any], canaries: dict[str, tuple[str, set[str]]]) -> None:
    """tests/security/test_canary_leaks.py's check on a sample of its queries (every canary-naming one)."""
    queries = generated_queries(canaries)
    sample = [q for q in queries if "CANARY" in q] + queries[::12]
    seen: dict[str, set[str]] = {name: set() for name in users}
    for name, (_, token) in users.items():
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        forbidden = {tok for tok, readers in canaries.values() if name not in readers}
        allowed = {tok for tok, readers in canaries.values() if name in readers}
        for q in sample:
            for r in (client.get("/api/v1/search", {"q": q}),
                      client.post("/api/v1/answers", {"question": q}, format="json")):  # fmt: skip
                assert r.status_code in (200, 400), (name, q, r.status_code)
                text = without_query_echo(r.json(), q)
                assert not {tok for tok in forbidden if tok in text}, f"{name} saw a forbidden canary for {q!r}"
                seen[name] |= {tok for tok in allowed if tok in text}
    # Not vacuous: the restored index still finds each reader's canaries.
    for name in ("alice", "bob", "carol", "mallory"):
        assert seen[name] == {tok for tok, readers in canaries.values() if name in readers}, name
    assert seen["dave"] == {canaries["public"][0]} and seen["frank"] == set()
