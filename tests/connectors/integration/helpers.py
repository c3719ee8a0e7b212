"""Shared steps of the connector integration tests: real DB, real pipeline, real search API."""

from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

from connectors.actions import do_create_connector_instance, do_request_sync
from connectors.models import ConnectorInstance, SyncState
from connectors.tasks import execute_sync
from retrieval.actions import do_map_identity
from retrieval.models import Document
from retrieval.tasks import process_pending_inline
from tenants.audit import SYSTEM
from tenants.context import tenant_context
from tenants.models import ExternalIdentity


def make_instance(tenant_id: int, kind: str, name: str, config: dict[str, Any], credentials: dict[str, Any],
                  **operator: Any) -> ConnectorInstance:  # fmt: skip
    with tenant_context(tenant_id):
        return do_create_connector_instance(kind, name, config=config, credentials=credentials,
                                            allow_private_network=True, actor=SYSTEM, **operator)  # fmt: skip


def sync(tenant_id: int, instance: ConnectorInstance, mode: str) -> SyncState:
    """Request a run like the API does, run it in this process (the task body), then ingest."""
    with tenant_context(tenant_id):
        state = do_request_sync(instance, mode)
    for _ in range(20):  # a throttled run reschedules itself; the test re-runs it at once
        outcome = execute_sync(tenant_id, instance.pk, mode, state.run_id)
        if outcome not in ("throttled", "retrying", "locked"):
            break
    process_pending_inline(tenant_id)
    with tenant_context(tenant_id):
        return SyncState.objects.get(pk=state.pk)


def map_identities(tenant_id: int, mapping: dict[str, Any]) -> None:
    """An admin maps the source accounts to Cairn users (the cast's e-mails differ from the source's)."""
    with tenant_context(tenant_id):
        for principal, user in mapping.items():
            identity, _ = ExternalIdentity.objects.get_or_create(principal=principal)
            do_map_identity(identity, user, actor=SYSTEM)


def documents(tenant_id: int, instance: ConnectorInstance) -> dict[str, Document]:
    with tenant_context(tenant_id):
        return {d.external_id: d for d in Document.objects.filter(source_id=instance.source_id, deleted=False)}


def readable(token: str, docs: dict[str, Document]) -> set[str]:
    """External ids the holder of ``token`` finds through GET /api/v1/search (by each title)."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    found: set[str] = set()
    by_pk = {d.pk: eid for eid, d in docs.items()}
    for title in sorted({d.title for d in docs.values() if d.title}):
        resp = client.get("/api/v1/search", {"q": title[:200], "limit": 100})
        assert resp.status_code == 200, resp.content
        found |= {by_pk[r["document_id"]] for r in resp.json()["results"] if r["document_id"] in by_pk}
    return found


def table(
    cast: Any, docs: dict[str, Document], names: tuple[str, ...] = ("alice", "bob", "carol")
) -> dict[str, set[str]]:
    return {name: readable(cast.tokens[name], docs) for name in names}


def expected_table(
    readers: dict[str, set[str]], names: tuple[str, ...] = ("alice", "bob", "carol")
) -> dict[str, set[str]]:
    """Invert ``{external_id: {readers}}`` to ``{user: {external ids}}``."""
    return {name: {eid for eid, who in readers.items() if name in who} for name in names}


def tiny_pdf(text: str) -> bytes:
    """A valid one-page PDF with ``text`` (the fixtures' attachment bytes are placeholders)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def tiny_docx(text: str) -> bytes:
    import io

    import docx

    document = docx.Document()
    document.add_paragraph(text)
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()
