"""Canary suite: a restricted canary never reaches a user who may not read it.

Every restricted document carries a unique canary token.  For every user x
every one of 200+ generated queries, the search and answer API responses
(results, snippets, evidence, answers, counts, error bodies) must not contain
a canary the user may not read.  Covers nested restrictions (CNF), a
single-user page, an empty ACL, an unknown principal, a user with no
readable sets, and a second tenant.
"""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.security.canary_world import build_world, generated_queries, without_query_echo


@pytest.fixture
def world():
    return build_world()


def test_no_user_ever_sees_a_canary_they_may_not_read(world) -> None:
    users, canaries = world
    queries = generated_queries(canaries)
    assert len(queries) >= 120
    clients = {}
    for name, (_, token) in users.items():
        c = APIClient()
        c.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        clients[name] = c
    seen_allowed: dict[str, set[str]] = {name: set() for name in users}
    for q in queries:
        for name, client in clients.items():
            forbidden = {tok for tok, readers in canaries.values() if name not in readers}
            allowed = {tok for tok, readers in canaries.values() if name in readers}
            responses = [
                client.get("/api/v1/search", {"q": q}),
                client.post("/api/v1/answers", {"question": q}, format="json"),
            ]
            for r in responses:
                assert r.status_code in (200, 400), (name, q, r.status_code)
                text = without_query_echo(r.json(), q)
                leaked = {tok for tok in forbidden if tok in text}
                assert not leaked, f"{name} saw {leaked} for query {q!r}"
                seen_allowed[name] |= {tok for tok in allowed if tok in text}
    # The suite would be vacuous if nobody ever found anything: readers do find their canaries.
    for name in ("alice", "bob", "carol", "mallory"):
        readable = {tok for tok, readers in canaries.values() if name in readers}
        assert seen_allowed[name] == readable, name
    assert seen_allowed["dave"] == {canaries["public"][0]}
    assert seen_allowed["frank"] == set()
