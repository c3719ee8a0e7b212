from django.urls import path

from connectors.confluence import views

urlpatterns = [path("<str:hook_uuid>/<str:event_name>", views.webhook, name="hook-confluence")]
