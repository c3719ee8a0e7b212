"""Admin API for the answer engine's per-tenant configuration (tenant admins only)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from answers import actions
from answers.models import AnswerSettings, AuthorityAssignment, AuthorityTier, EntityAlias, FreshnessFeed
from core.errors import ApiError
from core.openapi import error_responses
from retrieval.models import Source
from tenants.views_base import TenantAPIView


class StrictCharField(serializers.CharField):
    """A string field that refuses numbers and booleans instead of turning them into text.

    DRF's CharField stores ``{"canonical": 98540}`` as ``"98540"``; the schema says string, and a
    number where a name belongs is a client bug worth a 400 (found by tests/security/test_api_schema_fuzz.py).
    """

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class AliasSerializer(serializers.Serializer):
    alias = StrictCharField(max_length=200)
    canonical = StrictCharField(max_length=200)


class TierSerializer(serializers.Serializer):
    rank = serializers.IntegerField(min_value=0, max_value=9)
    name = StrictCharField(max_length=100)


class AssignmentSerializer(serializers.Serializer):
    source_id = serializers.IntegerField()
    container = StrictCharField(max_length=300, required=False, allow_blank=True, default="")
    tier_rank = serializers.IntegerField(min_value=0, max_value=9)


class FeedSerializer(serializers.Serializer):
    name = StrictCharField(max_length=200)
    entity = StrictCharField(max_length=200)
    url = serializers.URLField(max_length=2000)


class AnswerSettingsSerializer(serializers.Serializer):
    writer = serializers.ChoiceField(choices=AnswerSettings.Writer.values)
    # Any string: the outbound policy (answers.actions.check_endpoint_url) is the one judge of what may be
    # contacted, with a coded refusal; URLField's own regex refused some IPv6 literals with a bare 400.
    endpoint_url = StrictCharField(max_length=2000, required=False, allow_blank=True, default="")
    model = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    api_key = StrictCharField(max_length=500, required=False, write_only=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["writer"] == AnswerSettings.Writer.OPENAI_COMPATIBLE and not (
            attrs["endpoint_url"] and attrs["model"]
        ):
            raise serializers.ValidationError("openai_compatible needs endpoint_url and model")
        return attrs


def _valid(ser_cls: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ApiError("invalid_request", "The body must be a JSON object.")
    ser = ser_cls(data=data)
    ser.is_valid(raise_exception=True)
    return dict(ser.validated_data)


def _alias_json(a: EntityAlias) -> dict[str, Any]:
    return {"id": a.pk, "alias": a.alias, "canonical": a.canonical}


class AliasListView(TenantAPIView):
    admin_only = True

    @extend_schema(responses={200: dict, **error_responses()})
    def get(self, request: Request) -> Response:
        return Response({"aliases": [_alias_json(a) for a in EntityAlias.objects.order_by("canonical", "alias")]})

    @extend_schema(request=AliasSerializer, responses={201: dict, **error_responses(400)})
    def post(self, request: Request) -> Response:
        d = _valid(AliasSerializer, request.data)
        return Response(_alias_json(actions.do_set_alias(d["alias"], d["canonical"], actor=self.actor)), status=201)


class AliasDetailView(TenantAPIView):
    admin_only = True

    @extend_schema(responses={204: None, **error_responses(404)})
    def delete(self, request: Request, pk: int) -> Response:
        if not actions.do_delete_alias(pk, actor=self.actor):
            raise ApiError("not_found", "No such alias.", 404)
        return Response(status=204)


def _authority_json() -> dict[str, Any]:
    tiers = actions.ensure_default_tiers()
    assignments = AuthorityAssignment.objects.select_related("tier", "source").order_by("tier__rank", "source_id")
    return {
        "tiers": [{"rank": t.rank, "name": t.name} for t in tiers],
        "assignments": [
            {
                "source_id": a.source_id,
                "source": a.source.name,
                "container": a.container,
                "tier_rank": a.tier.rank,
                "tier": a.tier.name,
            }
            for a in assignments
        ],  # fmt: skip
    }


class AuthorityView(TenantAPIView):
    admin_only = True

    @extend_schema(responses={200: dict, **error_responses()})
    def get(self, request: Request) -> Response:
        return Response(_authority_json())


class AuthorityTierView(TenantAPIView):
    admin_only = True

    @extend_schema(request=TierSerializer, responses={200: dict, **error_responses(400, 409)})
    def post(self, request: Request) -> Response:
        d = _valid(TierSerializer, request.data)
        clash = AuthorityTier.objects.filter(name=d["name"]).exclude(rank=d["rank"]).exists()
        if clash:
            raise ApiError("duplicate_tier", "Another rank already has this name.", 409)
        actions.do_define_tier(d["rank"], d["name"], actor=self.actor)
        return Response(_authority_json())


class AuthorityAssignmentView(TenantAPIView):
    admin_only = True

    @extend_schema(request=AssignmentSerializer, responses={200: dict, **error_responses(400, 404)})
    def post(self, request: Request) -> Response:
        d = _valid(AssignmentSerializer, request.data)
        actions.ensure_default_tiers()
        source = Source.objects.filter(pk=d["source_id"]).first()
        if source is None:
            raise ApiError("unknown_source", "No such source in this tenant.", 404)
        tier = AuthorityTier.objects.filter(rank=d["tier_rank"]).first()
        if tier is None:
            raise ApiError("unknown_tier", "Define the tier first.", 400)
        actions.do_assign_authority(source, tier, d["container"], actor=self.actor)
        return Response(_authority_json())


def _feed_json(f: FreshnessFeed) -> dict[str, Any]:
    return {
        "id": f.pk, "name": f.name, "entity": f.entity, "url": f.url, "latest_version": f.latest_version,
        "latest_date": f.latest_date.isoformat() if f.latest_date else None,
        "fetched_at": f.fetched_at.isoformat() if f.fetched_at else None, "last_error": f.last_error or None,
    }  # fmt: skip


class FreshnessFeedListView(TenantAPIView):
    admin_only = True

    @extend_schema(responses={200: dict, **error_responses()})
    def get(self, request: Request) -> Response:
        return Response({"feeds": [_feed_json(f) for f in FreshnessFeed.objects.order_by("name")]})

    @extend_schema(request=FeedSerializer, responses={201: dict, **error_responses(400, 409)})
    def post(self, request: Request) -> Response:
        d = _valid(FeedSerializer, request.data)
        actions.check_feed_url(d["url"])
        if FreshnessFeed.objects.filter(name=d["name"]).exists():
            raise ApiError("duplicate_feed", "A feed with this name exists.", 409)
        return Response(_feed_json(actions.do_create_feed(d["name"], d["entity"], d["url"], actor=self.actor)),
                        status=201)  # fmt: skip


class FreshnessFeedRefreshView(TenantAPIView):
    admin_only = True

    @extend_schema(request=None, responses={200: dict, **error_responses(404)})
    def post(self, request: Request, pk: int) -> Response:
        feed = FreshnessFeed.objects.filter(pk=pk).first()
        if feed is None:
            raise ApiError("not_found", "No such feed.", 404)
        return Response(_feed_json(actions.do_refresh_feed(feed, actor=self.actor)))


class AnswerSettingsView(TenantAPIView):
    admin_only = True

    def _json(self) -> dict[str, Any]:
        row = AnswerSettings.objects.first()
        if row is None:
            return {"writer": "extractive", "endpoint_url": "", "model": "", "api_key_set": False}
        return {"writer": row.writer, "endpoint_url": row.endpoint_url, "model": row.model,
                "api_key_set": bool(row.api_key_encrypted)}  # fmt: skip

    @extend_schema(responses={200: dict, **error_responses()})
    def get(self, request: Request) -> Response:
        return Response(self._json())

    # 400 endpoint_not_allowed: not a public https URL, and not an origin the operator approved.
    @extend_schema(request=AnswerSettingsSerializer, responses={200: dict, **error_responses(400)})
    def put(self, request: Request) -> Response:
        d = _valid(AnswerSettingsSerializer, request.data)
        actions.do_set_answer_settings(d["writer"], endpoint_url=d["endpoint_url"], model=d["model"],
                                       api_key=d.get("api_key"), actor=self.actor)  # fmt: skip
        return Response(self._json())
