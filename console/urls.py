from django.urls import path

from console import answer_settings, identity, sso, views

urlpatterns = [
    path("", views.home, name="console-home"),
    path("sso/", sso.console_sso, name="console-sso"),
    path("connectors/", views.connectors_list, name="console-connectors"),
    path("connectors/new", views.connector_new, name="console-connector-new"),
    path("connectors/<int:pk>/", views.connector_detail, name="console-connector"),
    path("connectors/<int:pk>/progress", views.connector_progress, name="console-connector-progress"),
    path("hierarchy/", views.hierarchy, name="console-hierarchy"),
    path("aliases/", views.aliases, name="console-aliases"),
    path("feeds/", views.feeds, name="console-feeds"),
    path("people/", views.people, name="console-people"),
    path("people/groups/<int:pk>/", views.group_detail, name="console-group"),
    path("view-as/", views.view_as, name="console-viewas"),
    path("audit/", views.audit_log, name="console-audit"),
    path("audit/<int:pk>/", views.audit_detail, name="console-audit-detail"),
    path("audit/export.csv", views.audit_export, name="console-audit-export"),
    path("feedback/", views.feedback_queue, name="console-feedback"),
    path("quality/", views.quality, name="console-quality"),
    path("platform/", views.platform, name="console-platform"),
    path("tokens/", identity.tokens, name="console-tokens"),
    path("answers/", answer_settings.answer_settings, name="console-answers"),
]
