"""Issue 16: the trust gaps an adversarial review found, each reproduced and now refused.

alice is tenant A's admin, bob and carol its members, mallory tenant B's admin. Local fake servers
listen on 127.0.0.1; only the operator's allow-list (tests/outbound.py) may let the product reach
them, never a tenant admin's setting.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.test import Client

from answers.models import AnswerSettings
from answers.writers.openai_compat import OpenAICompatibleWriter
from connectors.actions import do_create_connector_instance
from connectors.models import ConnectorInstance
from connectors.runtime import Outbound
from core.http import BlockedDestination, OperatorEndpoints, check_admin_url
from tenants.audit import SYSTEM
from tenants.context import tenant_context
from tenants.models import AuditEvent
from tests.support import (
    approve_private_endpoint,
    client_for,
    enqueue,
    grant_groups,
    ingest_inline,
    make_doc,
    signed_in,
    source_for,
    unique,
)


class Recorder:
    """A local HTTP server that records every request (path, headers) and answers ``reply``."""

    def __init__(self, status: int = 404, body: bytes = b"not an LLM", headers: dict[str, str] | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.status, self.body, self.headers = status, body, headers or {}
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                outer.requests.append({"path": self.path, "headers": dict(self.headers),
                                       "body": self.rfile.read(length) if length else b""})  # fmt: skip
                self.send_response(outer.status)
                for k, v in outer.headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(outer.body)))
                self.end_headers()
                self.wfile.write(outer.body)

            do_GET = do_POST = do_PUT = _any  # noqa: N815

            def log_message(self, *a: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    r = Recorder()
    yield r
    r.close()


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


FAST_HASHER = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # throttling does not depend on the hash


@pytest.fixture(scope="module")
def cast(django_db_blocker: Any) -> Any:
    """The standard cast, built once for this module (each test uses its own names and addresses)."""
    from django.test import override_settings

    from tests.conftest import make_cast

    with django_db_blocker.unblock(), override_settings(PASSWORD_HASHERS=FAST_HASHER):
        return make_cast()


@pytest.fixture(autouse=True)
def _fast_hashes_and_the_default_writer(cast: Any, settings: Any) -> Iterator[None]:
    settings.PASSWORD_HASHERS = FAST_HASHER
    yield
    with tenant_context(cast.tenant_a.pk):  # a test that chose a writer leaves the next one the default
        AnswerSettings.objects.all().delete()


def error_code(response: Any) -> str:
    return str(response.json()["error"]["code"])


def admin_rows(tenant: Any, action: str) -> list[AuditEvent]:
    with tenant_context(tenant.pk):
        return list(AuditEvent.objects.filter(action=action).order_by("seq"))


# --------------------------------------------------------------------------------------------------
# 1. SSRF through the tenant's LLM endpoint
# --------------------------------------------------------------------------------------------------

PRIVATE_ENDPOINTS = [
    "http://127.0.0.1:{port}/v1",
    "http://localhost:{port}/v1",
    "https://localhost:{port}/v1",
    "https://127.0.0.1:{port}/v1",
    "https://169.254.169.254/latest/meta-data",
    "https://10.0.0.5/v1",
    "https://192.168.1.10/v1",
    "https://100.64.0.1/v1",
    "https://[::ffff:127.0.0.1]:{port}/v1",
    "https://[fd00::1]/v1",
    "http://[::1]:8399/v1",
    "https://[::1]:8399/v1",
    "http://api.openai.example/v1",  # public, but plain http: the key and every passage in clear text
    "https://user:pw@api.openai.example/v1",
    "https://0x7f000001/v1",
]


def test_a_tenant_admin_cannot_point_the_writer_at_a_private_or_plain_http_endpoint(cast, recorder) -> None:
    alice = client_for(cast.tokens["alice"])
    for template in PRIVATE_ENDPOINTS:
        url = template.format(port=recorder.port)
        r = alice.put("/api/v1/admin/answer-settings", {"writer": "openai_compatible", "endpoint_url": url,
                                                        "model": "m", "api_key": "sk-stolen-key"}, format="json")  # fmt: skip
        assert r.status_code == 400 and error_code(r) == "endpoint_not_allowed", (url, r.content)
    assert alice.get("/api/v1/admin/answer-settings").json()["writer"] == "extractive"
    assert recorder.requests == []


def test_an_endpoint_stored_before_the_fix_is_refused_at_answer_time_and_ipv6_no_longer_gives_a_500(
    cast, recorder
) -> None:
    enqueue(cast.tenant_a, source_for(cast.tenant_a), make_doc("travel", "Expense reports are due within 30 days.",
                                                                 [["public:tenant"]]))  # fmt: skip
    ingest_inline(cast.tenant_a.pk)
    bob = client_for(cast.tokens["bob"])
    for url in (recorder.url("/v1"), "http://[::1]:8399/v1", f"http://localhost:{recorder.port}/v1"):
        with tenant_context(cast.tenant_a.pk):
            AnswerSettings.objects.update_or_create(defaults={"writer": "openai_compatible", "endpoint_url": url,
                                                              "model": "m"})  # fmt: skip
        r = bob.post("/api/v1/answers", {"question": "When are expense reports due?"}, format="json")
        assert r.status_code == 200, (url, r.content[:300])
        assert r.json()["trace"]["writer"]["error"] == "endpoint_not_allowed", url
    assert recorder.requests == []


def test_the_writer_adds_no_host_of_its_own_url_to_the_allowed_hosts(recorder) -> None:
    writer = OpenAICompatibleWriter(recorder.url("/v1"), "m", "sk-secret")
    info: dict[str, Any] = {}
    assert writer.complete_json([{"role": "user", "content": "hi"}], {"type": "object"}, info=info) is None
    assert info["error"] == "endpoint_not_allowed" and recorder.requests == []


def test_the_operator_allow_list_names_scheme_host_and_port_together(settings, recorder) -> None:
    approve_private_endpoint(settings, recorder.url())
    other_port = _closed_port()
    endpoints = OperatorEndpoints(settings.CAIRN["OPERATOR_PRIVATE_ENDPOINTS"])
    assert check_admin_url(recorder.url("/v1"), endpoints=endpoints, resolve=False).addresses == ()
    for url in (f"http://127.0.0.1:{other_port}/v1", f"https://127.0.0.1:{recorder.port}/v1",
                f"http://localhost:{recorder.port}/v1"):  # fmt: skip
        with pytest.raises(BlockedDestination):
            check_admin_url(url, endpoints=endpoints, resolve=False)
    with pytest.raises(ValueError):
        OperatorEndpoints(["http://127.0.0.1"])  # no port: an approval must not cover a whole machine


def test_a_public_name_that_resolves_to_a_private_address_is_refused() -> None:
    for address in ("10.1.2.3", "127.0.0.1", "169.254.169.254", "::1", "::ffff:10.0.0.1", "100.64.3.4"):
        with pytest.raises(BlockedDestination):
            check_admin_url("https://llm.example.com/v1", resolver=lambda host, port, a=address: [a])
    assert check_admin_url("https://llm.example.com/v1", resolver=lambda host, port: ["93.184.216.34"]).addresses


def test_errors_do_not_tell_an_open_port_from_a_closed_one(settings, recorder) -> None:
    closed = _closed_port()
    # Without the operator both are refused before any connect, with one code.
    codes = set()
    for url in (recorder.url("/v1"), f"http://127.0.0.1:{closed}/v1"):
        info: dict[str, Any] = {}
        OpenAICompatibleWriter(url, "m", timeout=2).complete_json([], {}, info=info)
        codes.add(info["error"])
    assert codes == {"endpoint_not_allowed"} and recorder.requests == []
    # Even where the operator allowed both, "refused" and "something answered, not an LLM" read the same.
    approve_private_endpoint(settings, recorder.url())
    approve_private_endpoint(settings, f"http://127.0.0.1:{closed}")
    codes = set()
    for url in (recorder.url("/v1"), f"http://127.0.0.1:{closed}/v1"):
        info = {}
        OpenAICompatibleWriter(url, "m", timeout=2).complete_json([], {}, info=info)
        codes.add(info["error"])
    assert codes == {"endpoint_failed"} and len(recorder.requests) == 1


def test_an_operator_approved_private_endpoint_works(settings, recorder, cast) -> None:
    approve_private_endpoint(settings, recorder.url())
    r = client_for(cast.tokens["alice"]).put("/api/v1/admin/answer-settings", {
        "writer": "openai_compatible", "endpoint_url": recorder.url("/v1"), "model": "m"}, format="json")  # fmt: skip
    assert r.status_code == 200, r.content


# --------------------------------------------------------------------------------------------------
# 2. Operator trust binds to the approved URL
# --------------------------------------------------------------------------------------------------


def _trusted_confluence(cast: Any, server: Recorder) -> ConnectorInstance:
    with tenant_context(cast.tenant_a.pk):
        return do_create_connector_instance("confluence", unique("Wiki"), config={"site_url": server.url("/wiki")},
                                            credentials={"email": "bot@example.com", "api_token": "tok-operator"},
                                            allow_private_network=True, actor=SYSTEM)  # fmt: skip


def test_editing_a_trusted_connectors_url_withdraws_the_operators_trust(cast, recorder) -> None:
    instance = _trusted_confluence(cast, recorder)
    alice = client_for(cast.tokens["alice"])
    # A rename keeps the trust: the URL the operator approved did not change.
    r = alice.patch(f"/api/v1/connectors/{instance.pk}", {"name": unique("Renamed"),
                    "config": {"site_url": recorder.url("/wiki")}}, format="json")  # fmt: skip
    assert r.status_code == 200, r.content
    with tenant_context(cast.tenant_a.pk):
        assert ConnectorInstance.objects.get(pk=instance.pk).allow_private_network
    # Another internal service, same host: an https URL passes the form check, but not the trust.
    internal = Recorder(200, b"{}", {"Content-Type": "application/json"})
    try:
        r = alice.patch(f"/api/v1/connectors/{instance.pk}",
                        {"config": {"site_url": f"https://127.0.0.1:{internal.port}/wiki"}}, format="json")  # fmt: skip
        assert r.status_code == 200, r.content
        with tenant_context(cast.tenant_a.pk):
            row = ConnectorInstance.objects.get(pk=instance.pk)
        assert not row.allow_private_network and row.private_network_origins == []
        test = alice.post(f"/api/v1/connectors/{instance.pk}/test")
        assert test.status_code == 200 and test.json()["ok"] is False
        assert internal.requests == [], "the stored credentials went to an address the operator never approved"
    finally:
        internal.close()
    (updated,) = [e for e in admin_rows(cast.tenant_a, "connector.updated") if e.target_id == str(instance.pk)][-1:]
    assert updated.details["private_network_trust_withdrawn"] is True and updated.actor_user_id == cast.alice.pk


def test_a_trusted_connector_still_refuses_redirects_to_another_port(cast, recorder) -> None:
    target = Recorder(200, b"{}")
    try:
        recorder.status, recorder.headers = 302, {"Location": target.url("/steal")}
        instance = _trusted_confluence(cast, recorder)
        session = Outbound.for_instance(instance).session([recorder.url("/wiki")])
        response = session.get(recorder.url("/wiki/rest/api/space"))
        with pytest.raises(BlockedDestination):
            session.follow_redirects(response)
        assert target.requests == []
    finally:
        target.close()


# --------------------------------------------------------------------------------------------------
# 3. One validation path for the console and the API
# --------------------------------------------------------------------------------------------------

BAD_CONNECTOR_INPUTS = [
    ({"site_url": "http://wiki.example.com"}, "invalid_config"),
    ({"site_url": "https://wiki.example.com", "allow_private_network": True}, "invalid_config"),
    ({"site_url": "https://wiki.example.com", "tls_ca_file": "/etc/ssl/evil.pem"}, "invalid_config"),
    ({"site_url": "https://wiki.example.com/\u0000"}, "invalid_config"),
    ({"site_url": "https://bot:pw@wiki.example.com"}, "invalid_config"),
]


@pytest.mark.parametrize(("config", "code"), BAD_CONNECTOR_INPUTS)
def test_the_console_and_the_api_refuse_the_same_connector_settings_with_the_same_code(cast, config, code) -> None:
    name = unique("Wiki")
    api = client_for(cast.tokens["alice"]).post("/api/v1/connectors", {
        "kind": "confluence", "name": name, "config": config, "credentials": {"api_token": "t"}}, format="json")  # fmt: skip
    assert api.status_code == 400 and error_code(api) == code, api.content
    console = signed_in(cast.alice)
    # The console's raw JSON (its "advanced" settings) meets the same validation as the API's body.
    page = console.post("/console/connectors/new", {"kind": "confluence", "name": name, "advanced": "on",
                                                    "raw_config": json.dumps(config), "api_token": "t"})  # fmt: skip
    assert page.status_code == 400 and f"({code})".encode() in page.content, page.content[-600:]
    with tenant_context(cast.tenant_a.pk):
        assert not ConnectorInstance.objects.filter(source__name=name).exists()
    # Editing an existing connector goes through the same action.
    good = client_for(cast.tokens["alice"]).post("/api/v1/connectors", {
        "kind": "confluence", "name": name, "config": {"site_url": "https://wiki.example.com"}}, format="json")  # fmt: skip
    pk = good.json()["id"]
    patch = client_for(cast.tokens["alice"]).patch(f"/api/v1/connectors/{pk}", {"config": config}, format="json")
    assert patch.status_code == 400 and error_code(patch) == code
    edit = console.post(f"/console/connectors/{pk}/", {"op": "save", "advanced": "on", "raw_config": json.dumps(config),
                                                       "name": name})  # fmt: skip
    assert edit.status_code == 400 and f"({code})".encode() in edit.content


# --------------------------------------------------------------------------------------------------
# 4. Every admin change through the REST API is audited with its actor
# --------------------------------------------------------------------------------------------------


@pytest.fixture
def connector(cast) -> int:
    r = client_for(cast.tokens["alice"]).post("/api/v1/connectors", {
        "kind": "slack", "name": unique("Slack"), "config": {"team_id": "T1"}, "credentials": {"token": "xoxb-1"}},
        format="json")  # fmt: skip
    assert r.status_code == 201, r.content
    return int(r.json()["id"])


ADMIN_CALLS: list[tuple[str, str, str, Any, str]] = [
    # (method, path, body, expected action, target type)
    ("post", "/api/v1/admin/aliases", {"alias": "acme corp", "canonical": "Acme"}, "alias.set", "entity_alias"),
    ("post", "/api/v1/admin/authority/tiers", {"rank": 7, "name": "vendor docs"}, "hierarchy.tier_defined",
     "authority_tier"),
    ("put", "/api/v1/admin/answer-settings", {"writer": "extractive"}, "answer_settings.updated", "answer_settings"),
    ("post", "/api/v1/admin/freshness-feeds", {"name": "pg", "entity": "PostgreSQL",
                                               "url": "https://feeds.example.com/pg.json"}, "feed.created",
     "freshness_feed"),
    ("patch", "/api/v1/connectors/{connector}", {"name": "Renamed Slack"}, "connector.updated", "connector"),
    ("post", "/api/v1/connectors/{connector}/test", None, "connector.tested", "connector"),
    ("post", "/api/v1/connectors/{connector}/sync", {"mode": "full"}, "connector.sync_requested", "connector"),
    ("post", "/api/v1/connectors/{connector}/pause", None, "connector.paused", "connector"),
    ("post", "/api/v1/connectors/{connector}/resume", None, "connector.resumed", "connector"),
    ("get", "/api/v1/connectors/{connector}/webhook", None, "connector.webhook_secret_viewed", "connector"),
    ("post", "/api/v1/connectors/{connector}/webhook", None, "connector.webhook_secret_rotated", "connector"),
]  # fmt: skip


@pytest.mark.parametrize(("method", "path", "body", "action", "target_type"), ADMIN_CALLS)
def test_each_admin_api_change_writes_an_audit_row_with_its_actor(cast, connector, settings, method, path, body,
                                                                   action, target_type) -> None:  # fmt: skip
    settings.CAIRN = {**settings.CAIRN, "FRESHNESS_ALLOWED_URL_PREFIXES": ["https://feeds.example.com/"]}
    alice = client_for(cast.tokens["alice"])
    before = len(admin_rows(cast.tenant_a, action))
    url = path.format(connector=connector)
    r = getattr(alice, method)(url, body, format="json") if body is not None else getattr(alice, method)(url)
    assert r.status_code < 300, r.content
    rows = admin_rows(cast.tenant_a, action)
    assert len(rows) == before + 1, action
    assert rows[-1].actor_user_id == cast.alice.pk and rows[-1].actor_username == cast.alice.username
    assert rows[-1].target_type == target_type and rows[-1].details["via"] == "api-token"
    assert "xoxb" not in json.dumps(rows[-1].details)


def test_the_connector_create_alias_delete_assignment_and_feed_refresh_are_audited(cast, settings) -> None:
    settings.CAIRN = {**settings.CAIRN, "FRESHNESS_ALLOWED_URL_PREFIXES": ["https://feeds.example.com/"]}
    alice = client_for(cast.tokens["alice"])
    created = alice.post("/api/v1/connectors", {"kind": "slack", "name": unique("Slack"), "config": {}},
                         format="json")  # fmt: skip
    alias = alice.post("/api/v1/admin/aliases", {"alias": "globex", "canonical": "Globex"}, format="json").json()
    assert alice.delete(f"/api/v1/admin/aliases/{alias['id']}").status_code == 204
    source = created.json()["id"]
    with tenant_context(cast.tenant_a.pk):
        source_id = ConnectorInstance.objects.get(pk=source).source_id
    assert alice.post("/api/v1/admin/authority/assignments", {"source_id": source_id, "tier_rank": 0},
                      format="json").status_code == 200  # fmt: skip
    feed = alice.post("/api/v1/admin/freshness-feeds", {"name": "f", "entity": "E",
                      "url": "https://feeds.example.com/f.json"}, format="json").json()  # fmt: skip
    assert alice.post(f"/api/v1/admin/freshness-feeds/{feed['id']}/refresh").status_code == 200
    for action in ("connector.created", "alias.deleted", "hierarchy.assigned", "feed.refreshed"):
        rows = admin_rows(cast.tenant_a, action)
        assert rows and rows[-1].actor_user_id == cast.alice.pk, action


def test_a_console_identity_mapping_is_audited_by_the_domain_action(cast) -> None:
    from tenants.models import ExternalIdentity

    with tenant_context(cast.tenant_a.pk):
        identity = ExternalIdentity.objects.create(principal=f"slack:user:{unique('U')}")
    r = signed_in(cast.alice).post("/console/people/", {"op": "map", "identity": identity.pk, "user": cast.bob.pk})
    assert r.status_code == 302
    (row,) = [e for e in admin_rows(cast.tenant_a, "identity.mapped") if e.target_id == identity.principal]
    assert row.actor_user_id == cast.alice.pk and row.details == {"via": "console", "user_id": cast.bob.pk}


# --------------------------------------------------------------------------------------------------
# 5. Login: audited, throttled per account and per client address, non-enumerable
# --------------------------------------------------------------------------------------------------


def _login(address: str, username: str, password: str) -> tuple[Client, Any]:
    c = Client(REMOTE_ADDR=address)
    return c, c.post("/login/", {"username": username, "password": password})


@pytest.fixture
def address() -> Iterator[str]:
    """A client address of its own per test, so one test's lockout never reaches another."""
    import random

    from axes.utils import reset

    ip = f"198.51.100.{random.randint(1, 254)}"
    yield ip
    reset(ip=ip)


