"""Schema-driven fuzzing of the public API (schemathesis over the drf-spectacular schema).

One engine, two front ends: ``tests/security/test_api_schema_fuzz.py`` (short, seeded, in CI) and
``manage.py fuzz_api`` (long, against the in-process WSGI app or a running server).

For every operation of ``GET /api/v1/schema`` and every principal (anonymous, an admin of
another tenant, a member without admin rights, the tenant admin) it generates valid and
invalid requests and checks that

- nothing answers 5xx,
- the status code is documented and the body matches the documented schema,
- invalid input is refused with a 4xx, and every 4xx JSON body is ``{"error": {"code", ...}}``,
- principals without access get 401/403/404 with a code, and never tenant A's data (a marker
  string planted in tenant A's titles, aliases, connector and feed names never shows up for them).

Everything runs in two tenants made for the run, so the state-changing operations (connector
create/sync/test, aliases, authority, feeds, feedback) touch nothing else. Fuzzing never reaches
the network: URL-valued fields of connector configs, answer settings and feeds are pointed at a
loopback literal before they are sent (the hardened client ``core/http.py`` refuses those without
connecting), and in-process runs also install ``OutboundGuard``, which refuses and records any
DNS lookup or connect to anything but loopback or a Unix socket.
"""

from __future__ import annotations

import errno
import json
import logging
import socket
import sys
import time
import traceback
import uuid
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from answers import actions as answer_actions
from answers.models import AnswerSettings, FreshnessFeed
from connectors.actions import do_create_connector_instance, do_set_paused
from connectors.models import ConnectorInstance
from retrieval.actions import do_create_source, do_enqueue_document
from retrieval.contracts import SourceDocument
from retrieval.tasks import process_pending_inline
from tenants.actions import do_add_member, do_create_api_token, do_create_tenant, do_create_user
from tenants.audit import SYSTEM
from tenants.context import tenant_context

MARKER = "ZQXFUZZMARK"  # planted in tenant A's objects; must never reach another principal
# A loopback literal with a closed port: core/http.py refuses loopback destinations before any connect.
LOOPBACK_URL = "https://127.0.0.1:9/fuzz"
CONNECTOR_URL_KEYS = {"confluence": ("site_url",), "sharepoint": ("graph_base_url", "authority_host"),
                      "slack": ("base_url",)}  # fmt: skip
SCHEMA_PATH = "/api/v1/schema?format=json"
# Views whose admin check happens inside the handler rather than through ``admin_only``.
ADMIN_ONLY_HANDLERS = {("GET", "/api/v1/feedback")}


# --------------------------------------------------------------------------------------------------
# Principals and the world they act in
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Principal:
    name: str  # anonymous | other_tenant | member | admin
    token: str | None

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}


@dataclass
class World:
    tenant_id: int
    other_tenant_id: int
    principals: list[Principal]
    ids: dict[str, int]  # connector, alias, feed: tenant A objects for the {id} path parameters


