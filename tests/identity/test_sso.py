"""OpenID Connect sign-in against a real OpenID Provider (panva/oidc-provider, OpenID Certified) run locally
with node: the code + PKCE flow end to end, and every way a token must be refused."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import pytest
import requests
from bs4 import BeautifulSoup
from django.conf import settings
from django.test import Client
from joserfc.jwk import RSAKey

from tenants.actions import do_add_member, do_create_tenant, do_create_user
from tenants.auth import SESSION_MEMBERSHIP_KEY
from tenants.context import tenant_context
from tenants.models import AuditEvent, ExternalIdentity, Membership
from tests.support import unique

OP_DIR = Path(__file__).resolve().parent / "op"
DIRECTORY_A = "6f1c2a6e-1111-4c5e-9a58-aaaaaaaaaaaa"  # the tenant's Entra directory (tid)
DIRECTORY_B = "0b9d7e33-2222-4f0e-8c1a-bbbbbbbbbbbb"  # someone else's
CALLBACK = "http://testserver/sso/callback"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def new_key(kid: str) -> dict[str, Any]:
    key = RSAKey.generate_key(2048, parameters={"kid": kid, "use": "sig", "alg": "RS256"}, private=True)
    return dict(key.as_dict(private=True))


@dataclass
class Op:
    issuer: str
    port: int
    conf_path: Path
    proc: subprocess.Popen[bytes] | None = None

    def start(self, keys: list[dict[str, Any]], accounts: dict[str, dict[str, Any]]) -> None:
        self.stop()
        conf = {
            "issuer": self.issuer, "port": self.port, "keys": keys, "accounts": accounts,
            "clients": [
                {"client_id": "cairn", "client_secret": "cairn-secret-0123456789", "redirect_uris": [CALLBACK],
                 "grant_types": ["authorization_code"], "response_types": ["code"]},
                {"client_id": "another-app", "client_secret": "other-secret-0123456789", "redirect_uris": [CALLBACK],
                 "grant_types": ["authorization_code"], "response_types": ["code"]},
            ],
        }  # fmt: skip
        self.conf_path.write_text(json.dumps(conf))
        log = open(self.conf_path.with_suffix(".log"), "ab")
        self.proc = subprocess.Popen(["node", str(OP_DIR / "op.mjs"), str(self.conf_path)], cwd=OP_DIR,
                                     stdout=log, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                urllib.request.urlopen(self.issuer + "/.well-known/openid-configuration", timeout=2)
                return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"oidc-provider exited; see {self.conf_path.with_suffix('.log')}") from None
                time.sleep(0.2)
        raise RuntimeError("oidc-provider did not answer within 30 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.proc = None


ACCOUNTS = {
    "dana-sub": {"email": "dana@contoso.example", "email_verified": True, "name": "Dana Diaz",
                 "tid": DIRECTORY_A, "oid": "11111111-aaaa-4bbb-8ccc-000000000001"},
    "mallory-sub": {"email": "dana@contoso.example", "email_verified": True, "name": "Not Dana",
                    "tid": DIRECTORY_B, "oid": "99999999-aaaa-4bbb-8ccc-000000000009"},
    "eve-sub": {"email": "eve@elsewhere.example", "email_verified": True, "tid": DIRECTORY_A},
    "unverified-sub": {"email": "dana@contoso.example", "email_verified": False},
}  # fmt: skip


@pytest.fixture(scope="module")
def op(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Op]:
    if shutil.which("node") is None:
        pytest.fail("node is missing: apt-get install nodejs (the SSO tests run a real OpenID Provider)")
    if not (OP_DIR / "node_modules" / "oidc-provider").exists():
        subprocess.run(["npm", "ci" if (OP_DIR / "package-lock.json").exists() else "install", "--no-audit",
                        "--no-fund"], cwd=OP_DIR, check=True)  # fmt: skip
    port = _free_port()
    server = Op(f"http://127.0.0.1:{port}", port, tmp_path_factory.mktemp("op") / "op.json")
    server.start([new_key("k1")], ACCOUNTS)
    yield server
    server.stop()


@pytest.fixture
def tenant(op: Op, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    from identity.sso import JWKS, do_configure_sso

    # The operator allows this loopback issuer (a tenant admin could not); rotation tests refetch at once.
    monkeypatch.setitem(settings.CAIRN, "SSO_ALLOWED_HOSTS", [f"127.0.0.1:{op.port}"])
    monkeypatch.setitem(settings.CAIRN, "SSO_JWKS_MIN_REFRESH_SECONDS", 0)
    JWKS._keys.clear()
    t = do_create_tenant(unique("contoso"), "Contoso")
    admin = do_add_member(t, do_create_user(unique("alice"), "alice@contoso.example", "pw-alice-12345",
                                            email_verified=True), role=Membership.Role.ADMIN)  # fmt: skip
    dana = do_add_member(t, do_create_user(unique("dana"), "dana@contoso.example", "pw-dana-12345",
                                           email_verified=True))  # fmt: skip
    with tenant_context(t.pk):
        do_configure_sso(admin, issuer=op.issuer, client_id="cairn", client_secret="cairn-secret-0123456789",
                         allowed_email_domains=["contoso.example"], entra_tenant_id=DIRECTORY_A,
                         local_passwords="admins")  # fmt: skip
    return {"tenant": t, "admin": admin, "dana": dana}


def _follow_op(op_browser: requests.Session, url: str, account: str) -> str:
    """Drive oidc-provider's development login and consent pages until it redirects to our callback."""
    for _ in range(12):
        if url.startswith(CALLBACK):
            return url
        r = op_browser.get(url, allow_redirects=False)
        if r.is_redirect:
            url = urljoin(url, r.headers["location"])
            continue
        form = BeautifulSoup(r.text, "html.parser").find("form")
        assert form is not None, r.text[:500]
        fields = {i["name"]: i.get("value", "") for i in form.find_all("input") if i.get("name")}
        if "login" in fields:
            fields.update(login=account, password="any")
        posted = op_browser.post(urljoin(url, form["action"]), data=fields, allow_redirects=False)
        assert posted.is_redirect, posted.text[:500]
        url = urljoin(url, posted.headers["location"])
    raise AssertionError("the OP never redirected back")


