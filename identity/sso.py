"""OpenID Connect single sign-on per tenant: authorization code flow with PKCE (RFC 7636).

Libraries do the protocol: Authlib builds the authorization request and exchanges the code
(``OAuth2Session`` with ``code_challenge_method="S256"``) and validates the ID token's claims
(``authlib.oidc.core.CodeIDToken``: iss, aud, azp, exp, iat, nonce); joserfc (Authlib's JOSE
library) verifies the signature against the provider's JWKS.  What this module adds is policy:

- the issuer in the discovery document must equal the configured issuer (OpenID Connect
  Discovery 1.0 §4.3), only asymmetric signature algorithms are accepted (never ``none`` or HS*);
- an unknown ``kid`` refetches the JWKS (key rotation), at most once per
  ``SSO_JWKS_MIN_REFRESH_SECONDS`` per issuer, so random kids cannot make us hammer the provider;
- Entra ID: the ``tid`` claim must equal the configured directory id (a multi-tenant app registration
  otherwise accepts users of every Entra directory), and the ``oid`` claim links the person's
  SharePoint/Entra principal (``entra:user:<oid>``) without an admin step;
- the e-mail must be verified (``email_verified``, or the Entra directory vouching via ``tid``) and in
  one of the tenant's allowed domains; the person must already be a member of the tenant (created
  by SCIM or an admin): sign-in never creates an account, and a subject bound once cannot be
  re-bound by another subject presenting the same address.

Every outbound call uses the hardened HTTP session's adapters (core/http.py): the issuer is
admin-supplied, so only https to public addresses, unless the operator allowed the host
(``CAIRN_SSO_ALLOWED_HOSTS``, host:port entries).
"""

from __future__ import annotations

import base64
import json
import secrets
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from authlib.integrations.requests_client import OAuth2Session
from authlib.oidc.core import CodeIDToken
from django.conf import settings
from django.contrib.auth import login
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from core.crypto import decrypt_text, encrypt_text
from core.http import OutboundHTTPError, build_session
from retrieval.permissions import bump_acl_version
from tenants.audit import do_record_audit_event
from tenants.auth import SESSION_MEMBERSHIP_KEY
from tenants.context import tenant_context
from tenants.models import ExternalIdentity, Membership, Tenant, TenantSso

PENDING_KEY = "cairn_sso_pending"
ALLOWED_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]
CLOCK_LEEWAY_SECONDS = 60
PENDING_MAX_AGE_SECONDS = 600


class SsoError(Exception):
    """A refused sign-in or configuration, with a machine-readable code (shown to the person as text)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


@dataclass(frozen=True)
class SsoConfig:
    tenant_id: int
    issuer: str
    client_id: str
    client_secret: str
    allowed_email_domains: tuple[str, ...]
    entra_tenant_id: str

    @classmethod
    def of(cls, row: TenantSso) -> SsoConfig:
        return cls(row.tenant_id, row.issuer, row.client_id, decrypt_text(row.client_secret_encrypted),
                   tuple(d.lower() for d in row.allowed_email_domains), row.entra_tenant_id)  # fmt: skip


# ------------------------------------------------------------------------------------------ outbound


def _allowed_hosts() -> list[str]:
    return list(settings.CAIRN.get("SSO_ALLOWED_HOSTS", []))


def check_issuer_url(issuer: str) -> None:
    parts = urlsplit(issuer)
    host_port = f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}"
    operator_allowed = host_port in _allowed_hosts() or (parts.hostname or "") in _allowed_hosts()
    if parts.scheme != "https" and not operator_allowed:
        raise SsoError("issuer_not_https", "The issuer must be an https URL.")
    if not parts.hostname or parts.username or parts.password or parts.query or parts.fragment:
        raise SsoError("invalid_issuer", "The issuer must be a plain URL (no credentials, query or fragment).")


def _http() -> Any:
    return build_session(allowed_hosts=_allowed_hosts(), timeout=(5.0, 15.0), max_response_bytes=1_000_000)


def _get_json(url: str) -> dict[str, Any]:
    check_issuer_url(url)
    try:
        response = _http().get(url, headers={"Accept": "application/json"})
    except (OutboundHTTPError, OSError) as exc:
        raise SsoError("provider_unreachable", "The identity provider could not be reached.") from exc
    if response.status_code != 200:
        raise SsoError("provider_error", f"The identity provider answered {response.status_code}.")
    try:
        data = response.json()
    except ValueError:
        raise SsoError("provider_error", "The identity provider did not answer JSON.") from None
    if not isinstance(data, dict):
        raise SsoError("provider_error", "The identity provider did not answer a JSON object.")
    return data


def discover(issuer: str) -> dict[str, Any]:
    """The provider's metadata (OpenID Connect Discovery 1.0 §4), its issuer checked exactly."""
    metadata = _get_json(issuer.rstrip("/") + "/.well-known/openid-configuration")
    if metadata.get("issuer") != issuer:
        raise SsoError("issuer_mismatch", "The provider's metadata names another issuer.")
    for key in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
        if not isinstance(metadata.get(key), str):
            raise SsoError("provider_error", f"The provider's metadata has no {key}.")
    return metadata