def test_login_success_failure_and_logout_are_audited(cast, address) -> None:
    from axes.utils import reset

    password = "pw-" + cast.bob.username
    _, wrong = _login(address, cast.bob.username, "nope")
    assert wrong.status_code == 400
    client, ok = _login(address, cast.bob.username, password)
    assert ok.status_code == 302
    assert client.get("/logout/").status_code == 405  # a GET (an <img> on another site) logs nobody out
    assert client.post("/logout/").status_code == 302
    for action in ("auth.login_failed", "auth.login", "auth.logout"):
        rows = admin_rows(cast.tenant_a, action)
        assert rows and rows[-1].actor_user_id == cast.bob.pk, action
    assert admin_rows(cast.tenant_a, "auth.login")[-1].details["client_address"] == address
    reset(username=cast.bob.username)


def test_logout_needs_the_csrf_token() -> None:
    c = Client(enforce_csrf_checks=True)
    assert c.post("/logout/").status_code == 403


def test_wrong_passwords_lock_the_account_and_the_right_one_then_fails_too(cast, address, settings) -> None:
    from axes.utils import reset

    limit = settings.AXES_FAILURE_LIMIT
    for i in range(limit):
        # Each from its own address: the lock is per account, not only per address.
        _, r = _login(f"203.0.113.{i + 1}", cast.carol.username, f"guess-{i}")
    assert r.status_code == 429
    client, right = _login(address, cast.carol.username, "pw-" + cast.carol.username)
    assert right.status_code == 429 and b"Too many failed logins" in right.content
    assert "_auth_user_id" not in client.session
    assert admin_rows(cast.tenant_a, "auth.login_locked_out")
    reset(username=cast.carol.username)
    for i in range(limit):
        reset(ip=f"203.0.113.{i + 1}")
    _, after = _login(address, cast.carol.username, "pw-" + cast.carol.username)
    assert after.status_code == 302  # the lockout lifts (here by reset; in production after the window)