def sign_in(slug: str, account: str) -> tuple[Client, Any]:
    cairn = Client()
    start = cairn.get(f"/sso/start?tenant={slug}")
    assert start.status_code == 302, start.content[:500]
    query = parse_qs(urlsplit(start["Location"]).query)
    assert query["code_challenge_method"] == ["S256"] and query["code_challenge"][0]
    assert query["nonce"][0] and query["state"][0]
    back = _follow_op(requests.Session(), start["Location"], account)
    return cairn, cairn.get("/sso/callback?" + urlsplit(back).query)


def signed_in_membership(client: Client) -> int | None:
    return client.session.get(SESSION_MEMBERSHIP_KEY)


def test_a_member_signs_in_with_the_code_flow_and_their_entra_object_id_maps_to_them(tenant: dict[str, Any]) -> None:
    client, done = sign_in(tenant["tenant"].slug, "dana-sub")
    assert done.status_code == 302 and done["Location"] == "/", done.content[:500]
    assert signed_in_membership(client) == tenant["dana"].pk
    assert client.get("/").status_code == 200
    dana = Membership.objects.get(pk=tenant["dana"].pk)
    assert dana.sso_subject.endswith("|dana-sub")
    with tenant_context(tenant["tenant"].pk):
        identity = ExternalIdentity.objects.get(principal="entra:user:11111111-aaaa-4bbb-8ccc-000000000001")
        assert identity.user_id == dana.user_id and identity.mapped_by == "sso"
        assert AuditEvent.objects.filter(action="sso.login", target_id=str(dana.pk)).exists()
    # The tenant restricted local passwords to admins: dana's password no longer works, alice's does.
    refused = Client().post("/login/", {"username": dana.user.username, "password": "pw-dana-12345"})
    assert refused.status_code == 400
    alice = Client().post("/login/", {"username": tenant["admin"].user.username, "password": "pw-alice-12345"})
    assert alice.status_code == 302


