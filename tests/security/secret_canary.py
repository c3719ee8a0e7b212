"""Secret canary: no configured secret ever shows up in a log, an error, a response or a database row.

Loaded by ``tests/conftest.py`` for the whole suite.  It

* fixes one canary per run (``CANARY``, also in ``$CAIRN_TEST_SECRET_CANARY`` so subprocesses share it);
  the fake sources' credentials and the connector tests' secrets carry it (``secret(label)``);
* captures every log record of the pytest process (root logger at DEBUG, formatted with exception text)
  into ``<data dir>/test-logs/pytest.log``;
* points every subprocess the suite starts (gunicorn, Celery workers) at ``<data dir>/test-logs/`` through
  ``CAIRN_LOG_FILE`` (see ``cairn/settings.py``);
* records every response the Django test client (and DRF's ``APIClient``, a subclass) returns, streamed
  bodies included, into ``<data dir>/test-logs/responses.jsonl``;
* at the end of the session, scans those files, the suite's other log files (``test-artifacts/**/*.log``
  written during the run) and every text/JSON column of the test database (except the two encrypted
  connector columns) for the canary and for every secret actually configured on any connector instance
  of the run (credentials and per-instance webhook secrets, decrypted with the run's key), plus the
  deployment's own ``CAIRN_SECRET_KEY`` / ``CAIRN_CREDENTIALS_KEY``.  Base64 forms are searched too (HTTP
  basic auth encodes the token).  Any hit fails the run with a message naming the place.

One disclosure is by design and allowed: the webhook-secret endpoints show an admin the instance's own
webhook secret to paste into the source (``GET/POST /api/v1/connectors/<id>/webhook`` and the console's
reveal page); only that secret, only in those responses.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import secrets as _secrets
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]  # the repository root (this file is tests/security/...)
CANARY_ENV = "CAIRN_TEST_SECRET_CANARY"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def _session_canary() -> str:
    value = os.environ.get(CANARY_ENV)
    if not value:
        # Letters, digits and '-' only: unchanged by URL-, JSON- and HTML-escaping, so a leak is found
        # in whatever encoding it takes (base64 is searched separately).
        value = "CANARY-SECRET-" + _secrets.token_hex(10).upper()
        os.environ[CANARY_ENV] = value
    return value


CANARY = _session_canary()


def secret(label: str) -> str:
    """A secret value for a test credential that carries this run's canary (``label`` keeps them apart)."""
    return f"{label}-{CANARY}"


# --------------------------------------------------------------------------------------------------
# Finding secrets in text
# --------------------------------------------------------------------------------------------------


def encoded_forms(value: str) -> set[str]:
    """The value itself, and the stretches of its base64 encodings that do not depend on neighbours.

    Base64 works on 3-byte groups, so a secret embedded in a longer string (``email:token`` in HTTP basic
    auth) is encoded differently for each of its 3 possible offsets; each offset's middle part is fixed.
    """
    forms = {value}
    raw = value.encode()
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + raw).decode()
        start = (offset * 4 + 2) // 3 + 1  # skip the characters mixed with the preceding bytes
        middle = encoded[start:-3]  # and those mixed with what follows
        if len(middle) >= 12:
            forms |= {middle, middle.replace("+", "-").replace("/", "_")}
    return forms


@dataclass(frozen=True)
class Canary:
    """A secret to look for, and the kind of secret (for messages and the allowed disclosure)."""

    value: str
    kind: str  # "canary", "credential", "webhook_secret", "deployment_key"
    owner: str = ""  # e.g. "connector 12 (slack) credentials.token"

    def forms(self) -> set[str]:
        return encoded_forms(self.value)


@dataclass
class Leak:
    where: str
    canary: Canary
    context: str

    def __str__(self) -> str:
        what = self.canary.owner or self.canary.kind
        return f"{self.where}: {what} [{self.canary.kind}] ... {self.context} ..."


def find_in_text(text: str, canaries: Iterable[Canary]) -> list[tuple[Canary, str]]:
    """Every canary (in any of its forms) that occurs in ``text``, with a redacted excerpt around it."""
    hits: list[tuple[Canary, str]] = []
    lowered = text.lower()
    for canary in canaries:
        for form in canary.forms():
            # The canary marker is found whatever its case (tsvectors and some loggers lower-case);
            # other secrets are random strings, matched exactly.
            at = lowered.find(form.lower()) if canary.kind == "canary" else text.find(form)
            if at >= 0:
                excerpt = text[max(0, at - 80) : at + len(form) + 40].replace(text[at : at + len(form)], "<SECRET>")
                hits.append((canary, " ".join(excerpt.split())))
                break
    return hits


