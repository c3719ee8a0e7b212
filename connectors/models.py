"""Connector instances, their sync state and the inbound webhook/event inbox.

Every table here is tenant-owned and under forced RLS (see the migrations).
Credentials and webhook secrets are stored encrypted (Fernet, ``settings.CREDENTIALS_KEY``)
and are never returned by the API nor logged (``core.crypto``).
"""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from tenants.scoping import TenantScopedModel


class ConnectorInstance(TenantScopedModel):
    """One configured source (a Confluence site, an Entra tenant's sites, a Slack workspace)."""

    # Unguessable: it names the instance in webhook URLs (/hooks/<kind>/<hook_uuid>/...).
    hook_uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    source = models.OneToOneField("retrieval.Source", on_delete=models.CASCADE, related_name="connector")
    kind = models.CharField(max_length=32)
    config = models.JSONField(default=dict, blank=True)  # non-secret settings only
    credentials_encrypted = models.TextField(blank=True, default="")
    webhook_secret_encrypted = models.TextField(blank=True, default="")
    paused = models.BooleanField(default=False)
    # Operator-only options (never settable through the tenant admin API): a demo or test source on
    # a private address, and a CA bundle for a source with a private certificate.
    allow_private_network = models.BooleanField(default=False)
    tls_ca_file = models.CharField(max_length=500, blank=True, default="")
    # The exact origins ([scheme, host, port]) the operator approved with allow_private_network; a base
    # URL outside them gets the full public-only policy, and an edit that changes an origin clears both.
    private_network_origins = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)


class SyncState(TenantScopedModel):
    """The current (or last) run of one sync mode of one instance, with its checkpoint."""

    class Mode(models.TextChoices):
        FULL = "full"
        INCREMENTAL = "incremental"
        PERMISSION = "permission"

    class Status(models.TextChoices):
        IDLE = "idle"
        QUEUED = "queued"
        RUNNING = "running"
        THROTTLED = "throttled"  # rescheduled after a 429/503; resumes from the checkpoint
        DONE = "done"
        FAILED = "failed"

    instance = models.ForeignKey(ConnectorInstance, on_delete=models.CASCADE, related_name="sync_states")
    mode = models.CharField(max_length=16, choices=Mode.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.IDLE)
    run_id = models.CharField(max_length=40, blank=True, default="")
    checkpoint = models.JSONField(default=dict, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    ops_applied = models.IntegerField(default=0)
    docs_upserted = models.IntegerField(default=0)
    docs_deleted = models.IntegerField(default=0)
    acl_updates = models.IntegerField(default=0)
    groups_synced = models.IntegerField(default=0)
    identities_seen = models.IntegerField(default=0)
    retry_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    last_error_item = models.CharField(max_length=500, blank=True, default="")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "instance", "mode"], name="uniq_syncstate_mode")]


class InboundEvent(TenantScopedModel):
    """A verified webhook / Events API delivery, stored before it is acknowledged.

    De-duplicated by ``(instance, event_id)``; the Slack connector reads these rows as its
    event inbox (position = primary key).
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        DONE = "done"
        IGNORED = "ignored"
        FAILED = "failed"

    instance = models.ForeignKey(ConnectorInstance, on_delete=models.CASCADE, related_name="inbound_events")
    event_id = models.CharField(max_length=200)
    kind = models.CharField(max_length=64)  # confluence route, "graph", "graph_lifecycle", "slack"
    payload = models.JSONField(default=dict)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    error = models.TextField(blank=True, default="")
    received_at = models.DateTimeField(default=timezone.now)
    processed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "instance", "event_id"], name="uniq_inbound_event")]
        indexes = [models.Index(fields=["tenant", "instance", "status"])]
