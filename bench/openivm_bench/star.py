"""Workload 1: a star schema.

Fact `f` (N rows) with FOREIGN KEYs to three 10,000-row dimensions `d1`, `d2`, `d3` (PRIMARY KEYs).
The fact carries the same measure twice, as DECIMAL(12,2) (`amount`) and as DOUBLE (`amount_f`), so
one generated database serves the views over either type; a view reads only its own measure.

Views (each exists once per refresh variant, e.g. `agg_dec`, `agg_dec_nofk`, `agg_dec_inc`):
  agg_*  the grouped 4-way join: SUM, COUNT(*), AVG of the measure by three dimension attributes;
  bag_*  the same join without aggregation, with f.id: one distinct row per fact row.

Sources: `diff` (openivm's default exact diff against snapshots), `append-only+key` (fact and
dimensions declared append-only with their ever-increasing id as key), `append-only` (declared
without key).

Batches (each one transaction): `none` (nothing changed), `insert` (fact rows), `dims` (new rows in
every dimension, 10,000 x fraction each, plus fact rows half of which reference them), `mixed`
(fact: half inserts, a quarter deletes, a quarter updates of the measures), `writes` (fact: half
deletes, half updates of the measures, through openivm_delete / openivm_update, on the
`append-only+key` source); sizes are fractions of N.

The cost of a write through the extension is measured beside the same plain DML statement
(`write_cost`): a delete and an update of 0.1% of the fact rows each way, on the `append-only+key`
source with its views.
"""
from __future__ import annotations

import os

from .core import (Config, Db, Features, Mismatch, Recorder, Stamp, Variant, db_file, discard, median, remove_db,
                   create_views, run_group, timed_ms, wanted_groups, work_copy)

DIM_ROWS = 10_000
FRACTIONS = (0.001, 0.01, 0.1)
DIMS = (("d1", "category", 60), ("d2", "region", 24), ("d3", "segment", 12))

JOIN = (
    "FROM f JOIN d1 ON f.d1_id = d1.id JOIN d2 ON f.d2_id = d2.id JOIN d3 ON f.d3_id = d3.id"
)
QUERIES = {
    "agg_dec": f"SELECT d1.category, d2.region, d3.segment, SUM(f.amount) AS total, COUNT(*) AS n, "
               f"AVG(f.amount) AS mean {JOIN} GROUP BY d1.category, d2.region, d3.segment",
    "agg_dbl": f"SELECT d1.category, d2.region, d3.segment, SUM(f.amount_f) AS total, COUNT(*) AS n, "
               f"AVG(f.amount_f) AS mean {JOIN} GROUP BY d1.category, d2.region, d3.segment",
    "bag_dec": f"SELECT f.id, d1.category, d2.region, d3.segment, f.amount {JOIN}",
    "bag_dbl": f"SELECT f.id, d1.category, d2.region, d3.segment, f.amount_f {JOIN}",
}
# Aggregates of DOUBLE are maintained by adding and subtracting: compare them with a tolerance.
TOLERANT = {"agg_dec": True, "agg_dbl": True, "bag_dec": False, "bag_dbl": False}


def variant(name: str) -> Variant:
    """`agg_dec` -> auto mode, pruning on; `_nofk` -> fk_pruning := false; `_inc` -> mode incremental."""
    base = "_".join(name.split("_")[:2])
    if name.endswith("_nofk"):
        return Variant(name, base, "nofk", fk_pruning=False)
    if name.endswith("_inc"):
        return Variant(name, base, "incremental", mode="incremental")
    return Variant(name, base, "auto")


