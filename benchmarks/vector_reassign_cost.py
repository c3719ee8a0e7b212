"""What reassigning chunks to clusters costs on the 1M-row benchmark table (issue 19): an UPDATE of a new
``vcluster`` column with the table's indexes (primary key, covering halfvec btree, covering bit btree, HNSW
m 16) plus a (tenant, vcluster, acl) INCLUDE (id, emb_half) btree, as the product's chunk table has them.

    source <data dir>/env.bench
    .venv/bin/python benchmarks/vector_reassign_cost.py     # -> benchmarks/out/vector_reassign_cost_1000000.json

The column and the index are dropped again afterwards (the pgvector IVFFlat index of the comparison is dropped
first, the product has none).  A non-HOT update writes a new entry in every index, the HNSW graph included:
that is the per-row cost of a (re)training's reassignment.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import psycopg

OUT = Path(__file__).resolve().parent / "out"


def main() -> None:
    c = psycopg.connect(os.environ["CAIRN_PG_SUPERUSER_URL"], autocommit=True)
    s = "bench_vf_real_1000000"
    out: dict = {"loadavg_start": os.getloadavg()}
    c.execute(f"DROP INDEX IF EXISTS {s}.items_ivfflat1000")  # not on the product's chunk table
    c.execute(f"DELETE FROM {s}.ivf_meta WHERE nlist = -1000")  # vector_filtered.py rebuilds it when asked
    c.execute(f"ALTER TABLE {s}.items ADD COLUMN IF NOT EXISTS vcluster int")
    t0 = time.perf_counter()
    c.execute(
        f"CREATE INDEX IF NOT EXISTS items_vcl ON {s}.items (tenant_id, vcluster, acl_set_id) INCLUDE (id, emb_half)"
    )
    out["index_build_on_null_column_s"] = time.perf_counter() - t0
    out["indexes"] = [r[0] for r in c.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'items' "
                                              "AND schemaname = %s", [s])]  # fmt: skip
    for lo, n in [(500001, 5000), (700001, 5000)]:  # keyset batches, as retrieval/clustering.py reassigns
        t0 = time.perf_counter()
        c.execute(f"UPDATE {s}.items SET vcluster = (id %% 512)::int WHERE id >= %s AND id < %s", [lo, lo + n])
        dt = time.perf_counter() - t0
        out.setdefault("batches", []).append({"rows": n, "s": dt, "ms_per_row": dt / n * 1000})
        print(out["batches"][-1], flush=True)
    t0 = time.perf_counter()
    c.execute(f"DROP INDEX {s}.items_vcl")
    c.execute(f"ALTER TABLE {s}.items DROP COLUMN vcluster")
    c.execute(f"VACUUM (ANALYZE) {s}.items")
    out["cleanup_vacuum_s"] = time.perf_counter() - t0
    out["loadavg_end"] = os.getloadavg()
    print(json.dumps(out))
    (OUT / "vector_reassign_cost_1000000.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
