from django.apps import AppConfig


class RetrievalConfig(AppConfig):
    name = "retrieval"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from retrieval.backends import checks  # noqa: F401  (registers the OpenSearch deploy checks)
