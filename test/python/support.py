"""Shared helpers of the Python integration tests: where the extension is and how to open a
database with it loaded."""
import os
import pathlib

import duckdb

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXTENSION = os.environ.get("OPENIVM_EXTENSION", str(ROOT / "build" / "release" / "openivm.duckdb_extension"))


def connect(path=":memory:", load=True):
    con = duckdb.connect(path, config={"allow_unsigned_extensions": True})
    if load:
        con.execute(f"LOAD '{EXTENSION}'")
    return con


def mismatches(con, view, query):
    """Rows in which the stored view and a recompute of its query differ (both directions)."""
    return con.execute(
        f"SELECT count(*) FROM ((FROM {view} EXCEPT ALL ({query})) UNION ALL (({query}) EXCEPT ALL FROM {view}))"
    ).fetchone()[0]
