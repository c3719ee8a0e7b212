"""The active tenant: a context variable in Python and a transaction-local GUC in Postgres.

``tenant_context(tenant_id)`` opens a transaction and runs
``set_config('app.tenant_id', <id>, true)`` (the function form of ``SET LOCAL``)
so every statement in it is filtered by the Row-Level Security policies.
Outside a tenant context the GUC is unset/empty and the policies match no
row, and ``TenantManager`` raises before a query is even sent.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.db import connections, transaction

_current_tenant: ContextVar[int | None] = ContextVar("cairn_current_tenant", default=None)


class NoTenantError(RuntimeError):
    """A tenant-owned table was queried with no tenant active."""


class CrossTenantError(RuntimeError):
    """Code tried to switch tenants inside another tenant's context."""


def current_tenant_id() -> int | None:
    return _current_tenant.get()


def require_tenant_id() -> int:
    tenant_id = _current_tenant.get()
    if tenant_id is None:
        raise NoTenantError("no tenant is active; wrap the work in tenant_context(tenant_id)")
    return tenant_id


def _set_guc(using: str, value: str) -> None:
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT set_config('app.tenant_id', %s, true)", [value])


@contextmanager
def tenant_context(tenant_id: int, *, using: str = "default") -> Iterator[None]:
    """Run the block as ``tenant_id`` inside one transaction (RLS-scoped)."""
    if not isinstance(tenant_id, int) or isinstance(tenant_id, bool) or tenant_id <= 0:
        raise ValueError("tenant_id must be a positive int")
    previous = _current_tenant.get()
    if previous is not None and previous != tenant_id:
        raise CrossTenantError(f"already in tenant {previous}; refusing to enter tenant {tenant_id}")
    token = _current_tenant.set(tenant_id)
    outer = connections[using].in_atomic_block
    try:
        with transaction.atomic(using=using):
            _set_guc(using, str(tenant_id))
            try:
                yield
            finally:
                if outer and previous is None:
                    # The enclosing transaction (outside any tenant) keeps running after
                    # this block: clear the GUC so it cannot see this tenant's rows.
                    try:
                        with transaction.atomic(using=using):
                            _set_guc(using, "")
                    except Exception:
                        connections[using].needs_rollback = True
    finally:
        _current_tenant.reset(token)


@contextmanager
def no_tenant() -> Iterator[None]:
    """Explicitly leave any tenant (used by platform-operator code paths)."""
    token = _current_tenant.set(None)
    try:
        yield
    finally:
        _current_tenant.reset(token)
