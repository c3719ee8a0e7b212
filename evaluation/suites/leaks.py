"""The canary suite at scale: restricted canaries never reach a user who may not read them.

Three tenants; restricted documents (group, nested CNF, single user, empty ACL, unknown
principal, other tenants) each carry a unique canary token.  Queries (topic pairs, questions,
phrases, exclusions, operators, the canary tokens themselves) are sent by every user over every
path: the retrieval function (``hybrid_search`` with the user's permission context), the search
API, the answers API (whose second identical question is served from the permission-scoped
cache), and the SSE answer stream when the endpoint exists, the Slack bot (``slackbot.tasks.run_job``
in-process: a DM / ephemeral answer from the asker's ACL, and a channel answer from the
intersection of every member's ACL, with Slack identities mapped to the suite's users) and the
portal's session endpoints (the results page and the answer stream the portal calls, GET for
``EventSource`` and POST with CSRF as ``portal.js`` does, through ``django.test.Client`` logged in
through ``/login/``).  A leak is a canary in a response that the user may not read — for a channel
answer, that ANY member of the channel may not read.  Full run: >= 10,000 queries.  Readers must find their own
canaries, or the suite would be vacuous.
"""

from __future__ import annotations

import html
import itertools
import json
import secrets
import time
import uuid
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, quote_plus

from django.test import Client
from django.test.utils import override_settings
from django.urls import NoReverseMatch, reverse
from tqdm import tqdm

from answers.query_parser import QueryError
from connectors import models as connector_models
from connectors.actions import do_create_connector_instance
from evaluation.report import SuiteResult, table
from retrieval.actions import do_create_source, do_enqueue_document, do_record_identity, do_set_group_members
from retrieval.backends.base import SearchFilters
from retrieval.contracts import SourceDocument
from retrieval.models import Source
from retrieval.permissions import permission_context
from retrieval.search import hybrid_search
from retrieval.tasks import process_pending_inline
from slackbot import api as slack_api
from slackbot import tasks as slack_tasks
from slackbot.blocks import escape_mrkdwn
from tenants.actions import do_add_member, do_create_api_token, do_create_tenant, do_create_user
from tenants.audit import SYSTEM
from tenants.context import tenant_context

WORDS = ["budget", "roadmap", "incident", "password", "salary", "launch", "vendor", "contract", "security",
         "migration", "offsite", "hiring", "payroll", "audit", "merger", "layoff"]  # fmt: skip


PASSWORD = secrets.token_urlsafe(18)  # per process; the evaluation users live in throwaway tenants


def slack_id(name: str, run_id: str) -> str:
    return f"U{name.upper()}{run_id.upper()}"


def _link_slack(users: dict[str, Any], run_id: str) -> None:
    """One Slack app per tenant; each user's Slack account mapped by verified e-mail (the bot's
    ``cairn_user_for``), so the bot path resolves the same Cairn users as the other paths."""

    seen: set[int] = set()
    for name, (u, _, t) in users.items():
        with tenant_context(t.pk):
            if t.pk not in seen:
                seen.add(t.pk)
                do_create_connector_instance(
                    "slack", "Slack (leaks eval)", config={"team_id": f"T{run_id.upper()}"},
                    credentials={"token": "xoxb-eval-unused", "signing_secret": secrets.token_hex(16)},
                    actor=SYSTEM,
                )  # fmt: skip
            do_record_identity(f"slack:user:{slack_id(name, run_id)}", email=u.email, email_verified=True,
                               display_name=name)  # fmt: skip


class SlackTransport:
    """Stands in for Slack's Web API at ``slackbot.api.api_factory`` (the documented swap
    point): serves ``conversations.members`` / ``users.info`` and records what the bot posts, so
    the check reads exactly the Block Kit payload Slack would receive."""

    def __init__(self, members: dict[str, list[str]]) -> None:
        self.members_of = members
        self.posted: list[dict[str, Any]] = []

    def __call__(self, instance: Any) -> SlackTransport:
        return self

    def members(self, channel: str) -> list[str]:
        return list(self.members_of.get(channel, []))

    def user_info(self, user: str) -> dict[str, Any]:
        return {"id": user, "team_id": "T-OTHER-ORG"}  # a human nobody can map: reads nothing

    def post_message(self, channel: str, text: str, blocks: list[dict[str, Any]], thread_ts: str | None) -> None:
        self.posted.append({"channel": channel, "text": text, "blocks": blocks})

    def post_ephemeral(self, channel: str, user: str, text: str, blocks: list[dict[str, Any]] | None = None,
                       thread_ts: str | None = None) -> None:  # fmt: skip
        self.posted.append({"channel": channel, "user": user, "text": text, "blocks": blocks})