def test_a_user_of_another_directory_with_the_same_address_is_refused(tenant: dict[str, Any]) -> None:
    client, done = sign_in(tenant["tenant"].slug, "mallory-sub")
    assert done.status_code == 403 and b"another directory" in done.content
    assert signed_in_membership(client) is None
    with tenant_context(tenant["tenant"].pk):
        assert AuditEvent.objects.filter(action="sso.login_refused", details__code="wrong_directory").exists()


def test_an_address_outside_the_allowed_domains_and_an_unverified_address_are_refused(tenant: dict[str, Any]) -> None:
    _, eve = sign_in(tenant["tenant"].slug, "eve-sub")
    assert eve.status_code == 403 and b"domain" in eve.content
    # (no tid claim: the directory does not vouch, and email_verified is false)
    _, unverified = sign_in(tenant["tenant"].slug, "unverified-sub")
    assert unverified.status_code == 403


def real_id_token(op: Op, account: str, client_id: str = "cairn", secret: str = "cairn-secret-0123456789",
                  nonce: str = "n-0123456789") -> tuple[str, dict[str, Any]]:  # fmt: skip
    """An ID token the OP really issued (code flow with PKCE, client side done by Authlib)."""
    from authlib.integrations.requests_client import OAuth2Session

    metadata = requests.get(op.issuer + "/.well-known/openid-configuration", timeout=10).json()
    oauth = OAuth2Session(client_id, secret, scope="openid email profile", redirect_uri=CALLBACK,
                          code_challenge_method="S256")  # fmt: skip
    verifier = "v" * 64
    url, state = oauth.create_authorization_url(metadata["authorization_endpoint"], nonce=nonce,
                                                code_verifier=verifier)  # fmt: skip
    back = _follow_op(requests.Session(), url, account)
    code = parse_qs(urlsplit(back).query)["code"][0]
    token = oauth.fetch_token(metadata["token_endpoint"], code=code, code_verifier=verifier)
    return token["id_token"], metadata


def config_for(tenant: dict[str, Any], **changes: Any) -> Any:
    from dataclasses import replace

    from identity.sso import SsoConfig
    from tenants.models import TenantSso

    return replace(SsoConfig.of(TenantSso.objects.get(tenant=tenant["tenant"])), **changes)


def refused_code(id_token: str, config: Any, metadata: dict[str, Any], **kwargs: Any) -> str:
    from identity.sso import JwksCache, SsoError, verify_id_token

    kwargs.setdefault("nonce", "n-0123456789")
    with pytest.raises(SsoError) as exc:
        verify_id_token(id_token, config=config, metadata=metadata, jwks=kwargs.pop("jwks", JwksCache()), **kwargs)
    return exc.value.code


def test_tampered_foreign_expired_and_replayed_tokens_are_refused(op: Op, tenant: dict[str, Any]) -> None:
    from identity.sso import JwksCache, verify_id_token

    id_token, metadata = real_id_token(op, "dana-sub")
    config = config_for(tenant)
    claims = verify_id_token(id_token, config=config, metadata=metadata, nonce="n-0123456789", jwks=JwksCache())
    assert claims["sub"] == "dana-sub" and claims["aud"] == "cairn"

    head, payload, signature = id_token.split(".")
    import base64

    body = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    body["email"] = "ceo@contoso.example"
    forged = base64.urlsafe_b64encode(json.dumps(body).encode()).rstrip(b"=").decode()
    assert refused_code(f"{head}.{forged}.{signature}", config, metadata) == "invalid_signature"
    assert refused_code(f"{head}.{payload}.", config, metadata) == "invalid_signature"

    other, _ = real_id_token(op, "dana-sub", client_id="another-app", secret="other-secret-0123456789")
    assert refused_code(other, config, metadata) == "wrong_audience"
    assert refused_code(id_token, config, metadata, now=int(body["exp"]) + 3600) == "token_expired"
    assert refused_code(id_token, config, metadata, nonce="another-sign-in") == "wrong_nonce"
    assert refused_code(id_token, config_for(tenant, issuer=op.issuer + "/evil"), metadata) == "wrong_issuer"
    foreign, _ = real_id_token(op, "mallory-sub")
    assert refused_code(foreign, config, metadata) == "wrong_directory"


