"""Workload 2: TPC-H (SF1; SF 0.01 in quick mode) from the duckdb-extension-tpch wheel.

Views shaped like Q3, Q5 and Q10: their joins, filters and grouped SUM, plus COUNT(*) (and an AVG
in Q5), without ORDER BY / LIMIT. dbgen's tables carry no constraints, so the foreign keys the
queries join along are declared as trusted (RELY) keys with `openivm_declare_rely_fk`.

Batches are shaped like the TPC-H refresh functions: `rf1` inserts new orders (a fraction of the
current orders, copied from existing ones under new, larger keys) with their lineitems; `rf1+rf2`
also deletes as many existing orders with their lineitems. Each batch is one transaction.

`rf1+rf2-openivm` (append-only+key only) is RF1 as plain inserts and RF2 through `openivm_delete`
(lineitems, then orders, by an IN list of the deleted order keys), each call its own transaction.

Sources: `diff` (no declaration), `append-only+key` (every table declared append-only; orders with
key o_orderkey, lineitem with key l_orderkey, which grows with the new orders), `append-only`
(declared without keys).
"""
from __future__ import annotations

import os

from .core import (Config, Db, Features, Mismatch, Recorder, Stamp, Variant, db_file, discard, remove_db,
                   create_views, run_group, timed_ms, wanted_groups, work_copy)

REV = "SUM(l_extendedprice * (1 - l_discount)) AS revenue"
QUERIES = {
    "q3": f"""SELECT l_orderkey, {REV}, COUNT(*) AS n, o_orderdate, o_shippriority
              FROM customer, orders, lineitem
              WHERE c_mktsegment = 'BUILDING' AND c_custkey = o_custkey AND l_orderkey = o_orderkey
                AND o_orderdate < DATE '1995-03-15' AND l_shipdate > DATE '1995-03-15'
              GROUP BY l_orderkey, o_orderdate, o_shippriority""",
    "q5": f"""SELECT n_name, {REV}, COUNT(*) AS n, AVG(l_discount) AS avg_disc
              FROM customer, orders, lineitem, supplier, nation, region
              WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND l_suppkey = s_suppkey
                AND c_nationkey = s_nationkey AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey
                AND r_name = 'ASIA' AND o_orderdate >= DATE '1994-01-01' AND o_orderdate < DATE '1995-01-01'
              GROUP BY n_name""",
    "q10": f"""SELECT c_custkey, c_name, {REV}, COUNT(*) AS n, c_acctbal, n_name, c_address, c_phone, c_comment
               FROM customer, orders, lineitem, nation
               WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey
                 AND o_orderdate >= DATE '1993-10-01' AND o_orderdate < DATE '1994-01-01'
                 AND l_returnflag = 'R' AND c_nationkey = n_nationkey
               GROUP BY c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment""",
}
TOLERANT = {k: True for k in QUERIES}  # AVG of a DECIMAL is a DOUBLE
RELY_FKS = [
    ("lineitem", "l_orderkey", "orders", "o_orderkey"),
    ("orders", "o_custkey", "customer", "c_custkey"),
    ("lineitem", "l_suppkey", "supplier", "s_suppkey"),
    ("customer", "c_nationkey", "nation", "n_nationkey"),
    ("supplier", "s_nationkey", "nation", "n_nationkey"),
    ("nation", "n_regionkey", "region", "r_regionkey"),
]
TABLES = ("orders", "lineitem", "customer", "supplier", "nation", "region", "part", "partsupp")
KEYS = {"orders": "o_orderkey", "lineitem": "l_orderkey"}
FRACTIONS = (0.001, 0.01, 0.1)
SOURCES = ("diff", "append-only+key", "append-only")
Q = ("q3", "q5", "q10")


