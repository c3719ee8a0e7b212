"""Connector secrets never leave the encrypted column: error paths, webhooks, admin API, audit export.

Every secret here carries the run's canary (``tests.security.secret_canary.CANARY``).  Each test drives one
error path against a local server speaking the source's wire format (a 401/403/500, a dropped
connection, a token endpoint that echoes the request) or a forged webhook, then checks every place a
secret could surface: the HTTP responses, every log record (DEBUG, with tracebacks), the sync state
and source error fields, the audit log and its export, and the inbound-event rows.  The session-wide
scan (``tests/security/secret_canary.py``) repeats this over the whole suite; the last tests here show that
scan can fail.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from connectors.models import ConnectorInstance, InboundEvent, SyncState
from connectors.slack.events import sign
from core.crypto import decrypt_text
from retrieval.models import Source
from tenants.context import tenant_context
from tenants.models import AuditEvent
from tests.connectors.integration.helpers import make_instance, sync
from tests.connectors.sharepoint.fake_graph import write_self_signed_cert
from tests.security.secret_canary import CANARY, Canary, _Recorder, find_in_text, scan_database, secret
from tests.support import ROOT, unique

CANARIES = [Canary(CANARY, "canary")]


def leaks(*texts: str) -> list[str]:
    """Excerpts around every canary (raw or base64) in ``texts``; empty when nothing leaked."""
    return [excerpt for text in texts for _, excerpt in find_in_text(text, CANARIES)]


# --------------------------------------------------------------------------------------------------
# A source that misbehaves: answers every request with one status and echoes the whole request back
# --------------------------------------------------------------------------------------------------


@dataclass
class EchoSource:
    """Answers ``status`` with a JSON body that repeats the request line, headers and body.

    Real sources and proxies do echo requests in error pages; whatever Cairn copies from such a
    body into an error, a log line or a status field would carry the credentials.  ``drop`` closes
    the connection without an answer (what a timeout or a dying proxy looks like to the client).
    OpenID discovery (Entra) is answered properly so the token request is reached.
    """

    status: int = 401
    drop: bool = False
    tls: tuple[Path, Path] | None = None
    seen: list[str] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def base(self) -> str:
        assert self.server is not None
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> EchoSource:
        source = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet test server
                return

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
                echo = f"{self.command} {self.path}\n{self.headers}\n{body}"
                source.seen.append(echo)
                if self.path.endswith("/.well-known/openid-configuration"):
                    tenant = self.path.split("/")[1]
                    return self._json(200, {"issuer": f"{source.base}/{tenant}/v2.0",
                                            "authorization_endpoint": f"{source.base}/{tenant}/oauth2/v2.0/authorize",
                                            "token_endpoint": f"{source.base}/{tenant}/oauth2/v2.0/token"})  # fmt: skip
                if source.drop:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return None
                return self._json(source.status, {"ok": False, "error": "invalid_client", "message": echo,
                                                  "error_description": echo, "errorMessages": [echo]})  # fmt: skip

            def _json(self, status: int, data: dict[str, Any]) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                # A server that reflects the credentials into a header as well.
                self.send_header("X-Echo-Authorization", self.headers.get("Authorization", ""))
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_POST = _answer  # noqa: N815

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if self.tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(str(self.tls[0]), str(self.tls[1]))
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(autouse=True)
def _private_queue(settings) -> None:  # type: ignore[no-untyped-def]
    # Sync runs execute in-process (helpers.sync); queued task messages go where no worker reads.
    settings.CAIRN = {**settings.CAIRN, "CONNECTOR_QUEUE": unique("test-inline")}


@pytest.fixture
def debug_logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    return caplog


def all_log_text(caplog: pytest.LogCaptureFixture) -> str:
    """Every record as the configured console handler would write it (its filters applied: the secret
    redaction of core/logfilters.py), exception text and stack included."""
    console = next(h for h in logging.getLogger().handlers if h.get_name() == "console")
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    lines = []
    for record in caplog.records:
        copy = logging.makeLogRecord(dict(record.__dict__))
        if console.filter(copy):
            lines.append(formatter.format(copy))
    return "\n".join(lines)


def api(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def stored_text(tenant_id: int, instance: ConnectorInstance) -> str:
    """Everything about the instance the database holds in clear: config, sync states, source errors,
    inbound events and the tenant's audit rows."""
    with tenant_context(tenant_id):
        inst = ConnectorInstance.objects.get(pk=instance.pk)
        parts: list[Any] = [inst.config, inst.tls_ca_file]
        parts += list(SyncState.objects.filter(instance=inst).values())
        parts += list(Source.objects.filter(pk=inst.source_id).values())
        parts += list(InboundEvent.objects.filter(instance=inst).values())
        parts += list(AuditEvent.objects.values())
    return json.dumps(parts, default=str)


