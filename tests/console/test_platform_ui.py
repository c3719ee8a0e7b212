"""Platform operators: create tenants and see usage counts, never tenant content."""

from __future__ import annotations

from django.test import Client

from tenants.actions import do_create_user
from tenants.context import tenant_context
from tenants.models import AuditEvent, Membership, Tenant
from tests.support import Cast, unique


def test_it_lets_an_operator_create_a_tenant_and_see_counts_but_not_content(cast: Cast) -> None:
    name = unique("op")
    op = do_create_user(name, f"{name}@example.com", "pw-" + name)
    op.is_superuser = True
    op.save(update_fields=["is_superuser"])
    client = Client()
    r = client.post("/login/", {"username": name, "password": "pw-" + name})
    assert r.status_code == 302 and r["Location"] == "/console/platform/"
    slug = unique("new")
    r = client.post("/console/platform/", {"slug": slug, "name": "New Co", "admin_username": unique("boss"),
                                           "admin_email": "boss@example.com"})  # fmt: skip
    assert r.status_code == 302
    tenant = Tenant.objects.get(slug=slug)
    assert Membership.objects.get(tenant=tenant).role == "admin"
    with tenant_context(tenant.pk):
        assert AuditEvent.objects.get().action == "tenant.created"
    page = client.get("/console/platform/").content.decode()
    assert slug in page and cast.tenant_a.slug in page
    # No tenant membership: the search portal and the tenant console are closed to the operator.
    assert client.get("/").status_code == 302
    assert Client().get("/console/platform/").status_code == 302  # anonymous: to the login page


def test_it_refuses_the_platform_page_to_a_tenant_admin(cast: Cast) -> None:
    client = Client()
    assert (
        client.post("/login/", {"username": cast.alice.username, "password": "pw-" + cast.alice.username}).status_code
        == 302
    )
    assert client.get("/console/platform/").status_code == 403
    assert client.post("/console/platform/", {"slug": unique("x"), "name": "X"}).status_code == 403
