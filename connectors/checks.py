"""The connector check, step by step: auth, listing, permissions, webhook.

A connector's own ``test_connection`` answers one yes/no; an admin setting a source up needs to know
*which* part is wrong (the secret, the site id, a missing grant, the webhook registration). Each kind has one
function here that drives the real connector client built by ``connectors.runtime.build_connector``,
so the outbound policy (``core.http``: https, public addresses, the operator's approved origins)
applies exactly as in a sync. A failed step stops the remote steps after it (they would fail for
the same reason); the webhook step only reads what Cairn itself stored, so it always runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any

import requests
from django.conf import settings

from connectors.base import ConnectorError
from connectors.models import ConnectorInstance, InboundEvent
from connectors.runtime import build_connector
from core.crypto import CredentialsError, decrypt_json
from core.http import BlockedDestination, OutboundHTTPError, RateLimited, redact

STEPS = ("auth", "listing", "permissions", "webhook")
STEP_LABELS = {
    "auth": "Authentication",
    "listing": "Listing content",
    "permissions": "Reading permissions",
    "webhook": "Webhook",
}
# What a check step may meet; anything else is a bug and should surface as one.
FAILURES = (ConnectorError, RateLimited, OutboundHTTPError, CredentialsError, KeyError, ValueError,
            requests.RequestException)  # fmt: skip


@dataclass(frozen=True)
class StepResult:
    step: str
    status: str  # "ok" | "warning" | "failed" | "skipped"
    message: str

    @property
    def label(self) -> str:
        return STEP_LABELS[self.step]

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "warning")

    def as_json(self) -> dict[str, str]:
        return {"step": self.step, "status": self.status, "message": self.message}


class Warn(Exception):
    """A step that passed with something the admin should fix (no event received yet, a scope missing)."""


def _failure_message(exc: BaseException) -> str:
    if isinstance(exc, BlockedDestination):
        return f"The outbound policy refused the address: {exc}"
    if isinstance(exc, requests.RequestException):
        return f"The source could not be reached ({type(exc).__name__})."
    text = str(exc) or type(exc).__name__
    item = getattr(exc, "item", "")
    return redact(f"{text} (at {item})" if item and item not in text else text)[:500]


Step = Callable[[], str]


def _run(steps: list[tuple[str, Step]]) -> list[StepResult]:
    out: list[StepResult] = []
    failed = False
    for name, fn in steps:
        if failed and name != "webhook":
            out.append(StepResult(name, "skipped", "Not run: an earlier step failed."))
            continue
        try:
            out.append(StepResult(name, "ok", fn()))
        except Warn as exc:
            out.append(StepResult(name, "warning", str(exc)))
        except FAILURES as exc:
            out.append(StepResult(name, "failed", _failure_message(exc)))
            failed = True
    return out


def _last_delivery(instance: ConnectorInstance) -> str:
    event = InboundEvent.objects.filter(instance=instance).order_by("-received_at").first()
    if event is None:
        raise Warn("No webhook delivery has arrived yet: register the URLs below at the source.")
    return f"Last verified delivery received {event.received_at:%Y-%m-%d %H:%M} UTC ({event.kind})."


def _first(it: Iterator[Any], n: int = 1) -> list[Any]:
    return list(islice(it, n))


# --- Confluence ----------------------------------------------------------------------------------------------


def check_confluence(instance: ConnectorInstance) -> list[StepResult]:
    from connectors.confluence.client import V2, ConfluenceApiError

    ctx: dict[str, Any] = {}

    def translate(exc: ConfluenceApiError, what: str) -> ConnectorError:
        if exc.status in (401, 403):
            return ConnectorError(f"Confluence answered {exc.status} to {what}")
        if exc.status == 404:
            return ConnectorError(f"Confluence answered 404 to {what}")
        return ConnectorError(f"Confluence error {exc.status} on {what}")

    def auth() -> str:
        ctx["c"] = connector = build_connector(instance)
        try:
            connector.client.get_json(f"{V2}/spaces", {"limit": 1})  # type: ignore[attr-defined]
        except ConfluenceApiError as exc:
            if exc.status in (401, 403):
                raise ConnectorError(f"Confluence rejected the e-mail / API token (HTTP {exc.status}).") from None
            if exc.status == 404:
                raise ConnectorError("No Confluence Cloud site answers at this site URL.") from None
            raise translate(exc, "the space listing") from None
        return "The e-mail and API token were accepted."

    def listing() -> str:
        connector = ctx["c"]
        keys = tuple(connector.settings.space_keys)
        try:
            spaces = list(connector.client.spaces(keys)) if keys else _first(connector.client.spaces())
        except ConfluenceApiError as exc:
            raise translate(exc, "the space listing") from None
        if keys:
            missing = sorted(set(keys) - {str(s.get("key")) for s in spaces})
            if missing:
                raise ConnectorError("These spaces do not exist or the account cannot view them: " + ", ".join(missing))
        if not spaces:
            raise ConnectorError("The account sees no space: grant it the space's View permission.")
        ctx["space"] = spaces[0]
        try:
            batch = connector.client.content_batch("page", str(spaces[0]["id"]))
        except ConfluenceApiError as exc:
            raise translate(exc, f"the pages of space {spaces[0].get('key')}") from None
        return f"Listed {len(spaces)} space(s); space {spaces[0].get('key')} shows {len(batch.results)} page(s) on its first page."

    def permissions() -> str:
        connector, space = ctx["c"], ctx["space"]
        try:
            grants = _first(connector.client.space_permissions(str(space["id"])), 50)
        except ConfluenceApiError as exc:
            raise ConnectorError(
                f"Cannot read the permissions of space {space.get('key')} (HTTP {exc.status}): the account needs "
                "the space's View permission and the read:space.permission:confluence scope."
            ) from None
        try:
            groups = _first(connector.client.groups(), 1)
        except ConfluenceApiError as exc:
            raise ConnectorError(
                f"Cannot list groups (HTTP {exc.status}): the account needs the read:group:confluence scope "
                "(classic: read:confluence-groups)."
            ) from None
        if not grants:
            raise Warn(
                f"Space {space.get('key')} lists no permission the account may see: its pages would reach nobody."
            )
        return f"Read {len(grants)} permission grant(s) of space {space.get('key')}" + (
            " and the group directory." if groups else "; the site has no groups."
        )

    return _run([("auth", auth), ("listing", listing), ("permissions", permissions),
                 ("webhook", lambda: _last_delivery(instance))])  # fmt: skip


# --- SharePoint ----------------------------------------------------------------------------------------------

SITE_READ_ROLES = {"Sites.Read.All", "Sites.Selected", "Sites.ReadWrite.All", "Sites.FullControl.All"}
DIRECTORY_ROLES = {"GroupMember.Read.All", "Group.Read.All", "Directory.Read.All"}


def check_sharepoint(instance: ConnectorInstance) -> list[StepResult]:
    ctx: dict[str, Any] = {}

    def auth() -> str:
        ctx["c"] = connector = build_connector(instance)
        if not connector.config.site_ids:  # type: ignore[attr-defined]
            raise ConnectorError("No SharePoint site is configured.")
        connector.client.access_token()  # type: ignore[attr-defined]
        roles = connector.client.app_roles()  # type: ignore[attr-defined]
        ctx["roles"] = roles
        granted = f" Application permissions in the token: {', '.join(sorted(roles))}." if roles else ""
        return "Entra issued an app-only token for Microsoft Graph." + granted

    def listing() -> str:
        connector = ctx["c"]
        counts = []
        for site_id in connector.config.site_ids:
            try:
                site = connector.client.site(site_id)
                drives = connector.client.drives(site_id)
            except ConnectorError as exc:
                raise ConnectorError(f"{exc} (site {site_id})") from None
            counts.append(
                f"{site.get('displayName') or site_id}: {len(drives)} librar{'y' if len(drives) == 1 else 'ies'}"
            )
            ctx.setdefault("drive", drives[0] if drives else None)
        return "Listed " + "; ".join(counts) + "."

    def permissions() -> str:
        connector, roles = ctx["c"], ctx.get("roles")
        if roles is not None and not roles & SITE_READ_ROLES:
            raise ConnectorError("The token carries no Sites.Read.All or Sites.Selected application permission.")
        drive = ctx.get("drive")
        item = _first(connector.client.children(str(drive["id"]), "root")) if drive is not None else []
        if item:
            # One file's sharing, read as the permission sync reads every item's.
            connector.client.item_permissions(str(drive["id"]), str(item[0]["id"]))  # type: ignore[index]
        try:
            _first(connector.client.users())
        except ConnectorError:
            raise ConnectorError(
                "Cannot read the directory's users: grant the application permission User.Read.All "
                "(and GroupMember.Read.All for group members)."
            ) from None
        if roles is not None and not roles & DIRECTORY_ROLES:
            raise Warn("Item permissions and users are readable, but the token lacks GroupMember.Read.All: "
                       "documents shared with a group would reach nobody.")  # fmt: skip
        return "Item permissions and the directory's users are readable."

    def webhook() -> str:
        if not str(settings.CAIRN.get("PUBLIC_BASE_URL") or ""):
            raise Warn("CAIRN_PUBLIC_BASE_URL is not set: Graph cannot reach Cairn, so changes arrive only "
                       "with the scheduled syncs.")  # fmt: skip
        subscriptions = (instance.config or {}).get("subscriptions") or {}
        if not subscriptions:
            raise Warn("No Graph subscription exists yet; they are created within the hour (or on Sync changes).")
        return f"{len(subscriptions)} Graph change-notification subscription(s) active."

    return _run([("auth", auth), ("listing", listing), ("permissions", permissions), ("webhook", webhook)])


# --- Slack ---------------------------------------------------------------------------------------------------


def check_slack(instance: ConnectorInstance) -> list[StepResult]:
    from connectors.slack.client import SlackMethodError

    ctx: dict[str, Any] = {}

    def scope_hint(exc: ConnectorError) -> ConnectorError:
        needed = getattr(exc, "needed", "")
        if isinstance(exc, SlackMethodError) and exc.code == "missing_scope":
            return ConnectorError(
                f"The bot token lacks the scope {needed or '(unnamed)'}: add it and reinstall the app."
            )
        return exc

    def auth() -> str:
        ctx["c"] = connector = build_connector(instance)
        data = connector.client.auth_test()  # type: ignore[attr-defined]
        team = (instance.config or {}).get("team_id")
        if team and data.get("team_id") != team:
            raise ConnectorError(f"The token belongs to workspace {data.get('team_id')}, not the configured {team}.")
        return f"The bot token works for workspace {data.get('team') or data.get('team_id')}."

    def listing() -> str:
        client = ctx["c"].client
        try:
            channels = _first(client.iter_channels(), 200)
        except ConnectorError as exc:
            raise scope_hint(exc) from None
        ctx["channels"] = channels
        member_of = [c for c in channels if c.get("is_member")]
        ctx["member_of"] = member_of
        return f"Listed {len(channels)} channel(s); the app is a member of {len(member_of)}."

    def permissions() -> str:
        client = ctx["c"].client
        try:
            users = _first(client.iter_users(), 200)
            channel = (ctx["member_of"] or ctx["channels"] or [None])[0]
            if channel is not None:
                _first(client.iter_members(str(channel["id"])))
        except ConnectorError as exc:
            raise scope_hint(exc) from None
        if users and not any((u.get("profile") or {}).get("email") for u in users):
            raise Warn("Members are readable, but no e-mail is: add users:read.email so people can be matched.")
        return f"Channel members and {len(users)} user profile(s) are readable."

    def webhook() -> str:
        credentials = decrypt_json(instance.credentials_encrypted)
        if not credentials.get("signing_secret"):
            raise ConnectorError("No signing secret is stored: Cairn refuses every event until you add it.")
        return _last_delivery(instance)

    return _run([("auth", auth), ("listing", listing), ("permissions", permissions), ("webhook", webhook)])


CHECKS: dict[str, Callable[[ConnectorInstance], list[StepResult]]] = {
    "confluence": check_confluence,
    "sharepoint": check_sharepoint,
    "slack": check_slack,
}


def run_checks(instance: ConnectorInstance) -> list[StepResult]:
    """Call inside the instance's tenant_context (it reads the instance's deliveries)."""
    check = CHECKS.get(instance.kind)
    if check is None:
        # A kind registered without its own steps (the demo source, a plug-in) still gets the one test.
        def auth() -> str:
            build_connector(instance).test_connection()
            return "Connected."

        return _run([("auth", auth)])
    return check(instance)
