"""Schema fuzzing of the API (schemathesis over ``GET /api/v1/schema``), the short CI version.

Every operation of the schema x four principals (anonymous, an admin of another tenant, a
member without admin rights, the tenant admin) x valid and invalid input: the schema's own request
examples, then a few derandomised cases each, through the real WSGI app, Postgres and Redis. The
derandomised cases are not fixed for ever: Hypothesis draws on string literals it collects from the
code base, so an unrelated edit can change them. What must hold every run (a member's 200) rests on
the schema's examples. The long version is ``manage.py fuzz_api --examples N``. The engine and its
checks are ``devtools/apifuzz.py``.

The run happens once per module; each test states one property of its outcome.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from devtools import apifuzz

# Cases per (operation, principal, mode). Anonymous is refused before anything is parsed, so a
# couple of cases say all there is to say; the admin reaches the most code.
CI_EXAMPLES = {"anonymous": 1, "other_tenant": 2, "member": 2, "admin": 3}


@dataclass
class FuzzRun:
    world: apifuzz.World
    outcomes: list[apifuzz.Outcome]
    guard: apifuzz.OutboundGuard
    operations: set[str]


@pytest.fixture(scope="module")
def fuzz_run(django_db_setup: None, django_db_blocker: Any) -> Iterator[FuzzRun]:
    with django_db_blocker.unblock():
        world = apifuzz.build_world()
        guard = apifuzz.OutboundGuard()
        schema = apifuzz.load_schema(world, None)
        try:
            with guard.installed():
                outcomes = apifuzz.run_fuzz(world, apifuzz.FuzzConfig(examples=CI_EXAMPLES), guard=guard,
                                            schema=schema)  # fmt: skip
        finally:
            apifuzz.quiesce_world(world)
        yield FuzzRun(world, outcomes, guard, apifuzz.operation_labels(schema))


def failures_of(run: FuzzRun, *categories: str) -> list[str]:
    lines = []
    for o in run.outcomes:
        for f in o.failures.values():
            if f["category"] in categories:
                lines.append(f"{o.operation} as {o.principal} ({o.mode}): {f['check']} [{f['status']}] "
                             f"x{f['count']}: {f['message'][:400]} example={f['example']} {f['traceback'][-800:]}")  # fmt: skip
    return lines


def test_it_fuzzes_every_operation_of_the_schema_as_each_principal_with_valid_and_invalid_input(fuzz_run) -> None:
    assert len(fuzz_run.operations) >= 25, sorted(fuzz_run.operations)  # the schema really was read
    ran = {(o.operation, o.principal, o.mode) for o in fuzz_run.outcomes if o.calls > 0}
    expected = {(op, p.name, mode) for op in fuzz_run.operations for p in fuzz_run.world.principals
                for mode in ("positive", "negative")}  # fmt: skip
    # Operations without any parameter or body have nothing to make invalid except the credentials.
    missing = {key for key in expected - ran if key[2] == "positive"}
    assert not missing, sorted(missing)
    assert len(ran) >= 0.9 * len(expected), sorted(expected - ran)


def test_it_gets_no_server_error_from_any_operation(fuzz_run) -> None:
    assert not failures_of(fuzz_run, "server_error", "transport"), "\n".join(failures_of(fuzz_run, "server_error"))
    assert not any(500 <= s for o in fuzz_run.outcomes for s in o.statuses)


def test_it_answers_only_documented_statuses_and_bodies_that_match_the_schema(fuzz_run) -> None:
    assert not failures_of(fuzz_run, "schema"), "\n".join(failures_of(fuzz_run, "schema"))


def test_it_refuses_invalid_input_with_a_4xx_that_carries_an_error_code(fuzz_run) -> None:
    lines = failures_of(fuzz_run, "invalid_input_accepted", "error_without_code", "other")
    assert not lines, "\n".join(lines)
    refused = sum(n for o in fuzz_run.outcomes if o.mode == "negative" for s, n in o.statuses.items() if s == 400)
    assert refused > 0  # the invalid cases really reached the validators


def test_it_refuses_principals_without_access_and_shows_them_no_tenant_data(fuzz_run) -> None:
    assert not failures_of(fuzz_run, "authorisation"), "\n".join(failures_of(fuzz_run, "authorisation"))
    by_principal = {p.name: set() for p in fuzz_run.world.principals}
    for o in fuzz_run.outcomes:
        by_principal[o.principal].update(o.statuses)
    assert by_principal["anonymous"] <= {401, 404, 406}  # 404/406 only for URLs/formats that match nothing
    assert 403 in by_principal["member"] and 200 in by_principal["member"]  # the 200: the schema's examples
    assert 200 in by_principal["admin"] and 201 in by_principal["admin"]


def test_it_never_reaches_the_network(fuzz_run) -> None:
    assert fuzz_run.guard.attempts == [], fuzz_run.guard.attempts
    tested = [o for o in fuzz_run.outcomes if o.operation == "POST /api/v1/connectors/{id}/test" and o.statuses[200]]
    assert tested, "the connector test endpoint never ran against the planted connector"


# The checks themselves must be able to fail: each is shown a real answer that breaks its rule.


def as_checked(django_response: Any) -> Any:
    """A real Django answer in the form schemathesis hands to a check."""
    from schemathesis.core.transport import Response

    return Response(status_code=django_response.status_code, content=django_response.content,
                    headers={"content-type": [django_response["Content-Type"]]}, request=None, elapsed=0.0,
                    verify=False)  # fmt: skip


def test_the_error_code_check_rejects_an_error_page_without_a_code(fuzz_run) -> None:
    from django.test import Client

    page = Client().get("/console/no-such-page/")  # a portal 404: Django's HTML page
    assert page.status_code == 404
    with pytest.raises(AssertionError, match="without a machine-readable error code"):
        apifuzz.error_carries_code(None, as_checked(page), None)


def test_the_authorisation_check_rejects_tenant_data_shown_to_another_principal(fuzz_run) -> None:
    from rest_framework.test import APIClient

    admin = next(p for p in fuzz_run.world.principals if p.name == "admin")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {admin.token}")
    feeds = client.get("/api/v1/admin/freshness-feeds")  # the admin's own feed, named with the marker
    assert feeds.status_code == 200
    check = apifuzz.principal_check(apifuzz.Principal("other_tenant", "x"), "admin", foreign_ids=False)
    with pytest.raises(AssertionError, match="received tenant A data"):
        check(None, as_checked(feeds), None)
    assert apifuzz.principal_check(admin, "admin", foreign_ids=False)(None, as_checked(feeds), None)


def test_an_unknown_api_url_answers_json_with_a_code(fuzz_run) -> None:
    from django.test import Client

    response = Client().get("/api/v1/connectors/not-a-number")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_the_outbound_guard_refuses_and_records_lookups_and_connects_outside_loopback() -> None:
    guard = apifuzz.OutboundGuard()
    with guard.installed():
        with pytest.raises(socket.gaierror):
            socket.getaddrinfo("example.com", 443)
        with pytest.raises(OSError), socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.connect(("203.0.113.7", 443))  # TEST-NET-3, refused before a packet leaves
        assert socket.getaddrinfo("127.0.0.1", 80)  # loopback still works
    assert [(a["kind"], a["host"]) for a in guard.attempts] == [("dns", "example.com"), ("connect", "203.0.113.7")]
    assert socket.getaddrinfo.__module__ == "socket"  # the real functions are back
