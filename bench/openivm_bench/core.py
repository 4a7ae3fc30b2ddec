"""Shared machinery: connections, feature detection, timing, correctness checks, the run loop.

A *group* is one database state, a batch recipe and the views refreshed after each batch. Each of
its runs applies one batch (not timed), then times, in a rotating order, every view's refresh and
the recompute of every query those views maintain (`CREATE OR REPLACE TABLE ... AS <query>`, in a
database file attached beside the work file: see `recompute`), and
finally compares each view with the recompute of its query. A mismatch raises `Mismatch`.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import statistics
import sys
import time
from collections import Counter

import duckdb


class Mismatch(Exception):
    """A refreshed view differs from the recompute of its query."""


# ---------------------------------------------------------------------------------------------
# configuration and features


@dataclasses.dataclass
class Config:
    extension: str
    tpch_extension: str | None
    runs: int
    quick: bool
    data_dir: str
    work_dir: str
    out_dir: str
    keep_going: bool = False
    star_rows: list[int] | None = None  # override the star's fact sizes
    case_budget_s: float = 0  # stop a case's runs early once the next run would exceed this (0: never)
    match: str | None = None  # run only the cases whose "<source> <batch>" contains this

    def wanted(self, source: str, batch: str) -> bool:
        return self.match is None or self.match in f"{source} {batch}"


@dataclasses.dataclass
class Features:
    """What the loaded extension offers; variants needing a missing piece are skipped."""

    append_only: bool = False
    append_only_key: bool = False
    refresh_mode: bool = False
    refresh_all: bool = False
    writes: bool = False  # openivm_insert / openivm_delete / openivm_update

    @classmethod
    def detect(cls, extension: str) -> "Features":
        con = duckdb.connect(config={"allow_unsigned_extensions": True})
        con.execute(f"LOAD '{extension}'")

        def params(name):
            rows = con.execute(
                "SELECT parameters FROM duckdb_functions() WHERE function_name = ?", [name]
            ).fetchall()
            return None if not rows else {p for (ps,) in rows for p in ps}

        ao = params("openivm_declare_append_only")
        ref = params("refresh") or set()
        feats = cls(
            append_only=ao is not None,
            append_only_key=ao is not None and "key" in ao,
            refresh_mode="mode" in ref,
            refresh_all=params("openivm_refresh_all") is not None,
            writes=params("openivm_delete") is not None and params("openivm_update") is not None,
        )
        con.close()
        return feats

    def describe(self) -> str:
        return ", ".join(f"{k}={'yes' if v else 'no'}" for k, v in dataclasses.asdict(self).items())


# ---------------------------------------------------------------------------------------------
# database files


RECOMPUTES = "bench_recomputes"


class Db:
    """A file-backed connection with the extension loaded."""

    def __init__(self, path: str, cfg: Config, load: bool = True):
        self.path = path
        self.con = duckdb.connect(path, config={"allow_unsigned_extensions": True})
        if load:
            self.con.execute(f"LOAD '{cfg.extension}'")
        self._history = False
        self._recomputes = False

    def sql(self, text: str, params=None):
        return self.con.execute(text, params) if params is not None else self.con.execute(text)

    def one(self, text: str, params=None):
        """The first row of a statement run to its end. Reading only the first row would leave a
        table function's statement open (DuckDB asks it for the next chunk only when more rows are
        read), and its end, the caller's commit and DuckDB's cleanup of the versions a write left
        (about 10 ms after a 10,000-row update of the 20M-row star), would be paid by the next
        statement: a timed refresh after a write through openivm."""
        rows = self.sql(text, params).fetchall()
        return rows[0] if rows else None

    def exists(self, table: str) -> bool:
        return self.one(
            "SELECT count(*) FROM duckdb_tables() WHERE table_name = ? AND schema_name = 'main'", [table]
        )[0] > 0

    def has_history(self) -> bool:
        if not self._history:
            self._history = self.exists("openivm_refresh_history")
        return self._history

    def used_bytes(self, database: str | None = None) -> int:
        """Bytes of used blocks of `database` (default: the work file) after a CHECKPOINT of it
        (free blocks of the file excluded)."""
        database = database or self.one("SELECT current_database()")[0]
        self.sql(f"CHECKPOINT {q(database)}")
        block_size, used = self.one(
            "SELECT block_size, used_blocks FROM pragma_database_size() WHERE database_name = ?", [database])
        return block_size * used

    def recomputes(self) -> str:
        """The database the recomputes write their tables to: a file beside the work file,
        attached on first use (and thrown away with the work file's directory)."""
        if not self._recomputes:
            path = os.path.join(os.path.dirname(self.path), "recomputes.db")
            self.sql(f"ATTACH '{path}' AS {RECOMPUTES}")
            self._recomputes = True
        return RECOMPUTES

    def file_bytes(self) -> int:
        self.sql("CHECKPOINT")
        return os.path.getsize(self.path)

    def close(self, settle: bool = False, discard: bool = False):
        """discard: the file is thrown away next, so skip checkpointing it (also at the instance's
        shutdown, which would otherwise run in the extension's watchdog thread, during the next
        case's measurements)."""
        self.sql("PRAGMA disable_checkpoint_on_shutdown" if discard else "CHECKPOINT")
        self.con.close()
        self.con = None
        if settle or discard:
            # The extension's kept connection holds the instance until its watchdog (100 ms poll)
            # sees ours gone; let it shut down before the file is copied.
            time.sleep(0.3)


def db_file(directory: str) -> str:
    """Every database file is named bench.db, in its own directory: openivm's views name the
    database (catalog) they live in, and DuckDB names a database after its file, so a copy must
    keep the file name."""
    os.makedirs(directory, exist_ok=True)
    return os.path.join(directory, "bench.db")


_copies = 0


def work_copy(cfg: Config, src: str) -> str:
    """A fresh copy of `src` under a path never used before in this process (so DuckDB cannot hand
    back a still-running instance of an earlier copy)."""
    global _copies
    _copies += 1
    dst = db_file(os.path.join(cfg.work_dir, f"run-{os.getpid()}-{_copies}"))
    copy_db(src, dst)
    return dst


def discard(path: str):
    remove_db(path)
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)


