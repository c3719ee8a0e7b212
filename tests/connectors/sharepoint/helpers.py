"""What the sync task does with a connector's ops, in memory, plus a tiny CNF evaluator."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from connectors.base import (
    Checkpoint,
    DeleteDocument,
    IdentitySeen,
    SetGroupMembers,
    SyncOp,
    UpdateAcl,
    UpsertDocument,
)
from retrieval.contracts import SourceDocument


@dataclass
class Index:
    docs: dict[str, SourceDocument] = field(default_factory=dict)
    members: dict[str, tuple[str, ...]] = field(default_factory=dict)
    identities: dict[str, IdentitySeen] = field(default_factory=dict)
    checkpoint: Checkpoint = field(default_factory=dict)
    applied: list[SyncOp] = field(default_factory=list)

    def apply(self, ops: Iterator[tuple[SyncOp, Checkpoint]]) -> list[SyncOp]:
        """Apply each op, then persist its checkpoint (as JSON, like the real task)."""
        run: list[SyncOp] = []
        for op, checkpoint in ops:
            if isinstance(op, UpsertDocument):
                self.docs[op.doc.external_id] = op.doc
            elif isinstance(op, DeleteDocument):
                self.docs.pop(op.external_id, None)
            elif isinstance(op, UpdateAcl):
                old = self.docs.get(op.external_id)
                if old is not None:  # an ACL for something never indexed changes nothing
                    self.docs[op.external_id] = SourceDocument(**{**old.__dict__, "acl": op.acl})
            elif isinstance(op, SetGroupMembers):
                self.members[op.group_principal] = op.member_principals
            elif isinstance(op, IdentitySeen):
                self.identities[op.principal] = op
            self.checkpoint = json.loads(json.dumps(checkpoint))
            self.applied.append(op)
            run.append(op)
        return run

    def principals_of(self, user_id: str) -> set[str]:
        me = f"entra:user:{user_id}"
        held = {me, "public:tenant"}
        seen = self.identities.get(me)
        if seen and seen.email and seen.email_verified:
            held.add(f"user:{seen.email}")
        held |= {group for group, members in self.members.items() if me in members}
        return held

    def can_read(self, user_id: str, external_id: str) -> bool:
        acl = self.docs[external_id].acl
        held = self.principals_of(user_id)
        # CNF: every clause needs one held principal; no clauses at all means nobody.
        return bool(acl) and all(any(p in held for p in clause) for clause in acl)

    def readable(self, users: dict[str, str]) -> dict[str, list[str]]:
        """user name -> sorted titles of the documents they may read."""
        return {
            name: sorted(d.title for ext, d in self.docs.items() if self.can_read(uid, ext))
            for name, uid in users.items()
        }


def ops_of(kind: type, ops: list[Any]) -> list[Any]:
    return [op for op in ops if isinstance(op, kind)]
