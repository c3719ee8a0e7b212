"""The Slack bot end to end: signed requests to the real views, the answer from the real Celery
worker, posted to a local server that plays the Slack Web API."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import pytest
from django.test import Client

from connectors.slack.events import sign
from slackbot.blocks import answer_blocks, escape_mrkdwn, safe_link
from tenants.audit import SYSTEM
from tenants.context import tenant_context
from tests.connectors.slack.fake_slack import TOKEN, FakeSlack, FakeSlackServer
from tests.security.secret_canary import secret
from tests.support import enqueue, ingest_inline, make_doc, source_for, unique

# Both carry the run's secret canary (tests/security/secret_canary.py).
SECRET, OLD_SECRET = secret("signing-secret-current"), secret("signing-secret-previous")


@dataclass
class Workspace:
    tenant: Any
    instance: Any
    api: FakeSlack
    ids: dict[str, str]  # alice/bob/carol/ext/nobody -> Slack user id
    users: dict[str, Any]


@pytest.fixture
def workspace(celery_worker_process: Any) -> Iterator[Workspace]:
    from connectors.actions import do_create_connector_instance
    from retrieval.actions import do_record_identity, do_set_group_members
    from tenants.actions import do_add_member, do_create_tenant, do_create_user

    tenant = do_create_tenant(unique("slack"), "Slack Co")
    tag = hashlib.sha256(tenant.slug.encode()).hexdigest()[:6].upper()
    ids = {n: f"U{n.upper()}{tag}" for n in ("alice", "bob", "carol", "ext", "nobody")}
    users = {}
    for name in ("alice", "bob", "carol"):
        username = unique(name)
        users[name] = do_create_user(username, f"{username}@example.com", None, email_verified=True)
        do_add_member(tenant, users[name])
    # The suite's one fake Slack Web API (tests/connectors/slack/fake_slack.py) with this test's workspace.
    channel = {"is_private": False, "is_archived": False, "is_im": False}
    api = FakeSlack(data={
        "team": {"id": "T1", "name": "Slack Co", "domain": "slackco"}, "bot_user_id": "UBOT", "messages": {},
        "users": [{"id": ids["alice"], "team_id": "T1"}, {"id": ids["bob"], "team_id": "T1"},
                  {"id": ids["carol"], "team_id": "T1"}, {"id": "UBOT", "is_bot": True, "team_id": "T1"}],
        "channels": [
            # carol may not read finance
            channel | {"id": "CALL", "name": "all", "members": [ids["alice"], ids["bob"], ids["carol"], "UBOT", "USLACKBOT"]},
            channel | {"id": "CFIN", "name": "fin", "members": [ids["alice"], ids["bob"], "UBOT"]},  # all may read finance
            channel | {"id": "CEXT", "name": "ext", "members": [ids["alice"], ids["bob"], ids["ext"]]},  # Slack Connect
        ],
    })  # fmt: skip
    api.external_users = [{"id": ids["ext"], "team_id": "T-OTHER-ORG", "is_stranger": True}]
    with FakeSlackServer(api) as server:
        with tenant_context(tenant.pk):
            for name in ("alice", "bob", "carol"):
                u = users[name]
                do_record_identity(f"slack:user:{ids[name]}", email=u.email, email_verified=True, display_name=name)
            do_set_group_members("entra:group:finance", [f"slack:user:{ids['alice']}", f"slack:user:{ids['bob']}"])
            instance = do_create_connector_instance(
                "slack", "Slack", config={"team_id": "T1", "base_url": server.base_url},
                credentials={"token": TOKEN, "signing_secret": SECRET, "previous_signing_secret": OLD_SECRET},
                allow_private_network=True, actor=SYSTEM,
            )  # fmt: skip
        src = source_for(tenant, "wiki", "confluence")
        enqueue(tenant, src, make_doc("vpn-how", "The VPN gateway address is vpn.example.com for all staff.",
                                      [["public:tenant"]], title="VPN how-to"))  # fmt: skip
        enqueue(tenant, src, make_doc("vpn-budget", "The VPN budget for this year is 40,000 dollars.",
                                      [["entra:group:finance"]], title="VPN budget"))  # fmt: skip
        enqueue(tenant, src, make_doc("vpn-rogue", "VPN budget questions go to <!channel> and "
                                      "<https://evil.example/steal|https://intranet.example.com/vpn>.",
                                      [["entra:group:finance"]], title="VPN *FAQ*"))  # fmt: skip
        ingest_inline(tenant.pk)
        yield Workspace(tenant, instance, api, ids, users)


def signed(client: Client, path: str, body: bytes, content_type: str, *, secret: str = SECRET,
           ts: int | None = None) -> Any:  # fmt: skip
    stamp = str(int(time.time()) if ts is None else ts)
    return client.generic("POST", path, body, content_type=content_type,
                          HTTP_X_SLACK_REQUEST_TIMESTAMP=stamp, HTTP_X_SLACK_SIGNATURE=sign(secret, stamp, body))  # fmt: skip


def slash(ws: Workspace, user: str, channel: str, text: str, **kw: Any) -> Any:
    body = urlencode({"team_id": "T1", "user_id": user, "channel_id": channel, "command": "/ask", "text": text,
                      "trigger_id": unique("trig"), "response_url": "https://hooks.slack.com/commands/x"}).encode()  # fmt: skip
    return signed(Client(), f"/hooks/slack/{ws.instance.hook_uuid}/commands", body,
                  "application/x-www-form-urlencoded", **kw)  # fmt: skip


def all_text(blocks: list[dict[str, Any]]) -> str:
    return json.dumps(blocks)


def test_it_answers_in_a_channel_only_from_documents_every_member_can_read(workspace: Workspace) -> None:
    ws = workspace
    ack = slash(ws, ws.ids["alice"], "CALL", "What is the VPN budget?")
    assert ack.status_code == 200 and ack.json()["response_type"] == "ephemeral"
    posted = ws.api.wait_for("chat.postMessage", channel="CALL")[0]
    text = all_text(posted["blocks"])
    # carol is in the channel and may not read the finance page: it is not used, not linked.
    assert "40,000" not in text and "vpn-budget" not in text
    assert "everyone in this channel" in text
    assert any(b["type"] == "actions" for b in posted["blocks"])  # feedback buttons

    # The same question with --me: the asker's own permissions, ephemeral.
    slash(ws, ws.ids["alice"], "CALL", "--me What is the VPN budget?")
    eph = ws.api.wait_for("chat.postEphemeral", channel="CALL", user=ws.ids["alice"])[0]
    assert "40,000" in all_text(eph["blocks"])
    # In a channel where every member may read finance, the finance page is used in the open.
    slash(ws, ws.ids["bob"], "CFIN", "What is the VPN budget?")
    fin = ws.api.wait_for("chat.postMessage", channel="CFIN")[0]
    blocks_text = all_text(fin["blocks"])
    assert "40,000" in blocks_text
    # Sources carry links and dates; "as of" is stated.
    assert "<https://wiki.example.com/vpn-budget|VPN budget>" in blocks_text
    assert "updated 2026-01-15" in blocks_text and "As of: content" in blocks_text


def test_it_refuses_a_channel_with_external_members_and_offers_an_ephemeral_answer(workspace: Workspace) -> None:
    ws = workspace
    slash(ws, ws.ids["alice"], "CEXT", "Where is the VPN gateway?")
    offer = ws.api.wait_for("chat.postEphemeral", channel="CEXT", user=ws.ids["alice"])[0]
    assert "Answer just for me" in all_text(offer["blocks"])
    assert ws.api.posted("chat.postMessage", channel="CEXT") == []
    # Accepting the offer (interactivity) answers ephemerally from alice's own permissions.
    button = next(e for b in offer["blocks"] if b["type"] == "actions" for e in b["elements"])
    payload = {"type": "block_actions", "user": {"id": ws.ids["alice"]}, "channel": {"id": "CEXT"},
               "trigger_id": unique("t"), "actions": [{"action_id": button["action_id"], "value": button["value"]}]}  # fmt: skip
    body = urlencode({"payload": json.dumps(payload)}).encode()
    r = signed(Client(), f"/hooks/slack/{ws.instance.hook_uuid}/interactivity", body,
               "application/x-www-form-urlencoded")  # fmt: skip
    assert r.status_code == 200
    deadline = time.time() + 60
    while time.time() < deadline and len(ws.api.posted("chat.postEphemeral", channel="CEXT")) < 2:
        time.sleep(0.2)
    answer = ws.api.posted("chat.postEphemeral", channel="CEXT")[1]
    assert "vpn.example.com" in all_text(answer["blocks"])


def test_answer_just_for_me_is_throttled_like_ask(workspace: Workspace, settings: Any) -> None:
    ws = workspace
    settings.CAIRN = {**settings.CAIRN, "SLACK_BOT_USER_PER_MINUTE": 1}
    value = json.dumps({"q": "Where is the VPN gateway?"})

    def press() -> Any:
        payload = {"type": "block_actions", "user": {"id": ws.ids["alice"]}, "channel": {"id": "CEXT"},
                   "trigger_id": unique("t"), "actions": [{"action_id": "cairn_answer_ephemeral", "value": value}]}  # fmt: skip
        body = urlencode({"payload": json.dumps(payload)}).encode()
        return signed(Client(), f"/hooks/slack/{ws.instance.hook_uuid}/interactivity", body,
                      "application/x-www-form-urlencoded")  # fmt: skip

    assert "Looking that up" in press().json()["text"]
    second = press()
    assert second.status_code == 200
    assert "faster than I can answer" in second.json()["text"]
    ws.api.wait_for("chat.postEphemeral", channel="CEXT", user=ws.ids["alice"])  # the first press is answered


def test_it_tells_an_unmapped_user_how_to_link_and_does_not_answer(workspace: Workspace) -> None:
    ws = workspace
    r = slash(ws, ws.ids["nobody"], "CALL", "What is the VPN budget?")
    assert r.status_code == 200
    assert "not linked" in r.json()["text"] and r.json()["response_type"] == "ephemeral"
    time.sleep(1)
    assert ws.api.posted("chat.postMessage") == [] and ws.api.posted("conversations.members") == []


def test_it_answers_a_mention_in_its_thread_and_a_dm_from_the_askers_own_permissions(workspace: Workspace) -> None:
    ws = workspace
    client = Client()

    def event(inner: dict[str, Any]) -> Any:
        payload = {"type": "event_callback", "team_id": "T1", "event_id": unique("Ev"), "event": inner}
        return signed(client, f"/hooks/slack/{ws.instance.hook_uuid}/events", json.dumps(payload).encode(),
                      "application/json")  # fmt: skip

    assert event({"type": "app_mention", "user": ws.ids["carol"], "channel": "CALL", "ts": "1700000000.000100",
                  "text": "<@UBOT> where is the VPN gateway?"}).status_code == 200  # fmt: skip
    reply = ws.api.wait_for("chat.postMessage", channel="CALL")[0]
    assert reply["thread_ts"] == "1700000000.000100"
    assert "vpn.example.com" in all_text(reply["blocks"])

    assert event({"type": "message", "channel_type": "im", "user": ws.ids["bob"], "channel": "DBOB",
                  "ts": "1700000001.000200", "text": "what is the VPN budget"}).status_code == 200  # fmt: skip
    dm = ws.api.wait_for("chat.postMessage", channel="DBOB")[0]
    assert "40,000" in all_text(dm["blocks"])  # a DM: bob's own ACL, which includes finance
    assert ws.api.posted("conversations.members", channel="DBOB") == []


def test_it_records_feedback_from_a_button_bound_to_the_answer(workspace: Workspace) -> None:
    from tenants.models import Feedback

    ws = workspace
    slash(ws, ws.ids["alice"], "CFIN", "What is the VPN budget?")
    posted = ws.api.wait_for("chat.postMessage", channel="CFIN")[0]
    wrong = next(e for b in posted["blocks"] if b["type"] == "actions" for e in b["elements"]
                 if e["action_id"] == "cairn_feedback_stale")  # fmt: skip
    payload = {"type": "block_actions", "user": {"id": ws.ids["alice"]}, "channel": {"id": "CFIN"},
               "actions": [{"action_id": wrong["action_id"], "value": wrong["value"]}]}  # fmt: skip
    body = urlencode({"payload": json.dumps(payload)}).encode()
    url = f"/hooks/slack/{ws.instance.hook_uuid}/interactivity"
    r = signed(Client(), url, body, "application/x-www-form-urlencoded")
    assert r.status_code == 200 and "recorded" in r.json()["text"]
    with tenant_context(ws.tenant.pk):
        fb = Feedback.objects.get(user_id=ws.users["alice"].pk)
        assert fb.verdict == "stale" and fb.question == "What is the VPN budget?"
    # Someone who did not receive that answer cannot attach feedback to it.
    payload["user"] = {"id": ws.ids["carol"]}
    r = signed(Client(), url, urlencode({"payload": json.dumps(payload)}).encode(), "application/x-www-form-urlencoded")
    assert "could not be recorded" in r.json()["text"]


def test_it_rejects_forged_and_stale_signatures_and_accepts_the_previous_secret(workspace: Workspace) -> None:
    ws = workspace
    assert slash(ws, ws.ids["alice"], "CALL", "hi", secret="not-the-secret").status_code == 401
    assert slash(ws, ws.ids["alice"], "CALL", "hi", ts=int(time.time()) - 301).status_code == 401
    body = urlencode({"payload": json.dumps({"type": "block_actions", "user": {"id": ws.ids["alice"]}})}).encode()
    url = f"/hooks/slack/{ws.instance.hook_uuid}/interactivity"
    assert signed(Client(), url, body, "application/x-www-form-urlencoded", secret="forged").status_code == 401
    assert Client().post(url, body, content_type="application/x-www-form-urlencoded").status_code == 401
    # During a rotation the previous secret still verifies.
    assert slash(ws, ws.ids["alice"], "CALL", "", secret=OLD_SECRET).status_code == 200


def test_it_waits_out_a_slack_rate_limit_before_posting(workspace: Workspace) -> None:
    ws = workspace
    ws.api.rate_limit_next("chat.postMessage", "1")
    slash(ws, ws.ids["bob"], "CFIN", "Where is the VPN gateway?")
    posted = ws.api.wait_for("chat.postMessage", channel="CFIN")
    assert len(posted) == 1  # retried after Retry-After, posted exactly once
    assert ws.api.injected == []  # the 429 was served


def test_it_escapes_retrieved_text_so_it_cannot_ping_or_disguise_links() -> None:
    assert escape_mrkdwn("<!channel> & <https://evil|https://good>") == (
        "&lt;!channel&gt; &amp; &lt;https://evil|https://good&gt;")  # fmt: skip
    assert safe_link("javascript:alert(1)", "x") == "x"
    assert safe_link("https://ok.example/a", "a|b>c") == "<https://ok.example/a|a¦b&gt;c>"
    response = {
        "answer": {"claims": [{"id": "c1", "text": "Ask <!channel> at <https://evil|https://good>",
                               "citations": [{"evidence_id": "E1", "quote": "q"}]}], "dropped_claims": 1},
        "evidence": [{"id": "E1", "title": "T <b>", "canonical_url": "https://wiki/x", "source_system": "confluence",
                      "container": "ENG", "updated_at": "2026-01-02T00:00:00+00:00"}],
        "as_of": {"content": "2026-01-03T00:00:00+00:00", "permissions": None},
    }  # fmt: skip
    _, blocks = answer_blocks(response, trace_id="t1", audience="x")
    text = json.dumps(blocks)
    assert "<!channel>" not in text and "<https://evil" not in text
    assert "&lt;!channel&gt;" in text and "[1]" in text and "1 unsupported claim removed" in text


def test_it_labels_a_computed_conclusion_and_names_a_compound_part_it_did_not_answer() -> None:
    response = {
        "answer": {"claims": [{"id": "c1", "text": "Save the key in the vault.",
                               "citations": [{"evidence_id": "E1", "quote": "q"}]}], "dropped_claims": 0,
                   "abstention": None, "conclusion": "B (2) was larger than A (1).",
                   "unanswered_parts": [{"question": "Which garage do <!here> visitors use?", "reason": "weak_evidence"}]},
        "evidence": [{"id": "E1", "title": "Keys", "canonical_url": "https://wiki/k", "source_system": "confluence",
                      "container": "ENG", "updated_at": "2026-01-02T00:00:00+00:00"}],
        "as_of": {},
    }  # fmt: skip
    _, blocks = answer_blocks(response, trace_id="t1", audience="x")
    text = json.dumps(blocks)
    assert "Not answered from your sources:* Which garage do &lt;!here&gt; visitors use?" in text
    assert "<!here>" not in text
    assert "*Computed from the cited sources:* B (2) was larger than A (1)." in text


def test_it_shows_claims_past_the_writers_four_apart_under_also_in_the_sources() -> None:
    cite = [{"evidence_id": "E1", "quote": "q"}]
    response = {
        "answer": {"claims": [{"id": "c1", "text": "Request a desk in the portal.", "citations": cite, "extra": False},
                              {"id": "c2", "text": "Desks ship flat.", "citations": cite, "extra": True}],
                   "dropped_claims": 0, "abstention": None},
        "evidence": [{"id": "E1", "title": "Desks", "canonical_url": "https://wiki/d", "source_system": "confluence",
                      "container": "FAC", "updated_at": "2026-01-02T00:00:00+00:00"}],
        "as_of": {},
    }  # fmt: skip
    _, blocks = answer_blocks(response, trace_id="t1", audience="x")
    sections = [b["text"]["text"] for b in blocks if b["type"] == "section"]
    assert sections[:2] == ["• Request a desk in the portal. [1]", "*Also in the sources:*\n• Desks ship flat. [1]"]


def test_it_throttles_a_user_who_asks_too_fast(workspace: Workspace, settings: Any) -> None:
    ws = workspace
    settings.CAIRN = {**settings.CAIRN, "SLACK_BOT_USER_PER_MINUTE": 1}
    assert "Looking that up" in slash(ws, ws.ids["carol"], "CALL", "Where is the VPN gateway?").json()["text"]
    assert "faster than I can answer" in slash(ws, ws.ids["carol"], "CALL", "And the budget?").json()["text"]
