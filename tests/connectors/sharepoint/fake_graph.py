"""A fake Entra token endpoint + Microsoft Graph v1.0 + SharePoint REST, on 127.0.0.1 over TLS.

msal only accepts https authorities, so the server presents a throwaway
self-signed certificate for 127.0.0.1 that the test session trusts.  It serves
the tenant in ``connectors/sharepoint/fixtures/contoso_tenant.json`` and lets a
test change files and sharing, expire delta tokens and inject faults.

What it refuses, as the services document:

* an OData cast on ``transitiveMembers`` / ``owners`` without ``ConsistencyLevel: eventual`` and
  ``$count=true``: 400 ``Request_UnsupportedQuery``
  (https://learn.microsoft.com/en-us/graph/aad-advanced-queries);
* sharing-only changes in delta unless the request says ``Prefer: deltashowsharingchanges`` and the
  app-only token carries ``Sites.FullControl.All``
  (https://learn.microsoft.com/en-us/onedrive/developer/rest-api/concepts/scan-guidance and
  https://techcommunity.microsoft.com/t5/microsoft-sharepoint-blog/how-to-retrieve-complete-set-of-permission-changes-while/ba-p/1741127);
* SharePoint REST with a token whose audience is not the SharePoint host, or an app-only token
  obtained with a client secret (``appidacr`` 1): 401 "Unsupported app only token"
  (https://techcommunity.microsoft.com/blog/microsoftmissioncriticalblog/avoiding-access-errors-with-sharepoint-app-only-access/4459761).

Tokens are JWT-shaped with the claims Entra puts in app-only tokens (``aud``, ``roles``,
``appidacr``: https://learn.microsoft.com/en-us/entra/identity-platform/access-token-claims-reference).
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import ipaddress
import json
import re
import ssl
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from tests.security.secret_canary import secret

FIXTURE = Path(__file__).resolve().parents[3] / "connectors" / "sharepoint" / "fixtures" / "contoso_tenant.json"
CLIENT_ID = "app-client-id"
CLIENT_SECRET = secret("s3cr3t-value")  # carries the run's secret canary (tests/security/secret_canary.py)
PAGE_SIZE = 2
_EPOCH = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)
SHAREPOINT_ORIGIN = "https://contoso.sharepoint.com"
# What the app registration was granted (admin-consented application permissions).
DEFAULT_ROLES = frozenset({"Sites.Read.All", "Sites.FullControl.All", "User.Read.All", "GroupMember.Read.All"})


def write_app_certificate(directory: Path) -> tuple[str, str]:
    """The app registration's certificate: (PEM of certificate + key, SHA-1 thumbprint hex)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "cairn-app")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM) + key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    (directory / "app.pem").write_bytes(pem)
    return pem.decode(), cert.fingerprint(hashes.SHA1()).hex()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def token_claims(token: str) -> dict[str, Any]:
    parts = token.split(".")
    if len(parts) != 3:
        return {}
    try:
        return dict(json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))))
    except ValueError:
        return {}


def write_self_signed_cert(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


@dataclass
class Fault:
    """Answer the next ``times`` requests whose path matches with this canned response."""

    path_pattern: str
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] | None = None
    times: int = 1


@dataclass
class Seen:
    method: str
    path: str
    query: str
    headers: dict[str, str]


def _stamp(seq: int) -> str:
    # Seven fractional digits, as SharePoint really writes them.
    when = _EPOCH + dt.timedelta(minutes=seq)
    return when.strftime("%Y-%m-%dT%H:%M:%S") + ".1234567Z"


