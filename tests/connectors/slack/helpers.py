"""Test helpers: a tiny stand-in for what the ingestion pipeline does with sync ops.

``Ledger`` applies ops the way the contracts describe (versioned upserts, group
membership replaced wholesale, CNF evaluated at query time) so tests can ask
"which documents can alice read?" without a database.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from connectors.base import DeleteDocument, IdentitySeen, SetGroupMembers, SyncOp, UpdateAcl, UpsertDocument
from retrieval.contracts import Acl, SourceDocument

CAST = {
    "alice": "U0ALICE",
    "bob": "U0BOB",
    "carol": "U0CAROL",
    "gail": "U0GAIL",
    "bot": "U0BOT",
    "dan": "U0DAN",
}


def cnf_allows(acl: Acl, principals: set[str]) -> bool:
    """Every clause must contain a principal the user holds; no clauses means nobody (fail closed)."""
    return bool(acl) and all(any(p in principals for p in clause) for clause in acl)


@dataclass
class Ledger:
    docs: dict[str, SourceDocument] = field(default_factory=dict)
    groups: dict[str, set[str]] = field(default_factory=dict)
    identities: dict[str, IdentitySeen] = field(default_factory=dict)
    applied: list[SyncOp] = field(default_factory=list)

    def apply_all(self, ops: Iterable[SyncOp]) -> Ledger:
        for op in ops:
            self.apply(op)
        return self

    def apply(self, op: SyncOp) -> None:
        self.applied.append(op)
        if isinstance(op, UpsertDocument):
            stored = self.docs.get(op.doc.external_id)
            if stored is None or stored.source_version <= op.doc.source_version:
                self.docs[op.doc.external_id] = op.doc
        elif isinstance(op, DeleteDocument):
            stored = self.docs.get(op.external_id)
            if stored is not None and (op.source_version is None or stored.source_version <= op.source_version):
                del self.docs[op.external_id]
        elif isinstance(op, UpdateAcl):
            stored = self.docs.get(op.external_id)
            if stored is not None:
                self.docs[op.external_id] = SourceDocument(**{**stored.__dict__, "acl": op.acl})
        elif isinstance(op, SetGroupMembers):
            self.groups[op.group_principal] = set(op.member_principals)
        elif isinstance(op, IdentitySeen):
            self.identities[op.principal] = op

    def principals_of(self, user_id: str) -> set[str]:
        own = f"slack:user:{user_id}"
        return {own} | {group for group, members in self.groups.items() if own in members}

    def readable(self, user_id: str) -> set[str]:
        principals = self.principals_of(user_id)
        return {doc_id for doc_id, doc in self.docs.items() if cnf_allows(doc.acl, principals)}

    def table(self) -> dict[str, set[str]]:
        """name -> readable external ids, for the whole cast."""
        return {name: self.readable(uid) for name, uid in CAST.items()}


def ops_of(pairs: Iterable[tuple[SyncOp, object]]) -> list[SyncOp]:
    return [op for op, _ in pairs]