def build_world() -> World:
    """Two fresh tenants: A (admin + member, a document, alias, connector and feed) and B (an admin)."""

    run = uuid.uuid4().hex[:8]
    tenant_a = do_create_tenant(f"fuzz-a-{run}", "Fuzz A")
    tenant_b = do_create_tenant(f"fuzz-b-{run}", "Fuzz B")
    tokens: dict[str, str] = {}
    for name, tenant, role in [("admin", tenant_a, "admin"), ("member", tenant_a, "member"),
                               ("other_tenant", tenant_b, "admin")]:  # fmt: skip
        username = f"fuzz-{name}-{run}"
        user = do_create_user(username, f"{username}@example.com", None, email_verified=True)
        tokens[name] = do_create_api_token(do_add_member(tenant, user, role=role))
    from datetime import UTC, datetime

    with tenant_context(tenant_a.pk):
        source = do_create_source("confluence", f"wiki {MARKER}")
        do_enqueue_document(source, SourceDocument(
            external_id="plan", title=f"Quarterly plan {MARKER}", url="https://wiki.example.com/plan",
            content=f"The quarterly plan {MARKER} is final. Travel needs approval.".encode(),
            media_type="text/plain", acl=(("public:tenant",),), source_version=1, container="ENG",
            updated_at=datetime(2026, 1, 15, tzinfo=UTC),
        ))  # fmt: skip
    process_pending_inline(tenant_a.pk)
    with tenant_context(tenant_a.pk):
        alias = answer_actions.do_set_alias(MARKER.lower(), "quarterly", actor=SYSTEM)
        connector = do_create_connector_instance(
            "slack", f"Slack {MARKER}", config={"team_id": "T1", "base_url": LOOPBACK_URL},
            credentials={"token": "xoxb-fuzz"}, actor=SYSTEM,
        )  # fmt: skip
        # A row the freshness allow-list would refuse through the API: the world is fixture data.
        feed = FreshnessFeed.objects.create(name=f"feed {MARKER}", entity="Cairn", url=LOOPBACK_URL)
    principals = [Principal("anonymous", None), Principal("other_tenant", tokens["other_tenant"]),
                  Principal("member", tokens["member"]), Principal("admin", tokens["admin"])]  # fmt: skip
    return World(tenant_a.pk, tenant_b.pk, principals, {"connector": connector.pk, "alias": alias.pk,
                                                         "feed": feed.pk})  # fmt: skip


def quiesce_world(world: World) -> None:
    """Pause every connector the run created, so sync tasks it queued do nothing when a worker runs them."""

    for tenant_id in (world.tenant_id, world.other_tenant_id):
        with tenant_context(tenant_id):
            for instance in ConnectorInstance.objects.filter(paused=False):
                do_set_paused(instance, True, actor=SYSTEM)


# --------------------------------------------------------------------------------------------------
# No network
# --------------------------------------------------------------------------------------------------


def _is_loopback_host(host: Any) -> bool:
    if host in (None, "", b"", "localhost", b"localhost"):
        return True
    text = host.decode() if isinstance(host, bytes) else str(host)
    import ipaddress

    try:
        return ipaddress.ip_address(text.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def is_loopback_url(url: str) -> bool:
    from urllib.parse import urlsplit

    return _is_loopback_host(urlsplit(url).hostname or "x")


class OutboundGuard:
    """Refuses (and records) DNS lookups and connects to anything but loopback or Unix sockets.

    It patches the socket module, below every HTTP library, so it also sees clients that do not
    go through ``core/http.py``. An attempt raises the same errors a machine without a network
    would (``gaierror``, ``ENETUNREACH``), so the product code takes its ordinary failure path.
    """

    def __init__(self) -> None:
        self.attempts: list[dict[str, Any]] = []
        self.current_operation = ""

    def _record(self, kind: str, host: Any, port: Any) -> None:
        frames = [f"{f.filename.rsplit('/work/main/', 1)[-1]}:{f.lineno}" for f in traceback.extract_stack()
                  if "/site-packages/" not in f.filename and "apifuzz.py" not in f.filename]  # fmt: skip
        self.attempts.append({"kind": kind, "host": str(host), "port": str(port),
                              "operation": self.current_operation, "frames": frames[-6:]})  # fmt: skip

    @contextmanager
    def installed(self) -> Iterator[OutboundGuard]:
        real_getaddrinfo = socket.getaddrinfo
        real_connect = socket.socket.connect
        real_connect_ex = socket.socket.connect_ex
        guard = self

        def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
            if not _is_loopback_host(host):
                guard._record("dns", host, port)
                raise socket.gaierror(socket.EAI_NONAME, "refused by the fuzzing outbound guard")
            return real_getaddrinfo(host, port, *args, **kwargs)

        def allowed(sock: socket.socket, address: Any) -> bool:
            if sock.family == getattr(socket, "AF_UNIX", None):
                return True
            return isinstance(address, tuple) and _is_loopback_host(address[0])

        def connect(sock: socket.socket, address: Any) -> None:
            if not allowed(sock, address):
                guard._record("connect", address[0], address[1])
                raise OSError(errno.ENETUNREACH, "refused by the fuzzing outbound guard")
            real_connect(sock, address)

        def connect_ex(sock: socket.socket, address: Any) -> int:
            if not allowed(sock, address):
                guard._record("connect", address[0], address[1])
                return errno.ENETUNREACH
            return real_connect_ex(sock, address)

        socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]
        socket.socket.connect = connect  # type: ignore[method-assign, assignment]
        socket.socket.connect_ex = connect_ex  # type: ignore[method-assign, assignment]
        try:
            yield self
        finally:
            socket.getaddrinfo = real_getaddrinfo  # type: ignore[assignment]
            socket.socket.connect = real_connect  # type: ignore[method-assign]
            socket.socket.connect_ex = real_connect_ex  # type: ignore[method-assign]


