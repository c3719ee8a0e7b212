"""What every connector produces: a stream of typed sync operations.

Connectors talk to their source and translate it into these operations; they
never touch the database.  The sync tasks (``connectors.tasks``) apply each
operation through the ingestion pipeline's domain functions and persist the
checkpoint that came with it, so a crashed sync resumes where it stopped.

Identity model: a user of Cairn holds a principal such as
``confluence:user:<accountId>`` only through an ``ExternalIdentity`` mapped to
them by verified e-mail or by an admin.  Group principals
(``confluence:group:<id>``, ``entra:group:<id>``, ``slack:channel:<id>``,
``entra:org:<tenant>``, ``slack:workspace:<team>``, ...) are held through the
members listed by ``SetGroupMembers``; membership is resolved at query time,
so a membership change never needs a reindex.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from retrieval.contracts import Acl, SourceDocument


@dataclass(frozen=True)
class UpsertDocument:
    doc: SourceDocument


@dataclass(frozen=True)
class DeleteDocument:
    external_id: str
    source_version: int | None = None  # None: delete whatever version is stored


@dataclass(frozen=True)
class UpdateAcl:
    """ACL-only change (the fast path: no re-extraction, no re-embedding).

    The applier queues it only where the ACL differs from the one stored for the item (or the
    item has events still pending): an unchanged ACL queues nothing.  ``inherited_by_container``:
    the documents of the same source already indexed with this value as ``metadata.container_id``
    (a Confluence page's attachments) carry the same ACL; the applier finds them in the index, so
    the connector need not list them at the source.
    """

    external_id: str
    acl: Acl
    source_version: int | None = None
    inherited_by_container: str = ""


@dataclass(frozen=True)
class SetGroupMembers:
    """Replace the full member list of a group principal.

    ``member_principals`` are user principals (``confluence:user:...``,
    ``entra:user:...``, ``slack:user:...``); nested groups are already expanded
    by the connector (transitive members).
    """

    group_principal: str
    member_principals: tuple[str, ...]
    display_name: str = ""


@dataclass(frozen=True)
class IdentitySeen:
    """An external account the source told us about (for identity mapping)."""

    principal: str  # e.g. "slack:user:U123"
    email: str | None
    email_verified: bool
    display_name: str = ""
    is_guest: bool = False
    is_bot: bool = False
    deactivated: bool = False


SyncOp = UpsertDocument | DeleteDocument | UpdateAcl | SetGroupMembers | IdentitySeen
Checkpoint = dict[str, Any]  # JSON-serialisable, persisted by the caller after each op


class Connector(Protocol):
    """The interface the sync tasks drive.  Each method yields ``(op, checkpoint)``
    pairs; the caller persists ``checkpoint`` after applying ``op`` so a restart
    resumes from the last applied operation (at-least-once; ops are idempotent)."""

    kind: str

    def full_sync(self, checkpoint: Checkpoint) -> Iterator[tuple[SyncOp, Checkpoint]]: ...

    def incremental_sync(self, checkpoint: Checkpoint) -> Iterator[tuple[SyncOp, Checkpoint]]: ...

    def permission_sync(self, checkpoint: Checkpoint) -> Iterator[tuple[SyncOp, Checkpoint]]: ...

    def slim_listing(self) -> Iterator[str]:
        """All external ids currently at the source (used to prune deletions)."""
        ...

    def test_connection(self) -> None:
        """Raise ConnectorError with a user-facing message if credentials/URL are wrong."""
        ...


class ConnectorError(Exception):
    """A failure to show an admin; the message never contains credentials."""

    def __init__(self, message: str, *, item: str = "", retry_after: float | None = None) -> None:
        super().__init__(message)
        self.item = item
        self.retry_after = retry_after
