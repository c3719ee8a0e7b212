from django.urls import path

from connectors import api

urlpatterns = [
    path("connectors", api.ConnectorListView.as_view(), name="api-connectors"),
    path("connectors/<int:pk>", api.ConnectorDetailView.as_view(), name="api-connector"),
    path("connectors/<int:pk>/status", api.ConnectorStatusView.as_view(), name="api-connector-status"),
    path("connectors/<int:pk>/test", api.ConnectorTestView.as_view(), name="api-connector-test"),
    path("connectors/<int:pk>/sync", api.ConnectorSyncView.as_view(), name="api-connector-sync"),
    path("connectors/<int:pk>/pause", api.ConnectorPauseView.as_view(), name="api-connector-pause"),
    path("connectors/<int:pk>/resume", api.ConnectorResumeView.as_view(), name="api-connector-resume"),
    path("connectors/<int:pk>/webhook", api.ConnectorWebhookView.as_view(), name="api-connector-webhook"),
    path(
        "connectors/<int:pk>/subscriptions",
        api.ConnectorSubscriptionsView.as_view(),
        name="api-connector-subscriptions",
    ),  # fmt: skip
]
