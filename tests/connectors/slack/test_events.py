"""Request signing and event mapping: pure functions, no server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from connectors.base import DeleteDocument, UpsertDocument
from connectors.slack.events import handle_event, sign, verify_signature
from connectors.slack.mapping import ChannelInfo, WorkspaceContext

EVENTS: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parents[3] / "connectors/slack/fixtures/events.json").read_text()
)
CURRENT = "8f742231b10e8888abcd99yyyzzz85a5"
PREVIOUS = "0ld5ecret0ld5ecret0ld5ecret0ld5e"
NOW = 1_717_001_000.0
BODY = json.dumps(EVENTS["message"]).encode()
CONTEXT = WorkspaceContext(
    team_id="T0CAIRN",
    workspace_domain="acme",
    channels={
        "C0GENERAL": ChannelInfo("C0GENERAL", "general", is_private=False),
        "C0SECRET": ChannelInfo("C0SECRET", "leadership", is_private=True),
    },
    user_names={"U0ALICE": "alice", "U0BOB": "bob", "U0CAROL": "carol"},
)


def signed(secret: str, timestamp: int, body: bytes = BODY) -> tuple[str, bytes, str]:
    return str(timestamp), body, sign(secret, str(timestamp), body)


def test_slacks_documented_example_signature_verifies() -> None:
    # The worked example from Slack's "Verifying requests from Slack" guide.
    body = (
        b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V"
        b"&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text="
        b"&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN"
        b"&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
    )
    expected = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"

    assert verify_signature([CURRENT], "1531420618", body, expected, now=1531420618 + 10)


def test_a_correctly_signed_request_is_accepted() -> None:
    assert verify_signature([CURRENT], *signed(CURRENT, int(NOW)), now=NOW)


@pytest.mark.parametrize("skew", [301, -301])
def test_a_timestamp_more_than_five_minutes_off_is_rejected_even_when_correctly_signed(skew: int) -> None:
    assert not verify_signature([CURRENT], *signed(CURRENT, int(NOW) + skew), now=NOW)


@pytest.mark.parametrize("skew", [300, -300])
def test_a_timestamp_exactly_five_minutes_off_is_still_accepted(skew: int) -> None:
    assert verify_signature([CURRENT], *signed(CURRENT, int(NOW) + skew), now=NOW)


def test_a_body_with_one_byte_tampered_is_rejected() -> None:
    timestamp, body, signature = signed(CURRENT, int(NOW))
    tampered = bytearray(body)
    tampered[len(tampered) // 2] ^= 0x01

    assert not verify_signature([CURRENT], timestamp, bytes(tampered), signature, now=NOW)


def test_the_previous_secret_is_accepted_during_a_rotation_and_an_unknown_one_is_not() -> None:
    assert verify_signature([CURRENT, PREVIOUS], *signed(PREVIOUS, int(NOW)), now=NOW)
    assert not verify_signature([CURRENT, PREVIOUS], *signed("someone-elses-secret", int(NOW)), now=NOW)
    assert not verify_signature([CURRENT], *signed(PREVIOUS, int(NOW)), now=NOW)


def test_more_than_two_signing_secrets_is_a_configuration_error() -> None:
    with pytest.raises(ValueError, match="at most 2"):
        verify_signature([CURRENT, PREVIOUS, "third"], *signed(CURRENT, int(NOW)), now=NOW)


@pytest.mark.parametrize("timestamp", ["", "abc", "1717001000.5", "-1717001000", "１７１７"])
def test_a_malformed_timestamp_is_rejected_without_raising(timestamp: str) -> None:
    assert not verify_signature([CURRENT], timestamp, BODY, sign(CURRENT, timestamp, BODY), now=NOW)


def test_no_configured_secret_rejects_everything() -> None:
    assert not verify_signature([], *signed(CURRENT, int(NOW)), now=NOW)
    assert not verify_signature([""], *signed("", int(NOW)), now=NOW)


def test_url_verification_echoes_the_challenge() -> None:
    result = handle_event(EVENTS["url_verification"])

    assert result.kind == "url_verification"
    assert result.challenge == "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"


def test_a_redelivered_event_has_the_same_dedupe_key() -> None:
    first = handle_event(EVENTS["message"], CONTEXT)
    retry = handle_event(json.loads(json.dumps(EVENTS["message"])), CONTEXT)

    assert first.dedupe_key == retry.dedupe_key == "Ev0NEWMSG"
    assert first.ops == retry.ops


def test_a_new_message_becomes_an_upsert_with_the_channel_acl() -> None:
    (op,) = handle_event(EVENTS["message"], CONTEXT).ops

    assert isinstance(op, UpsertDocument)
    assert op.doc.external_id == "msg:C0GENERAL:1717001000.000100"
    assert op.doc.acl == (("slack:channel:C0GENERAL", "slack:workspace:T0CAIRN"),)
    assert op.doc.container == "#general"


def test_message_changed_upserts_the_new_text_at_the_edit_timestamp() -> None:
    (op,) = handle_event(EVENTS["message_changed"], CONTEXT).ops

    assert isinstance(op, UpsertDocument)
    assert op.doc.external_id == "msg:C0GENERAL:1717000400.000700"
    assert op.doc.content == b"Lunch moved to 2pm"
    assert op.doc.source_version == 1717001200_000300


def test_message_deleted_deletes_the_document_named_by_deleted_ts() -> None:
    assert handle_event(EVENTS["message_deleted"], CONTEXT).ops == (DeleteDocument("msg:C0GENERAL:1717000100.000200"),)


def test_a_deleted_thread_parent_left_as_a_tombstone_is_deleted() -> None:
    payload = json.loads(json.dumps(EVENTS["message_changed"]))
    payload["event"]["message"].update(subtype="tombstone", text="This message was deleted.", hidden=True)

    assert handle_event(payload, CONTEXT).ops == (DeleteDocument("msg:C0GENERAL:1717000400.000700"),)


def test_a_message_edited_down_to_nothing_is_deleted_up_to_its_edit_version() -> None:
    payload = json.loads(json.dumps(EVENTS["message_changed"]))
    payload["event"]["message"]["text"] = ""

    assert handle_event(payload, CONTEXT).ops == (
        DeleteDocument("msg:C0GENERAL:1717000400.000700", source_version=1717001200_000300),
    )


def test_a_thread_reply_event_is_upserted_with_its_parent_link() -> None:
    (op,) = handle_event(EVENTS["thread_reply"], CONTEXT).ops

    assert isinstance(op, UpsertDocument)
    assert op.doc.metadata["thread_ts"] == "1717000200.000300"
    assert op.doc.metadata["parent_external_id"] == "msg:C0GENERAL:1717000200.000300"


def test_a_channel_join_system_message_is_not_content_but_refreshes_membership() -> None:
    result = handle_event(EVENTS["channel_join"], CONTEXT)

    assert result.ops == ()
    assert result.refresh_channels == ("C0PROJ",)


@pytest.mark.parametrize(
    ("name", "channel"),
    [
        ("member_joined_channel", "C0PROJ"),
        ("member_left_channel", "C0PROJ"),
        ("channel_archive", "C0PROJ"),
        ("group_archive", "C0SECRET"),
        ("channel_created", "C0NEW"),
    ],
)
def test_membership_and_lifecycle_events_ask_for_a_channel_membership_refresh(name: str, channel: str) -> None:
    result = handle_event(EVENTS[name], CONTEXT)

    assert result.kind == "event"
    assert result.ops == ()
    assert result.refresh_channels == (channel,)


def test_a_group_left_event_refreshes_the_private_channel() -> None:
    payload = {**EVENTS["group_archive"], "event": {"type": "group_left", "channel": "C0SECRET"}}

    assert handle_event(payload, CONTEXT).refresh_channels == ("C0SECRET",)


def test_a_message_in_a_channel_of_unknown_privacy_fails_closed_to_a_private_acl() -> None:
    payload = json.loads(json.dumps(EVENTS["message"]))
    payload["event"].update(channel="C0UNKNOWN")
    del payload["event"]["channel_type"]

    (op,) = handle_event(payload, CONTEXT).ops

    assert isinstance(op, UpsertDocument)
    assert op.doc.acl == (("slack:channel:C0UNKNOWN",),)


def test_direct_messages_and_bot_posts_are_ignored() -> None:
    dm = json.loads(json.dumps(EVENTS["message"]))
    dm["event"]["channel_type"] = "im"
    bot = json.loads(json.dumps(EVENTS["message"]))
    bot["event"].update(subtype="bot_message", bot_id="B0WEBHOOK")

    assert handle_event(dm, CONTEXT).kind == "ignored"
    assert handle_event(bot, CONTEXT).kind == "ignored"


def test_a_privacy_change_asks_for_new_acls_on_every_message_of_the_channel() -> None:
    result = handle_event(EVENTS["channel_convert_to_private"], CONTEXT)

    assert result.reacl_channels == ("C0PROJ",)
    assert result.refresh_channels == ("C0PROJ",)
