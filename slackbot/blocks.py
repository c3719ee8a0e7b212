"""What goes back to Slack: mrkdwn escaping (retrieved text is untrusted), answer and offer blocks."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

MAX_QUESTION_CHARS = 1000


LINK_HELP = (
    "I can't answer yet: your Slack account is not linked to a Cairn account. "
    "Ask your Cairn administrator to link it (Admin console → People → External identities), "
    "or make sure your Slack e-mail address is confirmed and matches your Cairn login."
)


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


def _day(value: Any) -> str:
    return str(value)[:10] if value else "unknown date"


def answer_blocks(response: Mapping[str, Any], *, trace_id: str, audience: str) -> tuple[str, list[dict[str, Any]]]:
    """The answer as Block Kit: claims with [n] markers, sources, "as of", feedback buttons."""
    answer = response.get("answer") or {}
    evidence = {e["id"]: e for e in response.get("evidence", [])}
    order: list[str] = []
    lines: list[str] = []
    extra_lines: list[str] = []  # stated past the writer's four: shown apart, as the portal does
    for claim in answer.get("claims", []):
        markers = []
        for c in claim.get("citations", []):
            if c["evidence_id"] not in order:
                order.append(c["evidence_id"])
            markers.append(f"[{order.index(c['evidence_id']) + 1}]")
        line = f"{escape_mrkdwn(claim.get('text', ''))} {''.join(markers)}".strip()
        (extra_lines if claim.get("extra") else lines).append(line)
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
        if answer.get("conclusion"):  # computed in code from the cited figures, so labelled, not quoted
            blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": (
                "*Computed from the cited sources:* " + escape_mrkdwn(str(answer["conclusion"])))[:2900]}})  # fmt: skip
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": body[:2900]}})
        if extra_lines:
            also = "*Also in the sources:*\n" + "\n".join(f"• {line}" for line in extra_lines)
            blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": also[:2900]}})
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
    unanswered = [escape_mrkdwn(str(p.get("question", ""))) for p in answer.get("unanswered_parts") or []]
    if unanswered and not abstention:
        blocks.append({"type": "context", "elements": [
            {"type": "mrkdwn", "text": "*Not answered from your sources:* " + " · ".join(unanswered)[:2900]}]})  # fmt: skip
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
