"""The canary suite at scale: restricted canaries never reach a user who may not read them.

Three tenants; restricted documents (group, nested CNF, single user, empty ACL, unknown
principal, other tenants) each carry a unique canary token.  Queries (topic pairs, questions,
phrases, exclusions, operators, the canary tokens themselves) are sent by every user over every
path: the retrieval function (``hybrid_search`` with the user's permission context), the search
API, the answers API (whose second identical question is served from the permission-scoped
cache), and the SSE answer stream when the endpoint exists.  A leak is a canary in a response
that the user may not read.  Full run: >= 10,000 queries.  Readers must find their own
canaries, or the suite would be vacuous.
"""

from __future__ import annotations

import itertools
import json
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from django.test.utils import override_settings
from django.urls import NoReverseMatch, reverse
from tqdm import tqdm

from retrieval.actions import do_create_source, do_enqueue_document, do_set_group_members
from retrieval.backends.base import SearchFilters
from retrieval.contracts import SourceDocument
from retrieval.evaluation.report import SuiteResult, table
from retrieval.permissions import permission_context
from retrieval.search import hybrid_search
from retrieval.tasks import process_pending_inline
from tenants.actions import do_add_member, do_create_api_token, do_create_tenant, do_create_user
from tenants.context import tenant_context

WORDS = ["budget", "roadmap", "incident", "password", "salary", "launch", "vendor", "contract", "security",
         "migration", "offsite", "hiring", "payroll", "audit", "merger", "layoff"]  # fmt: skip


def _token() -> str:
    return "CANARY" + uuid.uuid4().hex[:12].upper()


def build_world(run_id: str) -> tuple[dict[str, Any], dict[str, tuple[str, set[str]]]]:
    tenants = {k: do_create_tenant(f"eval-leaks-{k}-{run_id}", f"Leaks {k}") for k in ("a", "b", "c")}
    users: dict[str, Any] = {}
    for name, t in [("alice", "a"), ("bob", "a"), ("carol", "a"), ("dave", "a"), ("mallory", "b"), ("frank", "c")]:
        u = do_create_user(f"{name}-{run_id}", f"{name}-{run_id}@leaks.eval.invalid", None, email_verified=True)
        users[name] = (u, do_create_api_token(do_add_member(tenants[t], u)), tenants[t])
    email = {n: f"user:{u.email}" for n, (u, _, _) in users.items()}
    with tenant_context(tenants["a"].pk):
        do_set_group_members("confluence:group:all", [email["alice"], email["carol"]])
        do_set_group_members("confluence:group:leads", [email["alice"], email["bob"]])
        do_set_group_members("confluence:group:eng", [email["alice"], email["bob"]])
    docs = [
        ("public", [["public:tenant"]], "a", {"alice", "bob", "carol", "dave"}),
        ("eng", [["confluence:group:eng"]], "a", {"alice", "bob"}),
        ("nested", [["confluence:group:all"], ["confluence:group:leads"]], "a", {"alice"}),
        ("single", [[email["carol"]]], "a", {"carol"}),
        ("empty", [], "a", set()),
        ("ghost", [["confluence:group:ghost"]], "a", set()),
        ("b-public", [["public:tenant"]], "b", {"mallory"}),
        ("c-restricted", [["confluence:group:nobody"]], "c", set()),
    ]
    canaries: dict[str, tuple[str, set[str]]] = {}
    for t in tenants.values():
        with tenant_context(t.pk):
            do_create_source("confluence", "Wiki", authority_tier=1)
    for i, (name, acl, t, readers) in enumerate(docs):
        for copy in range(2):  # two documents per ACL, different topics
            token = _token()
            a, b, c = (WORDS[(i * 2 + copy + j * 5) % len(WORDS)] for j in range(3))
            text = (f"This page covers the {a} plan and the {b} review. The {c} owner approved it. "
                    f"Reference code {token} identifies this record. The {a} and {c} details are final.")  # fmt: skip
            with tenant_context(tenants[t].pk):
                from retrieval.models import Source

                src = Source.objects.get(name="Wiki")
                do_enqueue_document(src, SourceDocument(
                    external_id=f"{name}-{copy}", title=f"{a} page", url=f"https://wiki.eval.invalid/{name}/{copy}",
                    content=text.encode(), media_type="text/plain", acl=tuple(tuple(x) for x in acl),
                    source_version=1, container="WIKI"))  # fmt: skip
            canaries[f"{name}-{copy}"] = (token, readers)
    for t in tenants.values():
        process_pending_inline(t.pk)
    return users, canaries