def admin_views(alice: APIClient, pk: int) -> list[str]:
    """The admin API's views of an instance (the webhook secret endpoint is the only place a secret
    may appear, and it shows the webhook secret, not the credentials)."""
    bodies = []
    for path in ("/api/v1/connectors", f"/api/v1/connectors/{pk}", f"/api/v1/connectors/{pk}/status"):
        resp = alice.get(path)
        assert resp.status_code == 200, resp.content
        bodies.append(resp.content.decode())
    hook = alice.get(f"/api/v1/connectors/{pk}/webhook")
    assert hook.status_code == 200
    bodies.append(hook.content.decode())
    return bodies


# --------------------------------------------------------------------------------------------------
# Sources that refuse, fail or vanish
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403, 500, "dropped"])
def test_it_keeps_the_confluence_token_out_of_every_error_when_the_site_echoes_the_request(
    cast, debug_logs, status: int | str
) -> None:
    token = secret("confluence-api-token")
    with EchoSource(status=status if isinstance(status, int) else 502, drop=status == "dropped") as site:
        instance = make_instance(cast.tenant_a.pk, "confluence", unique("wiki"), {"site_url": site.base},
                                 {"email": "svc@acme.example", "api_token": token})  # fmt: skip
        alice = api(cast.tokens["alice"])
        tested = alice.post(f"/api/v1/connectors/{instance.pk}/test")
        state = sync(cast.tenant_a.pk, instance, "full")
        views = admin_views(alice, instance.pk)
    # The source really received the credentials (basic auth) and echoed them back.
    sent = base64.b64encode(f"svc@acme.example:{token}".encode()).decode()
    assert any(sent in request for request in site.seen), site.seen[:1]
    assert tested.status_code == 200 and tested.json()["ok"] is False
    assert state.status == "failed" and state.last_error
    assert (
        leaks(tested.content.decode(), *views, all_log_text(debug_logs), stored_text(cast.tenant_a.pk, instance)) == []
    )


def test_it_keeps_the_entra_client_secret_out_of_errors_when_the_token_endpoint_echoes_it(
    cast, debug_logs, tmp_path: Path
) -> None:
    client_secret = secret("entra-client-secret")
    cert = write_self_signed_cert(tmp_path)
    with EchoSource(status=401, tls=cert) as entra:
        instance = make_instance(
            cast.tenant_a.pk, "sharepoint", unique("finance"),
            {"tenant_id": "11111111-2222-3333-4444-555555555555", "client_id": "app-1", "site_ids": ["s1"],
             "graph_base_url": f"{entra.base}/v1.0", "authority_host": entra.base},
            {"client_secret": client_secret}, tls_ca_file=str(cert[0]),
        )  # fmt: skip
        alice = api(cast.tokens["alice"])
        tested = alice.post(f"/api/v1/connectors/{instance.pk}/test")
        state = sync(cast.tenant_a.pk, instance, "full")
        views = admin_views(alice, instance.pk)
    assert any(client_secret in request for request in entra.seen), "the token request was never made"
    assert tested.json()["ok"] is False and state.status == "failed"
    assert (
        leaks(tested.content.decode(), *views, all_log_text(debug_logs), stored_text(cast.tenant_a.pk, instance)) == []
    )


def test_it_keeps_the_slack_token_out_of_errors_when_slack_echoes_it(cast, debug_logs) -> None:
    token = secret("xoxb-slack-bot-token")
    with EchoSource(status=200) as slack:  # Slack answers errors with 200 {"ok": false, "error": ...}
        instance = make_instance(cast.tenant_a.pk, "slack", unique("slack"),
                                 {"base_url": slack.base + "/api/", "team_id": "T0CAIRN"},
                                 {"token": token, "signing_secret": secret("slack-signing")})  # fmt: skip
        alice = api(cast.tokens["alice"])
        tested = alice.post(f"/api/v1/connectors/{instance.pk}/test")
        state = sync(cast.tenant_a.pk, instance, "full")
        views = admin_views(alice, instance.pk)
    assert any(token in request for request in slack.seen)
    assert tested.json()["ok"] is False and state.status == "failed"
    assert (
        leaks(tested.content.decode(), *views, all_log_text(debug_logs), stored_text(cast.tenant_a.pk, instance)) == []
    )


