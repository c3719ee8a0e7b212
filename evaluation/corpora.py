"""Map evaluation corpora to ``SourceDocument``s (what a connector would hand the pipeline)."""

from __future__ import annotations

from evaluation.datasets import RetrievalSet
from retrieval.contracts import SourceDocument

PUBLIC = (("public:tenant",),)


def scifact_documents(rs: RetrievalSet) -> list[SourceDocument]:
    return [
        SourceDocument(
            external_id=f"scifact:{d.doc_id}",
            title=d.title,
            url=f"https://scifact.eval.invalid/doc/{d.doc_id}",
            content=d.text.encode(),
            media_type="text/plain",
            acl=PUBLIC,
            source_version=1,
            container="scifact",
            metadata={"eval_doc_id": d.doc_id},
        )
        for d in rs.corpus
    ]


def eval_doc_id(external_id: str) -> str:
    return external_id.split(":", 1)[1]
