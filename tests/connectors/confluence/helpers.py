"""Test helpers: an in-memory index that applies sync ops, and a tiny CNF evaluator."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from connectors.base import (
    Checkpoint,
    DeleteDocument,
    IdentitySeen,
    SetGroupMembers,
    SyncOp,
    UpdateAcl,
    UpsertDocument,
)
from retrieval.contracts import Acl, SourceDocument

ALICE = "confluence:user:557058:a11ce000-0000-4000-8000-000000000001"
BOB = "confluence:user:557058:b0b00000-0000-4000-8000-000000000002"
CAROL = "confluence:user:557058:ca201000-0000-4000-8000-000000000003"
CAST = {"alice": ALICE, "bob": BOB, "carol": CAROL}


def can_read(acl: Acl, principals: set[str]) -> bool:
    """CNF: every clause must contain a held principal; no clauses or an empty clause is nobody."""
    return bool(acl) and all(any(p in principals for p in clause) for clause in acl)


@dataclass
class Index:
    """What the pipeline would hold after applying the ops, keyed by external id."""

    docs: dict[str, SourceDocument] = field(default_factory=dict)
    acls: dict[str, Acl] = field(default_factory=dict)
    groups: dict[str, set[str]] = field(default_factory=dict)
    identities: dict[str, IdentitySeen] = field(default_factory=dict)
    applied: list[SyncOp] = field(default_factory=list)
    checkpoint: Checkpoint = field(default_factory=dict)

    def apply(self, op: SyncOp) -> None:
        self.applied.append(op)
        if isinstance(op, UpsertDocument):
            self.docs[op.doc.external_id] = op.doc
            self.acls[op.doc.external_id] = op.doc.acl
        elif isinstance(op, DeleteDocument):
            self.docs.pop(op.external_id, None)
            self.acls.pop(op.external_id, None)
        elif isinstance(op, UpdateAcl):
            # As connectors.actions.apply_sync_op: the item, and the indexed documents whose
            # metadata names it as their container (a page's attachments).
            for eid, doc in self.docs.items():
                inherits = (
                    bool(op.inherited_by_container) and doc.metadata.get("container_id") == op.inherited_by_container
                )
                if eid == op.external_id or inherits:
                    self.acls[eid] = op.acl
        elif isinstance(op, SetGroupMembers):
            self.groups[op.group_principal] = set(op.member_principals)
        elif isinstance(op, IdentitySeen):
            self.identities[op.principal] = op

    def run(self, stream: Iterable[tuple[SyncOp, Checkpoint]]) -> Index:
        """Apply each op, then persist its checkpoint, exactly like the sync task."""
        for op, checkpoint in stream:
            self.apply(op)
            self.checkpoint = checkpoint
        return self

    def principals_of(self, user: str) -> set[str]:
        held = {user, "public:tenant"}  # every signed-in user of the tenant holds public:tenant
        held |= {group for group, members in self.groups.items() if user in members}
        return held

    def readable(self, user: str) -> set[str]:
        principals = self.principals_of(user)
        return {eid for eid, acl in self.acls.items() if can_read(acl, principals)}

    def table(self) -> dict[str, set[str]]:
        return {name: self.readable(principal) for name, principal in CAST.items()}
