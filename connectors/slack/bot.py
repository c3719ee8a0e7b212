"""The Cairn Slack bot: ``/ask``, ``@Cairn`` mentions, direct messages, feedback buttons.

Request path (all three entry points): verify the v0 signature over the raw body (5-minute
window, current + previous signing secret: ``connectors.slack.events.verify_signature``),
resolve the tenant from the unguessable hook uuid in the URL (``connectors.routing``), answer
Slack within 3 s, and do the work in a Celery task (acks_late, queued on commit).

Who may see the answer decides which documents it may use:

* a DM, or an ephemeral reply: the asker's own permissions;
* a message in a channel (others can read it): only documents readable by EVERY human member
  of the channel, i.e. the intersection of their readable ACL set ids.  A member we cannot map
  to a Cairn user (a Slack Connect user from another organisation, an unlinked guest) can read
  nothing, so the intersection is empty and the bot refuses in the channel and offers the
  asker an ephemeral answer instead;
* an unmapped asker gets an ephemeral note on how to link their account, and no answer.

Everything that goes back to Slack is escaped for mrkdwn (retrieved text is untrusted: it
must not ping ``<!channel>`` nor smuggle a disguised ``<https://evil|https://good>`` link).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeGuard
from urllib.parse import parse_qs, urlsplit

from celery import shared_task
from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from connectors.hooks import post_only
from connectors.slack.events import verify_signature

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 200_000
MAX_QUESTION_CHARS = 1000
MAX_CHANNEL_MEMBERS = 1000  # larger audiences are refused in-channel (offer ephemeral instead)
SLACK_SYSTEM_USERS = frozenset({"USLACKBOT"})
# Slack user / channel / team ids ("U024BE7LH", "C0GENERAL", "D0DM"); anything else in a request is
# not Slack's, and NUL or control characters would otherwise reach queries, cache keys and jobs.
SLACK_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")
TRACE_ID = re.compile(r"[0-9a-f]{32}")  # as the answer views and the feedback API issue them
LINK_HELP = (
    "I can't answer yet: your Slack account is not linked to a Cairn account. "
    "Ask your Cairn administrator to link it (Admin console → People → External identities), "
    "or make sure your Slack e-mail address is confirmed and matches your Cairn login."
)


def _settings() -> dict[str, int]:
    cfg = getattr(settings, "CAIRN", {})
    return {
        "user_per_minute": int(cfg.get("SLACK_BOT_USER_PER_MINUTE", 6)),
        "channel_per_minute": int(cfg.get("SLACK_BOT_CHANNEL_PER_MINUTE", 20)),
    }


# --- mrkdwn escaping ---------------------------------------------------------------------------------------


def escape_mrkdwn(text: str) -> str:
    """Slack's three control characters.  With ``<`` and ``>`` escaped, ``<!channel>``,
    ``<@U123>`` and ``<url|label>`` in retrieved text are shown literally, never acted on."""
    return (text or "").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def safe_link(url: str, label: str) -> str:
    """``<url|label>`` only for a plain http(s) URL; the label cannot break out of the link."""
    parts = urlsplit(url or "")
    clean_label = escape_mrkdwn(label or url or "source").replace("|", "¦")[:150]
    if parts.scheme not in ("http", "https") or not parts.netloc or any(c in url for c in "<>| \n\r\t"):
        return clean_label
    return f"<{url}|{clean_label}>"


# --- Slack Web API -----------------------------------------------------------------------------------------


class SlackApi:
    """The four Web API methods the bot uses, through the connector's rate-limit-aware client."""

    def __init__(self, instance: Any) -> None:
        from connectors.crypto import decrypt_json
        from connectors.runtime import Outbound, bounded_sleep
        from connectors.slack.client import SLACK_API_URL, SlackClient

        creds = decrypt_json(instance.credentials_encrypted)
        base_url = str(instance.config.get("base_url") or SLACK_API_URL)
        Outbound(instance.allow_private_network, instance.tls_ca_file).check_url(base_url)
        # bounded_sleep waits out a short Retry-After in-process and raises RateLimited for a
        # long one, which the task turns into a Celery retry with that countdown.
        self.client = SlackClient(str(creds.get("bot_token") or creds.get("token") or ""), base_url=base_url,
                                  sleep=bounded_sleep)  # fmt: skip

    def _post(self, method: str, body: dict[str, Any]) -> None:
        """chat.* with a JSON body (blocks do not belong in a query string); same 429 handling."""
        from slack_sdk.errors import SlackApiError, SlackClientError

        from connectors.base import ConnectorError
        from connectors.slack.client import SlackMethodError, parse_retry_after

        try:
            self.client.web.api_call(method, json={k: v for k, v in body.items() if v is not None})
        except SlackApiError as exc:
            status = getattr(exc.response, "status_code", 0)
            data = exc.response.data if isinstance(exc.response.data, dict) else {}
            retry = None
            if status == 429:
                retry = parse_retry_after((exc.response.headers or {}).get("retry-after")
                                          or (exc.response.headers or {}).get("Retry-After")) or 1.0  # fmt: skip
            code = str(data.get("error") or f"http_{status}")
            raise SlackMethodError(
                f"Slack {method} failed: {code}", code=code, item=method, retry_after=retry
            ) from None
        except (SlackClientError, OSError) as exc:
            raise ConnectorError(f"Could not reach Slack ({method}): {type(exc).__name__}", item=method) from None

    def post_message(self, channel: str, text: str, blocks: list[dict[str, Any]], thread_ts: str | None) -> None:
        self._post("chat.postMessage", {"channel": channel, "text": text, "blocks": blocks, "thread_ts": thread_ts,
                                        "unfurl_links": False, "unfurl_media": False})  # fmt: skip

    def post_ephemeral(self, channel: str, user: str, text: str, blocks: list[dict[str, Any]] | None = None,
                       thread_ts: str | None = None) -> None:  # fmt: skip
        self._post("chat.postEphemeral", {"channel": channel, "user": user, "text": text, "blocks": blocks,
                                          "thread_ts": thread_ts})  # fmt: skip

    def members(self, channel: str) -> list[str]:
        out: list[str] = []
        for member in self.client.iter_members(channel):
            out.append(member)
            if len(out) > MAX_CHANNEL_MEMBERS:
                break
        return out

    def user_info(self, user: str) -> dict[str, Any]:
        return self.client.user_info(user)


