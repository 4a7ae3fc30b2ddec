"""A database file renamed, copied or attached under another name keeps its views: openivm's
metadata never records the name of the database that holds it (docs/architecture.md, "Names of
databases"). Tables of other attached databases keep their names."""
import os
import shutil
import tempfile
import time
import unittest

import duckdb

from support import EXTENSION, RELEASE_PENDING, connect, connect_when_released, mismatches

JOIN = (
    "SELECT d.name, SUM(f.amount) AS total, COUNT(*) AS n FROM f JOIN d ON f.d_id = d.id GROUP BY d.name"
)
BAG = "SELECT k, amount FROM f WHERE amount > 2"
OUTSIDE = "SELECT e.tag, SUM(f.amount) AS total FROM f JOIN ext.e AS e ON f.k = e.k GROUP BY e.tag"
VIEWS = {"v": JOIN, "w": BAG, "x": OUTSIDE}


def closed(path):
    """Waits until no instance of this process holds `path` (the extension releases a closed
    database within about 100 ms): then its write-ahead log is checkpointed and the file can be
    copied."""
    for _ in range(200):
        try:
            duckdb.connect(path).close()
            return
        except RELEASE_PENDING + (duckdb.BinderException,):
            time.sleep(0.05)
    raise AssertionError(f"{path} was not released")


def check_views(test, con, prefix=""):
    """Every view equals a recompute of its query; a refresh of each says how it went."""
    for name, query in VIEWS.items():
        test.assertEqual(mismatches(con, prefix + name, query), 0, name)


class RenamedFileTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = lambda name: os.path.join(self.dir.name, name)
        ext = duckdb.connect(self.path("ext.db"))
        ext.execute("CREATE TABLE e(k INTEGER, tag VARCHAR)")
        ext.execute("INSERT INTO e SELECT i, 'tag' || (i % 3) FROM range(10) r(i)")
        ext.close()
        con = connect(self.path("shop.db"))
        con.execute(f"ATTACH '{self.path('ext.db')}' AS ext")
        con.execute("CREATE TABLE d(id INTEGER PRIMARY KEY, name VARCHAR)")
        con.execute("CREATE TABLE f(k INTEGER, d_id INTEGER REFERENCES d(id), amount INTEGER)")
        con.execute("INSERT INTO d SELECT i, 'name' || i FROM range(5) r(i)")
        con.execute("INSERT INTO f SELECT i % 10, i % 5, i FROM range(50) r(i)")
        for name, query in VIEWS.items():
            con.execute("CALL openivm_create(?, ?)", [name, query])
        con.execute("CALL openivm_declare_append_only('f')")
        con.execute("INSERT INTO f VALUES (1, 1, 100)")
        con.execute("CALL openivm_refresh_all()")
        check_views(self, con)
        con.close()
        closed(self.path("shop.db"))

    def tearDown(self):
        self.dir.cleanup()

    def reopen(self, name):
        con = connect_when_released(self.path(name))
        con.execute(f"ATTACH '{self.path('ext.db')}' AS ext")
        return con

    def refresh_after_changes(self, con):
        """Inserts a dimension row and facts (the foreign key proves the new dimension row's term
        over the old facts empty) and refreshes every view; returns the join view's refresh row."""
        con.execute("INSERT INTO d VALUES (10, 'name10')")
        con.execute("INSERT INTO f VALUES (2, 10, 7), (3, 4, 9)")
        row = con.execute(
            "SELECT terms_total, terms_fk_pruned, terms_run, delta_rows, mode FROM refresh('v', mode := 'incremental')"
        ).fetchone()
        con.execute("CALL refresh('w')")
        con.execute("CALL refresh('x')")
        for name in VIEWS:
            self.assertEqual(con.execute("SELECT missing_rows + extra_rows FROM openivm_verify(?)", [name]).fetchone()[0], 0)
        check_views(self, con)
        return row

    def test_a_renamed_file_keeps_its_views(self):
        os.rename(self.path("shop.db"), self.path("moved.db"))
        con = self.reopen("moved.db")
        self.assertEqual(con.execute("SELECT current_database()").fetchone()[0], "moved")
        check_views(self, con)
        # the same plan as before the rename: the foreign key prunes the new dimension row's
        # terms, one term runs
        self.assertEqual(self.refresh_after_changes(con), (3, 2, 1, 3, "incremental"))
        # the append-only declaration made under the old name still holds
        self.assertIn("append_only", con.execute("SELECT list(source)::VARCHAR FROM openivm.feeds").fetchone()[0])
        # the metadata names the file's own database by '' and the other database by its name
        catalogs = con.execute("SELECT list(DISTINCT table_catalog ORDER BY table_catalog) FROM openivm.feeds").fetchone()[0]
        self.assertEqual(catalogs, ["", "ext"])
        self.assertEqual(con.execute("SELECT list(DISTINCT view_catalog) FROM openivm_views").fetchone()[0], [""])
        con.close()

    def test_a_copy_works_on_its_own_and_alongside_the_original(self):
        shutil.copy(self.path("shop.db"), self.path("copy.db"))
        con = self.reopen("copy.db")
        self.assertEqual(self.refresh_after_changes(con), (3, 2, 1, 3, "incremental"))
        # the original, attached alongside: its views read its own stored results, which the
        # copy's refresh did not touch
        con.execute(f"ATTACH '{self.path('shop.db')}' AS original")
        self.assertEqual(con.execute("SELECT count(*) FROM original.f").fetchone()[0] + 2, con.execute("SELECT count(*) FROM f").fetchone()[0])
        self.assertEqual(mismatches(con, "original.main.v", JOIN.replace("FROM f JOIN d", "FROM original.f AS f JOIN original.d AS d")), 0)
        # a view of the copy over a table of the attached original names that database
        con.execute("CALL openivm_create('y', 'SELECT k, COUNT(*) AS n FROM original.main.f GROUP BY k')")
        self.assertEqual(
            con.execute("SELECT list(DISTINCT table_catalog ORDER BY table_catalog) FROM openivm.feeds").fetchone()[0],
            ["", "ext", "original"],
        )
        con.execute("CALL refresh('y')")
        self.assertEqual(mismatches(con, "y", "SELECT k, COUNT(*) AS n FROM original.main.f GROUP BY k"), 0)
        con.close()

    def test_a_file_attached_under_another_name_by_a_loaded_database(self):
        shutil.copy(self.path("shop.db"), self.path("copy.db"))
        con = connect()
        con.execute(f"ATTACH '{self.path('copy.db')}' AS other")
        con.execute(f"ATTACH '{self.path('ext.db')}' AS ext")
        # DuckDB binds a view's names in the view's own database: the stored results are found
        for name, query in [("v", JOIN), ("w", BAG)]:
            q = query.replace("FROM f JOIN d", "FROM other.f AS f JOIN other.d AS d").replace("FROM f", "FROM other.f")
            self.assertEqual(mismatches(con, f"other.main.{name}", q), 0, name)
        con.close()
        # and the file still refreshes when opened as the default database afterwards
        closed(self.path("copy.db"))
        con = self.reopen("copy.db")
        self.assertEqual(self.refresh_after_changes(con), (3, 2, 1, 3, "incremental"))
        con.close()


