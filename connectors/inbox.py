"""The Slack event inbox backed by ``InboundEvent`` rows (position = primary key)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connectors.models import InboundEvent
from tenants.context import tenant_context

BATCH = 500


class DbEventInbox:
    def __init__(self, tenant_id: int, instance_pk: int, kind: str = "slack") -> None:
        self.tenant_id = tenant_id
        self.instance_pk = instance_pk
        self.kind = kind

    def read_after(self, position: int | None) -> list[tuple[int, Mapping[str, Any]]]:
        # Own (nested, same-tenant) context: the connector reads lazily, between applied ops.
        with tenant_context(self.tenant_id):
            qs = InboundEvent.objects.filter(instance_id=self.instance_pk, kind=self.kind).order_by("pk")
            if position is not None:
                qs = qs.filter(pk__gt=position)
            return [(pk, payload) for pk, payload in qs.values_list("pk", "payload")[:BATCH]]
