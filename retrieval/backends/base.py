"""The index backend interface both legs of retrieval go through."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Protocol

import numpy as np


@dataclass(frozen=True)
class SearchFilters:
    """Filters applied inside each leg's query, next to the tenant + ACL filter."""

    sources: tuple[str, ...] = ()  # source systems
    containers: tuple[str, ...] = ()
    after: date | None = None  # inclusive, on the document's updated date
    before: date | None = None  # exclusive
    exclude_terms: tuple[str, ...] = ()
    phrases: tuple[str, ...] = ()
    max_authority_tier: int | None = None  # "official only"
    # Only these documents: the engine's second look inside the filings an entity + period resolved to.
    document_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class LegHit:
    chunk_id: int
    score: float


@dataclass
class LegResult:
    hits: list[LegHit]
    strategy: str = ""
    timings_ms: dict[str, float] = field(default_factory=dict)
    # Shown to the user (search trace / answer): e.g. "the search index is unavailable, ...".
    notices: list[str] = field(default_factory=list)


class IndexBackend(Protocol):
    name: str

    def lexical(self, tenant_id: int, acl_set_ids: tuple[int, ...], query: str, filters: SearchFilters,
                k: int) -> LegResult: ...  # fmt: skip

    def vector(self, tenant_id: int, acl_set_ids: tuple[int, ...], embedding: np.ndarray, filters: SearchFilters,
               k: int) -> LegResult: ...  # fmt: skip