def test_one_address_trying_many_names_is_locked_out_for_every_name(cast, address, settings) -> None:
    from axes.utils import reset

    for _ in range(settings.AXES_FAILURE_LIMIT):
        _login(address, unique("nobody"), "x")
    _, real = _login(address, cast.alice.username, "pw-" + cast.alice.username)
    assert real.status_code == 429
    reset(username=cast.alice.username)


def test_unknown_names_and_wrong_passwords_get_the_same_answer(cast, address) -> None:
    from axes.utils import reset

    _, unknown = _login(address, unique("nobody"), "x")
    _, wrong = _login(address, cast.bob.username, "x")
    assert unknown.status_code == wrong.status_code == 400

    def page(r: Any) -> bytes:  # the CSRF token is masked afresh on every page; everything else is equal
        import re

        return re.sub(rb'name="csrfmiddlewaretoken" value="[^"]*"', b"", r.content)

    assert page(unknown) == page(wrong)
    reset(username=cast.bob.username)


# --------------------------------------------------------------------------------------------------
# 6. Smaller findings
# --------------------------------------------------------------------------------------------------


def test_deeply_nested_json_gets_a_coded_400_not_a_500(cast) -> None:
    alice = client_for(cast.tokens["alice"])
    body = "[" * 1000 + "]" * 1000
    for path in ("/api/v1/admin/aliases", "/api/v1/answers", "/api/v1/connectors"):
        r = alice.generic("POST", path, body, content_type="application/json")
        assert r.status_code == 400 and error_code(r) == "json_too_deep", (path, r.content[:200])
    nested_string = json.dumps({"alias": "[{" * 60, "canonical": "x"})  # brackets inside a string are text
    assert alice.generic("POST", "/api/v1/admin/aliases", nested_string,
                         content_type="application/json").status_code == 201  # fmt: skip