class JwksCache:
    """The signing keys per issuer; an unknown kid refetches (rotation), rate-limited per issuer."""

    def __init__(self) -> None:
        self._keys: dict[str, tuple[KeySet, float]] = {}

    def key_set(self, jwks_uri: str, kid: str | None) -> KeySet:
        cached = self._keys.get(jwks_uri)
        if cached is not None and (kid is None or _has_kid(cached[0], kid)):
            return cached[0]
        min_refresh = float(settings.CAIRN.get("SSO_JWKS_MIN_REFRESH_SECONDS", 30))
        if cached is not None and time.monotonic() - cached[1] < min_refresh:
            return cached[0]  # the kid stays unknown: verification fails closed
        try:
            keys = KeySet.import_key_set(_get_json(jwks_uri))  # type: ignore[arg-type]
        except (ValueError, JoseError) as exc:
            raise SsoError("provider_error", "The provider's JWKS is not a valid key set.") from exc
        self._keys[jwks_uri] = (keys, time.monotonic())
        return keys


def _has_kid(keys: KeySet, kid: str) -> bool:
    return any(k.kid == kid for k in keys.keys)


JWKS = JwksCache()


# -------------------------------------------------------------------------------------- verification


def verify_id_token(id_token: str, *, config: SsoConfig, metadata: dict[str, Any], nonce: str,
                    access_token: str | None = None, now: int | None = None,
                    jwks: JwksCache = JWKS) -> dict[str, Any]:  # fmt: skip
    """The ID token's claims once signature, issuer, audience, expiry, nonce and directory all hold."""
    # The kid only picks a key; the signature check that follows is what trusts anything.
    keys = jwks.key_set(metadata["jwks_uri"], _unverified_kid(id_token))
    try:
        token = jwt.decode(id_token, keys, algorithms=ALLOWED_ALGORITHMS)
    except (JoseError, ValueError) as exc:
        raise SsoError("invalid_signature", "The ID token's signature does not verify.") from exc
    claims = CodeIDToken(
        token.claims, token.header,
        options={"iss": {"essential": True, "value": config.issuer},
                 "aud": {"essential": True, "value": config.client_id},
                 "nonce": {"essential": True, "value": nonce}},
        params={"nonce": nonce, "client_id": config.client_id, "access_token": access_token},
    )  # fmt: skip
    try:
        claims.validate(now=now if now is not None else int(time.time()), leeway=CLOCK_LEEWAY_SECONDS)
    except JoseError as exc:
        name = getattr(exc, "claim", "") or ""
        code = {"exp": "token_expired", "aud": "wrong_audience", "iss": "wrong_issuer", "nonce": "wrong_nonce",
                "azp": "wrong_audience"}.get(name, "invalid_claims")  # fmt: skip
        raise SsoError(code, f"The ID token was refused ({code}).") from exc
    if config.entra_tenant_id and claims.get("tid") != config.entra_tenant_id:
        raise SsoError("wrong_directory", "This account belongs to another directory.")
    return dict(claims)


def _unverified_kid(id_token: str) -> str | None:
    try:
        head = id_token.split(".")[0]
        data = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    except (ValueError, IndexError):
        return None
    kid = data.get("kid") if isinstance(data, dict) else None
    return kid if isinstance(kid, str) else None


# ---------------------------------------------------------------------------------------- mapping


