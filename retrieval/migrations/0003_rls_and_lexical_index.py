from django.db import migrations

from tenants.rls import enable_rls

LEXICAL_TABLES = [
    # One row per (chunk, lexeme): BM25 needs tf and |d| per posting, df per lexeme.
    # The primary key doubles as the covering index the lexical leg scans.
    """
    CREATE TABLE retrieval_posting (
        tenant_id bigint NOT NULL REFERENCES tenants_tenant(id) ON DELETE CASCADE,
        lexeme text NOT NULL,
        chunk_id bigint NOT NULL REFERENCES retrieval_chunk(id) ON DELETE CASCADE,
        tf integer NOT NULL,
        dl integer NOT NULL,
        acl_set_id bigint NOT NULL,
        PRIMARY KEY (tenant_id, lexeme, chunk_id) INCLUDE (tf, dl, acl_set_id)
    )
    """,
    "CREATE INDEX retrieval_posting_chunk ON retrieval_posting (chunk_id)",
    """
    CREATE TABLE retrieval_termstat (
        tenant_id bigint NOT NULL REFERENCES tenants_tenant(id) ON DELETE CASCADE,
        lexeme text NOT NULL,
        df integer NOT NULL,
        PRIMARY KEY (tenant_id, lexeme)
    )
    """,
]


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0002_initial"), ("tenants", "0002_rls")]

    operations = [
        migrations.RunSQL(LEXICAL_TABLES, reverse_sql=["DROP TABLE retrieval_termstat", "DROP TABLE retrieval_posting"]),
        enable_rls("retrieval_source"),
        enable_rls("retrieval_aclset"),
        enable_rls("retrieval_document"),
        enable_rls("retrieval_chunk"),
        enable_rls("retrieval_indexstate"),
        enable_rls("retrieval_ingestevent"),
        enable_rls("retrieval_posting"),
        enable_rls("retrieval_termstat"),
    ]
