"""EXPLAIN (ANALYZE, BUFFERS) of the clustered exact scan on the benchmark's 1M-row tables (issue 19).

    source <data dir>/env.bench
    .venv/bin/python benchmarks/vector_ivf_explain.py --rows 1000000 --nlist 512 --nprobe 32

Runs the product's statement shape (probed clusters UNION ALL rows without a cluster, keyacl index) for the
first query of each reader selectivity and writes the plans to
``benchmarks/out/vector_ivf_explain_<rows>.txt``; needs the tables ``vector_filtered.py`` built
(``--strategies ivf_keyacl_nl<L>_p<P>``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vector_filtered import OUT, make_queries, vec_literal  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--nlist", type=int, default=512)
    ap.add_argument("--nprobe", type=int, default=32)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--selectivities", default="33,100")
    args = ap.parse_args()
    schema, t = f"bench_vf_real_{args.rows}", f"bench_vf_real_{args.rows}.ivf{args.nlist}"
    conn = psycopg.connect(os.environ["CAIRN_PG_SUPERUSER_URL"], autocommit=True)
    out = [f"schema {schema}, nlist {args.nlist}, nprobe {args.nprobe}, loadavg {os.getloadavg()}"]
    for sel in [float(x) for x in args.selectivities.split(",")]:
        q, tenant, readable = make_queries(1, args.seed, sel, "real")[0]
        v = vec_literal(q)
        probe = (f"SELECT id, emb_half <=> %s::halfvec AS d FROM {t} WHERE tenant_id = %s "
                 f"AND vcluster = ANY(ARRAY(SELECT cluster FROM {t}_centroids WHERE tenant_id = %s "
                 f"ORDER BY centroid <=> %s::vector LIMIT %s)) AND acl_set_id = ANY(%s) OFFSET 0")  # fmt: skip
        sql = (f"SELECT id FROM (({probe}) UNION ALL (SELECT id, emb_half <=> %s::halfvec AS d FROM {t} "
               f"WHERE tenant_id = %s AND vcluster IS NULL AND acl_set_id = ANY(%s) OFFSET 0)) s ORDER BY d, id LIMIT 10")  # fmt: skip
        with conn.transaction():
            conn.execute("SET LOCAL enable_seqscan = off")
            conn.execute("SET LOCAL enable_bitmapscan = off")
            for _ in range(3):  # warm
                conn.execute(sql, [v, tenant, tenant, v, args.nprobe, readable, v, tenant, readable]).fetchall()
            plan = conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql,
                                [v, tenant, tenant, v, args.nprobe, readable, v, tenant, readable]).fetchall()  # fmt: skip
        out.append(f"\n== reader of {sel:g} % of a tenant ({len(readable)} ACL sets)")
        out.extend(r[0] for r in plan)
    text = "\n".join(out)
    print(text)
    (OUT / f"vector_ivf_explain_{args.rows}.txt").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
