#!/usr/bin/env python3
"""Corpus test: every query of a benchmark suite, verbatim, as a maintained view.

For `--suite tpch` the 22 queries of `tpch_queries()` run over `dbgen(sf=...)`; for `--suite
tpcds` the 99 of `tpcds_queries()` over `dsdgen(sf=...)` (both generators come from the
duckdb-extension-tpch / -tpcds wheels and are loaded by path: plain `LOAD tpch` would try to
download). Each query is created with openivm_create as it is written; then random batches change
the data (inserts of new orders with their lines, deletes of orders with their lines, updates of
measures and of join keys, updates of dimension rows, shaped like TPC-H's RF1/RF2 refresh
functions for TPC-H, and inserts/deletes/updates of fact and dimension rows for TPC-DS), every
view is refreshed (openivm_refresh_all, or one refresh per view in a random order) and compared
with a recompute of its query: as ordered lists when the query orders its result (ORDER BY, with
or without LIMIT), else as multisets. DOUBLE values are compared with a relative tolerance of
1e-9 (sums and averages maintained incrementally can differ in the last bits).

Prints the strategy of every query and the counts, and ends with "N passed, M failed" (N: views
created plus comparisons that matched).

Usage: corpus.py --extension PATH [--suite tpch|tpcds] [--sf 0.01] [--batches 3] [--seed 42]
"""

import argparse
import json
import math
import pathlib
import random
import sys
import time
from collections import Counter
from decimal import Decimal

import duckdb

SITE = pathlib.Path(duckdb.__file__).resolve().parents[1]


def generator(name):
    path = SITE / f"duckdb_extension_{name}" / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
    if not path.exists():
        sys.exit(f"the {name} extension is not installed at {path} (pip install duckdb-extension-{name})")
    return str(path)


def same_value(a, b):
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) and math.isnan(b):
            return True
        return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))
    if isinstance(a, (float, Decimal)) and isinstance(b, (float, Decimal)):
        return same_value(float(a), float(b))
    return a == b


def same_rows(got, expected):
    return len(got) == len(expected) and all(
        len(g) == len(e) and all(same_value(x, y) for x, y in zip(g, e)) for g, e in zip(got, expected)
    )


def sort_key(row):
    return tuple((v is None, str(type(v)), v if not isinstance(v, float) else round(v, 6)) for v in row)


def compare(con, view, query, ordered):
    got = con.execute(f'FROM "{view}"').fetchall()
    expected = con.execute(query).fetchall()
    if ordered:
        if same_rows(got, expected):
            return None
        # ties of the ORDER BY keys may come in any order: equal as multisets is not a failure
        # unless the query has no LIMIT (then the order of distinct keys must hold)
        return f"ordered rows differ: {len(got)} rows, expected {len(expected)}; first got {got[:3]}, expected {expected[:3]}"
    if same_rows(sorted(got, key=sort_key), sorted(expected, key=sort_key)):
        return None
    return f"rows differ: {len(got)} rows, expected {len(expected)}"


def is_ordered(con, query):
    import json

    tree = json.loads(con.execute("SELECT json_serialize_sql(?)", [query]).fetchone()[0])
    mods = tree["statements"][0]["node"].get("modifiers", [])
    return any(m.get("type") == "ORDER_MODIFIER" for m in mods)


# ---- batches ------------------------------------------------------------------------------


