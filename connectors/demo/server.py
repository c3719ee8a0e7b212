"""``python -m connectors.demo.server --port N --tls-dir DIR``: the demo's Confluence + Graph on 127.0.0.1.

HTTPS with a self-signed certificate generated once into ``DIR`` (msal only accepts https authorities);
the demo's connector instances trust it through their operator-only ``tls_ca_file``.  Confluence answers
under ``/wiki``, Entra's token endpoint under ``/<tenant>/``, Graph under ``/v1.0`` (302 downloads to
``/_layouts/download/``).  Credentials are checked like the real services do.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import ipaddress
import json
import re
import signal
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from connectors.demo.exports import (
    ACME_FINANCE,
    CONFLUENCE_EMAIL,
    CONFLUENCE_TOKEN,
    DEMO_LOGINS,
    GRAPH_CLIENT_ID,
    GRAPH_CLIENT_SECRET,
    GRAPH_TENANT,
    Exports,
    build_exports,
    confluence_json,
    graph_json,
    may_read_page,
    page_html,
)

TOKEN = "demo-graph-access-token"
# A citation link opens here in a person's browser: it signs in with a Cairn demo login (HTTP Basic, the
# browser asks once) and sees the page only if that person may read it at the "source".
BROWSER_LOGINS = {f"Basic {base64.b64encode(f'{d.username}:{d.password}'.encode()).decode()}": d.username
                  for d in DEMO_LOGINS}  # fmt: skip
PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"


def ensure_certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1, created once and reused (restarts keep trusting it)."""
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    if cert_path.exists() and key_path.exists():
        return cert_path, key_path
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=3650))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))  # fmt: skip
    key_path.chmod(0o600)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


