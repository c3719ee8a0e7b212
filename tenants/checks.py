"""Project rules for ``manage.py check`` (and ``check --deploy``)."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.checks import Error, Tags, Warning, register
from django.db import connection

from tenants.scoping import TenantScopedModel

# Django's hashers that its docs call insecure (fast, or unsalted).
_WEAK_HASHERS = {"MD5PasswordHasher", "UnsaltedMD5PasswordHasher", "UnsaltedSHA1PasswordHasher",
                 "SHA1PasswordHasher"}  # fmt: skip


@register(Tags.security, deploy=True)
def check_secrets(app_configs: Any, **kwargs: Any) -> list[Any]:
    errors: list[Any] = []
    if len(settings.SECRET_KEY) < 40 or settings.SECRET_KEY.startswith("django-insecure"):
        errors.append(Error("CAIRN_SECRET_KEY is too short or a placeholder", id="cairn.E001"))
    if not settings.CREDENTIALS_KEY:
        errors.append(Error("CAIRN_CREDENTIALS_KEY is not set: connector credentials cannot be encrypted",
                            id="cairn.E002"))  # fmt: skip
    elif not _is_fernet_key(settings.CREDENTIALS_KEY):
        # Otherwise the first connector an admin saves fails with a 503 instead of the deploy failing.
        errors.append(Error("CAIRN_CREDENTIALS_KEY is not a Fernet key (32 url-safe base64-encoded bytes)",
                            id="cairn.E003"))  # fmt: skip
    preferred = settings.PASSWORD_HASHERS[0].rsplit(".", 1)[-1]
    if preferred in _WEAK_HASHERS:
        # The test run's CAIRN_FAST_PASSWORD_HASHER_FOR_TESTS (cairn/settings.py) ends here if it leaks out.
        errors.append(Error(f"new passwords would be stored with {preferred} (CAIRN_FAST_PASSWORD_HASHER_FOR_TESTS "
                            "is for the test run only)", id="cairn.E004"))  # fmt: skip
    return errors


def _is_fernet_key(key: str) -> bool:
    from cryptography.fernet import Fernet

    try:
        Fernet(key.encode() if isinstance(key, str) else key)
    except (ValueError, TypeError):
        return False
    return True


def tenant_tables() -> list[str]:

    tables = [m._meta.db_table for m in apps.get_models() if issubclass(m, TenantScopedModel)]
    return sorted(tables + ["retrieval_posting", "retrieval_termstat"])


@register(Tags.database, deploy=True)
def check_rls_and_role(app_configs: Any, databases: Any = None, **kwargs: Any) -> list[Any]:
    """The app role must not be superuser / BYPASSRLS, and every tenant table must force RLS."""
    if not databases or "default" not in databases:
        return []
    problems: list[Any] = []
    with connection.cursor() as cur:
        cur.execute("SELECT rolsuper, rolbypassrls, current_user FROM pg_roles WHERE rolname = current_user")
        row = cur.fetchone()
        if row and (row[0] or row[1]):
            problems.append(Error("the app connects as a superuser or BYPASSRLS role", id="cairn.E010"))
        else:
            # Membership is as good as being the role: SET ROLE (or inheritance) lifts RLS again.
            cur.execute(
                "SELECT string_agg(r.rolname, ', ' ORDER BY r.rolname) FROM pg_roles r "
                "WHERE r.rolname <> current_user AND pg_has_role(current_user, r.oid, 'MEMBER') "
                "AND (r.rolsuper OR r.rolbypassrls OR EXISTS (SELECT 1 FROM pg_class c "
                "WHERE c.relowner = r.oid AND c.relnamespace = 'public'::regnamespace))"
            )
            held = cur.fetchone()[0]
            if held:
                problems.append(Error(f"the app role is a member of {held} (a superuser, BYPASSRLS or table-owning "
                                      "role): it can lift row-level security", id="cairn.E014"))  # fmt: skip
        expected = getattr(settings, "DATABASE_APP_ROLE", "")
        if row and expected and row[2] != expected:
            problems.append(Error(f"the app connects as {row[2]!r}, not as CAIRN_DB_APP_ROLE {expected!r}",
                                  id="cairn.E013"))  # fmt: skip
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