# --------------------------------------------------------------------------------------------------
# Capture: logs and responses
# --------------------------------------------------------------------------------------------------


class _Recorder:
    """Appends every test-client response to a JSON-lines file (path, status, body)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.count = 0

    def write(self, method: str, path: str, status: int, body: bytes) -> None:
        self.count += 1
        entry = {"method": method, "path": path, "status": status, "body": body.decode("utf-8", "replace")}
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry) + "\n")


def _tee(chunks: Iterable[bytes | str], done: Any) -> Iterator[bytes | str]:
    collected: list[bytes] = []
    try:
        for chunk in chunks:
            collected.append(chunk if isinstance(chunk, bytes) else str(chunk).encode())
            yield chunk
    finally:
        done(b"".join(collected))


def _wrap_test_client(recorder: _Recorder) -> Any:
    from django.test.client import Client

    original = Client.request

    def request(self: Any, **environ: Any) -> Any:
        response = original(self, **environ)
        method = str(environ.get("REQUEST_METHOD", "GET"))
        path = str(environ.get("PATH_INFO", ""))
        status = int(getattr(response, "status_code", 0))
        if getattr(response, "streaming", False):
            # The test consumes the stream; record what it read once it is done (or closed early).
            response.streaming_content = _tee(
                response.streaming_content, lambda body: recorder.write(method, path, status, body)
            )
        else:
            recorder.write(method, path, status, bytes(getattr(response, "content", b"")))
        return response

    Client.request = request  # type: ignore[method-assign]
    return original


# --------------------------------------------------------------------------------------------------
# The database
# --------------------------------------------------------------------------------------------------

# Encrypted at rest (Fernet): the one place the credentials are supposed to be.
EXCLUDED_COLUMNS = {
    ("connectors_connectorinstance", "credentials_encrypted"),
    ("connectors_connectorinstance", "webhook_secret_encrypted"),
}
TEXT_TYPES = ("text", "character varying", "character", "json", "jsonb", "tsvector")


def text_columns(cur: Any, schema: str = "public") -> list[tuple[str, str]]:
    cur.execute(
        "SELECT c.table_name, c.column_name FROM information_schema.columns c "
        "JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name "
        "WHERE c.table_schema = %s AND t.table_type IN ('BASE TABLE', 'LOCAL TEMPORARY') AND c.data_type = ANY(%s) "
        "ORDER BY 1, 2",
        [schema, list(TEXT_TYPES)],
    )
    return [(t, c) for t, c in cur.fetchall() if (t, c) not in EXCLUDED_COLUMNS]


def _like(form: str) -> str:
    return "%" + form.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def scan_database(cur: Any, canaries: list[Canary], schema: str = "public") -> list[Leak]:
    """Every text/JSON column of ``schema`` that contains a canary (needs a role that sees every row)."""
    exact = sorted({_like(f) for c in canaries if c.kind != "canary" for f in c.forms()})
    folded = sorted({_like(f) for c in canaries if c.kind == "canary" for f in c.forms()})
    leaks: list[Leak] = []
    for table, column in text_columns(cur, schema):
        ident = f"{_quote(schema)}.{_quote(table)}"
        cur.execute(
            f"SELECT {_quote(column)}::text FROM {ident} "  # noqa: S608 (identifiers from the catalogue)
            f"WHERE {_quote(column)}::text LIKE ANY(%s) OR {_quote(column)}::text ILIKE ANY(%s) LIMIT 3",
            [exact, folded],
        )
        for (value,) in cur.fetchall():
            for canary, excerpt in find_in_text(value, canaries):
                leaks.append(Leak(f"database {table}.{column}", canary, excerpt))
    return leaks


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def configured_secrets(cur: Any, credentials_key: str) -> list[Canary]:
    """Every secret configured on a connector instance of this run, decrypted with the run's key."""
    from cryptography.fernet import Fernet, InvalidToken

    fernet = Fernet(credentials_key.encode())
    found: list[Canary] = []
    cur.execute("SELECT id, kind, credentials_encrypted, webhook_secret_encrypted FROM connectors_connectorinstance")
    for pk, kind, creds, hook in cur.fetchall():
        try:
            values = json.loads(fernet.decrypt(creds.encode())) if creds else {}
            hook_secret = fernet.decrypt(hook.encode()).decode() if hook else ""
        except (InvalidToken, ValueError):
            continue  # written under another key (a test of key rotation); nothing to look for
        for key, value in _secret_fields(values):
            found.append(Canary(value, "credential", f"connector {pk} ({kind}) credentials.{key}"))
        if hook_secret:
            found.append(Canary(hook_secret, "webhook_secret", f"connector {pk} ({kind}) webhook secret"))
    # Short values ("tok-123") would match unrelated text; they are not real-looking secrets anyway.
    return [c for c in found if len(c.value) >= 8]


