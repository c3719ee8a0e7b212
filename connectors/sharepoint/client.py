"""A small Microsoft Graph v1.0 client for the SharePoint connector.

Everything goes through one injected ``requests.Session`` (by default
``core.http.build_session``, which enforces the outbound host allow-list):
the Graph calls, the pre-authenticated download redirects and msal's own
token requests.  The client never sets credentials on the session itself, so
nothing but an explicit Graph call can carry the bearer token.
"""

from __future__ import annotations

import base64
import json as _json
import logging
import random
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urljoin, urlsplit

import msal
import requests

from connectors.base import ConnectorError
from core.http import OutboundHTTPError, RateLimited, build_session, parse_retry_after

log = logging.getLogger(__name__)

GRAPH_BASE_URL = "https://graph.microsoft.com/v1.0"
AUTHORITY_HOST = "https://login.microsoftonline.com"

# Graph documents 429 for throttling and 503/504 for an overloaded service; both
# carry Retry-After when the service knows how long to back off.
_RETRY_STATUSES = frozenset({429, 503, 504})
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})

# Directory queries Graph only answers as "advanced queries" (an OData cast on a membership
# collection, $count, ne/not/endsWith...): without both ConsistencyLevel: eventual and $count=true it
# answers 400 Request_UnsupportedQuery.  https://learn.microsoft.com/en-us/graph/aad-advanced-queries
ADVANCED_QUERY_HEADERS = {"ConsistencyLevel": "eventual"}
ADVANCED_QUERY_PARAMS = {"$count": "true"}
# Delta as a crawler needs it (https://learn.microsoft.com/en-us/onedrive/developer/rest-api/concepts/scan-guidance):
# items the app can no longer see come back as deleted, permission gaps are traversed, and items whose
# sharing changed are reported (annotated @microsoft.graph.sharedChanged).  Graph honours the sharing
# part only for an app-only token holding Sites.FullControl.All; otherwise sharing-only changes are
# not reported and only the permission sync catches them (SharePointConnector says so in its status).
DELTA_PREFER = "deltashowremovedasdeleted, deltatraversepermissiongaps, deltashowsharingchanges"
FULL_CONTROL_ROLE = "Sites.FullControl.All"
# SharePoint REST (not Graph) is the only API that lists a SharePoint site group's members:
# https://learn.microsoft.com/en-us/previous-versions/office/developer/sharepoint-rest-reference/dn531432(v=office.15)
# (GroupCollection.getById, UserCollection).  "nometadata" gives plain {"value": [...]} JSON.
SP_REST_ACCEPT = "application/json;odata=nometadata"


class DeltaGone(Exception):
    """``410 Gone`` on a delta link: the token expired or the drive needs a resync.

    ``restart_url`` is the fresh enumeration Graph offers in ``Location`` (may be empty).
    """

    def __init__(self, restart_url: str, code: str) -> None:
        super().__init__(f"delta token no longer valid ({code or 'gone'})")
        self.restart_url = restart_url
        self.code = code


class TooLarge(ConnectorError):
    """The body is over the size cap (ours or the hardened session's)."""


class NotFound(ConnectorError):
    """404: the item vanished between listing and fetching (the next delta reports it)."""


@dataclass(frozen=True)
class Page:
    """One page of a collection: its items and where to go next."""

    url: str  # the URL that produced this page (persisted for exact resume)
    items: list[dict[str, Any]]
    next_link: str | None
    delta_link: str | None


def _default_session(max_response_bytes: int) -> requests.Session:
    # Graph, login.microsoftonline.com and the *.sharepoint.com download hosts are all public,
    # so nothing needs an allow-list exemption from the private-address checks.
    return build_session(max_response_bytes=max_response_bytes)