ApiFactory = Callable[[Any], SlackApi]
api_factory: ApiFactory = SlackApi  # tests and alternative transports may swap this


# --- identities and audiences ------------------------------------------------------------------------------


def cairn_user_for(slack_user: str) -> Any:
    """The Cairn user a Slack account is mapped to (verified e-mail or admin), else None."""
    from tenants.models import ExternalIdentity

    identity = (
        ExternalIdentity.objects.filter(principal=f"slack:user:{slack_user}", deactivated=False, is_bot=False)
        .select_related("user")
        .first()
    )
    if identity is None or identity.user is None or not identity.user.is_active:
        return None
    return identity.user


def audience_permission(api: SlackApi, channel: str, asker_perm: Any) -> tuple[Any | None, str]:
    """The permission context for an answer every member of ``channel`` will see.

    Returns ``(perm, "")`` or ``(None, reason)``.  The readable set is the intersection over
    every human member; an unmappable member (external, unlinked guest) reads nothing.
    """
    from retrieval.permissions import PermissionContext, fingerprint_of, permission_context

    members = api.members(channel)
    if len(members) > MAX_CHANNEL_MEMBERS:
        return None, "too_many_members"
    readable: set[int] = set(asker_perm.readable_acl_set_ids)
    for member in members:
        if member in SLACK_SYSTEM_USERS:
            continue
        user = cairn_user_for(member)
        if user is None:
            info = _user_info_cached(api, member)
            if info.get("is_bot") or info.get("deleted"):
                continue  # bots and deactivated accounts do not read the reply
            return None, "unmapped_member"
        if user.pk == asker_perm.user_id:
            continue
        readable &= set(permission_context(user).readable_acl_set_ids)
        if not readable:
            return None, "empty_intersection"
    ids = tuple(sorted(readable or ()))
    if not ids:
        return None, "empty_intersection"
    perm = PermissionContext(asker_perm.tenant_id, asker_perm.user_id, frozenset(), ids, fingerprint_of(ids),
                             asker_perm.acl_version)  # fmt: skip
    return perm, ""


