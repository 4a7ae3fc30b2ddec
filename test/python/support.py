"""Shared helpers of the Python integration tests: where the extension is and how to open a
database with it loaded."""
import os
import pathlib
import time

import duckdb

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXTENSION = os.environ.get("OPENIVM_EXTENSION", str(ROOT / "build" / "release" / "openivm.duckdb_extension"))


def connect(path=":memory:", load=True):
    for _ in range(100):
        con = duckdb.connect(path, config={"allow_unsigned_extensions": True})
        if not load:
            return con
        con.execute(f"LOAD '{EXTENSION}'")
        if path == ":memory:" or not released(con):
            return con
        # DuckDB 2.0's Python client hands back a file's instance while it is still open in the
        # process: reopened within the extension's release (about 100 ms after the last close),
        # it is the instance whose connection the extension just let go. Open it again.
        con.close()
        time.sleep(0.05)
    raise AssertionError(f"{path}: the extension's released instance was handed back again and again")


def released(con):
    """Whether the extension of `con`'s instance has released its connection (the next call
    would say so): a bind that reaches the extension's connection tells."""
    try:
        con.execute("CALL refresh('openivm_probe_no_such_view')")
    except duckdb.Error as e:
        return "released its connection" in str(e)
    return False


# What opening a file says while the extension of a closed connection still holds it: the lock
# (DuckDB 1.5.5), or the instance the process still has open under another configuration (2.0).
RELEASE_PENDING = (duckdb.IOException, duckdb.ConnectionException) + (
    (duckdb.ResourceInUseException,) if hasattr(duckdb, "ResourceInUseException") else ()
)


def connect_when_released(path, read_only=False):
    """Opens a file another connection of this process just closed. The extension releases a
    closed database within about 100 ms (its watchdog), longer on a loaded machine: retry."""
    for _ in range(200):
        try:
            con = duckdb.connect(path, read_only=read_only, config={"allow_unsigned_extensions": True})
            con.execute(f"LOAD '{EXTENSION}'")
            return con
        except RELEASE_PENDING:
            time.sleep(0.05)
    raise AssertionError(f"{path} was not released")


def mismatches(con, view, query):
    """Rows in which the stored view and a recompute of its query differ (both directions)."""
    return con.execute(
        f"SELECT count(*) FROM ((FROM {view} EXCEPT ALL ({query})) UNION ALL (({query}) EXCEPT ALL FROM {view}))"
    ).fetchone()[0]


def skip_without_ducklake():
    """For a module's setUpModule: the DuckLake (and SQLite) extension wheels exist for DuckDB
    1.5.5 only, so these tests cannot run on another host."""
    import unittest

    try:
        ducklake_extension()
    except (ImportError, StopIteration):
        raise unittest.SkipTest(f"no DuckLake extension for DuckDB {duckdb.__version__} (its wheel exists for 1.5.5 only)")


def ducklake_extension():
    """The DuckLake extension file of the duckdb-extension-ducklake wheel (loaded by path: plain
    LOAD ducklake would try to download it)."""
    import duckdb_extension_ducklake

    base = pathlib.Path(duckdb_extension_ducklake.__file__).parent
    return str(next(base.rglob("ducklake.duckdb_extension")))


def random_lake_writes(rng, next_id, fact_keys):
    """Writes of a mixed batch on `lake.fact(id, k, amount)` and `lake.dim(k, name)`, each a
    function of the connection to write through: inserts of new fact rows (ids from
    `next_id[0]` on, keys below `fact_keys`), deletes and updates of facts, renamed and new
    dimension rows."""

    def insert(c):
        c.execute("INSERT INTO lake.fact SELECT ? + i, (? + i) % ?, i * 3 FROM range(?) r(i)",
                  [next_id[0], rng.randint(0, fact_keys - 1), fact_keys, rng.randint(1, 40)])
        next_id[0] += 100

    return [
        insert,
        lambda c: c.execute("DELETE FROM lake.fact WHERE id % 11 = ?", [rng.randint(0, 10)]),
        lambda c: c.execute("UPDATE lake.fact SET amount = amount + 7 WHERE id % 13 = ?", [rng.randint(0, 12)]),
        lambda c: c.execute("UPDATE lake.dim SET name = name || 'x' WHERE k = ?", [rng.randint(0, fact_keys - 1)]),
        lambda c: c.execute("INSERT INTO lake.dim VALUES (?, 'new')", [rng.randint(5, fact_keys + 2)]),
        lambda c: c.execute("DELETE FROM lake.fact WHERE k = ?", [rng.randint(0, fact_keys - 1)]),
    ]


def attach_ducklake(con, directory, name="lake"):
    """Attaches a DuckLake with a DuckDB-file catalog and local data files under `directory`."""
    con.execute(f"LOAD '{ducklake_extension()}'")
    con.execute(
        f"ATTACH 'ducklake:{directory}/catalog.ducklake' AS {name} (DATA_PATH '{directory}/data')"
    )
