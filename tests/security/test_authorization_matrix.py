"""Authorisation matrix: every URL the project serves x four principals.

Principals: anonymous, a user of another tenant (mallory, an admin there), a
same-tenant user without the permission (bob, member), and a permitted user
(alice, admin of tenant A).  Every denial must leak nothing of tenant A (no
marker strings, small bodies) and change nothing.  The test fails when a URL
appears that the matrix does not cover.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient

from tenants.auth import SESSION_MEMBERSHIP_KEY
from tenants.context import tenant_context
from tenants.models import Membership
from tests.support import enqueue, ingest_inline, make_doc, source_for

MARKER = "ZQXMARKER"  # appears in tenant A's titles, alias names and connector names only


@dataclass(frozen=True)
class Route:
    kind: str  # public | member_api | admin_api | hook | portal | console | operator
    method: str = "get"
    path: Callable[[dict[str, Any]], str] | None = None
    body: dict[str, Any] | None = None


def walk(patterns: list[Any], prefix: str = "") -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for p in patterns:
        if isinstance(p, URLResolver):
            out += walk(p.url_patterns, prefix + str(p.pattern))
        elif isinstance(p, URLPattern):
            out.append((prefix + str(p.pattern), p.name or ""))
    return out


def _p(path: str) -> Callable[[dict[str, Any]], str]:
    return lambda ids: "/" + path.format(**ids)


MATRIX: dict[str, Route] = {
    "healthz": Route("public", path=_p("healthz")),
    "readyz": Route("public", path=_p("readyz")),
    "login": Route("public", path=_p("login/")),
    "api-answers": Route("member_api", "post", _p("api/v1/answers"), {"question": "quarterly plan"}),
    "api-search": Route("member_api", "get", _p("api/v1/search?q=quarterly+plan")),
    "api-answers-stream": Route("member_api", "post", _p("api/v1/answers/stream"), {"question": "quarterly plan"}),
    "api-feedback": Route("admin_api", "get", _p("api/v1/feedback")),
    "api-schema": Route("member_api", "get", _p("api/v1/schema")),
    "api-audit": Route("admin_api", "get", _p("api/v1/audit")),
    "api-audit-export": Route("admin_api", "get", _p("api/v1/audit/export?output=jsonl")),
    "api-admin-aliases": Route("admin_api", "get", _p("api/v1/admin/aliases")),
    "api-admin-alias": Route("admin_api", "delete", _p("api/v1/admin/aliases/{alias}")),
    "api-admin-authority": Route("admin_api", "get", _p("api/v1/admin/authority")),
    "api-admin-tiers": Route("admin_api", "post", _p("api/v1/admin/authority/tiers"), {"name": "x", "rank": 9}),
    "api-admin-authority-assignments": Route("admin_api", "post", _p("api/v1/admin/authority/assignments"), {}),
    "api-admin-feeds": Route("admin_api", "get", _p("api/v1/admin/freshness-feeds")),
    "api-admin-feed-refresh": Route("admin_api", "post", _p("api/v1/admin/freshness-feeds/999999/refresh")),
    "api-admin-answer-settings": Route("admin_api", "get", _p("api/v1/admin/answer-settings")),
    "api-connectors": Route("admin_api", "get", _p("api/v1/connectors")),
    "api-connector": Route("admin_api", "get", _p("api/v1/connectors/{connector}")),
    "api-connector-status": Route("admin_api", "get", _p("api/v1/connectors/{connector}/status")),
    "api-connector-test": Route("admin_api", "post", _p("api/v1/connectors/{connector}/test")),
    "api-connector-sync": Route("admin_api", "post", _p("api/v1/connectors/{connector}/sync"), {"mode": "full"}),
    "api-connector-pause": Route("admin_api", "post", _p("api/v1/connectors/{connector}/pause")),
    "api-connector-resume": Route("admin_api", "post", _p("api/v1/connectors/{connector}/resume")),
    "api-connector-webhook": Route("admin_api", "get", _p("api/v1/connectors/{connector}/webhook")),
    "api-connector-subscriptions": Route("admin_api", "post", _p("api/v1/connectors/{connector}/subscriptions")),
    "hook-confluence": Route("hook", "post", _p("hooks/confluence/{hook}/page_updated"), {"page": {"id": 1}}),
    "hook-sharepoint": Route("hook", "post", _p("hooks/sharepoint/{hook}/notifications"), {"value": []}),
    "hook-slack": Route("hook", "post", _p("hooks/slack/{hook}/events"), {"type": "event_callback"}),
    "slack-command": Route("hook", "post", _p("hooks/slack/{hook}/commands"), {"text": "hi"}),
    "slack-interactivity": Route("hook", "post", _p("hooks/slack/{hook}/interactivity"), {"payload": "{}"}),
    # POST with CSRF (tests/security/test_trust_gaps.py); a GET is a 405.
    "logout": Route("portal", "post", _p("logout/")),
    "home": Route("portal", path=_p("")),
    "portal-status": Route("portal", path=_p("portal/status")),
    "console-home": Route("console", path=_p("console/")),
    "console-connectors": Route("console", path=_p("console/connectors/")),
    "console-connector-new": Route("console", path=_p("console/connectors/new")),
    "console-connector": Route("console", path=_p("console/connectors/{connector}/")),
    "console-connector-progress": Route("console", path=_p("console/connectors/{connector}/progress")),
    "console-hierarchy": Route("console", path=_p("console/hierarchy/")),
    "console-aliases": Route("console", path=_p("console/aliases/")),
    "console-feeds": Route("console", path=_p("console/feeds/")),
    "console-people": Route("console", path=_p("console/people/")),
    "console-group": Route("console", path=_p("console/people/groups/{group}/")),
    "console-viewas": Route("console", path=_p("console/view-as/")),
    "console-audit": Route("console", path=_p("console/audit/")),
    "console-audit-export": Route("console", path=_p("console/audit/export.csv")),
    "console-audit-detail": Route("console", path=_p("console/audit/{audit}/")),
    "console-feedback": Route("console", path=_p("console/feedback/")),
    "console-quality": Route("console", path=_p("console/quality/")),
    "console-platform": Route("operator", path=_p("console/platform/")),
    "api-docs": Route("portal", path=_p("api/v1/docs")),
    "portal-tokens": Route("portal", path=_p("tokens/")),
    "console-tokens": Route("console", path=_p("console/tokens/")),
    "console-sso": Route("console", path=_p("console/sso/")),
    "console-answers": Route("console", path=_p("console/answers/")),
    # SCIM: only a provisioning token (scope scim) of the tenant's admin opens these; REST tokens do not.
    "scim-spc": Route("scim", path=_p("scim/v2/ServiceProviderConfig")),
    "scim-resource-types": Route("scim", path=_p("scim/v2/ResourceTypes")),
    "scim-resource-type": Route("scim", path=_p("scim/v2/ResourceTypes/User")),
    "scim-schemas": Route("scim", path=_p("scim/v2/Schemas")),
    "scim-schema": Route("scim", path=_p("scim/v2/Schemas/urn:ietf:params:scim:schemas:core:2.0:User")),
    "scim-search": Route("scim", "post", _p("scim/v2/.search"), {}),
    "scim-users-search": Route("scim", "post", _p("scim/v2/Users/.search"), {}),
    "scim-groups-search": Route("scim", "post", _p("scim/v2/Groups/.search"), {}),
    "scim-users": Route("scim", path=_p("scim/v2/Users")),
    "scim-user": Route("scim", path=_p("scim/v2/Users/{scim_user}")),
    "scim-groups": Route("scim", path=_p("scim/v2/Groups")),
    "scim-group": Route("scim", path=_p("scim/v2/Groups/{scim_group}")),
    "scim-not-found": Route("scim", path=_p("scim/v2/Nothing/here")),
    # SSO: public by nature; without a configured tenant or a pending sign-in they refuse with a 400.
    "sso-start": Route("sso", path=_p("sso/start?tenant=no-such-tenant")),
    "sso-callback": Route("sso", path=_p("sso/callback?code=x&state=y")),
}
SCIM_ID_ROUTES = {"scim-user", "scim-group"}

ID_ROUTES = {"api-admin-alias", "api-connector", "api-connector-status", "api-connector-test", "api-connector-sync",
             "api-connector-pause", "api-connector-resume", "api-connector-webhook", "api-connector-subscriptions",
             "console-connector",
             "console-connector-progress", "console-group", "console-audit-detail"}  # fmt: skip


def test_every_url_the_project_serves_is_in_the_matrix() -> None:
    names = {name for _, name in walk(get_resolver().url_patterns)}
    unnamed = [route for route, name in walk(get_resolver().url_patterns) if not name]
    assert not unnamed, f"routes without a name cannot be covered: {unnamed}"
    assert names - set(MATRIX) == set(), "new URLs need an entry in the authorisation matrix"
    assert set(MATRIX) - names == set(), "the matrix names URLs that no longer exist"


@pytest.fixture
def world(cast):
    """Tenant A objects whose ids other principals will try to reach."""

    alice_api = APIClient()
    alice_api.credentials(HTTP_AUTHORIZATION=f"Bearer {cast.tokens['alice']}")
    src = source_for(cast.tenant_a)
    enqueue(cast.tenant_a, src, make_doc("plan", f"The quarterly plan {MARKER} is final.", [["public:tenant"]],
                                         title=f"Quarterly plan {MARKER}"))  # fmt: skip
    ingest_inline(cast.tenant_a.pk)
    alias = alice_api.post("/api/v1/admin/aliases", {"alias": f"{MARKER.lower()}", "canonical": "quarterly"},
                           format="json")  # fmt: skip
    assert alias.status_code in (200, 201), alias.content
    conn = alice_api.post(
        "/api/v1/connectors",
        {"kind": "slack", "name": f"Slack {MARKER}", "config": {"team_id": "T1"}, "credentials": {"token": "xoxb-1"}},
        format="json",
    )
    assert conn.status_code in (200, 201), conn.content
    connector_id = conn.json()["id"]
    hook = alice_api.get(f"/api/v1/connectors/{connector_id}/webhook").json()
    from retrieval.actions import do_set_group_members
    from tenants.models import Group

    with tenant_context(cast.tenant_a.pk):
        do_set_group_members("confluence:group:matrix", ["confluence:user:x"], display_name=f"group {MARKER}")
        group_id = Group.objects.get(principal="confluence:group:matrix").pk
        from tenants.models import AuditEvent

        audit_id = AuditEvent.objects.order_by("-seq").values_list("pk", flat=True).first()
    from tenants.tokens import do_create_scim_token

    scim_tokens = {}
    for who, user in (("alice", cast.alice), ("mallory", cast.mallory)):
        m = Membership.objects.get(user=user)
        with tenant_context(m.tenant_id):
            scim_tokens[who] = do_create_scim_token(m, name="matrix").key
    scim_user = Client().post("/scim/v2/Users", {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
                                                 "userName": f"{MARKER.lower()}-{uuid.uuid4().hex[:6]}"},
                              content_type="application/scim+json",
                              HTTP_AUTHORIZATION=f"Bearer {scim_tokens['alice']}")  # fmt: skip
    assert scim_user.status_code == 201, scim_user.content
    scim_group = Client().post("/scim/v2/Groups", {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
                                                   "displayName": f"SCIM {MARKER}"},
                               content_type="application/scim+json",
                               HTTP_AUTHORIZATION=f"Bearer {scim_tokens['alice']}")  # fmt: skip
    assert scim_group.status_code == 201, scim_group.content
    ids = {
        "scim_user": scim_user.json()["id"],
        "scim_group": scim_group.json()["id"],
        "scim_tokens": scim_tokens,
        "alias": alias.json().get("id"),
        "connector": connector_id,
        "group": group_id,
        "audit": audit_id,
        "hook": str(uuid.uuid4()),  # an unknown hook: hooks authenticate by secret, see the hook tests
        "hook_info": hook,
    }
    return cast, ids


def api_client(token: str | None) -> APIClient:
    c = APIClient()
    if token:
        c.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return c


def session_client(user: Any) -> Client:
    c = Client()
    if user is not None:
        c.force_login(user)
        session = c.session
        session[SESSION_MEMBERSHIP_KEY] = Membership.objects.filter(user=user).first().pk
        session.save()
    return c


def call(client: Any, route: Route, ids: dict[str, Any]) -> Any:
    assert route.path is not None
    fn = getattr(client, route.method)
    if route.body is not None and isinstance(client, APIClient):
        return fn(route.path(ids), route.body, format="json")
    if route.body is not None:
        return fn(route.path(ids), route.body)
    return fn(route.path(ids))


def counts(tenant_id: int) -> dict[str, int]:
    from django.db import connection

    tables = ["answers_entityalias", "connectors_connectorinstance", "connectors_syncstate", "tenants_group",
              "retrieval_document", "answers_authoritytier"]  # fmt: skip
    out = {}
    with tenant_context(tenant_id), connection.cursor() as cur:
        for t in tables:
            cur.execute(f"SELECT count(*) FROM {t}")  # noqa: S608 - fixed table names
            out[t] = cur.fetchone()[0]
        cur.execute("SELECT count(*) FROM connectors_connectorinstance WHERE paused")
        out["paused"] = cur.fetchone()[0]
    return out


def assert_no_leak(response: Any, where: str) -> None:
    body = b"".join(response.streaming_content) if getattr(response, "streaming", False) else response.content
    assert MARKER.encode() not in body and MARKER.lower().encode() not in body, where
    assert len(body) < 4000, f"{where}: a denial body of {len(body)} bytes"


@pytest.mark.parametrize("name", sorted(MATRIX))
def test_each_url_denies_and_allows_the_right_principals(world, name) -> None:
    cast, ids = world
    route = MATRIX[name]
    if route.kind == "public":
        assert call(Client(), route, ids).status_code in (200, 503)
        return
    before = counts(cast.tenant_a.pk)
    if route.kind in ("member_api", "admin_api"):
        anon = call(api_client(None), route, ids)
        assert anon.status_code == 401, name
        assert b"not_authenticated" in anon.content  # JSON, or YAML for the schema view
        assert_no_leak(anon, f"{name} anonymous")
        bob = call(api_client(cast.tokens["bob"]), route, ids)
        mallory = call(api_client(cast.tokens["mallory"]), route, ids)
        if route.kind == "admin_api":
            assert bob.status_code == 403, name
            assert_no_leak(bob, f"{name} bob")
            if name in ID_ROUTES:
                assert mallory.status_code == 404, name
            assert_no_leak(mallory, f"{name} mallory")
        else:
            assert bob.status_code == 200, name
            assert mallory.status_code == 200, name
            body = b"".join(mallory.streaming_content) if getattr(mallory, "streaming", False) else mallory.content
            assert MARKER.encode() not in body, f"{name}: another tenant's data"
        assert counts(cast.tenant_a.pk) == before, f"{name}: a denied request changed tenant A"
        if route.method == "get":
            alice = call(api_client(cast.tokens["alice"]), route, ids)
            assert alice.status_code == 200, (name, alice.content[:300])
    elif route.kind == "sso":
        for client in (Client(), session_client(cast.mallory)):
            resp = call(client, route, ids)
            assert resp.status_code == 400, (name, resp.status_code)
            assert_no_leak(resp, f"{name} stranger")
        assert counts(cast.tenant_a.pk) == before
    elif route.kind == "scim":

        def scim_call(token: str | None) -> Any:
            headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
            if route.method == "post":
                return Client().post(route.path(ids), route.body, content_type="application/scim+json", **headers)
            return Client().get(route.path(ids), **headers)

        for who, token in (("anonymous", None), ("bob", cast.tokens["bob"]), ("alice-rest", cast.tokens["alice"])):
            denied = scim_call(token)
            assert denied.status_code == 401, (name, who)
            assert_no_leak(denied, f"{name} {who}")
        mallory = scim_call(ids["scim_tokens"]["mallory"])
        if name in SCIM_ID_ROUTES or name == "scim-not-found":
            assert mallory.status_code == 404, name
        assert MARKER.encode() not in mallory.content and MARKER.lower().encode() not in mallory.content, name
        assert counts(cast.tenant_a.pk) == before, f"{name}: a denied request changed tenant A"
        alice = scim_call(ids["scim_tokens"]["alice"])
        assert alice.status_code == (404 if name == "scim-not-found" else 200), (name, alice.content[:300])
    elif route.kind == "hook":
        resp = call(Client(), route, ids)
        assert 400 <= resp.status_code < 500, (name, resp.status_code)
        assert_no_leak(resp, f"{name} unknown hook")
        assert counts(cast.tenant_a.pk) == before
    elif route.kind in ("portal", "console", "operator"):
        anon = call(Client(), route, ids)
        assert anon.status_code == 302 and "/login/" in anon["Location"], name
        if route.kind == "portal":
            assert call(session_client(cast.bob), route, ids).status_code in (200, 302)
            return
        bob = call(session_client(cast.bob), route, ids)
        assert bob.status_code == 403, name
        assert_no_leak(bob, f"{name} bob")
        mallory = call(session_client(cast.mallory), route, ids)
        if route.kind == "operator" or name in ID_ROUTES:
            assert mallory.status_code in (403, 404), name
        assert_no_leak(mallory, f"{name} mallory") if mallory.status_code >= 400 else None
        body = mallory.content if not getattr(mallory, "streaming", False) else b""
        assert MARKER.encode() not in body, f"{name}: mallory saw tenant A"
        alice = call(session_client(cast.alice), route, ids)
        if route.kind == "operator":
            assert alice.status_code == 403, name
        else:
            assert alice.status_code == 200, name
        assert counts(cast.tenant_a.pk) == before, f"{name}: a denied request changed tenant A"