def keep_urls_local(case: Any) -> None:
    """Point URL-valued request fields of a valid case at a loopback literal, so none names a real host.

    Only JSON-object bodies of positive cases are touched: rewriting a field of an invalid case could
    make it valid. An invalid case is refused without storing anything (or, if the API wrongly took
    it, ``pin_urls`` resets what it stored right after the call).
    """
    body = case.body
    if not isinstance(body, dict):
        return
    path = case.operation.path
    if path.startswith("/api/v1/connectors") and isinstance(body.get("config"), dict):
        config = dict(body["config"])
        for keys in CONNECTOR_URL_KEYS.values():
            for key in keys:
                config[key] = LOOPBACK_URL
        body["config"] = config
    elif path == "/api/v1/admin/answer-settings" and body.get("endpoint_url"):
        body["endpoint_url"] = LOOPBACK_URL
    elif path == "/api/v1/admin/freshness-feeds" and "url" in body:
        body["url"] = LOOPBACK_URL


def pin_urls(world: World) -> None:
    """Point every URL setting of the run's connectors at the loopback literal.

    ``keep_urls_local`` rewrites the JSON bodies the fuzzer sends, but a PATCH can still drop a URL
    key, and a connector without one talks to the real service (slack.com, graph.microsoft.com).
    Called before and after each connector or answer-settings call, so a test, sync, resume or
    answer never sees a real host. The answer settings' endpoint gets the same treatment.
    """

    wanted = {key: LOOPBACK_URL for keys in CONNECTOR_URL_KEYS.values() for key in keys}
    for tenant_id in (world.tenant_id, world.other_tenant_id):
        with tenant_context(tenant_id):
            for instance in ConnectorInstance.objects.all():
                config = instance.config if isinstance(instance.config, dict) else {}
                if any(config.get(k) != v for k, v in wanted.items()):
                    ConnectorInstance.objects.filter(pk=instance.pk).update(config={**config, **wanted})
            # An OpenAI-compatible writer would be called by every answer of the tenant.
            AnswerSettings.objects.exclude(endpoint_url__in=("", LOOPBACK_URL)).update(endpoint_url=LOOPBACK_URL)


# --------------------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------------------


def _json(response: Any) -> Any:
    try:
        return json.loads(response.content or b"null")
    except (ValueError, UnicodeDecodeError):
        return None


def _error_of(response: Any) -> Any:
    """The ``error`` object of a JSON error body, or the data of the ``error`` event of an event stream."""
    content_type = (response.headers.get("content-type") or [""])[0]
    if content_type.startswith("text/event-stream"):
        for block in (response.content or b"").decode("utf-8", "replace").split("\n\n"):
            lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
            if lines.get("event") == "error":
                try:
                    return json.loads(lines.get("data", "null"))
                except ValueError:
                    return None
        return None
    body = _json(response)
    return body.get("error") if isinstance(body, dict) else None


def error_carries_code(ctx: Any, response: Any, case: Any) -> bool | None:
    """Every 4xx/5xx body is ``{"error": {"code": <non-empty str>, "message": <str>}}`` (in an event
    stream: an ``error`` event with that object as data)."""
    if response.status_code < 400:
        return None
    err = _error_of(response)
    code = err.get("code") if isinstance(err, dict) else None
    if not (isinstance(code, str) and code and isinstance(err.get("message"), str)):  # type: ignore[union-attr]
        raise AssertionError(
            f"{response.status_code} without a machine-readable error code: {(response.content or b'')[:200]!r}"
        )
    return True