def _user_info_cached(api: SlackApi, user: str) -> dict[str, Any]:
    try:
        return api.user_info(user)
    except Exception:  # noqa: BLE001 - unknown member: treat as a human we cannot map (fail closed)
        return {}


# --- throttling --------------------------------------------------------------------------------------------


def throttled(tenant_id: int, user: str, channel: str) -> bool:
    """Fixed one-minute windows per Slack user and per channel (Redis counters)."""
    limits = _settings()
    window = int(time.time() // 60)
    for scope, ident, limit in (("u", user, limits["user_per_minute"]), ("c", channel, limits["channel_per_minute"])):
        key = f"slackbot:rl:{tenant_id}:{scope}:{ident}:{window}"
        cache.add(key, 0, timeout=120)
        try:
            count = cache.incr(key)
        except ValueError:
            count = 1
        if count > limit:
            return True
    return False


# --- Block Kit ---------------------------------------------------------------------------------------------


def _day(value: Any) -> str:
    return str(value)[:10] if value else "unknown date"


def answer_blocks(response: Mapping[str, Any], *, trace_id: str, audience: str) -> tuple[str, list[dict[str, Any]]]:
    """The answer as Block Kit: claims with [n] markers, sources, "as of", feedback buttons."""
    answer = response.get("answer") or {}
    evidence = {e["id"]: e for e in response.get("evidence", [])}
    order: list[str] = []
    lines: list[str] = []
    for claim in answer.get("claims", []):
        markers = []
        for c in claim.get("citations", []):
            if c["evidence_id"] not in order:
                order.append(c["evidence_id"])
            markers.append(f"[{order.index(c['evidence_id']) + 1}]")
        lines.append(f"{escape_mrkdwn(claim.get('text', ''))} {''.join(markers)}".strip())
    blocks: list[dict[str, Any]] = []
    abstention = answer.get("abstention")
    if abstention or not lines:
        reason = (abstention or {}).get("reason", "no_answer")
        msg = escape_mrkdwn((abstention or {}).get("message", "No confident answer."))
        blocks.append(
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": f"*No confident answer* ({reason.replace('_', ' ')}). {msg}"},
            }
        )
        results = response.get("results") or []
        if results:
            items = [f"{i + 1}. {safe_link(r.get('url', ''), r.get('title') or '(untitled)')} · "
                     f"{escape_mrkdwn(r.get('source_system', ''))} · updated {_day(r.get('updated_at'))}"
                     for i, r in enumerate(results[:5])]  # fmt: skip
            blocks.append(
                {"type": "section", "text": {"type": "mrkdwn", "text": "*Closest results:*\n" + "\n".join(items)}}
            )
        fallback = "No confident answer."
    else:
        body = "\n".join(f"• {line}" for line in lines)
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": body[:2900]}})
        fallback = " ".join(escape_mrkdwn(c.get("text", "")) for c in answer.get("claims", []))[:2900]
    if order:
        src_lines = []
        for n, eid in enumerate(order, start=1):
            e = evidence.get(eid, {})
            where = " · ".join(escape_mrkdwn(x) for x in (e.get("source_system", ""), e.get("container", "")) if x)
            src_lines.append(f"[{n}] {safe_link(e.get('canonical_url', ''), e.get('title') or '(untitled)')}"
                             f" · {where} · updated {_day(e.get('updated_at'))}")  # fmt: skip
        blocks.append(
            {"type": "context", "elements": [{"type": "mrkdwn", "text": "*Sources*\n" + "\n".join(src_lines)[:2900]}]}
        )
    dropped = answer.get("dropped_claims") or 0
    as_of = response.get("as_of") or {}
    note = (f"As of: content {_stamp(as_of.get('content'))}, permissions {_stamp(as_of.get('permissions'))}"
            f" · {escape_mrkdwn(audience)}")  # fmt: skip
    if dropped:
        note += f" · {dropped} unsupported claim{'s' if dropped != 1 else ''} removed"
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": note}]})
    buttons = [
        {"type": "button", "action_id": f"cairn_feedback_{verdict}", "text": {"type": "plain_text", "text": label},
         "value": json.dumps({"trace_id": trace_id, "verdict": verdict})}
        for verdict, label in (("wrong", "Wrong"), ("unsupported", "Not supported"), ("stale", "Out of date"))
    ]  # fmt: skip
    blocks.append({"type": "actions", "block_id": f"cairn_feedback:{trace_id}", "elements": buttons})
    return fallback or "Cairn answer", blocks


