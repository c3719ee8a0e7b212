"""How the console shows audit rows: a one-line summary, a key/value detail table, and the question rule.

The audit log stores an answer's question verbatim (``tenants.audit.answer_audit_details``), but an
admin is a reader like any other: a question about documents the admin may not read can itself say
what those documents hold ("is Dana on the layoff list?").  So the console shows a question only when
the admin may read every document its answer rests on (``drawn_on``); otherwise the question's SHA-256, which still
lets the admin match a question the employee tells them about.  The plan (it quotes the question) is
withheld with it.  The quality page shows questions through the same function, so no page reveals
more than the audit log does.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from retrieval.models import Document
from retrieval.permissions import permission_context
from tenants.models import AuditEvent, User

WITHHELD = "[withheld: the answer drew on documents you may not read]"

CATEGORIES = {
    # filter name -> (label, action prefixes)
    "questions": ("Questions and answers", ("answer.",)),
    "logins": ("Logins", ("auth.", "sso.login")),
    "flags": ("Flags", ("feedback.",)),
}


def question_sha256(question: str) -> str:
    return hashlib.sha256(question.encode()).hexdigest()


def drawn_on(details: dict[str, Any]) -> set[int]:
    """The documents an answer row says the answer rests on.

    An answer rests on the documents its claims cite; an abstention on everything it showed instead
    (its evidence and its ranked results), since the asker read those in place of an answer.
    """
    evidence = [e for e in details.get("evidence") or [] if isinstance(e, dict)]
    if details.get("claims"):
        ids = {e.get("document_id") for e in evidence if e.get("cited")}
    else:
        ids = {e.get("document_id") for e in evidence} | set(details.get("result_document_ids") or [])
    return {int(i) for i in ids if isinstance(i, int) or (isinstance(i, str) and i.isdigit())}


def readable_documents(user: User, rows: Iterable[AuditEvent]) -> set[int]:
    """Of the documents these rows' answers drew on, the ones ``user`` may read (call in tenant_context).

    A document that no longer exists is not in the result: fail closed, as the feedback queue does.
    """
    return readable_among(user, [row.details or {} for row in rows if row.kind == AuditEvent.Kind.ANSWER])


def readable_among(user: User, answers: Iterable[dict[str, Any]]) -> set[int]:
    """``readable_documents`` for answer rows' details."""
    wanted: set[int] = set()
    for details in answers:
        wanted |= drawn_on(details)
    if not wanted:
        return set()
    perm = permission_context(user)
    if perm.empty:
        return set()
    return set(Document.objects.filter(pk__in=wanted, acl_set_id__in=perm.readable_acl_set_ids)
               .values_list("pk", flat=True))  # fmt: skip


@dataclass(frozen=True)
class Question:
    text: str  # the question, or "" when withheld
    sha256: str

    @property
    def withheld(self) -> bool:
        return not self.text

    def __str__(self) -> str:
        return self.text or f"sha256:{self.sha256[:16]}…"


def shown_question(details: dict[str, Any], readable: set[int]) -> Question | None:
    question = details.get("question")
    if not isinstance(question, str):
        return None
    visible = drawn_on(details) <= readable
    return Question(question if visible else "", question_sha256(question))


def outcome(details: dict[str, Any]) -> str:
    abstention = details.get("abstention")
    if isinstance(abstention, dict) and abstention.get("reason"):
        return f"abstained ({abstention['reason']})"
    return f"answered, {len(details.get('claims') or [])} claim{'s' if len(details.get('claims') or []) != 1 else ''}"


def summary(row: AuditEvent, readable: set[int]) -> str:
    d = row.details or {}
    if row.kind == AuditEvent.Kind.ANSWER:
        q = shown_question(d, readable)
        return f"{q} → {outcome(d)}" if q else outcome(d)
    if row.action.startswith(("auth.", "sso.")):
        where = d.get("client_address") or ""
        return f"{row.action.split('.', 1)[1].replace('_', ' ')}" + (f" from {where}" if where else "")
    if row.action.startswith("feedback."):
        return f"flagged {d.get('target', '')} as {d.get('verdict', '')}".strip()
    return ""


def _text(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float, str)):
        return str(value)
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def detail_rows(row: AuditEvent, readable: set[int]) -> list[tuple[str, str, bool]]:
    """The row's details as (key, text, is it a block) rows: nested objects one level deep as ``outer.inner``."""
    return [(k, v, "\n" in v) for k, v in _detail_pairs(row, readable)]


def _detail_pairs(row: AuditEvent, readable: set[int]) -> list[tuple[str, str]]:
    d = dict(row.details or {})
    out: list[tuple[str, str]] = []
    if row.kind == AuditEvent.Kind.ANSWER:
        q = shown_question(d, readable)
        if q is not None:
            out.append(("question", q.text or WITHHELD))
            out.append(("question sha256", q.sha256))
            if q.withheld and "plan" in d:
                d["plan"] = WITHHELD
        out.append(("outcome", outcome(d)))
        d.pop("question", None)
    for key in sorted(d):
        value = d[key]
        if isinstance(value, dict) and value and all(not isinstance(v, (dict, list)) for v in value.values()):
            out.extend((f"{key}.{k}", _text(v)) for k, v in sorted(value.items()))
        else:
            out.append((key, _text(value)))
    return out
