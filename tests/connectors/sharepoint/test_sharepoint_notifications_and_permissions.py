"""Pure parts: webhook handshake and notification sorting, permission mapping, Retry-After."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from connectors.sharepoint.notifications import (
    client_state_matches,
    delta_dedupe_key,
    handle_notifications,
    validation_reply,
)
from connectors.sharepoint.permissions import acl_from_permissions
from core.http import parse_retry_after

TENANT = "7d2c2a4e-0000-4000-8000-00000000c0de"
SITE = "contoso.sharepoint.com,s1,w1"
SECRETS = {"sub-1": "client-state-secret", "sub-2": "other-secret"}
DRIVES = {"sub-1": "b!docs", "sub-2": "b!other"}


def _acl(*perms: dict) -> tuple[tuple[str, ...], ...]:
    return acl_from_permissions(perms, site_id=SITE, tenant_id=TENANT, now=datetime(2025, 1, 1, tzinfo=UTC))


def test_the_validation_token_is_echoed_decoded_as_plain_text() -> None:
    reply = validation_reply("validationToken=Validation%3A%20Testing%20client%20application")

    assert reply is not None
    assert (reply.status, reply.content_type) == (200, "text/plain; charset=utf-8")
    assert reply.body == "Validation: Testing client application"
    assert ("X-Content-Type-Options", "nosniff") in reply.headers
    assert validation_reply({"validationToken": "abc"}).body == "abc"  # type: ignore[union-attr]
    assert validation_reply("") is None


def test_a_notification_with_a_wrong_client_state_is_rejected() -> None:
    payload = {"value": [{"subscriptionId": "sub-1", "clientState": "guess", "resource": "drives/b!docs/root"}]}

    batch = handle_notifications(payload, client_states=SECRETS, subscription_drives=DRIVES, tenant_id=TENANT)

    assert (batch.deltas, batch.lifecycle, batch.rejected) == ((), (), 1)
    assert not client_state_matches("", "")
    assert not client_state_matches("client-state-secret", None)


def test_notifications_for_one_drive_collapse_into_one_delta_for_that_drive() -> None:
    n = {"subscriptionId": "sub-1", "clientState": "client-state-secret", "tenantId": TENANT, "resource": "x"}
    payload = {"value": [n, dict(n), {**n, "subscriptionId": "sub-2", "clientState": "other-secret"}]}

    batch = handle_notifications(payload, client_states=SECRETS, subscription_drives=DRIVES, tenant_id=TENANT)

    assert [(d.drive_id, d.dedupe_key) for d in batch.deltas] == [
        ("b!docs", delta_dedupe_key(TENANT, "b!docs")),
        ("b!other", delta_dedupe_key(TENANT, "b!other")),
    ]
    assert batch.rejected == 0


def test_a_notification_from_another_tenant_is_rejected_even_with_the_right_state() -> None:
    payload = {"value": [{"subscriptionId": "sub-1", "clientState": "client-state-secret", "tenantId": "evil"}]}

    batch = handle_notifications(payload, client_states=SECRETS, subscription_drives=DRIVES, tenant_id=TENANT)

    assert batch.rejected == 1 and not batch.deltas


@pytest.mark.parametrize(
    ("event", "renew", "recreate"),
    [
        ("reauthorizationRequired", True, False),
        ("subscriptionRemoved", False, True),
        ("missed", False, False),
    ],
)
def test_lifecycle_events_say_what_to_do_and_always_ask_for_a_delta(event: str, renew: bool, recreate: bool) -> None:
    n = {
        "subscriptionId": "sub-1",
        "clientState": "client-state-secret",
        "lifecycleEvent": event,
        "subscriptionExpirationDateTime": "2025-01-02T00:00:00Z",
    }

    batch = handle_notifications({"value": [n, n]}, client_states=SECRETS, subscription_drives=DRIVES, tenant_id=TENANT)

    (action,) = batch.lifecycle
    assert (action.renew_subscription, action.recreate_subscription, action.delta_drive_id) == (
        renew,
        recreate,
        "b!docs",
    )
    assert not batch.deltas


def test_grants_below_read_expired_links_and_existing_access_links_reach_nobody() -> None:
    assert _acl() == ((),)
    assert _acl({"roles": ["futureRole"], "grantedToV2": {"user": {"id": "u-alice"}}}) == ((),)
    expired = {
        "roles": ["read"],
        "link": {"scope": "anonymous"},
        "expirationDateTime": "2024-06-01T00:00:00Z",
    }
    assert _acl(expired) == ((),)
    assert _acl({"roles": ["read"], "link": {"scope": "existingAccess"}}) == ((),)


def test_every_read_grant_joins_one_clause_of_alternatives() -> None:
    acl = _acl(
        {"roles": ["read"], "grantedToV2": {"user": {"id": "u-alice"}}},
        {"roles": ["write"], "grantedToV2": {"siteGroup": {"id": "4", "loginName": "Finance Members"}}},
        {
            "roles": ["read"],
            "grantedToV2": {
                "siteUser": {"loginName": "c:0o.c|federateddirectoryclaimprovider|0d7f0e1a-0000-4000-8000-000000000001"}
            },
        },
        {"roles": ["owner"], "link": {"scope": "organization"}},
        {"roles": ["read"], "grantedToIdentitiesV2": [{"group": {"id": "g-x"}}, {"user": {"id": "u-bob"}}]},
    )

    assert acl == (
        (
            "entra:group:0d7f0e1a-0000-4000-8000-000000000001",
            "entra:group:g-x",
            f"entra:org:{TENANT}",
            "entra:user:u-alice",
            "entra:user:u-bob",
            f"sharepoint:sitegroup:{SITE}:4",
        ),
    )


def test_retry_after_accepts_fractions_and_http_dates_and_ignores_garbage() -> None:
    assert parse_retry_after("0.25") == 0.25
    assert parse_retry_after("3") == 3.0
    now = datetime(2025, 1, 1, 0, 0, 0, tzinfo=UTC)
    assert parse_retry_after("Wed, 01 Jan 2025 00:00:07 GMT", now=now) == 7.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None