def _stamp(value: Any) -> str:
    return str(value).replace("T", " ")[:16] + " UTC" if value else "never"


def offer_ephemeral_blocks(question: str, reason: str) -> tuple[str, list[dict[str, Any]]]:
    why = {
        "empty_intersection": "No document that answers this is readable by everyone in this channel.",
        "unmapped_member": "This channel has members (for example from another organisation) whose access "
        "Cairn cannot check, so I won't answer here.",
        "too_many_members": "This channel is too large for me to check everyone's access.",
    }.get(reason, "I can't answer this in the channel.")
    text = f"{why} Want an answer only you can see?"
    value = json.dumps({"q": question[:MAX_QUESTION_CHARS]})
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": escape_mrkdwn(text)}},
        {"type": "actions", "block_id": "cairn_offer", "elements": [
            {"type": "button", "action_id": "cairn_answer_ephemeral", "style": "primary",
             "text": {"type": "plain_text", "text": "Answer just for me"}, "value": value}]},
    ]  # fmt: skip
    return text, blocks


# --- the work (Celery) -------------------------------------------------------------------------------------


@shared_task(name="slackbot.answer", acks_late=True, bind=True, max_retries=5, queue="answers")
def answer_task(self: Any, tenant_id: int, instance_pk: int, job: dict[str, Any]) -> str:
    from cairn.http import RateLimited

    # acks_late: a redelivered job must not post twice.
    done_key = f"slackbot:done:{tenant_id}:{job['dedupe']}"
    if cache.get(done_key):
        return "duplicate"
    from connectors.base import ConnectorError

    try:
        outcome = run_job(tenant_id, instance_pk, job)
    except RateLimited as exc:
        raise self.retry(countdown=max(1.0, float(exc.retry_after or 1.0))) from None
    except ConnectorError as exc:
        if exc.retry_after is None:  # not a rate limit: a real failure, logged by Celery
            raise
        raise self.retry(countdown=max(1.0, float(exc.retry_after))) from None
    cache.set(done_key, 1, timeout=86400)
    return outcome