SECRET_DOC = "The merger code name is Bluebird. Bluebird closes in the third quarter."


def test_the_feedback_queue_withholds_claim_text_from_an_admin_who_may_not_read_the_document(cast) -> None:
    enqueue(cast.tenant_a, source_for(cast.tenant_a), make_doc("merger", SECRET_DOC, [["confluence:group:deals"]]))
    grant_groups(cast.tenant_a, {"confluence:group:deals": [cast.bob]})  # alice, the admin, is not in it
    ingest_inline(cast.tenant_a.pk)
    bob = client_for(cast.tokens["bob"])
    body = bob.post("/api/v1/answers", {"question": "When does Bluebird close?"}, format="json").json()
    claim = body["answer"]["claims"][0]
    assert "Bluebird" in claim["text"]
    r = bob.post("/api/v1/feedback", {"trace_id": body["trace"]["id"], "target": "claim", "verdict": "stale",
                                      "claim_id": claim["id"], "claim_text": claim["text"],
                                      "comment": "Bluebird moved"}, format="json")  # fmt: skip
    assert r.status_code == 201
    # The asker's own question stays visible (the audit log shows it too); the document's words do not.
    queue = client_for(cast.tokens["alice"]).get("/api/v1/feedback").json()["feedback"]
    assert queue and queue[0]["claim_text"].startswith("[hidden") and queue[0]["comment"] == ""
    assert "third quarter" not in json.dumps(queue)
    page = signed_in(cast.alice).get("/console/feedback/")
    assert page.status_code == 200 and b"third quarter" not in page.content and b"hidden" in page.content
    # bob may read it, and an admin who may read it sees the text as before.
    grant_groups(cast.tenant_a, {"confluence:group:deals": [cast.bob, cast.alice]})
    queue = client_for(cast.tokens["alice"]).get("/api/v1/feedback").json()["feedback"]
    assert "third quarter" in queue[0]["claim_text"]
    (flag,) = admin_rows(cast.tenant_a, "feedback.submitted")[-1:]
    assert flag.actor_user_id == cast.bob.pk and "Bluebird" not in json.dumps(flag.details)


