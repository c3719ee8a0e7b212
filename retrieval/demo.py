"""The demo tenant: the 18F handbook as a Confluence-like wiki, some SEC 10-Q
filings as a restricted SharePoint-like library, and a second tenant.

Everything goes through the normal ingestion path (SourceDocument -> ingest
events -> Celery tasks -> pipeline), in an order that makes the portal useful
quickly: a small first batch, then the rest of the wiki, then the PDFs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.db import transaction

from retrieval.actions import (
    PRIORITY_BACKFILL,
    do_create_source,
    do_enqueue_document,
    do_record_identity,
    do_set_group_members,
)
from retrieval.contracts import SourceDocument
from tenants.actions import do_add_member, do_create_tenant, do_create_user
from tenants.context import tenant_context
from tenants.models import Tenant

WIKI_BASE = "https://handbook.acme.example/"
FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)

# user -> groups in the demo company.
ACME_USERS = {
    "alice": ["all-staff", "supervisors", "operations", "hr"],
    "bob": ["all-staff", "operations", "hr"],
    "carol": ["all-staff"],
}
ACME_ENTRA = {"alice": ["finance"], "carol": ["finance"]}
# Sections restricted beyond the space grant; a list means nested restrictions
# (the page's ancestor AND the page itself), which intersect.
SECTION_RESTRICTIONS = {
    "supervisor-resources": [["confluence:group:supervisors"]],
    "office-of-operations": [["confluence:group:operations"]],
    "performance-management": [["confluence:group:supervisors"], ["confluence:group:hr"]],
}
FIRST_SECTIONS = ("getting-started", "travel-and-leave")
SEC_FILES = ("2023 Q3 AAPL.pdf", "2023 Q2 AAPL.pdf", "2023 Q3 NVDA.pdf")


@dataclass(frozen=True)
class DemoLogin:
    username: str
    password: str
    tenant: str
    sees: str


DEMO_LOGINS = [
    DemoLogin("alice", "alice-demo", "acme", "everything, incl. supervisor and HR pages and the 10-Q library"),
    DemoLogin("bob", "bob-demo", "acme", "wiki incl. operations; not supervisor pages, not the 10-Q library"),
    DemoLogin("carol", "carol-demo", "acme", "general wiki pages and the 10-Q library"),
    DemoLogin("mallory", "mallory-demo", "globex", "only the second tenant's pages"),
]


def data_dir() -> Path:
    return Path(settings.CAIRN["DEMO_DATA_DIR"])


def handbook_pages() -> list[dict[str, str]]:
    path = data_dir() / "18f_handbook" / "pages_current.jsonl"
    with path.open() as fh:
        return [json.loads(line) for line in fh if line.strip()]


def page_document(page: dict[str, str], acl: list[list[str]]) -> SourceDocument:
    text = FRONT_MATTER.sub("", page["text"])
    slug = page["id"].removeprefix("pages/").removesuffix(".md")
    updated = datetime.fromisoformat(page["last_modified"])
    return SourceDocument(
        external_id=f"page:{page['id']}",
        title=page["title"],
        url=WIKI_BASE + slug + "/",
        content=text.encode(),
        media_type="text/markdown",
        acl=tuple(tuple(c) for c in acl),
        source_version=int(updated.timestamp()),
        container="HANDBOOK/" + page["section"],
        updated_at=updated,
        created_at=updated,
    )


def ordered_pages(pages: list[dict[str, str]]) -> Iterator[dict[str, str]]:
    first = [p for p in pages if p["section"] in FIRST_SECTIONS]
    rest = [p for p in pages if p["section"] not in FIRST_SECTIONS]
    yield from sorted(first, key=lambda p: len(p["text"]))
    yield from rest


def load_acme() -> int:
    tenant = do_create_tenant("acme", "Acme Corp (demo)")
    for login in DEMO_LOGINS[:3]:
        user = do_create_user(login.username, f"{login.username}@acme.example", login.password, email_verified=True)
        do_add_member(tenant, user, role="admin" if login.username == "alice" else "member")
    n = 0
    with tenant_context(tenant.pk):
        wiki = do_create_source("confluence", "Handbook wiki", authority_tier=1)
        library = do_create_source("sharepoint", "Finance library", authority_tier=0)
        groups: dict[str, list[str]] = {}
        for user, names in ACME_USERS.items():
            do_record_identity(f"confluence:user:{user}-acct", email=f"{user}@acme.example", email_verified=True,
                               display_name=user)  # fmt: skip
            for g in names:
                groups.setdefault(f"confluence:group:{g}", []).append(f"confluence:user:{user}-acct")
        for user, names in ACME_ENTRA.items():
            do_record_identity(f"entra:user:{user}-oid", email=f"{user}@acme.example", email_verified=True,
                               display_name=user)  # fmt: skip
            for g in names:
                groups.setdefault(f"entra:group:{g}", []).append(f"entra:user:{user}-oid")
        for principal, members in groups.items():
            do_set_group_members(principal, members, display_name=principal.rsplit(":", 1)[-1], source_kind="demo")
    for page in ordered_pages(handbook_pages()):
        acl = [["confluence:group:all-staff"], *SECTION_RESTRICTIONS.get(page["section"], [])]
        with tenant_context(tenant.pk), transaction.atomic():
            if do_enqueue_document(wiki, page_document(page, acl), priority=PRIORITY_BACKFILL):
                n += 1
    for name in SEC_FILES:
        path = data_dir() / "sec10q" / "docs" / name
        if not path.exists():
            continue
        doc = SourceDocument(
            external_id=f"driveitem:finance:{name}",
            title=f"{name.removesuffix('.pdf')} Form 10-Q",
            url=f"https://acme.sharepoint.example/sites/finance/Shared%20Documents/{name.replace(' ', '%20')}",
            content=path.read_bytes(),
            media_type="application/pdf",
            acl=(("entra:group:finance",),),
            source_version=1,
            container="finance/Shared Documents",
            version_label=name[:7],
        )
        with tenant_context(tenant.pk), transaction.atomic():
            if do_enqueue_document(library, doc, priority=PRIORITY_BACKFILL):
                n += 1
    return n


def load_globex() -> int:
    tenant = do_create_tenant("globex", "Globex (demo, second tenant)")
    user = do_create_user("mallory", "mallory@globex.example", "mallory-demo", email_verified=True)
    do_add_member(tenant, user, role="admin")
    n = 0
    with tenant_context(tenant.pk):
        wiki = do_create_source("confluence", "Globex wiki", authority_tier=1)
    for page in [p for p in handbook_pages() if p["section"] == "tools"][:15]:
        with tenant_context(tenant.pk), transaction.atomic():
            if do_enqueue_document(wiki, page_document(page, [["public:tenant"]]), priority=PRIORITY_BACKFILL):
                n += 1
    return n


def load_demo() -> int:
    return load_acme() + load_globex()


def demo_tenants() -> list[Tenant]:
    return list(Tenant.objects.filter(slug__in=["acme", "globex"]))
