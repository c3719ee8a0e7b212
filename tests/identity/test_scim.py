"""SCIM 2.0 provisioning over HTTP against the real gunicorn server: the independent checker scim2-tester,
then the behaviour an IT department relies on (deactivation ends access at once, groups feed permissions,
tokens of one tenant reach nothing of another)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import httpx2
import pytest
from scim2_client.engines.httpx2 import SyncSCIMClient
from scim2_tester import Status, check_server

from tenants.actions import do_add_member, do_create_tenant, do_create_user
from tenants.context import tenant_context
from tenants.models import Membership
from tenants.tokens import do_create_scim_token
from tests.support import ROOT, unique

REPORT = ROOT / "test-artifacts" / "scim2-tester.json"


def scim_token_for(admin: Membership) -> str:
    with tenant_context(admin.tenant_id):
        return do_create_scim_token(admin, name="entra").key


@pytest.fixture(scope="module")
def directory(django_db_blocker: Any) -> dict[str, Any]:
    with django_db_blocker.unblock():
        return _directory()


def _directory() -> dict[str, Any]:
    tenant = do_create_tenant(unique("scim"), "SCIM tenant")
    admin_user = do_create_user(unique("alice"), "alice@example.com", "pw-alice-123", email_verified=True)
    admin = do_add_member(tenant, admin_user, role=Membership.Role.ADMIN)
    other = do_create_tenant(unique("scim-b"), "Tenant B")
    mallory = do_add_member(other, do_create_user(unique("mallory"), "m@example.com", "pw-m-12345"),
                            role=Membership.Role.ADMIN)  # fmt: skip
    return {"tenant": tenant, "admin": admin, "token": scim_token_for(admin), "mallory_token": scim_token_for(mallory)}


def test_scim2_tester_finds_no_violation_of_a_mandatory_rule(web_server: str, directory: dict[str, Any]) -> None:
    http = httpx2.Client(base_url=f"{web_server}/scim/v2/",
                         headers={"Authorization": f"Bearer {directory['token']}"}, timeout=30)  # fmt: skip
    results = check_server(SyncSCIMClient(http))
    summary = Counter(r.status.name for r in results)
    rows = [{"title": r.title, "status": r.status.name, "resource_type": getattr(r, "resource_type", None),
             "reason": r.reason} for r in results]  # fmt: skip
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps({"summary": summary, "checks": rows}, indent=1, default=str))
    failures = [r for r in rows if r["status"] in ("ERROR", "CRITICAL")]
    assert summary[Status.SUCCESS.name] > 10, summary
    assert failures == [], json.dumps(failures, indent=1, default=str)


# The behaviour below runs in-process (Django's test client: same middleware, views and RLS).

SCIM = "application/scim+json"


def scim(client: Any, token: str, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    kwargs: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    if body is not None:
        kwargs.update(data=json.dumps(body), content_type=SCIM)
    return getattr(client, method)(f"/scim/v2/{path}", **kwargs)


def entra_user(user_name: str) -> dict[str, Any]:
    # The shape Entra ID's provisioning service sends, extension attributes included:
    # https://learn.microsoft.com/en-us/entra/identity/app-provisioning/use-scim-to-provision-users-and-groups
    return {
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User",
                    "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],
        "externalId": "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef",
        "userName": user_name,
        "active": True,
        "emails": [{"primary": True, "type": "work", "value": user_name}],
        "name": {"formatted": "Dana Diaz", "familyName": "Diaz", "givenName": "Dana"},
        "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": {"department": "Finance"},
    }  # fmt: skip


def test_deactivating_a_user_ends_their_session_tokens_and_permissions_at_once(directory: dict[str, Any]) -> None:
    from django.test import Client

    from retrieval.permissions import permission_context, user_principals
    from tenants.actions import do_create_api_token
    from tenants.auth import SESSION_MEMBERSHIP_KEY
    from tenants.models import AuditEvent

    token = directory["token"]
    client = Client()
    name = f"{unique('dana')}@contoso.example"
    created = scim(client, token, "post", "Users", entra_user(name))
    assert created.status_code == 201, created.content
    assert created["Content-Type"] == SCIM
    sid = created.json()["id"]
    assert created.json()["name"]["givenName"] == "Dana"
    m = Membership.objects.select_related("user").get(pk=int(sid))
    assert m.tenant_id == directory["tenant"].pk and m.user.email == name and not m.user.has_usable_password()

    # Dana is signed in to the portal and holds an API token.
    browser = Client()
    browser.force_login(m.user)
    session = browser.session
    session[SESSION_MEMBERSHIP_KEY] = m.pk
    session.save()
    assert browser.get("/").status_code == 200
    api_key = do_create_api_token(m, "dana", scope="read")
    assert Client().get("/api/v1/search?q=x", HTTP_AUTHORIZATION=f"Bearer {api_key}").status_code == 200
    with tenant_context(m.tenant_id):
        assert "public:tenant" in user_principals(m.user)
        assert permission_context(m.user).principals  # cached now

    # Entra deactivates with a PATCH whose value is the string "False".
    patch = {"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
             "Operations": [{"op": "Replace", "path": "active", "value": "False"}]}  # fmt: skip
    done = scim(client, token, "patch", f"Users/{sid}", patch)
    assert done.status_code == 200, done.content
    assert done.json()["active"] is False

    assert browser.get("/").status_code == 302  # back to the login page
    assert Client().get("/api/v1/search?q=x", HTTP_AUTHORIZATION=f"Bearer {api_key}").status_code == 401
    with tenant_context(m.tenant_id):
        assert user_principals(m.user) == frozenset()
        assert permission_context(m.user).principals == frozenset()  # the cached context did not survive
        actions = list(
            AuditEvent.objects.filter(target_type="membership", target_id=sid).values_list("action", flat=True)
        )
    assert actions == ["scim.user_created", "scim.user_deactivated"]


def test_a_scim_group_grants_what_its_acl_names_and_removal_takes_it_away(directory: dict[str, Any]) -> None:
    from django.test import Client

    from retrieval.permissions import user_principals
    from tenants.models import Group

    token, client = directory["token"], Client()
    sid = scim(client, token, "post", "Users", entra_user(f"{unique('erin')}@contoso.example")).json()["id"]
    created = scim(client, token, "post", "Groups", {
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": unique("Finance"),
        "externalId": "9b1c3c1e-entra-object-id", "members": [{"value": sid}]})  # fmt: skip
    assert created.status_code == 201, created.content
    gid = created.json()["id"]
    assert [x["value"] for x in created.json()["members"]] == [sid]
    m = Membership.objects.select_related("user").get(pk=int(sid))
    with tenant_context(m.tenant_id):
        principal = Group.objects.get(pk=int(gid)).principal
        assert principal in user_principals(m.user)
    remove = {"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
              "Operations": [{"op": "remove", "path": f'members[value eq "{sid}"]'}]}  # fmt: skip
    assert scim(client, token, "patch", f"Groups/{gid}", remove).status_code == 200
    with tenant_context(m.tenant_id):
        assert principal not in user_principals(m.user)
    unknown = scim(client, token, "put", f"Groups/{gid}", {
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "x",
        "members": [{"value": "999999999"}]})  # fmt: skip
    assert unknown.status_code == 400 and unknown.json()["scimType"] == "invalidValue"


def test_filters_conflicts_and_errors_speak_scim(directory: dict[str, Any]) -> None:
    from django.test import Client

    token, client = directory["token"], Client()
    name = f"{unique('fay')}@contoso.example"
    assert scim(client, token, "post", "Users", entra_user(name)).status_code == 201
    found = scim(client, token, "get", f"Users?filter=userName+eq+%22{name.upper()}%22")
    assert found.status_code == 200 and found.json()["totalResults"] == 1
    again = scim(client, token, "post", "Users", entra_user(name))
    assert again.status_code == 409 and again.json()["scimType"] == "uniqueness"
    bad = scim(client, token, "get", "Users?filter=userName+eq")
    assert bad.status_code == 400 and bad.json()["scimType"] == "invalidFilter"
    assert scim(client, token, "post", "Users", {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"]}
                ).status_code == 400  # fmt: skip


def test_one_tenants_token_reaches_nothing_of_another_and_api_tokens_do_not_open_scim(
        directory: dict[str, Any], cast: Any) -> None:  # fmt: skip
    from django.test import Client

    client = Client()
    sid = scim(client, directory["token"], "post", "Users", entra_user(f"{unique('gil')}@contoso.example")
               ).json()["id"]  # fmt: skip
    mallory = directory["mallory_token"]
    assert scim(client, mallory, "get", f"Users/{sid}").status_code == 404
    assert scim(client, mallory, "delete", f"Users/{sid}").status_code == 404
    assert sid not in {r["id"] for r in scim(client, mallory, "get", "Users").json()["Resources"]}
    # alice's REST token (scope admin) is not a provisioning token, and a provisioning token is no API token.
    assert scim(client, cast.tokens["alice"], "get", "Users").status_code == 401
    assert scim(client, "", "get", "Users").status_code == 401
    assert client.get("/api/v1/search?q=x", HTTP_AUTHORIZATION=f"Bearer {directory['token']}").status_code == 401
    assert scim(client, directory["token"], "get", f"Users/{sid}").status_code == 200
