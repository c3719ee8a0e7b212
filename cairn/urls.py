"""The project's URL map: each app's own ``urls`` module, included under its prefix."""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from cairn import health
from cairn.api_docs import ApiDocsView

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("api/v1/schema", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/v1/docs", ApiDocsView.as_view(), name="api-docs"),
    # Identity (issue 17): SCIM provisioning and OpenID Connect sign-in; the SSO settings page of the console.
    path("scim/v2/", include("identity.scim_urls")),
    path("", include("identity.urls")),
    path("api/v1/", include("answers.urls")),
    path("api/v1/", include("tenants.urls")),
    path("api/v1/", include("connectors.urls")),
    path("hooks/confluence/", include("connectors.confluence.urls")),
    path("hooks/sharepoint/", include("connectors.sharepoint.urls")),
    path("hooks/slack/", include("slackbot.urls")),
    path("hooks/slack/", include("connectors.slack.urls")),
    path("console/", include("console.urls")),
    path("", include("portal.urls")),
]

# Any exception outside DRF's handler (webhooks, portal, health, middleware): an outage of Postgres or
# Redis answers a JSON 503 with a code, never an HTML error page (core/errors.py).
handler500 = "core.errors.server_error"
# An unknown URL under /api/ answers JSON with a code (error.code not_found); other paths keep Django's page.
handler404 = "cairn.error_pages.not_found"
