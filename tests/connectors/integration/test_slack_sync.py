"""Slack: fake Web API + signed Events API requests to the real view -> sync task -> pipeline -> search API."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from connectors.base import ConnectorError
from connectors.models import InboundEvent
from connectors.slack.events import sign
from retrieval.models import Document
from tenants.actions import do_add_member, do_create_api_token, do_create_user
from tenants.context import tenant_context
from tests.connectors.integration.helpers import documents, make_instance, map_identities, sync, table
from tests.connectors.slack.fake_slack import TOKEN, FakeSlackServer
from tests.security.secret_canary import secret
from tests.support import unique

EVENTS = json.loads((Path(__file__).resolve().parents[3] / "connectors/slack/fixtures/events.json").read_text())
# Both carry the run's secret canary (tests/security/secret_canary.py).
SECRET, OLD_SECRET = secret("signing-secret-current"), secret("signing-secret-previous")
GENERAL = {"msg:C0GENERAL:1717000100.000200", "msg:C0GENERAL:1717000200.000300", "msg:C0GENERAL:1717000250.000400",
           "msg:C0GENERAL:1717000260.000500", "msg:C0GENERAL:1717000400.000700"}  # fmt: skip
PROJ = {"msg:C0PROJ:1717000600.000900", "msg:C0PROJ:1717000700.001000"}
SECRET_CH = {"msg:C0SECRET:1717000800.001100"}
NAMES = ("alice", "bob", "carol", "gail")


@pytest.fixture
def server() -> Iterator[FakeSlackServer]:
    with FakeSlackServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def _private_queue(settings) -> None:  # type: ignore[no-untyped-def]
    settings.CAIRN = {**settings.CAIRN, "CONNECTOR_QUEUE": unique("test-inline")}


@pytest.fixture
def workspace(cast, server):  # type: ignore[no-untyped-def]
    name = unique("gail")
    gail = do_create_user(name, f"{name}@example.com", "pw-" + name, email_verified=True)
    cast.tokens["gail"] = do_create_api_token(do_add_member(cast.tenant_a, gail))
    instance = make_instance(
        cast.tenant_a.pk, "slack", unique("slack"), {"base_url": server.base_url, "team_id": "T0CAIRN"},
        {"token": TOKEN, "signing_secret": SECRET, "previous_signing_secret": OLD_SECRET},
    )  # fmt: skip
    map_identities(cast.tenant_a.pk, {"slack:user:U0ALICE": cast.alice, "slack:user:U0BOB": cast.bob,
                                      "slack:user:U0CAROL": cast.carol, "slack:user:U0GAIL": gail})  # fmt: skip
    assert sync(cast.tenant_a.pk, instance, "permission").status == "done"
    assert sync(cast.tenant_a.pk, instance, "full").status == "done"
    return instance


def post(
    instance,
    payload: dict | bytes,
    *,
    secret: str = SECRET,
    skew: int = 0,
    tamper: bool = False,  # type: ignore[no-untyped-def]
    raw_request: tuple[bytes, str, str] | None = None,
):
    if raw_request is None:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        ts = str(int(time.time()) + skew)
        raw_request = (body, ts, sign(secret, ts, body))
    body, ts, sig = raw_request
    if tamper:
        body = body[:-2] + bytes([body[-2] ^ 1]) + body[-1:]
    resp = APIClient().post(f"/hooks/slack/{instance.hook_uuid}/events", data=body, content_type="application/json",
                            HTTP_X_SLACK_REQUEST_TIMESTAMP=ts, HTTP_X_SLACK_SIGNATURE=sig)  # fmt: skip
    return resp, raw_request


def test_it_gives_each_person_exactly_their_channels_and_follows_events(cast, server, workspace) -> None:
    docs = documents(cast.tenant_a.pk, workspace)
    assert set(docs) == GENERAL | PROJ | SECRET_CH  # bot posts and join messages are not content
    got = table(cast, docs, NAMES)
    assert got["alice"] == GENERAL | PROJ | SECRET_CH
    assert got["bob"] == GENERAL | PROJ  # public channels: full members; not the private channel
    assert got["carol"] == GENERAL | PROJ | SECRET_CH
    assert got["gail"] == PROJ  # a guest reads only the public channel she is in

    # the guest leaves the public channel; an edit, a delete and a thread reply arrive as events
    server.fake.remove_member("C0PROJ", "U0GAIL")
    for name in ("member_left_channel", "message_changed", "message_deleted", "thread_reply"):
        resp, _ = post(workspace, EVENTS[name])
        assert resp.status_code == 200 and resp.json()["status"] == "accepted", resp.content
    assert sync(cast.tenant_a.pk, workspace, "incremental").status == "done"
    docs = documents(cast.tenant_a.pk, workspace)
    reply = "msg:C0GENERAL:1717001100.000200"
    assert set(docs) == (GENERAL - {"msg:C0GENERAL:1717000100.000200"}) | {reply} | PROJ | SECRET_CH
    with tenant_context(cast.tenant_a.pk):
        edited = Document.objects.get(source_id=workspace.source_id, external_id="msg:C0GENERAL:1717000400.000700")
        assert "2pm" in edited.text and "1pm" not in edited.text
        assert not InboundEvent.objects.filter(instance=workspace, status="pending").exists()
    got = table(cast, docs, NAMES)
    assert got["gail"] == set()
    assert reply in got["bob"] and reply not in got["gail"]
    assert got["bob"] == (GENERAL - {"msg:C0GENERAL:1717000100.000200"}) | {reply} | PROJ


def test_it_accepts_only_correctly_signed_fresh_requests_and_dedupes_event_ids(cast, server, workspace) -> None:
    payload = {**EVENTS["thread_reply"], "event_id": unique("Ev")}
    # A minute past the 300 s window: at 301 s a loaded machine taking over a second between signing
    # and verifying (int() drops the fraction too) lands back inside the window and the test flakes.
    assert post(workspace, payload, skew=360)[0].status_code == 401
    assert post(workspace, payload, skew=-360)[0].status_code == 401
    assert post(workspace, payload, tamper=True)[0].status_code == 401
    assert post(workspace, payload, secret="not-the-secret")[0].status_code == 401
    with tenant_context(cast.tenant_a.pk):
        assert not InboundEvent.objects.filter(instance=workspace, event_id=payload["event_id"]).exists()

    first, raw = post(workspace, payload)
    assert first.status_code == 200 and first.json()["status"] == "accepted"
    replayed, _ = post(workspace, payload, raw_request=raw)  # the same signed request again
    assert replayed.status_code == 200 and replayed.json()["status"] == "duplicate"
    rotated, _ = post(workspace, payload, secret=OLD_SECRET)  # previous secret during rotation, same event id
    assert rotated.status_code == 200 and rotated.json()["status"] == "duplicate"
    with tenant_context(cast.tenant_a.pk):
        assert InboundEvent.objects.filter(instance=workspace, event_id=payload["event_id"]).count() == 1

    challenge, _ = post(workspace, EVENTS["url_verification"])
    assert challenge.json() == {"challenge": EVENTS["url_verification"]["challenge"]}
    bad, _ = post(workspace, b"not json")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_json"
    other = {**payload, "event_id": unique("Ev"), "team_id": "T0OTHER"}
    assert post(workspace, other)[0].status_code == 403
    unknown = APIClient().post("/hooks/slack/00000000-0000-4000-8000-000000000000/events", data=b"{}",
                               content_type="application/json")  # fmt: skip
    assert unknown.status_code == 404


# -- issue 15 --------------------------------------------------------------------------------------


def test_a_slack_connect_member_is_listed_unmapped_in_the_console_and_reads_nothing(cast, server) -> None:
    from django.test import Client

    from tenants.auth import SESSION_MEMBERSHIP_KEY
    from tenants.models import Membership

    server.fake.external_users.append({
        "id": "U0EXTPAT", "team_id": "T0PARTNER", "name": "pat", "is_bot": False, "deleted": False,
        "profile": {"display_name": "Pat", "email": cast.bob.email}, "is_email_confirmed": True,
    })  # fmt: skip
    server.fake.add_member("C0PROJ", "U0EXTPAT")
    instance = make_instance(
        cast.tenant_a.pk, "slack", unique("slack"), {"base_url": server.base_url, "team_id": "T0CAIRN"},
        {"token": TOKEN, "signing_secret": SECRET},
    )  # fmt: skip
    assert sync(cast.tenant_a.pk, instance, "permission").status == "done"
    assert sync(cast.tenant_a.pk, instance, "full").status == "done"

    with tenant_context(cast.tenant_a.pk):
        from tenants.models import ExternalIdentity

        pat = ExternalIdentity.objects.get(principal="slack:user:U0EXTPAT")
    # Even with bob's (verified) address in the partner's profile, nothing maps it automatically.
    assert pat.user_id is None and not pat.email_verified and pat.is_guest
    admin = Client()
    admin.force_login(cast.alice)
    session = admin.session
    session[SESSION_MEMBERSHIP_KEY] = Membership.objects.get(user=cast.alice, tenant=cast.tenant_a).pk
    session.save()
    page = admin.get("/console/people/")
    assert page.status_code == 200
    assert b"slack:user:U0EXTPAT" in page.content and b"external, T0PARTNER" in page.content
    home = admin.get("/console/")
    assert b"external identit" in home.content
    docs = documents(cast.tenant_a.pk, instance)
    assert "msg:C0PROJ:1717000600.000900" in docs
    # bob owns that address in Cairn, yet the partner's account did not become his: he reads nothing.
    assert table(cast, docs, ("bob",)) == {"bob": set()}


def test_the_connector_status_names_a_skipped_channel_and_a_missing_scope(cast, server) -> None:
    server.fake.scopes.discard("channels:join")
    instance = make_instance(
        cast.tenant_a.pk, "slack", unique("slack"), {"base_url": server.base_url, "team_id": "T0CAIRN"},
        {"token": TOKEN, "signing_secret": SECRET},
    )  # fmt: skip
    assert sync(cast.tenant_a.pk, instance, "full").status == "done"
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {cast.tokens['alice']}")
    full = next(
        s for s in client.get(f"/api/v1/connectors/{instance.pk}/status").json()["syncs"] if s["mode"] == "full"
    )
    assert full["skipped"] == {"C0PROJ": "#project-x: missing_scope: channels:join"}

    server.fake.scopes.discard("channels:history")
    state = sync(cast.tenant_a.pk, instance, "full")
    assert state.status == "failed" and "channels:history" in state.last_error


def test_the_slack_client_uses_the_instances_ca_file(cast, tmp_path) -> None:
    from connectors.runtime import build_connector
    from tests.connectors.sharepoint.fake_graph import write_self_signed_cert

    cert, key = write_self_signed_cert(tmp_path)
    with FakeSlackServer(tls=(cert, key)) as tls_server:
        config = {"base_url": tls_server.base_url, "team_id": "T0CAIRN"}
        trusted = make_instance(cast.tenant_a.pk, "slack", unique("slack"), config,
                                {"token": TOKEN, "signing_secret": SECRET}, tls_ca_file=str(cert))  # fmt: skip
        plain = make_instance(cast.tenant_a.pk, "slack", unique("slack"), config,
                              {"token": TOKEN, "signing_secret": SECRET})  # fmt: skip
        with tenant_context(cast.tenant_a.pk):
            build_connector(trusted).test_connection()
            with pytest.raises(ConnectorError, match="Could not reach Slack"):
                build_connector(plain).test_connection()
