"""Forced RLS on every connectors table, plus the one narrow cross-tenant read.

Webhooks arrive before any tenant is known; the instance is named in the URL by its
unguessable ``hook_uuid``.  A second, SELECT-only permissive policy shows exactly the row
whose ``hook_uuid`` equals the transaction-local GUC ``app.hook_instance`` (set only by
``connectors.routing.tenant_for_hook``), so the lookup reveals nothing to anyone who does not
already hold the uuid, and RLS stays forced.
"""

from django.db import migrations

from tenants.rls import enable_rls

TABLES = ["connectors_connectorinstance", "connectors_syncstate", "connectors_inboundevent"]


class Migration(migrations.Migration):
    dependencies = [("connectors", "0001_initial")]

    operations = [
        *[enable_rls(t) for t in TABLES],
        migrations.RunSQL(
            sql=(
                "CREATE POLICY hook_route ON connectors_connectorinstance FOR SELECT USING ("
                "hook_uuid::text = NULLIF(current_setting('app.hook_instance', true), ''))"
            ),
            reverse_sql="DROP POLICY IF EXISTS hook_route ON connectors_connectorinstance",
        ),
    ]