def _unroutable(case: Any, response: Any) -> bool:
    """A 404/406 that says the request names no route or format, before anyone is authenticated.

    Django matches the URL (``/connectors/abc`` matches no ``<int:pk>``) and DRF picks the renderer
    (``?format=``) before authentication runs; those answers carry no data, only a code.
    """
    if response.status_code not in (404, 406):
        return False
    err = _error_of(response)
    if not isinstance(err, dict) or err.get("code") not in ("not_found", "not_acceptable"):
        return False
    ident = str(case.path_parameters.get("id", "0")) if case.path_parameters else "0"
    bad_id = not ident.isascii() or not ident.isdigit()
    fmt = (case.query or {}).get("format")
    return bad_id or (fmt is not None and fmt not in ("json", "sse")) or response.status_code == 406


def access_level(method: str, path: str) -> str:
    """``admin`` or ``member``: who may call the operation at all (read from the view itself)."""
    from django.urls import resolve

    if (method.upper(), path) in ADMIN_ONLY_HANDLERS:
        return "admin"
    concrete = path.replace("{id}", "1")
    view = getattr(resolve(concrete).func, "view_class", None)
    return "admin" if getattr(view, "admin_only", False) else "member"


def principal_check(principal: Principal, level: str, foreign_ids: bool) -> Callable[..., bool | None]:
    """The authorisation property for one principal on one operation."""

    def authorisation(ctx: Any, response: Any, case: Any) -> bool | None:
        status = response.status_code
        content = response.content or b""
        if _marker_check(principal, level) and (MARKER.encode() in content or MARKER.lower().encode() in content):
            raise AssertionError(f"{principal.name} received tenant A data (marker in a {status} body)")
        if principal.name == "anonymous" and status != 401 and not _unroutable(case, response):
            raise AssertionError(f"anonymous got {status}, expected 401")
        if principal.name == "member" and level == "admin" and status != 403 and not _unroutable(case, response):
            raise AssertionError(f"a member got {status} from an admin operation, expected 403")
        if principal.name == "other_tenant" and foreign_ids and 200 <= status < 300:
            raise AssertionError(f"another tenant's admin got {status} for a tenant A object")
        return True

    return authorisation


def _marker_check(principal: Principal, level: str) -> bool:
    return principal.name in ("anonymous", "other_tenant") or (principal.name == "member" and level == "admin")


# --------------------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    operation: str
    principal: str
    mode: str
    calls: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    failures: dict[str, dict[str, Any]] = field(default_factory=dict)
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {"operation": self.operation, "principal": self.principal, "mode": self.mode, "calls": self.calls,
                "statuses": {str(k): v for k, v in sorted(self.statuses.items())},
                "failures": list(self.failures.values()), "seconds": round(self.seconds, 2)}  # fmt: skip


