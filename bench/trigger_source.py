#!/usr/bin/env python3
"""The trigger source on DuckDB 2.0 against recomputing, in one run (run it with DuckDB 2.0.1's
Python: .venv-duckdb2/bin/python; `make bench-triggers`).

Three workloads, all written as ordinary SQL from a second connection, with no declaration:
- star: a fact table (ROWS rows, RELY keys to three dimensions) and a grouped 4-way join; each
  batch inserts, deletes and updates FRACTION of the facts and inserts a dimension row. Refresh
  time against a recompute of the same query on the same data, per batch; with nothing to do.
- writes: the cost triggers add to the user's statements: each statement on a table a view reads
  (trigger source) against the same statement on an identical table no view reads.
- manyviews: VIEWS grouped views over one table, each refreshed on its own after a mixed batch,
  against recomputing all of them.
- tpch: TPC-H (SF1 by default; data from DuckDB 1.5.5's generator, run with --tpch-python, as
  Parquet loaded into a 2.0.1 file), views shaped like Q3, Q5 and Q10 (bench/openivm_bench/tpch.py)
  with the RELY foreign keys declared, and RF1 + RF2 batches of 0.1% of the orders as ordinary
  INSERT and DELETE statements in one transaction; each view refreshed against its recompute.

Prints medians and ratios (recompute / refresh; statement with triggers / without) and writes
bench/results/trigger_source.md.
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import duckdb

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from openivm_bench.tpch import QUERIES as TPCH_QUERIES, RELY_FKS as TPCH_FKS  # noqa: E402

TPCH_TABLES = ("orders", "lineitem", "customer", "supplier", "nation", "region")


def timed(f):
    t = time.perf_counter()
    f()
    return (time.perf_counter() - t) * 1000


def settle(con):
    """DuckDB's deferred work for the writes just committed: the first trivial statement after
    them, less a second one. After writes that fired statement triggers it is several ms (also
    with triggers made by hand and openivm not loaded), and whichever statement runs next pays
    it; the benchmark counts it with the writes (`writes`), not with the refresh that follows."""
    first = timed(lambda: con.execute("SELECT 1").fetchall())
    return max(0.0, first - timed(lambda: con.execute("SELECT 1").fetchall()))


def refreshed(con, view):
    """Refreshes `view`: its mode and the wall time of the call, as the client sees it (the same
    clock as a recompute's)."""
    t = time.perf_counter()
    mode = con.execute(f"SELECT mode FROM refresh('{view}')").fetchone()[0]
    return mode, (time.perf_counter() - t) * 1000


def connect(ext, path):
    con = duckdb.connect(path, config={"allow_unsigned_extensions": "true"})
    con.execute(f"LOAD '{ext}'")
    con.execute("CALL openivm_set('openivm_default_source', 'trigger')")
    return con


STAR_VIEW = (
    "SELECT d1.cat AS c1, d2.cat AS c2, sum(f.amt) AS amt, count(*) AS n "
    "FROM fact f JOIN d1 ON f.d1_id = d1.id JOIN d2 ON f.d2_id = d2.id JOIN d3 ON f.d3_id = d3.id "
    "GROUP BY d1.cat, d2.cat"
)


def star(con, w, rows, fraction, batches):
    dims = 1000
    for d in ("d1", "d2", "d3"):
        con.execute(f"CREATE TABLE {d}(id INTEGER PRIMARY KEY, name VARCHAR, cat VARCHAR)")
        con.execute(f"INSERT INTO {d} SELECT i, 'n' || i, 'c' || (i % 25) FROM range({dims}) t(i)")
    # The keys are declared (RELY), not catalog foreign keys: on DuckDB 2.0.1 a table with a
    # foreign key, on either side, keeps the diff source (docs/refresh.md, "The trigger source").
    con.execute("CREATE TABLE fact(fid BIGINT, d1_id INTEGER, d2_id INTEGER, d3_id INTEGER, amt DECIMAL(12,2), qty INTEGER)")
    for d in ("d1", "d2", "d3"):
        con.execute(f"CALL openivm_declare_rely_fk('fact', '{d}_id', '{d}', 'id')")
    con.execute(
        f"INSERT INTO fact SELECT i, i % {dims}, (i * 7) % {dims}, (i * 13) % {dims}, (i % 1000) / 10, i % 10 "
        f"FROM range({rows}) t(i)"
    )
    con.execute("CHECKPOINT")
    con.execute(f"CALL openivm_create('star', '{STAR_VIEW}')")
    sources = con.execute("SELECT table_name, source FROM openivm.feeds ORDER BY 1").fetchall()
    n = max(1, int(rows * fraction))
    next_fid, next_dim = rows, dims
    refresh, recompute, modes, deferred = [], [], [], []
    for b in range(batches + 1):
        w.execute(
            f"INSERT INTO fact SELECT {next_fid} + i, i % {dims}, (i * 3) % {dims}, (i * 5) % {dims}, i % 97, 1 "
            f"FROM range({n}) t(i)"
        )
        next_fid += n
        # scattered deletes and updates (every k-th row of a slice of ids)
        step = max(1, rows // n)
        lo = (b * 7919) % step
        w.execute(f"DELETE FROM fact WHERE fid < {rows} AND fid % {step} = {lo}")
        w.execute(f"UPDATE fact SET amt = amt + 1 WHERE fid < {rows} AND fid % {step} = {(lo + 1) % step}")
        w.execute(f"INSERT INTO d1 VALUES ({next_dim}, 'new', 'c{next_dim % 25}')")
        next_dim += 1
        settled = settle(con)
        mode, ms = refreshed(con, "star")
        if b == 0:
            continue  # the first capture of a new feed diffs its table once
        deferred.append(settled)
        modes.append(mode)
        refresh.append(ms)
        recompute.append(timed(lambda: con.execute(f"CREATE OR REPLACE TEMP TABLE recomputed AS {STAR_VIEW}")))
    bad = con.execute("SELECT missing_rows + extra_rows FROM openivm_verify('star')").fetchone()[0]
    idle = [refreshed(con, "star")[1] for _ in range(batches)]
    return {
        "sources": sources,
        "modes": sorted(set(modes)),
        "refresh": statistics.median(refresh),
        "recompute": statistics.median(recompute),
        "idle": statistics.median(idle),
        "deferred": statistics.median(deferred),
        "verify": bad,
    }


def writes(con, w, rows, runs):
    for t in ("plain", "captured"):
        con.execute(f"CREATE TABLE {t}(id BIGINT, k INTEGER, v DECIMAL(18,2), s VARCHAR)")
        con.execute(f"INSERT INTO {t} SELECT i, i % 1000, i / 3, 's' || (i % 100) FROM range({rows}) t(i)")
    con.execute("CALL openivm_create('cap_view', 'SELECT k, sum(v) AS v, count(*) AS n FROM captured GROUP BY k')")
    con.execute("CHECKPOINT")
    small = rows // 1000
    statements = {
        "INSERT 0.1%": lambda t, r: f"INSERT INTO {t} SELECT {rows * 10} + {r} * {small} + i, i % 1000, i, 'x' FROM range({small}) t(i)",
        "INSERT 1%": lambda t, r: f"INSERT INTO {t} SELECT {rows * 20} + {r} * {small * 10} + i, i % 1000, i, 'x' FROM range({small * 10}) t(i)",
        "DELETE 0.1%": lambda t, r: f"DELETE FROM {t} WHERE id < {rows} AND id % 1000 = {r}",
        "UPDATE 0.1%": lambda t, r: f"UPDATE {t} SET v = v + 1 WHERE id < {rows} AND id % 1000 = {500 + r}",
        "UPDATE 1%": lambda t, r: f"UPDATE {t} SET v = v + 1 WHERE id < {rows} AND id % 100 = {50 + r}",
        "INSERT 10% (bulk)": lambda t, r: f"INSERT INTO {t} SELECT {rows * 30} + {r} * {rows // 10} + i, i % 1000, i, 'y' FROM range({rows // 10}) t(i)",
    }
    out = {}
    for name, make in statements.items():
        times = {"plain": [], "captured": []}
        for r in range(runs):
            for t in ("plain", "captured") if r % 2 == 0 else ("captured", "plain"):
                times[t].append(timed(lambda: w.execute(make(t, r))) + settle(con))
            # keep the log from growing across runs, as refreshes would
            con.execute("CALL refresh('cap_view')")
        out[name] = (statistics.median(times["plain"]), statistics.median(times["captured"]))
    bad = con.execute("SELECT missing_rows + extra_rows FROM openivm_verify('cap_view')").fetchone()[0]
    return out, bad


def manyviews(con, w, rows, views, batches):
    con.execute("CREATE TABLE events(id BIGINT, k INTEGER, g INTEGER, v DECIMAL(18,2))")
    con.execute(f"INSERT INTO events SELECT i, i % 5000, i % 37, i / 7 FROM range({rows}) t(i)")
    con.execute("CHECKPOINT")
    queries = [f"SELECT k % {10 + j} AS b, sum(v) AS s, count(*) AS n FROM events WHERE g <> {j} GROUP BY 1" for j in range(views)]
    for j, q in enumerate(queries):
        con.execute(f"CALL openivm_create('mv{j}', '{q}')")
    n = max(1, rows // 1000)
    refresh, recompute = [], []
    for b in range(batches + 1):
        w.execute(f"INSERT INTO events SELECT {rows} + {b} * {n} + i, i % 5000, i % 37, i FROM range({n}) t(i)")
        w.execute(f"DELETE FROM events WHERE id < {rows} AND id % 3000 = {b}")
        w.execute(f"UPDATE events SET v = v + 1 WHERE id < {rows} AND id % 3000 = {1500 + b}")
        settle(con)
        total = sum(refreshed(con, f"mv{j}")[1] for j in range(views))
        if b == 0:
            continue
        refresh.append(total)
        recompute.append(sum(timed(lambda: con.execute(f"CREATE OR REPLACE TEMP TABLE r AS {q}")) for q in queries))
    bad = sum(con.execute(f"SELECT missing_rows + extra_rows FROM openivm_verify('mv{j}')").fetchone()[0] for j in range(views))
    return {"refresh": statistics.median(refresh), "recompute": statistics.median(recompute), "verify": bad}


def tpch_parquet(python, sf):
    """TPC-H tables as Parquet files made by DuckDB 1.5.5's generator (the TPC-H extension exists
    for 1.5.5 only), kept in build/bench/data for the next run."""
    out = ROOT / "build" / "bench" / "data" / f"tpch_sf{sf:g}_parquet"
    if all((out / f"{t}.parquet").exists() for t in TPCH_TABLES):
        return out
    out.mkdir(parents=True, exist_ok=True)
    script = (
        "import duckdb, duckdb_extension_tpch, os, sys; c = duckdb.connect(); "
        "c.execute(\"LOAD '\" + os.path.join(duckdb_extension_tpch.__path__[0], 'extensions', 'v' + duckdb.__version__, "
        "'tpch.duckdb_extension') + \"'\"); "
        f"c.execute('CALL dbgen(sf={sf})'); "
        + "".join(f"c.execute(\"COPY {t} TO '{out / t}.parquet' (FORMAT parquet)\"); " for t in TPCH_TABLES)
    )
    subprocess.run([python, "-c", script], check=True)
    return out


def tpch(con, w, data, batches):
    for t in TPCH_TABLES:
        con.execute(f"CREATE TABLE {t} AS FROM read_parquet('{data / t}.parquet')")
    con.execute("CHECKPOINT")
    for child, ccols, parent, pcols in TPCH_FKS:
        con.execute("CALL openivm_declare_rely_fk(?, ?, ?, ?)", [child, ccols, parent, pcols])
    for q, sql in TPCH_QUERIES.items():
        con.execute("CALL openivm_create(?, ?)", [q, sql])
    base_max = con.execute("SELECT max(o_orderkey) FROM orders").fetchone()[0]
    next_key = base_max + 1
    k = max(1, con.execute("SELECT count(*) FROM orders").fetchone()[0] // 1000)
    out = {q: {"refresh": [], "recompute": [], "modes": set()} for q in TPCH_QUERIES}
    for b in range(batches + 1):
        w.execute("BEGIN")
        w.execute(f"CREATE OR REPLACE TEMP TABLE rf1 AS SELECT o_orderkey AS old_key, {next_key} + row_number() "
                  f"OVER (ORDER BY o_orderkey) - 1 AS new_key FROM (SELECT o_orderkey FROM orders WHERE o_orderkey <= "
                  f"{base_max} ORDER BY hash(o_orderkey, {b}, 1) LIMIT {k})")
        w.execute("INSERT INTO orders SELECT o.* REPLACE (m.new_key AS o_orderkey) FROM orders o JOIN rf1 m ON o.o_orderkey = m.old_key")
        w.execute("INSERT INTO lineitem SELECT l.* REPLACE (m.new_key AS l_orderkey) FROM lineitem l JOIN rf1 m ON l.l_orderkey = m.old_key")
        w.execute(f"CREATE OR REPLACE TEMP TABLE rf2 AS SELECT o_orderkey AS key FROM orders WHERE o_orderkey <= {base_max} "
                  f"ORDER BY hash(o_orderkey, {b}, 2) LIMIT {k}")
        w.execute("DELETE FROM lineitem WHERE l_orderkey IN (SELECT key FROM rf2)")
        w.execute("DELETE FROM orders WHERE o_orderkey IN (SELECT key FROM rf2)")
        w.execute("COMMIT")
        settle(con)
        next_key += k
        # In this order, q3's refresh also captures the batch of the tables the views share.
        for q, sql in TPCH_QUERIES.items():
            mode, ms = refreshed(con, q)
            if b == 0:
                continue  # the first capture of a new feed diffs its table once
            out[q]["refresh"].append(ms)
            out[q]["modes"].add(mode)
            out[q]["recompute"].append(timed(lambda: con.execute(f"CREATE OR REPLACE TEMP TABLE recomputed AS {sql}")))
    for q in TPCH_QUERIES:
        out[q]["verify"] = con.execute(f"SELECT missing_rows + extra_rows FROM openivm_verify('{q}')").fetchone()[0]
    sources = con.execute("SELECT table_name, source FROM openivm.feeds ORDER BY 1").fetchall()
    return out, k, sources


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--extension", default=str(ROOT / "build/release/openivm.duckdb_extension"))
    ap.add_argument("--rows", type=int, default=2_000_000, help="star fact rows (the issue's target: 20M)")
    ap.add_argument("--write-rows", type=int, default=5_000_000)
    ap.add_argument("--views-rows", type=int, default=5_000_000)
    ap.add_argument("--views", type=int, default=20)
    ap.add_argument("--batches", type=int, default=5)
    ap.add_argument("--only", choices=["star", "writes", "manyviews", "tpch"])
    ap.add_argument("--sf", type=float, default=1, help="TPC-H scale factor")
    ap.add_argument("--tpch-python", default=str(ROOT / ".venv/bin/python"),
                    help="a Python with DuckDB 1.5.5 and duckdb-extension-tpch, to generate the TPC-H data")
    ap.add_argument("--out", default=str(ROOT / "bench/results/trigger_source.md"))
    args = ap.parse_args()
    if not duckdb.__version__.startswith("2"):
        sys.exit("run this benchmark with DuckDB 2.0 (.venv-duckdb2/bin/python)")
    lines = [f"# Trigger source against recompute (DuckDB {duckdb.__version__}, {time.strftime('%Y-%m-%d %H:%M')})", ""]

    def emit(s=""):
        print(s, flush=True)
        lines.append(s)

    with tempfile.TemporaryDirectory() as d:
        def fresh(name):
            con = connect(args.extension, os.path.join(d, f"{name}.db"))
            return con, con.cursor()

        if args.only in (None, "star"):
            emit(f"## Star: {args.rows:,} facts, 3 dimensions with RELY keys, grouped 4-way join")
            emit("")
            emit("| batch | refresh ms | recompute ms | recompute / refresh | modes | verify | writes' deferred ms |")
            emit("|---|---|---|---|---|---|---|")
            for fraction in (0.001, 0.01):
                con, w = fresh(f"star{fraction}")
                s = star(con, w, args.rows, fraction, args.batches)
                emit(f"| {fraction:.1%} inserts + deletes + updates, 1 dimension insert | {s['refresh']:.1f} | "
                     f"{s['recompute']:.1f} | {s['recompute'] / s['refresh']:.2f}x | {', '.join(s['modes'])} | {s['verify']} | "
                     f"{s['deferred']:.1f} |")
                if fraction == 0.001:
                    idle = s
                con.close()
            emit(f"| nothing to do | {idle['idle']:.1f} | {idle['recompute']:.1f} | {idle['recompute'] / idle['idle']:.1f}x | | | |")
            emit("")
            emit("Writes' deferred ms: DuckDB's deferred work for the batch's triggered writes, paid by the first "
                 "statement after them (`settle`); it is left out of the refresh and counted in the write costs below.")
            emit("")
            emit(f"Sources: {idle['sources']}")
            emit("")
        if args.only in (None, "writes"):
            con, w = fresh("writes")
            out, bad = writes(con, w, args.write_rows, max(args.batches, 5))
            emit(f"## The cost on the user's statements: {args.write_rows:,}-row table, medians")
            emit("")
            emit("Each statement's time includes DuckDB's deferred work for it, paid by the next statement (`settle`).")
            emit("")
            emit("| statement | no view ms | trigger source ms | ratio |")
            emit("|---|---|---|---|")
            for name, (plain, cap) in out.items():
                emit(f"| {name} | {plain:.1f} | {cap:.1f} | {cap / plain:.2f}x |")
            emit("")
            emit(f"verify after the writes: {bad}")
            emit("")
            con.close()
        if args.only in (None, "manyviews"):
            con, w = fresh("many")
            m = manyviews(con, w, args.views_rows, args.views, args.batches)
            emit(f"## {args.views} views over one {args.views_rows:,}-row table, 0.1% mixed batch, each refreshed on its own")
            emit("")
            emit(f"all refreshes {m['refresh']:.1f} ms, all recomputes {m['recompute']:.1f} ms: "
                 f"refreshes take {m['refresh'] / m['recompute']:.3f} of recomputing (verify: {m['verify']})")
            emit("")
            con.close()
        if args.only in (None, "tpch"):
            data = tpch_parquet(args.tpch_python, args.sf)
            con, w = fresh("tpch")
            t, k, sources = tpch(con, w, data, args.batches)
            emit(f"## TPC-H SF{args.sf:g}: RF1 + RF2 of {k:,} orders each (0.1%) as ordinary INSERT and DELETE, medians")
            emit("")
            emit("| view | refresh ms | recompute ms | recompute / refresh | modes | verify |")
            emit("|---|---|---|---|---|---|")
            for q, r in t.items():
                ref, rec = statistics.median(r["refresh"]), statistics.median(r["recompute"])
                emit(f"| {q} | {ref:.1f} | {rec:.1f} | {rec / ref:.2f}x | {', '.join(sorted(r['modes']))} | {r['verify']} |")
            per_batch = list(zip(*(r["refresh"] for r in t.values())))
            rec_batch = list(zip(*(r["recompute"] for r in t.values())))
            ref_all = statistics.median(sum(b) for b in per_batch)
            rec_all = statistics.median(sum(b) for b in rec_batch)
            emit(f"| all three, one after the other | {ref_all:.1f} | {rec_all:.1f} | {rec_all / ref_all:.2f}x | | |")
            emit("")
            emit("The views are refreshed in the order of the table, so q3's refresh also captures the batch of the "
                 "tables the three share (orders, lineitem, customer); q5 and q10 read it from the logs.")
            emit("")
            emit(f"Sources: {sources}")
            emit("")
            con.close()
    pathlib.Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
