"""Security headers on every response (CSP included)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse

# No inline scripts, no third-party origins: htmx and our JS are served from /static/.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)


class SecurityHeadersMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.setdefault("Cross-Origin-Opener-Policy", "same-origin")
        response.setdefault("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
        return response


def add_static_headers(headers: Any, path: str, url: str) -> None:
    """WhiteNoise's hook (``WHITENOISE_ADD_HEADERS_FUNCTION``): static files carry the pages' policy.

    WhiteNoise answers /static/ before ``SecurityHeadersMiddleware`` runs, so without this an SVG or
    HTML file under /static/ was served with no CSP at all.
    """
    headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    headers["Cross-Origin-Opener-Policy"] = "same-origin"
