from django.urls import path

from portal import tokens, views

urlpatterns = [
    path("login/", views.login_view, name="login"),
    path("logout/", views.logout_view, name="logout"),
    path("", views.home, name="home"),
    path("portal/status", views.status_fragment, name="portal-status"),
    path("tokens/", tokens.tokens, name="portal-tokens"),
]