def test_a_rotated_key_is_fetched_and_a_retired_key_no_longer_verifies(op: Op, tenant: dict[str, Any]) -> None:
    from identity.sso import JwksCache, verify_id_token

    jwks = JwksCache()  # one cache across the rotation, as a running server has
    config = config_for(tenant)
    k1, k2 = new_key("k1-" + unique("r")), new_key("k2-" + unique("r"))
    try:
        op.start([k1], ACCOUNTS)
        old_token, metadata = real_id_token(op, "dana-sub")
        verify_id_token(old_token, config=config, metadata=metadata, nonce="n-0123456789", jwks=jwks)
        op.start([k2, k1], ACCOUNTS)  # the provider rolls over: signs with k2, still publishes k1
        new_token, _ = real_id_token(op, "dana-sub")
        assert json.loads(__import__("base64").urlsafe_b64decode(new_token.split(".")[0] + "=="))["kid"] == k2["kid"]
        verify_id_token(new_token, config=config, metadata=metadata, nonce="n-0123456789", jwks=jwks)
        op.start([k2], ACCOUNTS)  # k1 retired
        verify_id_token(new_token, config=config, metadata=metadata, nonce="n-0123456789", jwks=jwks)
        fresh = JwksCache()
        assert refused_code(old_token, config, metadata, jwks=fresh) == "invalid_signature"
    finally:
        op.start([new_key("k1")], ACCOUNTS)


def test_the_state_must_match_and_an_unknown_tenant_gets_no_redirect(tenant: dict[str, Any]) -> None:
    cairn = Client()
    assert cairn.get(f"/sso/start?tenant={tenant['tenant'].slug}").status_code == 302
    forged = cairn.get("/sso/callback?code=x&state=not-the-state")
    assert forged.status_code == 400 and b"could not be matched" in forged.content
    assert Client().get("/sso/start?tenant=no-such-org").status_code == 400


def test_the_admin_configures_sso_in_the_console_and_the_secret_stays_write_only(tenant: dict[str, Any]) -> None:
    admin = Client()
    admin.force_login(tenant["admin"].user)
    s = admin.session
    s[SESSION_MEMBERSHIP_KEY] = tenant["admin"].pk
    s.save()
    form = {"issuer": "https://login.microsoftonline.com/" + DIRECTORY_A + "/v2.0", "client_id": "app-1",
            "client_secret": "s3cret-value-0123456789", "domains": "contoso.example, fabrikam.example",
            "entra_tenant_id": DIRECTORY_A, "local_passwords": "admins", "enabled": "on"}  # fmt: skip
    assert admin.post("/console/sso/", form).status_code == 302
    page = admin.get("/console/sso/").content.decode()
    assert "app-1" in page and "s3cret-value" not in page and "/sso/callback" in page
    # A tenant admin cannot point the server at plain http or keep the form without domains.
    plain = admin.post("/console/sso/", dict(form, issuer="http://idp.internal.example/"))
    assert plain.status_code == 400 and b"https" in plain.content
    assert admin.post("/console/sso/", dict(form, domains="")).status_code == 400
    with tenant_context(tenant["tenant"].pk):
        row = AuditEvent.objects.filter(action="sso.configured").order_by("-seq").first()
    assert row is not None and row.details["client_id"] == "app-1" and "s3cret" not in json.dumps(row.details)
