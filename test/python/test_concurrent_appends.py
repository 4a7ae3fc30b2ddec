"""Refreshes of a view over an append-only table while another connection commits inserts.

DuckDB's `duckdb_tables().estimated_size`, which tells a refresh whether an append-only table
grew, already counts the rows of a commit that is still in progress, while the refreshing
transaction's snapshot does not show them yet. A capture that recorded that size would make the
next refresh, after the commit, find the size unchanged and skip the rows for good (until the
next insert). Each trial below refreshes in a loop while a large insert commits, then refreshes
once more and compares the view with a recompute.
"""
import os
import tempfile
import threading
import unittest

from support import connect, mismatches

QUERY = "SELECT g, COUNT(*) AS n, SUM(v) AS s FROM t GROUP BY g"


class ConcurrentAppends(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.con = connect(os.path.join(self.dir.name, "c.duckdb"))
        self.con.execute("CREATE TABLE t(id BIGINT, g INTEGER, v INTEGER)")
        self.con.execute("INSERT INTO t SELECT i, i % 7, i % 100 FROM range(1000) r(i)")

    def tearDown(self):
        self.con.close()
        self.dir.cleanup()

    def run_trials(self, trials=12, rows=400_000):
        next_id = 1000
        for trial in range(trials):
            writer = self.con.cursor()
            lo = next_id
            next_id += rows
            done = threading.Event()

            def write():
                try:
                    writer.execute(f"INSERT INTO t SELECT i, i % 7, i % 100 FROM range({lo}, {lo + rows}) r(i)")
                finally:
                    done.set()

            th = threading.Thread(target=write)
            th.start()
            while not done.is_set():
                self.con.execute("SELECT * FROM refresh('v')").fetchall()
            th.join()
            writer.close()
            self.con.execute("SELECT * FROM refresh('v')").fetchall()
            self.assertEqual(mismatches(self.con, "v", QUERY), 0, f"trial {trial}: the view missed committed rows")

    def test_with_a_key(self):
        self.con.execute("CALL openivm_declare_append_only('t', key := 'id')").fetchall()
        self.con.execute("CALL openivm_create('v', ?)", [QUERY]).fetchall()
        self.run_trials()

    def test_by_rowid(self):
        self.con.execute("CALL openivm_declare_append_only('t')").fetchall()
        self.con.execute("CALL openivm_create('v', ?)", [QUERY]).fetchall()
        self.run_trials()


if __name__ == "__main__":
    unittest.main()
