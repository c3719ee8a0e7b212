"""The tenant audit log: append-only, hash-chained per tenant, exportable.

Each row stores ``prev_hash`` (the previous row's ``hash``, or 64 zeros for a
tenant's first row) and ``hash = sha256(prev_hash || canonical JSON of the
row)``.  Appends take a per-tenant transaction-level advisory lock, so two
concurrent writers cannot both chain onto the same predecessor (the unique
``(tenant, seq)`` constraint is the backstop).  ``verify_chain`` recomputes
everything and reports the first row that does not match.

Nothing secret is ever written: details pass through ``scrub`` (credential-like
keys and token-shaped values are replaced), and answer records keep digests of
claim text and quotes rather than source content (admins export this log, and
an admin may not be allowed to read every source an employee asked about).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from tenants.context import require_tenant_id
from tenants.models import AuditEvent

GENESIS = "0" * 64
_LOCK_NAMESPACE = 0x0A0D17  # first key of pg_advisory_xact_lock(int, int): "audit"

_SECRET_KEY_RE = re.compile(
    r"pass(word|wd)?|secret|token|api[_-]?key|authori[sz]ation|credential|private[_-]?key|cookie|session", re.I
)
_SECRET_VALUE_RES = [
    re.compile(r"cairn_[0-9a-f]{8}_[A-Za-z0-9_\-]{20,}"),  # our API tokens
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{12,}=*"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),  # Slack tokens
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
]
REDACTED = "[redacted]"


def scrub(value: Any, *, key: str = "") -> Any:
    """Replace anything credential-shaped before it reaches the log."""
    if key and _SECRET_KEY_RE.search(key):
        return REDACTED
    if isinstance(value, dict):
        return {str(k): scrub(v, key=str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub(v) for v in value]
    if isinstance(value, str):
        for rx in _SECRET_VALUE_RES:
            value = rx.sub(REDACTED, value)
        return value
    return value


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _normalise_json(obj: Any) -> Any:
    # Store exactly what we hash: one round trip through JSON makes tuples lists,
    # dates strings, and keys strings, as jsonb will return them.
    return json.loads(canonical_json(obj))


def canonical_payload(row: AuditEvent) -> dict[str, Any]:
    created = row.created_at.astimezone(UTC).isoformat(timespec="microseconds")
    return {
        "tenant_id": row.tenant_id,
        "seq": row.seq,
        "created_at": created,
        "kind": row.kind,
        "action": row.action,
        "actor_user_id": row.actor_user_id,
        "actor_username": row.actor_username,
        "target_type": row.target_type,
        "target_id": row.target_id,
        "trace_id": row.trace_id,
        "details": row.details,
    }


def compute_hash(prev_hash: str, row: AuditEvent) -> str:
    return hashlib.sha256((prev_hash + "\n" + canonical_json(canonical_payload(row))).encode()).hexdigest()


def _append(*, kind: str, action: str, actor_user_id: int | None, actor_username: str, target_type: str,
            target_id: str, trace_id: str, details: dict[str, Any]) -> AuditEvent:  # fmt: skip
    tenant_id = require_tenant_id()
    with transaction.atomic():
        with connection.cursor() as cur:
            # Held until the surrounding transaction ends; serialises appends per tenant only.
            cur.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_LOCK_NAMESPACE, tenant_id])
        last = AuditEvent.objects.order_by("-seq").values_list("seq", "hash").first()
        seq, prev = (last[0] + 1, last[1]) if last else (1, GENESIS)
        row = AuditEvent(
            tenant_id=tenant_id, seq=seq, created_at=timezone.now(),
            kind=kind, action=action[:100], actor_user_id=actor_user_id, actor_username=actor_username[:150],
            target_type=target_type[:100], target_id=str(target_id)[:200], trace_id=trace_id[:64],
            details=_normalise_json(scrub(details)), prev_hash=prev,
        )  # fmt: skip
        row.hash = compute_hash(prev, row)
        row.save(force_insert=True)
        return row


@dataclass(frozen=True)
class Actor:
    """Who did it and through which surface: what every admin ``do_*`` action takes and records.

    ``via`` is ``console``, ``api-token``, ``api-session``, ``portal``, ``slack`` or ``system`` (a
    management command, the demo loader, a test fixture acting as the operator).
    """

    user_id: int | None
    username: str
    via: str

    @classmethod
    def of(cls, user: Any, via: str) -> Actor:
        if isinstance(user, Actor):
            return user
        return cls(getattr(user, "pk", None), getattr(user, "username", "") or "", via)


SYSTEM = Actor(None, "", "system")


def do_record_audit_event(*, actor: Any, action: str, target_type: str, target_id: str | int,
                          details: dict[str, Any] | None = None, trace_id: str = "") -> AuditEvent:  # fmt: skip
    """Record an admin action in the active tenant's chain (inside the caller's transaction).

    ``actor`` is an ``Actor`` (its ``via`` lands in ``details``), a User, or None for the system.
    Other features call this too (API token creation/revocation: ``action="api_token.created"``,
    ``target_type="api_token"``, ``target_id=<prefix>``).
    """
    who = actor if isinstance(actor, Actor) else Actor.of(actor, "") if actor is not None else SYSTEM
    extra = {"via": who.via} if who.via else {}
    return _append(
        kind=AuditEvent.Kind.ADMIN, action=action, actor_user_id=who.user_id, actor_username=who.username,
        target_type=target_type, target_id=str(target_id), trace_id=trace_id, details={**extra, **(details or {})},
    )  # fmt: skip


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def claim_digest(text: str) -> str:
    """The digest feedback uses to prove a claim text is the one that was answered."""
    return _digest(" ".join(text.split()))


def answer_audit_details(perm: Any, question: str, response: dict[str, Any], *,
                         via: str = "", channel: str = "api") -> dict[str, Any]:  # fmt: skip
    answer = response.get("answer") or {}
    trace = response.get("trace") or {}
    claims = [
        {
            "id": c.get("id"),
            "text_sha256": claim_digest(c.get("text", "")),
            "citations": [
                {"evidence_id": ct.get("evidence_id"), "quote_sha256": _digest(ct.get("quote", ""))}
                for ct in c.get("citations", [])
            ],  # fmt: skip
        }
        for c in answer.get("claims", [])
    ]
    evidence = [
        {"id": e.get("id"), "document_id": e.get("document_id"), "chunk_id": e.get("chunk_id"),
         "snapshot_sha256": e.get("snapshot_sha256"), "cited": e.get("cited", False)}
        for e in response.get("evidence", [])
    ]  # fmt: skip
    return {
        "channel": channel,
        "principal": {
            "user_id": perm.user_id,
            "tenant_id": perm.tenant_id,
            "via": via,
            "permission_fingerprint": perm.fingerprint,
            "acl_version": perm.acl_version,
            "readable_acl_sets": len(perm.readable_acl_set_ids),
        },
        "question": question,
        "plan": response.get("plan"),
        "evidence": evidence,
        "evidence_ids": [e["id"] for e in evidence],
        "result_document_ids": [r.get("document_id") for r in response.get("results", [])],
        "claims": claims,
        "verification": trace.get("verification", []),
        "dropped_claims": answer.get("dropped_claims", 0),
        "abstention": answer.get("abstention"),
        "timings_ms": trace.get("timings_ms", {}),
        "cache": trace.get("cache"),
        "followup": trace.get("followup"),
        "release": response.get("release"),
        "as_of": response.get("as_of"),
    }


def do_record_answer_audit(perm: Any, question: str, response: dict[str, Any], *, username: str = "",
                           via: str = "", channel: str = "api") -> AuditEvent:  # fmt: skip
    """Record one released answer (call it where the answer leaves the system)."""
    trace = response.get("trace") or {}
    return _append(
        kind=AuditEvent.Kind.ANSWER, action="answer.released", actor_user_id=perm.user_id,
        actor_username=username, target_type="answer", target_id=str(trace.get("id", "")),
        trace_id=str(trace.get("id", "")), details=answer_audit_details(perm, question, response, via=via,
                                                                       channel=channel),
    )  # fmt: skip


# --- verification ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChainReport:
    tenant_id: int
    checked: int
    ok: bool
    first_bad_seq: int | None = None
    problem: str = ""


def verify_chain() -> ChainReport:
    """Recompute the active tenant's chain; report the first break."""
    tenant_id = require_tenant_id()
    prev = GENESIS
    expected_seq = 1
    checked = 0
    for row in AuditEvent.objects.order_by("seq").iterator(chunk_size=500):
        checked += 1
        if row.seq != expected_seq:
            return ChainReport(tenant_id, checked, False, row.seq, f"gap: expected seq {expected_seq}")
        if row.prev_hash != prev:
            return ChainReport(tenant_id, checked, False, row.seq, "prev_hash does not link to the previous row")
        if compute_hash(prev, row) != row.hash:
            return ChainReport(tenant_id, checked, False, row.seq, "row content does not match its hash")
        prev = row.hash
        expected_seq += 1
    return ChainReport(tenant_id, checked, True)