def tpch_batch(con, rnd, b):
    """RF1 (copies of sampled orders with their lines under new keys), RF2 (sampled orders
    deleted with their lines), updates of measures, of join keys and of dimension rows."""
    keys = [k for (k,) in con.execute("SELECT o_orderkey FROM orders ORDER BY o_orderkey").fetchall()]
    top = keys[-1]
    copied = rnd.sample(keys, min(len(keys), rnd.randint(5, 25)))
    shift = top + 8
    picked = ", ".join(str(k) for k in copied)
    con.execute(
        f"""INSERT INTO orders SELECT o_orderkey + {shift}, o_custkey, o_orderstatus, o_totalprice * 1.01,
            o_orderdate + INTERVAL (o_orderkey % 30) DAY, o_orderpriority, o_clerk, o_shippriority, o_comment
            FROM orders WHERE o_orderkey IN ({picked})"""
    )
    con.execute(
        f"""INSERT INTO lineitem SELECT l_orderkey + {shift}, l_partkey, l_suppkey, l_linenumber, l_quantity,
            l_extendedprice, l_discount, l_tax, l_returnflag, l_linestatus, l_shipdate, l_commitdate,
            l_receiptdate, l_shipinstruct, l_shipmode, l_comment
            FROM lineitem WHERE l_orderkey IN ({picked})"""
    )
    gone = ", ".join(str(k) for k in rnd.sample(keys, min(len(keys), rnd.randint(3, 15))))
    con.execute(f"DELETE FROM lineitem WHERE l_orderkey IN ({gone})")
    con.execute(f"DELETE FROM orders WHERE o_orderkey IN ({gone})")
    con.execute(f"UPDATE lineitem SET l_discount = (l_discount + 0.01) % 0.1 WHERE l_orderkey % 997 = {rnd.randint(0, 996)}")
    if rnd.random() < 0.5:
        u, ur = rnd.randint(50, 100), rnd.randint(0, 49)
        con.execute(f"UPDATE lineitem SET l_quantity = l_quantity + 1 WHERE l_orderkey % {u} = {ur}")
        con.execute(f"UPDATE lineitem SET l_suppkey = l_suppkey % 100 + 1 WHERE l_orderkey % {u + 1} = {ur}")
        con.execute(f"UPDATE orders SET o_orderpriority = '1-URGENT' WHERE o_orderkey % {u + 2} = {ur}")
        con.execute(f"UPDATE customer SET c_acctbal = c_acctbal + 100 WHERE c_custkey % {u} = {ur}")
        con.execute(f"UPDATE part SET p_size = p_size % 50 + 1, p_brand = 'Brand#23' WHERE p_partkey % {u} = {ur}")
        con.execute(f"UPDATE supplier SET s_acctbal = -s_acctbal WHERE s_suppkey % {u} = {ur}")
        con.execute(f"UPDATE partsupp SET ps_supplycost = ps_supplycost * 0.5 WHERE ps_partkey % {u} = {ur}")
    if rnd.random() < 0.2:
        con.execute("UPDATE nation SET n_regionkey = (n_regionkey + 1) % 5 WHERE n_nationkey = " + str(rnd.randint(0, 24)))


def tpcds_batch(con, rnd, b):
    """Inserts, deletes and updates of the fact tables' rows and of a few dimensions."""
    m, r = rnd.randint(40, 90), rnd.randint(0, 39)
    for fact, key in [("store_sales", "ss_ticket_number"), ("catalog_sales", "cs_order_number"),
                      ("web_sales", "ws_order_number"), ("store_returns", "sr_ticket_number"),
                      ("catalog_returns", "cr_order_number"), ("web_returns", "wr_order_number"),
                      ("inventory", "inv_item_sk")]:
        top = con.execute(f"SELECT max({key}) FROM {fact}").fetchone()[0]
        if top is None:
            continue
        cols = [c[0] for c in con.execute(f"DESCRIBE {fact}").fetchall()]
        select = ", ".join(f"{c} + {top + 1}" if c == key and fact != "inventory" else c for c in cols)
        con.execute(f"INSERT INTO {fact} SELECT {select} FROM {fact} WHERE {key} % {m} = {r} AND {key} <= {top}")
        con.execute(f"DELETE FROM {fact} WHERE {key} % {m + 7} = {r}")
    con.execute(f"UPDATE store_sales SET ss_quantity = ss_quantity + 1 WHERE ss_ticket_number % {m} = {r + 1}")
    con.execute(f"UPDATE catalog_sales SET cs_ext_sales_price = cs_ext_sales_price * 2 WHERE cs_order_number % {m} = {r + 1}")
    con.execute(f"UPDATE item SET i_current_price = i_current_price + 1 WHERE i_item_sk % {m} = {r}")
    con.execute(f"UPDATE customer SET c_birth_year = c_birth_year + 1 WHERE c_customer_sk % {m} = {r}")
    con.execute(f"UPDATE store_sales SET ss_item_sk = ss_item_sk % 100 + 1 WHERE ss_ticket_number % {m + 3} = {r}")


def generate(con, args):
    """The suite's tables, made by its generator extension; returns its queries."""
    con.execute(f"LOAD '{generator(args.suite)}'")
    if args.suite == "tpch":
        con.execute(f"CALL dbgen(sf={args.sf})")
        return con.execute("SELECT query_nr, query FROM tpch_queries() ORDER BY query_nr").fetchall()
    con.execute(f"CALL dsdgen(sf={args.sf})")
    return con.execute("SELECT query_nr, query FROM tpcds_queries() ORDER BY query_nr").fetchall()


def export(args):
    """Writes the suite's tables (Parquet) and queries (JSON) to a folder, for a host without the
    generator's wheel (DuckDB 2.0): `--data` reads them back."""
    out = pathlib.Path(args.export)
    out.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(config={"allow_unsigned_extensions": True})
    queries = generate(con, args)
    tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() ORDER BY table_name").fetchall()]
    for t in tables:
        con.execute(f"COPY {t} TO '{out / (t + '.parquet')}' (FORMAT parquet)")
    (out / "queries.json").write_text(json.dumps({"tables": tables, "queries": queries}))
    print(f"{args.suite} sf={args.sf}: {len(tables)} tables and {len(queries)} queries written to {out}")