def plan(source: str, quick: bool) -> list[tuple[str, float, list[str]]]:
    """(batch kind, fraction of N, views refreshed) per group, for one source.

    The full plan measures every batch size for the aggregate over DECIMAL, and the costlier
    variants (DOUBLE, the bag views) where the targets need them. The quick plan touches every
    kind of batch and view once, at 1%."""
    if quick:
        return {
            "diff": [("none", 0.0, ["agg_dec"]),
                     ("insert", 0.01, ["agg_dec", "agg_dec_inc", "bag_dec", "bag_dec_inc"]),
                     ("mixed", 0.01, ["agg_dec", "agg_dbl", "bag_dec"]),
                     ("dims", 0.01, ["agg_dec", "agg_dec_nofk"])],
            "append-only+key": [("none", 0.0, ["agg_dec"]),
                                ("insert", 0.01, ["agg_dec", "agg_dec_inc"]),
                                ("dims", 0.01, ["agg_dec", "agg_dec_nofk", "agg_dbl"]),
                                ("writes", 0.01, ["agg_dec", "bag_dec"])],
            "append-only": [("dims", 0.01, ["agg_dec"])],
        }[source]
    F = FRACTIONS
    if source == "diff":
        return (
            [("none", 0.0, ["agg_dec", "agg_dbl", "bag_dec"])]
            + [("insert", f, ["agg_dec", "agg_dec_inc"] + (["agg_dbl", "bag_dec", "bag_dec_inc"] if f == F[0] else []))
               for f in F]
            + [("mixed", f, ["agg_dec", "agg_dec_inc"]
                + (["agg_dbl", "bag_dec", "bag_dec_inc"] if f == F[0] else [])
                + (["bag_dec"] if f == F[1] else []))
               for f in F]
            + [("dims", F[0], ["agg_dec", "agg_dec_nofk"])]
        )
    if source == "append-only+key":
        return (
            [("none", 0.0, ["agg_dec", "agg_dbl"])]
            + [("insert", f, ["agg_dec", "agg_dec_inc", "agg_dbl"]) for f in F]
            + [("dims", f, ["agg_dec", "agg_dec_nofk", "agg_dec_inc", "agg_dbl", "agg_dbl_nofk"]) for f in F]
            + [("writes", f, ["agg_dec"] + (["agg_dbl"] if f == F[0] else [])) for f in F[:2]]
        )
    if source == "append-only":
        return (
            [("none", 0.0, ["agg_dec"])]
            + [("insert", f, ["agg_dec"]) for f in F]
            + [("dims", f, ["agg_dec", "agg_dec_nofk"]) for f in F]
        )
    raise ValueError(source)


SOURCES = ("diff", "append-only+key", "append-only")


def label(n: int) -> str:
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else f"{n // 1000}K"


# ---------------------------------------------------------------------------------------------
# data


def fact_select(ids: str, d1: str = "id % 10000", d2: str = "(id * 7 + 3) % 10000",
                d3: str = "(id * 13 + 5) % 10000") -> str:
    """Rows of f for the ids produced by `ids` (a query with one column `id`).

    Dimension keys cycle with the id (cheap FK checks); dimension attributes are hashed from the
    dimension key, so the view's groups are spread evenly."""
    return (
        f"SELECT id, ({d1})::INTEGER, ({d2})::INTEGER, ({d3})::INTEGER, "
        f"((hash(id) % 100000) / 100)::DECIMAL(12,2), (hash(id) % 100000) / 7.0 FROM ({ids})"
    )


def generate(path: str, n: int, rec: Recorder):
    remove_db(path)
    db = Db(path, None, load=False)  # plain DuckDB: base data carries no openivm state
    for t, attr, card in DIMS:
        db.sql(f"CREATE TABLE {t}(id INTEGER PRIMARY KEY, {attr} VARCHAR)")
        db.sql(f"INSERT INTO {t} SELECT i, '{attr[:3]}' || (hash(i, '{t}') % {card - 10}) FROM range({DIM_ROWS}) r(i)")
    db.sql("""CREATE TABLE f(id BIGINT, d1_id INTEGER REFERENCES d1(id), d2_id INTEGER REFERENCES d2(id),
              d3_id INTEGER REFERENCES d3(id), amount DECIMAL(12,2), amount_f DOUBLE)""")
    chunk = 2_000_000  # FK checks of one huge INSERT hold everything in memory
    for lo in range(0, n, chunk):
        db.sql(f"INSERT INTO f {fact_select(f'SELECT range AS id FROM range({lo}, {min(n, lo + chunk)})')}")
    db.close()