def test_a_library_that_logs_a_credential_in_use_gets_it_scrubbed_from_every_configured_handler(
    cast, debug_logs
) -> None:
    from core.crypto import decrypt_json

    token = secret("plain-confluence-token")  # no recognisable shape: only the remembered value catches it
    instance = make_instance(cast.tenant_a.pk, "confluence", unique("wiki"), {"site_url": "https://acme.atlassian.net"},
                             {"email": "svc@acme.example", "api_token": token})  # fmt: skip
    with tenant_context(cast.tenant_a.pk):
        in_use = decrypt_json(ConnectorInstance.objects.get(pk=instance.pk).credentials_encrypted)["api_token"]
    try:
        raise RuntimeError(f"upstream refused {in_use}")
    except RuntimeError:
        logging.getLogger("urllib3.connectionpool").debug("reply echoed %s", in_use, exc_info=True)
    text = all_log_text(debug_logs)
    assert "reply echoed [REDACTED]" in text and "upstream refused [REDACTED]" in text, text
    assert leaks(text) == []


# --------------------------------------------------------------------------------------------------
# Webhooks with a wrong signature or secret
# --------------------------------------------------------------------------------------------------


def test_it_rejects_forged_webhooks_without_revealing_the_secrets_it_checked_against(cast, debug_logs) -> None:
    signing = secret("slack-signing-current")
    slack = make_instance(cast.tenant_a.pk, "slack", unique("slack"), {"team_id": "T0CAIRN"},
                          {"token": secret("xoxb-hooks"), "signing_secret": signing,
                           "previous_signing_secret": secret("slack-signing-previous")})  # fmt: skip
    wiki = make_instance(cast.tenant_a.pk, "confluence", unique("wiki"), {"site_url": "https://acme.atlassian.net"},
                         {"email": "svc@acme.example", "api_token": secret("confluence-hooks")})  # fmt: skip
    body = json.dumps({"type": "event_callback", "team_id": "T0CAIRN", "event_id": "Ev1",
                       "event": {"type": "message", "channel": "C1", "ts": "1.0"}}).encode()  # fmt: skip
    ts = str(int(time.time()))
    responses = []
    for signature in (sign("wrong-" + signing, ts, body), sign(signing, str(int(ts) - 600), body), "v0=00", ""):
        responses.append(Client().post(f"/hooks/slack/{slack.hook_uuid}/events", body,
                                       content_type="application/json", HTTP_X_SLACK_REQUEST_TIMESTAMP=ts,
                                       HTTP_X_SLACK_SIGNATURE=signature))  # fmt: skip
    with tenant_context(cast.tenant_a.pk):
        right = decrypt_text(ConnectorInstance.objects.get(pk=wiki.pk).webhook_secret_encrypted)
    page = json.dumps({"page": {"id": 1, "version": {"number": 1}}, "timestamp": 1717243200000}).encode()
    for query in ("", f"?secret={right[:-1]}", f"?secret={CANARY}"):
        responses.append(Client().post(f"/hooks/confluence/{wiki.hook_uuid}/page_updated{query}", page,
                                       content_type="application/json"))  # fmt: skip
    assert [r.status_code for r in responses] == [401] * 7, [r.content for r in responses]
    # Nothing was stored from a forged delivery, and the responses, logs and rows name no secret.
    with tenant_context(cast.tenant_a.pk):
        assert not InboundEvent.objects.filter(instance_id__in=[slack.pk, wiki.pk]).exists()
    hook_secrets = [Canary(right, "webhook_secret")]
    texts = [r.content.decode() for r in responses] + [all_log_text(debug_logs)]
    texts += [stored_text(cast.tenant_a.pk, slack), stored_text(cast.tenant_a.pk, wiki)]
    assert leaks(*texts) == []
    assert [e for t in texts for _, e in find_in_text(t, hook_secrets)] == []


def test_an_accepted_confluence_webhook_stores_the_event_but_not_the_secret_in_its_url(cast, debug_logs) -> None:
    wiki = make_instance(cast.tenant_a.pk, "confluence", unique("wiki"), {"site_url": "https://acme.atlassian.net"},
                         {"email": "svc@acme.example", "api_token": secret("confluence-accepted")})  # fmt: skip
    with tenant_context(cast.tenant_a.pk):
        right = decrypt_text(ConnectorInstance.objects.get(pk=wiki.pk).webhook_secret_encrypted)
    page = json.dumps({"page": {"id": 7, "version": {"number": 2}}, "timestamp": 1717243200000}).encode()
    resp = Client().post(f"/hooks/confluence/{wiki.hook_uuid}/page_updated?secret={right}", page,
                         content_type="application/json")  # fmt: skip
    assert resp.status_code in (200, 202), resp.content
    with tenant_context(cast.tenant_a.pk):
        assert InboundEvent.objects.filter(instance_id=wiki.pk).count() == 1
    texts = [resp.content.decode(), all_log_text(debug_logs), stored_text(cast.tenant_a.pk, wiki)]
    assert [e for t in texts for _, e in find_in_text(t, [Canary(right, "webhook_secret"), *CANARIES])] == []