def copy_db(src: str, dst: str):
    remove_db(dst)
    shutil.copyfile(src, dst)
    if os.path.exists(src + ".wal"):
        shutil.copyfile(src + ".wal", dst + ".wal")


def remove_db(path: str):
    for p in (path, path + ".wal"):
        if os.path.exists(p):
            os.remove(p)


class Stamp:
    """A generated base database is reused when its stamp records the same parameters."""

    def __init__(self, path: str, params: str):
        self.path, self.params = path + ".stamp", params

    def valid(self) -> bool:
        return os.path.exists(self.path) and open(self.path).read() == self.params

    def write(self):
        with open(self.path, "w") as f:
            f.write(self.params)

    def clear(self):
        if os.path.exists(self.path):
            os.remove(self.path)


# ---------------------------------------------------------------------------------------------
# timed operations


def timed_ms(fn):
    t0 = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t0) * 1000.0, out


@dataclasses.dataclass
class Variant:
    """A maintained view and the refresh options it is refreshed with."""

    view: str  # the view's name in the database
    query: str  # key of the query it maintains (its recompute)
    label: str  # short name of the variant: auto, nofk, incremental, ...
    fk_pruning: bool | None = None
    mode: str | None = None

    def refresh_sql(self) -> str:
        args = [f"'{self.view}'"]
        if self.fk_pruning is not None:
            args.append(f"fk_pruning := {'true' if self.fk_pruning else 'false'}")
        if self.mode is not None:
            args.append(f"mode := '{self.mode}'")
        return f"SELECT * FROM refresh({', '.join(args)})"


def refresh(db: Db, v: Variant) -> dict:
    def run():
        cur = db.sql(v.refresh_sql())
        return [d[0] for d in cur.description], cur.fetchall()  # to the statement's end (`Db.one`)

    ms, (cols, rows) = timed_ms(run)
    row = dict(zip(cols, rows[0]))
    row["wall_ms"] = ms
    row.update(history(db, [v.view]))
    return row


