"""The audit log: every answer and admin action, append-only, hash-chained, exportable by admins."""

from __future__ import annotations

import csv
import io
import json
import os
import threading

import psycopg
import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection

from tenants.audit import GENESIS, do_record_audit_event, verify_chain
from tenants.context import tenant_context
from tenants.models import AuditEvent
from tests.support import client_for, enqueue, ingest_inline, make_doc, source_for

TEXT = "Expense reports are due within 30 days of travel. Submit each report with itemised receipts."


def superuser_conn() -> psycopg.Connection:
    # Plays a database administrator who bypasses the app's privileges and triggers.
    return psycopg.connect(os.environ["CAIRN_PG_SUPERUSER_URL"], autocommit=True)


def test_every_answer_is_audited_with_principal_plan_evidence_verification_and_release(cast) -> None:
    enqueue(cast.tenant_a, source_for(cast.tenant_a), make_doc("travel", TEXT, [["public:tenant"]]))
    ingest_inline(cast.tenant_a.pk)
    r = client_for(cast.tokens["bob"]).post("/api/v1/answers", {"question": "When are expense reports due?"},
                                             format="json")  # fmt: skip
    body = r.json()
    assert r.status_code == 200 and body["answer"]["claims"], body
    trace_id = body["trace"]["id"]
    events = client_for(cast.tokens["alice"]).get("/api/v1/audit", {"kind": "answer"}).json()["events"]
    event = next(e for e in events if e["trace_id"] == trace_id)
    d = event["details"]
    assert event["actor_user_id"] == cast.bob.pk and event["action"] == "answer.released"
    assert d["principal"]["user_id"] == cast.bob.pk and d["principal"]["via"] == "token"
    assert d["plan"]["original"] == "When are expense reports due?"
    assert d["evidence_ids"] == [e["id"] for e in body["evidence"]]
    assert len(d["verification"]) == len(body["trace"]["verification"]) >= 1
    assert d["dropped_claims"] == body["answer"]["dropped_claims"]
    assert d["release"] == body["release"] and "total" in d["timings_ms"]
    # Source text stays out of the log (admins export it); claims are kept as digests.
    assert "itemised receipts" not in json.dumps(d) and "30 days" not in json.dumps(d["claims"])
    # Other tenants see nothing of it.
    other = client_for(cast.tokens["mallory"]).get("/api/v1/audit").json()["events"]
    assert all(e["trace_id"] != trace_id for e in other)


def test_the_app_role_can_neither_update_nor_delete_audit_rows_and_a_trigger_stops_everyone_else(cast) -> None:
    with tenant_context(cast.tenant_a.pk):
        row = do_record_audit_event(actor=cast.alice, action="member.added", target_type="user", target_id=1)
    for sql in (
        "UPDATE tenants_auditevent SET action = 'x' WHERE id = %s",
        "DELETE FROM tenants_auditevent WHERE id = %s",
    ):
        with pytest.raises(DatabaseError, match="permission denied"):
            with tenant_context(cast.tenant_a.pk), connection.cursor() as cur:
                cur.execute(sql, [row.pk])
    with superuser_conn() as su:
        for sql in ("UPDATE tenants_auditevent SET action = 'x' WHERE id = %s",
                    "DELETE FROM tenants_auditevent WHERE id = %s"):  # fmt: skip
            with pytest.raises(psycopg.Error, match="append-only"):
                su.execute(sql, [row.pk])
    with tenant_context(cast.tenant_a.pk):
        assert AuditEvent.objects.get(pk=row.pk).action == "member.added"


def test_the_chain_links_every_row_and_audit_verify_finds_a_tampered_or_missing_row(cast) -> None:
    for tenant in (cast.tenant_a, cast.tenant_b):
        with tenant_context(tenant.pk):
            for i in range(3):
                do_record_audit_event(actor=None, action="source.updated", target_type="source", target_id=i,
                                      details={"name": f"wiki {i}"})  # fmt: skip
    with tenant_context(cast.tenant_a.pk):
        rows = list(AuditEvent.objects.order_by("seq"))
        assert [r.seq for r in rows] == [1, 2, 3] and rows[0].prev_hash == GENESIS
        assert all(b.prev_hash == a.hash for a, b in zip(rows, rows[1:], strict=False))
    call_command("audit_verify", tenant=cast.tenant_a.slug, stdout=io.StringIO())
    with superuser_conn() as su:
        su.execute("SET session_replication_role = replica")  # disables the append-only trigger
        su.execute("UPDATE tenants_auditevent SET details = '{\"name\": \"forged\"}' WHERE tenant_id = %s AND seq = 2",
                   [cast.tenant_a.pk])  # fmt: skip
        su.execute("DELETE FROM tenants_auditevent WHERE tenant_id = %s AND seq = 2", [cast.tenant_b.pk])
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("audit_verify", tenant=cast.tenant_a.slug, stdout=out)
    assert "TAMPERED at seq 2" in out.getvalue()
    with tenant_context(cast.tenant_b.pk):
        report = verify_chain()
    assert not report.ok and report.first_bad_seq == 3


