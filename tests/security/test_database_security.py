"""The app role, forced RLS, and the fail-closed tenant managers."""

from __future__ import annotations

import os

import psycopg
import pytest
from django.db import connection, transaction

from retrieval.models import Document
from tenants.checks import tenant_tables
from tenants.context import CrossTenantError, NoTenantError, tenant_context
from tests.support import enqueue, ingest_inline, make_doc, source_for


def test_the_app_connects_as_a_role_that_is_not_superuser_and_cannot_bypass_rls() -> None:
    with connection.cursor() as cur:
        cur.execute("SELECT rolsuper, rolbypassrls, current_user FROM pg_roles WHERE rolname = current_user")
        superuser, bypass, name = cur.fetchone()
    assert not superuser and not bypass
    assert name == "cairn_app"


def test_the_app_role_owns_no_table_and_every_tenant_table_forces_rls() -> None:
    tables = tenant_tables()
    assert "retrieval_chunk" in tables and "retrieval_posting" in tables
    with connection.cursor() as cur:
        for table in tables:
            cur.execute(
                "SELECT relrowsecurity, relforcerowsecurity, pg_get_userbyid(relowner) FROM pg_class WHERE relname = %s",
                [table],
            )
            enabled, forced, owner = cur.fetchone()
            assert enabled and forced, table
            assert owner == "cairn_owner", table


def test_every_table_with_a_tenant_column_is_listed_as_a_tenant_table() -> None:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT table_name FROM information_schema.columns WHERE column_name = 'tenant_id' "
            "AND table_schema = 'public'"
        )
        with_tenant = {r[0] for r in cur.fetchall()}
    # Memberships and a tenant's SSO settings are read to authenticate, before a tenant is known
    # (documented exceptions: tenants/models.py).
    assert with_tenant - {"tenants_membership", "tenants_tenantsso"} == set(tenant_tables())


def test_raw_sql_without_a_tenant_sees_no_rows_and_with_a_tenant_sees_only_its_own(cast) -> None:
    for tenant, text in [(cast.tenant_a, "alpha secret"), (cast.tenant_b, "beta secret")]:
        src = source_for(tenant)
        enqueue(tenant, src, make_doc("d1", text, [["public:tenant"]]))
        ingest_inline(tenant.pk)
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM retrieval_document")
        assert cur.fetchone()[0] == 0
        cur.execute("SELECT count(*) FROM retrieval_chunk")
        assert cur.fetchone()[0] == 0
    with tenant_context(cast.tenant_a.pk), connection.cursor() as cur:
        cur.execute("SELECT DISTINCT tenant_id FROM retrieval_chunk")
        assert [r[0] for r in cur.fetchall()] == [cast.tenant_a.pk]
        cur.execute("SELECT count(*) FROM retrieval_document WHERE tenant_id = %s", [cast.tenant_b.pk])
        assert cur.fetchone()[0] == 0


def test_a_direct_connection_as_the_app_role_is_filtered_too(cast) -> None:
    src = source_for(cast.tenant_a)
    enqueue(cast.tenant_a, src, make_doc("d1", "gamma secret", [["public:tenant"]]))
    ingest_inline(cast.tenant_a.pk)
    with psycopg.connect(os.environ["DATABASE_URL"]) as conn:
        assert conn.execute("SELECT count(*) FROM retrieval_chunk").fetchone()[0] == 0
        conn.execute("SELECT set_config('app.tenant_id', %s, false)", [str(cast.tenant_b.pk)])
        assert conn.execute("SELECT count(*) FROM retrieval_document WHERE external_id = 'd1' AND tenant_id = %s",
                            [cast.tenant_a.pk]).fetchone()[0] == 0  # fmt: skip


def test_the_app_role_cannot_write_a_row_into_another_tenant(cast) -> None:
    with tenant_context(cast.tenant_a.pk), connection.cursor() as cur:
        with pytest.raises(Exception, match="row-level security"), transaction.atomic():
            cur.execute(
                "INSERT INTO retrieval_aclset (tenant_id, digest, clauses, created_at) VALUES (%s, 'x', '[]', now())",
                [cast.tenant_b.pk],
            )


def test_tenant_managers_refuse_to_query_without_a_tenant() -> None:
    with pytest.raises(NoTenantError):
        list(Document.objects.all())


def test_switching_tenants_inside_a_tenant_context_is_refused(cast) -> None:
    with tenant_context(cast.tenant_a.pk):
        with pytest.raises(CrossTenantError):
            with tenant_context(cast.tenant_b.pk):
                pass
