"""The quality page's figures about this tenant, from its own audit log and feedback.

Answer rate and abstention reasons come from ``answer.released`` rows (each records its abstention,
if any); flags from ``Feedback``; unanswered questions are shown through ``console.auditview`` so
the page reveals no more than the audit log.  The evaluation summary reads the newest report of
``manage.py evaluate`` per suite and keeps only what a tenant admin can use: which suite, when, how long,
and its numeric metrics. The report's release block (git commit, settings, file paths) and machine block
are the vendor's and are never shown.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.db.models import Count
from django.utils import timezone

from console.auditview import Question, readable_among, shown_question
from tenants.models import AuditEvent, Feedback, User

WINDOW = timedelta(days=30)
MAX_ROWS = 20_000  # a month of a large tenant's answers is read in one pass; more is sampled newest-first


@dataclass
class TenantQuality:
    since: datetime
    answers: int
    answered: int
    abstentions: list[tuple[str, int]]
    flags: list[tuple[str, int]]
    flagged_claims: int
    unanswered: list[tuple[Question, int]]

    @property
    def answer_rate(self) -> str:
        return f"{100 * self.answered / self.answers:.0f}%" if self.answers else "–"


def tenant_quality(admin: User, now: datetime | None = None) -> TenantQuality:
    since = (now or timezone.now()) - WINDOW
    rows = list(AuditEvent.objects.filter(kind=AuditEvent.Kind.ANSWER, action="answer.released",
                                          created_at__gte=since)
                .order_by("-seq").values_list("details__abstention__reason", "details__question",
                                              "details__evidence", "details__result_document_ids")[:MAX_ROWS])  # fmt: skip
    reasons = Counter(str(r[0]) for r in rows if r[0])
    unanswered = [{"question": q, "evidence": ev or [], "result_document_ids": res or []}
                  for reason, q, ev, res in rows if reason and isinstance(q, str)]  # fmt: skip
    readable = readable_among(admin, unanswered)
    counts: Counter[Question] = Counter()
    for details in unanswered:
        shown = shown_question(details, readable)
        if shown is not None:
            # Grouped by digest: the same question counts once whether or not it is shown.
            counts[shown] += 1
    flags = Feedback.objects.filter(created_at__gte=since)
    return TenantQuality(
        since=since,
        answers=len(rows),
        answered=sum(1 for r in rows if not r[0]),
        abstentions=reasons.most_common(),
        flags=sorted(flags.values_list("verdict").annotate(n=Count("pk")).values_list("verdict", "n")),
        flagged_claims=flags.filter(target=Feedback.Target.CLAIM).count(),
        unanswered=_top(counts),
    )


def _top(counts: Counter[Question], n: int = 10) -> list[tuple[Question, int]]:
    merged: Counter[str] = Counter()
    first: dict[str, Question] = {}
    for q, c in counts.items():
        merged[q.sha256] += c
        # One question asked by several people may be visible in one row and withheld in another: withheld wins.
        if q.sha256 not in first or q.withheld:
            first[q.sha256] = q
    return [(first[h], c) for h, c in merged.most_common(n)]


@dataclass
class EvaluationSummary:
    suite: str
    started_at: datetime | None
    seconds: float | None
    metrics: list[tuple[str, str]]


def last_evaluation(reports_dir: Path) -> list[EvaluationSummary]:
    """Each suite's latest report (``reports/latest/<suite>.json``), newest run first."""
    found = []
    for path in sorted(reports_dir.glob("*.json")) if reports_dir.is_dir() else []:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or not isinstance(data.get("metrics"), dict):
            continue
        try:
            started = datetime.fromisoformat(str(data.get("started_at")))
        except ValueError:
            started = None
        seconds = data.get("seconds")
        found.append(EvaluationSummary(str(data.get("suite") or path.stem), started,
                                       float(seconds) if isinstance(seconds, (int, float)) else None,
                                       _numbers(data["metrics"])[:MAX_FIGURES]))  # fmt: skip
    return sorted(found, key=lambda s: (s.started_at is None, -(s.started_at.timestamp() if s.started_at else 0)))


MAX_FIGURES = 8


def _numbers(metrics: dict[str, Any], prefix: str = "", depth: int = 0) -> list[tuple[str, str]]:
    """Numeric figures only, nested ones as ``outer › inner``: strings (names, paths) never reach the page."""
    out: list[tuple[str, str]] = []
    for key, value in metrics.items():
        name = f"{prefix}{str(key).replace('_', ' ')}"
        if "/" in name or "\\" in name:
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out.append((name, _figure(value)))
        elif isinstance(value, dict) and depth < 2:
            out.extend(_numbers(value, name + " › ", depth + 1))
    return out


def _figure(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    return f"{value:.3f}".rstrip("0").rstrip(".") if abs(value) < 1000 else f"{value:,.0f}"
