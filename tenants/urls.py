from django.urls import path

from tenants import api

urlpatterns = [
    path("audit", api.AuditListView.as_view(), name="api-audit"),
    path("audit/export", api.AuditExportView.as_view(), name="api-audit-export"),
    path("feedback", api.FeedbackView.as_view(), name="api-feedback"),
]
