from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from answers import admin_views as answer_admin
from answers import views as answer_views
from cairn import health, portal
from connectors.slack import bot as slack_bot
from tenants import views_audit

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("api/v1/answers", answer_views.AnswerView.as_view(), name="api-answers"),
    path("api/v1/search", answer_views.SearchView.as_view(), name="api-search"),
    path("api/v1/answers/stream", answer_views.AnswerStreamView.as_view(), name="api-answers-stream"),
    path("api/v1/audit", views_audit.AuditListView.as_view(), name="api-audit"),
    path("api/v1/audit/export", views_audit.AuditExportView.as_view(), name="api-audit-export"),
    path("api/v1/feedback", views_audit.FeedbackView.as_view(), name="api-feedback"),
    path("api/v1/schema", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/v1/admin/aliases", answer_admin.AliasListView.as_view(), name="api-admin-aliases"),
    path("api/v1/admin/aliases/<int:pk>", answer_admin.AliasDetailView.as_view(), name="api-admin-alias"),
    path("api/v1/admin/authority", answer_admin.AuthorityView.as_view(), name="api-admin-authority"),
    path("api/v1/admin/authority/tiers", answer_admin.AuthorityTierView.as_view(), name="api-admin-tiers"),
    path(
        "api/v1/admin/authority/assignments",
        answer_admin.AuthorityAssignmentView.as_view(),
        name="api-admin-authority-assignments",
    ),  # fmt: skip
    path("api/v1/admin/freshness-feeds", answer_admin.FreshnessFeedListView.as_view(), name="api-admin-feeds"),
    path(
        "api/v1/admin/freshness-feeds/<int:pk>/refresh",
        answer_admin.FreshnessFeedRefreshView.as_view(),
        name="api-admin-feed-refresh",
    ),  # fmt: skip
    path("api/v1/admin/answer-settings", answer_admin.AnswerSettingsView.as_view(), name="api-admin-answer-settings"),
    path("api/v1/", include("connectors.urls")),
    path("hooks/confluence/", include("connectors.confluence.urls")),
    path("hooks/sharepoint/", include("connectors.sharepoint.urls")),
    path("hooks/slack/<str:hook_uuid>/commands", slack_bot.slash_command, name="slack-command"),
    path("hooks/slack/<str:hook_uuid>/interactivity", slack_bot.interactivity, name="slack-interactivity"),
    path("hooks/slack/", include("connectors.slack.urls")),
    path("login/", portal.login_view, name="login"),
    path("logout/", portal.logout_view, name="logout"),
    path("", portal.home, name="home"),
    path("portal/status", portal.status_fragment, name="portal-status"),
    path("console/", include("cairn.console.urls")),
]

# Any exception outside DRF's handler (webhooks, portal, health, middleware): an outage of Postgres or
# Redis answers a JSON 503 with a code, never an HTML error page (cairn/api.py).
handler500 = "cairn.api.server_error"
# An unknown URL under /api/ answers JSON with a code (error.code not_found); other paths keep Django's page.
handler404 = "cairn.error_pages.not_found"
