from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema_serializer
from rest_framework import serializers

SOURCE_CHOICES = ["confluence", "sharepoint", "slack", "upload"]


class FiltersSerializer(serializers.Serializer):
    sources = serializers.ListField(child=serializers.ChoiceField(choices=SOURCE_CHOICES), required=False,
                                    max_length=10)  # fmt: skip
    containers = serializers.ListField(child=serializers.CharField(max_length=300), required=False, max_length=20)
    after = serializers.DateField(required=False)
    before = serializers.DateField(required=False)
    official_only = serializers.BooleanField(required=False, default=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("after") and attrs.get("before") and attrs["after"] >= attrs["before"]:
            raise serializers.ValidationError({"before": "must be after 'after'"})
        return attrs


@extend_schema_serializer(examples=[
    OpenApiExample("A question", value={"question": "How do I book travel?"}, request_only=True),
    OpenApiExample("A follow-up", request_only=True, value={"question": "And for a conference?",
                                                           "conversation_id": "Zm9sbG93LXVwLWlk"}),
])  # fmt: skip
class AnswerRequestSerializer(serializers.Serializer):
    question = serializers.CharField(max_length=1000, trim_whitespace=True)
    filters = FiltersSerializer(required=False)
    # Returned by a previous answer; makes this question a turn of that conversation (answers/followups.py).
    conversation_id = serializers.RegexField(r"^[A-Za-z0-9_-]{16,64}$", required=False)


class AnswerStreamQuerySerializer(serializers.Serializer):
    """GET /api/v1/answers/stream (EventSource cannot POST): the same request as query parameters."""

    q = serializers.CharField(max_length=1000, trim_whitespace=True)
    conversation_id = serializers.RegexField(r"^[A-Za-z0-9_-]{16,64}$", required=False)
    source = serializers.ListField(child=serializers.ChoiceField(choices=SOURCE_CHOICES), required=False,
                                   max_length=10)  # fmt: skip
    container = serializers.ListField(child=serializers.CharField(max_length=300), required=False, max_length=20)
    after = serializers.DateField(required=False)
    before = serializers.DateField(required=False)
    official_only = serializers.BooleanField(required=False, default=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("after") and attrs.get("before") and attrs["after"] >= attrs["before"]:
            raise serializers.ValidationError({"before": "must be after 'after'"})
        return attrs


class SearchQuerySerializer(serializers.Serializer):
    q = serializers.CharField(max_length=1000)
    source = serializers.ListField(child=serializers.ChoiceField(choices=SOURCE_CHOICES), required=False)
    container = serializers.ListField(child=serializers.CharField(max_length=300), required=False)
    after = serializers.DateField(required=False)
    before = serializers.DateField(required=False)
    official_only = serializers.BooleanField(required=False, default=False)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=100, default=20)


class CitationSerializer(serializers.Serializer):
    evidence_id = serializers.CharField()
    quote = serializers.CharField()


class ClaimSerializer(serializers.Serializer):
    id = serializers.CharField()
    text = serializers.CharField()
    citations = CitationSerializer(many=True)
    verification = serializers.DictField()
    extra = serializers.BooleanField(
        help_text="Stated past the writer's claim limit: shown with the others, it did not decide whether to answer."
    )


class AbstentionSerializer(serializers.Serializer):
    reason = serializers.CharField()
    message = serializers.CharField()


class UnansweredPartSerializer(serializers.Serializer):
    """A part of a compound question ("…, and where do I …?") that no supported claim answers."""

    question = serializers.CharField()
    reason = serializers.CharField()


class AnswerBodySerializer(serializers.Serializer):
    claims = ClaimSerializer(many=True)
    dropped_claims = serializers.IntegerField()
    abstention = AbstentionSerializer(allow_null=True)
    unanswered_parts = UnansweredPartSerializer(many=True)


class ResultSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    document_id = serializers.IntegerField()
    title = serializers.CharField()
    url = serializers.CharField()
    source_system = serializers.CharField()
    container = serializers.CharField()
    updated_at = serializers.CharField(allow_null=True)
    authority_tier = serializers.IntegerField()
    snippet = serializers.CharField()
    score = serializers.FloatField()


class EvidenceSerializer(serializers.Serializer):
    id = serializers.CharField()
    document_id = serializers.IntegerField()
    chunk_id = serializers.IntegerField()
    canonical_url = serializers.CharField()
    title = serializers.CharField()
    source_system = serializers.CharField()
    container = serializers.CharField()
    text = serializers.CharField()
    char_start = serializers.IntegerField()
    char_end = serializers.IntegerField()
    snapshot_sha256 = serializers.CharField()
    updated_at = serializers.CharField(allow_null=True)
    created_at = serializers.CharField(allow_null=True)
    version_label = serializers.CharField(allow_blank=True)
    authority_tier = serializers.IntegerField()
    scores = serializers.DictField()
    cited = serializers.BooleanField()


class AsOfSerializer(serializers.Serializer):
    content = serializers.CharField(allow_null=True)
    permissions = serializers.CharField(allow_null=True)


class AnswerResponseSerializer(serializers.Serializer):
    question = serializers.CharField()
    as_of = AsOfSerializer()
    plan = serializers.DictField()
    answer = AnswerBodySerializer()
    evidence = EvidenceSerializer(many=True)
    results = ResultSerializer(many=True)
    release = serializers.DictField()
    trace = serializers.DictField()
    conversation_id = serializers.CharField(required=False)
    notices = serializers.ListField(child=serializers.CharField())
    conflict = serializers.DictField(allow_null=True, required=False)
    freshness = serializers.DictField(allow_null=True, required=False)


class SearchResponseSerializer(serializers.Serializer):
    query = serializers.CharField()
    plan = serializers.DictField()
    results = ResultSerializer(many=True)
    as_of = AsOfSerializer()
    notices = serializers.ListField(child=serializers.CharField())
    trace = serializers.DictField()
