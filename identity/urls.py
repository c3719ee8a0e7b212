from django.urls import path

from identity import sso

urlpatterns = [
    path("sso/start", sso.sso_start, name="sso-start"),
    path("sso/callback", sso.sso_callback, name="sso-callback"),
]
