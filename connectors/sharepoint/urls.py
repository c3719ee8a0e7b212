from django.urls import path

from connectors.sharepoint import views

urlpatterns = [path("<str:hook_uuid>/notifications", views.notifications, name="hook-sharepoint")]