def plan(source: str, quick: bool) -> list[tuple[str, float, list[str]]]:
    """(batch kind, fraction of the orders, views refreshed) per group, for one source."""
    if quick:
        return {"diff": [("rf1", 0.01, list(Q) + [f"{q}_inc" for q in Q[:1]]), ("rf1+rf2", 0.01, ["q3"])],
                "append-only+key": [("none", 0.0, ["q3"]), ("rf1", 0.01, list(Q) + ["q3_nofk", "q3_inc"]),
                                    ("rf1+rf2-openivm", 0.01, list(Q))],
                "append-only": [("rf1", 0.01, ["q3"])]}[source]
    F = FRACTIONS
    inc = lambda f: [f"{q}_inc" for q in Q] if f == F[-1] else []
    if source == "diff":
        return ([("none", 0.0, list(Q))]
                + [("rf1", f, list(Q) + inc(f)) for f in F]
                + [("rf1+rf2", F[0], list(Q))])
    if source == "append-only+key":
        return ([("none", 0.0, list(Q))]
                + [("rf1", f, list(Q) + ([f"{q}_nofk" for q in Q] if f == F[0] else []) + inc(f)) for f in F]
                + [("rf1+rf2-openivm", F[0], list(Q))])
    if source == "append-only":
        return [("rf1", F[0], list(Q))]
    raise ValueError(source)


def variant(name: str) -> Variant:
    base = name.split("_")[0]
    if name.endswith("_nofk"):
        return Variant(name, base, "nofk", fk_pruning=False)
    if name.endswith("_inc"):
        return Variant(name, base, "incremental", mode="incremental")
    return Variant(name, base, "auto")


def available(name: str, source: str, feats: Features, kind: str = "") -> str | None:
    if kind == "rf1+rf2-openivm" and not feats.writes:
        return "openivm_delete not available"
    if source != "diff" and not feats.append_only:
        return "openivm_declare_append_only not available"
    if source == "append-only+key" and not feats.append_only_key:
        return "openivm_declare_append_only has no key parameter"
    if name.endswith("_inc") and not feats.refresh_mode:
        return "refresh(..., mode := ...) not available"
    return None


def generate(path: str, sf: float, tpch_ext: str):
    remove_db(path)
    db = Db(path, None, load=False)
    db.sql(f"LOAD '{tpch_ext}'")
    db.sql(f"CALL dbgen(sf={sf})")
    db.close()


class Batches:
    def __init__(self, db: Db, group_seed: int):
        self.db, self.seed = db, group_seed
        self.next_key = db.one("SELECT max(o_orderkey) + 1 FROM orders")[0]
        self.base_max = self.next_key - 1  # templates and deletions come from the original orders

    def _count(self, k_frac: float) -> int:
        return max(1, round(self.db.one("SELECT count(*) FROM orders")[0] * k_frac))

    def none(self, fraction, run):
        return 0

    def _rf1_stmts(self, fraction, run):
        k = self._count(fraction)
        s = self.seed * 1000 + run
        self.db.sql(f"""CREATE OR REPLACE TEMP TABLE bench_rf1 AS
            SELECT o_orderkey AS old_key, {self.next_key} + row_number() OVER (ORDER BY o_orderkey) - 1 AS new_key
            FROM (SELECT o_orderkey FROM orders WHERE o_orderkey <= {self.base_max}
                  ORDER BY hash(o_orderkey, {s}, 1) LIMIT {k})""")
        self.next_key += k
        return [
            "INSERT INTO orders SELECT o.* REPLACE (m.new_key AS o_orderkey) FROM orders o JOIN bench_rf1 m ON o.o_orderkey = m.old_key",
            "INSERT INTO lineitem SELECT l.* REPLACE (m.new_key AS l_orderkey) FROM lineitem l JOIN bench_rf1 m ON l.l_orderkey = m.old_key",
        ]

    def _rf2_stmts(self, fraction, run):
        k = self._count(fraction)
        s = self.seed * 1000 + run
        self.db.sql(f"""CREATE OR REPLACE TEMP TABLE bench_rf2 AS
            SELECT o_orderkey AS key FROM orders WHERE o_orderkey <= {self.base_max}
            ORDER BY hash(o_orderkey, {s}, 2) LIMIT {k}""")
        return [
            "DELETE FROM lineitem WHERE l_orderkey IN (SELECT key FROM bench_rf2)",
            "DELETE FROM orders WHERE o_orderkey IN (SELECT key FROM bench_rf2)",
        ]

    def _tx(self, stmts):
        self.db.sql("BEGIN")
        n = sum(self.db.one(s)[0] for s in stmts)
        self.db.sql("COMMIT")
        return n

    def rf1(self, fraction, run):
        return self._tx(self._rf1_stmts(fraction, run))

    def rf1_rf2(self, fraction, run):
        return self._tx(self._rf1_stmts(fraction, run) + self._rf2_stmts(fraction, run))

    def rf1_rf2_openivm(self, fraction, run):
        """RF1 as plain inserts; RF2 through openivm_delete, the deleted order keys as a literal list."""
        n = self._tx(self._rf1_stmts(fraction, run))
        self._rf2_stmts(fraction, run)
        keys = ", ".join(str(k) for (k,) in self.db.sql("SELECT key FROM bench_rf2 ORDER BY key").fetchall())
        for table, col in (("lineitem", "l_orderkey"), ("orders", "o_orderkey")):
            n += self.db.one(f"SELECT rows FROM openivm_delete('{table}', '{col} IN ({keys})')")[0]
        return n


