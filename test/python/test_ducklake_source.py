"""DuckLake tables as sources of a view kept in the DuckDB database, captured from DuckLake's
change feed (the `ducklake` source; test_ducklake_feed.py covers compaction, expiry and more). Inserts, deletes, updates and mixed batches from two connections; after every refresh the
stored result equals a recompute, and the DuckLake snapshots the writes made are untouched."""
import os
import random
import tempfile
import unittest

from support import attach_ducklake, connect, mismatches, skip_without_ducklake

def setUpModule():
    skip_without_ducklake()


QUERIES = {
    "by_name": "SELECT d.name, SUM(f.amount) AS total, COUNT(*) AS n FROM lake.fact f "
    "JOIN lake.dim d ON f.k = d.k GROUP BY d.name",
    "rows": "SELECT d.name, f.amount FROM lake.fact f JOIN lake.dim d ON f.k = d.k WHERE f.amount > 10",
}


class DuckLakeSourceTest(unittest.TestCase):
    def test_refresh_over_ducklake_tables_is_exact(self):
        rng = random.Random(3)
        with tempfile.TemporaryDirectory() as tmp:
            con = connect()
            attach_ducklake(con, tmp)
            con.execute("CREATE TABLE lake.dim(k INTEGER, name VARCHAR)")
            con.execute("CREATE TABLE lake.fact(id INTEGER, k INTEGER, amount INTEGER)")
            con.execute("INSERT INTO lake.dim SELECT i, 'n' || (i % 3) FROM range(5) r(i)")
            con.execute("INSERT INTO lake.fact SELECT i, i % 5, i FROM range(30) r(i)")
            for name, q in QUERIES.items():
                con.execute("SELECT * FROM openivm_create(?, ?)", [name, q])
            other = con.cursor()
            next_id = 30
            batches = [
                lambda c: c.execute("INSERT INTO lake.fact VALUES (?, ?, ?)", [next_id, rng.randint(0, 4), 50]),
                lambda c: c.execute("DELETE FROM lake.fact WHERE id % 4 = ?", [rng.randint(0, 3)]),
                lambda c: c.execute("UPDATE lake.fact SET amount = amount + 7 WHERE id % 3 = ?", [rng.randint(0, 2)]),
                lambda c: c.execute("UPDATE lake.dim SET name = name || 'x' WHERE k = ?", [rng.randint(0, 4)]),
                lambda c: c.execute("INSERT INTO lake.dim VALUES (?, 'new')", [rng.randint(5, 9)]),
            ]
            for step in range(12):
                snapshots_before = con.execute("SELECT count(*) FROM lake.snapshots()").fetchone()[0]
                # a mixed batch: two or three writes, from either connection
                for _ in range(rng.randint(2, 3)):
                    rng.choice(batches)(rng.choice([con, other]))
                    next_id += 1
                written = con.execute("SELECT count(*) FROM lake.snapshots()").fetchone()[0]
                self.assertGreater(written, snapshots_before)
                for name, q in QUERIES.items():
                    con.execute("SELECT * FROM openivm_refresh(?)", [name])
                    self.assertEqual(mismatches(con, name, q), 0, f"{name} after batch {step}")
                # refreshing reads the lake and writes nothing into it
                self.assertEqual(con.execute("SELECT count(*) FROM lake.snapshots()").fetchone()[0], written)
            for name in QUERIES:
                self.assertTrue(con.execute("SELECT ok FROM openivm_verify(?)", [name]).fetchone()[0])
            con.close()

    def test_auto_recomputes_when_reading_deletions_costs_more(self):
        # DuckLake's deletion half scans the table's data files: for a view that alone reads a
        # table, auto recomputes after deletions instead, without reading the changes, and the
        # feed restarts at the snapshot the recompute read; inserts stay incremental. A second
        # view sharing the feed makes the capture needed anyway (its batch is logged).
        q = "SELECT k, SUM(v) AS s, COUNT(*) AS n FROM lake.big GROUP BY k"
        with tempfile.TemporaryDirectory() as tmp:
            con = connect()
            attach_ducklake(con, tmp)
            con.execute("CREATE TABLE lake.big(id INTEGER, k INTEGER, v INTEGER)")
            con.execute("INSERT INTO lake.big SELECT i, i % 50, i % 1000 FROM range(300000) r(i)")
            con.execute("SELECT * FROM openivm_create('sums', ?)", [q])

            def refresh():
                mode = con.execute("SELECT mode FROM openivm_refresh('sums')").fetchone()[0]
                reason = con.execute("SELECT reason FROM openivm_refresh_history WHERE view_name = 'sums' "
                                     "ORDER BY started_at DESC LIMIT 1").fetchone()[0]
                self.assertEqual(mismatches(con, "sums", q), 0, reason)
                return mode, reason

            con.execute("INSERT INTO lake.big SELECT 300000 + i, i % 50, 1 FROM range(100) r(i)")
            self.assertEqual(refresh()[0], "incremental")
            con.execute("DELETE FROM lake.big WHERE id % 1000 = 1")
            mode, reason = refresh()
            self.assertEqual(mode, "full")
            self.assertIn("reading DuckLake's deletions scans", reason)
            current = con.execute("SELECT id FROM lake.current_snapshot()").fetchone()[0]
            self.assertEqual(con.execute("SELECT watermark FROM openivm.feeds").fetchone()[0], str(current))
            con.execute("INSERT INTO lake.big SELECT 400000 + i, i % 7, 2 FROM range(50) r(i)")
            self.assertEqual(refresh()[0], "incremental")
            # forced modes are obeyed
            con.execute("UPDATE lake.big SET v = v + 1 WHERE id % 997 = 0")
            self.assertEqual(con.execute("SELECT mode FROM openivm_refresh('sums', mode := 'incremental')")
                             .fetchone()[0], "incremental")
            self.assertEqual(mismatches(con, "sums", q), 0)
            con.execute("DELETE FROM lake.big WHERE id % 991 = 0")
            self.assertEqual(con.execute("SELECT mode FROM openivm_refresh('sums', mode := 'full')")
                             .fetchone()[0], "full")
            self.assertEqual(mismatches(con, "sums", q), 0)
            # shared feed: the deletions are read once for both views, the view stays exact
            con.execute("SELECT * FROM openivm_create('counts', 'SELECT k, COUNT(*) AS n FROM lake.big GROUP BY k')")
            con.execute("DELETE FROM lake.big WHERE id % 983 = 0")
            mode, reason = refresh()
            self.assertNotIn("reading DuckLake's deletions scans", reason)
            con.execute("SELECT * FROM openivm_refresh('counts')").fetchall()
            self.assertEqual(mismatches(con, "counts", "SELECT k, COUNT(*) AS n FROM lake.big GROUP BY k"), 0)
            con.close()


if __name__ == "__main__":
    unittest.main()