def _email_of(claims: dict[str, Any], config: SsoConfig) -> str:
    email = str(claims.get("email") or "").strip().lower()
    # Entra ID often omits email_verified; a matching tid means the configured directory vouches for it.
    verified = claims.get("email_verified") is True or (bool(config.entra_tenant_id) and "tid" in claims)
    if not email or not verified:
        raise SsoError("email_not_verified", "The identity provider did not assert a verified e-mail address.")
    domain = email.rsplit("@", 1)[-1]
    if config.allowed_email_domains and domain not in config.allowed_email_domains:
        raise SsoError("email_domain_not_allowed", "This e-mail domain may not sign in to this tenant.")
    return email


def map_member(claims: dict[str, Any], config: SsoConfig) -> Membership:
    """The tenant member these verified claims name; binds the subject at the first sign-in."""
    subject = f"{config.issuer}|{claims['sub']}"[:300]
    email = _email_of(claims, config)
    members = Membership.objects.filter(tenant_id=config.tenant_id, active=True).select_related("user", "tenant")
    membership = members.filter(sso_subject=subject).first()
    if membership is None:
        candidate = members.filter(user__email__iexact=email, user__email_verified=True).first()
        if candidate is None or candidate.sso_subject:
            # No such member, or one already bound to another subject (a recycled address must not inherit).
            raise SsoError("no_account", "There is no account for this person in this tenant; ask your admin.")
        candidate.sso_subject = subject
        candidate.save(update_fields=["sso_subject"])
        membership = candidate
    if not membership.user.is_active:
        raise SsoError("no_account", "There is no account for this person in this tenant; ask your admin.")
    oid = claims.get("oid")
    if config.entra_tenant_id and isinstance(oid, str) and oid:
        _link_entra_identity(membership, oid, email, str(claims.get("name") or ""))
    return membership


def _link_entra_identity(membership: Membership, oid: str, email: str, name: str) -> None:
    """The signed-in person's Entra object id is the principal SharePoint ACLs name (entra:user:<oid>)."""
    with tenant_context(membership.tenant_id):
        identity, _ = ExternalIdentity.objects.get_or_create(
            tenant_id=membership.tenant_id, principal=f"entra:user:{oid.lower()}",
            defaults={"email": email, "email_verified": True, "display_name": name[:300]},
        )  # fmt: skip
        if identity.user_id != membership.user_id:
            identity.user = membership.user
            identity.mapped_by = ExternalIdentity.MappedBy.SSO
            identity.save(update_fields=["user", "mapped_by"])
            bump_acl_version()


# --------------------------------------------------------------------------------------- actions


def do_configure_sso(actor: Membership, *, issuer: str, client_id: str, client_secret: str | None,
                     allowed_email_domains: list[str], entra_tenant_id: str, local_passwords: str,
                     enabled: bool = True) -> TenantSso:  # fmt: skip
    """A tenant admin sets the provider; the secret is write-only (None keeps the stored one)."""
    if not actor.is_admin:
        raise SsoError("permission_denied", "Tenant admins only.")
    issuer = issuer.strip()
    check_issuer_url(issuer)
    if not client_id.strip():
        raise SsoError("invalid_client_id", "The client id is required.")
    domains = sorted({d.strip().lower().lstrip("@") for d in allowed_email_domains if d.strip()})
    if not domains:
        raise SsoError("no_domains", "Name at least one allowed e-mail domain.")
    if local_passwords not in TenantSso.Passwords.values:
        raise SsoError("invalid_password_policy", "Local passwords are 'all' or 'admins'.")
    with transaction.atomic():
        row = TenantSso.objects.filter(tenant_id=actor.tenant_id).first() or TenantSso(tenant_id=actor.tenant_id)
        row.issuer, row.client_id, row.allowed_email_domains = issuer, client_id.strip(), domains
        row.entra_tenant_id, row.local_passwords, row.enabled = entra_tenant_id.strip(), local_passwords, enabled
        if client_secret:
            row.client_secret_encrypted = encrypt_text(client_secret)
        row.updated_at = timezone.now()
        row.save()
        with tenant_context(actor.tenant_id):
            do_record_audit_event(actor=actor.user, action="sso.configured", target_type="tenant_sso",
                                  target_id=row.pk, details={"issuer": issuer, "client_id": row.client_id,
                                  "domains": domains, "entra_tenant_id": row.entra_tenant_id,
                                  "local_passwords": local_passwords, "enabled": enabled,
                                  "secret_changed": bool(client_secret)})  # fmt: skip
    return row


# ----------------------------------------------------------------------------------------- views