def declare(db: Db, source: str):
    for child, ccols, parent, pcols in RELY_FKS:
        db.sql("CALL openivm_declare_rely_fk(?, ?, ?, ?)", [child, ccols, parent, pcols]).fetchall()
    if source == "diff":
        return
    for t in TABLES:
        key = f", key := '{KEYS[t]}'" if source == "append-only+key" and t in KEYS else ""
        db.sql(f"CALL openivm_declare_append_only('{t}'{key})").fetchall()


def run(cfg: Config, feats: Features, rec: Recorder):
    if not cfg.tpch_extension or not os.path.exists(cfg.tpch_extension):
        rec.skip("tpch", f"TPC-H extension not found ({cfg.tpch_extension}); install bench/requirements.txt")
        return
    sf = 0.01 if cfg.quick else 1
    ds = f"SF{sf:g}"
    base = db_file(os.path.join(cfg.data_dir, f"tpch_sf{sf:g}"))
    stamp = Stamp(base, f"tpch v1 sf={sf}")
    if not stamp.valid():
        stamp.clear()
        rec.note(f"tpch {ds}: generating with dbgen")
        ms, _ = timed_ms(lambda: generate(base, sf, cfg.tpch_extension))
        stamp.write()
        rec.note(f"tpch {ds}: generated in {ms / 1000:.1f} s")
    for source in SOURCES:
        groups = wanted_groups(cfg, rec, f"tpch {ds}", source, plan(source, cfg.quick), available, feats)
        if not groups:
            continue
        prep = work_copy(cfg, base)
        db = Db(prep, cfg)
        declare(db, source)
        create_views(db, rec, f"tpch {ds}", source, groups, lambda v: QUERIES[variant(v).query])
        db.close(settle=True)
        for gi, (kind, frac, names) in enumerate(groups):
            work = work_copy(cfg, prep)
            db = Db(work, cfg)
            batches = Batches(db, gi + 1)
            fn = {"none": batches.none, "rf1": batches.rf1, "rf1+rf2": batches.rf1_rf2,
                  "rf1+rf2-openivm": batches.rf1_rf2_openivm}[kind]
            case = {"workload": "tpch", "dataset": ds, "source": source,
                    "batch": kind if kind == "none" else f"{kind} {frac * 100:g}%", "fraction": frac}
            try:
                run_group(db, rec, case, [variant(v) for v in names], QUERIES, TOLERANT,
                          lambda r: fn(frac, r), cfg.runs, cfg.case_budget_s)
            except Mismatch as e:
                rec.fail(f"tpch {ds} [{source}] {case['batch']}", e)
                if not cfg.keep_going:
                    raise
            finally:
                db.close(discard=True)
                discard(work)
        discard(prep)
