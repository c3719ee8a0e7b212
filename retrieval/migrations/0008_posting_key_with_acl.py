from django.db import migrations

# The lexical leg reads the postings of each query lexeme restricted to the reader's ACL sets
# (``acl_set_id = ANY(...)``).  With acl_set_id as a key column before chunk_id, a user who reads a
# few sets scans only those ranges instead of every posting of the lexeme (100k chunks, 2 of 50
# groups: BM25 leg p50 25 -> 8 ms; docs/benchmarks.md "Ingest throughput and query latency").  A chunk has one
# ACL set, so the key stays unique per (tenant, lexeme, chunk).  Rebuilding the key locks the table
# for its build (about 13 s per 9M postings on 2 cores).
FORWARD = [
    "ALTER TABLE retrieval_posting DROP CONSTRAINT retrieval_posting_pkey",
    "ALTER TABLE retrieval_posting ADD CONSTRAINT retrieval_posting_pkey "
    "PRIMARY KEY (tenant_id, lexeme, acl_set_id, chunk_id) INCLUDE (tf, dl)",
]
BACKWARD = [
    "ALTER TABLE retrieval_posting DROP CONSTRAINT retrieval_posting_pkey",
    "ALTER TABLE retrieval_posting ADD CONSTRAINT retrieval_posting_pkey "
    "PRIMARY KEY (tenant_id, lexeme, chunk_id) INCLUDE (tf, dl, acl_set_id)",
]


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0007_ingest_event_pending_item")]

    operations = [migrations.RunSQL(FORWARD, reverse_sql=BACKWARD)]
