"""The one cross-tenant read: which tenant owns the instance named in a webhook URL.

Greppable on purpose (``tenant_for_hook``).  It sets the transaction-local GUC
``app.hook_instance`` to the unguessable uuid from the URL; the ``hook_route`` RLS policy
(migration 0002) then shows exactly that one row, for SELECT only.  Everything after this runs
inside ``tenant_context`` of the tenant found here.
"""

from __future__ import annotations

import uuid

from django.db import connection, transaction


def tenant_for_hook(kind: str, hook_uuid: str) -> tuple[int, int] | None:
    """``(tenant_id, instance_pk)`` of the instance of ``kind`` whose hook uuid this is, else None."""
    try:
        value = str(uuid.UUID(str(hook_uuid)))
    except ValueError:
        return None
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute("SELECT set_config('app.hook_instance', %s, true)", [value])
        cur.execute(
            "SELECT tenant_id, id FROM connectors_connectorinstance WHERE hook_uuid = %s AND kind = %s",
            [value, kind],
        )
        row = cur.fetchone()
        cur.execute("SELECT set_config('app.hook_instance', '', true)")
    return (int(row[0]), int(row[1])) if row else None
