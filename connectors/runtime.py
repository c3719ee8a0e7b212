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
from core.http import BlockedDestination, RateLimited, build_session, check_admin_url, origin_of

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
    """What the instance may reach: public https hosts always; a private base URL only when the
    operator (never a tenant admin) set ``allow_private_network`` *and* approved that exact origin
    (scheme, host, port) in ``private_network_origins``: trust does not follow a later edit."""

    allow_private_network: bool
    tls_ca_file: str
    approved_origins: frozenset[tuple[str, str, int]] = frozenset()

    @classmethod
    def for_instance(cls, instance: ConnectorInstance) -> Outbound:
        origins = frozenset(
            (str(o[0]), str(o[1]), int(o[2])) for o in (instance.private_network_origins or []) if len(o) == 3
        )
        return cls(instance.allow_private_network, instance.tls_ca_file, origins)

    def trusted(self, url: str) -> bool:
        if not self.allow_private_network:
            return False
        try:
            return origin_of(url) in self.approved_origins
        except BlockedDestination:
            return False

    def session(self, base_urls: Iterable[str], *, extra_hosts: Iterable[str] = (), **kwargs: Any) -> Any:
        hosts = list(extra_hosts)
        for url in base_urls:
            if self.trusted(url):
                hosts.append(host_port(url))
            else:
                check_admin_url(url)  # https, public addresses only; the connect re-checks the peer
        session = build_session(allowed_hosts=hosts, https_only=True, **kwargs)
        if self.tls_ca_file:
            session.verify = self.tls_ca_file
        return session

    def check_url(self, url: str) -> None:
        if not self.trusted(url):
            check_admin_url(url)


def factory_for(kind: str) -> Callable[..., Connector]:
    path = settings.CAIRN["CONNECTORS"].get(kind)
    if not path:
        raise LookupError(f"no connector registered for kind {kind!r}")
    return import_string(path)


def known_kinds() -> list[str]:
    return sorted(settings.CAIRN["CONNECTORS"])


def build_connector(instance: ConnectorInstance) -> Connector:
    """Call inside the instance's tenant_context (the Slack inbox reads tenant rows)."""
    outbound = Outbound.for_instance(instance)
    return factory_for(instance.kind)(instance, decrypt_json(instance.credentials_encrypted), outbound)