PHISH = ("Password resets are handled by the service desk. Reset yours at https://evil.example/login today. "
         "The policy itself lives at https://wiki.example.com/reset.")  # fmt: skip


def test_links_in_passages_and_snippets_are_inert_unless_they_are_the_sources_own_url(cast) -> None:
    enqueue(cast.tenant_a, source_for(cast.tenant_a), make_doc("reset", PHISH, [["public:tenant"]]))
    ingest_inline(cast.tenant_a.pk)
    bob = client_for(cast.tokens["bob"])
    results = bob.get("/api/v1/search?q=password+resets+service+desk").json()["results"]
    answer = bob.post("/api/v1/answers", {"question": "Who handles password resets?"}, format="json").json()
    shown = json.dumps([r["snippet"] for r in results] + [e["text"] for e in answer["evidence"]]
                       + [c["quote"] for cl in answer["answer"]["claims"] for c in cl["citations"]])  # fmt: skip
    assert results and answer["evidence"]
    assert "https://evil.example" not in shown and "hxxps://evil[.]example/login" in shown
    assert "https://wiki.example.com/reset" in shown  # the document's own URL stays a link


def test_static_files_carry_the_content_security_policy() -> None:
    r = Client().get("/static/cairn/portal.js")
    assert r.status_code == 200
    assert "default-src 'self'" in r["Content-Security-Policy"]


