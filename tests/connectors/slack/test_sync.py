"""SlackConnector end to end against a fake Slack Web API on 127.0.0.1."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connectors.base import ConnectorError, IdentitySeen, SetGroupMembers, UpdateAcl, UpsertDocument
from connectors.slack.client import DEFAULT_PACING, HistoryPacing, SlackClient
from connectors.slack.events import InMemoryEventInbox
from connectors.slack.sync import SlackConnector
from tests.connectors.slack.fake_slack import TOKEN, FakeSlackServer, iter_fixture_ids
from tests.connectors.slack.helpers import CAST, Ledger, ops_of

EVENTS = json.loads((Path(__file__).resolve().parents[3] / "connectors/slack/fixtures/events.json").read_text())

GENERAL = {
    "msg:C0GENERAL:1717000100.000200",
    "msg:C0GENERAL:1717000200.000300",
    "msg:C0GENERAL:1717000250.000400",
    "msg:C0GENERAL:1717000260.000500",
    "msg:C0GENERAL:1717000400.000700",
}
PROJECT_X = {"msg:C0PROJ:1717000600.000900", "msg:C0PROJ:1717000700.001000"}
LEADERSHIP = {"msg:C0SECRET:1717000800.001100"}


@pytest.fixture
def server() -> Iterator[FakeSlackServer]:
    with FakeSlackServer() as srv:
        yield srv


def make_connector(
    server: FakeSlackServer,
    *,
    inbox: InMemoryEventInbox | None = None,
    pacing: HistoryPacing = DEFAULT_PACING,
    token: str = TOKEN,
    page_size: int = 200,
) -> SlackConnector:
    client = SlackClient(token, base_url=server.base_url, pacing=pacing, page_size=page_size, retry_jitter_s=0.0)
    return SlackConnector(client, inbox=inbox)


def synced(server: FakeSlackServer, **kwargs: Any) -> tuple[SlackConnector, Ledger]:
    connector = make_connector(server, **kwargs)
    ledger = Ledger()
    ledger.apply_all(ops_of(connector.permission_sync({})))
    ledger.apply_all(ops_of(connector.full_sync({})))
    return connector, ledger


def test_a_full_backfill_and_permission_sync_give_each_person_exactly_their_channels(
    server: FakeSlackServer,
) -> None:
    _, ledger = synced(server)

    assert set(ledger.docs) == set(iter_fixture_ids())
    assert ledger.table() == {
        "alice": GENERAL | PROJECT_X | LEADERSHIP,
        "bob": GENERAL | PROJECT_X,  # public channels via the workspace principal; not leadership
        "carol": GENERAL | PROJECT_X | LEADERSHIP,
        "gail": PROJECT_X,  # a guest reads only the public channel she was added to
        "bot": set(),
        "dan": set(),  # deactivated
    }


def test_a_private_channel_is_decided_by_is_private_not_by_its_c_prefixed_id(server: FakeSlackServer) -> None:
    _, ledger = synced(server)

    assert ledger.docs["msg:C0SECRET:1717000800.001100"].acl == (("slack:channel:C0SECRET",),)
    assert ledger.docs["msg:C0PROJ:1717000600.000900"].acl == (("slack:channel:C0PROJ", "slack:workspace:T0CAIRN"),)


def test_bots_slackbot_and_deactivated_users_are_never_group_members(server: FakeSlackServer) -> None:
    _, ledger = synced(server)

    assert ledger.groups["slack:channel:C0SECRET"] == {"slack:user:U0ALICE", "slack:user:U0CAROL"}
    assert ledger.groups["slack:channel:C0GENERAL"] == {
        "slack:user:U0ALICE",
        "slack:user:U0BOB",
        "slack:user:U0CAROL",
    }


def test_the_workspace_principal_holds_full_members_only_and_no_guests(server: FakeSlackServer) -> None:
    _, ledger = synced(server)

    assert ledger.groups["slack:workspace:T0CAIRN"] == {
        "slack:user:U0ALICE",
        "slack:user:U0BOB",
        "slack:user:U0CAROL",
    }


def test_identities_are_reported_for_users_with_an_email_with_guest_and_deactivated_flags(
    server: FakeSlackServer,
) -> None:
    connector = make_connector(server)
    identities = {op.principal: op for op in ops_of(connector.permission_sync({})) if isinstance(op, IdentitySeen)}

    assert set(identities) == {f"slack:user:{CAST[n]}" for n in ("alice", "bob", "carol", "gail", "dan")}
    assert identities["slack:user:U0GAIL"].is_guest and identities["slack:user:U0GAIL"].email == "gail@vendor.test"
    assert identities["slack:user:U0DAN"].deactivated
    assert identities["slack:user:U0ALICE"].email_verified


def test_a_thread_reply_is_its_own_document_linked_to_its_parent(server: FakeSlackServer) -> None:
    _, ledger = synced(server)

    reply = ledger.docs["msg:C0GENERAL:1717000250.000400"]
    assert reply.content == b"8443 since the migration"
    assert reply.metadata["parent_external_id"] == "msg:C0GENERAL:1717000200.000300"
    assert reply.url == (
        "https://acme.slack.com/archives/C0GENERAL/p1717000250000400?thread_ts=1717000200.000300&cid=C0GENERAL"
    )


def test_system_messages_and_bot_noise_are_not_indexed(server: FakeSlackServer) -> None:
    _, ledger = synced(server)

    assert "msg:C0GENERAL:1717000000.000100" not in ledger.docs  # channel_join
    assert "msg:C0GENERAL:1717000300.000600" not in ledger.docs  # bot_message (webhook)
    assert "msg:C0GENERAL:1717000500.000800" not in ledger.docs  # app bot post (bot_id)


def test_a_message_document_carries_plain_text_permalink_container_and_edit_version(
    server: FakeSlackServer,
) -> None:
    _, ledger = synced(server)

    doc = ledger.docs["msg:C0GENERAL:1717000100.000200"]
    assert doc.media_type == "text/plain"
    assert doc.content.decode() == (
        "Deploy checklist: ask @bob, read the deploy guide (https://wiki.acme.test/deploy) & follow #project-x"
    )
    assert doc.url == "https://acme.slack.com/archives/C0GENERAL/p1717000100000200"
    assert doc.container == "#general"
    assert doc.author == "alice"
    assert doc.source_version == 1717000100_000200
    assert ledger.docs["msg:C0GENERAL:1717000400.000700"].source_version == 1717000450_000000  # edited.ts


def test_a_guest_loses_a_public_channel_after_member_left_channel_and_a_permission_refresh(
    server: FakeSlackServer,
) -> None:
    inbox = InMemoryEventInbox()
    connector, ledger = synced(server, inbox=inbox)
    assert ledger.readable(CAST["gail"]) == PROJECT_X

    server.fake.remove_member("C0PROJ", "U0GAIL")
    inbox.append(EVENTS["member_left_channel"])
    ops = ops_of(connector.incremental_sync({}))
    ledger.apply_all(ops)

    assert ops == [SetGroupMembers("slack:channel:C0PROJ", ("slack:user:U0ALICE",), display_name="#project-x")]
    assert ledger.readable(CAST["gail"]) == set()
    assert ledger.readable(CAST["bob"]) == GENERAL | PROJECT_X  # full members keep public channels


def test_edit_delete_new_message_and_thread_reply_events_update_the_index(server: FakeSlackServer) -> None:
    inbox = InMemoryEventInbox()
    connector, ledger = synced(server, inbox=inbox)
    for name in ("message_changed", "message_deleted", "message", "thread_reply", "channel_join"):
        inbox.append(EVENTS[name])

    ledger.apply_all(ops_of(connector.incremental_sync({})))

    edited = ledger.docs["msg:C0GENERAL:1717000400.000700"]
    assert edited.content == b"Lunch moved to 2pm"
    assert edited.source_version == 1717001200_000300  # the edit's ts, newer than the backfilled 1717000450
    assert "msg:C0GENERAL:1717000100.000200" not in ledger.docs
    assert ledger.docs["msg:C0GENERAL:1717001000.000100"].content == b"Standup is at 9:30 tomorrow"
    reply = ledger.docs["msg:C0GENERAL:1717001100.000200"]
    assert reply.metadata["parent_external_id"] == "msg:C0GENERAL:1717000200.000300"
    assert "msg:C0PROJ:1717001400.000500" not in ledger.docs  # the channel_join system message
    assert ledger.readable(CAST["gail"]) == PROJECT_X


def test_an_older_edit_delivered_late_does_not_overwrite_a_newer_one(server: FakeSlackServer) -> None:
    inbox = InMemoryEventInbox()
    connector, ledger = synced(server, inbox=inbox)
    stale = json.loads(json.dumps(EVENTS["message_changed"]))
    stale["event_id"] = "Ev0STALE"
    stale["event"]["message"]["text"] = "Lunch moved to noon"
    stale["event"]["message"]["edited"]["ts"] = "1717000420.000000"  # older than the stored edit
    inbox.append(stale)

    ledger.apply_all(ops_of(connector.incremental_sync({})))

    assert ledger.docs["msg:C0GENERAL:1717000400.000700"].content == b"Lunch moved to 1pm"


def test_a_duplicate_event_id_is_applied_once_even_across_runs(server: FakeSlackServer) -> None:
    inbox = InMemoryEventInbox([EVENTS["message"], EVENTS["message"]])
    connector = make_connector(server, inbox=inbox)

    first = list(connector.incremental_sync({}))
    inbox.append(EVENTS["message"])  # Slack retried the delivery after our checkpoint
    second = list(connector.incremental_sync(first[-1][1]))

    assert [type(op) for op, _ in first] == [UpsertDocument]
    assert second == []
    assert first[-1][1]["seen_event_ids"] == ["Ev0NEWMSG"]


def test_events_from_another_workspace_are_ignored(server: FakeSlackServer) -> None:
    foreign = json.loads(json.dumps(EVENTS["message"]))
    foreign["team_id"] = "T0OTHER"
    connector = make_connector(server, inbox=InMemoryEventInbox([foreign]))

    assert list(connector.incremental_sync({})) == []


def test_membership_and_archive_events_refresh_the_channel_membership(server: FakeSlackServer) -> None:
    server.fake.add_member("C0PROJ", "U0BOB")
    inbox = InMemoryEventInbox([EVENTS["member_joined_channel"], EVENTS["channel_archive"], EVENTS["group_archive"]])
    connector = make_connector(server, inbox=inbox)

    ops = ops_of(connector.incremental_sync({}))

    assert [op.group_principal for op in ops if isinstance(op, SetGroupMembers)] == [
        "slack:channel:C0PROJ",
        "slack:channel:C0PROJ",
        "slack:channel:C0SECRET",
    ]
    assert ops[0].member_principals == ("slack:user:U0ALICE", "slack:user:U0BOB", "slack:user:U0GAIL")


def test_a_channel_made_private_gets_its_messages_acls_replaced(server: FakeSlackServer) -> None:
    inbox = InMemoryEventInbox()
    connector, ledger = synced(server, inbox=inbox)
    server.fake.channel("C0PROJ")["is_private"] = True
    inbox.append(EVENTS["channel_convert_to_private"])

    ops = ops_of(connector.incremental_sync({}))
    ledger.apply_all(ops)

    assert {op.external_id for op in ops if isinstance(op, UpdateAcl)} == PROJECT_X
    assert ledger.readable(CAST["bob"]) == GENERAL
    assert ledger.readable(CAST["gail"]) == PROJECT_X


@pytest.mark.parametrize(
    ("method", "nth"),
    [("conversations.history", 3), ("conversations.replies", 2), ("conversations.history", 5)],
)
def test_a_backfill_resumes_from_its_checkpoint_after_a_failure_without_duplicates(
    server: FakeSlackServer, method: str, nth: int
) -> None:
    small_pages = HistoryPacing(min_interval_s=0.0, page_size=2)  # several pages and thread pages
    server.fake.fail_call(method, nth=nth)
    emitted: list[str] = []
    checkpoint: dict[str, Any] = {}

    with pytest.raises(ConnectorError):
        for op, cp in make_connector(server, pacing=small_pages).full_sync({}):
            assert isinstance(op, UpsertDocument)
            emitted.append(op.doc.external_id)
            checkpoint = cp  # what the caller persists after applying op
    assert 0 < len(emitted) < len(set(iter_fixture_ids()))

    # A new process resumes with the persisted checkpoint.
    for op, _ in make_connector(server, pacing=small_pages).full_sync(checkpoint):
        assert isinstance(op, UpsertDocument)
        emitted.append(op.doc.external_id)

    assert sorted(emitted) == sorted(iter_fixture_ids())  # everything, each exactly once


def test_history_pacing_spaces_consecutive_history_calls(server: FakeSlackServer) -> None:
    connector = make_connector(server, pacing=HistoryPacing(min_interval_s=0.2, page_size=2))

    list(connector.full_sync({}))

    times = [t for t, _, _ in server.fake.calls_to("conversations.history")]
    assert len(times) >= 3
    # Arrival times at the fake server carry scheduling jitter on a loaded machine (a request sent on time
    # can be read tens of ms late, the next one promptly); unpaced calls arrive a few ms apart.
    assert all(b - a >= 0.12 for a, b in itertools.pairwise(times))
    assert times[-1] - times[0] >= 0.2 * (len(times) - 1) - 0.1


def test_slim_listing_lists_every_indexed_message(server: FakeSlackServer) -> None:
    connector = make_connector(server, pacing=HistoryPacing(page_size=2))

    assert sorted(connector.slim_listing()) == sorted(iter_fixture_ids())


def test_test_connection_rejects_a_bad_token_with_a_readable_message(server: FakeSlackServer) -> None:
    make_connector(server).test_connection()

    with pytest.raises(ConnectorError, match="invalid_auth") as caught:
        make_connector(server, token="xoxb-wrong").test_connection()
    assert "xoxb" not in str(caught.value)


# -- issue 15: Slack Connect members, joining public channels, scopes, CA settings ---------------

PARTNER = {
    "id": "U0EXTPAT",
    "team_id": "T0PARTNER",
    "name": "pat",
    "real_name": "Pat Partner",
    "is_bot": False,
    "deleted": False,
    "profile": {"display_name": "Pat", "email": "pat@partner.test"},
    "is_email_confirmed": True,
}


def test_slack_connect_members_from_another_org_are_recorded_unverified_and_grant_nothing_unmapped(
    server: FakeSlackServer,
) -> None:
    server.fake.external_users.append(PARTNER)
    server.fake.add_member("C0PROJ", "U0EXTPAT")

    ops = ops_of(make_connector(server).permission_sync({}))

    identity = next(op for op in ops if isinstance(op, IdentitySeen) and op.principal == "slack:user:U0EXTPAT")
    # Recorded so an admin can map it, but never as a verified e-mail: no automatic mapping.
    assert (identity.email, identity.email_verified, identity.is_guest) == ("pat@partner.test", False, True)
    assert "external" in identity.display_name and "T0PARTNER" in identity.display_name
    workspace = next(op for op in ops if isinstance(op, SetGroupMembers) and op.group_principal.endswith("T0CAIRN"))
    assert "slack:user:U0EXTPAT" not in workspace.member_principals
    calls = [p["user"] for _, p, _ in server.fake.calls_to("users.info")]
    assert calls == ["U0EXTPAT"]


def test_a_public_channel_the_app_is_not_in_is_joined_then_indexed(server: FakeSlackServer) -> None:
    assert "U0BOT" not in server.fake.channel("C0PROJ")["members"]

    _, ledger = synced(server)

    assert [p["channel"] for _, p, _ in server.fake.calls_to("conversations.join")] == ["C0PROJ"]
    assert PROJECT_X <= set(ledger.docs)


def test_a_channel_the_app_cannot_join_is_skipped_with_the_missing_scope_named(server: FakeSlackServer) -> None:
    server.fake.scopes.discard("channels:join")
    connector = make_connector(server)

    pairs = list(connector.full_sync({}))

    assert not {op.doc.external_id for op, _ in pairs if isinstance(op, UpsertDocument)} & PROJECT_X
    assert pairs[-1][1]["skipped"] == {"C0PROJ": "#project-x: missing_scope: channels:join"}
    assert GENERAL <= {op.doc.external_id for op, _ in pairs if isinstance(op, UpsertDocument)}


def test_a_missing_history_scope_fails_the_run_with_the_scope_in_the_error(server: FakeSlackServer) -> None:
    server.fake.scopes.discard("channels:history")

    with pytest.raises(ConnectorError, match=r"channels:history"):
        list(make_connector(server).full_sync({}))


def test_the_client_trusts_the_instances_ca_file_and_nothing_else(tmp_path: Path) -> None:
    from tests.connectors.sharepoint.fake_graph import write_self_signed_cert

    cert, key = write_self_signed_cert(tmp_path)
    with FakeSlackServer(tls=(cert, key)) as tls_server:
        assert tls_server.base_url.startswith("https://")
        trusted = SlackClient(TOKEN, base_url=tls_server.base_url, ca_file=str(cert))
        assert trusted.auth_test()["team_id"] == "T0CAIRN"

        untrusted = SlackClient(TOKEN, base_url=tls_server.base_url)
        with pytest.raises(ConnectorError, match="Could not reach Slack"):
            untrusted.auth_test()
