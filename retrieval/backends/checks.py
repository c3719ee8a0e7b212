"""``manage.py check --deploy`` rules for the OpenSearch index backend."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, Tags, register
from django.utils.module_loading import import_string


@register(Tags.security, deploy=True)
def check_opensearch(app_configs: Any, **kwargs: Any) -> list[Any]:
    backend = import_string(settings.CAIRN["INDEX_BACKEND"])
    if not getattr(backend, "uses_outbox", False):
        return []
    c = settings.CAIRN
    errors: list[Any] = []
    url = c.get("OPENSEARCH_URL", "")
    if not url:
        errors.append(Error("CAIRN_OPENSEARCH_URL is not set but the index backend uses OpenSearch", id="cairn.E019"))
    elif not url.startswith("https://"):
        errors.append(Error("CAIRN_OPENSEARCH_URL must use https (security plugin with TLS)", id="cairn.E020"))
    if not c.get("OPENSEARCH_VERIFY_CERTS", True):
        errors.append(Error("CAIRN_OPENSEARCH_VERIFY_CERTS is off: the index connection could be intercepted",
                            id="cairn.E021"))  # fmt: skip
    if not (c.get("OPENSEARCH_USER") and c.get("OPENSEARCH_PASSWORD")):
        errors.append(Error("CAIRN_OPENSEARCH_USER / CAIRN_OPENSEARCH_PASSWORD are not set", id="cairn.E022"))
    return errors