def slack_channels(run_id: str) -> dict[str, tuple[str, list[str]]]:
    """channel id -> (tenant key, member names).  ``ext`` is a Slack Connect member nobody maps."""
    return {
        f"CALL{run_id}": ("a", ["alice", "bob", "carol", "dave"]),  # the intersection is public only
        f"CLEADS{run_id}": ("a", ["alice", "bob"]),  # public + eng
        f"CPAIR{run_id}": ("a", ["alice", "carol"]),  # public only (nested and single differ)
        f"CEXT{run_id}": ("a", ["alice", "ext"]),  # refused in the channel
        f"CB{run_id}": ("b", ["mallory"]),
        f"CC{run_id}": ("c", ["frank"]),
    }


def _token() -> str:
    return "CANARY" + uuid.uuid4().hex[:12].upper()


def build_world(run_id: str) -> tuple[dict[str, Any], dict[str, tuple[str, set[str]]]]:
    tenants = {k: do_create_tenant(f"eval-leaks-{k}-{run_id}", f"Leaks {k}") for k in ("a", "b", "c")}
    users: dict[str, Any] = {}
    for name, t in [("alice", "a"), ("bob", "a"), ("carol", "a"), ("dave", "a"), ("mallory", "b"), ("frank", "c")]:
        # A password only so the portal path can log in through the real login form.
        u = do_create_user(f"{name}-{run_id}", f"{name}-{run_id}@leaks.eval.invalid", PASSWORD, email_verified=True)
        users[name] = (u, do_create_api_token(do_add_member(tenants[t], u)), tenants[t])
    email = {n: f"user:{u.email}" for n, (u, _, _) in users.items()}
    _link_slack(users, run_id)
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
    """Every kind of query, interleaved: a run of any length (9 paths x 6 users per question)
    reaches the canary tokens and the operators early, not only the topic pairs."""
    groups = [
        [f"{tok} reference code" for tok, _ in canaries.values()],
        [f"what is the {w} plan?" for w in WORDS],
        [f"reference code {tok[:10]}" for tok, _ in canaries.values()],
        [f'"{w} review"' for w in WORDS],
        [f"{w} -{v}" for w, v in zip(WORDS, reversed(WORDS), strict=True)],
        [f"{w} source:confluence after:2020-01-01" for w in WORDS],
        ["*", "%", "' OR 1=1 --", "page", "record", "the", "owner approved", "details are final"],
        [f"{x} {y}" for x, y in itertools.permutations(WORDS, 2)],
    ]
    return [q for row in itertools.zip_longest(*groups) for q in row if q is not None]


def _strip_echo(body: Any, q: str) -> str:
    if isinstance(body, dict):
        body = {k: v for k, v in body.items() if k not in ("question", "query", "plan")}
    text = json.dumps(body, default=str)
    return text.replace(q, "")


def _strip_question(text: str, q: str) -> str:
    """Remove the user's own question however a page or payload echoes it (raw, HTML, JSON,
    URL, mrkdwn): a canary token the user typed is not a leak; one anywhere else is."""

    for variant in sorted({q, html.escape(q), html.escape(q, quote=False), json.dumps(q)[1:-1], quote_plus(q),
                           quote(q), escape_mrkdwn(q), json.dumps(escape_mrkdwn(q))[1:-1]}, key=len, reverse=True):  # fmt: skip
        text = text.replace(variant, "")
    return text


def _portal_client(username: str) -> Client:
    """A browser session: the login form with its CSRF token, as a person signs in."""
    client = Client(enforce_csrf_checks=True)
    client.get("/login/")
    r = client.post("/login/", {"username": username, "password": PASSWORD,
                                "csrfmiddlewaretoken": client.cookies["csrftoken"].value})  # fmt: skip
    if r.status_code != 302:
        raise RuntimeError(f"portal login failed for {username}: {r.status_code}")
    client.get("/")  # the page sets the CSRF cookie portal.js sends back
    return client