class FakeGraph:
    def __init__(self, cert_path: Path, key_path: Path) -> None:
        self.tenant = json.loads(FIXTURE.read_text())
        self.tenant_id: str = self.tenant["tenant_id"]
        self.seq = 1
        self.tokens_issued: list[str] = []
        self.seen: list[Seen] = []
        self.faults: list[Fault] = []
        self.gone_tokens: set[str] = set()
        # Graph subscriptions (POST / PATCH /v1.0/subscriptions): id -> entity, and every request body.
        self.subscriptions: dict[str, dict[str, Any]] = {}
        self.subscription_requests: list[tuple[str, str, dict[str, Any]]] = []
        self.roles: set[str] = set(DEFAULT_ROLES)
        # SHA-1 thumbprint hex -> public key of a certificate registered on the app.
        self.app_certificates: dict[str, Any] = {}
        self._lock = threading.Lock()
        for site in self.tenant["sites"]:
            for items in site["drive_items"].values():
                for item in items:
                    item["_seq"] = 1
            for items in site["list_items"].values():
                for item in items:
                    item["_seq"] = 1
            for page in site["pages"]:
                page["_seq"] = 1
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_path, key_path)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.base = f"https://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    # -- lifecycle / knobs ----------------------------------------------------------------

    def start(self) -> FakeGraph:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def site(self) -> dict[str, Any]:
        return self.tenant["sites"][0]

    def connector_config(self, **extra: Any) -> dict[str, Any]:
        """A SharePoint connector's settings pointing at this fake (its directory, app, first site)."""
        return {"tenant_id": self.tenant_id, "client_id": CLIENT_ID, "site_ids": [self.site["id"]],
                "graph_base_url": f"{self.base}/v1.0", "authority_host": self.base, **extra}  # fmt: skip

    def fail(self, fault: Fault) -> None:
        self.faults.append(fault)

    def expire_delta_tokens(self) -> None:
        with self._lock:
            self.gone_tokens.add("*")

    def update_file(self, drive_id: str, item_id: str, content: str) -> None:
        with self._lock:
            self.seq += 1
            item = self._item(drive_id, item_id)
            item["content"] = content
            item["_seq"] = self.seq

    def add_file(self, drive_id: str, item: dict[str, Any]) -> None:
        with self._lock:
            self.seq += 1
            self.site["drive_items"][drive_id].append({**item, "_seq": self.seq})

    def delete_file(self, drive_id: str, item_id: str) -> None:
        with self._lock:
            self.seq += 1
            item = self._item(drive_id, item_id)
            item["_deleted"] = True
            item["_seq"] = self.seq

    def set_sharing(self, drive_id: str, item_id: str, permissions: list[dict[str, Any]]) -> None:
        """A sharing-only change (a link removed, a person added): no new version of the item.

        For a folder, what its descendants inherited from it changes with it, but (as Graph may)
        delta reports only the folder.
        """
        with self._lock:
            self.seq += 1
            item = self._item(drive_id, item_id)
            item["permissions"] = copy.deepcopy(permissions)
            item["_perm_seq"] = self.seq
            if "folder" in item:
                for child in self._descendants(drive_id, item_id):
                    own = [
                        p for p in child.get("permissions", []) if (p.get("inheritedFrom") or {}).get("id") != item_id
                    ]
                    inherited = [{**copy.deepcopy(p), "inheritedFrom": {"driveId": drive_id, "id": item_id}}
                                 for p in permissions]  # fmt: skip
                    child["permissions"] = inherited + own

    def _descendants(self, drive_id: str, folder_id: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for item in self.site["drive_items"][drive_id]:
            if item.get("_parent") == folder_id and not item.get("_deleted"):
                out.append(item)
                if "folder" in item:
                    out.extend(self._descendants(drive_id, item["id"]))
        return out

    def register_certificate(self, pem: str) -> None:
        cert = x509.load_pem_x509_certificate(pem.encode())
        self.app_certificates[cert.fingerprint(hashes.SHA1()).hex()] = cert.public_key()

    def tokens_for(self, audience: str) -> list[str]:
        return [t for t in self.tokens_issued if token_claims(t).get("aud") == audience]

    def add_list(self, lst: dict[str, Any], items: list[dict[str, Any]]) -> None:
        with self._lock:
            self.site["lists"].append(lst)
            self.site["list_items"][lst["id"]] = [{**i, "_seq": 1} for i in items]

    def remove_subscription(self, subscription_id: str) -> None:
        """Graph dropped it (what a ``subscriptionRemoved`` lifecycle event announces)."""
        with self._lock:
            self.subscriptions.pop(subscription_id, None)

    def requests_to(self, pattern: str) -> list[Seen]:
        return [s for s in self.seen if re.search(pattern, s.path)]

    # -- model ----------------------------------------------------------------------------

    def _item(self, drive_id: str, item_id: str) -> dict[str, Any]:
        return next(i for i in self.site["drive_items"][drive_id] if i["id"] == item_id)

    def _public_item(self, drive_id: str, item: dict[str, Any]) -> dict[str, Any]:
        if item.get("_deleted"):
            return {"id": item["id"], "deleted": {"state": "deleted"}}
        out = {k: v for k, v in item.items() if not k.startswith("_") and k not in ("content", "permissions")}
        out["lastModifiedDateTime"] = _stamp(item["_seq"])
        out["createdDateTime"] = _stamp(0)
        out["eTag"] = f'"{{{item["id"]}}},{item["_seq"]}"'
        out["webUrl"] = f"{self.site['webUrl']}/Shared%20Documents/{item['name']}"
        out["createdBy"] = {"user": {"displayName": "Alice Member", "email": "alice@contoso.com"}}
        out["parentReference"] = {"driveId": drive_id, "id": item.get("_parent", "root")}
        if "file" in item:
            out["size"] = len(item.get("content", ""))
        return out

    def _delta(
        self, drive_id: str, query: dict[str, str], prefer: set[str], roles: set[str]
    ) -> tuple[int, dict[str, str], dict[str, Any]]:
        # Sharing-only changes are reported only to an app-only caller holding Sites.FullControl.All
        # that asks for them; otherwise delta scopes them away (see the module docstring).
        sharing = "deltashowsharingchanges" in prefer and "Sites.FullControl.All" in roles
        token = query.get("token")
        if token is not None and ("*" in self.gone_tokens or token in self.gone_tokens):
            self.gone_tokens.discard("*")
            restart = f"{self.base}/v1.0/drives/{drive_id}/root/delta"
            gone = {"error": {"code": "resyncRequired", "message": "Resync required."}}
            return 410, {"Location": restart}, gone
        since = int(query.get("since", token or 0))
        snap = int(query.get("snap", self.seq))
        page = int(query.get("page", 0))

        def shared_changed(i: dict[str, Any]) -> bool:
            return sharing and since > 0 and since < i.get("_perm_seq", 0) <= snap

        def position(i: dict[str, Any]) -> int:
            return max(i["_seq"], i.get("_perm_seq", 0) if shared_changed(i) else 0)

        changed = [
            i
            for i in self.site["drive_items"][drive_id]
            if (since < i["_seq"] <= snap or shared_changed(i)) and not (since == 0 and i.get("_deleted"))
        ]
        changed.sort(key=lambda i: (position(i), i["id"]))
        chunk = changed[page * PAGE_SIZE : (page + 1) * PAGE_SIZE]
        values = []
        for i in chunk:
            public = self._public_item(drive_id, i)
            if shared_changed(i) and not i.get("_deleted"):
                public["@microsoft.graph.sharedChanged"] = "True"
            values.append(public)
        body: dict[str, Any] = {"value": values}
        if (page + 1) * PAGE_SIZE < len(changed):
            nxt = urlencode({"since": since, "snap": snap, "page": page + 1})
            body["@odata.nextLink"] = f"{self.base}/v1.0/drives/{drive_id}/root/delta?{nxt}"
        else:
            body["@odata.deltaLink"] = f"{self.base}/v1.0/drives/{drive_id}/root/delta?token={snap}"
        return 200, {}, body

    def _paged(self, path: str, query: dict[str, str], values: list[Any]) -> dict[str, Any]:
        skip = int(query.get("$skiptoken", 0))
        body: dict[str, Any] = {"value": values[skip : skip + PAGE_SIZE]}
        if skip + PAGE_SIZE < len(values):
            q = {k: v for k, v in query.items() if k != "$skiptoken"}
            q["$skiptoken"] = str(skip + PAGE_SIZE)
            body["@odata.nextLink"] = f"{self.base}{path}?{urlencode(q)}"
        return body

    def _transitive_users(self, group_id: str, seen: set[str] | None = None) -> list[dict[str, Any]]:
        seen = seen if seen is not None else set()
        users = {u["id"]: u for u in self.tenant["users"]}
        out: list[dict[str, Any]] = []
        for member in self.tenant["groups"].get(group_id, {}).get("members", []):
            if member in users and member not in seen:
                seen.add(member)
                out.append(users[member])
            elif member in self.tenant["groups"]:
                out.extend(self._transitive_users(member, seen))
        return out

    def _owners(self, group_id: str) -> list[dict[str, Any]]:
        users = {u["id"]: u for u in self.tenant["users"]}
        return [users[o] for o in self.tenant["groups"].get(group_id, {}).get("owners", []) if o in users]

    def _advanced(self, query: dict[str, str], headers: dict[str, str], values: Callable[[], list[Any]],
                  path: str) -> tuple[int, dict[str, str], Any]:  # fmt: skip
        # https://learn.microsoft.com/en-us/graph/aad-advanced-queries: an OData cast on a
        # membership collection needs ConsistencyLevel: eventual and $count=true.
        level = next((v for k, v in headers.items() if k.lower() == "consistencylevel"), "")
        if level.lower() != "eventual" or query.get("$count", "").lower() != "true":
            return 400, {}, {"error": {"code": "Request_UnsupportedQuery",
                                       "message": "The requested query requires ConsistencyLevel: eventual and $count=true."}}  # fmt: skip
        rows = values()
        body = self._paged(path, query, rows)
        body["@odata.count"] = len(rows)
        return 200, {}, body

    def _user(self, key: str) -> tuple[int, dict[str, str], Any]:
        for user in self.tenant["users"]:
            if key in (user["id"], str(user.get("userPrincipalName") or "").lower(), user.get("userPrincipalName")):
                return 200, {}, user
        if "@" in key:
            lowered = key.lower()
            for user in self.tenant["users"]:
                if str(user.get("userPrincipalName") or "").lower() == lowered:
                    return 200, {}, user
        return 404, {}, {"error": {"code": "Request_ResourceNotFound", "message": f"Resource '{key}' does not exist."}}

    def _graph(self, method: str, path: str, query: dict[str, str], headers: dict[str, str] | None = None,
               roles: set[str] | None = None) -> tuple[int, dict[str, str], Any]:  # fmt: skip
        site = self.site
        headers = headers or {}
        prefer = {p.strip().lower() for h, v in headers.items() if h.lower() == "prefer" for p in v.split(",")}
        rel = unquote(path.removeprefix("/v1.0/"))
        routes: list[tuple[str, Callable[..., tuple[int, dict[str, str], Any]]]] = [
            (
                r"sites/([^/]+)",
                lambda s: (200, {}, {k: site[k] for k in ("id", "name", "displayName", "webUrl")}),
            ),
            (r"sites/([^/]+)/drives", lambda s: (200, {}, self._paged(path, query, site["drives"]))),
            (r"sites/([^/]+)/lists", lambda s: (200, {}, self._paged(path, query, site["lists"]))),
            (r"sites/([^/]+)/lists/([^/]+)/items", self._list_items),
            (r"sites/([^/]+)/lists/([^/]+)/items/([^/]+)/permissions", self._list_item_permissions),
            (r"sites/([^/]+)/pages/microsoft\.graph\.sitePage", self._pages),
            (r"sites/([^/]+)/pages/([^/]+)/microsoft\.graph\.sitePage", self._page),
            (r"drives/([^/]+)/root/delta", lambda d: self._delta(d, query, prefer, roles or set())),
            (r"drives/([^/]+)/items/([^/]+)/children", self._children),
            (r"drives/([^/]+)/items/([^/]+)/content", self._content),
            (r"drives/([^/]+)/items/([^/]+)/permissions", self._item_permissions),
            (r"users", lambda: (200, {}, self._paged(path, query, self.tenant["users"]))),
            (r"users/([^/]+)", self._user),
            (
                r"groups/([^/]+)/transitiveMembers/microsoft\.graph\.user",
                lambda g: self._advanced(query, headers, lambda: self._transitive_users(g), path),
            ),
            (
                r"groups/([^/]+)/owners/microsoft\.graph\.user",
                lambda g: self._advanced(query, headers, lambda: self._owners(g), path),
            ),
        ]
        self._query = query
        for pattern, handler in routes:
            m = re.fullmatch(pattern, rel)
            if m:
                return handler(*m.groups())
        return 404, {}, {"error": {"code": "itemNotFound", "message": rel}}

    def _list_items(self, site_id: str, list_id: str) -> tuple[int, dict[str, str], Any]:
        rows = []
        for item in self.site["list_items"].get(list_id, []):
            row = {k: v for k, v in item.items() if not k.startswith("_") and k != "permissions"}
            row["lastModifiedDateTime"] = _stamp(item["_seq"])
            row["webUrl"] = f"{self.site['webUrl']}/Lists/{list_id}/DispForm.aspx?ID={item['id']}"
            rows.append(row)
        return 200, {}, self._paged(f"/v1.0/sites/{site_id}/lists/{list_id}/items", self._query, rows)

    def _list_item_permissions(self, site_id: str, list_id: str, item_id: str) -> tuple[int, dict[str, str], Any]:
        item = next(i for i in self.site["list_items"][list_id] if i["id"] == item_id)
        return 200, {}, {"value": item["permissions"]}

    def _page(self, site_id: str, page_id: str) -> tuple[int, dict[str, str], Any]:
        # https://learn.microsoft.com/en-us/graph/api/sitepage-get: canvasLayout only with $expand.
        page = next((p for p in self.site["pages"] if p["id"] == page_id), None)
        if page is None:
            return 404, {}, {"error": {"code": "itemNotFound", "message": "page not found"}}
        row = {k: v for k, v in page.items() if not k.startswith("_")}
        if "canvasLayout" not in self._query.get("$expand", ""):
            row.pop("canvasLayout", None)
        row["lastModifiedDateTime"] = _stamp(page["_seq"])
        return 200, {}, row

    def _children(self, drive_id: str, item_id: str) -> tuple[int, dict[str, str], Any]:
        kids = [self._public_item(drive_id, i) for i in self.site["drive_items"][drive_id]
                if i.get("_parent", "root" if i["id"] != "root" else None) == item_id and not i.get("_deleted")]  # fmt: skip
        return 200, {}, self._paged(f"/v1.0/drives/{drive_id}/items/{item_id}/children", self._query, kids)

    def _pages(self, site_id: str) -> tuple[int, dict[str, str], Any]:
        pages = []
        for page in self.site["pages"]:
            # The collection lists page metadata; web parts come from GET on one page.
            row = {k: v for k, v in page.items() if not k.startswith("_") and k != "canvasLayout"}
            row["lastModifiedDateTime"] = _stamp(page["_seq"])
            row["webUrl"] = f"{self.site['webUrl']}/SitePages/{page['name']}"
            pages.append(row)
        return (
            200,
            {},
            self._paged(f"/v1.0/sites/{site_id}/pages/microsoft.graph.sitePage", self._query, pages),
        )

    def _content(self, drive_id: str, item_id: str) -> tuple[int, dict[str, str], Any]:
        # Same host and port on purpose: a client that let requests follow the redirect would
        # keep sending the Authorization header here.
        return (
            302,
            {"Location": f"{self.base}/_layouts/download/{drive_id}/{item_id}?tempauth=short-lived"},
            None,
        )

    def _item_permissions(self, drive_id: str, item_id: str) -> tuple[int, dict[str, str], Any]:
        item = self._item(drive_id, item_id)
        if item.get("_deleted"):
            return 404, {}, {"error": {"code": "itemNotFound"}}
        return (
            200,
            {},
            self._paged(
                f"/v1.0/drives/{drive_id}/items/{item_id}/permissions",
                self._query,
                copy.deepcopy(item["permissions"]),
            ),
        )

    def _subscription(self, method: str, path: str, raw: bytes) -> tuple[int, dict[str, str], Any]:
        """``POST /subscriptions`` (201) and ``PATCH /subscriptions/{id}`` (200), Graph's shapes.

        Only what driveItem accepts: ``updated`` on ``drives/{id}/root`` of a known drive, an
        expiry at most 42,300 minutes ahead.  (Real Graph also POSTs a validationToken to the
        notificationUrl before answering; the tests drive that handshake through the view.)
        """
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return 400, {}, {"error": {"code": "BadRequest", "message": "Invalid JSON"}}
        sub_id = unquote(path.removeprefix("/v1.0/subscriptions").strip("/"))
        self.subscription_requests.append((method, sub_id, body))
        if method == "DELETE" and sub_id:
            # https://learn.microsoft.com/en-us/graph/api/subscription-delete: 204, or 404 when gone.
            if self.subscriptions.pop(sub_id, None) is None:
                return 404, {}, {"error": {"code": "ResourceNotFound", "message": "The object was not found."}}
            return 204, {}, None
        expiry = str(body.get("expirationDateTime") or "")
        try:
            when = dt.datetime.fromisoformat(expiry.replace("Z", "+00:00"))
        except ValueError:
            return 400, {}, {"error": {"code": "InvalidRequest", "message": "expirationDateTime is required"}}
        if when > dt.datetime.now(dt.UTC) + dt.timedelta(minutes=42300):
            return 400, {}, {"error": {"code": "InvalidRequest",
                                       "message": "Subscription expiration can only be 42300 minutes in the future."}}  # fmt: skip
        if method == "POST" and not sub_id:
            m = re.fullmatch(r"drives/([^/]+)/root", str(body.get("resource") or ""))
            if not m or m.group(1) not in {d["id"] for d in self.site["drives"]}:
                return 404, {}, {"error": {"code": "itemNotFound", "message": "resource not found"}}
            if body.get("changeType") != "updated" or not body.get("notificationUrl"):
                return 400, {}, {"error": {"code": "InvalidRequest", "message": "driveItem supports only updated"}}
            sub_id = str(uuid.uuid4())  # Graph subscription ids are GUIDs
            entity = {
                "@odata.context": f"{self.base}/v1.0/$metadata#subscriptions/$entity",
                "id": sub_id,
                "resource": body["resource"],
                "applicationId": CLIENT_ID,
                "changeType": "updated",
                "clientState": body.get("clientState"),
                "notificationUrl": body["notificationUrl"],
                "lifecycleNotificationUrl": body.get("lifecycleNotificationUrl"),
                "expirationDateTime": expiry,
                "creatorId": "app-creator",
                "latestSupportedTlsVersion": "v1_2",
                "encryptionCertificate": None,
                "encryptionCertificateId": None,
                "includeResourceData": None,
                "notificationContentType": None,
            }
            self.subscriptions[sub_id] = entity
            return 201, {"Location": f"{self.base}/v1.0/subscriptions/{sub_id}"}, entity
        if method == "PATCH" and sub_id:
            if sub_id not in self.subscriptions:
                return 404, {}, {"error": {"code": "ResourceNotFound", "message": "The object was not found."}}
            self.subscriptions[sub_id]["expirationDateTime"] = expiry
            return 200, {}, self.subscriptions[sub_id]
        return 405, {}, {"error": {"code": "BadRequest", "message": "Unsupported method"}}

    def _sharepoint_rest(self, path: str, headers: dict[str, str], claims: dict[str, Any]
                         ) -> tuple[int, dict[str, str], Any]:  # fmt: skip
        """``/sites/finance/_api/web/sitegroups/getbyid(n)/users`` as SharePoint Online answers it.

        https://learn.microsoft.com/en-us/previous-versions/office/developer/sharepoint-rest-reference/dn531432(v=office.15)
        """
        if claims.get("aud") != SHAREPOINT_ORIGIN or claims.get("appidacr") != "2":
            # A Graph token, or an app-only token from a client secret.
            return 401, {"x-ms-diagnostics": '3000003;reason="Unsupported app only token.";category="invalid_client"',
                         "WWW-Authenticate": 'Bearer realm="' + self.tenant_id + '"'}, {
                "error_description": "Unsupported app only token."}  # fmt: skip
        site_path = urlsplit(self.site["webUrl"]).path
        m = re.fullmatch(re.escape(site_path) + r"/_api/web/sitegroups/getbyid\((\d+)\)/users", path)
        if not m:
            return 404, {}, {"odata.error": {"code": "-2147024894, System.IO.FileNotFoundException",
                                             "message": {"lang": "en-US", "value": "File Not Found."}}}  # fmt: skip
        groups = self.site.get("_site_groups", {})
        if m.group(1) not in groups:
            return 404, {}, {"odata.error": {"code": "-2146232832, Microsoft.SharePoint.SPException",
                                             "message": {"lang": "en-US", "value": "Group cannot be found."}}}  # fmt: skip
        accept = next((v for k, v in headers.items() if k.lower() == "accept"), "")
        if "odata=nometadata" not in accept:
            # Without a JSON Accept SharePoint answers Atom XML; verbose/minimal JSON carry
            # metadata this fake does not model.
            return 200, {"Content-Type": "application/atom+xml"}, b"<feed xmlns='http://www.w3.org/2005/Atom'/>"
        return 200, {"Content-Type": "application/json;odata=nometadata"}, {"value": groups[m.group(1)]}

    def _issue_token(self, form: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
        """Client-credentials grant with a secret or a certificate (a signed client assertion)."""
        if form.get("grant_type") != ["client_credentials"] or form.get("client_id") != [CLIENT_ID]:
            return 401, {"error": "invalid_client"}
        acr = ""
        if form.get("client_secret") == [CLIENT_SECRET]:
            acr = "1"
        elif form.get("client_assertion_type") == ["urn:ietf:params:oauth:client-assertion-type:jwt-bearer"]:
            # https://learn.microsoft.com/en-us/entra/identity-platform/certificate-credentials
            assertion = (form.get("client_assertion") or [""])[0]
            try:
                header = jwt.get_unverified_header(assertion)
                x5t = base64.urlsafe_b64decode(str(header.get("x5t", "")) + "==").hex()
                key = self.app_certificates[x5t]
                jwt.decode(assertion, key, algorithms=["RS256", "PS256"],
                           audience=f"{self.base}/{self.tenant_id}/oauth2/v2.0/token", issuer=CLIENT_ID)  # fmt: skip
                acr = "2"
            except (jwt.PyJWTError, KeyError, ValueError):
                return 401, {"error": "invalid_client", "error_description": "AADSTS700027: Client assertion failed"}
        if not acr:
            return 401, {"error": "invalid_client"}
        scope = (form.get("scope") or [""])[0].split()
        resource = next((x.removesuffix("/.default") for x in scope if x.endswith("/.default")), "")
        claims = {"aud": resource, "appid": CLIENT_ID, "appidacr": acr, "idtyp": "app", "tid": self.tenant_id,
                  "roles": sorted(self.roles), "jti": str(len(self.tokens_issued) + 1)}  # fmt: skip
        token = ".".join((_b64(b'{"alg":"RS256","typ":"JWT"}'), _b64(json.dumps(claims).encode()), _b64(b"sig")))
        self.tokens_issued.append(token)
        return 200, {"token_type": "Bearer", "expires_in": 3599, "access_token": token}

    # -- HTTP -----------------------------------------------------------------------------

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _reply(self, status: int, headers: dict[str, str], body: Any) -> None:
                raw = body if isinstance(body, bytes) else (b"" if body is None else json.dumps(body).encode())
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                if not isinstance(body, bytes):
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _handle(self, method: str) -> None:
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
                length = int(self.headers.get("Content-Length") or 0)
                self.raw_body = self.rfile.read(length) if length else b""
                form = parse_qs(self.raw_body.decode()) if length else {}
                with fake._lock:
                    fake.seen.append(Seen(method, parts.path, parts.query, dict(self.headers.items())))
                    for fault in fake.faults:
                        if fault.times > 0 and re.search(fault.path_pattern, parts.path):
                            fault.times -= 1
                            return self._reply(fault.status, fault.headers, fault.body or {"error": {"code": "x"}})
                    self._route(method, parts.path, query, form)

            def _route(self, method: str, path: str, query: dict[str, str], form: dict[str, list[str]]) -> None:
                tenant = fake.tenant_id
                if path == f"/{tenant}/v2.0/.well-known/openid-configuration":
                    return self._reply(
                        200,
                        {},
                        {
                            "issuer": f"{fake.base}/{tenant}/v2.0",
                            "authorization_endpoint": f"{fake.base}/{tenant}/oauth2/v2.0/authorize",
                            "token_endpoint": f"{fake.base}/{tenant}/oauth2/v2.0/token",
                        },
                    )
                if path == f"/{tenant}/oauth2/v2.0/token" and method == "POST":
                    status, body = fake._issue_token(form)
                    return self._reply(status, {}, body)
                if path.startswith("/_layouts/download/"):
                    drive_id, item_id = path.removeprefix("/_layouts/download/").split("/")
                    item = fake._item(unquote(drive_id), unquote(item_id))
                    return self._reply(200, {"Content-Type": "application/octet-stream"}, item["content"].encode())
                token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                claims = token_claims(token) if token in fake.tokens_issued else {}
                if "/_api/" in path:
                    if not claims:
                        return self._reply(401, {}, {"error_description": "Invalid JWT token."})
                    status, headers, body = fake._sharepoint_rest(path, dict(self.headers.items()), claims)
                    return self._reply(status, headers, body)
                if path.startswith("/v1.0/"):
                    if claims.get("aud") != fake.base:
                        return self._reply(401, {}, {"error": {"code": "InvalidAuthenticationToken"}})
                    if path == "/v1.0/subscriptions" or path.startswith("/v1.0/subscriptions/"):
                        status, headers, body = fake._subscription(method, path, self.raw_body)
                        return self._reply(status, headers, body)
                    status, headers, body = fake._graph(method, path, query, dict(self.headers.items()),
                                                        set(claims.get("roles") or []))  # fmt: skip
                    return self._reply(status, headers, body)
                return self._reply(404, {}, {"error": "not found"})

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

            def do_PATCH(self) -> None:
                self._handle("PATCH")

            def do_DELETE(self) -> None:
                self._handle("DELETE")

        return Handler
