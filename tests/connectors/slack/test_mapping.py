"""Message -> SourceDocument details: timestamps, permalinks, mrkdwn, what counts as content."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from connectors.slack.mapping import (
    ChannelInfo,
    WorkspaceContext,
    is_content_message,
    message_to_document,
    mrkdwn_to_text,
    permalink,
    ts_to_micros,
)

USERS = {"U0ALICE": "alice", "U0BOB": "bob"}
CHANNELS = {"C0PROJ": "project-x"}


def test_a_slack_ts_becomes_exact_microseconds() -> None:
    assert ts_to_micros("1355517523.000005") == 1355517523_000005
    assert ts_to_micros("1717000450.5") == 1717000450_500000
    assert ts_to_micros("1717000450") == 1717000450_000000
    with pytest.raises(ValueError):
        ts_to_micros("1717.0e5")


def test_permalinks_follow_slacks_archive_shape() -> None:
    assert permalink("acme", "C0GENERAL", "1717000100.000200") == (
        "https://acme.slack.com/archives/C0GENERAL/p1717000100000200"
    )


@pytest.mark.parametrize(
    ("mrkdwn", "plain"),
    [
        ("ping <@U0BOB>", "ping @bob"),
        ("ping <@U0ZED>", "ping @U0ZED"),
        ("ping <@U0ZED|zed>", "ping @zed"),
        ("see <#C0PROJ|project-x>", "see #project-x"),
        ("see <#C0PROJ>", "see #project-x"),
        ("read <https://wiki.acme.test/x|the guide>", "read the guide (https://wiki.acme.test/x)"),
        ("read <https://wiki.acme.test/x>", "read https://wiki.acme.test/x"),
        ("mail <mailto:bob@acme.test|bob@acme.test>", "mail bob@acme.test"),
        ("<!here> and <!channel>", "@here and @channel"),
        ("ask <!subteam^S0OPS|@oncall>", "ask @oncall"),
        ("due <!date^1717000000^{date_short}|Jun 1st>", "due Jun 1st"),
        ("a &lt;b&gt; &amp; c", "a <b> & c"),
        ("plain text stays", "plain text stays"),
    ],
)
def test_mrkdwn_entities_become_readable_plain_text(mrkdwn: str, plain: str) -> None:
    assert mrkdwn_to_text(mrkdwn, user_names=USERS, channel_names=CHANNELS) == plain


@pytest.mark.parametrize(
    ("message", "content"),
    [
        ({"type": "message", "user": "U0ALICE", "text": "hi", "ts": "1.000001"}, True),
        (
            {"type": "message", "subtype": "thread_broadcast", "user": "U0ALICE", "text": "hi", "ts": "1.1"},
            True,
        ),
        ({"type": "message", "subtype": "file_share", "user": "U0ALICE", "text": "notes", "ts": "1.1"}, True),
        (
            {"type": "message", "subtype": "channel_join", "user": "U0ALICE", "text": "joined", "ts": "1.1"},
            False,
        ),
        (
            {"type": "message", "subtype": "channel_leave", "user": "U0ALICE", "text": "left", "ts": "1.1"},
            False,
        ),
        (
            {"type": "message", "subtype": "channel_topic", "user": "U0ALICE", "text": "topic", "ts": "1.1"},
            False,
        ),
        ({"type": "message", "subtype": "bot_message", "bot_id": "B1", "text": "deploy", "ts": "1.1"}, False),
        ({"type": "message", "user": "U0BOT", "bot_id": "B1", "text": "build green", "ts": "1.1"}, False),
        ({"type": "message", "user": "U0ALICE", "text": "   ", "ts": "1.1"}, False),
    ],
)
def test_only_messages_people_wrote_are_content(message: dict[str, str], content: bool) -> None:
    assert is_content_message(message) is content


def test_bot_posts_can_be_opted_in() -> None:
    post = {
        "type": "message",
        "subtype": "bot_message",
        "bot_id": "B1",
        "text": "Deploy #42 finished",
        "ts": "1.1",
    }

    assert is_content_message(post, include_bot_messages=True)


def test_a_document_has_utc_times_and_the_edit_as_updated_at() -> None:
    channel = ChannelInfo("C0PROJ", "project-x", is_private=False)
    message = {
        "type": "message",
        "user": "U0ALICE",
        "text": "Kickoff notes",
        "ts": "1717000600.000900",
        "edited": {"user": "U0ALICE", "ts": "1717000660.000000"},
    }

    doc = message_to_document(message, channel, WorkspaceContext(team_id="T0CAIRN", workspace_domain="acme"))

    assert doc is not None
    assert doc.created_at == datetime(2024, 5, 29, 16, 36, 40, 900, tzinfo=UTC)
    assert doc.updated_at == datetime(2024, 5, 29, 16, 37, 40, tzinfo=UTC)
    assert doc.title == "#project-x — U0ALICE: Kickoff notes"