def _redirect_uri(request: HttpRequest) -> str:
    return request.build_absolute_uri(reverse("sso-callback"))


def _oauth(config: SsoConfig, request: HttpRequest) -> OAuth2Session:
    client = OAuth2Session(config.client_id, config.client_secret, scope="openid email profile",
                           redirect_uri=_redirect_uri(request), code_challenge_method="S256")  # fmt: skip
    hardened = _http()
    client.trust_env = False
    client.adapters.clear()
    for prefix, adapter in hardened.adapters.items():
        client.mount(prefix, adapter)  # the outbound policy guards the token request too
    return client


def _fail(request: HttpRequest, exc: SsoError, status: int = 400) -> HttpResponse:
    return render(request, "login.html", {"error": exc.message, "error_code": exc.code}, status=status)


@require_GET
def sso_start(request: HttpRequest) -> HttpResponse:
    slug = request.GET.get("tenant", "").strip()[:64]
    row = TenantSso.objects.filter(tenant__slug=slug, enabled=True).first() if slug else None
    if row is None:
        return _fail(request, SsoError("sso_not_configured", "Single sign-on is not set up for this organisation."))
    try:
        config = SsoConfig.of(row)
        metadata = discover(config.issuer)
    except SsoError as exc:
        return _fail(request, exc, 502)
    state, nonce, verifier = secrets.token_urlsafe(32), secrets.token_urlsafe(32), secrets.token_urlsafe(48)
    url, _ = _oauth(config, request).create_authorization_url(
        metadata["authorization_endpoint"], state=state, nonce=nonce, code_verifier=verifier
    )
    request.session[PENDING_KEY] = {"tenant_id": config.tenant_id, "state": state, "nonce": nonce,
                                    "verifier": verifier, "at": time.time()}  # fmt: skip
    return redirect(url)


@require_GET
def sso_callback(request: HttpRequest) -> HttpResponse:
    pending = request.session.pop(PENDING_KEY, None)
    if not isinstance(pending, dict) or time.time() - float(pending.get("at", 0)) > PENDING_MAX_AGE_SECONDS:
        return _fail(request, SsoError("no_pending_sign_in", "The sign-in expired; start again."))
    if not secrets.compare_digest(str(request.GET.get("state", "")), str(pending["state"])):
        return _fail(request, SsoError("state_mismatch", "The sign-in could not be matched; start again."))
    if request.GET.get("error"):
        return _fail(request, SsoError("provider_refused", "The identity provider did not sign you in."))
    row = TenantSso.objects.filter(tenant_id=pending["tenant_id"], enabled=True).select_related("tenant").first()
    if row is None:
        return _fail(request, SsoError("sso_not_configured", "Single sign-on is not set up for this organisation."))
    config = SsoConfig.of(row)
    try:
        metadata = discover(config.issuer)
        try:
            token = _oauth(config, request).fetch_token(
                metadata["token_endpoint"], code=request.GET.get("code", ""), code_verifier=pending["verifier"],
                allow_redirects=False,
            )  # fmt: skip
        except Exception as exc:  # Authlib raises OAuthError, requests errors, or our BlockedDestination
            raise SsoError("token_exchange_failed", "The identity provider refused the sign-in code.") from exc
        id_token = token.get("id_token")
        if not isinstance(id_token, str):
            raise SsoError("no_id_token", "The identity provider returned no ID token.")
        claims = verify_id_token(id_token, config=config, metadata=metadata, nonce=pending["nonce"],
                                 access_token=token.get("access_token"))  # fmt: skip
        membership = map_member(claims, config)
    except SsoError as exc:
        with tenant_context(config.tenant_id):
            do_record_audit_event(actor=None, action="sso.login_refused", target_type="tenant_sso",
                                  target_id=row.pk, details={"code": exc.code})  # fmt: skip
        return _fail(request, exc, 403)
    login(request, membership.user, backend="django.contrib.auth.backends.ModelBackend")
    request.session[SESSION_MEMBERSHIP_KEY] = membership.pk
    with tenant_context(config.tenant_id):
        do_record_audit_event(actor=membership.user, action="sso.login", target_type="membership",
                              target_id=membership.pk, details={"issuer": config.issuer})  # fmt: skip
    return redirect("home")


def tenant_for_slug(slug: str) -> Tenant | None:
    return Tenant.objects.filter(slug=slug).first()
