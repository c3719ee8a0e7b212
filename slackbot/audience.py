"""Who the answer is for: the asker as a Cairn user, the channel audience's shared permissions, per-user and per-channel throttles."""

from __future__ import annotations

import logging
import time
from typing import Any

from django.conf import settings
from django.core.cache import cache

from retrieval.permissions import PermissionContext, fingerprint_of, permission_context
from slackbot.api import MAX_CHANNEL_MEMBERS, SlackApi
from tenants.models import ExternalIdentity

log = logging.getLogger(__name__)


SLACK_SYSTEM_USERS = frozenset({"USLACKBOT"})


def _settings() -> dict[str, int]:
    cfg = getattr(settings, "CAIRN", {})
    return {
        "user_per_minute": int(cfg.get("SLACK_BOT_USER_PER_MINUTE", 6)),
        "channel_per_minute": int(cfg.get("SLACK_BOT_CHANNEL_PER_MINUTE", 20)),
    }


def cairn_user_for(slack_user: str) -> Any:
    """The Cairn user a Slack account is mapped to (verified e-mail or admin), else None."""

    identity = (
        ExternalIdentity.objects.filter(principal=f"slack:user:{slack_user}", deactivated=False, is_bot=False)
        .select_related("user")
        .first()
    )
    if identity is None or identity.user is None or not identity.user.is_active:
        return None
    return identity.user


def audience_permission(api: SlackApi, channel: str, asker_perm: Any) -> tuple[Any | None, str]:
    """The permission context for an answer every member of ``channel`` will see.

    Returns ``(perm, "")`` or ``(None, reason)``.  The readable set is the intersection over
    every human member; an unmappable member (external, unlinked guest) reads nothing.
    """

    members = api.members(channel)
    if len(members) > MAX_CHANNEL_MEMBERS:
        return None, "too_many_members"
    readable: set[int] = set(asker_perm.readable_acl_set_ids)
    for member in members:
        if member in SLACK_SYSTEM_USERS:
            continue
        user = cairn_user_for(member)
        if user is None:
            info = _user_info_cached(api, member)
            if info.get("is_bot") or info.get("deleted"):
                continue  # bots and deactivated accounts do not read the reply
            return None, "unmapped_member"
        if user.pk == asker_perm.user_id:
            continue
        readable &= set(permission_context(user).readable_acl_set_ids)
        if not readable:
            return None, "empty_intersection"
    ids = tuple(sorted(readable or ()))
    if not ids:
        return None, "empty_intersection"
    perm = PermissionContext(asker_perm.tenant_id, asker_perm.user_id, frozenset(), ids, fingerprint_of(ids),
                             asker_perm.acl_version)  # fmt: skip
    return perm, ""


def _user_info_cached(api: SlackApi, user: str) -> dict[str, Any]:
    try:
        return api.user_info(user)
    except Exception:  # noqa: BLE001 - unknown member: treat as a human we cannot map (fail closed)
        return {}


def throttled(tenant_id: int, user: str, channel: str) -> bool:
    """Fixed one-minute windows per Slack user and per channel (Redis counters)."""
    limits = _settings()
    window = int(time.time() // 60)
    for scope, ident, limit in (("u", user, limits["user_per_minute"]), ("c", channel, limits["channel_per_minute"])):
        key = f"slackbot:rl:{tenant_id}:{scope}:{ident}:{window}"
        cache.add(key, 0, timeout=120)
        try:
            count = cache.incr(key)
        except ValueError:
            count = 1
        if count > limit:
            return True
    return False