def test_the_llm_api_key_is_decrypted_by_the_one_credentials_helper_and_redacted_from_logs(cast, settings,
                                                                                         recorder) -> None:  # fmt: skip
    import logging

    from answers.writers import writer_for_tenant
    from core import logfilters
    from core.crypto import encrypt_text

    approve_private_endpoint(settings, recorder.url())
    key = "sk-" + unique("canary")
    token = encrypt_text(key)
    logfilters._secrets.discard(key)  # as in a fresh worker: nothing registered it yet
    with tenant_context(cast.tenant_a.pk):
        AnswerSettings.objects.update_or_create(defaults={"writer": "openai_compatible", "model": "m",
                                                          "endpoint_url": recorder.url("/v1"),
                                                          "api_key_encrypted": token})  # fmt: skip
        writer, _ = writer_for_tenant()
    assert writer._api_key == key
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "upstream echoed %s", (key,), None)
    logfilters.RedactSecrets().filter(record)
    assert key not in record.getMessage()


def test_the_operator_set_local_model_server_is_reachable_but_the_tenant_endpoint_does_not_inherit_it(
    settings, recorder
) -> None:
    from answers.writers.llama_local import LlamaCppWriter

    # CAIRN_LLM_SERVER_URL is the operator's (bin/cairn run sets it), so llama_cpp may use it...
    settings.CAIRN = {**settings.CAIRN, "LLM_SERVER_URL": recorder.url("/v1"), "LLM_API_KEY": "local-key-1234"}
    info: dict[str, Any] = {}
    LlamaCppWriter(max_tokens=8).complete_json([{"role": "user", "content": "hi"}], {"type": "object"}, info=info)
    assert len(recorder.requests) == 1 and info["error"] == "endpoint_failed"  # the recorder is no LLM
    # ...but a tenant admin's openai_compatible endpoint on the same origin is still refused.
    info = {}
    OpenAICompatibleWriter(recorder.url("/v1"), "m").complete_json([], {}, info=info)
    assert info["error"] == "endpoint_not_allowed" and len(recorder.requests) == 1