def refresh_all(db: Db, views: list[str], feats: Features) -> dict:
    """One refresh of every listed view: `openivm_refresh_all()` when present, else a loop."""
    t0 = time.perf_counter()
    if feats.refresh_all:
        rows = db.sql("SELECT * FROM openivm_refresh_all()").fetchall()
        n = len(rows)
    else:
        for name in views:
            db.sql(f"SELECT * FROM refresh('{name}')").fetchall()
        n = len(views)
    out = {"wall_ms": (time.perf_counter() - t0) * 1000.0, "views_refreshed": n}
    out.update(history(db, views))
    return out


def history(db: Db, views: list[str]) -> dict:
    """capture_ms / apply_ms of the latest refresh of each view, summed (when recorded)."""
    if not db.has_history():
        return {}
    try:
        names = ", ".join(f"'{v}'" for v in views)
        row = db.one(
            f"""SELECT sum(capture_ms), sum(apply_ms), sum(total_ms) FROM (
                  SELECT capture_ms, apply_ms, total_ms, row_number() OVER (
                      PARTITION BY view_name ORDER BY started_at DESC) AS k
                  FROM openivm_refresh_history
                  WHERE view_name IN ({names}) OR string_split(view_name, '.')[-1] IN ({names}))
                WHERE k = 1"""
        )
        return {"capture_ms": row[0], "apply_ms": row[1], "history_total_ms": row[2]}
    except duckdb.Error:
        return {}


def recomputed(table: str) -> str:
    """The recompute table `table` (see `recompute`)."""
    return f"{RECOMPUTES}.{table}"


def recompute(db: Db, sql: str, table: str) -> float:
    # In another database file: DDL committed in the work database bumps its catalog version, and
    # that makes DuckDB plan every prepared statement on it again, openivm's kept refresh plans
    # included. A user's recompute is what a maintained view replaces, not something run between
    # its refreshes (README, "What a refresh costs", gives the cost of planning again after DDL).
    # A persistent table still, written and committed like one in the work file.
    target = f"{db.recomputes()}.{table}"
    ms, _ = timed_ms(lambda: db.sql(f"CREATE OR REPLACE TABLE {target} AS {sql}"))
    return ms


# ---------------------------------------------------------------------------------------------
# correctness


FLOAT_TYPES = ("DOUBLE", "FLOAT", "REAL")


def q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def check(db: Db, view: str, table: str, tolerant: bool):
    """Raise Mismatch unless `view` holds exactly the rows of `table` (the recompute).

    Rows are compared as multisets with EXCEPT ALL both ways. When `tolerant` (views whose SUM or
    AVG of floating point values is maintained by adding and subtracting), the floating point
    columns are instead compared with a relative tolerance of 1e-8 after pairing rows on all
    other columns.
    """
    vcols = db.sql(f"SELECT column_name, column_type FROM (DESCRIBE {view})").fetchall()
    tcols = db.sql(f"SELECT column_name, column_type FROM (DESCRIBE {table})").fetchall()
    if vcols != tcols:
        raise Mismatch(f"{view}: columns {vcols} differ from the recompute's {tcols}")
    floats = [c for c, t in tcols if t in FLOAT_TYPES] if tolerant else []
    if not floats:
        a, b = db.one(
            f"SELECT (SELECT count(*) FROM (FROM {view} EXCEPT ALL FROM {table})),"
            f"       (SELECT count(*) FROM (FROM {table} EXCEPT ALL FROM {view}))"
        )
        if a or b:
            raise Mismatch(
                f"{view}: {a} rows not in the recompute, {b} recompute rows missing\n"
                + sample(db, f"FROM {view} EXCEPT ALL FROM {table}", "view only")
                + sample(db, f"FROM {table} EXCEPT ALL FROM {view}", "recompute only")
            )
        return
    keys = [c for c, _ in tcols if c not in floats]
    on = " AND ".join(f"a.{q(k)} IS NOT DISTINCT FROM b.{q(k)}" for k in keys) or "TRUE"
    close = " AND ".join(
        f"((a.{q(c)} IS NULL AND b.{q(c)} IS NULL) OR "
        f"abs(a.{q(c)} - b.{q(c)}) <= 1e-8 * greatest(1.0, abs(a.{q(c)}), abs(b.{q(c)})))"
        for c in floats
    )
    nv, nt, matched = db.one(
        f"SELECT (SELECT count(*) FROM {view}), (SELECT count(*) FROM {table}),"
        f"       (SELECT count(*) FROM {view} a JOIN {table} b ON {on} WHERE {close})"
    )
    if not nv == nt == matched:
        klist = ", ".join(q(k) for k in keys) or "1"
        raise Mismatch(
            f"{view}: {nv} rows, recompute {nt} rows, {matched} pairs within tolerance\n"
            + sample(db, f"SELECT {klist} FROM {view} EXCEPT ALL SELECT {klist} FROM {table}", "view only")
            + sample(db, f"SELECT {klist} FROM {table} EXCEPT ALL SELECT {klist} FROM {view}", "recompute only")
            + sample(db, f"SELECT a.*, b.* FROM {view} a JOIN {table} b ON {on} WHERE NOT ({close})", "out of tolerance")
        )