# --------------------------------------------------------------------------------------------------
# The admin API and the audit log
# --------------------------------------------------------------------------------------------------


def test_the_admin_api_and_the_audit_export_never_return_a_credential(cast, debug_logs) -> None:
    alice = api(cast.tokens["alice"])
    created = alice.post("/api/v1/connectors", {
        "kind": "slack", "name": unique("Slack"), "config": {"team_id": "T0CAIRN"},
        "credentials": {"token": secret("xoxb-admin"), "signing_secret": secret("admin-signing")},
    }, format="json")  # fmt: skip
    assert created.status_code == 201, created.content
    pk = created.json()["id"]
    bodies = [created.content.decode()]
    patched = alice.patch(f"/api/v1/connectors/{pk}",
                          {"credentials": {"signing_secret": secret("admin-signing-2"),
                                           "previous_signing_secret": secret("admin-signing")}}, format="json")  # fmt: skip
    assert patched.status_code == 200, patched.content
    # A password pasted into a URL is refused without the error repeating it.
    bad = alice.post("/api/v1/connectors", {"kind": "slack", "name": unique("Slack"),
                                            "config": {"base_url": f"https://bot:{secret('url-pw')}@slack.example/api/"},
                                            "credentials": {"token": secret("xoxb-rejected")}}, format="json")  # fmt: skip
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_config", bad.content
    bodies += [patched.content.decode(), bad.content.decode(), *admin_views(alice, pk)]
    bodies.append(alice.post(f"/api/v1/connectors/{pk}/webhook").content.decode())  # rotate
    for output in ("jsonl", "csv"):
        export = alice.get("/api/v1/audit/export", {"output": output})
        assert export.status_code == 200
        bodies.append(b"".join(export.streaming_content).decode() if export.streaming else export.content.decode())
    assert leaks(*bodies, all_log_text(debug_logs), stored_text(cast.tenant_a.pk, ConnectorInstance(pk=pk))) == []
    # The credentials are stored, encrypted: the update merged the rotation pair.
    with tenant_context(cast.tenant_a.pk):
        from core.crypto import decrypt_json

        stored = decrypt_json(ConnectorInstance.objects.get(pk=pk).credentials_encrypted)
    assert stored["signing_secret"] == secret("admin-signing-2") and stored["token"] == secret("xoxb-admin")


# --------------------------------------------------------------------------------------------------
# The session-wide scan itself
# --------------------------------------------------------------------------------------------------


def test_the_scanner_finds_a_secret_raw_lower_cased_or_inside_basic_auth() -> None:
    token = secret("scanner")
    basic = base64.b64encode(f"someone@example.com:{token}".encode()).decode()
    for prefix in ("", "x", "xy"):  # every base64 alignment
        shifted = base64.b64encode(f"{prefix}:{token}".encode()).decode()
        assert leaks(f"Authorization: Basic {shifted}"), prefix
    assert leaks(f"error: {token}") and leaks(f"'{token.lower()}':1") and leaks(f"Basic {basic}")
    assert leaks("an error about CANARY-SECRET but another run's value", "nothing here") == []


def test_the_database_scan_finds_a_secret_in_any_text_or_json_column() -> None:
    with connection.cursor() as cur:
        cur.execute("CREATE TEMPORARY TABLE leak_probe (id int, note text, data jsonb, tags varchar(50)[])")
        cur.execute("INSERT INTO leak_probe VALUES (1, 'clean', '{}', '{}'), (2, 'clean', %s, '{}')",
                    [json.dumps({"error": f"401 for token {secret('db')}"})])  # fmt: skip
        cur.execute("SELECT nspname FROM pg_namespace WHERE oid = pg_my_temp_schema()")
        schema = cur.fetchone()[0]
        found = scan_database(cur, CANARIES, schema=schema)
        cur.execute("DROP TABLE leak_probe")
    assert [leak.where for leak in found] == ["database leak_probe.data"]


