"""A DuckLake with a SQLite catalog (the duckdb-extension-sqlite wheel, loaded by path), written by
two processes at once: a writer process inserts, deletes and updates while this process keeps
refreshing views over the lake (captured from DuckLake's change feed). After every refresh the
stored result equals a recompute of the query; the writer retries commits that meet a locked
SQLite database, as DuckLake users do."""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

from support import EXTENSION, connect, ducklake_extension, mismatches, skip_without_ducklake

def setUpModule():
    skip_without_ducklake()


QUERIES = {
    "by_name": "SELECT d.name, SUM(f.amount) AS total, COUNT(*) AS n FROM lake.fact f "
    "JOIN lake.dim d ON f.k = d.k GROUP BY d.name",
    "facts": "SELECT k, SUM(amount) AS s, COUNT(*) AS n FROM lake.fact GROUP BY k",
}


def sqlite_extension():
    """The SQLite extension of the duckdb-extension-sqlite wheel. Its file is named
    sqlite.duckdb_extension, but DuckDB takes the extension's name from the file name and the
    extension is called sqlite_scanner: load a copy under that name."""
    import duckdb_extension_sqlite

    base = pathlib.Path(duckdb_extension_sqlite.__file__).parent
    wheel_file = next(base.rglob("sqlite.duckdb_extension"))
    copy = pathlib.Path(tempfile.gettempdir()) / f"openivm-sqlite-{os.getuid()}" / "sqlite_scanner.duckdb_extension"
    if not copy.exists() or copy.stat().st_size != wheel_file.stat().st_size:
        copy.parent.mkdir(exist_ok=True)
        shutil.copyfile(wheel_file, copy)
    return str(copy)


def attach(con, tmp):
    con.execute(f"LOAD '{sqlite_extension()}'")
    con.execute(f"LOAD '{ducklake_extension()}'")
    con.execute(f"ATTACH 'ducklake:sqlite:{tmp}/meta.sqlite' AS lake (DATA_PATH '{tmp}/data')")


WRITER = textwrap.dedent("""
    import random, sys, time, duckdb
    tmp, sqlite_ext, lake_ext, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    con = duckdb.connect(config={'allow_unsigned_extensions': True})
    con.execute(f"LOAD '{sqlite_ext}'")
    con.execute(f"LOAD '{lake_ext}'")
    con.execute(f"ATTACH 'ducklake:sqlite:{tmp}/meta.sqlite' AS lake (DATA_PATH '{tmp}/data')")
    rng = random.Random(11)
    def write(sql, params):
        for attempt in range(200):
            try:
                con.execute(sql, params)
                return
            except duckdb.Error as e:
                if 'locked' not in str(e) and 'onflict' not in str(e) and 'busy' not in str(e).lower():
                    raise
                time.sleep(0.02)
        raise RuntimeError('could not commit: ' + sql)
    for i in range(rounds):
        op = rng.randint(0, 3)
        if op == 0:
            write("INSERT INTO lake.fact SELECT 100000 + ? * 100 + j, j % 5, j FROM range(20) r(j)", [i])
        elif op == 1:
            write("DELETE FROM lake.fact WHERE id % 17 = ?", [rng.randint(0, 16)])
        elif op == 2:
            write("UPDATE lake.fact SET amount = amount + 1 WHERE id % 13 = ?", [rng.randint(0, 12)])
        else:
            write("INSERT INTO lake.dim VALUES (?, 'w' || ?)", [rng.randint(0, 9), i % 3])
        time.sleep(0.01)
    print('done', flush=True)
""")


def at_feed_snapshots(con, query):
    """The query with every lake table read at the snapshot its feed last captured."""
    for table, snapshot in con.execute("SELECT table_name, watermark FROM openivm.feeds").fetchall():
        at = f" AT (VERSION => {int(snapshot)})"
        for alias in ("f", "d"):
            query = query.replace(f"lake.{table} {alias} ", f"lake.{table} {alias}{at} ")
        query = query.replace(f"lake.{table} GROUP", f"lake.{table}{at} GROUP")
    return query


class DuckLakeSqliteTest(unittest.TestCase):
    def test_two_processes_write_a_sqlite_catalog(self):
        with tempfile.TemporaryDirectory() as tmp:
            con = connect(os.path.join(tmp, "home.db"))
            attach(con, tmp)
            con.execute("CREATE TABLE lake.dim(k INTEGER, name VARCHAR)")
            con.execute("CREATE TABLE lake.fact(id INTEGER, k INTEGER, amount INTEGER)")
            con.execute("INSERT INTO lake.dim SELECT i, 'n' || (i % 3) FROM range(5) r(i)")
            con.execute("INSERT INTO lake.fact SELECT i, i % 5, i FROM range(2000) r(i)")
            for name, q in QUERIES.items():
                con.execute("SELECT * FROM openivm_create(?, ?)", [name, q])
            self.assertEqual(
                {r[0] for r in con.execute("SELECT source FROM openivm.feeds").fetchall()}, {"ducklake"})
            writer = subprocess.Popen(
                [sys.executable, "-c", WRITER, tmp, sqlite_extension(), ducklake_extension(), "40"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            refreshes = 0
            while writer.poll() is None or refreshes < 3:
                for name in QUERIES:
                    try:
                        con.execute("SELECT * FROM openivm_refresh(?)", [name]).fetchall()
                    except Exception as e:  # a locked SQLite catalog: retry at the next round
                        if "locked" not in str(e):
                            raise
                        continue
                    # the writer keeps committing: compare with the query over each table at
                    # the snapshot its feed reached
                    self.assertEqual(mismatches(con, name, at_feed_snapshots(con, QUERIES[name])), 0, name)
                refreshes += 1
            out, err = writer.communicate()
            self.assertGreaterEqual(refreshes, 3)
            self.assertEqual(writer.returncode, 0, err)
            self.assertIn("done", out)
            for name, q in QUERIES.items():
                r = con.execute("SELECT mode FROM openivm_refresh(?)", [name]).fetchone()
                self.assertEqual(mismatches(con, name, q), 0, name)
            modes = {r[0] for r in con.execute("SELECT mode FROM openivm_refresh_history "
                                                "WHERE reason <> 'initial fill'").fetchall()}
            self.assertIn("incremental", modes)
            con.close()


if __name__ == "__main__":
    unittest.main()
