"""The demo's sample-export server + the real connectors + sync task + pipeline, for a small subset of pages.

Who can read what is asked through ``GET /api/v1/search``: the space grant (all-staff), a restricted
section (supervisors), the nested one (supervisors AND hr), and the 10-Q library (AAD group finance).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.conf import settings as django_settings
from rest_framework.test import APIClient

from connectors.demo.loader import DemoSourcesEndpoint, demo_connectors, do_point_demo_instance
from connectors.demo.server import DemoSources
from tenants.context import tenant_context
from tests.connectors.integration.helpers import documents, sync, table
from tests.support import unique


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoSources]:
    from pathlib import Path

    data = Path(django_settings.CAIRN["DEMO_DATA_DIR"])
    server = DemoSources(data, tmp_path_factory.mktemp("demo-tls"), limit_per_section=1)
    # One 10-Q is enough to check the library's ACL and keeps the test lean (embedding is the cost): Apple's
    # fiscal Q3 2023, whose statement rows the markup assertions below read.
    server.exports.pdfs = {k: v for k, v in server.exports.pdfs.items() if v.name == "2023 Q3 AAPL.pdf"}
    assert len(server.exports.pdfs) == 1
    server.start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _private_queue(settings) -> None:  # type: ignore[no-untyped-def]
    settings.CAIRN = {**settings.CAIRN, "CONNECTOR_QUEUE": unique("test-inline")}


def _instances(cast, sources: DemoSources) -> dict[str, object]:  # type: ignore[no-untyped-def]
    endpoint = DemoSourcesEndpoint(sources.base_url, str(sources.cert_path))
    # The demo's verified e-mails are <name>@acme.example; the cast's differ, so give the cast those.
    out = {}
    with tenant_context(cast.tenant_a.pk):
        for spec in demo_connectors(sources.base_url):
            if spec.tenant == "acme" and spec.name in ("Handbook wiki", "Finance library"):
                named = type(spec)(spec.tenant, unique(spec.name), spec.kind, spec.config, spec.credentials)
                out[spec.name] = do_point_demo_instance(named, endpoint)
    return out


def _found(token: str, query: str, docs: dict) -> set[str]:  # type: ignore[type-arg]
    """External ids among ``docs`` that GET /api/v1/search returns to the holder of ``token``."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    resp = client.get("/api/v1/search", {"q": query, "limit": 50})
    assert resp.status_code == 200, resp.content
    by_pk = {d.pk: eid for eid, d in docs.items()}
    return {by_pk[r["document_id"]] for r in resp.json()["results"] if r["document_id"] in by_pk}


def test_the_demo_exports_sync_through_the_connectors_with_the_demo_permissions(cast, sources) -> None:
    from tests.connectors.integration.helpers import map_identities

    instances = _instances(cast, sources)
    tenant = cast.tenant_a.pk
    for name in ("Handbook wiki", "Finance library"):
        state = sync(tenant, instances[name], "full")
        assert state.status == "done", (name, state.last_error)
    # Identities arrive with verified e-mails of the demo company; the cast's accounts use other
    # addresses, so an admin maps them (what the console's identity page does).
    map_identities(tenant, {"confluence:user:557058:demo-alice": cast.alice, "confluence:user:557058:demo-bob": cast.bob,
                            "confluence:user:557058:demo-carol": cast.carol, "entra:user:oid-alice": cast.alice,
                            "entra:user:oid-carol": cast.carol})  # fmt: skip

    wiki = documents(tenant, instances["Handbook wiki"])
    pages = sources.exports.pages
    under = {title: {f"page:{p.id}" for p in pages.values() if p.parent and pages[p.parent].title == title}
             for title in ("Section: supervisor resources", "Section: office of operations",
                           "Section: performance management")}  # fmt: skip
    sections = {f"page:{p.id}" for p in pages.values() if p.title.startswith("Section: ")}
    supervisors = under["Section: supervisor resources"] | under["Section: performance management"]
    operations = under["Section: office of operations"]
    assert all(under.values()) and supervisors | operations | sections <= set(wiki)
    general = set(wiki) - supervisors - operations - sections
    assert general
    got = table(cast, wiki)
    # alice: everything; bob (operations, hr; not a supervisor): general + operations; carol: general.
    # performance-management needs supervisors (its section page) AND hr (the page): bob has hr only.
    # ``table`` finds documents by searching their titles; a few short pages rank below others for their
    # own title, so the expectation is checked on what alice (who reads everything) finds.
    seen = got["alice"]
    assert supervisors | operations | sections <= seen and len(seen) >= len(wiki) - 3
    ops_section = {e for e in sections if wiki[e].title.endswith("operations")}
    assert got["bob"] == seen & (general | operations | ops_section)
    assert got["carol"] == seen & general

    library = documents(tenant, instances["Finance library"])
    assert len(library) == 1
    lib = {name: _found(cast.tokens[name], "Apple iPhone net sales", library) for name in ("alice", "bob", "carol")}
    assert lib == {"alice": set(library), "bob": set(), "carol": set(library)}
    assert table(cast, {**wiki, **library}, ("mallory",)) == {"mallory": set()}

    # Raw markup never reaches indexed text or titles (Markdown, Liquid, HTML tags, entities, table pipes),
    # and the filing's statement rows arrive labelled.
    from retrieval.models import Chunk
    from tests.connectors.integration.test_demo_markup_guard import markup_in

    with tenant_context(tenant):
        chunks = list(
            Chunk.objects.filter(document__in=[*wiki.values(), *library.values()]).values_list("text", flat=True)
        )
    assert len(chunks) > 100
    assert {d.title: markup_in(d.title) for d in {**wiki, **library}.values() if markup_in(d.title)} == {}
    assert [(markup_in(text), text[:120]) for text in chunks if markup_in(text)] == []
    assert any("Total net sales: $81,797 million, three months ended July 1, 2023" in text for text in chunks)
