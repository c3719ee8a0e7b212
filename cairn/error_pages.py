"""``handler404``: an unknown URL under ``/api/`` answers in the API's error shape.

Django's default is an HTML page, which an API client cannot read a code from (for example
``/api/v1/connectors/abc``, whose id does not match the route). Other paths keep Django's page.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse({"error": {"code": "not_found", "message": "No such API URL."}}, status=404)
    return defaults.page_not_found(request, exception)
