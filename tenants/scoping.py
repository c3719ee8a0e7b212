"""Model base class and manager for tenant-owned tables.

``objects`` fails closed: with no tenant active it raises ``NoTenantError``;
with one active it filters on it (RLS enforces the same thing in Postgres).
Crossing tenants is only possible through the explicitly named
``unscoped_across_tenants`` manager, which still runs under RLS, so it only
helps code that already entered the right tenant_context (grep for it).
"""

from __future__ import annotations

from typing import Any

from django.db import models

from tenants.context import CrossTenantError, require_tenant_id


class TenantQuerySet(models.QuerySet):
    pass


class TenantManager(models.Manager):
    def get_queryset(self) -> models.QuerySet:
        tenant_id = require_tenant_id()
        return super().get_queryset().filter(tenant_id=tenant_id)


class TenantScopedModel(models.Model):
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="+")
    tenant_id: int | None  # the FK's column attribute, created by Django (declared for the type checker only)

    objects = TenantManager()
    unscoped_across_tenants = models.Manager()

    class Meta:
        abstract = True
        base_manager_name = "unscoped_across_tenants"

    def save(self, *args: Any, **kwargs: Any) -> None:
        tenant_id = require_tenant_id()
        if self.tenant_id is None:
            self.tenant_id = tenant_id
        elif self.tenant_id != tenant_id:
            raise CrossTenantError("refusing to save a row of another tenant")
        super().save(*args, **kwargs)
