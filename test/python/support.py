"""Shared helpers of the Python integration tests: where the extension is and how to open a
database with it loaded."""
import os
import pathlib
import time

import duckdb

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXTENSION = os.environ.get("OPENIVM_EXTENSION", str(ROOT / "build" / "release" / "openivm.duckdb_extension"))


def connect(path=":memory:", load=True):
    con = duckdb.connect(path, config={"allow_unsigned_extensions": True})
    if load:
        con.execute(f"LOAD '{EXTENSION}'")
    return con


def connect_when_released(path, read_only=False):
    """Opens a file another connection of this process just closed. The extension releases a
    closed database within about 100 ms (its watchdog), longer on a loaded machine: retry."""
    for _ in range(200):
        try:
            con = duckdb.connect(path, read_only=read_only, config={"allow_unsigned_extensions": True})
            con.execute(f"LOAD '{EXTENSION}'")
            return con
        except duckdb.IOException:
            time.sleep(0.05)
    raise AssertionError(f"{path} was not released")


def mismatches(con, view, query):
    """Rows in which the stored view and a recompute of its query differ (both directions)."""
    return con.execute(
        f"SELECT count(*) FROM ((FROM {view} EXCEPT ALL ({query})) UNION ALL (({query}) EXCEPT ALL FROM {view}))"
    ).fetchone()[0]


def ducklake_extension():
    """The DuckLake extension file of the duckdb-extension-ducklake wheel (loaded by path: plain
    LOAD ducklake would try to download it)."""
    import duckdb_extension_ducklake

    base = pathlib.Path(duckdb_extension_ducklake.__file__).parent
    return str(next(base.rglob("ducklake.duckdb_extension")))


def attach_ducklake(con, directory, name="lake"):
    """Attaches a DuckLake with a DuckDB-file catalog and local data files under `directory`."""
    con.execute(f"LOAD '{ducklake_extension()}'")
    con.execute(
        f"ATTACH 'ducklake:{directory}/catalog.ducklake' AS {name} (DATA_PATH '{directory}/data')"
    )
