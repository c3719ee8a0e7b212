"""Per-user and per-tenant budgets: one tenant's burst never starves another."""

from __future__ import annotations

from tests.support import client_for


def test_a_users_burst_is_throttled_with_a_code_while_other_users_and_tenants_go_on(cast, settings) -> None:
    rates = {"user": "3/min", "tenant": "1000/min"}
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}
    alice = client_for(cast.tokens["alice"])
    codes = [alice.get("/api/v1/search", {"q": "anything"}).status_code for _ in range(5)]
    assert codes[:3] == [200, 200, 200]
    limited = alice.get("/api/v1/search", {"q": "anything"})
    assert limited.status_code == 429
    assert limited.json()["error"]["code"] == "throttled"
    assert client_for(cast.tokens["bob"]).get("/api/v1/search", {"q": "anything"}).status_code == 200
    assert client_for(cast.tokens["mallory"]).get("/api/v1/search", {"q": "anything"}).status_code == 200


def test_a_tenant_budget_caps_all_its_users_together_but_not_other_tenants(cast, settings) -> None:
    rates = {"user": "1000/min", "tenant": "4/min"}
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}
    statuses = []
    for name in ("alice", "bob", "carol", "alice", "bob"):
        statuses.append(client_for(cast.tokens[name]).get("/api/v1/search", {"q": "x"}).status_code)
    assert statuses[:4] == [200, 200, 200, 200]
    assert statuses[4] == 429
    assert client_for(cast.tokens["mallory"]).get("/api/v1/search", {"q": "x"}).status_code == 200
