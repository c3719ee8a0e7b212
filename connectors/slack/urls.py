from django.urls import path

from connectors.slack import views

urlpatterns = [path("<str:hook_uuid>/events", views.events, name="hook-slack")]
