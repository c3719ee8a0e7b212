"""Personal API tokens: scope and expiry are enforced by the REST API; creation and revocation are audited;
owners see and revoke their own tokens, admins every token of their tenant, nobody another tenant's."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from tenants.auth import SESSION_MEMBERSHIP_KEY
from tenants.context import tenant_context
from tenants.models import ApiToken, AuditEvent, Membership
from tenants.tokens import TokenError, do_create_personal_token, do_revoke_api_token


def membership(user) -> Membership:
    return Membership.objects.select_related("tenant", "user").get(user=user)


def api(key: str) -> APIClient:
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return c


def personal_token(user, scope: str, days: int = 30) -> str:
    m = membership(user)
    with tenant_context(m.tenant_id):
        return do_create_personal_token(m, name=f"{scope} script", scope=scope, expires_in_days=days).key


def test_a_read_token_of_an_admin_searches_but_cannot_call_admin_endpoints(cast) -> None:
    key = personal_token(cast.alice, "read")
    assert api(key).get("/api/v1/search?q=plan").status_code == 200
    refused = api(key).get("/api/v1/admin/aliases")
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "insufficient_scope"
    assert api(key).get("/api/v1/connectors").status_code == 403
    assert api(key).get("/api/v1/audit").status_code == 403


def test_an_admin_token_of_an_admin_calls_admin_endpoints(cast) -> None:
    key = personal_token(cast.alice, "admin")
    assert api(key).get("/api/v1/admin/aliases").status_code == 200


def test_a_member_cannot_mint_an_admin_token(cast) -> None:
    m = membership(cast.bob)
    with tenant_context(m.tenant_id), pytest.raises(TokenError) as exc:
        do_create_personal_token(m, name="x", scope="admin", expires_in_days=30)
    assert exc.value.code == "scope_not_allowed"


def test_an_expired_token_is_refused_with_a_code(cast) -> None:
    key = personal_token(cast.bob, "read", days=7)
    ApiToken.objects.filter(key_hash=ApiToken.hash_key(key)).update(expires_at=timezone.now() - timedelta(seconds=1))
    refused = api(key).get("/api/v1/search?q=plan")
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "token_expired"


def test_a_revoked_token_stops_working_and_both_events_are_audited(cast) -> None:
    key = personal_token(cast.bob, "read")
    client = api(key)
    assert client.get("/api/v1/search?q=plan").status_code == 200
    token = ApiToken.objects.get(key_hash=ApiToken.hash_key(key))
    assert token.last_used_at is not None
    m = membership(cast.bob)
    with tenant_context(m.tenant_id):
        do_revoke_api_token(m, token.pk)
        rows = list(AuditEvent.objects.filter(target_type="api_token", target_id=str(token.pk)).order_by("seq"))
    assert client.get("/api/v1/search?q=plan").status_code == 401
    assert [r.action for r in rows] == ["api_token.created", "api_token.revoked"]
    assert all(r.actor_username == cast.bob.username for r in rows)
    assert rows[0].details["scope"] == "read"
    assert key not in str([r.details for r in rows])


def test_a_member_cannot_revoke_a_colleagues_token_and_no_one_reaches_another_tenant(cast) -> None:
    carol_key = personal_token(cast.carol, "read")
    carol_token = ApiToken.objects.get(key_hash=ApiToken.hash_key(carol_key))
    bob = membership(cast.bob)
    with tenant_context(bob.tenant_id), pytest.raises(TokenError) as exc:
        do_revoke_api_token(bob, carol_token.pk)
    assert exc.value.code == "not_found"
    mallory = membership(cast.mallory)  # an admin, of tenant B
    with tenant_context(mallory.tenant_id), pytest.raises(TokenError):
        do_revoke_api_token(mallory, carol_token.pk)
    alice = membership(cast.alice)  # the admin of tenant A may
    with tenant_context(alice.tenant_id):
        do_revoke_api_token(alice, carol_token.pk)
    assert api(carol_key).get("/api/v1/search?q=plan").status_code == 401


def session(user) -> Client:
    c = Client()
    c.force_login(user)
    s = c.session
    s[SESSION_MEMBERSHIP_KEY] = membership(user).pk
    s.save()
    return c


def test_the_portal_page_creates_a_token_shown_once_and_lists_only_ones_own(cast) -> None:
    personal_token(cast.carol, "read")
    bob = session(cast.bob)
    created = bob.post("/tokens/", {"op": "create", "name": "nightly report", "scope": "read",
                                    "expires_in_days": "90"})  # fmt: skip
    assert created.status_code == 200
    assert created["Cache-Control"] == "no-store"
    key = created.context["new_key"]
    assert key.startswith("cairn_") and key in created.content.decode()
    assert api(key).get("/api/v1/search?q=plan").status_code == 200
    listing = bob.get("/tokens/").content.decode()
    assert "nightly report" in listing and key not in listing and "read script" not in listing
    refused = bob.post("/tokens/", {"op": "create", "name": "x", "scope": "admin", "expires_in_days": "90"})
    assert refused.status_code == 400 and b"Only tenant admins" in refused.content
    forever = bob.post("/tokens/", {"op": "create", "name": "x", "scope": "read", "expires_in_days": "100000"})
    assert forever.status_code == 400


def test_the_console_lists_the_tenants_tokens_and_an_admin_revokes_one(cast) -> None:
    carol_key = personal_token(cast.carol, "read")
    mallory_key = personal_token(cast.mallory, "read")
    alice = session(cast.alice)
    page = alice.get("/console/tokens/").content.decode()
    assert cast.carol.username in page and cast.mallory.username not in page
    token = ApiToken.objects.get(key_hash=ApiToken.hash_key(carol_key))
    assert alice.post("/console/tokens/", {"op": "revoke", "token": str(token.pk)}).status_code == 200
    assert api(carol_key).get("/api/v1/search?q=plan").status_code == 401
    other = ApiToken.objects.get(key_hash=ApiToken.hash_key(mallory_key))
    assert alice.post("/console/tokens/", {"op": "revoke", "token": str(other.pk)}).status_code == 400
    assert api(mallory_key).get("/api/v1/search?q=plan").status_code == 200
    assert session(cast.bob).get("/console/tokens/").status_code == 403


def test_the_api_reference_page_is_served_locally_under_the_csp(cast) -> None:
    page = session(cast.bob).get("/api/v1/docs")
    assert page.status_code == 200
    html = page.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert "<style>" not in html and "<script>" not in html and "https://" not in html
    assert "default-src 'self'" in page["Content-Security-Policy"]
    script = session(cast.bob).get("/api/v1/docs?script=")
    assert script.status_code == 200 and b"/api/v1/schema" in script.content
    assert Client().get("/api/v1/docs").status_code == 302


def test_last_used_is_written_once_a_minute_not_on_every_request(cast) -> None:
    key = personal_token(cast.bob, "read")
    client = api(key)
    assert client.get("/api/v1/search?q=plan").status_code == 200
    first = ApiToken.objects.get(key_hash=ApiToken.hash_key(key)).last_used_at
    assert first is not None
    assert client.get("/api/v1/search?q=plan").status_code == 200
    assert ApiToken.objects.get(key_hash=ApiToken.hash_key(key)).last_used_at == first
    # A minute later the next request moves it on.
    ApiToken.objects.filter(key_hash=ApiToken.hash_key(key)).update(last_used_at=first - timedelta(seconds=61))
    assert client.get("/api/v1/search?q=plan").status_code == 200
    assert ApiToken.objects.get(key_hash=ApiToken.hash_key(key)).last_used_at > first
