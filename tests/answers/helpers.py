"""Helpers shared by test modules (moved out of test_engine_stages.py, so no test module imports another)."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from retrieval.actions import do_create_source, do_enqueue_document
from retrieval.contracts import SourceDocument
from tenants.context import tenant_context
from tests.support import client_for, ingest_inline

PUBLIC = (("public:tenant",),)


def add_docs(tenant: Any, source_name: str, tier: int, docs: list[dict[str, Any]], kind: str = "confluence") -> Any:
    with tenant_context(tenant.pk):
        src = do_create_source(kind, source_name, authority_tier=tier)
        for d in docs:
            do_enqueue_document(src, SourceDocument(
                external_id=d["id"], title=d.get("title", d["id"]), url=d.get("url", f"https://wiki.example.com/{d['id']}"),
                content=d["text"].encode(), media_type=d.get("media_type", "text/plain"), acl=PUBLIC, source_version=1,
                container=d.get("container", "ENG"), updated_at=d.get("updated", datetime(2026, 1, 15, tzinfo=UTC)),
                version_label=d.get("version", ""),
            ))  # fmt: skip
    ingest_inline(tenant.pk)
    return src


# Six one-sentence pages that all answer "How do employees request a standing desk for the office?" a little: the
# writer states four of them and up to two more as extras (writers/extractive.py ``extra_claims``).
STANDING_DESK_QUESTION = "How do employees request a standing desk for the office?"
STANDING_DESK_DOCS = [
    {"id": f"desk{i}", "title": f"Standing desks {i}", "text": text}
    for i, text in enumerate([
        "Employees request a standing desk for the office through the facilities portal.",
        "A standing desk converter sits on top of a regular office desk.",
        "Standing desk motors in the office are rated for 80 kilograms.",
        "Each office standing desk has a memory keypad with four presets.",
        "Standing desk surfaces in the office come in oak and white.",
        "Standing desk frames for the office ship flat in two boxes.",
    ])
]  # fmt: skip


def ask(token: str, question: str) -> dict[str, Any]:
    r = client_for(token).post("/api/v1/answers", {"question": question}, format="json")
    assert r.status_code == 200, r.content
    return r.json()


class RecordingServer:
    """A local HTTP server; ``responses`` maps a path to (status, headers, body)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.responses: dict[str, tuple[int, dict[str, str], bytes]] = {}
        outer = self

        class H(BaseHTTPRequestHandler):
            def _reply(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                outer.requests.append({"path": self.path, "body": json.loads(body) if body else None})
                status, headers, payload = outer.responses.get(self.path, (404, {}, b""))
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _reply  # noqa: N815

            def log_message(self, *a: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}{path}"
