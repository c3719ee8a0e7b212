"""Build a ``SharePointConnector`` from a stored connector instance (registered in settings)."""

from __future__ import annotations

from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization

from connectors.runtime import Outbound, bounded_sleep
from connectors.sharepoint.client import AUTHORITY_HOST, GRAPH_BASE_URL
from connectors.sharepoint.sync import SharePointConfig, SharePointConnector


def build(instance: Any, credentials: dict[str, Any], outbound: Outbound) -> SharePointConnector:
    cfg = instance.config
    graph = str(cfg.get("graph_base_url") or GRAPH_BASE_URL)
    authority = str(cfg.get("authority_host") or AUTHORITY_HOST)
    config = SharePointConfig(
        tenant_id=str(cfg["tenant_id"]),
        client_id=str(cfg["client_id"]),
        client_secret=str(credentials.get("client_secret", "")),
        site_ids=tuple(cfg.get("site_ids") or ()),
        graph_base_url=graph,
        authority_host=authority,
        include_lists=bool(cfg.get("include_lists", True)),
        include_pages=bool(cfg.get("include_pages", True)),
        site_group_members={k: tuple(v) for k, v in (cfg.get("site_group_members") or {}).items()},
        client_certificate=certificate_credential(str(credentials.get("client_certificate") or "")),
        sharepoint_base_url=str(cfg.get("sharepoint_base_url") or ""),
    )
    hosts = [graph, authority] + ([config.sharepoint_base_url] if config.sharepoint_base_url else [])
    session = outbound.session(hosts, max_response_bytes=110 * 1024 * 1024)
    return SharePointConnector(config, session=session, sleep=bounded_sleep)


def certificate_credential(pem: str) -> dict[str, str] | None:
    """A PEM holding the app's certificate and its private key -> msal's certificate credential.

    Entra identifies the certificate by its SHA-1 thumbprint (the ``x5t`` of the client
    assertion msal signs).  https://learn.microsoft.com/en-us/entra/identity-platform/certificate-credentials
    """
    if not pem.strip():
        return None
    data = pem.encode()
    try:
        cert = x509.load_pem_x509_certificate(data)
        key = serialization.load_pem_private_key(data, password=None)
    except ValueError as exc:
        # ValueError: what every caller of build_connector reports as a configuration problem.
        raise ValueError("client_certificate must be one PEM with the certificate and its unencrypted key") from exc
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return {"private_key": key_pem, "thumbprint": cert.fingerprint(hashes.SHA1()).hex()}  # noqa: S303 - Entra's x5t
