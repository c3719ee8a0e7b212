"""A local HTTP server that plays the four Slack Web API methods the bot calls.

Wire format as Slack documents it: form-encoded ``POST /api/<method>`` with a Bearer token,
``{"ok": ...}`` JSON answers, cursor pagination for ``conversations.members``, and HTTP 429
with ``Retry-After`` when a test asks for a rate limit.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from tests.security.secret_canary import secret

TOKEN = secret("xoxb-bot-test-token")  # carries the run's secret canary (tests/security/secret_canary.py)


@dataclass
class FakeWebApi:
    members: dict[str, list[str]] = field(default_factory=dict)
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    calls: list[tuple[float, str, dict[str, str]]] = field(default_factory=list)
    rate_limits: dict[str, str] = field(default_factory=dict)  # method -> Retry-After for its next call
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def posted(self, method: str, **match: str) -> list[dict[str, Any]]:
        out = []
        with self.lock:
            calls = list(self.calls)
        for _, m, params in calls:
            if m == method and all(params.get(k) == v for k, v in match.items()):
                item: dict[str, Any] = dict(params)
                if "blocks" in item:
                    item["blocks"] = json.loads(item["blocks"])
                out.append(item)
        return out

    def wait_for(self, method: str, timeout: float = 60.0, **match: str) -> list[dict[str, Any]]:
        deadline = time.time() + timeout
        while time.time() < deadline:
            found = self.posted(method, **match)
            if found:
                return found
            time.sleep(0.2)
        raise AssertionError(f"no {method} call matching {match} within {timeout}s; calls: {self.calls}")

    def answer(self, method: str, params: dict[str, str]) -> tuple[int, dict[str, str], dict[str, Any]]:
        with self.lock:
            retry = self.rate_limits.pop(method, None)
        if retry is not None:
            return 429, {"Retry-After": retry}, {"ok": False, "error": "ratelimited"}
        with self.lock:
            self.calls.append((time.time(), method, params))
        if method in ("chat.postMessage", "chat.postEphemeral"):
            return 200, {}, {"ok": True, "channel": params.get("channel"), "ts": f"{time.time():.6f}"}
        if method == "conversations.members":
            members = self.members.get(params.get("channel", ""))
            if members is None:
                return 200, {}, {"ok": False, "error": "channel_not_found"}
            # Two pages, to exercise the cursor.
            if params.get("cursor") == "page2":
                return 200, {}, {"ok": True, "members": members[1:], "response_metadata": {"next_cursor": ""}}
            return 200, {}, {"ok": True, "members": members[:1], "response_metadata": {"next_cursor": "page2"}}
        if method == "users.info":
            user = self.users.get(params.get("user", ""))
            if user is None:
                return 200, {}, {"ok": False, "error": "user_not_found"}
            return 200, {}, {"ok": True, "user": user}
        return 200, {}, {"ok": False, "error": "unknown_method"}


@contextmanager
def serve(api: FakeWebApi) -> Iterator[FakeWebApi]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server naming
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length).decode()
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                status, headers, body = 200, {}, {"ok": False, "error": "invalid_auth"}
            else:
                url = urlparse(self.path)
                # slack_sdk sends plain methods' arguments in the query string and chat.* as JSON.
                params = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
                if "json" in self.headers.get("Content-Type", ""):
                    params.update({k: v if isinstance(v, str) else json.dumps(v)
                                   for k, v in json.loads(raw or "{}").items()})  # fmt: skip
                else:
                    params.update({k: v[0] for k, v in parse_qs(raw, keep_blank_values=True).items()})
                status, headers, body = api.answer(url.path.rsplit("/", 1)[-1], params)
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    api.url = f"http://127.0.0.1:{server.server_address[1]}/api/"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
