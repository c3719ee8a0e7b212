from django.urls import path

from answers import admin_views, views

urlpatterns = [
    path("answers", views.AnswerView.as_view(), name="api-answers"),
    path("search", views.SearchView.as_view(), name="api-search"),
    path("answers/stream", views.AnswerStreamView.as_view(), name="api-answers-stream"),
    path("admin/aliases", admin_views.AliasListView.as_view(), name="api-admin-aliases"),
    path("admin/aliases/<int:pk>", admin_views.AliasDetailView.as_view(), name="api-admin-alias"),
    path("admin/authority", admin_views.AuthorityView.as_view(), name="api-admin-authority"),
    path("admin/authority/tiers", admin_views.AuthorityTierView.as_view(), name="api-admin-tiers"),
    path(
        "admin/authority/assignments",
        admin_views.AuthorityAssignmentView.as_view(),
        name="api-admin-authority-assignments",
    ),  # fmt: skip
    path("admin/freshness-feeds", admin_views.FreshnessFeedListView.as_view(), name="api-admin-feeds"),
    path(
        "admin/freshness-feeds/<int:pk>/refresh",
        admin_views.FreshnessFeedRefreshView.as_view(),
        name="api-admin-feed-refresh",
    ),  # fmt: skip
    path("admin/answer-settings", admin_views.AnswerSettingsView.as_view(), name="api-admin-answer-settings"),
]
