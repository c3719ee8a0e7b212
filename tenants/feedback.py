"""Feedback on answers: a user flags a claim or a source as wrong, unsupported or stale.

The flag is bound to the audited answer (by ``trace_id``) that this same user
received: the question, plan and evidence ids are copied from that audit row,
the claim must be one of the answer's claims (its text must match the
digest the audit kept), and a source must be one of the answer's evidence
records or listed results.  Rows feed the evaluation set.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from core.errors import ApiError
from tenants.audit import Actor, claim_digest, do_record_audit_event
from tenants.models import AuditEvent, Feedback


def do_record_feedback(*, user_id: int, actor: Actor, trace_id: str, target: str, verdict: str,
                       claim_id: str = "", claim_text: str = "", evidence_id: str = "",
                       document_id: int | None = None, comment: str = "") -> Feedback:  # fmt: skip
    answer = AuditEvent.objects.filter(kind=AuditEvent.Kind.ANSWER, trace_id=trace_id, actor_user_id=user_id).first()
    if answer is None:
        raise ApiError("unknown_answer", "No answer with this trace id was given to you.", 404)
    details: dict[str, Any] = answer.details
    evidence = {e["id"]: e for e in details.get("evidence", [])}
    if target == Feedback.Target.CLAIM:
        claim = next((c for c in details.get("claims", []) if c.get("id") == claim_id), None)
        if claim is None:
            raise ApiError("unknown_claim", "This answer has no such claim.", 404)
        if claim.get("text_sha256") != claim_digest(claim_text):
            raise ApiError("claim_mismatch", "The claim text is not the text of that claim.")
        cited = [c.get("evidence_id") for c in claim.get("citations", [])]
        if not evidence_id and cited:
            evidence_id = cited[0]
    if evidence_id:
        if evidence_id not in evidence:
            raise ApiError("unknown_source", "This answer has no such evidence record.", 404)
        document_id = evidence[evidence_id].get("document_id")
    elif document_id is not None and document_id not in details.get("result_document_ids", []):
        raise ApiError("unknown_source", "This answer did not list that document.", 404)
    with transaction.atomic():
        row = Feedback.objects.create(
            user_id=user_id, trace_id=trace_id, target=target, verdict=verdict, claim_id=claim_id or "",
            claim_text=" ".join(claim_text.split()) if target == Feedback.Target.CLAIM else "",
            evidence_id=evidence_id or "", document_id=document_id, question=details.get("question", ""),
            plan=details.get("plan") or {}, evidence_ids=details.get("evidence_ids", []), comment=comment,
        )  # fmt: skip
        # Digests and ids only: the log is exported by admins who may not read the cited source.
        do_record_audit_event(actor=actor, action="feedback.submitted", target_type="feedback", target_id=row.pk,
                              trace_id=trace_id, details={"target": target, "verdict": verdict,
                                                          "claim_id": claim_id, "evidence_id": evidence_id,
                                                          "document_id": document_id})  # fmt: skip
    return row


def cited_document_ids(f: Feedback) -> set[int]:
    """The documents a flag's text comes from: its document and the evidence its answer cited."""
    answer = AuditEvent.objects.filter(kind=AuditEvent.Kind.ANSWER, trace_id=f.trace_id,
                                       actor_user_id=f.user_id).first()  # fmt: skip
    ids = {f.document_id} if f.document_id is not None else set()
    if answer is not None:
        evidence = {e.get("id"): e.get("document_id") for e in answer.details.get("evidence", [])}
        wanted = {f.evidence_id} if f.evidence_id else set()
        for claim in answer.details.get("claims", []):
            if claim.get("id") == f.claim_id:
                wanted |= {c.get("evidence_id") for c in claim.get("citations", [])}
        ids |= {int(evidence[e]) for e in wanted if evidence.get(e) is not None}
    return ids


HIDDEN = "[hidden: cites a document you may not read]"


def feedback_json(f: Feedback, *, hide_text: bool = False) -> dict[str, Any]:
    return {
        "id": f.pk, "trace_id": f.trace_id, "target": f.target, "verdict": f.verdict, "claim_id": f.claim_id,
        "claim_text": HIDDEN if hide_text and f.claim_text else f.claim_text, "evidence_id": f.evidence_id, "document_id": f.document_id,
        "question": f.question, "plan": f.plan, "evidence_ids": f.evidence_ids, "comment": "" if hide_text and f.comment else f.comment,
        "user_id": f.user_id, "created_at": f.created_at.isoformat(),
    }  # fmt: skip
