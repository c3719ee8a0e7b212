"""Helpers shared by the test modules (import from here, never from conftest or another test module):
the repository root, unique names, and putting documents into a tenant through the real ingestion path."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django.test import Client
from rest_framework.test import APIClient

from retrieval.actions import do_create_source, do_enqueue_document, do_record_identity, do_set_group_members
from retrieval.contracts import SourceDocument
from tenants.context import tenant_context


@dataclass
class Cast:
    """alice, bob, carol in tenant A; mallory in tenant B."""

    tenant_a: Any
    tenant_b: Any
    alice: Any
    bob: Any
    carol: Any
    mallory: Any
    tokens: dict[str, str]


ROOT = Path(__file__).resolve().parent.parent


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def make_cast() -> Cast:
    from tenants.actions import do_add_member, do_create_api_token, do_create_tenant, do_create_user

    a = do_create_tenant(unique("tenant-a"), "Tenant A")
    b = do_create_tenant(unique("tenant-b"), "Tenant B")
    users = {}
    tokens = {}
    for name, tenant, role in [("alice", a, "admin"), ("bob", a, "member"), ("carol", a, "member"),
                               ("mallory", b, "admin")]:  # fmt: skip
        username = unique(name)
        user = do_create_user(username, f"{username}@example.com", "pw-" + username, email_verified=True)
        m = do_add_member(tenant, user, role=role)
        users[name] = user
        tokens[name] = do_create_api_token(m)
    return Cast(a, b, users["alice"], users["bob"], users["carol"], users["mallory"], tokens)


def ingest_inline(tenant_id: int) -> int:
    """Apply the tenant's pending ingest events in this process (same code the worker runs)."""
    from retrieval.tasks import process_pending_inline

    return process_pending_inline(tenant_id)


def make_doc(external_id: str, text: str, acl: list[list[str]], *, title: str = "", version: int = 1,
             container: str = "ENG", url: str | None = None, media_type: str = "text/plain",
             updated: datetime | None = None) -> SourceDocument:  # fmt: skip
    return SourceDocument(
        external_id=external_id,
        title=title or external_id,
        url=url if url is not None else f"https://wiki.example.com/{external_id}",
        content=text.encode(),
        media_type=media_type,
        acl=tuple(tuple(c) for c in acl),
        source_version=version,
        container=container,
        updated_at=updated or datetime(2026, 1, 15, tzinfo=UTC),
    )


def source_for(tenant: Any, name: str = "wiki", kind: str = "confluence") -> Any:
    with tenant_context(tenant.pk):
        return do_create_source(kind, name)


def enqueue(tenant: Any, source: Any, doc: SourceDocument, **kw: Any) -> Any:
    with tenant_context(tenant.pk):
        return do_enqueue_document(source, doc, **kw)


def grant_groups(tenant: Any, memberships: dict[str, list[Any]]) -> None:
    """group principal -> users; each user gets a mapped confluence identity."""
    with tenant_context(tenant.pk):
        for group, users in memberships.items():
            members = []
            for user in users:
                principal = f"confluence:user:{user.username}"
                do_record_identity(principal, email=user.email, email_verified=True, display_name=user.username)
                members.append(principal)
            do_set_group_members(group, members)


def client_for(token: str) -> APIClient:
    """An API client authenticated with a bearer token (the tenant comes from the token)."""
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return c


def signed_in(user: Any) -> Client:
    """A browser-session client signed in as ``user``, in the first tenant they belong to."""
    from tenants.auth import SESSION_MEMBERSHIP_KEY
    from tenants.models import Membership

    c = Client()
    c.force_login(user)
    session = c.session
    session[SESSION_MEMBERSHIP_KEY] = Membership.objects.filter(user=user).first().pk  # type: ignore[union-attr]
    session.save()
    return c


def field_errors(html: str) -> dict[str, str]:
    """The console form's error message per field (``data-field`` markers)."""
    return dict(re.findall(r'data-field="([a-z_]+)">([^<]*)<', html))


def approve_private_endpoint(settings: Any, url: str) -> None:
    """Add ``url``'s exact origin (scheme, host, port) to the operator allow-list (pytest-django ``settings``)."""
    parts = urlsplit(url)
    origin = f"{parts.scheme}://{parts.hostname}:{parts.port}"
    current = list(settings.CAIRN.get("OPERATOR_PRIVATE_ENDPOINTS", []))
    settings.CAIRN = {**settings.CAIRN, "OPERATOR_PRIVATE_ENDPOINTS": [*current, origin]}