def run_job(tenant_id: int, instance_pk: int, job: dict[str, Any]) -> str:
    """Answer one question for one audience and post it; returns what happened (for logs/tests)."""
    from answers import engine
    from answers.query_parser import QueryError
    from connectors.models import ConnectorInstance
    from retrieval.permissions import PermissionContext, permission_context
    from tenants.audit import do_record_answer_audit
    from tenants.context import tenant_context

    channel, slack_user = job["channel"], job["user"]
    thread_ts = job.get("thread_ts")
    with tenant_context(tenant_id):
        instance = ConnectorInstance.objects.get(pk=instance_pk)
        api = api_factory(instance)
        user = cairn_user_for(slack_user)
    if user is None:
        api.post_ephemeral(channel, slack_user, LINK_HELP, thread_ts=thread_ts)
        return "unmapped"
    ephemeral = job["audience"] == "ephemeral"
    private = ephemeral or job["audience"] == "dm"
    with tenant_context(tenant_id):
        asker = permission_context(user)
        perm: PermissionContext | None  # None: the channel audience may not read an answer
        if private:
            perm, reason = asker, ""
            audience = "Answered from what you can read" + (" (only you can see this)" if ephemeral else "")
        else:
            perm, reason = audience_permission(api, channel, asker)
            audience = "Answered only from documents everyone in this channel can read"
        if perm is None:
            response = None
        else:
            try:
                response = engine.answer_question(perm, job["question"], engine.RequestFilters())
            except QueryError as exc:
                # A question the parser rejects (e.g. operators only) gets an explanation, not silence.
                api.post_ephemeral(channel, slack_user, f"I could not read that question: {exc.message}",
                                   thread_ts=thread_ts)  # fmt: skip
                return f"query_error:{exc.code}"
            trace_id = hashlib.sha256(f"{job['dedupe']}:{datetime.now(UTC).isoformat()}".encode()).hexdigest()[:32]
            response["trace"] = {**response.get("trace", {}), "id": trace_id}
            do_record_answer_audit(perm, job["question"], response, username=user.username, via="slack",
                                   channel=f"slack:{job['audience']}")  # fmt: skip
    if response is None:
        text, blocks = offer_ephemeral_blocks(job["question"], reason)
        api.post_ephemeral(channel, slack_user, text, blocks, thread_ts=thread_ts)
        return f"refused:{reason}"
    text, blocks = answer_blocks(response, trace_id=trace_id, audience=audience)
    if ephemeral:
        api.post_ephemeral(channel, slack_user, text, blocks, thread_ts=thread_ts)
    else:
        api.post_message(channel, text, blocks, thread_ts)
    return "answered"


def enqueue(tenant_id: int, instance_pk: int, job: dict[str, Any]) -> None:
    """Queue the answer after the surrounding transaction commits."""
    transaction.on_commit(lambda: answer_task.apply_async(args=(tenant_id, instance_pk, job), queue="answers"))


# --- the Events API hook (called by connectors.slack.views.events, inside tenant_context) ------------------


def handle_bot_event(instance: Any, event: Mapping[str, Any]) -> str:
    """``app_mention`` in a channel (answer in its thread, channel audience) or a DM (asker's ACL)."""
    from tenants.context import require_tenant_id

    if event.get("bot_id") or event.get("subtype"):
        return "ignored"  # our own posts, edits, joins: never answer a bot (loops)
    user, channel, raw_text = event.get("user"), event.get("channel"), event.get("text")
    if not (_is_slack_id(user) and _is_slack_id(channel)) or not isinstance(raw_text, (str, type(None))):
        return "ignored"  # not the shape Slack sends: never queue work for it
    text = _strip_mentions(raw_text or "")
    tenant_id = require_tenant_id()
    is_dm = event.get("channel_type") == "im" or channel.startswith("D")
    thread_ts = str(event.get("thread_ts") or event.get("ts") or "") or None
    api = None
    if throttled(tenant_id, user, channel):
        api = api_factory(instance)
        api.post_ephemeral(channel, user, "You're asking faster than I can answer. Try again in a minute.",
                           thread_ts=thread_ts)  # fmt: skip
        return "throttled"
    if not text:
        return "empty"
    job = {"question": text[:MAX_QUESTION_CHARS], "channel": channel, "user": user, "thread_ts": thread_ts,
           "audience": "dm" if is_dm else "channel",
           "dedupe": f"ev:{channel}:{event.get('ts') or event.get('event_ts')}"}  # fmt: skip
    enqueue(tenant_id, instance.pk, job)
    return "queued"


def _strip_mentions(text: str) -> str:
    import re

    return " ".join(re.sub(r"<@[A-Z0-9]+(\|[^>]*)?>", " ", text).split())


# --- HTTP views: /ask and interactivity --------------------------------------------------------------------


