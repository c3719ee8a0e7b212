from django.apps import AppConfig


class AnswersConfig(AppConfig):
    name = "answers"
    default_auto_field = "django.db.models.BigAutoField"
