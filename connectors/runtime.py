"""Building a live ``Connector`` from a stored ``ConnectorInstance``.

The kind -> factory map is ``settings.CAIRN["CONNECTORS"]`` (dotted paths).  A factory gets the
instance, its decrypted credentials and an ``Outbound`` helper that decides which hosts the
hardened HTTP client may reach, and returns an object implementing ``connectors.base.Connector``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.utils.module_loading import import_string

from connectors.base import Connector
from connectors.models import ConnectorInstance
from core.crypto import decrypt_json
from core.http import RateLimited, build_session, validate_url

# Waits up to this long happen in-process (small jittered retries); anything longer is handed
# back to Celery as a countdown so a throttled source never holds a worker.
MAX_INLINE_WAIT_S = 2.0


def bounded_sleep(seconds: float) -> None:
    if seconds > MAX_INLINE_WAIT_S:
        raise RateLimited(seconds, message=f"source asks to wait {seconds:.1f}s")
    time.sleep(max(0.0, seconds))


def host_port(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{(parts.hostname or '').lower()}:{port}"


@dataclass(frozen=True)
class Outbound:
    """What the instance may reach: public hosts always; its private base URLs only when the
    operator (never a tenant admin) set ``allow_private_network`` on the instance."""

    allow_private_network: bool
    tls_ca_file: str

    def session(self, base_urls: Iterable[str], *, extra_hosts: Iterable[str] = (), **kwargs: Any) -> Any:
        hosts = list(extra_hosts)
        if self.allow_private_network:
            hosts += [host_port(u) for u in base_urls]
        else:
            for url in base_urls:
                validate_url(url)  # refuses private/loopback/link-local destinations up front
        session = build_session(allowed_hosts=hosts, **kwargs)
        if self.tls_ca_file:
            session.verify = self.tls_ca_file
        return session

    def check_url(self, url: str) -> None:
        if not self.allow_private_network:
            validate_url(url)


def factory_for(kind: str) -> Callable[..., Connector]:
    path = settings.CAIRN["CONNECTORS"].get(kind)
    if not path:
        raise LookupError(f"no connector registered for kind {kind!r}")
    return import_string(path)


def known_kinds() -> list[str]:
    return sorted(settings.CAIRN["CONNECTORS"])


def build_connector(instance: ConnectorInstance) -> Connector:
    """Call inside the instance's tenant_context (the Slack inbox reads tenant rows)."""
    outbound = Outbound(instance.allow_private_network, instance.tls_ca_file)
    return factory_for(instance.kind)(instance, decrypt_json(instance.credentials_encrypted), outbound)