class DemoSources:
    def __init__(self, data_dir: Path, tls_dir: Path, *, port: int = 0, limit_per_section: int | None = None) -> None:
        self.data_dir = data_dir
        self.limit = limit_per_section
        self.cert_path, key_path = ensure_certificate(tls_dir)
        self.server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self.server.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert_path, key_path)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.base_url = f"https://127.0.0.1:{self.port}"
        self.exports: Exports = build_exports(data_dir, self.base_url, limit_per_section=limit_per_section)
        self._thread: threading.Thread | None = None

    def start(self) -> DemoSources:
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        demo = self
        basic = "Basic " + base64.b64encode(f"{CONFLUENCE_EMAIL}:{CONFLUENCE_TOKEN}".encode()).decode()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                raw = body if isinstance(body, bytes) else (b"" if body is None else json.dumps(body).encode())
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                if not isinstance(body, bytes):
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _query(self) -> tuple[str, dict[str, str]]:
                parts = urlsplit(self.path)
                return unquote(parts.path), {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}

            def _browser_user(self) -> str | None:
                user = BROWSER_LOGINS.get(self.headers.get("Authorization") or "")
                if user is None:
                    self._reply(401, b"Sign in with your Cairn demo login (e.g. alice / alice-demo).",
                                {"WWW-Authenticate": 'Basic realm="Cairn demo sources", charset="UTF-8"',
                                 "Content-Type": "text/plain; charset=utf-8"})  # fmt: skip
                return user

            def _browser_page(self, page_id: str) -> None:
                page = demo.exports.pages.get(page_id)
                if page is None:
                    return self._reply(404, b"No such page.", {"Content-Type": "text/plain; charset=utf-8"})
                user = self._browser_user()
                if user is None:
                    return None
                if not may_read_page(demo.exports, user, page):
                    return self._reply(403, f"{user} may not read this page.".encode(),
                                       {"Content-Type": "text/plain; charset=utf-8"})  # fmt: skip
                return self._reply(200, page_html(demo.exports, page),
                                   {"Content-Type": "text/html; charset=utf-8", "Content-Security-Policy": PAGE_CSP,
                                    "X-Content-Type-Options": "nosniff"})  # fmt: skip

            def _browser_file(self, name: str) -> None:
                item = next((p for p in demo.exports.pdfs.values() if p.name == name), None)
                if item is None:
                    return self._reply(404, b"No such document.", {"Content-Type": "text/plain; charset=utf-8"})
                user = self._browser_user()
                if user is None:
                    return None
                if user not in ACME_FINANCE:
                    return self._reply(403, f"{user} may not read this document.".encode(),
                                       {"Content-Type": "text/plain; charset=utf-8"})  # fmt: skip
                return self._reply(200, item.read_bytes(), {"Content-Type": "application/pdf",
                                                            "Content-Disposition": "inline",
                                                            "X-Content-Type-Options": "nosniff"})  # fmt: skip

            def do_GET(self) -> None:  # noqa: N802 - http.server API
                path, query = self._query()
                ex = demo.exports
                # The pages people open (Confluence's webui links, SharePoint's webUrl), before the API routes.
                m = re.fullmatch(r"/wiki/spaces/[^/]+/pages/(\d+)(?:/.*)?", path)
                if m:
                    return self._browser_page(m.group(1))
                if path.startswith("/sites/finance/Shared Documents/"):
                    return self._browser_file(path.removeprefix("/sites/finance/Shared Documents/"))
                if path.startswith("/wiki/"):
                    if self.headers.get("Authorization") != basic:
                        return self._reply(401, {"message": "Unauthorized"})
                    status, body = confluence_json(ex, path, query)
                    return self._reply(status, body)
                if path == f"/{GRAPH_TENANT}/v2.0/.well-known/openid-configuration":
                    base = f"{ex.base_url}/{GRAPH_TENANT}"
                    return self._reply(200, {"issuer": f"{base}/v2.0", "authorization_endpoint":
                                             f"{base}/oauth2/v2.0/authorize",
                                             "token_endpoint": f"{base}/oauth2/v2.0/token"})  # fmt: skip
                if path.startswith("/_layouts/download/"):
                    item = ex.pdfs.get(path.removeprefix("/_layouts/download/"))
                    if item is None:
                        return self._reply(404, {"error": "not found"})
                    return self._reply(200, item.read_bytes(), {"Content-Type": "application/pdf"})
                if path.startswith("/v1.0/"):
                    if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                        return self._reply(401, {"error": {"code": "InvalidAuthenticationToken"}})
                    status, headers, body = graph_json(ex, path, query)
                    return self._reply(status, body, headers)
                return self._reply(404, {"error": "not found"})

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                path, _ = self._query()
                length = int(self.headers.get("Content-Length") or 0)
                form = parse_qs(self.rfile.read(length).decode()) if length else {}
                if path == f"/{GRAPH_TENANT}/oauth2/v2.0/token":
                    ok = (form.get("grant_type") == ["client_credentials"] and form.get("client_id") == [GRAPH_CLIENT_ID]
                          and form.get("client_secret") == [GRAPH_CLIENT_SECRET])  # fmt: skip
                    if not ok:
                        return self._reply(401, {"error": "invalid_client"})
                    return self._reply(200, {"token_type": "Bearer", "expires_in": 3599, "access_token": TOKEN})
                return self._reply(404, {"error": "not found"})

        return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--data-dir", type=Path, required=True, help="../shared/data (handbook + 10-Q PDFs)")
    parser.add_argument("--tls-dir", type=Path, required=True)
    parser.add_argument("--ready-file", type=Path, help="written with {base_url, ca_file} once serving")
    args = parser.parse_args(argv)
    sources = DemoSources(args.data_dir, args.tls_dir, port=args.port).start()
    if args.ready_file:
        tmp = args.ready_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"base_url": sources.base_url, "ca_file": str(sources.cert_path)}))
        tmp.replace(args.ready_file)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print(f"[cairn] demo sources (Confluence + Graph sample exports) at {sources.base_url}", flush=True)
    stop.wait()
    sources.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
