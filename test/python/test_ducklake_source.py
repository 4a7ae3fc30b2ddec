"""DuckLake tables as sources of a view kept in the DuckDB database, captured from DuckLake's
change feed (the `ducklake` source; test_ducklake_feed.py covers compaction, expiry and more). Inserts, deletes, updates and mixed batches from two connections; after every refresh the
stored result equals a recompute, and the DuckLake snapshots the writes made are untouched."""
import os
import random
import tempfile
import unittest

from support import attach_ducklake, connect, mismatches

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


if __name__ == "__main__":
    unittest.main()
