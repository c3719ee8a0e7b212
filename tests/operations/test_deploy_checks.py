"""``manage.py check --deploy`` is clean for production, and every project rule fires on its unsafe config.

Production = the container environment of ``docker/`` (``docker/compose.yml`` reads ``.env``, a copy of
``.env.example`` with the CHANGE_ME values filled in): here ``.env.example``'s values, plus real secrets
and this machine's services.  The settings-only rules are checked in-process with ``override_settings``
(each unsafe value alone, starting from the production values, must raise exactly its own id); the
database rules need another connection, so they run ``manage.py check`` in a subprocess as that role.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest
from cryptography.fernet import Fernet
from django.conf import global_settings
from django.core.checks import WARNING, Tags, run_checks
from django.test import override_settings

from tests.support import ROOT

IDS = re.compile(r"\(((?:security|cairn|fields|models|auth)\.[EW]\d+)\)")
# Only the production secrets and services differ from .env.example (what an operator fills in).
PRODUCTION_SECRET_KEY = "p" * 20 + "roduction-secret-key-with-enough-entropy-x7Q"


def env_example() -> dict[str, str]:
    values = {}
    for line in (ROOT / ".env.example").read_text().splitlines():
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            values[key.strip()] = value.strip()
    return values


def production_env(**overrides: str) -> dict[str, str]:
    # The machine's services from the test run's environment; none of its CAIRN_* test switches.
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_") and k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env.update({k: v for k, v in env_example().items() if k not in ("DATABASE_URL", "REDIS_URL", "DATABASE_OWNER_URL")})
    env.update(CAIRN_SECRET_KEY=PRODUCTION_SECRET_KEY, CAIRN_CREDENTIALS_KEY=Fernet.generate_key().decode(),
               CAIRN_DB_APP_ROLE=_user(os.environ["DATABASE_URL"]))  # fmt: skip
    env.update(overrides)
    return env


def _user(url: str) -> str:
    return urlsplit(url).username or parse_qs(urlsplit(url).query).get("user", [""])[0]


def manage_check(env: dict[str, str]) -> tuple[int, str, list[str]]:
    """``manage.py check --deploy --fail-level WARNING`` against the test database; (rc, output, ids)."""
    done = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING", "--database", "default"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    out = done.stdout + done.stderr
    return done.returncode, out, sorted(set(IDS.findall(out)))


def test_check_deploy_is_clean_at_warning_level_for_the_production_environment() -> None:
    rc, out, ids = manage_check(production_env())
    assert (rc, ids) == (0, []), out
    assert "no issues" in out, out


# --------------------------------------------------------------------------------------------------
# Settings rules, in-process: production values first, then one unsafe value at a time
# --------------------------------------------------------------------------------------------------

PRODUCTION_SETTINGS: dict[str, Any] = {
    "DEBUG": False,
    "SECRET_KEY": PRODUCTION_SECRET_KEY,
    "CREDENTIALS_KEY": Fernet.generate_key().decode(),
    "ALLOWED_HOSTS": ["cairn.example.com"],
    "SECURE_SSL_REDIRECT": True,
    "SECURE_HSTS_SECONDS": 31536000,
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
    "SECURE_HSTS_PRELOAD": True,
    "SESSION_COOKIE_SECURE": True,
    "CSRF_COOKIE_SECURE": True,
    "SECURE_PROXY_SSL_HEADER": ("HTTP_X_FORWARDED_PROTO", "https"),
    # Django's default list: the test run itself prefers MD5 (CAIRN_FAST_PASSWORD_HASHER_FOR_TESTS).
    "PASSWORD_HASHERS": global_settings.PASSWORD_HASHERS,
}


def deploy_issues(**overrides: Any) -> list[str]:
    from django.conf import settings

    cairn = dict(settings.CAIRN)
    # The Postgres index backend: the OpenSearch rules have their own test (tests/retrieval/backends/test_deployment.py).
    cairn["INDEX_BACKEND"] = "retrieval.backends.postgres.PostgresIndexBackend"
    with override_settings(**{**PRODUCTION_SETTINGS, "CAIRN": cairn, **overrides}):
        found = run_checks(include_deployment_checks=True, tags=[Tags.security], databases=None)
    return sorted({m.id for m in found if m.level >= WARNING})


def test_the_production_settings_raise_nothing_in_process() -> None:
    assert deploy_issues() == []


@pytest.mark.parametrize(
    ("unsafe", "expected"),
    [
        # Django's own key rule (W009) agrees with ours.
        ({"SECRET_KEY": "too-short"}, ["cairn.E001", "security.W009"]),
        ({"SECRET_KEY": "django-insecure-" + "x" * 50}, ["cairn.E001", "security.W009"]),
        ({"CREDENTIALS_KEY": ""}, ["cairn.E002"]),
        ({"CREDENTIALS_KEY": "not-a-fernet-key"}, ["cairn.E003"]),
        ({"PASSWORD_HASHERS": ["django.contrib.auth.hashers.MD5PasswordHasher"]}, ["cairn.E004"]),
        ({"DEBUG": True}, ["security.W018"]),
        ({"SECURE_SSL_REDIRECT": False}, ["security.W008"]),
        ({"SECURE_HSTS_SECONDS": 0}, ["security.W004"]),
        ({"SESSION_COOKIE_SECURE": False}, ["security.W012"]),
        ({"CSRF_COOKIE_SECURE": False}, ["security.W016"]),
    ],
    ids=["short-secret-key", "insecure-secret-key", "no-credentials-key", "bad-credentials-key", "md5-passwords", "debug",
         "no-ssl-redirect", "no-hsts", "insecure-session-cookie", "insecure-csrf-cookie"],
)  # fmt: skip
def test_each_unsafe_setting_raises_its_own_rule(unsafe: dict[str, Any], expected: list[str]) -> None:
    assert deploy_issues(**unsafe) == expected


# --------------------------------------------------------------------------------------------------
# Database rules: the role the app connects as, and forced row-level security
# --------------------------------------------------------------------------------------------------


def _database_issues() -> list[str]:
    found = run_checks(include_deployment_checks=True, tags=[Tags.database], databases=["default"])
    return sorted({m.id for m in found if m.level >= WARNING})


def test_the_app_role_passes_the_database_rules() -> None:
    assert _database_issues() == []


def test_a_tenant_table_without_forced_rls_is_an_error() -> None:
    table = "tenants_feedback"
    with psycopg.connect(os.environ["CAIRN_PG_SUPERUSER_URL"], autocommit=True) as su:
        su.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
        try:
            issues = _database_issues()
        finally:
            su.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
    assert issues == ["cairn.E011"]
    assert _database_issues() == []


def test_connecting_as_another_role_than_configured_is_an_error() -> None:
    with override_settings(DATABASE_APP_ROLE="cairn_someone_else"):
        assert _database_issues() == ["cairn.E013"]


@pytest.mark.parametrize(("url_env", "expected"), [("CAIRN_PG_SUPERUSER_URL", "cairn.E010"),
                                                   ("DATABASE_OWNER_URL", "cairn.E012")])  # fmt: skip
def test_connecting_as_the_superuser_or_the_table_owner_fails_the_deploy_check(url_env: str, expected: str) -> None:
    url = os.environ[url_env]
    rc, out, ids = manage_check(production_env(DATABASE_URL=url, CAIRN_DB_APP_ROLE=_user(url)))
    assert rc != 0 and ids == [expected], out


def test_an_app_role_that_is_a_member_of_the_owner_role_fails_the_deploy_check() -> None:
    role = f"cairn_app_member_{uuid.uuid4().hex[:6]}"
    owner = _user(os.environ["DATABASE_OWNER_URL"])
    with psycopg.connect(os.environ["CAIRN_PG_SUPERUSER_URL"], autocommit=True) as su:
        su.execute(f"CREATE ROLE {role} LOGIN NOSUPERUSER NOBYPASSRLS IN ROLE {owner}")
        try:
            url = os.environ["DATABASE_URL"].replace(f"{_user(os.environ['DATABASE_URL'])}@", f"{role}@", 1)
            rc, out, ids = manage_check(production_env(DATABASE_URL=url, CAIRN_DB_APP_ROLE=role))
        finally:
            su.execute(f"DROP OWNED BY {role}")
            su.execute(f"DROP ROLE {role}")
    assert rc != 0 and ids == ["cairn.E014"], out


def test_the_configuration_page_is_generated_from_the_env_example() -> None:
    # docs/configuration.md is rendered from .env.example (python -m devtools.envdoc > docs/configuration.md).
    from devtools.envdoc import render

    assert (ROOT / "docs" / "configuration.md").read_text() == render((ROOT / ".env.example").read_text())
