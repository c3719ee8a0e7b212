"""Queueing connector work by task name.

Actions (``connectors.actions``, ``connectors.sharepoint.subscriptions``) queue runs that the task
modules execute, and the task modules call those actions: queueing by the tasks' registered names
keeps the two from importing each other. The names are explicit on the tasks and stable, so a
message already in the broker still finds its task after code moves.
"""

from __future__ import annotations

import logging

from celery import current_app
from django.conf import settings

log = logging.getLogger(__name__)

RUN_SYNC = "connectors.tasks.run_sync"
MAINTAIN_GRAPH_SUBSCRIPTIONS = "connectors.tasks.maintain_graph_subscriptions"


def sync_queue() -> str:
    return str(settings.CAIRN.get("CONNECTOR_QUEUE", "ingest"))


def enqueue_sync(tenant_id: int, instance_pk: int, mode: str, run_id: str, *, countdown: float | None = None,
                 queue: str | None = None) -> None:  # fmt: skip
    try:
        current_app.send_task(RUN_SYNC, (tenant_id, instance_pk, mode, run_id), queue=queue or sync_queue(),
                              countdown=countdown)  # fmt: skip
    except Exception:  # broker down: the run stays queued and resume_stalled_syncs re-queues it
        log.warning("could not queue %s sync of connector %s", mode, instance_pk, exc_info=True)


def enqueue_graph_subscriptions(tenant_id: int, instance_pk: int) -> None:
    try:
        current_app.send_task(MAINTAIN_GRAPH_SUBSCRIPTIONS, (tenant_id, instance_pk), queue=sync_queue())
    except Exception:  # broker down: the pending work is in the row; beat queues it again
        log.warning("could not queue subscription maintenance of connector %s", instance_pk, exc_info=True)
