"""Workload 3: many views over one table.

One table `t` (5M rows; 100K in quick mode) and 50 views (6 in quick mode), each a grouped SUM /
COUNT(*) / AVG over the same columns with its own filter and grouping (7 groupings x 8 filters).

Measured per source (`diff`, `append-only+key` with key id, `append-only` without key):
  create       creating all views, against recomputing all of their queries; the first round on a
               fresh copy of the data also measures the database growth (used blocks after
               CHECKPOINT) beyond the size of the views' results (the same results as plain
               tables, created by the recompute) against the size of one copy of the columns the
               views read;
  refresh all  after a batch (none, insert 0.1%, insert 1%, and for diff mixed 0.1%), refreshing
               every view (`openivm_refresh_all()`, or one `refresh` per view where that is
               missing) against recomputing every query.
Every view is compared with its recompute after every round.
"""
from __future__ import annotations

import json
import os

from .core import (Budget, Config, Db, Features, Mismatch, Recorder, Stamp, check, copy_db, db_file,
                   discard, median, record, recompute, recomputed, refresh_all, remove_db, timed_ms, work_copy)

GROUPINGS = ["a", "b", "c", "a, b", "a, c", "b, c", "a, b, c"]
FILTERS = ["", "WHERE x > 500", "WHERE y < 50", "WHERE a < 50", "WHERE b BETWEEN 100 AND 599",
           "WHERE c IN ('k1', 'k2', 'k3')", "WHERE a % 3 = 0", "WHERE x BETWEEN 100 AND 900 AND y >= 10"]
READ_COLUMNS = "a, b, c, x, y"
SOURCES = ("diff", "append-only+key", "append-only")