def test_only_the_webhook_secret_pages_may_show_the_webhook_secret_and_nothing_else(tmp_path: Path) -> None:
    from tests.security.secret_canary import SecretCanaryPlugin

    hook, credential = Canary("h00k-" + "x" * 40, "webhook_secret", "hook"), Canary(secret("cred"), "credential")
    entries = [
        ("GET", "/api/v1/connectors/7/webhook", hook.value),
        ("POST", "/console/connectors/7/", hook.value),
        ("GET", "/api/v1/connectors/7", hook.value),
        ("GET", "/api/v1/connectors/7/webhook", credential.value),
    ]
    path = tmp_path / "responses.jsonl"
    path.write_text("".join(json.dumps({"method": m, "path": p, "status": 200, "body": f"<p>{b}</p>"}) + "\n"
                            for m, p, b in entries))  # fmt: skip
    found = SecretCanaryPlugin._scan_responses(path, [hook, credential])
    assert sorted(leak.where for leak in found) == [
        "response GET /api/v1/connectors/7 (200)",
        "response GET /api/v1/connectors/7/webhook (200)",
    ]
    assert {leak.canary.kind for leak in found} == {"webhook_secret", "credential"}


def test_every_test_client_response_is_recorded_for_the_scan(request: pytest.FixtureRequest) -> None:
    plugin = request.config.pluginmanager.get_plugin("secret-canary")
    recorder: _Recorder = plugin.recorder
    before = recorder.count
    marker = unique("/no-such-page")
    assert Client().get(marker).status_code == 404
    assert recorder.count == before + 1
    last = recorder.path.read_text().splitlines()[-1]
    assert json.loads(last)["path"] == marker


def test_a_run_that_logs_a_secret_fails_and_says_where(tmp_path: Path) -> None:
    planted = tmp_path / "test_planted.py"
    planted.write_text(
        "import logging\n"
        "from tests.security.secret_canary import secret\n\n"
        "def test_it_logs_a_token():\n"
        "    logging.getLogger('connectors.demo').debug('calling the source with %s', secret('planted'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("CAIRN_TEST_SECRET_CANARY", "CAIRN_LOG_FILE")}
    # Its own data dir (the plugin clears its log folder at start) and no database scan: this run
    # must not read or disturb the outer run's files.
    env.update(CAIRN_DATA_DIR=str(tmp_path / "data"), CAIRN_PG_SUPERUSER_URL="", PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", str(ROOT / "pytest.ini"),
         "--rootdir", str(ROOT), "-p", "tests.security.secret_canary", str(planted)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert "1 passed" in out, out
    assert done.returncode == 1, out
    assert "SECRET CANARY: secrets leaked" in out and "pytest.log" in out and "connectors.demo" in out, out


# --------------------------------------------------------------------------------------------------
# Production's web server access log (docker/Dockerfile)
# --------------------------------------------------------------------------------------------------


def dockerfile_command() -> list[str]:
    text = (ROOT / "docker" / "Dockerfile").read_text().replace("\\\n", " ")
    line = next(ln for ln in text.splitlines() if ln.startswith("CMD "))
    return list(json.loads(line.removeprefix("CMD ")))


def test_the_production_access_log_never_writes_the_webhook_secret_of_a_confluence_url() -> None:
    from datetime import timedelta
    from types import SimpleNamespace

    from gunicorn.config import Config
    from gunicorn.glogging import Logger

    argv = dockerfile_command()
    assert argv[:2] == ["gunicorn", "cairn.wsgi:application"] and "--access-logfile" in argv
    cfg = Config()
    cfg.set("accesslog", argv[argv.index("--access-logfile") + 1])
    if "--access-logformat" in argv:
        cfg.set("access_log_format", argv[argv.index("--access-logformat") + 1])
    logger = Logger(cfg)
    lines: list[str] = []
    capture = logging.Handler()
    capture.emit = lambda record: lines.append(record.getMessage())  # type: ignore[method-assign]
    logger.access_log.addHandler(capture)
    hook_secret = secret("confluence-webhook")
    path = "/hooks/confluence/0f8b8a8e-1111-4222-8333-444455556666/page_updated"
    environ = {"REQUEST_METHOD": "POST", "RAW_URI": f"{path}?secret={hook_secret}", "PATH_INFO": path,
               "QUERY_STRING": f"secret={hook_secret}", "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "10.0.0.9",
               "HTTP_USER_AGENT": "Atlassian Webhook HTTP Client"}  # fmt: skip
    response = SimpleNamespace(status="202 Accepted", sent=0, headers=[])
    logger.access(response, SimpleNamespace(headers=[]), environ, timedelta(milliseconds=12))
    assert len(lines) == 1 and path in lines[0] and "POST" in lines[0], lines
    assert leaks(*lines) == [], lines