class _ServerErrorLog(logging.Handler):
    """Keeps the traceback of the last 5xx Django logged, for the failure report."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.last: str = ""

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            self.last = "".join(traceback.format_exception(*record.exc_info))[-3000:]


@dataclass
class FuzzConfig:
    examples: dict[str, int]  # principal name -> max examples per (operation, mode)
    seed: int | None = None  # None: derandomised (the same cases every run)
    base_url: str | None = None  # None: in-process WSGI
    modes: tuple[str, ...] = ("positive", "negative")
    operations: tuple[str, ...] = ()  # substrings of "METHOD /path"; empty = all


def load_schema(world: World, base_url: str | None) -> Any:
    import schemathesis

    headers = {"Authorization": f"Bearer {world.principals[-1].token}"}
    if base_url is None:
        from django.core.wsgi import get_wsgi_application

        return schemathesis.openapi.from_wsgi(SCHEMA_PATH, get_wsgi_application(), headers=headers)
    return schemathesis.openapi.from_url(base_url.rstrip("/") + SCHEMA_PATH, headers=headers, timeout=30)


def _id_for(path: str, world: World) -> int | None:
    if path.startswith("/api/v1/connectors/"):
        return world.ids["connector"]
    if path.startswith("/api/v1/admin/aliases/"):
        return world.ids["alias"]
    if path.startswith("/api/v1/admin/freshness-feeds/"):
        return world.ids["feed"]
    return None


def operation_labels(schema: Any) -> set[str]:
    return {f"{r.ok().method.upper()} {r.ok().path}" for r in schema.get_all_operations()}


def run_fuzz(world: World, config: FuzzConfig, *, guard: OutboundGuard | None = None, schema: Any = None,
             progress: Callable[[Outcome], None] | None = None) -> list[Outcome]:  # fmt: skip
    import hypothesis
    from hypothesis import HealthCheck, Phase, settings
    from hypothesis import strategies as st
    from schemathesis import GenerationMode
    from schemathesis.checks import not_a_server_error
    from schemathesis.generation.hypothesis.builder import add_examples
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        negative_data_rejection,
        response_headers_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    schema = schema if schema is not None else load_schema(world, config.base_url)
    base_checks = [not_a_server_error, status_code_conformance, content_type_conformance,
                   response_headers_conformance, response_schema_conformance, negative_data_rejection]  # fmt: skip
    errors = _ServerErrorLog()
    logging.getLogger("django.request").addHandler(errors)
    outcomes: list[Outcome] = []
    try:
        for result in schema.get_all_operations():
            operation = result.ok()
            label = f"{operation.method.upper()} {operation.path}"
            if config.operations and not any(s in label for s in config.operations):
                continue
            level = access_level(operation.method, operation.path)
            known_id = _id_for(operation.path, world)
            for principal in world.principals:
                for mode_name in config.modes:
                    mode = GenerationMode(mode_name)
                    outcome = Outcome(label, principal.name, mode_name)
                    strategy = operation.as_strategy(generation_mode=mode)
                    if known_id is not None:
                        strategy = st.one_of(
                            strategy, operation.as_strategy(generation_mode=mode, path_parameters={"id": known_id})
                        )
                    one = _case_runner(outcome, principal, level, known_id, base_checks, errors, config.base_url, world)
                    test = hypothesis.given(case=strategy)(one)
                    if mode_name == "positive":
                        # The schema's own request examples run first, every time (schemathesis's explicit phase):
                        # generated cases depend on string literals Hypothesis collects from the code base, so
                        # without them whether any case is valid for an operation changes with unrelated edits.
                        test = add_examples(test, operation, fill_missing=False)
                    n = config.examples.get(principal.name, config.examples.get("*", 5))
                    test = settings(max_examples=n, deadline=None, database=None,
                                    derandomize=config.seed is None, phases=[Phase.explicit, Phase.generate],
                                    suppress_health_check=list(HealthCheck),
                                    verbosity=hypothesis.Verbosity.quiet)(test)  # fmt: skip
                    if config.seed is not None:
                        test = hypothesis.seed(config.seed + zlib.crc32(f"{label}|{principal.name}|{mode_name}"
                                                                       .encode()))(test)  # fmt: skip
                    if guard is not None:
                        guard.current_operation = f"{label} as {principal.name}"
                    started = time.monotonic()
                    try:
                        test()
                    except hypothesis.errors.Unsatisfiable:
                        pass  # the operation has nothing to negate (e.g. no parameters): no negative cases
                    outcome.seconds = time.monotonic() - started
                    outcomes.append(outcome)
                    if progress is not None:
                        progress(outcome)
    finally:
        logging.getLogger("django.request").removeHandler(errors)
    return outcomes


def _case_runner(
    outcome: Outcome,
    principal: Principal,
    level: str,
    known_id: int | None,
    base_checks: list[Any],
    errors: _ServerErrorLog,
    base_url: str | None,
    world: World,
) -> Callable[[Any], None]:
    """The body hypothesis runs for each generated case: send it, check it, record what failed."""
    from schemathesis.core.failures import FailureGroup

    headers = principal.headers()

    def one(case: Any) -> None:
        if case.meta is None or case.meta.generation.mode == "positive":
            keep_urls_local(case)
        touches_urls = case.operation.path.startswith(("/api/v1/connectors", "/api/v1/admin/answer-settings"))
        if touches_urls:
            pin_urls(world)
        foreign = known_id is not None and case.path_parameters.get("id") == known_id
        checks = [*base_checks, error_carries_code, principal_check(principal, level, foreign)]
        errors.last = ""
        kwargs: dict[str, Any] = {"headers": headers}
        if base_url is not None:
            kwargs.update(base_url=base_url, timeout=60)
        try:
            response = case.call(**kwargs)
        except Exception as exc:  # a transport failure is a finding, not a crash of the run
            _add_failure(outcome, "transport_error", 0, f"{type(exc).__name__}: {exc}", case)
            return
        if touches_urls:
            pin_urls(world)
        outcome.calls += 1
        outcome.statuses[response.status_code] += 1
        try:
            case.validate_response(response, checks=checks, headers=headers)
        except FailureGroup as group:
            for failure in group.exceptions:
                _add_failure(outcome, failure.title, response.status_code, failure.message or "", case, errors.last,
                             category=category(failure))  # fmt: skip

    return one


SCHEMA_FAILURES = {"UndefinedStatusCode", "UndefinedContentType", "JsonSchemaError", "MissingContentType",
                   "MalformedMediaType", "ContentDeserializationError", "MissingHeaders", "MalformedJson",
                   "DiscriminatorMismatch"}  # fmt: skip


def category(failure: Any) -> str:
    """What a schemathesis failure says about the API, in the words of the brief."""
    name = type(failure).__name__
    if name in ("ServerError", "ContentTypeServerError"):
        return "server_error"
    if name in SCHEMA_FAILURES:
        return "schema"
    if name == "AcceptedNegativeData":
        return "invalid_input_accepted"
    title = getattr(failure, "title", "")
    if "error_carries_code" in title:
        return "error_without_code"
    if "authorisation" in title:
        return "authorisation"
    return "other"


def _add_failure(outcome: Outcome, title: str, status: int, message: str, case: Any, trace: str = "", *,
                 category: str = "transport") -> None:  # fmt: skip
    key = f"{title}|{status}|{message[:120]}"
    entry = outcome.failures.setdefault(key, {"check": title, "category": category, "status": status,
                                              "message": message[:1000],
                                              "count": 0, "example": _describe(case), "traceback": trace})  # fmt: skip
    entry["count"] += 1


def _describe(case: Any) -> dict[str, Any]:
    # A snapshot: the generator may reuse and mutate the objects of a case after it ran.
    try:
        body = json.loads(json.dumps(case.body))
    except (TypeError, ValueError):
        body = repr(case.body)[:500]
    return {"method": case.method, "path_parameters": json.loads(json.dumps(case.path_parameters or {}, default=str)),
            "query": json.loads(json.dumps(case.query or {}, default=str)), "body": body,
            "media_type": case.media_type}  # fmt: skip


def summarise(outcomes: list[Outcome]) -> dict[str, Any]:
    per_op: dict[str, dict[str, Any]] = {}
    for o in outcomes:
        row = per_op.setdefault(o.operation, {"calls": 0, "statuses": Counter(), "failures": 0})
        row["calls"] += o.calls
        row["statuses"].update(o.statuses)
        row["failures"] += sum(f["count"] for f in o.failures.values())
    return {op: {"calls": r["calls"], "statuses": {str(k): v for k, v in sorted(r["statuses"].items())},
                 "failures": r["failures"]} for op, r in sorted(per_op.items())}  # fmt: skip


def failure_lines(outcomes: list[Outcome]) -> list[str]:
    lines = []
    for o in outcomes:
        for f in o.failures.values():
            first = f["message"].strip().splitlines()[0] if f["message"].strip() else ""
            lines.append(f"{o.operation} as {o.principal} ({o.mode}): {f['category']}: {f['check']} [{f['status']}] "
                         f"x{f['count']}: "
                         f"{first[:200]} example={json.dumps(f['example'], default=str)[:300]}")  # fmt: skip
    return lines


def python_version() -> str:
    return sys.version.split()[0]