def load_export(con, folder):
    """Creates the tables of an `export` from its Parquet files; returns its queries."""
    folder = pathlib.Path(folder)
    meta = json.loads((folder / "queries.json").read_text())
    for t in meta["tables"]:
        con.execute(f"CREATE TABLE {t} AS FROM read_parquet('{folder / (t + '.parquet')}')")
    return [tuple(q) for q in meta["queries"]]


def run_seed(args, seed):
    """One database: the suite's queries as maintained views, then random batches, each followed
    by refreshes (openivm_refresh_all, or per view in a random order, each view at its own rate:
    some lag for several batches) and a comparison of every refreshed view with its recompute.
    Returns (passed, failed, batches)."""
    rnd = random.Random(seed)
    con = duckdb.connect(config={"allow_unsigned_extensions": True})
    started = time.time()
    batch = tpch_batch if args.suite == "tpch" else tpcds_batch
    queries = load_export(con, args.data) if args.data else generate(con, args)
    if args.only:
        wanted = {int(x) for x in args.only.split(",")}
        queries = [q for q in queries if q[0] in wanted]
    con.execute(f"LOAD '{args.extension}'")
    kept = rnd.random() >= 0.3
    if not kept:
        con.execute("CALL openivm_set('openivm_kept_plans', 'false')")
    if not args.quiet:
        print(f"seed {seed}: {args.suite} sf={args.sf} generated in {time.time() - started:.1f} s; kept plans {'on' if kept else 'off'}", flush=True)
    passed = failed = 0
    views = []
    strategies = Counter()
    for nr, query in queries:
        name = f"q{nr:02d}"
        t = time.time()
        try:
            _, rows, strategy = con.execute("CALL openivm_create(?, ?)", [name, query]).fetchone()
        except duckdb.Error as e:
            failed += 1
            strategies["refused"] += 1
            print(f"FAIL seed {seed} {name}: create: {str(e).splitlines()[0][:300]}", flush=True)
            continue
        reason = con.execute("SELECT strategy_reason FROM openivm_views WHERE view_name = ?", [name]).fetchone()[0]
        strategies[strategy] += 1
        if not args.quiet:
            print(f"{name}: {strategy:12} {rows:6} rows {time.time() - t:6.2f} s  {reason or ''}", flush=True)
        # each view's rate of refresh: every batch, or lagging behind for several
        rate = rnd.choice([1.0, 1.0, 0.5, 0.2])
        views.append((name, query, is_ordered(con, query), rate))
        passed += 1
    for b in range(args.batches):
        t = time.time()
        batch(con, rnd, b)
        last = b == args.batches - 1
        if rnd.random() < 0.3:
            con.execute("CALL openivm_refresh_all()")
            refreshed, how = views, "refresh_all"
        else:
            refreshed = [v for v in views if last or rnd.random() < v[3]]
            rnd.shuffle(refreshed)
            for name, _, _, _ in refreshed:
                con.execute(f"CALL refresh('{name}')")
            how = f"{len(refreshed)} refreshes in a random order"
        took = time.time() - t
        bad = 0
        for name, query, ordered, _ in refreshed:
            problem = compare(con, name, query, ordered)
            if problem:
                failed += 1
                bad += 1
                print(f"FAIL seed {seed} batch {b}, {name}: {problem}", flush=True)
            else:
                passed += 1
        if not args.quiet:
            print(f"batch {b}: {how} in {took:.1f} s, {len(refreshed) - bad}/{len(refreshed)} views equal their recompute", flush=True)
    if not args.quiet:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(strategies.items()))
        print(f"strategies: {counts} (of {len(queries)} queries)")
    con.close()
    return passed, failed, args.batches


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--extension", required=True)
    ap.add_argument("--suite", choices=["tpch", "tpcds"], default="tpch")
    ap.add_argument("--sf", default="0.01")
    ap.add_argument("--batches", type=int, default=3, help="batches per seed")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--seeds", type=int, default=1, help="databases, each with its own seed (seed, seed + 1, ...)")
    ap.add_argument("--only", help="comma-separated query numbers")
    ap.add_argument("--quiet", action="store_true", help="print failures and one line per seed only")
    ap.add_argument("--export", help="write the suite's tables and queries to this folder and stop")
    ap.add_argument("--data", help="read the tables and queries from a folder --export wrote (no generator needed)")
    args = ap.parse_args()
    if args.export:
        export(args)
        return
    passed = failed = batches = 0
    started = time.time()
    for seed in range(args.seed, args.seed + args.seeds):
        p, f, n = run_seed(args, seed)
        passed, failed, batches = passed + p, failed + f, batches + n
        if args.quiet or args.seeds > 1:
            print(f"seed {seed}: {p} passed, {f} failed ({time.time() - started:.0f} s so far)", flush=True)
    print(f"{args.suite}: {args.seeds} seed(s) in {time.time() - started:.0f} s; batches: {batches}")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
