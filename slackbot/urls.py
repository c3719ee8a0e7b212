from django.urls import path

from slackbot import views

# Mounted under hooks/slack/ next to the Slack connector's Events API endpoint (connectors/slack/urls.py).
urlpatterns = [
    path("<str:hook_uuid>/commands", views.slash_command, name="slack-command"),
    path("<str:hook_uuid>/interactivity", views.interactivity, name="slack-interactivity"),
]
