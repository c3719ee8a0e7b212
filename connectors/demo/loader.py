"""The demo tenants, loaded through the real connectors from bundled sample exports served locally.

``connectors.demo.server`` (started by ``bin/cairn run``) plays Confluence Cloud and Microsoft Graph from
``../shared/data``: the 18F handbook as Confluence spaces with per-section read restrictions (one of them
nested: ``performance-management`` needs *supervisors* AND *hr*), the engineering space ``ENG`` (the design
seed's worked examples), all 20 SEC 10-Q PDFs as a SharePoint drive shared with the AAD group *finance*,
and a small site for the second tenant.  This module only creates
tenants, users and connector instances and asks for sync runs; documents, ACLs, groups and identities
come from the connectors through the sync tasks and the ingestion pipeline, like for any customer.

Order for a fast first answer: the small ``ONBOARD`` space (getting-started, travel-and-leave) is its own
connector instance and is synced first; its groups arrive at the end of that short run.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings

from connectors.actions import do_create_connector_instance, do_request_sync, do_update_connector_instance
from connectors.demo.exports import (
    CONFLUENCE_EMAIL,
    CONFLUENCE_TOKEN,
    DEMO_LOGINS,
    GRAPH_CLIENT_ID,
    GRAPH_CLIENT_SECRET,
    GRAPH_TENANT,
    SITE_ID,
)
from connectors.models import ConnectorInstance, SyncState
from retrieval.contracts import SourceDocument
from tenants.actions import do_add_member, do_create_tenant, do_create_user
from tenants.audit import SYSTEM
from tenants.context import tenant_context
from tenants.models import Tenant

FIRST_SECTIONS = ("getting-started", "travel-and-leave")
WIKI_BASE = "https://handbook.acme.example/"
FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)


@dataclass(frozen=True)
class DemoSourcesEndpoint:
    """Where the local sample-export server listens and the certificate it presents."""

    base_url: str
    ca_file: str


@dataclass(frozen=True)
class DemoConnector:
    tenant: str
    name: str
    kind: str
    config: dict[str, Any]
    credentials: dict[str, Any]


def data_dir() -> Path:
    return Path(settings.CAIRN["DEMO_DATA_DIR"])


def handbook_pages() -> list[dict[str, str]]:
    """The raw handbook export (the evaluation suites build their own documents from it)."""
    path = data_dir() / "18f_handbook" / "pages_current.jsonl"
    with path.open() as fh:
        return [json.loads(line) for line in fh if line.strip()]


def page_document(page: dict[str, str], acl: list[list[str]]) -> SourceDocument:
    """One handbook page as a SourceDocument (used by ``evaluation``, not by the demo load)."""
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


def demo_connectors(base_url: str) -> list[DemoConnector]:
    """In sync order: the small onboarding space first, then the library, the handbook, the second tenant."""
    wiki_creds = {"email": CONFLUENCE_EMAIL, "api_token": CONFLUENCE_TOKEN}
    graph = {"tenant_id": GRAPH_TENANT, "client_id": GRAPH_CLIENT_ID, "site_ids": [SITE_ID],
             "graph_base_url": f"{base_url}/v1.0", "authority_host": base_url,
             "include_lists": False, "include_pages": False}  # fmt: skip
    return [
        DemoConnector(
            "acme", "Onboarding wiki", "confluence", {"site_url": base_url, "space_keys": ["ONBOARD"]}, wiki_creds
        ),  # fmt: skip
        DemoConnector("acme", "Finance library", "sharepoint", graph, {"client_secret": GRAPH_CLIENT_SECRET}),
        DemoConnector(
            "acme", "Handbook wiki", "confluence", {"site_url": base_url, "space_keys": ["HANDBOOK", "ENG"]}, wiki_creds
        ),  # fmt: skip
        DemoConnector(
            "globex", "Globex wiki", "confluence", {"site_url": base_url, "space_keys": ["GLOBEX"]}, wiki_creds
        ),  # fmt: skip
    ]


def ensure_tenants() -> dict[str, Tenant]:
    acme = do_create_tenant("acme", "Acme Corp (demo)")
    for login in DEMO_LOGINS[:3]:
        user = do_create_user(login.username, f"{login.username}@acme.example", login.password, email_verified=True)
        do_add_member(acme, user, role="admin" if login.username == "alice" else "member")
    globex = do_create_tenant("globex", "Globex (demo, second tenant)")
    mallory = do_create_user("mallory", "mallory@globex.example", "mallory-demo", email_verified=True)
    do_add_member(globex, mallory, role="admin")
    return {"acme": acme, "globex": globex}


def do_point_demo_instance(spec: DemoConnector, endpoint: DemoSourcesEndpoint) -> ConnectorInstance:
    """Create (or re-point, after a restart on another port) one demo instance.

    ``allow_private_network`` and ``tls_ca_file`` are operator-only settings: the demo operator trusts its
    own local server and certificate; the admin API can never set them.
    """
    instance = do_create_connector_instance(spec.kind, spec.name, config=spec.config, credentials=spec.credentials,
                                            allow_private_network=True, tls_ca_file=endpoint.ca_file,
                                            actor=SYSTEM)  # fmt: skip
    if (instance.config != spec.config or instance.tls_ca_file != endpoint.ca_file
            or not instance.allow_private_network):  # fmt: skip
        # The operator re-approves the (new) local origin: trust never follows an edit on its own.
        instance = do_update_connector_instance(instance, config=spec.config, approve_private_network=True,
                                                actor=SYSTEM)  # fmt: skip
        ConnectorInstance.objects.filter(pk=instance.pk).update(tls_ca_file=endpoint.ca_file)
        instance.refresh_from_db()
    return instance


# A sync run holds a worker slot while it walks its source; starting the big ones only after the small
# first space is in leaves the other slot to ingestion, so the first pages become searchable quickly.
FIRST_STAGE = ("Onboarding wiki", "Finance library")


def load_demo(endpoint: DemoSourcesEndpoint, stage: int | None = None) -> list[tuple[int, ConnectorInstance, str]]:
    """Idempotent: a finished full sync is followed by an incremental one (nothing new, no duplicates);
    an interrupted one resumes from its checkpoint.  ``stage`` 1 = ``FIRST_STAGE``, 2 = the rest, None = all.
    Returns (tenant id, instance, mode requested)."""
    tenants = ensure_tenants()
    out: list[tuple[int, ConnectorInstance, str]] = []
    for spec in demo_connectors(endpoint.base_url):
        if stage is not None and (spec.name in FIRST_STAGE) != (stage == 1):
            continue
        tenant_id = tenants[spec.tenant].pk
        with tenant_context(tenant_id):
            instance = do_point_demo_instance(spec, endpoint)
            full = SyncState.objects.get(instance=instance, mode=SyncState.Mode.FULL)
            mode = SyncState.Mode.INCREMENTAL if full.status == SyncState.Status.DONE else SyncState.Mode.FULL
            do_request_sync(instance, mode)
        out.append((tenant_id, instance, str(mode)))
    return out


def sync_progress(runs: list[tuple[int, ConnectorInstance, str]]) -> list[tuple[str, str, str, int]]:
    """(instance name, mode, status, documents upserted) per requested run."""
    rows = []
    for tenant_id, instance, mode in runs:
        with tenant_context(tenant_id):
            state = SyncState.objects.get(instance=instance, mode=mode)
            rows.append((instance.source.name, mode, state.status, state.docs_upserted))
    return rows


def demo_tenants() -> list[Tenant]:
    return list(Tenant.objects.filter(slug__in=["acme", "globex"]))