def queries(count: int) -> dict[str, str]:
    """`count` of the 56 grouping x filter combinations; fewer than 56 are spread over both."""
    out = {}
    combos = len(GROUPINGS) * len(FILTERS)
    step = 1 if count >= 50 else combos // count
    for i in range(0, count * step, step):
        g, w = GROUPINGS[i % len(GROUPINGS)], FILTERS[(i // len(GROUPINGS)) % len(FILTERS)]
        out[f"mv{i:02d}"] = f"SELECT {g}, SUM(x) AS sx, COUNT(*) AS n, AVG(y) AS ay FROM t {w} GROUP BY {g}"
    return out


def rows_select(ids: str) -> str:
    return (f"SELECT id, (hash(id, 1) % 100)::INTEGER, (hash(id, 2) % 1000)::INTEGER, 'k' || (hash(id, 3) % 26),"
            f" ((hash(id, 4) % 100000) / 100)::DECIMAL(12,2), (hash(id, 5) % 100)::INTEGER FROM ({ids})")


def generate(path: str, n: int):
    remove_db(path)
    db = Db(path, None, load=False)
    db.sql("CREATE TABLE t(id BIGINT, a INTEGER, b INTEGER, c VARCHAR, x DECIMAL(12,2), y INTEGER)")
    db.sql(f"INSERT INTO t {rows_select(f'SELECT range AS id FROM range({n})')}")
    db.close()
    # the yardstick for the storage targets: what one copy of the read columns adds
    probe = db_file(os.path.join(os.path.dirname(path), "probe"))
    copy_db(path, probe)
    db = Db(probe, None, load=False)
    before = db.used_bytes()
    db.sql(f"CREATE TABLE read_copy AS SELECT {READ_COLUMNS} FROM t")
    copy_bytes = db.used_bytes() - before
    db.close()
    remove_db(probe)
    with open(path + ".json", "w") as f:
        json.dump({"copy_bytes": copy_bytes}, f)


class Batches:
    def __init__(self, db: Db, n: int):
        self.db, self.n = db, n
        self.next_id = db.one("SELECT max(id) + 1 FROM t")[0]

    def _tx(self, stmts):
        self.db.sql("BEGIN")
        changed = sum(self.db.one(s)[0] for s in stmts)
        self.db.sql("COMMIT")
        return changed

    def _insert(self, k):
        lo = self.next_id
        self.next_id += k
        return f"INSERT INTO t {rows_select(f'SELECT range AS id FROM range({lo}, {lo + k})')}"

    def none(self, fraction, run):
        return 0

    def insert(self, fraction, run):
        return self._tx([self._insert(max(1, round(self.n * fraction)))])

    def mixed(self, fraction, run):
        k = max(4, round(self.n * fraction))
        d = k // 4
        pick = lambda salt: f"SELECT DISTINCT hash(i, {run}, {salt}) % {self.next_id} FROM range({d}) r(i)"
        return self._tx([
            self._insert(k - 2 * d),
            f"DELETE FROM t WHERE id IN ({pick(11)})",
            f"UPDATE t SET x = x + 1, a = (a + 1) % 100 WHERE id IN ({pick(12)})",
        ])


def create_all(db: Db, qs: dict[str, str]) -> float:
    ms, _ = timed_ms(lambda: [db.sql("CALL openivm_create(?, ?)", [k, s]).fetchall() for k, s in qs.items()])
    return ms


def recompute_all(db: Db, qs: dict[str, str]) -> float:
    return sum(recompute(db, s, f"bench_rc_{k}") for k, s in qs.items())


def check_all(db: Db, qs: dict[str, str]):
    for k in qs:
        check(db, k, recomputed(f"bench_rc_{k}"), tolerant=True)


def declare(db: Db, source: str):
    if source == "append-only+key":
        db.sql("CALL openivm_declare_append_only('t', key := 'id')").fetchall()
    elif source == "append-only":
        db.sql("CALL openivm_declare_append_only('t')").fetchall()


def run(cfg: Config, feats: Features, rec: Recorder):
    n, count = (100_000, 6) if cfg.quick else (5_000_000, 50)
    ds = f"{n // 1_000_000}M" if n >= 1_000_000 else f"{n // 1000}K"
    ds = f"{count} views over {ds}"
    base = db_file(os.path.join(cfg.data_dir, f"manyviews_{n}"))
    stamp = Stamp(base, f"manyviews v1 n={n}")
    if not stamp.valid():
        stamp.clear()
        rec.note(f"manyviews: generating t ({n:,} rows)")
        ms, _ = timed_ms(lambda: generate(base, n))
        stamp.write()
        rec.note(f"manyviews: generated in {ms / 1000:.1f} s")
    copy_bytes = json.load(open(base + ".json"))["copy_bytes"]
    qs = queries(count)
    for source in SOURCES:
        if not cfg.wanted(source, ""):
            continue
        if source != "diff" and not feats.append_only:
            rec.skip(f"manyviews [{source}]", "openivm_declare_append_only not available")
            continue
        if source == "append-only+key" and not feats.append_only_key:
            rec.skip(f"manyviews [{source}]", "openivm_declare_append_only has no key parameter")
            continue
        if not feats.refresh_all:
            rec.skip(f"manyviews [{source}] openivm_refresh_all", f"not available; timing {count} refresh calls instead")
        work = work_copy(cfg, base)
        db = Db(work, cfg)
        try:
            run_source(cfg, feats, rec, db, n, ds, source, qs, copy_bytes)
        except Mismatch as e:
            rec.fail(f"manyviews [{source}]", e)
            if not cfg.keep_going:
                raise
        finally:
            db.close(discard=True)
            discard(work)


def run_source(cfg, feats, rec, db, n, ds, source, qs, copy_bytes):
    case = {"workload": "manyviews", "dataset": ds, "source": source, "batch": "create", "fraction": None}
    # warm the table (the first round must not pay for reading a cold file)
    for k, s in qs.items():
        recompute(db, s, f"bench_rc_{k}")
    # metadata tables are created on first use: create and drop one view so growth excludes them
    db.sql("CALL openivm_create('bench_probe', 'SELECT a, COUNT(*) FROM t GROUP BY a')").fetchall()
    db.sql("CALL openivm_drop('bench_probe')").fetchall()
    declare(db, source)
    for k in qs:
        db.sql(f"DROP TABLE IF EXISTS {recomputed(f'bench_rc_{k}')}")
    before = db.used_bytes()
    creates, recomputes = [], []
    growth = None
    budget = Budget(cfg.case_budget_s, rec)
    for r in range(cfg.runs):
        if not budget.another(r):
            break
        if r:
            for k in qs:
                db.sql("CALL openivm_drop(?)", [k]).fetchall()
        creates.append({"wall_ms": create_all(db, qs)})
        if r == 0:
            growth = db.used_bytes() - before
            before_results = db.used_bytes(db.recomputes())
        recomputes.append(recompute_all(db, qs))
        if r == 0:
            # The views' results take what the recomputed tables take: growth beyond that is
            # openivm's change state (and the hidden counts of its stored results).
            results_bytes = db.used_bytes(db.recomputes()) - before_results
        check_all(db, qs)
    res = record(case, f"all {len(qs)}", "create", creates, recomputes, None)
    res["growth_bytes"], res["copy_bytes"] = max(0, growth - results_bytes), copy_bytes
    res["results_bytes"] = results_bytes
    res["budget_cut"] = len(creates) < cfg.runs
    rec.add(res)

    batches = Batches(db, n)
    if cfg.quick:
        groups = [("insert", 0.001)]
    else:
        groups = [("none", 0.0), ("insert", 0.001), ("insert", 0.01)] + ([("mixed", 0.001)] if source == "diff" else [])
    label = "refresh_all" if feats.refresh_all else f"refresh x{len(qs)}"
    for kind, frac in groups:
        refreshes, recomputes, rows = [], [], []
        rec.note(f"manyviews {ds} [{source}] {kind} {frac * 100:g}%: {cfg.runs} runs")
        budget = Budget(cfg.case_budget_s, rec)
        for r in range(cfg.runs):
            if not budget.another(r):
                break
            rows.append(getattr(batches, kind)(frac, r))
            if r % 2 == 0:
                refreshes.append(refresh_all(db, list(qs), feats))
                recomputes.append(recompute_all(db, qs))
            else:
                recomputes.append(recompute_all(db, qs))
                refreshes.append(refresh_all(db, list(qs), feats))
            check_all(db, qs)
        c = {**case, "batch": kind if kind == "none" else f"{kind} {frac * 100:g}%", "fraction": frac}
        res = record(c, f"all {len(qs)}", label, refreshes, recomputes, int(median(rows)))
        res["budget_cut"] = len(rows) < cfg.runs
        rec.add(res)