_SECRET_KEY_NAMES = re.compile(r"(?i)token|secret|password|passwd|key|assertion|private")


def _secret_fields(values: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(values, dict):
        for key, value in values.items():
            name = f"{prefix}{key}"
            if isinstance(value, str) and _SECRET_KEY_NAMES.search(str(key)):
                yield name, value
            elif isinstance(value, dict | list):
                yield from _secret_fields(value, name + ".")
    elif isinstance(values, list):
        for i, value in enumerate(values):
            yield from _secret_fields(value, f"{prefix}{i}.")


# --------------------------------------------------------------------------------------------------
# The plugin
# --------------------------------------------------------------------------------------------------

# Responses that show an admin their instance's webhook secret on purpose (to paste into the source).
WEBHOOK_SECRET_PAGES = re.compile(r"^/api/v1/connectors/\d+/webhook/?$|^/console/connectors/\d+/?$")


@dataclass
class SecretCanaryPlugin:
    out: Path
    started: float = field(default_factory=time.time)
    recorder: _Recorder | None = None
    handler: logging.Handler | None = None
    leaks: list[Leak] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    _original_request: Any = None
    _root_level: int = logging.WARNING

    # -- set-up ------------------------------------------------------------------------------------

    def start(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        for old in self.out.glob("*"):
            if old.is_file():
                old.unlink()
        # Subprocesses (gunicorn, Celery workers) started by any fixture log here too.
        os.environ["CAIRN_LOG_FILE"] = str(self.out / "process-{pid}.log")
        self.handler = logging.FileHandler(self.out / "pytest.log", encoding="utf-8", delay=True)
        self.handler.setLevel(logging.DEBUG)
        self.handler.setFormatter(logging.Formatter(LOG_FORMAT))
        root = logging.getLogger()
        # The file holds what the product's own handlers would write: the same filters (the secret
        # redaction of core/logfilters.py), taken from the handlers cairn/settings.py configured.
        for configured in root.handlers:
            for log_filter in configured.filters:
                if log_filter not in self.handler.filters:
                    self.handler.addFilter(log_filter)
        self._root_level = root.level
        root.addHandler(self.handler)
        root.setLevel(logging.DEBUG)
        self.recorder = _Recorder(self.out / "responses.jsonl")

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        # Django is set up by now (pytest-django), so its test client can be wrapped.
        try:
            self._original_request = _wrap_test_client(self.recorder)  # type: ignore[arg-type]
        except Exception as exc:  # Django not configured (a --noconftest unit run does not load us)
            self.notes.append(f"responses not recorded: {exc}")

    @pytest.fixture(autouse=True)
    def _secret_canary_root_level(self) -> Iterator[None]:
        # Django's LOGGING and some tests reconfigure logging; every test starts at DEBUG again.
        root = logging.getLogger()
        if self.handler is not None and self.handler not in root.handlers:
            root.addHandler(self.handler)
        root.setLevel(logging.DEBUG)
        yield

    # -- the scan ----------------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.handler is not None:
            self.handler.flush()
        started = time.monotonic()
        canaries = [Canary(CANARY, "canary", "the run's secret canary")]
        for name in ("CAIRN_SECRET_KEY", "CAIRN_CREDENTIALS_KEY"):
            if len(os.environ.get(name, "")) >= 16:
                canaries.append(Canary(os.environ[name], "deployment_key", name))
        db_url = os.environ.get("CAIRN_PG_SUPERUSER_URL", "")
        conn = None
        if db_url:
            import psycopg

            try:
                conn = psycopg.connect(db_url, autocommit=True)
            except psycopg.Error as exc:
                self.notes.append(f"database not scanned: {exc}")
        else:
            self.notes.append("database not scanned: CAIRN_PG_SUPERUSER_URL is not set (external Postgres)")
        try:
            if conn is not None and os.environ.get("CAIRN_CREDENTIALS_KEY"):
                with conn.cursor() as cur:
                    canaries += configured_secrets(cur, os.environ["CAIRN_CREDENTIALS_KEY"])
            self.leaks += self._scan_files(canaries)
            if conn is not None:
                with conn.cursor() as cur:
                    self.leaks += scan_database(cur, canaries)
        finally:
            if conn is not None:
                conn.close()
        self.notes.append(
            f"secret canary: {len(canaries)} secrets ({sum(c.kind == 'credential' for c in canaries)} connector "
            f"credentials, {sum(c.kind == 'webhook_secret' for c in canaries)} webhook secrets) searched in "
            f"{self.recorder.count if self.recorder else 0} responses, logs and the database in "
            f"{time.monotonic() - started:.1f} s"
        )
        report = self.out / "secret-canary-report.txt"
        report.write_text("\n".join([*self.notes, *map(str, self.leaks)]) + "\n")
        if self.leaks:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _scan_files(self, canaries: list[Canary]) -> list[Leak]:
        leaks: list[Leak] = []
        responses = self.out / "responses.jsonl"
        if responses.exists():
            leaks += self._scan_responses(responses, canaries)
        logs = sorted(self.out.glob("*.log"))
        artifacts = ROOT / "test-artifacts"
        if artifacts.exists():
            logs += [p for p in sorted(artifacts.rglob("*.log")) if p.stat().st_mtime >= self.started]
        for path in logs:
            text = path.read_text("utf-8", "replace")
            for canary, excerpt in find_in_text(text, canaries):
                leaks.append(Leak(f"log {path}", canary, excerpt))
        return leaks

    @staticmethod
    def _scan_responses(path: Path, canaries: list[Canary]) -> list[Leak]:
        text = path.read_text("utf-8", "replace")
        suspects = [c for c, _ in find_in_text(text, canaries)]
        if not suspects:  # the common case: one pass over the file, nothing to attribute
            return []
        leaks: list[Leak] = []
        for line in text.splitlines():
            entry = json.loads(line)
            body = entry["body"]
            for canary, excerpt in find_in_text(body, suspects):
                if canary.kind == "webhook_secret" and WEBHOOK_SECRET_PAGES.match(entry["path"]):
                    continue  # shown to the admin on purpose (see the module docstring)
                leaks.append(Leak(f"response {entry['method']} {entry['path']} ({entry['status']})", canary, excerpt))
        return leaks

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for note in self.notes:
            terminalreporter.write_line(note)
        if self.leaks:
            terminalreporter.section("SECRET CANARY: secrets leaked", sep="=", red=True, bold=True)
            for leak in self.leaks[:50]:
                terminalreporter.write_line(str(leak), red=True)
            if len(self.leaks) > 50:
                terminalreporter.write_line(f"... and {len(self.leaks) - 50} more (see {self.out})", red=True)

    def stop(self) -> None:
        if self._original_request is not None:
            from django.test.client import Client

            Client.request = self._original_request  # type: ignore[method-assign]
        if self.handler is not None:
            logging.getLogger().removeHandler(self.handler)
            self.handler.close()
            logging.getLogger().setLevel(self._root_level)


def data_dir() -> Path:
    return Path(os.environ.get("CAIRN_DATA_DIR") or ROOT / ".cairn")


def register(config: pytest.Config) -> None:
    """Called from tests/conftest.py's pytest_configure."""
    if config.pluginmanager.has_plugin("secret-canary"):
        return
    plugin = SecretCanaryPlugin(out=data_dir() / "test-logs")
    plugin.start()
    config.pluginmanager.register(plugin, "secret-canary")
    config.add_cleanup(plugin.stop)


def pytest_configure(config: pytest.Config) -> None:
    """When loaded with ``-p tests.security.secret_canary`` (a run without tests/conftest.py)."""
    register(config)