def _verified(request: HttpRequest, hook_uuid: str) -> tuple[int, Any] | HttpResponse:
    """Route by hook uuid and check the signature; returns ``(tenant_id, instance)`` or an error response."""
    from connectors.crypto import decrypt_json
    from connectors.hooks import body_too_large, error, load_instance, route
    from connectors.slack.factory import signing_secrets
    from tenants.context import tenant_context

    if body_too_large(request) or len(request.body) > MAX_BODY_BYTES:
        return error("body_too_large", "The request body is too large.", 413)
    found = route("slack", hook_uuid)
    if found is None:
        return error("unknown_connector", "No such connector.", 404)
    tenant_id, instance_pk = found
    with tenant_context(tenant_id):
        instance = load_instance(instance_pk)
        secrets = signing_secrets(decrypt_json(instance.credentials_encrypted))
    ok = verify_signature(secrets, request.headers.get("X-Slack-Request-Timestamp", ""), request.body,
                          request.headers.get("X-Slack-Signature", ""), now=time.time())  # fmt: skip
    if not ok:
        return error("invalid_signature", "The request signature is missing, wrong or too old.", 401)
    return tenant_id, instance


def _form(request: HttpRequest) -> dict[str, str]:
    parsed = parse_qs(request.body.decode("utf-8", "replace"), keep_blank_values=True)
    return {k: v[0] for k, v in parsed.items()}