class GraphClient:
    """Graph v1.0 over an injected session, with app-only (client-credentials) tokens."""

    def __init__(
        self,
        *,
        tenant_id: str,
        client_id: str,
        client_secret: str,
        session: requests.Session | None = None,
        graph_base_url: str = GRAPH_BASE_URL,
        authority_host: str = AUTHORITY_HOST,
        timeout: float = 30.0,
        max_retries: int = 5,
        max_wait: float = 120.0,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
        max_response_bytes: int = 110 * 1024 * 1024,
        client_certificate: Mapping[str, str] | None = None,
        sharepoint_base_url: str = "",
    ) -> None:
        self.tenant_id = tenant_id
        # {"private_key": PEM, "thumbprint": SHA-1 hex} -- SharePoint REST refuses app-only tokens
        # obtained with a client secret ("Unsupported app only token"); it needs a certificate.
        self._client_certificate = dict(client_certificate) if client_certificate else None
        # Tests and proxies: where SharePoint REST calls go instead of the site's own origin.
        self.sharepoint_base_url = sharepoint_base_url.rstrip("/")
        self.graph_base_url = graph_base_url.rstrip("/")
        self.authority = f"{authority_host.rstrip('/')}/{tenant_id}"
        self.session = session if session is not None else _default_session(max_response_bytes)
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_wait = max_wait
        self._sleep = sleep
        self._jitter = jitter
        self._client_id = client_id
        self._client_secret = client_secret
        self._app: msal.ConfidentialClientApplication | None = None
        origin = urlsplit(self.graph_base_url)
        # App-only tokens use the resource's "/.default" scope; deriving it from the base URL
        # keeps national clouds (graph.microsoft.us, ...) working without another setting.
        self._scopes = [f"{origin.scheme}://{origin.netloc}/.default"]

    # -- tokens ---------------------------------------------------------------------------

    def _msal_app(self) -> msal.ConfidentialClientApplication:
        if self._app is None:
            try:
                # instance_discovery=False: never ask login.microsoftonline.com whether a custom
                # authority host is "known" (sovereign clouds, tests); tenant discovery still runs
                # against the authority itself.  msal insists on an https authority.
                credential: Any = self._client_certificate or self._client_secret
                self._app = msal.ConfidentialClientApplication(
                    self._client_id,
                    client_credential=credential,
                    authority=self.authority,
                    http_client=self.session,
                    instance_discovery=False,
                )
            except (ValueError, requests.RequestException) as exc:
                raise ConnectorError(f"cannot reach the Entra authority for tenant {self.tenant_id}") from exc
        return self._app

    def access_token(self, *, force_refresh: bool = False, scopes: list[str] | None = None) -> str:
        app = self._msal_app()
        if force_refresh:
            # A 401 from Graph means the cached token was revoked or the app's grants changed.
            app.remove_tokens_for_client()
        try:
            # msal serves the token from its in-memory cache until shortly before expiry.
            result = app.acquire_token_for_client(scopes=scopes or self._scopes)
        except requests.RequestException as exc:
            raise ConnectorError("the Entra token endpoint could not be reached") from exc
        token = result.get("access_token") if isinstance(result, dict) else None
        if not token:
            # error/error_description are safe to show; they never echo the secret.
            code = result.get("error", "unknown_error") if isinstance(result, dict) else "unknown_error"
            raise ConnectorError(f"Entra refused the app credentials ({code}); check client id and secret")
        return str(token)

    def app_roles(self) -> frozenset[str] | None:
        """The application permissions in the Graph token's ``roles`` claim (None: not readable).

        Read without verifying the signature: it only decides which degraded mode to report,
        never who may read what (https://learn.microsoft.com/en-us/entra/identity-platform/access-token-claims-reference).
        """
        parts = self.access_token().split(".")
        if len(parts) != 3:
            return None
        try:
            claims = _json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
        except (ValueError, TypeError):
            return None
        roles = claims.get("roles") if isinstance(claims, dict) else None
        return frozenset(str(r) for r in roles) if isinstance(roles, list) else frozenset()

    # -- requests -------------------------------------------------------------------------

    def url(self, path_or_url: str) -> str:
        if path_or_url.startswith(("https://", "http://")):
            return path_or_url
        return f"{self.graph_base_url}/{path_or_url.lstrip('/')}"

    def _wait(self, resp: requests.Response | None, attempt: int) -> float:
        retry_after = parse_retry_after(resp.headers.get("Retry-After")) if resp is not None else None
        base = retry_after if retry_after is not None else min(self.max_wait, 0.5 * (2**attempt))
        # Jitter only ever lengthens the wait: Retry-After is a floor, and spreading the
        # retries of parallel workers avoids them hitting the throttle again in lockstep.
        return base + self._jitter() * min(1.0, 0.1 * base + 0.05)

    def request(
        self,
        method: str,
        path_or_url: str,
        *,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        authorized: bool = True,
        allow_redirects: bool = False,
        stream: bool = False,
        headers: Mapping[str, str] | None = None,
        scopes: list[str] | None = None,
    ) -> requests.Response:
        """One logical request with throttling retries; returns any non-retryable response."""
        url = self.url(path_or_url) if authorized else path_or_url
        refreshed = False
        attempt = 0
        while True:
            hdrs = dict(headers or {})
            if authorized:
                hdrs["Authorization"] = f"Bearer {self.access_token(scopes=scopes)}"
            try:
                resp = self.session.request(
                    method,
                    url,
                    params=params,
                    json=json,
                    headers=hdrs,
                    timeout=self.timeout,
                    allow_redirects=allow_redirects,
                    stream=stream,
                )
            except Exception as exc:
                limited = _rate_limited_seconds(exc)
                if limited is not None:
                    raise ConnectorError("Microsoft Graph is throttling requests", retry_after=limited) from exc
                if type(exc).__name__ == "ResponseTooLarge":
                    raise TooLarge("response too large", item=_safe_item(url)) from exc
                if isinstance(exc, requests.RequestException) or _is_outbound_refusal(exc):
                    raise ConnectorError(f"Graph request failed: {type(exc).__name__}") from exc
                raise
            if authorized and resp.status_code == 401 and not refreshed:
                refreshed = True
                resp.close()
                self.access_token(force_refresh=True, scopes=scopes)
                continue
            if resp.status_code not in _RETRY_STATUSES:
                return resp
            delay = self._wait(resp, attempt)
            resp.close()
            attempt += 1
            if attempt > self.max_retries or delay > self.max_wait:
                # Hand the wait to the task scheduler instead of blocking a worker for minutes.
                raise ConnectorError("Microsoft Graph is throttling requests", retry_after=delay)
            log.info("graph throttled (%s), retrying in %.2fs", resp.status_code, delay)
            self._sleep(delay)

    def get_json(
        self, path_or_url: str, params: Mapping[str, str] | None = None, headers: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        resp = self.request("GET", path_or_url, params=params, headers=headers)
        if resp.status_code == 410:
            code = _error_code(resp)
            raise DeltaGone(resp.headers.get("Location", ""), code)
        _raise_for_status(resp, path_or_url)
        data = resp.json()
        if not isinstance(data, dict):
            raise ConnectorError("Graph returned an unexpected response", item=_safe_item(path_or_url))
        return data

    def get_page(
        self, path_or_url: str, params: Mapping[str, str] | None = None, headers: Mapping[str, str] | None = None
    ) -> Page:
        data = self.get_json(path_or_url, params, headers)
        items = [v for v in data.get("value", []) if isinstance(v, dict)]
        # The URL of the page (with its query) is what a resume must fetch again.
        url = self.url(path_or_url)
        if params:
            url = requests.Request("GET", url, params=dict(params)).prepare().url or url
        return Page(url, items, data.get("@odata.nextLink"), data.get("@odata.deltaLink"))

    def paginate(
        self, path_or_url: str, params: Mapping[str, str] | None = None, headers: Mapping[str, str] | None = None
    ) -> Iterator[dict[str, Any]]:
        # Headers go with every page: an advanced query's nextLink still needs ConsistencyLevel.
        page = self.get_page(path_or_url, params, headers)
        while True:
            yield from page.items
            if not page.next_link:
                return
            page = self.get_page(page.next_link, headers=headers)

    # -- resources ------------------------------------------------------------------------

    def site(self, site_id: str) -> dict[str, Any]:
        return self.get_json(f"sites/{_seg(site_id)}", {"$select": "id,name,displayName,webUrl"})

    def drives(self, site_id: str) -> list[dict[str, Any]]:
        return list(
            self.paginate(
                f"sites/{_seg(site_id)}/drives",
                {"$select": "id,name,webUrl,driveType,sharePointIds"},
            )
        )

    def lists(self, site_id: str) -> list[dict[str, Any]]:
        return list(self.paginate(f"sites/{_seg(site_id)}/lists", {"$select": "id,name,displayName,webUrl,list"}))

    def list_items(self, site_id: str, list_id: str) -> Iterator[dict[str, Any]]:
        return self.paginate(f"sites/{_seg(site_id)}/lists/{_seg(list_id)}/items", {"$expand": "fields"})

    def list_item_ids(self, site_id: str, list_id: str) -> Iterator[dict[str, Any]]:
        return self.paginate(f"sites/{_seg(site_id)}/lists/{_seg(list_id)}/items", {"$select": "id,sharepointIds"})

    def list_item_permissions(self, site_id: str, list_id: str, item_id: str) -> list[dict[str, Any]]:
        return list(self.paginate(f"sites/{_seg(site_id)}/lists/{_seg(list_id)}/items/{_seg(item_id)}/permissions"))

    def site_pages(self, site_id: str) -> Iterator[dict[str, Any]]:
        # The list gives page metadata only; the web parts come from each page's canvasLayout.
        return self.paginate(f"sites/{_seg(site_id)}/pages/microsoft.graph.sitePage")

    def site_page(self, site_id: str, page_id: str) -> dict[str, Any]:
        # https://learn.microsoft.com/en-us/graph/api/sitepage-get: $expand=canvasLayout on one page.
        return self.get_json(
            f"sites/{_seg(site_id)}/pages/{_seg(page_id)}/microsoft.graph.sitePage", {"$expand": "canvasLayout"}
        )

    def children(self, drive_id: str, item_id: str) -> Iterator[dict[str, Any]]:
        return self.paginate(
            f"drives/{_seg(drive_id)}/items/{_seg(item_id)}/children",
            {"$select": "id,name,file,folder,deleted,root,lastModifiedDateTime"},
        )

    def delta_start_url(self, drive_id: str) -> str:
        return self.url(f"drives/{_seg(drive_id)}/root/delta")

    def item_permissions(self, drive_id: str, item_id: str) -> list[dict[str, Any]]:
        return list(self.paginate(f"drives/{_seg(drive_id)}/items/{_seg(item_id)}/permissions"))

    def users(self) -> Iterator[dict[str, Any]]:
        return self.paginate("users", {"$select": "id,displayName,mail,userPrincipalName,userType,accountEnabled"})

    def transitive_user_members(self, group_id: str) -> Iterator[dict[str, Any]]:
        # The microsoft.graph.user cast drops nested groups, devices and service principals,
        # leaving exactly the people who hold the group through any depth of nesting.  A cast on
        # transitiveMembers is an advanced query (see ADVANCED_QUERY_HEADERS).
        return self.paginate(
            f"groups/{_seg(group_id)}/transitiveMembers/microsoft.graph.user",
            {"$select": "id,displayName,mail,userPrincipalName,userType,accountEnabled", **ADVANCED_QUERY_PARAMS},
            ADVANCED_QUERY_HEADERS,
        )

    def owner_users(self, group_id: str) -> Iterator[dict[str, Any]]:
        # A Microsoft 365 group's owners (what the "_o" SharePoint claim stands for); the user
        # cast keeps service principals out.  Sent as an advanced query like every cast we make.
        return self.paginate(
            f"groups/{_seg(group_id)}/owners/microsoft.graph.user",
            {"$select": "id,userPrincipalName,userType,accountEnabled", **ADVANCED_QUERY_PARAMS},
            ADVANCED_QUERY_HEADERS,
        )

    def user_by_principal_name(self, upn: str) -> dict[str, Any]:
        # GET /users/{userPrincipalName}: https://learn.microsoft.com/en-us/graph/api/user-get
        return self.get_json(f"users/{_seg(upn)}", {"$select": "id,userPrincipalName,userType,accountEnabled"})

    def site_group_users(self, web_url: str, group_id: int) -> list[dict[str, Any]]:
        """``/_api/web/sitegroups/getbyid(n)/users`` of the site at ``web_url`` (SharePoint REST)."""
        origin = urlsplit(web_url)
        base = self.sharepoint_base_url or f"{origin.scheme}://{origin.netloc}"
        url = f"{base}{origin.path.rstrip('/')}/_api/web/sitegroups/getbyid({int(group_id)})/users"
        # The token's audience is the SharePoint origin itself, not Graph.
        scopes = [f"{origin.scheme}://{origin.netloc}/.default"]
        users: list[dict[str, Any]] = []
        while url:
            resp = self.request("GET", url, headers={"Accept": SP_REST_ACCEPT}, scopes=scopes)
            if resp.status_code in (401, 403):
                reason = resp.headers.get("x-ms-diagnostics", "")
                resp.close()
                hint = "register a certificate for the app" if "app only" in reason.lower() else "grant Sites.Read.All"
                raise ConnectorError(f"SharePoint REST refused the app ({hint})", item=f"sitegroup:{group_id}")
            _raise_for_status(resp, url)
            data = resp.json()
            users.extend(v for v in (data.get("value") or []) if isinstance(v, dict))
            # nometadata paging: "odata.nextLink" (absent on the last page).
            url = str(data.get("odata.nextLink") or "")
        return users

    def download(self, drive_id: str, item_id: str, *, max_bytes: int) -> bytes | None:
        """File content, or None when it is larger than ``max_bytes``.

        Graph answers ``/content`` with 302 to a short-lived pre-authenticated URL.  The
        redirect is followed by hand so the bearer token is never sent to that host.
        """
        try:
            return self._download(drive_id, item_id, max_bytes=max_bytes)
        except TooLarge:
            return None

    def _download(self, drive_id: str, item_id: str, *, max_bytes: int) -> bytes | None:
        path = f"drives/{_seg(drive_id)}/items/{_seg(item_id)}/content"
        resp = self.request("GET", path, allow_redirects=False, stream=True)
        hops = 0
        while resp.status_code in _REDIRECT_STATUSES:
            location = resp.headers.get("Location", "")
            resp.close()
            target = urljoin(resp.url, location)
            if urlsplit(target).scheme != "https" or hops >= 3:
                raise ConnectorError("Graph redirected the download to an unexpected place", item=item_id)
            hops += 1
            # authorized=False: the URL carries its own short-lived credential; the bearer
            # token must never reach the (different) download host.
            resp = self.request("GET", target, authorized=False, allow_redirects=False, stream=True)
        _raise_for_status(resp, path)
        chunks: list[bytes] = []
        size = 0
        try:
            for chunk in resp.iter_content(chunk_size=64 * 1024):
                size += len(chunk)
                if size > max_bytes:
                    return None
                chunks.append(chunk)
        except Exception as exc:
            if type(exc).__name__ == "ResponseTooLarge":  # the hardened session's own cap
                return None
            raise
        finally:
            resp.close()
        return b"".join(chunks)

    # -- change notification subscriptions -----------------------------------------------

    def create_drive_subscription(
        self,
        drive_id: str,
        *,
        notification_url: str,
        lifecycle_notification_url: str,
        client_state: str,
        expiration: datetime,
    ) -> dict[str, Any]:
        # driveItem subscriptions exist only on a drive's root and only for "updated".
        body = {
            "changeType": "updated",
            "notificationUrl": notification_url,
            "lifecycleNotificationUrl": lifecycle_notification_url,
            "resource": f"drives/{drive_id}/root",
            "expirationDateTime": _iso(expiration),
            "clientState": client_state,
        }
        resp = self.request("POST", "subscriptions", json=body)
        _raise_for_status(resp, "subscriptions")
        return dict(resp.json())

    def delete_subscription(self, subscription_id: str) -> None:
        path = f"subscriptions/{_seg(subscription_id)}"
        resp = self.request("DELETE", path)
        if resp.status_code == 404:
            resp.close()
            return  # already gone: what we wanted
        _raise_for_status(resp, path)
        resp.close()

    def renew_subscription(self, subscription_id: str, expiration: datetime) -> dict[str, Any]:
        # PATCH both renews and reauthorizes (answers a reauthorizationRequired event).
        path = f"subscriptions/{_seg(subscription_id)}"
        resp = self.request("PATCH", path, json={"expirationDateTime": _iso(expiration)})
        _raise_for_status(resp, path)
        return dict(resp.json())


def _seg(value: str) -> str:
    # Ids end up in URL paths; quoting keeps a hostile id from walking to another endpoint.
    return quote(value, safe=",!-_.~")


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _safe_item(path_or_url: str) -> str:
    return urlsplit(path_or_url).path[-200:]


def _error_code(resp: requests.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return ""
    err = body.get("error") if isinstance(body, dict) else None
    return str(err.get("code", "")) if isinstance(err, dict) else ""


def _raise_for_status(resp: requests.Response, path_or_url: str) -> None:
    if resp.status_code < 400:
        return
    code = _error_code(resp)
    status = resp.status_code
    resp.close()
    if status in (401, 403):
        msg = "the app is not allowed to read this SharePoint resource (grant Sites.Read.All / Files.Read.All)"
    elif status == 404:
        msg = "SharePoint resource not found"
    else:
        msg = f"Microsoft Graph error {status}"
    if code:
        msg = f"{msg} [{code}]"
    if status == 404:
        raise NotFound(msg, item=_safe_item(path_or_url))
    raise ConnectorError(msg, item=_safe_item(path_or_url))


def _is_outbound_refusal(exc: BaseException) -> bool:
    return isinstance(exc, OutboundHTTPError)


def _rate_limited_seconds(exc: BaseException) -> float | None:
    # core.http may raise its own RateLimited from inside the session; honour its wait.
    if isinstance(exc, RateLimited):
        return float(getattr(exc, "retry_after", 0.0) or 0.0)
    return None
