"""The database file right after the user's last connection closes (issue 33, item 6).

openivm keeps a connection of its own, which keeps the database instance open after the user's
last connection closes; its watchdog notices within about 100 ms and releases it, and DuckDB then
checkpoints the write-ahead log into the file as it does at any close. Until then the file alone
misses the latest commits: DuckDB's C API tells an extension nothing when a connection closes, and
every handle it gives keeps the database alive (docs/guarantees.md, "The file after close").
These tests pin down both halves: a CHECKPOINT before close() makes the file whole at once, and
without it the log is gone shortly after close()."""
import os
import shutil
import tempfile
import time
import unittest

import duckdb

from support import connect

QUERY = "SELECT k, sum(x) AS s FROM t GROUP BY k"


class FileAfterCloseTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.db = os.path.join(self.dir.name, "live.db")

    def tearDown(self):
        self.dir.cleanup()

    def work(self, con):
        con.execute("CREATE TABLE t(k INTEGER, x INTEGER)")
        con.execute("INSERT INTO t SELECT i % 7, i FROM range(1000) r(i)")
        con.execute("CALL openivm_create('v', ?)", [QUERY])
        con.execute("INSERT INTO t VALUES (100, 1), (101, 2)")
        con.execute("CALL refresh('v')").fetchall()
        con.execute("INSERT INTO t VALUES (102, 3)")  # the user's last write, after the last call

    def check_copy(self, copy):
        """The copied file alone (no .wal) holds every commit, and the view as refreshed."""
        plain = duckdb.connect(copy)
        try:
            self.assertEqual(plain.execute("SELECT count(*) FROM t").fetchone()[0], 1003)
            self.assertEqual(plain.execute("SELECT count(*) FROM v WHERE k IN (100, 101)").fetchone()[0], 2)
        finally:
            plain.close()

    def test_checkpoint_before_close_makes_the_file_whole(self):
        con = connect(self.db)
        self.work(con)
        con.execute("CHECKPOINT")
        con.close()
        copy = os.path.join(self.dir.name, "moved.db")
        shutil.copyfile(self.db, copy)  # at once, without the .wal
        self.check_copy(copy)

    def test_the_log_is_checkpointed_soon_after_close(self):
        con = connect(self.db)
        self.work(con)
        con.close()
        wal = self.db + ".wal"
        deadline = time.time() + 10
        while os.path.exists(wal) and time.time() < deadline:
            time.sleep(0.02)
        self.assertFalse(os.path.exists(wal), "the write-ahead log outlived the release")
        copy = os.path.join(self.dir.name, "moved.db")
        shutil.copyfile(self.db, copy)
        self.check_copy(copy)


if __name__ == "__main__":
    unittest.main()