def _is_slack_id(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and SLACK_ID.fullmatch(value) is not None


def _mapping(value: Any) -> Mapping[str, Any]:
    """A sub-object of an untrusted payload, or {} when it has another type."""
    return value if isinstance(value, Mapping) else {}


def _ephemeral(text: str, status: int = 200, code: str = "") -> JsonResponse:
    body: dict[str, Any] = {"response_type": "ephemeral", "text": text}
    if code:  # a refusal also carries the machine-readable error (Slack shows only ``text``)
        body["error"] = {"code": code, "message": text}
    return JsonResponse(body, status=status)


@csrf_exempt
@post_only
def slash_command(request: HttpRequest, hook_uuid: str) -> HttpResponse:
    """``/ask [--me] question``: acknowledged at once; the answer is posted by the task.

    In a channel the answer is a normal message (channel audience); ``--me`` (or a DM)
    answers from the asker's own permissions, ephemerally in a channel.
    """
    from tenants.context import tenant_context

    checked = _verified(request, hook_uuid)
    if isinstance(checked, HttpResponse):
        return checked
    tenant_id, instance = checked
    form = _form(request)
    team = instance.config.get("team_id")
    if team and form.get("team_id") not in (None, "", team):
        return _ephemeral("This workspace is not connected to Cairn.", 403, "wrong_workspace")
    user, channel = form.get("user_id", ""), form.get("channel_id", "")
    text = " ".join(form.get("text", "").split())
    if not _is_slack_id(user) or not _is_slack_id(channel):
        return _ephemeral("Malformed slash command.", 400, "invalid_command")
    private = False
    for flag in ("--me", "-me", "--private"):
        if text.startswith(flag + " ") or text == flag:
            private, text = True, text[len(flag) :].strip()
    if not text:
        return _ephemeral("Usage: /ask [--me] your question — --me answers only you, from what you can read.")
    with tenant_context(tenant_id):
        if cairn_user_for(user) is None:
            return _ephemeral(LINK_HELP)
        if throttled(tenant_id, user, channel):
            return _ephemeral("You're asking faster than I can answer. Try again in a minute.")
        is_dm = channel.startswith("D")
        audience = "dm" if is_dm else ("ephemeral" if private else "channel")
        job = {"question": text[:MAX_QUESTION_CHARS], "channel": channel, "user": user, "thread_ts": None,
               "audience": audience, "dedupe": f"cmd:{form.get('trigger_id') or hashlib.sha256(request.body).hexdigest()}"}  # fmt: skip
        enqueue(tenant_id, instance.pk, job)
    note = (
        "only you will see the answer"
        if audience != "channel"
        else "the answer will use only documents everyone here can read"
    )
    return JsonResponse({"response_type": "ephemeral", "text": f"Looking that up… ({note})"})


@csrf_exempt
@post_only
def interactivity(request: HttpRequest, hook_uuid: str) -> HttpResponse:
    """Block actions: feedback buttons, and "Answer just for me" after a refused channel answer."""
    from tenants.context import tenant_context

    checked = _verified(request, hook_uuid)
    if isinstance(checked, HttpResponse):
        return checked
    tenant_id, instance = checked
    from connectors.hooks import BadJson, parse_json_body

    try:
        payload = parse_json_body(_form(request).get("payload", ""))
    except BadJson as exc:
        return JsonResponse({"error": {"code": "invalid_payload", "message": f"payload: {exc}"}}, status=400)
    if not isinstance(payload, dict) or payload.get("type") != "block_actions":
        return HttpResponse(status=200)  # other interaction types: acknowledged, nothing to do
    # Every sub-object is untrusted: a wrong type reads as absent instead of raising (a 500).
    container = _mapping(payload.get("container"))
    slack_user = _mapping(payload.get("user")).get("id") or ""
    channel = _mapping(payload.get("channel")).get("id") or container.get("channel_id") or ""
    if not (slack_user == "" or _is_slack_id(slack_user)) or not (channel == "" or _is_slack_id(channel)):
        return JsonResponse({"error": {"code": "invalid_payload", "message": "malformed user or channel id"}},
                            status=400)  # fmt: skip
    thread_ts = container.get("thread_ts") or _mapping(payload.get("message")).get("thread_ts")
    thread_ts = thread_ts if isinstance(thread_ts, str) and SLACK_ID.fullmatch(thread_ts) else None
    actions = payload.get("actions")
    results: list[str] = []
    with tenant_context(tenant_id):
        user = cairn_user_for(slack_user)
        if user is None:
            return _ephemeral(LINK_HELP)
        for action in actions if isinstance(actions, list) else []:
            if not isinstance(action, Mapping):
                continue
            action_id = str(action.get("action_id") or "")
            raw_value = action.get("value") or "{}"
            try:
                value = parse_json_body(raw_value) if isinstance(raw_value, str) else None
            except BadJson:
                continue
            if not isinstance(value, dict):
                continue
            if action_id.startswith("cairn_feedback_"):
                results.append(_record_feedback(user, value))
            elif action_id == "cairn_answer_ephemeral" and channel and isinstance(value.get("q"), str):
                # The same per-user and per-channel budget as /ask and mentions: a button
                # can be pressed (or a signed payload replayed with new trigger ids) as fast.
                if throttled(tenant_id, slack_user, channel):
                    results.append("throttled")
                    continue
                job = {"question": value["q"][:MAX_QUESTION_CHARS], "channel": channel, "user": slack_user,
                       "thread_ts": thread_ts, "audience": "ephemeral",
                       "dedupe": f"act:{payload.get('trigger_id') or action.get('action_ts')}"}  # fmt: skip
                enqueue(tenant_id, instance.pk, job)
                results.append("queued")
    if "recorded" in results:
        return _ephemeral("Thanks, your feedback was recorded.")
    if "throttled" in results and "queued" not in results:
        return _ephemeral("You're asking faster than I can answer. Try again in a minute.")
    if "queued" in results:
        return _ephemeral("Looking that up for you only…")
    return _ephemeral("That feedback could not be recorded." if results else "Nothing to do.")


def _record_feedback(user: Any, value: Mapping[str, Any]) -> str:
    from cairn.api import ApiError
    from tenants.audit import do_record_audit_event
    from tenants.feedback import do_record_feedback

    verdict, trace_id = value.get("verdict"), value.get("trace_id")
    if (
        verdict not in ("wrong", "unsupported", "stale")
        or not isinstance(trace_id, str)
        or not TRACE_ID.fullmatch(trace_id)
    ):
        return "invalid"
    try:
        # A whole-answer flag: bound to the audited answer this same user received.
        with transaction.atomic():
            fb = do_record_feedback(user_id=user.pk, trace_id=trace_id, target="source", verdict=verdict,
                                    comment="via Slack (whole answer)")  # fmt: skip
            do_record_audit_event(actor=user, action="feedback.recorded", target_type="feedback", target_id=fb.pk,
                                  details={"via": "slack", "verdict": verdict, "trace_id": trace_id})  # fmt: skip
    except ApiError:
        return "invalid"
    return "recorded"
