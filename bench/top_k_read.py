"""What reading a top-k view costs: a view of the top 10 of 1M groups (`ORDER BY total DESC, g
LIMIT 10`), read from the view, as `ORDER BY ... LIMIT` over its stored result directly, as the
row_number() filter earlier versions of the view ran over the same stored result, and as a
recompute of its query. The stored result first has rows deleted by refreshes and is checkpointed
in between (the state whose statistics DuckDB's row-group pruner misreads). Medians of 7 runs, ms.

    .venv/bin/python bench/top_k_read.py [--groups 1000000] [--runs 7]
"""
import argparse
import pathlib
import statistics
import time

import duckdb

ROOT = pathlib.Path(__file__).resolve().parents[1]
QUERY = "SELECT g, sum(v) AS total, count(*) AS n FROM t GROUP BY g ORDER BY total DESC, g LIMIT 10"


def median_ms(con, sql, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        con.execute(sql).fetchall()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--extension", default=str(ROOT / "build" / "release" / "openivm.duckdb_extension"))
    args = ap.parse_args()
    con = duckdb.connect(config={"allow_unsigned_extensions": True})
    con.execute(f"LOAD '{args.extension}'")
    con.execute(f"CREATE TABLE t AS SELECT i % {args.groups} AS g, (i * 7919) % 100003 AS v FROM range({2 * args.groups}) r(i)")
    con.execute("CALL openivm_create('top', ?)", [QUERY])
    for batch in range(3):
        con.execute("CHECKPOINT")
        con.execute(f"DELETE FROM t WHERE g % 97 = {batch}")
        con.execute(f"INSERT INTO t SELECT {args.groups} + {batch} * 1000 + i, 100003 FROM range(20) r(i)")
        con.execute("CALL refresh('top')")
    data = "openivm.data_main_top"
    # The stored result's sum and count columns, as the view reads them.
    shown = f"SELECT openivm_g0 AS g, openivm_a0_sum AS total, openivm_count AS n FROM {data}"
    assert con.execute("FROM top").fetchall() == con.execute(QUERY).fetchall()
    cases = {
        "read the view": "FROM top",
        "ORDER BY LIMIT over the stored result": f"{shown} ORDER BY total DESC, g LIMIT 10",
        "row_number() over the stored result (earlier view)":
            f"{shown} QUALIFY row_number() OVER (ORDER BY total DESC, g) <= 10 ORDER BY total DESC, g",
        "recompute": QUERY,
    }
    print(f"DuckDB {duckdb.__version__}, top 10 of {args.groups:,} groups, median of {args.runs} runs")
    for name, sql in cases.items():
        print(f"  {name:52s} {median_ms(con, sql, args.runs):8.1f} ms")


if __name__ == "__main__":
    main()
