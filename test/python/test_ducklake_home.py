"""Maintained views kept in a DuckLake catalog (`openivm_create('lake.main.v', ...)`): the view,
its stored result, its metadata and its change state are DuckLake tables, so a refresh is one
DuckLake commit and any process that attaches the lake sees the view. Views of every strategy over
lake tables and over DuckDB tables, mixed batches from two connections, a chain of views, a failed
create, drop, a re-attach under another name and a second process; after every refresh the stored
result equals a recompute of the query."""
import os
import random
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

from support import EXTENSION, attach_ducklake, connect, ducklake_extension, mismatches, random_lake_writes, skip_without_ducklake

def setUpModule():
    skip_without_ducklake()


LAKE_VIEWS = {
    # (query, strategy)
    "by_name": ("SELECT d.name, SUM(f.amount) AS total, COUNT(*) AS n, AVG(f.amount) AS mean, "
                "MIN(f.amount) AS lo, MAX(f.amount) AS hi FROM fact f JOIN dim d ON f.k = d.k GROUP BY d.name",
                "incremental"),
    "rows": ("SELECT d.name, f.amount FROM fact f JOIN dim d ON f.k = d.k WHERE f.amount > 10", "incremental"),
    "overall": ("SELECT COUNT(*) AS n, SUM(amount) AS s FROM fact", "incremental"),
    "rollup": ("SELECT k, amount % 3 AS m, SUM(amount) AS s, COUNT(*) AS n FROM fact GROUP BY ROLLUP (k, amount % 3)",
               "incremental"),
    "medians": ("SELECT k, median(amount) AS med, COUNT(*) AS n FROM fact GROUP BY k", "group_recompute"),
    "distinct_k": ("SELECT DISTINCT k FROM fact", "incremental"),
    "top": ("SELECT k, SUM(amount) AS s FROM fact GROUP BY k ORDER BY s DESC, k LIMIT 3", "incremental"),
    "ranked": ("SELECT id, rank() OVER (PARTITION BY k ORDER BY amount) AS r FROM fact", "full"),
}


def lake_tables(con):
    return {r[0] for r in con.execute(
        "SELECT schema_name || '.' || table_name FROM duckdb_tables() WHERE database_name = 'lake'").fetchall()}


class DuckLakeHomeTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def lake(self, home=None):
        con = connect(home or ":memory:")
        attach_ducklake(con, self.dir)
        return con

    def reattach(self):
        """The lake again, once the other process released its catalog file."""
        con = connect()
        for _ in range(200):
            try:
                attach_ducklake(con, self.dir)
                return con
            except Exception:
                time.sleep(0.05)
        raise AssertionError("the lake's catalog was not released")

    def fill(self, con):
        con.execute("CREATE TABLE lake.dim(k INTEGER, name VARCHAR)")
        con.execute("CREATE TABLE lake.fact(id INTEGER, k INTEGER, amount INTEGER)")
        con.execute("INSERT INTO lake.dim SELECT i, 'n' || (i % 3) FROM range(5) r(i)")
        con.execute("INSERT INTO lake.fact SELECT i, i % 5, i FROM range(40) r(i)")

    def test_views_of_every_strategy_in_a_lake(self):
        rng = random.Random(5)
        con = self.lake()
        self.fill(con)
        for name, (q, strategy) in LAKE_VIEWS.items():
            r = con.execute("SELECT strategy FROM openivm_create(?, ?)", [f"lake.main.{name}", q]).fetchone()
            self.assertEqual(r[0], strategy, name)
        # everything of the views is in the lake: nothing in the in-memory database
        self.assertEqual(con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'memory'").fetchone()[0], 0)
        self.assertTrue({"openivm.feeds", "openivm.cursors", "main.openivm_views"} <= lake_tables(con))
        other = con.cursor()
        batches = random_lake_writes(rng, [1000], 6)
        for step in range(10):
            for _ in range(rng.randint(1, 3)):
                rng.choice(batches)(rng.choice([con, other]))
            for name, (q, _) in LAKE_VIEWS.items():
                before = con.execute("SELECT max(snapshot_id) FROM lake.snapshots()").fetchone()[0]
                con.execute("SELECT * FROM openivm_refresh(?)", [f"lake.main.{name}"]).fetchall()
                after = con.execute("SELECT max(snapshot_id) FROM lake.snapshots()").fetchone()[0]
                # a refresh is at most one commit of the lake
                self.assertLessEqual(after - before, 1, name)
                self.assertEqual(mismatches(con, f"lake.main.{name}", q.replace("FROM fact", "FROM lake.fact")
                                            .replace("JOIN dim", "JOIN lake.dim")), 0, f"{name} after batch {step}")
        # the whole fact table deleted: groups go, the global aggregate's row stays
        con.execute("DELETE FROM lake.fact")
        for name, (q, _) in LAKE_VIEWS.items():
            con.execute("SELECT * FROM openivm_refresh(?)", [f"lake.main.{name}"]).fetchall()
            self.assertEqual(mismatches(con, f"lake.main.{name}", q.replace("FROM fact", "FROM lake.fact")
                                        .replace("JOIN dim", "JOIN lake.dim")), 0, name)
            self.assertTrue(con.execute("SELECT ok FROM openivm_verify(?)", [f"lake.main.{name}"]).fetchone()[0])
        self.assertEqual(con.execute("FROM lake.main.overall").fetchall(), [(0, None)])
        modes = {r[0] for r in con.execute("SELECT mode FROM lake.main.openivm_refresh_history").fetchall()}
        self.assertIn("incremental", modes)
        con.close()

    def test_lake_view_over_duckdb_tables(self):
        # The diff source's snapshot is kept in the lake too.
        con = self.lake(os.path.join(self.dir, "home.db"))
        con.execute("CREATE TABLE t(k INTEGER, v INTEGER)")
        con.execute("INSERT INTO t SELECT i % 4, i FROM range(20) r(i)")
        q = "SELECT k, SUM(v) AS s, COUNT(*) AS n FROM home.main.t GROUP BY k"
        con.execute("SELECT * FROM openivm_create('lake.main.sums', ?)", [q])
        self.assertEqual(con.execute("SELECT source FROM lake.openivm.feeds").fetchall(), [("diff",)])
        rng = random.Random(2)
        for step in range(8):
            op = step % 3
            if op == 0:
                con.execute("INSERT INTO t VALUES (?, ?), (?, ?)", [rng.randint(0, 5), step, rng.randint(0, 5), step])
            elif op == 1:
                con.execute("DELETE FROM t WHERE v % 3 = ?", [rng.randint(0, 2)])
            else:
                con.execute("UPDATE t SET v = v + 1, k = k + 1 WHERE v % 4 = ?", [rng.randint(0, 3)])
            r = con.execute("SELECT mode FROM openivm_refresh('lake.main.sums', mode := 'incremental')").fetchone()
            self.assertEqual(r[0], "incremental")
            self.assertEqual(mismatches(con, "lake.main.sums", q), 0, f"after batch {step}")
            # the snapshot's counts, summed per distinct row, are the table's copies of it
            self.assertEqual(con.execute(
                "SELECT count(*) FROM ("
                "(SELECT k, v, SUM(openivm_count) FROM lake.openivm.snapshot_1 GROUP BY ALL HAVING SUM(openivm_count) <> 0"
                " EXCEPT ALL SELECT k, v, count(*) FROM home.main.t GROUP BY ALL) UNION ALL"
                "(SELECT k, v, count(*) FROM home.main.t GROUP BY ALL EXCEPT ALL"
                " SELECT k, v, SUM(openivm_count) FROM lake.openivm.snapshot_1 GROUP BY ALL HAVING SUM(openivm_count) <> 0))"
            ).fetchone()[0], 0)
        # a batch that changes every row appends more net rows than the snapshot may hold
        # (half again its table and 4,096): it is regrouped in the lake, one row per distinct row
        con.execute("INSERT INTO t SELECT i % 7, 1000 + i FROM range(5000) r(i)")
        con.execute("SELECT * FROM openivm_refresh('lake.main.sums', mode := 'incremental')").fetchall()
        con.execute("UPDATE t SET v = v + 100000")
        con.execute("SELECT * FROM openivm_refresh('lake.main.sums', mode := 'incremental')").fetchall()
        self.assertEqual(mismatches(con, "lake.main.sums", q), 0)
        self.assertEqual(con.execute("SELECT count(*), sum(openivm_count) FROM lake.openivm.snapshot_1").fetchone(),
                         con.execute("SELECT count(DISTINCT (k, v)), count(*) FROM home.main.t").fetchone())
        con.close()

    def test_chain_drop_and_failed_create(self):
        con = self.lake()
        self.fill(con)
        con.execute("SELECT * FROM openivm_create('lake.main.per_k', "
                    "'SELECT k, SUM(amount) AS s, COUNT(*) AS n FROM fact GROUP BY k')")
        con.execute("SELECT * FROM openivm_create('lake.main.histogram', "
                    "'SELECT n, COUNT(*) AS groups FROM per_k GROUP BY n')")
        # the downstream reads the upstream's recorded change, the upstream the lake's change feed
        self.assertEqual(dict(con.execute("SELECT table_name, source FROM lake.openivm.feeds").fetchall()),
                         {"fact": "ducklake", "per_k": "recorded"})
        for step in range(4):
            con.execute("INSERT INTO lake.fact SELECT 500 + ? * 10 + j, j % 7, j FROM range(6) r(j)", [step])
            con.execute("DELETE FROM lake.fact WHERE id % 9 = ?", [step])
            for name in ("per_k", "histogram"):
                con.execute("SELECT * FROM openivm_refresh(?)", [f"lake.main.{name}"]).fetchall()
            self.assertEqual(mismatches(con, "lake.main.per_k",
                                        "SELECT k, SUM(amount) AS s, COUNT(*) AS n FROM lake.fact GROUP BY k"), 0)
            self.assertEqual(mismatches(con, "lake.main.histogram", "SELECT n, COUNT(*) AS groups FROM "
                                        "(SELECT k, COUNT(*) AS n FROM lake.fact GROUP BY k) GROUP BY n"), 0)
        # a failed create leaves the lake as it was: no table, no snapshot
        tables, snapshots = lake_tables(con), con.execute("SELECT count(*) FROM lake.snapshots()").fetchone()[0]
        for bad in ("SELECT k, SUM(nope) FROM fact GROUP BY k", "SELECT k FROM missing_table", "SELEC 1"):
            with self.assertRaises(Exception):
                con.execute("SELECT * FROM openivm_create('lake.main.bad', ?)", [bad])
        self.assertEqual(lake_tables(con), tables)
        self.assertEqual(con.execute("SELECT count(*) FROM lake.snapshots()").fetchone()[0], snapshots)
        # a view read by another is not dropped; dropping both leaves no state of theirs
        with self.assertRaises(Exception):
            con.execute("SELECT * FROM openivm_drop('lake.main.per_k')")
        con.execute("SELECT * FROM openivm_drop('lake.main.histogram')")
        con.execute("SELECT * FROM openivm_drop('lake.main.per_k')")
        self.assertEqual(con.execute("SELECT count(*) FROM lake.main.openivm_views").fetchone()[0], 0)
        self.assertEqual(con.execute("SELECT count(*) FROM lake.openivm.feeds").fetchone()[0], 0)
        self.assertFalse({t for t in lake_tables(con) if t.startswith("openivm.data_")})
        con.close()

    def test_refresh_all_of_a_lake(self):
        con = self.lake()
        self.fill(con)
        con.execute("CREATE TABLE t(k INTEGER)")
        con.execute("INSERT INTO t VALUES (1), (2)")
        con.execute("SELECT * FROM openivm_create('home_view', 'SELECT k, COUNT(*) AS n FROM t GROUP BY k')")
        names = ("by_name", "rows", "overall")
        for name in names:
            con.execute("SELECT * FROM openivm_create(?, ?)", [f"lake.main.{name}", LAKE_VIEWS[name][0]])
        con.execute("INSERT INTO lake.fact VALUES (800, 1, 99), (801, 2, 12)")
        con.execute("DELETE FROM lake.fact WHERE id < 3")
        con.execute("INSERT INTO t VALUES (3)")
        # the home's round refreshes the home's views; the lake's round the lake's
        home = [r[0] for r in con.execute("SELECT view_name FROM openivm_refresh_all()").fetchall()]
        self.assertEqual(home, ["home_view"])
        lake = [r[0] for r in con.execute("SELECT view_name FROM openivm_refresh_all(database := 'lake')").fetchall()]
        self.assertEqual(sorted(lake), sorted(names))
        for name in names:
            q = LAKE_VIEWS[name][0].replace("FROM fact", "FROM lake.fact").replace("JOIN dim", "JOIN lake.dim")
            self.assertEqual(mismatches(con, f"lake.main.{name}", q), 0, name)
        self.assertEqual(mismatches(con, "home_view", "SELECT k, COUNT(*) AS n FROM t GROUP BY k"), 0)
        with self.assertRaisesRegex(Exception, "database 'nowhere' is not attached"):
            con.execute("SELECT * FROM openivm_refresh_all(database := 'nowhere')")
        con.close()

    def test_other_kinds_of_database_are_refused_as_a_home(self):
        from test_ducklake_sqlite import sqlite_extension

        con = connect()
        con.execute(f"LOAD '{sqlite_extension()}'")
        con.execute(f"ATTACH '{self.dir}/other.sqlite' AS sq (TYPE sqlite)")
        con.execute("CREATE TABLE t(k INTEGER)")
        with self.assertRaisesRegex(Exception, "kept in DuckDB or DuckLake databases; 'sq' is a sqlite database"):
            con.execute("SELECT * FROM openivm_create('sq.main.v', 'SELECT k, COUNT(*) AS n FROM memory.main.t GROUP BY k')")
        self.assertEqual(con.execute("SELECT count(*) FROM duckdb_tables() WHERE database_name = 'sq'").fetchone()[0], 0)
        con.close()

    def test_reattached_under_another_name(self):
        con = self.lake()
        self.fill(con)
        q = "SELECT k, SUM(amount) AS s FROM fact GROUP BY k"
        con.execute("SELECT * FROM openivm_create('lake.main.v', ?)", [q])
        con.execute("DETACH lake")
        con.execute(f"ATTACH 'ducklake:{self.dir}/catalog.ducklake' AS shore (DATA_PATH '{self.dir}/data')")
        con.execute("INSERT INTO shore.fact VALUES (900, 2, 50), (901, 9, 1)")
        con.execute("SELECT * FROM openivm_refresh('shore.main.v')").fetchall()
        self.assertEqual(mismatches(con, "shore.main.v", q.replace("FROM fact", "FROM shore.fact")), 0)
        con.close()

    def test_another_process_sees_and_refreshes_the_view(self):
        q = "SELECT d.name, SUM(f.amount) AS total FROM fact f JOIN dim d ON f.k = d.k GROUP BY d.name"
        con = self.lake()
        self.fill(con)
        con.execute("SELECT * FROM openivm_create('lake.main.v', ?)", [q])
        con.close()
        script = textwrap.dedent("""
            import sys, time, duckdb
            ext, lake_ext, d = sys.argv[1], sys.argv[2], sys.argv[3]
            # (no progress bar on stdout: a slow statement on a loaded machine would print one)
            con = duckdb.connect(config={'allow_unsigned_extensions': True})
            con.execute("SET enable_progress_bar = false")
            con.execute(f"LOAD '{ext}'")
            con.execute(f"LOAD '{lake_ext}'")
            for attempt in range(200):  # the first process releases the catalog file within ~100 ms
                try:
                    con.execute(f"ATTACH 'ducklake:{d}/catalog.ducklake' AS lake (DATA_PATH '{d}/data')")
                    break
                except duckdb.IOException:
                    time.sleep(0.05)
            con.execute("INSERT INTO lake.fact VALUES (700, 1, 70), (701, 2, 71)")
            con.execute("DELETE FROM lake.fact WHERE id < 5")
            print(con.execute("SELECT mode FROM openivm_refresh('lake.main.v')").fetchone()[0])
        """)
        out = subprocess.run([sys.executable, "-c", script, EXTENSION, ducklake_extension(), self.dir],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip(), "incremental")
        con = self.reattach()
        self.assertEqual(mismatches(con, "lake.main.v", q.replace("FROM fact", "FROM lake.fact")
                                    .replace("JOIN dim", "JOIN lake.dim")), 0)
        self.assertEqual(con.execute("SELECT refresh_count FROM lake.main.openivm_views").fetchone()[0], 1)
        con.close()


if __name__ == "__main__":
    unittest.main()
