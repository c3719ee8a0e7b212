"""Request serializers of the tenant-level API (audit export, answer feedback)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


class FeedbackRequestSerializer(serializers.Serializer):
    trace_id = serializers.RegexField(r"^[0-9a-f]{32}$")
    target = serializers.ChoiceField(choices=["claim", "source"])
    verdict = serializers.ChoiceField(choices=["wrong", "unsupported", "stale"])
    claim_id = serializers.CharField(max_length=64, required=False)
    claim_text = serializers.CharField(max_length=5000, required=False)
    evidence_id = serializers.CharField(max_length=64, required=False)
    document_id = serializers.IntegerField(required=False, min_value=1)
    comment = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["target"] == "claim" and not (attrs.get("claim_id") and attrs.get("claim_text")):
            raise serializers.ValidationError({"claim_id": "a claim flag needs claim_id and claim_text"})
        if attrs["target"] == "source" and not (attrs.get("evidence_id") or attrs.get("document_id")):
            raise serializers.ValidationError({"evidence_id": "a source flag needs evidence_id or document_id"})
        return attrs


class AuditQuerySerializer(serializers.Serializer):
    output = serializers.ChoiceField(choices=["csv", "jsonl"], required=False, default="csv")
    action = serializers.CharField(max_length=100, required=False, default="")
    kind = serializers.ChoiceField(choices=["admin", "answer"], required=False, default="")
    actor_user_id = serializers.IntegerField(required=False, min_value=1)
    since = serializers.DateTimeField(required=False)
    until = serializers.DateTimeField(required=False)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=500, default=100)
    before_seq = serializers.IntegerField(required=False, min_value=1)
