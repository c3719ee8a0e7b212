"""Permission-scoped caching of retrieval results, and cache lifetimes by question class.

Answers are cached by ``engine.answer_question`` under ``engine.cache_key``;
retrieval results (``GET /api/v1/search``) are cached here under the same key
material with a different ``kind``: tenant, permission fingerprint,
``acl_version``, normalised query, filters, ``index_version``, release
identity and the day (relative dates resolve per day).  A permission change
bumps ``acl_version`` and a sync bumps ``index_version``, so both make every
older entry unreachable; nothing has to be deleted.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any, Literal

from django.conf import settings
from django.core.cache import cache

from answers import engine
from answers.contracts import QueryPlan
from retrieval.models import IndexState
from retrieval.permissions import PermissionContext

QuestionClass = Literal["latest", "time_relative", "default"]


def question_class(plan: QueryPlan) -> QuestionClass:
    if plan.parsed.wants_latest:
        return "latest"
    if plan.parsed.time is not None:
        return "time_relative"
    return "default"


def ttl_for(plan: QueryPlan) -> int:
    """'latest' questions go stale first; a dated window is as stable as any other question."""
    if question_class(plan) == "latest":
        return int(settings.CAIRN["LATEST_CACHE_SECONDS"])
    return int(settings.CAIRN["ANSWER_CACHE_SECONDS"])


def cached_search(perm: PermissionContext, question: str, extra: engine.RequestFilters, *,
                  limit: int = 20) -> dict[str, Any]:  # fmt: skip
    plan = engine.build_plan(question, datetime.now(UTC), extra)
    state = IndexState.objects.first()
    key = engine.cache_key(perm, plan, state, f"search:{limit}")
    hit = cache.get(key)
    if hit is not None:
        hit["trace"]["cache"] = "hit"
        return hit
    body = engine.run_search(perm, question, extra, limit=limit, plan=plan, state=state)
    ttl = ttl_for(plan)
    if ttl:
        stored = copy.deepcopy(body)
        stored["trace"]["cache"] = "stored"
        cache.set(key, stored, timeout=ttl)
    body["trace"]["cache"] = "miss"
    return body
