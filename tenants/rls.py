"""Migration operations that put a table under forced Row-Level Security."""

from __future__ import annotations

from django.db import migrations

# NULLIF(..., '') so an unset *or cleared* GUC compares as NULL and matches nothing.
_TENANT_EXPR = "NULLIF(current_setting('app.tenant_id', true), '')::bigint"


def enable_rls(table: str) -> migrations.RunSQL:
    return migrations.RunSQL(
        sql=[
            f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
            f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY",
            f"CREATE POLICY tenant_isolation ON {table} USING (tenant_id = {_TENANT_EXPR}) "
            f"WITH CHECK (tenant_id = {_TENANT_EXPR})",
        ],
        reverse_sql=[
            f"DROP POLICY IF EXISTS tenant_isolation ON {table}",
            f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY",
            f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY",
        ],
    )
