from django.urls import path
from drf_spectacular.views import SpectacularAPIView

from answers import views as answer_views
from cairn import health, portal

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("api/v1/answers", answer_views.AnswerView.as_view(), name="api-answers"),
    path("api/v1/search", answer_views.SearchView.as_view(), name="api-search"),
    path("api/v1/schema", SpectacularAPIView.as_view(), name="api-schema"),
    path("login/", portal.login_view, name="login"),
    path("logout/", portal.logout_view, name="logout"),
    path("", portal.home, name="home"),
    path("portal/status", portal.status_fragment, name="portal-status"),
]
