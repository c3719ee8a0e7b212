"""The console overview's figures: sync health per connector, the last day's latencies, backlog, alerts.

Everything is read from what the product already records: ``SyncState`` (one row per connector and
sync mode), ``IngestEvent`` (``created_at`` when a change was recorded, ``processed_at`` when it was
applied to the index) and ``InboundEvent`` (webhook deliveries).  "Event -> searchable" is the
time from recording an upsert to applying it; "revocation -> enforced" the same for permission
changes and deletions, the events that take access away.  Call everything inside ``tenant_context``.

Plots are SVG strings built here (no charting library, no script), so the page keeps its CSP.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from statistics import median
from typing import Any

from django.conf import settings
from django.db.models import Count, Max, Min, Q
from django.utils import timezone
from django.utils.html import escape

from connectors.models import ConnectorInstance, InboundEvent, SyncState
from connectors.progress import tenant_progress
from retrieval.models import Document, IndexOutbox, IngestEvent

WINDOW = timedelta(days=1)
BUCKETS = 24  # one per hour of the window
REVOKING_KINDS = ("acl", "delete")


def incremental_schedule_seconds() -> int:
    """How often beat asks for an incremental sync (the schedule the stall alert measures against)."""
    entry = settings.CELERY_BEAT_SCHEDULE.get("connectors-incremental-sync", {})
    return int(entry.get("kwargs", {}).get("every_seconds", 300))


def stall_after() -> timedelta:
    return timedelta(seconds=incremental_schedule_seconds() * int(settings.CAIRN.get("CONSOLE_STALL_FACTOR", 3)))


def backlog_alert_after() -> timedelta:
    return timedelta(seconds=int(settings.CAIRN.get("CONSOLE_BACKLOG_ALERT_SECONDS", 900)))


@dataclass
class ConnectorHealth:
    instance: ConnectorInstance
    last_success_at: datetime | None
    documents: int
    items_last_run: int
    errors: list[tuple[str, str, str]]  # (mode, error, failing item)
    failed_events: int  # ingest events of this source that failed in the window
    lag: timedelta | None
    stalled: bool

    @property
    def lag_text(self) -> str:
        return _span(self.lag)

    @property
    def label(self) -> str:
        if self.instance.paused:
            return "paused"
        if self.errors or self.failed_events:
            return "error"
        if self.stalled:
            return "stalled"
        return "healthy" if self.last_success_at else "never synced"


def connector_health(now: datetime) -> list[ConnectorHealth]:
    since = now - WINDOW
    rows = []
    instances = list(ConnectorInstance.objects.select_related("source").order_by("pk"))
    states: dict[int, list[SyncState]] = {}
    for s in SyncState.objects.filter(instance__in=instances):
        states.setdefault(s.instance_id, []).append(s)
    docs = dict(Document.objects.filter(deleted=False).values_list("source_id").annotate(n=Count("pk")))
    failed = dict(IngestEvent.objects.filter(status=IngestEvent.Status.FAILED, created_at__gte=since)
                  .values_list("source_id").annotate(n=Count("pk")))  # fmt: skip
    limit = stall_after()
    for instance in instances:
        mine = states.get(instance.pk, [])
        successes = [s.last_success_at for s in mine if s.last_success_at]
        last_ok = max(successes) if successes else None
        newest_run = max(mine, key=lambda s: s.started_at or s.last_success_at or instance.created_at, default=None)
        # Measured from creation while it never succeeded: a connector that never syncs is stalled too.
        reference = last_ok or instance.created_at
        rows.append(ConnectorHealth(
            instance=instance,
            last_success_at=last_ok,
            documents=docs.get(instance.source_id, 0),
            items_last_run=(newest_run.docs_upserted + newest_run.docs_deleted + newest_run.acl_updates)
            if newest_run else 0,
            errors=[(s.mode, s.last_error, s.last_error_item) for s in mine if s.last_error],
            failed_events=failed.get(instance.source_id, 0),
            lag=(now - last_ok) if last_ok else None,
            stalled=not instance.paused and now - reference > limit,
        ))  # fmt: skip
    return rows


@dataclass
class Backlog:
    pending_events: int
    oldest_event_at: datetime | None
    pending_webhooks: int
    oldest_webhook_at: datetime | None
    index_outbox: int
    active_syncs: int

    def oldest_age(self, now: datetime) -> timedelta | None:
        oldest = [t for t in (self.oldest_event_at, self.oldest_webhook_at) if t is not None]
        return now - min(oldest) if oldest else None


def backlog() -> Backlog:
    progress = tenant_progress()
    hooks = InboundEvent.objects.filter(status=InboundEvent.Status.PENDING).aggregate(n=Count("pk"),
                                                                                     m=Min("received_at"))  # fmt: skip
    return Backlog(
        pending_events=progress.pending,
        oldest_event_at=progress.oldest_pending_at,
        pending_webhooks=hooks["n"],
        oldest_webhook_at=hooks["m"],
        index_outbox=IndexOutbox.objects.count(),
        active_syncs=progress.active_syncs,
    )


@dataclass
class Alert:
    level: str  # "error" | "warning"
    message: str
    link: str = ""  # connector id, when the alert is about one


def alerts(now: datetime, health: list[ConnectorHealth], queue: Backlog) -> list[Alert]:
    out: list[Alert] = []
    limit = stall_after()
    for h in health:
        name = h.instance.source.name
        if h.stalled:
            since = f"since {h.last_success_at.isoformat(timespec='seconds')}" if h.last_success_at else "ever"
            out.append(Alert("error", f"{name}: no successful sync {since} (alert after {_span(limit)}, "
                                      f"{settings.CAIRN.get('CONSOLE_STALL_FACTOR', 3)}× the "
                                      f"{_span(timedelta(seconds=incremental_schedule_seconds()))} schedule).",
                             str(h.instance.pk)))  # fmt: skip
        for mode, error, item in h.errors:
            out.append(Alert("error", f"{name}: the last {mode} sync failed: {error[:200]}"
                                      + (f" (item {item[:100]})" if item else ""), str(h.instance.pk)))  # fmt: skip
        if h.failed_events:
            out.append(Alert("warning", f"{name}: {h.failed_events} item{'s' if h.failed_events != 1 else ''} "
                                        "failed to index in the last day.", str(h.instance.pk)))  # fmt: skip
    age = queue.oldest_age(now)
    if age is not None and age > backlog_alert_after():
        out.append(Alert("error", f"The ingest backlog's oldest item has waited {_span(age)} "
                                  f"(alert after {_span(backlog_alert_after())}); is the worker running?"))  # fmt: skip
    return out


# --- latency over the last day ------------------------------------------------------------------------------


@dataclass
class Latency:
    title: str
    samples: int = 0
    median_s: float | None = None
    p95_s: float | None = None
    max_s: float | None = None
    hourly: list[tuple[datetime, float | None, float | None]] = field(default_factory=list)  # (hour, p50, p95)

    @property
    def median_text(self) -> str:
        return _span(self.median_s)

    @property
    def p95_text(self) -> str:
        return _span(self.p95_s)

    @property
    def max_text(self) -> str:
        return _span(self.max_s)


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def latency(title: str, kinds: tuple[str, ...], now: datetime) -> Latency:
    start = now - WINDOW
    rows = list(IngestEvent.objects.filter(kind__in=kinds, status=IngestEvent.Status.DONE, processed_at__gte=start,
                                           processed_at__lte=now).values_list("created_at", "processed_at")
                [:50_000])  # fmt: skip
    out = Latency(title)
    by_hour: list[list[float]] = [[] for _ in range(BUCKETS)]
    values = []
    for created, processed in rows:
        seconds = max(0.0, (processed - created).total_seconds())
        values.append(seconds)
        slot = min(BUCKETS - 1, int((processed - start) / (WINDOW / BUCKETS)))
        by_hour[slot].append(seconds)
    if values:
        out.samples, out.median_s, out.p95_s, out.max_s = len(values), median(values), _p95(values), max(values)
    out.hourly = [(start + i * (WINDOW / BUCKETS), median(v) if v else None, _p95(v) if v else None)
                  for i, v in enumerate(by_hour)]  # fmt: skip
    return out


def latencies(now: datetime) -> list[Latency]:
    return [latency("Event → searchable", ("upsert",), now),
            latency("Revocation → enforced", REVOKING_KINDS, now)]  # fmt: skip


def _span(value: timedelta | float | None) -> str:
    """A duration for people: 850 ms, 42 s, 7 min, 3.5 h."""
    if value is None:
        return "–"
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def latency_svg(data: Latency, *, width: int = 560, height: int = 180) -> str:
    """Hourly median (bars) and 95th percentile (line with dots) of one latency, as an inline SVG.

    Every value is also in the SVG's <title> elements and the page's table, so the plot is never the
    only way to read a figure (screen readers, copy and paste).
    """
    left, right, top, bottom = 56, 8, 12, 28
    plot_w, plot_h = width - left - right, height - top - bottom
    peaks = [v for _, p50, p95 in data.hourly for v in (p50, p95) if v is not None]
    ceiling = _nice_ceiling(max(peaks) if peaks else 1.0)
    slot = plot_w / max(1, len(data.hourly))

    def y(v: float) -> float:
        return top + plot_h - (v / ceiling) * plot_h

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot latency" role="img" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" aria-label="{escape(data.title)}: hourly median and 95th percentile '
        f'over the last 24 hours">',
        f"<title>{escape(data.title)}</title>",
    ]
    for frac in (0.0, 0.5, 1.0):
        gy = y(ceiling * frac)
        parts.append(f'<line x1="{left}" y1="{gy:.1f}" x2="{width - right}" y2="{gy:.1f}" stroke="#ccc" '
                     f'stroke-width="1"/>')  # fmt: skip
        parts.append(f'<text x="{left - 4}" y="{gy + 4:.1f}" text-anchor="end" font-size="11">'
                     f"{escape(_span(ceiling * frac))}</text>")  # fmt: skip
    points = []
    for i, (hour, p50, p95) in enumerate(data.hourly):
        x = left + i * slot
        label = hour.strftime("%H:%M")
        if p50 is not None:
            parts.append(f'<rect class="p50" x="{x + 1:.1f}" y="{y(p50):.1f}" width="{max(1.0, slot - 2):.1f}" '
                         f'height="{top + plot_h - y(p50):.1f}" fill="#6b8fb3"><title>{label} UTC: median '
                         f"{escape(_span(p50))}, p95 {escape(_span(p95))}</title></rect>")  # fmt: skip
        if p95 is not None:
            points.append((x + slot / 2, y(p95)))
        if i % 6 == 0:
            parts.append(f'<text x="{x:.1f}" y="{height - 8}" font-size="11">{label}</text>')
    if len(points) > 1:
        path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
        parts.append(f'<polyline class="p95" points="{path}" fill="none" stroke="#b35a2b" stroke-width="1.5"/>')
    for px, py in points:
        parts.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="2.5" fill="#b35a2b"/>')
    if not peaks:
        parts.append(f'<text x="{left + plot_w / 2:.1f}" y="{top + plot_h / 2:.1f}" text-anchor="middle" '
                     'font-size="13">No events in the last 24 hours</text>')  # fmt: skip
    parts.append(f'<text x="{width - right}" y="{height - 8}" text-anchor="end" font-size="11">UTC</text>')
    parts.append("</svg>")
    return "".join(parts)


def _nice_ceiling(value: float) -> float:
    """The axis top: the first of 1, 2, 5 × 10^k at or above ``value``."""
    step = 0.001
    while True:
        for m in (1, 2, 5):
            if m * step >= value:
                return m * step
        step *= 10


def overview(now: datetime | None = None) -> dict[str, Any]:
    now = now or timezone.now()
    health = connector_health(now)
    queue = backlog()
    lat = latencies(now)
    return {
        "now": now,
        "health": health,
        "backlog": queue,
        "backlog_age": _span(queue.oldest_age(now)) if queue.oldest_age(now) is not None else "",
        "latencies": [(item, latency_svg(item)) for item in lat],
        "alerts": alerts(now, health, queue),
        "stall_after": _span(stall_after()),
        "backlog_alert_after": _span(backlog_alert_after()),
        "last_index_change": IngestEvent.objects.aggregate(m=Max("processed_at", filter=Q(status="done")))["m"],
    }