def sample(db: Db, sql: str, what: str) -> str:
    rows = db.sql(f"{sql} LIMIT 5").fetchall()
    return "".join(f"  {what}: {r}\n" for r in rows)


# ---------------------------------------------------------------------------------------------
# results


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt_ms(x) -> str:
    if x is None:
        return "-"
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}" if x >= 1 else f"{x:.2f}"


class Recorder:
    """Collects one record per measured case and prints a progress line for each."""

    def __init__(self):
        self.records: list[dict] = []
        self.skipped: list[str] = []
        self.failures: list[str] = []
        self.t0 = time.perf_counter()

    def elapsed(self) -> str:
        s = int(time.perf_counter() - self.t0)
        return f"{s // 60:02d}:{s % 60:02d}"

    def note(self, text: str):
        print(f"[{self.elapsed()}] {text}", flush=True)

    def skip(self, what: str, why: str):
        line = f"{what}: {why}"
        if line not in self.skipped:
            self.skipped.append(line)
            self.note(f"SKIP {line}")

    def fail(self, what: str, err: Exception):
        self.failures.append(f"{what}: {err}")
        print(f"\n!!!! MISMATCH in {what}\n{err}\n", file=sys.stderr, flush=True)

    def add(self, r: dict):
        self.records.append(r)
        extra = ""
        if r.get("capture_ms") is not None:
            extra += f" (capture {fmt_ms(r['capture_ms'])} / apply {fmt_ms(r['apply_ms'])})"
        if r.get("terms_total") is not None:
            extra += f", terms {r['terms_run']}/{r['terms_total']}"
        if r.get("mode"):
            extra += f", mode {r['mode']}"
        if r.get("growth_bytes") is not None:
            extra += f", db growth {mib(r['growth_bytes'])} (one copy of the read columns {mib(r['copy_bytes'])})"
        ratio = r["ratio"]
        verdict = "-" if ratio is None else f"{ratio:.3f} ({1 / ratio:.1f}x faster)" if ratio < 1 else f"{ratio:.2f} ({ratio:.1f}x slower)"
        rows = "" if r["batch_rows"] is None else f" ({r['batch_rows']:,} rows)"
        self.note(
            f"{r['workload']} {r['dataset']} [{r['source']}] {r['batch']}{rows}"
            f" {r['view']}/{r['variant']}: {fmt_ms(r['refresh_ms'])} ms vs recompute {fmt_ms(r['recompute_ms'])} ms,"
            f" ratio {verdict}{extra}; median of {r['runs']}{' (cut by the time budget)' if r.get('budget_cut') else ''}, all checked"
        )


def add_write(self: Recorder, r: dict):
    """Records a write through openivm measured against the same plain statement."""
    self.records.append(r)
    self.note(
        f"writes {r['dataset']} {r['statement']} ({r['rows']:,} rows): through openivm {fmt_ms(r['openivm_ms'])} ms "
        f"vs plain {fmt_ms(r['plain_ms'])} ms, ratio {r['ratio']:.2f}; median of {r['runs']}"
    )