class Batches:
    """Batch recipes over the current database; ids continue from the current maxima."""

    def __init__(self, db: Db, n: int, group_seed: int):
        self.db, self.n, self.seed = db, n, group_seed
        self.next_fact = db.one("SELECT max(id) + 1 FROM f")[0]
        self.next_dim = {t: db.one(f"SELECT max(id) + 1 FROM {t}")[0] for t, _, _ in DIMS}

    def _tx(self, stmts: list[str]) -> int:
        self.db.sql("BEGIN")
        changed = 0
        for s in stmts:
            changed += self.db.one(s)[0]
        self.db.sql("COMMIT")
        return changed

    def _new_ids(self, k: int) -> str:
        lo = self.next_fact
        self.next_fact += k
        return f"SELECT range AS id FROM range({lo}, {lo + k})"

    def none(self, fraction: float, run: int) -> int:
        return 0

    def insert(self, fraction: float, run: int) -> int:
        k = max(1, round(self.n * fraction))
        return self._tx([f"INSERT INTO f {fact_select(self._new_ids(k))}"])

    def dims(self, fraction: float, run: int) -> int:
        k = max(1, round(self.n * fraction))
        m = max(10, round(DIM_ROWS * fraction))
        stmts, refs = [], []
        for t, attr, card in DIMS:
            lo = self.next_dim[t]
            self.next_dim[t] += m
            # attribute values: some existing, some new (card - 10 exist in the base data)
            stmts.append(f"INSERT INTO {t} SELECT i, '{attr[:3]}' || (hash(i, '{t}') % {card}) FROM range({lo}, {lo + m}) r(i)")
            refs.append(lo)
        lo_f = self.next_fact
        new = [f"CASE WHEN (id - {lo_f}) % 2 = 0 THEN {r} + (id // 2) % {m} ELSE {d} END"
               for r, d in zip(refs, ("id % 10000", "(id * 7 + 3) % 10000", "(id * 13 + 5) % 10000"))]
        stmts.append(f"INSERT INTO f {fact_select(self._new_ids(k), *new)}")
        return self._tx(stmts)

    def writes(self, fraction: float, run: int) -> int:
        """Half of the batch deleted, half updated, through openivm (each call its own transaction):
        the rows with id % P in two residues that no earlier run of the group used."""
        k = max(2, round(self.n * fraction))
        p = max(2, self.n // (k // 2))
        changed = self.db.one(f"SELECT rows FROM openivm_delete('f', 'id % {p} = {(2 * run) % p}')")[0]
        changed += self.db.one(
            f"SELECT rows FROM openivm_update('f', 'amount = amount + 1, amount_f = amount_f + 1', "
            f"'id % {p} = {(2 * run + 1) % p}')")[0]
        return changed

    def mixed(self, fraction: float, run: int) -> int:
        k = max(4, round(self.n * fraction))
        dels, upds = k // 4, k // 4
        s = self.seed * 1000 + run
        top = self.next_fact
        pick = lambda cnt, salt: f"SELECT DISTINCT hash(i, {s}, {salt}) % {top} FROM range({cnt}) r(i)"
        return self._tx([
            f"INSERT INTO f {fact_select(self._new_ids(k - dels - upds))}",
            f"DELETE FROM f WHERE id IN ({pick(dels, 1)})",
            f"UPDATE f SET amount = amount + 1, amount_f = amount_f + 1 WHERE id IN ({pick(upds, 2)})",
        ])


# ---------------------------------------------------------------------------------------------
# driver


def declare(db: Db, source: str):
    if source == "diff":
        return
    for t in ("d1", "d2", "d3", "f"):
        key = ", key := 'id'" if source == "append-only+key" else ""
        db.sql(f"CALL openivm_declare_append_only('{t}'{key})")


def available(name: str, source: str, feats: Features, kind: str = "") -> str | None:
    """Why a view variant or source cannot be measured with this build, or None."""
    if kind == "writes" and not feats.writes:
        return "openivm_delete / openivm_update not available"
    if source != "diff" and not feats.append_only:
        return "openivm_declare_append_only not available"
    if source == "append-only+key" and not feats.append_only_key:
        return "openivm_declare_append_only has no key parameter"
    if name.endswith("_inc") and not feats.refresh_mode:
        return "refresh(..., mode := ...) not available"
    return None


def write_cost(cfg: Config, rec: Recorder, prep: str, n: int, ds: str):
    """A delete and an update of 0.1% of the fact rows through openivm against the same plain
    statement, side by side, in alternating order (each statement commits; no refresh runs, so
    the plain writes breaking the append-only promise do not matter)."""
    work = work_copy(cfg, prep)
    db = Db(work, cfg)
    p = 1000 * 2
    try:
        # The steady state of a table its views read: their columns are in DuckDB's buffer pool
        # (refreshes and recomputes read them). A write through openivm reads them, a plain one
        # does not, so without this its first run would also pay their first read from disk.
        db.one("SELECT sum(hash(d1_id, d2_id, d3_id, amount, amount_f)) FROM f")
        for what, plain, through in [
            ("delete", "DELETE FROM f WHERE id % {p} = {r}", "SELECT rows FROM openivm_delete('f', 'id % {p} = {r}')"),
            ("update", "UPDATE f SET amount = amount + 1 WHERE id % {p} = {r}",
             "SELECT rows FROM openivm_update('f', 'amount = amount + 1', 'id % {p} = {r}')"),
        ]:
            times = {"plain": [], "openivm": []}
            rows = 0
            for run in range(cfg.runs):
                order = [("plain", plain), ("openivm", through)]
                if run % 2:
                    order.reverse()
                for i, (way, sql) in enumerate(order):
                    r = 100 * (what == "update") + 2 * run + i
                    ms, res = timed_ms(lambda: db.one(sql.format(p=p, r=r)))
                    times[way].append(ms)
                    rows = res[0]
            rec.add_write({"workload": "writes", "dataset": ds, "statement": what, "rows": rows,
                           "openivm_ms": median(times["openivm"]), "plain_ms": median(times["plain"]),
                           "ratio": median([a / b for a, b in zip(times["openivm"], times["plain"])]),
                           "runs": cfg.runs})
    finally:
        db.close(discard=True)
        discard(work)


def run(cfg: Config, feats: Features, rec: Recorder):
    sizes = cfg.star_rows or ([200_000] if cfg.quick else [2_000_000, 20_000_000])
    for n in sizes:
        ds = label(n)
        base = db_file(os.path.join(cfg.data_dir, f"star_{ds}"))
        stamp = Stamp(base, f"star v1 n={n}")
        if not stamp.valid():
            stamp.clear()
            rec.note(f"star {ds}: generating (fact {n:,} rows, 3 x {DIM_ROWS:,} dimension rows)")
            ms, _ = timed_ms(lambda: generate(base, n, rec))
            stamp.write()
            rec.note(f"star {ds}: generated in {ms / 1000:.1f} s")
        for source in SOURCES:
            run_source(cfg, feats, rec, base, n, ds, source)


def run_source(cfg, feats, rec, base, n, ds, source):
    groups = wanted_groups(cfg, rec, f"star {ds}", source, plan(source, cfg.quick), available, feats)
    if not groups:
        return
    prep = work_copy(cfg, base)
    db = Db(prep, cfg)
    declare(db, source)
    create_views(db, rec, f"star {ds}", source, groups, lambda v: QUERIES[variant(v).query])
    db.close(settle=True)
    if source == "append-only+key" and feats.writes and cfg.wanted(source, "write cost"):
        write_cost(cfg, rec, prep, n, ds)
    for gi, (kind, frac, names) in enumerate(groups):
        work = work_copy(cfg, prep)
        db = Db(work, cfg)
        batches = Batches(db, n, gi + 1)
        case = {"workload": "star", "dataset": ds, "source": source,
                "batch": kind if kind == "none" else f"{kind} {frac * 100:g}%", "fraction": frac}
        try:
            run_group(db, rec, case, [variant(v) for v in names], QUERIES, TOLERANT,
                      lambda r: getattr(batches, kind)(frac, r), cfg.runs, cfg.case_budget_s)
        except Mismatch as e:
            rec.fail(f"star {ds} [{source}] {case['batch']}", e)
            if not cfg.keep_going:
                raise
        finally:
            db.close(discard=True)
            discard(work)
    discard(prep)