def run(limit: int | None = None, progress: bool = True, **_: Any) -> SuiteResult:
    from rest_framework.test import APIClient

    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    target = limit or 10_000
    run_id = uuid.uuid4().hex[:8]
    users, canaries = build_world(run_id)
    base_qs = queries(canaries)
    try:
        stream_url: str | None = reverse("api-answers-stream")
    except NoReverseMatch:
        stream_url = None
    channels = ["retrieval", "api_search", "api_answers", "api_answers_cached"] + (["sse"] if stream_url else [])
    channels += ["slack_private", "slack_channel", "portal_results"] + (["portal_stream"] if stream_url else [])
    counts = dict.fromkeys(channels, 0)
    not_ok = dict.fromkeys(
        channels, 0
    )  # responses other than 200 / "answered": reported, so a path cannot pass vacuously
    slack_outcomes: dict[str, int] = {}
    # Responses that carried one of the asker's own canaries: a path that never shows any would pass vacuously.
    with_own = dict.fromkeys(channels, 0)
    leaks: list[dict[str, Any]] = []
    found: dict[str, set[str]] = {n: set() for n in users}
    clients = {}
    for name, (_, tok, _) in users.items():
        c = APIClient()
        c.credentials(HTTP_AUTHORIZATION=f"Bearer {tok}")
        clients[name] = c
    perms = {}
    instances = {}
    for name, (u, _, t) in users.items():
        with tenant_context(t.pk):
            perms[name] = permission_context(u)
            instances[name] = connector_models.ConnectorInstance.objects.get(kind="slack").pk
    readers_of = {tok: readers for tok, readers in canaries.values()}
    rooms = slack_channels(run_id)
    transport = SlackTransport({ch: [slack_id(m, run_id) for m in members] for ch, (_, members) in rooms.items()})
    rooms_of = {n: [ch for ch, (_, members) in rooms.items() if n in members] for n in users}
    sent = 0
    names = list(users)
    bar = tqdm(total=target, desc="canary queries", disable=not progress)
    saved_factory = slack_api.api_factory
    slack_api.api_factory = transport  # type: ignore[assignment]  # a duck-typed stand-in for SlackApi, not a subclass
    try:
        with override_settings(ALLOWED_HOSTS=["testserver", "localhost"]):
            portal = {name: _portal_client(u.username) for name, (u, _, _) in users.items()}
            i = 0
            while sent < target:
                # Every (question, user) pair goes over every path; the same question reaches every
                # user in turn, so a cache entry shared across permission sets would show up here.
                q = base_qs[(i // len(names)) % len(base_qs)]
                name = names[i % len(names)]
                i += 1
                client = clients[name]
                for channel in channels:
                    if sent >= target:
                        break
                    audience = [name]
                    status = 200
                    if channel == "retrieval":
                        u, _, t = users[name]
                        with tenant_context(t.pk):
                            out = hybrid_search(perms[name], [q], SearchFilters(), k=20)
                        text = " ".join(c.text + " " + c.title for c in out.chunks)
                    elif channel == "api_search":
                        r = client.get("/api/v1/search", {"q": q})
                        status, text = r.status_code, _strip_echo(r.json(), q)
                    elif channel in ("api_answers", "api_answers_cached"):
                        # The second POST of the same question by the same user is a cache hit.
                        r = client.post("/api/v1/answers", {"question": q}, format="json")
                        status, text = r.status_code, _strip_echo(r.json(), q)
                    elif channel == "sse":
                        assert stream_url is not None
                        r = client.get(stream_url, {"q": q})
                        body = b"".join(r.streaming_content) if getattr(r, "streaming", False) else r.content
                        status, text = r.status_code, body.decode("utf-8", "replace").replace(q, "")
                    elif channel in ("slack_private", "slack_channel"):
                        u, _, t = users[name]
                        if channel == "slack_private":
                            where, kind = f"D{slack_id(name, run_id)}", ("dm", "ephemeral")[i % 2]
                        else:
                            where, kind = rooms_of[name][i % len(rooms_of[name])], "channel"
                            audience = rooms[where][1]
                        transport.posted.clear()
                        try:
                            outcome = slack_tasks.run_job(t.pk, instances[name], {
                                "channel": where, "user": slack_id(name, run_id), "audience": kind, "question": q,
                                "dedupe": uuid.uuid4().hex, "thread_ts": None})  # fmt: skip
                        except QueryError as exc:
                            # run_job does not turn a query the parser rejects into a reply (the API
                            # answers 400): counted as not answered, nothing was posted.
                            outcome = f"query_error:{exc.code}"
                        slack_outcomes[f"{channel}:{outcome}"] = slack_outcomes.get(f"{channel}:{outcome}", 0) + 1
                        status = 200 if outcome == "answered" or outcome.startswith("refused:") else 400
                        text = _strip_question(json.dumps(transport.posted), q)
                    elif channel == "portal_results":
                        r = portal[name].get("/", {"q": q, "mode": "results"})
                        status, text = r.status_code, _strip_question(r.content.decode("utf-8", "replace"), q)
                    else:
                        assert stream_url is not None
                        if i % 2:  # EventSource: GET with the session cookie
                            r = portal[name].get(stream_url, {"q": q}, HTTP_ACCEPT="text/event-stream",
                                                 HTTP_SEC_FETCH_SITE="same-origin")  # fmt: skip
                        else:  # portal.js: POST with the session cookie and the CSRF header
                            r = portal[name].post(stream_url, json.dumps({"question": q}),
                                                  content_type="application/json", HTTP_ACCEPT="text/event-stream",
                                                  HTTP_X_CSRFTOKEN=portal[name].cookies["csrftoken"].value)  # fmt: skip
                        body = b"".join(r.streaming_content) if getattr(r, "streaming", False) else r.content
                        status, text = r.status_code, _strip_question(body.decode("utf-8", "replace"), q)
                    # A channel answer is read by every member: a canary is forbidden if anyone there may not read it.
                    forbidden = {tok for tok, readers in readers_of.items() if not set(audience) <= readers}
                    leaked = {tok for tok in forbidden if tok in text}
                    if leaked:
                        leaks.append({"user": name, "query": q, "channel": channel, "canaries": sorted(leaked),
                                      "audience": audience})  # fmt: skip
                    own = {tok for tok, readers in readers_of.items() if name in readers and tok in text}
                    found[name] |= own
                    with_own[channel] += bool(own)
                    if status != 200:
                        not_ok[channel] += 1
                    counts[channel] += 1
                    sent += 1
                    bar.update(1)
    finally:
        slack_api.api_factory = saved_factory
    bar.close()
    readable = {n: {tok for tok, readers in canaries.values() if n in readers} for n in users}
    recall = {n: (len(found[n]) / len(readable[n]) if readable[n] else None) for n in users}
    per_path_leaks = {c: sum(1 for x in leaks if x["channel"] == c) for c in channels}
    m = {"queries": sent, "leaks": len(leaks), "per_channel": counts, "leaks_per_channel": per_path_leaks,
         "non_200_per_channel": not_ok, "responses_with_own_canary": with_own, "slack_outcomes": slack_outcomes, "users": len(users), "tenants": 3,
         "canaries": len(canaries), "reader_found_own_canaries": recall, "leak_free": not leaks}  # fmt: skip
    md = (
        f"{sent} queries over {len(users)} users in 3 tenants and {len(channels)} paths; "
        f"{len(canaries)} canary documents.\n\n**Leaks: {len(leaks)}** (must be 0).\n\n"
        + table(
            ["path", "queries", "leaks", "non-200 / not answered", "responses with own canaries"],
            [[k, v, per_path_leaks[k], not_ok[k], with_own[k]] for k, v in counts.items()],
        )  # fmt: skip
        + "\nSlack bot outcomes (`run_job`; a refusal is the channel audience failing closed): "
        + ", ".join(f"{k}: {v}" for k, v in sorted(slack_outcomes.items()))
        + "\n\nShare of their own readable canaries each user found (proves the suite is not vacuous): "
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