if __name__ == "__main__":
    unittest.main()


class AttachedDatabaseTest(unittest.TestCase):
    """A view created in an attached file lives in that file: another process that opens or
    attaches the file sees it, and refreshes it with the extension loaded there."""

    def test_a_view_in_an_attached_file_is_seen_by_other_processes(self):
        import subprocess
        import sys

        with tempfile.TemporaryDirectory() as d:
            home, lake = os.path.join(d, "home.db"), os.path.join(d, "sales.db")
            con = connect(home)
            con.execute(f"ATTACH '{lake}' AS sales")
            con.execute("CREATE TABLE sales.f(k INTEGER, amount INTEGER)")
            con.execute("INSERT INTO sales.f SELECT i % 4, i FROM range(20) r(i)")
            con.execute("CALL openivm_create('sales.main.v', 'SELECT k, SUM(amount) AS total FROM f GROUP BY k')")
            con.execute("INSERT INTO sales.f VALUES (9, 9)")
            con.execute("CALL refresh('sales.v')")
            self.assertEqual(mismatches(con, "sales.v", "SELECT k, SUM(amount) AS total FROM sales.f GROUP BY k"), 0)
            self.assertEqual(con.execute("SELECT count(*) FROM duckdb_tables() WHERE database_name = 'home'").fetchone()[0], 0)
            con.close()
            closed(home)
            closed(lake)
            # another process, without the extension, attaches the file under another name
            script = (
                "import duckdb; c = duckdb.connect(); c.execute('SET enable_progress_bar = false'); "
                f"c.execute(\"ATTACH '{lake}' AS elsewhere (READ_ONLY)\"); "
                "print(c.execute('SELECT count(*) FROM ((FROM elsewhere.v EXCEPT ALL (SELECT k, SUM(amount) AS total FROM elsewhere.f GROUP BY k)) "
                "UNION ALL ((SELECT k, SUM(amount) AS total FROM elsewhere.f GROUP BY k) EXCEPT ALL FROM elsewhere.v))').fetchone()[0])"
            )
            out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
            self.assertEqual(out.stdout.strip(), "0")
            # and a process that opens the file itself, with the extension, refreshes the view
            script = (
                "import duckdb; c = duckdb.connect("
                f"'{lake}', config={{'allow_unsigned_extensions': True}}); c.execute(\"LOAD '{EXTENSION}'\"); "
                "c.execute('SET enable_progress_bar = false'); "
                "c.execute('INSERT INTO f VALUES (1, 1000)'); "
                "print(c.execute('SELECT delta_rows FROM refresh(\\'v\\')').fetchone()[0], "
                "c.execute('SELECT total FROM v WHERE k = 1').fetchone()[0])"
            )
            out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(out.stdout.split(), ["1", str(1 + 5 + 9 + 13 + 17 + 1000)])