# --- export -----------------------------------------------------------------------------------------------

EXPORT_COLUMNS = ["seq", "created_at", "kind", "action", "actor_user_id", "actor_username", "target_type",
                  "target_id", "trace_id", "details", "prev_hash", "hash"]  # fmt: skip
_FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(value: Any) -> str:
    """A spreadsheet must never evaluate a cell: prefix formula starters with an apostrophe."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA_PREFIXES) else text


def export_row(row: AuditEvent) -> dict[str, Any]:
    return {
        "seq": row.seq,
        "created_at": row.created_at.astimezone(UTC).isoformat(timespec="microseconds"),
        "kind": row.kind,
        "action": row.action,
        "actor_user_id": row.actor_user_id,
        "actor_username": row.actor_username,
        "target_type": row.target_type,
        "target_id": row.target_id,
        "trace_id": row.trace_id,
        "details": row.details,
        "prev_hash": row.prev_hash,
        "hash": row.hash,
    }


def export_csv(rows: Iterable[AuditEvent]) -> Iterator[str]:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(EXPORT_COLUMNS)
    for row in rows:
        data = export_row(row)
        data["details"] = canonical_json(data["details"])
        w.writerow([csv_safe(data[c]) for c in EXPORT_COLUMNS])
        if buf.tell() > 64_000:
            yield buf.getvalue()
            buf.seek(0)
            buf.truncate()
    yield buf.getvalue()


def export_jsonl(rows: Iterable[AuditEvent]) -> Iterator[str]:
    for row in rows:
        yield canonical_json(export_row(row)) + "\n"


def filtered_events(*, action: str = "", kind: str = "", actor_user_id: int | None = None,
                    since: datetime | None = None, until: datetime | None = None) -> Any:  # fmt: skip
    qs = AuditEvent.objects.order_by("seq")
    if action:
        qs = qs.filter(action=action)
    if kind:
        qs = qs.filter(kind=kind)
    if actor_user_id is not None:
        qs = qs.filter(actor_user_id=actor_user_id)
    if since is not None:
        qs = qs.filter(created_at__gte=since)
    if until is not None:
        qs = qs.filter(created_at__lt=until)
    return qs
