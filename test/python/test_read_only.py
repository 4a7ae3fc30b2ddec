"""A database opened read-only: a refresh with nothing to do succeeds (it writes nothing), for the
append-only and the diff source alike; a refresh with changes to apply fails with a clear message
and changes nothing, and succeeds once the database is opened read-write."""
import os
import tempfile
import unittest

import duckdb

from support import connect, connect_when_released, mismatches


class ReadOnlyTest(unittest.TestCase):
    def test_nothing_to_do_works_read_only_and_work_says_why_not(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "db.duckdb")
            con = connect(path)
            con.execute("CREATE TABLE t(k INTEGER, x INTEGER)")
            con.execute("INSERT INTO t VALUES (1, 1), (2, 2)")
            con.execute("CREATE TABLE a(k INTEGER, x INTEGER)")
            con.execute("INSERT INTO a VALUES (1, 1)")
            con.execute("CALL openivm_declare_append_only('a')")
            con.execute("CALL openivm_create('v', 'SELECT k, SUM(x) AS s FROM t GROUP BY k')")
            con.execute("CALL openivm_create('w', 'SELECT k, SUM(x) AS s FROM a GROUP BY k')")
            con.close()

            ro = connect_when_released(path, read_only=True)
            for view in ("v", "w"):
                row = ro.execute(f"SELECT terms_run, delta_rows, mode FROM refresh('{view}')").fetchone()
                self.assertEqual(row, (0, 0, "incremental"))
            ro.close()

            con = connect_when_released(path)
            con.execute("INSERT INTO t VALUES (3, 3)")
            con.execute("INSERT INTO a VALUES (3, 3)")
            con.close()

            ro = connect_when_released(path, read_only=True)
            for view in ("v", "w"):
                with self.assertRaises(duckdb.Error) as caught:
                    ro.execute(f"CALL refresh('{view}')")
                self.assertIn("is attached read-only", str(caught.exception))
            ro.close()

            con = connect_when_released(path)
            self.assertEqual(con.execute("SELECT sum(refresh_count) FROM openivm_views").fetchone()[0], 0)
            for view, table in (("v", "t"), ("w", "a")):
                self.assertEqual(con.execute(f"SELECT delta_rows FROM refresh('{view}')").fetchone()[0], 1)
                self.assertEqual(mismatches(con, view, f"SELECT k, SUM(x) AS s FROM {table} GROUP BY k"), 0)
            con.close()


if __name__ == "__main__":
    unittest.main()
