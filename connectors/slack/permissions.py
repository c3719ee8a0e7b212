"""Slack permissions as Cairn principals.

The rule: a message is readable by the members of its channel.

* Public channel: every full member of the workspace can open it, and guests
  only if they were added to it, so the ACL is one clause
  ``[slack:channel:<id>, slack:workspace:<team>]``.  ``slack:workspace:<team>``
  holds full members only; guests reach public channels through the channel
  principal alone.
* Private channel: ``[slack:channel:<id>]`` and nothing else.

Privacy is decided by ``is_private`` (or ``channel_type == "group"`` on events),
never by the ``C``/``G`` id prefix: channels created since 2021 are ``C...``
whether private or not, and converted channels keep their old id.

Group members are human accounts only: bots (``is_bot``), Slackbot and
deactivated (``deleted``) accounts are dropped, so a bot that sits in a private
channel never becomes a way in, and a deactivated person loses access on the
next permission refresh.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from connectors.base import IdentitySeen, SetGroupMembers
from retrieval.contracts import Acl, normalise_acl

SLACKBOT_ID = "USLACKBOT"  # Slackbot reports is_bot: false, so it needs naming explicitly

User = Mapping[str, Any]


def channel_principal(channel_id: str) -> str:
    return f"slack:channel:{channel_id}"


def workspace_principal(team_id: str) -> str:
    return f"slack:workspace:{team_id}"


def user_principal(user_id: str) -> str:
    return f"slack:user:{user_id}"


def channel_acl(channel_id: str, *, is_private: bool, team_id: str) -> Acl:
    if is_private:
        return normalise_acl([[channel_principal(channel_id)]])
    return normalise_acl([[channel_principal(channel_id), workspace_principal(team_id)]])


def is_bot(user: User) -> bool:
    return bool(user.get("is_bot")) or user.get("id") == SLACKBOT_ID


def is_deactivated(user: User) -> bool:
    return bool(user.get("deleted"))


def is_guest(user: User) -> bool:
    # Multi-channel guests are is_restricted; single-channel guests are is_ultra_restricted.
    return bool(user.get("is_restricted")) or bool(user.get("is_ultra_restricted"))


def is_active_human(user: User) -> bool:
    return not is_bot(user) and not is_deactivated(user)


def is_full_member(user: User) -> bool:
    return is_active_human(user) and not is_guest(user)


def display_name(user: User) -> str:
    profile = user.get("profile") or {}
    for candidate in (
        profile.get("display_name"),
        profile.get("real_name"),
        user.get("real_name"),
        user.get("name"),
    ):
        if candidate:
            return str(candidate)
    return str(user.get("id", ""))


def channel_members_op(
    channel_id: str, member_ids: Iterable[str], users: Mapping[str, User], *, channel_name: str = ""
) -> SetGroupMembers:
    """``SetGroupMembers`` for ``slack:channel:<id>``: human, non-deactivated members only.

    A member missing from ``users`` is dropped (fail closed): we cannot tell it is a person.
    """
    members = sorted({user_principal(uid) for uid in member_ids if uid in users and is_active_human(users[uid])})
    return SetGroupMembers(
        group_principal=channel_principal(channel_id),
        member_principals=tuple(members),
        display_name=f"#{channel_name}" if channel_name else "",
    )


def workspace_members_op(team_id: str, users: Iterable[User], *, team_name: str = "") -> SetGroupMembers:
    """``SetGroupMembers`` for ``slack:workspace:<team>``: full members of *this* team only.

    Guests, bots, deactivated accounts and Slack Connect users from other teams are left out.
    """
    members = sorted(
        {
            user_principal(str(u["id"]))
            for u in users
            if is_full_member(u) and str(u.get("team_id") or team_id) == team_id
        }
    )
    return SetGroupMembers(
        group_principal=workspace_principal(team_id), member_principals=tuple(members), display_name=team_name
    )


def identity_op(user: User) -> IdentitySeen | None:
    """An ``IdentitySeen`` for a user whose profile carries an e-mail (needs ``users:read.email``)."""
    email = ((user.get("profile") or {}).get("email") or "").strip()
    if not email:
        return None
    return IdentitySeen(
        principal=user_principal(str(user["id"])),
        email=email,
        # Only what Slack states: an absent flag is not taken as proof of ownership, because
        # the mapping by e-mail grants this person's Cairn account the Slack principal.
        email_verified=bool(user.get("is_email_confirmed")),
        display_name=display_name(user),
        is_guest=is_guest(user),
        is_bot=is_bot(user),
        deactivated=is_deactivated(user),
    )


def is_external(user: User, team_id: str) -> bool:
    """A Slack Connect member from another organisation: their user object names their own team."""
    home = str(user.get("team_id") or team_id)
    return home != team_id or bool(user.get("is_stranger"))


def external_identity_op(user: User) -> IdentitySeen:
    """An ``IdentitySeen`` for a Slack Connect member from another organisation.

    Recorded even without a visible e-mail, so an admin can map it in the console; until then it
    maps to nobody, and the channel principal it is a member of grants nothing through it (fail
    closed).  Its e-mail is never taken as verified: the other organisation vouches for it, not
    this workspace, so it must not be auto-mapped to a Cairn account with the same address.
    """
    email = ((user.get("profile") or {}).get("email") or "").strip() or None
    team = str(user.get("team_id") or "")
    name = display_name(user)
    return IdentitySeen(
        principal=user_principal(str(user["id"])),
        email=email,
        email_verified=False,
        display_name=f"{name} (external, {team})" if team else f"{name} (external)",
        is_guest=True,
        is_bot=is_bot(user),
        deactivated=is_deactivated(user),
    )