Recorder.add_write = add_write


def mib(b) -> str:
    return "-" if b is None else f"{b / 2**20:.1f} MiB"


def modes(values) -> str | None:
    vals = [v for v in values if v]
    if not vals:
        return None
    c = Counter(vals)
    return "/".join(f"{m}" if n == len(vals) else f"{m}x{n}" for m, n in c.most_common())


def record(case: dict, view: str, variant: str, refreshes: list[dict], recomputes: list[float], batch_rows) -> dict:
    """One result row: medians over the runs; ratio = median of the per-run refresh/recompute."""
    ratios = [r["wall_ms"] / c for r, c in zip(refreshes, recomputes) if c]
    last = refreshes[-1]
    return {
        **case,
        "batch_rows": batch_rows,
        "view": view,
        "variant": variant,
        "runs": len(refreshes),
        "refresh_ms": median(r["wall_ms"] for r in refreshes),
        "recompute_ms": median(recomputes),
        "ratio": median(ratios),
        "mode": modes(r.get("mode") for r in refreshes),
        "terms_run": last.get("terms_run"),
        "terms_total": last.get("terms_total"),
        "terms_fk_pruned": last.get("terms_fk_pruned"),
        "delta_rows": median(r.get("delta_rows") for r in refreshes),
        "capture_ms": median(r.get("capture_ms") for r in refreshes),
        "apply_ms": median(r.get("apply_ms") for r in refreshes),
        "growth_bytes": None,
        "copy_bytes": None,
    }


# ---------------------------------------------------------------------------------------------
# the run loop


class Budget:
    """Stops a case's runs early when, at the pace so far, the next run would end past the budget;
    never before MIN_RUNS runs, so that every figure stays a median."""

    MIN_RUNS = 3

    def __init__(self, seconds: float, rec: "Recorder"):
        self.seconds, self.rec, self.t0 = seconds, rec, time.perf_counter()

    def another(self, done: int) -> bool:
        spent = time.perf_counter() - self.t0
        if self.seconds and done >= self.MIN_RUNS and spent / done * (done + 1) > self.seconds:
            self.rec.note(f"time budget: stopping after {done} runs ({spent:.0f} s spent, budget {self.seconds:.0f} s per case)")
            return False
        return True


def wanted_groups(cfg: Config, rec: Recorder, label: str, source: str, items, available, feats: Features):
    """The (batch kind, fraction, views) groups of a workload's plan that the command line asks
    for; views whose functions this build lacks are skipped, and said so."""
    groups = []
    for kind, frac, names in items:
        if not cfg.wanted(source, kind if kind == "none" else f"{kind} {frac * 100:g}%"):
            continue
        keep = []
        for name in names:
            why = available(name, source, feats, kind)
            if why:
                rec.skip(f"{label} [{source}] {kind} {frac:g} {name}", why)
            else:
                keep.append(name)
        if keep:
            groups.append((kind, frac, keep))
    return groups


def create_views(db: Db, rec: Recorder, label: str, source: str, groups, query_of):
    """Creates every view the groups refresh (`query_of(name)` is its query), timing each."""
    for v in sorted({v for _, _, names in groups for v in names}):
        ms, _ = timed_ms(lambda: db.sql("CALL openivm_create(?, ?)", [v, query_of(v)]).fetchall())
        rec.note(f"{label} [{source}] created {v} in {ms:.0f} ms")


def only_measured(db: Db, variants: list[Variant]):
    """Drops the views of the source that this case does not refresh (the work copy has every
    view of every case): a view never refreshed keeps every batch in the shared log, and the
    case's views would then read their batches out of a longer log (about 10 ms more per refresh
    at TPC-H SF1), which is the cost of a lagging view, not of the case measured."""
    keep = {v.view for v in variants}
    for (name,) in db.sql("SELECT view_name FROM openivm_views").fetchall():
        if name not in keep:
            db.sql("CALL openivm_drop(?)", [name]).fetchall()


