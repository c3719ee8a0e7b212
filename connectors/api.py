"""Admin API for connector instances (tenant admins only).

Credentials are write-only: accepted on create/update, stored encrypted, never returned.
The webhook endpoint returns what an admin must paste into the source's settings (URLs and
the per-instance secret); it is the only place a secret is shown, and only to admins.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Min
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from connectors.actions import (
    do_check_connector,
    do_create_connector_instance,
    do_read_webhook_secret,
    do_request_sync,
    do_rotate_webhook_secret,
    do_set_paused,
    do_update_connector_instance,
)
from connectors.confluence.webhooks import ROUTES as CONFLUENCE_ROUTES
from connectors.models import ConnectorInstance, InboundEvent, SyncState
from connectors.runtime import known_kinds
from connectors.sharepoint.subscriptions import do_recreate_subscriptions, notification_url
from core.crypto import CredentialsError, decrypt_text
from core.errors import ApiError
from core.openapi import error_responses
from retrieval.models import Document, Source
from tenants.views_base import TenantAPIView

# 400 invalid input, 404 no such connector in this tenant, 409 name taken, 503 credentials key missing,
# plus what every tenant API view can answer (core/openapi.py).
ERRORS = error_responses(400, 404, 409)


class ConnectorWriteSerializer(serializers.Serializer):
    kind = serializers.CharField(max_length=32, required=False)
    name = serializers.CharField(max_length=200, required=False)
    config = serializers.DictField(required=False)
    credentials = serializers.DictField(child=serializers.CharField(allow_blank=True), required=False,
                                        write_only=True)  # fmt: skip


class SyncStateSerializer(serializers.Serializer):
    mode = serializers.CharField()
    status = serializers.CharField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    last_success_at = serializers.DateTimeField(allow_null=True)
    retry_at = serializers.DateTimeField(allow_null=True)
    ops_applied = serializers.IntegerField()
    docs_upserted = serializers.IntegerField()
    docs_deleted = serializers.IntegerField()
    acl_updates = serializers.IntegerField()
    last_error = serializers.CharField()
    last_error_item = serializers.CharField()
    lag_seconds = serializers.FloatField(allow_null=True)
    # Items the run left out on purpose, with the reason (e.g. a Slack channel the app cannot join).
    skipped = serializers.DictField(child=serializers.CharField(), required=False)


class ConnectorSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    name = serializers.CharField()
    config = serializers.DictField()
    paused = serializers.BooleanField()
    has_credentials = serializers.BooleanField()
    created_at = serializers.DateTimeField()


class StatusSerializer(ConnectorSerializer):
    documents = serializers.IntegerField()
    syncs = SyncStateSerializer(many=True)
    pending_events = serializers.IntegerField()
    oldest_pending_event_age_seconds = serializers.FloatField(allow_null=True)


class WebhookInfoSerializer(serializers.Serializer):
    urls = serializers.DictField()
    secret = serializers.CharField()
    how = serializers.CharField()


class SyncQueuedSerializer(serializers.Serializer):
    mode = serializers.CharField()
    status = serializers.CharField()
    run_id = serializers.CharField()


class SubscriptionsQueuedSerializer(serializers.Serializer):
    queued = serializers.BooleanField()
    replacing = serializers.ListField(child=serializers.CharField())


class CheckStepSerializer(serializers.Serializer):
    step = serializers.ChoiceField(choices=["auth", "listing", "permissions", "webhook"])
    status = serializers.ChoiceField(choices=["ok", "warning", "failed", "skipped"])
    message = serializers.CharField()


class ConnectionTestSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    message = serializers.CharField()
    steps = CheckStepSerializer(many=True)


class SyncRequestSerializer(serializers.Serializer):
    mode = serializers.ChoiceField(choices=SyncState.Mode.values, default="incremental")


def _get(pk: int) -> ConnectorInstance:
    instance = ConnectorInstance.objects.select_related("source").filter(pk=pk).first()
    if instance is None:
        raise ApiError("not_found", "No such connector.", 404)
    return instance


def _summary(instance: ConnectorInstance) -> dict[str, Any]:
    return {
        "id": instance.pk, "kind": instance.kind, "name": instance.source.name, "config": instance.config,
        "paused": instance.paused, "has_credentials": bool(instance.credentials_encrypted),
        "created_at": instance.created_at,
    }  # fmt: skip


def _lag(state: SyncState) -> float | None:
    if state.last_success_at is None:
        return None
    return (timezone.now() - state.last_success_at).total_seconds()


def connector_status(instance: ConnectorInstance) -> dict[str, Any]:
    states = {s.mode: s for s in SyncState.objects.filter(instance=instance)}
    pending = InboundEvent.objects.filter(instance=instance, status=InboundEvent.Status.PENDING)
    oldest = pending.aggregate(m=Min("received_at"))["m"]
    syncs = []
    for mode in SyncState.Mode.values:
        s = states.get(mode) or SyncState(instance=instance, mode=mode)
        syncs.append({
            "mode": mode, "status": s.status, "started_at": s.started_at, "finished_at": s.finished_at,
            "last_success_at": s.last_success_at, "retry_at": s.retry_at, "ops_applied": s.ops_applied,
            "docs_upserted": s.docs_upserted, "docs_deleted": s.docs_deleted, "acl_updates": s.acl_updates,
            "last_error": s.last_error, "last_error_item": s.last_error_item, "lag_seconds": _lag(s),
            "skipped": dict((s.checkpoint or {}).get("skipped") or {}),
        })  # fmt: skip
    return {
        **_summary(instance),
        "documents": Document.objects.filter(source_id=instance.source_id, deleted=False).count(),
        "syncs": syncs,
        "pending_events": pending.count(),
        "oldest_pending_event_age_seconds": (timezone.now() - oldest).total_seconds() if oldest else None,
    }


class ConnectorListView(TenantAPIView):
    admin_only = True

    @extend_schema(responses={200: ConnectorSerializer(many=True), **ERRORS})
    def get(self, request: Request) -> Response:
        instances = ConnectorInstance.objects.select_related("source").order_by("pk")
        return Response([_summary(i) for i in instances])

    @extend_schema(request=ConnectorWriteSerializer, responses={201: ConnectorSerializer, **ERRORS})
    def post(self, request: Request) -> Response:
        ser = ConnectorWriteSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        data = ser.validated_data
        kind, name = data.get("kind", ""), (data.get("name") or "").strip()
        if kind not in known_kinds():
            raise ApiError("unknown_kind", f"kind must be one of {', '.join(known_kinds())}")
        if not name:
            raise ApiError("invalid_request", "name is required")
        if Source.objects.filter(name=name).exists():
            raise ApiError("name_taken", "A source with this name exists.", 409)
        try:
            instance = do_create_connector_instance(kind, name, config=dict(data.get("config") or {}),
                                                    credentials=dict(data.get("credentials") or {}),
                                                    actor=self.actor)  # fmt: skip
        except CredentialsError as exc:
            raise ApiError("credentials_unavailable", str(exc), 503) from None
        return Response(_summary(instance), status=201)


class ConnectorDetailView(TenantAPIView):
    admin_only = True

    @extend_schema(responses={200: ConnectorSerializer, **ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        return Response(_summary(_get(pk)))

    @extend_schema(request=ConnectorWriteSerializer, responses={200: ConnectorSerializer, **ERRORS})
    def patch(self, request: Request, pk: int) -> Response:
        instance = _get(pk)
        ser = ConnectorWriteSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        data = ser.validated_data
        if "kind" in data and data["kind"] != instance.kind:
            raise ApiError("invalid_request", "kind cannot be changed")
        config = dict(data["config"]) if "config" in data else None
        instance = do_update_connector_instance(instance, name=data.get("name"), config=config,
                                                credentials=dict(data.get("credentials") or {}),
                                                actor=self.actor)  # fmt: skip
        instance.refresh_from_db()
        return Response(_summary(instance))


class ConnectorStatusView(TenantAPIView):
    admin_only = True

    @extend_schema(responses={200: StatusSerializer, **ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        return Response(connector_status(_get(pk)))


class ConnectorTestView(TenantAPIView):
    admin_only = True

    @extend_schema(request=None, responses={200: ConnectionTestSerializer, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        # The console's step-by-step check (connectors.checks); ok/message summarise it for older clients.
        steps = do_check_connector(_get(pk), actor=self.actor)
        failed = next((s for s in steps if s.status == "failed"), None)
        ok = failed is None
        message = "connected" if ok else f"{failed.label}: {failed.message}"  # type: ignore[union-attr]
        return Response({"ok": ok, "message": message, "steps": [s.as_json() for s in steps]})


class ConnectorSyncView(TenantAPIView):
    admin_only = True

    @extend_schema(request=SyncRequestSerializer, responses={202: SyncQueuedSerializer, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        instance = _get(pk)
        # No body means the default mode; a body that is not an object (true, [..]) is a mistake.
        if not isinstance(request.data, dict):
            raise ApiError("invalid_request", "The body must be a JSON object.")
        ser = SyncRequestSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        state = do_request_sync(instance, ser.validated_data["mode"], actor=self.actor)
        return Response({"mode": state.mode, "status": state.status, "run_id": state.run_id}, status=202)


class ConnectorPauseView(TenantAPIView):
    admin_only = True
    paused = True

    @extend_schema(request=None, responses={200: ConnectorSerializer, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        return Response(_summary(do_set_paused(_get(pk), self.paused, actor=self.actor)))


class ConnectorResumeView(ConnectorPauseView):
    paused = False


class ConnectorWebhookView(TenantAPIView):
    admin_only = True

    def _info(self, request: Any, instance: ConnectorInstance, secret: str | None = None) -> dict[str, Any]:
        base = request.build_absolute_uri(f"/hooks/{instance.kind}/{instance.hook_uuid}/")
        secret = decrypt_text(instance.webhook_secret_encrypted) if secret is None else secret
        if instance.kind == "confluence":
            urls = {name: f"{base}{name}?secret={secret}" for name in CONFLUENCE_ROUTES}
            how = ("Register one Confluence webhook per event, each on its own URL (the body names no event). "
                   "Where the webhook form has a Secret field (signed with X-Hub-Signature), enter the secret "
                   "there and register the URL without ?secret=, so the secret never appears in a URL.")  # fmt: skip
        elif instance.kind == "sharepoint":
            urls = {"notificationUrl": f"{base}notifications", "lifecycleNotificationUrl": f"{base}notifications"}
            how = "Create Graph subscriptions on /drives/{id}/root with clientState = secret."
        else:
            urls = {"request_url": f"{base}events"}
            how = "Slack app > Event Subscriptions > Request URL; the signing secret goes in the credentials."
        return {"urls": urls, "secret": secret, "how": how}

    @extend_schema(responses={200: WebhookInfoSerializer, **ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        instance = _get(pk)
        return Response(self._info(request, instance, do_read_webhook_secret(instance, actor=self.actor)))

    @extend_schema(request=None, responses={200: WebhookInfoSerializer, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        """Rotate the secret (the old URLs stop working)."""
        instance = _get(pk)
        do_rotate_webhook_secret(instance, actor=self.actor)
        return Response(self._info(request, instance, do_read_webhook_secret(instance, actor=self.actor)))


class ConnectorSubscriptionsView(TenantAPIView):
    """Recreate a SharePoint instance's Graph subscriptions now (not at the next hourly beat)."""

    admin_only = True

    @extend_schema(request=None, responses={202: SubscriptionsQueuedSerializer, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:

        instance = _get(pk)
        if instance.kind != "sharepoint":
            raise ApiError("not_supported", "Only SharePoint connectors have Graph subscriptions.")
        if instance.paused:
            raise ApiError("connector_paused", "Resume the connector first; paused connectors keep no subscriptions.",
                           409)  # fmt: skip
        if not notification_url(instance):
            raise ApiError("no_public_base_url", "CAIRN PUBLIC_BASE_URL is not set; Graph cannot reach the hook.",
                           409)  # fmt: skip
        replaced = do_recreate_subscriptions(instance, actor=self.actor)
        return Response({"queued": True, "replacing": replaced}, status=202)
