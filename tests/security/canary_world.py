"""Helpers shared by test modules (moved out of test_canary_leaks.py, so no test module imports another)."""

from __future__ import annotations

import itertools
import uuid

from retrieval.actions import do_record_identity
from tenants.actions import do_add_member, do_create_api_token, do_create_tenant, do_create_user
from tenants.context import tenant_context
from tests.support import enqueue, grant_groups, ingest_inline, make_doc, source_for, unique

WORDS = ["budget", "roadmap", "incident", "password", "salary", "launch", "vendor", "contract", "security",
         "migration", "offsite", "hiring"]  # fmt: skip


def canary() -> str:
    return "CANARY" + uuid.uuid4().hex[:10].upper()


def body_text(topic_words: list[str], token: str) -> str:
    a, b, c = topic_words
    return (
        f"This page covers the {a} plan and the {b} review. The {c} owner approved it. "
        f"Reference code {token} identifies this record. The {a} and {c} details are final."
    )


def build_world():
    """Three tenants, six users and eight canary documents (also restored from a backup in
    tests/operations/test_backup_restore.py)."""
    a = do_create_tenant(unique("canary-a"), "A")
    b = do_create_tenant(unique("canary-b"), "B")
    c = do_create_tenant(unique("canary-c"), "C")
    users = {}
    for name, tenant in [("alice", a), ("bob", a), ("carol", a), ("dave", a), ("mallory", b), ("frank", c)]:
        uname = unique(name)
        user = do_create_user(uname, f"{uname}@example.com", None, email_verified=True)
        users[name] = (user, do_create_api_token(do_add_member(tenant, user)))
    grant_groups(a, {
        "confluence:group:all": [users["alice"][0], users["carol"][0]],
        "confluence:group:leads": [users["alice"][0], users["bob"][0]],
        "confluence:group:eng": [users["alice"][0], users["bob"][0]],
    })  # fmt: skip
    # dave's identity exists at the source but is not mapped (unverified e-mail): grants nothing.
    with tenant_context(a.pk):
        do_record_identity("confluence:user:dave-unverified", email=users["dave"][0].email, email_verified=False)
        from tenants.models import Group, GroupMember

        GroupMember.objects.create(group=Group.objects.get(principal="confluence:group:eng"),
                                   member_principal="confluence:user:dave-unverified")  # fmt: skip
    docs = {
        "public": ([["public:tenant"]], a, {"alice", "bob", "carol", "dave"}),
        "eng": ([["confluence:group:eng"]], a, {"alice", "bob"}),
        "nested": ([["confluence:group:all"], ["confluence:group:leads"]], a, {"alice"}),
        "single": ([[f"user:{users['carol'][0].email}"]], a, {"carol"}),
        "empty": ([], a, set()),
        "ghost": ([["confluence:group:ghost"]], a, set()),
        "b-public": ([["public:tenant"]], b, {"mallory"}),
        "c-restricted": ([["confluence:group:nobody"]], c, set()),
    }
    canaries: dict[str, tuple[str, set[str]]] = {}
    sources = {t.pk: source_for(t) for t in (a, b, c)}
    for i, (name, (acl, tenant, readers)) in enumerate(docs.items()):
        token = canary()
        words = [WORDS[(i + j * 3) % len(WORDS)] for j in range(3)]
        enqueue(tenant, sources[tenant.pk], make_doc(name, body_text(words, token), acl, title=f"{words[0]} page"))
        canaries[name] = (token, readers)
    for t in (a, b, c):
        ingest_inline(t.pk)
    return users, canaries


def generated_queries(canaries: dict[str, tuple[str, set[str]]]) -> list[str]:
    # Every pair of words once: "budget roadmap" and "roadmap budget" are the same query to both retrieval legs
    # (bag of words, one embedding of nearly the same text), so asking both doubled the time and not the cover.
    queries = [f"{x} {y}" for x, y in itertools.combinations(WORDS, 2)]
    queries += [f"what is the {w} plan?" for w in WORDS]
    queries += [f'"{w} review"' for w in WORDS]
    queries += [f"{w} -{v}" for w, v in zip(WORDS, reversed(WORDS), strict=False)]
    queries += [f"{token} reference code" for token, _ in canaries.values()]
    queries += [f"reference code {token[:8]}" for token, _ in canaries.values()]
    queries += [f"{w} source:confluence after:2020-01-01" for w in WORDS]
    queries += ["*", "%", "' OR 1=1 --", "page", "record", "the", "owner approved", "details are final"]
    return queries


def without_query_echo(body: dict, query: str) -> str:
    """The response minus the places that repeat the user's own query back to them.

    Echoes of the query (plan, rewrites, trace) are not leaks: the user typed them.  For
    queries that name a canary, only the data-bearing parts are checked (everything but
    the echo fields); for all other queries the whole body is checked.
    """
    import json

    echo_keys = {"question", "query", "plan"}
    if "CANARY" in query:
        echo_keys |= {"trace"}
    data = {k: v for k, v in body.items() if k not in echo_keys}
    return json.dumps(data).replace(query, "")