def warm(db: Db, variants: list[Variant], queries: dict[str, str]):
    """Bring base tables and stored results into DuckDB's buffer pool (after opening a copy), and
    refresh each view once with nothing to do: the first refresh of a view in a database instance
    compiles it (parse, bind, catalog reads: 30-110 ms for the TPC-H views), once, and the runs
    measure the refreshes after it. `first_refresh_ms` records that one."""
    for k, sql in queries.items():
        recompute(db, sql, f"bench_rc_{k}")
    first = {}
    for v in variants:
        db.sql(f"SELECT count(*) FROM {v.view}").fetchall()
        first[v.view] = refresh(db, v)["wall_ms"]
    return first


# The row of a case's first refresh after each batch (whichever view it was, see `run_group`).
FIRST_VIEW = "(first refresh)"


def turn_order(refreshes: list, recomputes: list, run: int) -> list:
    """The order of a run's refreshes and recomputes: each list rotated by the run, so that every
    view takes its turn at the first refresh (which captures the batch for the others) and every
    query at the first recompute, interleaved one by one, a refresh first on even runs and a
    recompute first on odd ones (neither always finds the other's data in the buffer pool)."""
    rot = lambda xs: xs[run % len(xs):] + xs[:run % len(xs)] if xs else xs
    a, b = (rot(refreshes), rot(recomputes)) if run % 2 == 0 else (rot(recomputes), rot(refreshes))
    out = []
    for i in range(max(len(a), len(b))):
        out.extend(a[i:i + 1] + b[i:i + 1])
    return out


def run_group(db: Db, rec: Recorder, case: dict, variants: list[Variant], queries: dict[str, str],
              tolerant: dict[str, bool], apply_batch, runs: int, budget_s: float = 0):
    """Apply `runs` batches; after each, time every refresh and recompute, then check every view."""
    used = {v.query for v in variants}
    queries = {k: s for k, s in queries.items() if k in used}
    only_measured(db, variants)
    first_refresh = warm(db, variants, queries)
    refreshes = {v.view: [] for v in variants}
    recomputes = {k: [] for k in queries}
    batch_rows = []
    refresh_ops = [("refresh", v) for v in variants]
    recompute_ops = [("recompute", k) for k in queries]
    rec.note(f"{case['workload']} {case['dataset']} [{case['source']}] {case['batch']}: "
             f"{runs} runs of {', '.join(v.view for v in variants)}")
    budget = Budget(budget_s, rec)
    # The first refresh after a batch captures it for every view of the case (the others read
    # what it logged): about what one view alone over its tables costs, recorded apart (from the
    # runs where that view prunes: a `nofk` variant recomputes whatever it captures).
    first = {"refreshes": [], "recomputes": []}
    for run in range(runs):
        if not budget.another(run):
            break
        batch_rows.append(apply_batch(run))
        capturer = None
        for kind, x in turn_order(refresh_ops, recompute_ops, run):
            if kind == "refresh":
                refreshes[x.view].append(refresh(db, x))
                capturer = capturer or x
            else:
                recomputes[x].append(recompute(db, queries[x], f"bench_rc_{x}"))
        if capturer.fk_pruning is not False:  # a view refreshed without pruning recomputes anyway
            first["refreshes"].append(refreshes[capturer.view][-1])
            first["recomputes"].append(recomputes[capturer.query][-1])
        for v in variants:
            check(db, v.view, recomputed(f"bench_rc_{v.query}"), tolerant[v.query])
    rows = median(batch_rows)
    for v in variants:
        r = record(case, v.view, v.label, refreshes[v.view], recomputes[v.query], None if rows is None else int(rows))
        r["budget_cut"] = len(batch_rows) < runs
        r["first_refresh_ms"] = round(first_refresh[v.view], 1)
        rec.add(r)
    if len(variants) > 1 and first["refreshes"]:
        r = record(case, FIRST_VIEW, "captures", first["refreshes"], first["recomputes"],
                   None if rows is None else int(rows))
        r["budget_cut"] = len(batch_rows) < runs
        rec.add(r)
