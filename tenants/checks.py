"""Project rules for ``manage.py check`` (and ``check --deploy``)."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.checks import Error, Tags, Warning, register
from django.db import connection


@register(Tags.security, deploy=True)
def check_secrets(app_configs: Any, **kwargs: Any) -> list[Any]:
    errors: list[Any] = []
    if len(settings.SECRET_KEY) < 40 or settings.SECRET_KEY.startswith("django-insecure"):
        errors.append(Error("CAIRN_SECRET_KEY is too short or a placeholder", id="cairn.E001"))
    if not settings.CREDENTIALS_KEY:
        errors.append(Error("CAIRN_CREDENTIALS_KEY is not set: connector credentials cannot be encrypted",
                            id="cairn.E002"))  # fmt: skip
    return errors


def tenant_tables() -> list[str]:
    from tenants.scoping import TenantScopedModel

    tables = [m._meta.db_table for m in apps.get_models() if issubclass(m, TenantScopedModel)]
    return sorted(tables + ["retrieval_posting", "retrieval_termstat"])


@register(Tags.database, deploy=True)
def check_rls_and_role(app_configs: Any, databases: Any = None, **kwargs: Any) -> list[Any]:
    """The app role must not be superuser / BYPASSRLS, and every tenant table must force RLS."""
    if not databases or "default" not in databases:
        return []
    problems: list[Any] = []
    with connection.cursor() as cur:
        cur.execute("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user")
        row = cur.fetchone()
        if row and (row[0] or row[1]):
            problems.append(Error("the app connects as a superuser or BYPASSRLS role", id="cairn.E010"))
        for table in tenant_tables():
            cur.execute(
                "SELECT c.relrowsecurity, c.relforcerowsecurity, pg_get_userbyid(c.relowner) = current_user "
                "FROM pg_class c WHERE c.relname = %s",
                [table],
            )
            r = cur.fetchone()
            if r is None:
                problems.append(Warning(f"table {table} does not exist (migrations pending?)", id="cairn.W011"))
            elif not (r[0] and r[1]):
                problems.append(Error(f"table {table} does not force row-level security", id="cairn.E011"))
            elif r[2]:
                problems.append(Error(f"the app role owns {table}", id="cairn.E012"))
    return problems
