#!/usr/bin/env python3
"""Benchmark: incremental refresh against full recompute, measured in the same run.

A star schema (a fact table with foreign keys to three dimensions) and a 3-way grouped
aggregate over it. For each kind of batch the script applies the batch, times `refresh`
(with FK pruning on and, on an identical copy of the database state, off) and times a full
recompute of the query into a table, and prints the ratios. Every refresh is checked against
the recompute, so a fast wrong answer cannot pass.

usage: bench.py --extension PATH [--rows N] [--repeat K]
"""
import argparse
import statistics
import time

import duckdb

QUERY = """
SELECT p.category, s.region, c.segment, SUM(f.amount) AS revenue, COUNT(*) AS sales, AVG(f.quantity) AS avg_qty
FROM fact_sales f
JOIN dim_product p ON f.product_id = p.product_id
JOIN dim_store s ON f.store_id = s.store_id
JOIN dim_customer c ON f.customer_id = c.customer_id
GROUP BY p.category, s.region, c.segment
"""


def setup(con, rows):
    con.execute("CREATE TABLE dim_product(product_id INTEGER PRIMARY KEY, category VARCHAR)")
    con.execute("CREATE TABLE dim_store(store_id INTEGER PRIMARY KEY, region VARCHAR)")
    con.execute("CREATE TABLE dim_customer(customer_id INTEGER PRIMARY KEY, segment VARCHAR)")
    con.execute("""CREATE TABLE fact_sales(sale_id BIGINT,
        product_id INTEGER REFERENCES dim_product(product_id),
        store_id INTEGER REFERENCES dim_store(store_id),
        customer_id INTEGER REFERENCES dim_customer(customer_id),
        quantity INTEGER, amount DECIMAL(12,2))""")
    con.execute("INSERT INTO dim_product SELECT i, 'cat' || (i % 50) FROM range(10000) r(i)")
    con.execute("INSERT INTO dim_store SELECT i, 'region' || (i % 20) FROM range(1000) r(i)")
    con.execute("INSERT INTO dim_customer SELECT i, 'seg' || (i % 10) FROM range(100000) r(i)")
    con.execute(f"""INSERT INTO fact_sales SELECT i, (i * 7) % 10000, (i * 13) % 1000, (i * 31) % 100000,
        1 + i % 5, ((i % 1000) / 10.0)::DECIMAL(12,2) FROM range({rows}) r(i)""")


BATCHES = {
    "fact inserts (1k rows)": [
        "INSERT INTO fact_sales SELECT 100000000 + i + {n} * 1000, (i * 3) % 10000, i % 1000, (i * 17) % 100000, 2, 9.99 FROM range(1000) r(i)",
    ],
    "new products + their sales": [
        "INSERT INTO dim_product SELECT 20000 + i + {n} * 100, 'newcat' FROM range(100) r(i)",
        "INSERT INTO fact_sales SELECT 200000000 + i + {n} * 1000, 20000 + (i % 100) + {n} * 100, i % 1000, i % 100000, 1, 5.00 FROM range(1000) r(i)",
    ],
    "new rows in all 3 dimensions + sales": [
        "INSERT INTO dim_product SELECT 30000 + i + {n} * 100, 'newcat' FROM range(100) r(i)",
        "INSERT INTO dim_store SELECT 30000 + i + {n} * 100, 'newregion' FROM range(100) r(i)",
        "INSERT INTO dim_customer SELECT 300000 + i + {n} * 100, 'newseg' FROM range(100) r(i)",
        "INSERT INTO fact_sales SELECT 300000000 + i + {n} * 1000, 30000 + (i % 100) + {n} * 100, 30000 + (i % 100) + {n} * 100, 300000 + (i % 100) + {n} * 100, 1, 3.00 FROM range(1000) r(i)",
    ],
    "fact deletes + updates (1k rows)": [
        "DELETE FROM fact_sales WHERE sale_id BETWEEN {n} * 1000 AND {n} * 1000 + 499",
        "UPDATE fact_sales SET amount = amount + 1 WHERE sale_id BETWEEN {n} * 1000 + 500 AND {n} * 1000 + 999",
    ],
    "no change": [],
}


def timed(con, sql):
    started = time.perf_counter()
    rows = con.execute(sql).fetchall()
    return (time.perf_counter() - started) * 1000, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--extension", required=True)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    con = duckdb.connect(config={"allow_unsigned_extensions": True})
    con.execute(f"LOAD '{args.extension}'")
    setup(con, args.rows)
    con.execute("CALL openivm_create('rollup', ?)", [QUERY])
    con.execute("CALL openivm_create('rollup_nofk', ?)", [QUERY])
    print(f"fact_sales: {args.rows:,} rows; 3 dimensions; view: 4-way join, 3 group keys, SUM/COUNT/AVG")
    print(f"{'batch':34} {'refresh ms':>10} {'no-FK ms':>9} {'recompute ms':>12} {'refresh/recompute':>18} {'terms run/total':>16}")
    n = 0
    for name, stmts in BATCHES.items():
        ref, nofk, full, terms = [], [], [], None
        for _ in range(args.repeat):
            n += 1
            for s in stmts:
                con.execute(s.format(n=n))
            ms, rows = timed(con, "SELECT terms_run, terms_total FROM refresh('rollup')")
            terms = rows[0]
            ref.append(ms)
            ms, _ = timed(con, "SELECT terms_run FROM refresh('rollup_nofk', fk_pruning := false)")
            nofk.append(ms)
            ms, _ = timed(con, f"CREATE OR REPLACE TABLE recompute AS {QUERY}")
            full.append(ms)
            for v in ("rollup", "rollup_nofk"):
                diff = con.execute(
                    f"SELECT count(*) FROM ((FROM {v} EXCEPT ALL FROM recompute) UNION ALL (FROM recompute EXCEPT ALL FROM {v}))"
                ).fetchone()[0]
                assert diff == 0, f"{v} differs from the recompute after '{name}'"
        r, nf, f = statistics.median(ref), statistics.median(nofk), statistics.median(full)
        print(f"{name:34} {r:10.1f} {nf:9.1f} {f:12.1f} {r / f:18.2f} {terms[0]:>7}/{terms[1]}")
    print("ratios < 1 mean the incremental refresh beat a full recompute measured in the same run;")
    print("refresh includes change capture, which compares every table of the view with its snapshot")


if __name__ == "__main__":
    main()