def queries(canaries: dict[str, tuple[str, set[str]]]) -> list[str]:
    qs = [f"{x} {y}" for x, y in itertools.permutations(WORDS, 2)]
    qs += [f"what is the {w} plan?" for w in WORDS] + [f'"{w} review"' for w in WORDS]
    qs += [f"{w} -{v}" for w, v in zip(WORDS, reversed(WORDS), strict=True)]
    qs += [f"{tok} reference code" for tok, _ in canaries.values()]
    qs += [f"reference code {tok[:10]}" for tok, _ in canaries.values()]
    qs += [f"{w} source:confluence after:2020-01-01" for w in WORDS]
    qs += ["*", "%", "' OR 1=1 --", "page", "record", "the", "owner approved", "details are final"]
    return qs


def _strip_echo(body: Any, q: str) -> str:
    if isinstance(body, dict):
        body = {k: v for k, v in body.items() if k not in ("question", "query", "plan")}
    text = json.dumps(body, default=str)
    return text.replace(q, "")


def run(limit: int | None = None, progress: bool = True, **_: Any) -> SuiteResult:
    from rest_framework.test import APIClient

    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    target = limit or 10_000
    users, canaries = build_world(uuid.uuid4().hex[:8])
    base_qs = queries(canaries)
    try:
        stream_url: str | None = reverse("api-answers-stream")
    except NoReverseMatch:
        stream_url = None
    channels = ["retrieval", "api_search", "api_answers", "api_answers_cached"] + (["sse"] if stream_url else [])
    counts = dict.fromkeys(channels, 0)
    leaks: list[dict[str, Any]] = []
    found: dict[str, set[str]] = {n: set() for n in users}
    clients = {}
    for name, (_, tok, _) in users.items():
        c = APIClient()
        c.credentials(HTTP_AUTHORIZATION=f"Bearer {tok}")
        clients[name] = c
    perms = {}
    for name, (u, _, t) in users.items():
        with tenant_context(t.pk):
            perms[name] = permission_context(u)
    sent = 0
    names = list(users)
    bar = tqdm(total=target, desc="canary queries", disable=not progress)
    with override_settings(ALLOWED_HOSTS=["testserver", "localhost"]):
        i = 0
        while sent < target:
            # Every (question, user) pair goes over every path; the same question reaches every
            # user in turn, so a cache entry shared across permission sets would show up here.
            q = base_qs[(i // len(names)) % len(base_qs)]
            name = names[i % len(names)]
            i += 1
            forbidden = {tok for tok, readers in canaries.values() if name not in readers}
            allowed = {tok for tok, readers in canaries.values() if name in readers}
            client = clients[name]
            for channel in channels:
                if sent >= target:
                    break
                if channel == "retrieval":
                    u, _, t = users[name]
                    with tenant_context(t.pk):
                        out = hybrid_search(perms[name], [q], SearchFilters(), k=20)
                    text = " ".join(c.text + " " + c.title for c in out.chunks)
                elif channel == "api_search":
                    text = _strip_echo(client.get("/api/v1/search", {"q": q}).json(), q)
                elif channel in ("api_answers", "api_answers_cached"):
                    # The second POST of the same question by the same user is a cache hit.
                    r = client.post("/api/v1/answers", {"question": q}, format="json")
                    text = _strip_echo(r.json(), q)
                else:
                    assert stream_url is not None
                    r = client.get(stream_url, {"q": q})
                    body = b"".join(r.streaming_content) if getattr(r, "streaming", False) else r.content
                    text = body.decode("utf-8", "replace").replace(q, "")
                leaked = {tok for tok in forbidden if tok in text}
                if leaked:
                    leaks.append({"user": name, "query": q, "channel": channel, "canaries": sorted(leaked)})
                found[name] |= {tok for tok in allowed if tok in text}
                counts[channel] += 1
                sent += 1
                bar.update(1)
    bar.close()
    readable = {n: {tok for tok, readers in canaries.values() if n in readers} for n in users}
    recall = {n: (len(found[n]) / len(readable[n]) if readable[n] else None) for n in users}
    m = {"queries": sent, "leaks": len(leaks), "per_channel": counts, "users": len(users), "tenants": 3,
         "canaries": len(canaries), "reader_found_own_canaries": recall, "leak_free": not leaks}  # fmt: skip
    md = (
        f"{sent} queries over {len(users)} users in 3 tenants and {len(channels)} paths; "
        f"{len(canaries)} canary documents.\n\n**Leaks: {len(leaks)}** (must be 0).\n\n"
        + table(["path", "queries"], [[k, v] for k, v in counts.items()])
        + "\nShare of their own readable canaries each user found (proves the suite is not vacuous): "
        + ", ".join(f"{k}: {'–' if v is None else f'{v:.2f}'}" for k, v in recall.items())
        + "\n"
    )
    res = SuiteResult("leaks", m, {"leaks": leaks[:100]}, md, started_at=started)
    res.seconds = time.perf_counter() - t0
    res.plots["paths"] = _plot(counts, len(leaks))
    return res


def _plot(counts: dict[str, int], leaks: int) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3))
    ax.bar(list(counts), list(counts.values()))
    ax.set_title(f"Canary queries per path (leaks: {leaks})")
    ax.tick_params(axis="x", labelrotation=20)
    return fig
