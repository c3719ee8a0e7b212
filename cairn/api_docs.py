"""The browsable API reference: Swagger UI served from our own static files (drf-spectacular-sidecar).

The split view serves the page and its init script as two same-origin responses, so nothing inline
is needed and the site-wide CSP (default-src 'self') holds on this page too.  It is a page for a
signed-in person: a stranger is sent to the login page, as every portal page does.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.views import redirect_to_login
from drf_spectacular.views import SpectacularSwaggerSplitView
from rest_framework import exceptions


class ApiDocsView(SpectacularSwaggerSplitView):
    template_name = "api_docs/swagger_ui.html"
    url_name = "api-schema"
    title = "Cairn API"

    def handle_exception(self, exc: Exception) -> Any:
        if isinstance(exc, (exceptions.NotAuthenticated, exceptions.AuthenticationFailed)):
            return redirect_to_login(self.request.get_full_path())
        return super().handle_exception(exc)