def test_concurrent_appends_keep_one_unbroken_chain(cast) -> None:
    errors: list[BaseException] = []

    def append(n: int) -> None:
        try:
            for i in range(4):
                with tenant_context(cast.tenant_a.pk):
                    do_record_audit_event(actor=None, action="sync.started", target_type="source",
                                          target_id=f"{n}-{i}")  # fmt: skip
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=append, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    with tenant_context(cast.tenant_a.pk):
        report = verify_chain()
        assert report.ok and report.checked == 24
        assert sorted(AuditEvent.objects.values_list("seq", flat=True)) == list(range(1, 25))


def test_the_export_is_for_admins_guards_csv_formulas_and_never_contains_secrets(cast) -> None:
    with tenant_context(cast.tenant_a.pk):
        do_record_audit_event(
            actor=cast.alice, action="connector.updated", target_type="connector", target_id='=HYPERLINK("http://x")',
            details={"note": "+SUM(A1)", "client_secret": "s3cr3t-value", "header": "Bearer abcdefghijklmnopqrstu",
                     "nested": [{"api_key": "k-123"}], "tab": "\tcmd", "at": "@cmd"},
        )  # fmt: skip
    assert client_for(cast.tokens["bob"]).get("/api/v1/audit/export").status_code == 403
    r = client_for(cast.tokens["alice"]).get("/api/v1/audit/export", {"output": "csv"})
    assert r.status_code == 200 and r["Content-Type"].startswith("text/csv")
    text = r.content.decode()
    for secret in ("s3cr3t-value", "abcdefghijklmnopqrstu", "k-123"):
        assert secret not in text
    rows = list(csv.DictReader(io.StringIO(text)))
    row = next(x for x in rows if x["action"] == "connector.updated")
    assert row["target_id"].startswith("'=HYPERLINK")
    for cell in (c for x in rows for c in x.values()):
        assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell
    j = client_for(cast.tokens["alice"]).get("/api/v1/audit/export", {"output": "jsonl"})
    records = [json.loads(line) for line in j.content.decode().splitlines()]
    rec = next(x for x in records if x["action"] == "connector.updated")
    assert rec["target_id"] == '=HYPERLINK("http://x")'  # JSONL is data, not a spreadsheet: unchanged
    assert rec["details"]["client_secret"] == "[redacted]" and rec["details"]["note"] == "+SUM(A1)"
    # Taking a copy of the log is itself on the record.
    with tenant_context(cast.tenant_a.pk):
        assert AuditEvent.objects.filter(action="audit.exported", actor_user_id=cast.alice.pk).count() == 2
    assert client_for(cast.tokens["mallory"]).get("/api/v1/audit/export", {"output": "jsonl"}).content.count(
        b"connector.updated") == 0  # fmt: skip


def test_feedback_on_a_claim_or_source_is_bound_to_the_answer_the_user_received(cast) -> None:
    enqueue(cast.tenant_a, source_for(cast.tenant_a), make_doc("travel", TEXT, [["public:tenant"]]))
    ingest_inline(cast.tenant_a.pk)
    bob = client_for(cast.tokens["bob"])
    body = bob.post("/api/v1/answers", {"question": "When are expense reports due?"}, format="json").json()
    claim, trace_id = body["answer"]["claims"][0], body["trace"]["id"]
    r = bob.post("/api/v1/feedback", {"trace_id": trace_id, "target": "claim", "verdict": "stale",
                                      "claim_id": claim["id"], "claim_text": claim["text"], "comment": "changed"},
                 format="json")  # fmt: skip
    assert r.status_code == 201, r.content
    fb = r.json()
    assert fb["claim_text"] == claim["text"] and fb["evidence_id"] == claim["citations"][0]["evidence_id"]
    assert fb["plan"]["original"] == "When are expense reports due?" and fb["evidence_ids"]
    assert fb["question"] == "When are expense reports due?" and fb["document_id"]
    forged = bob.post("/api/v1/feedback", {"trace_id": trace_id, "target": "claim", "verdict": "wrong",
                                           "claim_id": claim["id"], "claim_text": "Reports are never due."},
                      format="json")  # fmt: skip
    assert forged.status_code == 400 and forged.json()["error"]["code"] == "claim_mismatch"
    src = bob.post("/api/v1/feedback", {"trace_id": trace_id, "target": "source", "verdict": "unsupported",
                                        "evidence_id": body["evidence"][0]["id"]}, format="json")  # fmt: skip
    assert src.status_code == 201 and src.json()["document_id"] == body["evidence"][0]["document_id"]
    unknown = bob.post("/api/v1/feedback", {"trace_id": trace_id, "target": "source", "verdict": "wrong",
                                            "evidence_id": "Edeadbeef0000"}, format="json")  # fmt: skip
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "unknown_source"
    for other in ("carol", "mallory"):  # someone else's answer
        r = client_for(cast.tokens[other]).post("/api/v1/feedback", {"trace_id": trace_id, "target": "claim",
                                                "verdict": "wrong", "claim_id": claim["id"],
                                                "claim_text": claim["text"]}, format="json")  # fmt: skip
        assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_answer"
    assert bob.get("/api/v1/feedback").status_code == 403
    queue = client_for(cast.tokens["alice"]).get("/api/v1/feedback").json()["feedback"]
    assert {f["verdict"] for f in queue} == {"stale", "unsupported"}
