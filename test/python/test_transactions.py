"""openivm calls inside the caller's open transaction: an error about the arguments (an unknown
view, a NULL or empty argument, an unknown setting) is raised at bind time and leaves the
caller's transaction usable; an error found while the work runs still aborts it."""
import unittest

import duckdb

from support import connect

QUERY = "SELECT k, SUM(v) AS s FROM t GROUP BY k"


def setup():
    con = connect()
    con.execute("CREATE TABLE t(k INTEGER, v INTEGER)")
    con.execute("INSERT INTO t VALUES (1, 1)")
    con.execute("CALL openivm_create('v', ?)", [QUERY])
    con.execute("CREATE TABLE log(i INTEGER)")
    return con


BAD_CALLS = [
    ("CALL refresh('no_such_view')", "view 'no_such_view' does not exist"),
    ("CALL openivm_refresh('no_such_view', fk_pruning := false)", "does not exist"),
    ("FROM openivm_explain('no_such_view')", "does not exist"),
    ("CALL openivm_drop('no_such_view')", "does not exist"),
    ("CALL refresh(NULL)", "view_name must not be NULL"),
    ("CALL refresh('')", "view_name must not be empty"),
    ("CALL refresh('other_db.main.v')", "database 'other_db' is not attached"),
    ("CALL openivm_set('no_such_setting', 'true')", "unknown setting"),
    ("CALL openivm_set('openivm_fk_pruning', 'maybe')", "takes true or false"),
    ("CALL openivm_create('openivm_x', 'SELECT k FROM t')", "reserved"),
    ("CALL openivm_create('w', NULL)", "query must not be NULL"),
    ("CALL openivm_declare_rely_fk('t', 'k', 't', 'k, v')", "pairs them one to one"),
]


DUCKDB_MAJOR = int(duckdb.__version__.split(".")[0])


class BindErrorsKeepTheTransactionTest(unittest.TestCase):
    def test_a_failed_call_with_a_bad_argument_loses_nothing(self):
        for sql, message in BAD_CALLS:
            with self.subTest(sql=sql):
                con = setup()
                con.execute("BEGIN")
                con.execute("INSERT INTO log VALUES (1)")
                with self.assertRaises(duckdb.Error) as caught:
                    con.execute(sql)
                self.assertIn(message, str(caught.exception))
                self.assertIsInstance(caught.exception, duckdb.BinderException)
                if DUCKDB_MAJOR >= 2:
                    # DuckDB 2 aborts a transaction on any error, its own binder errors too, and
                    # its COMMIT then rolls back (docs/guarantees.md).
                    with self.assertRaises(duckdb.Error) as aborted:
                        con.execute("INSERT INTO log VALUES (2)")
                    self.assertIn("Current transaction is aborted", str(aborted.exception))
                    con.execute("COMMIT")
                    self.assertEqual(con.execute("SELECT count(*) FROM log").fetchone()[0], 0)
                else:
                    # The transaction is still usable: the next statement and the COMMIT work,
                    # and both inserts are kept.
                    con.execute("INSERT INTO log VALUES (2)")
                    con.execute("COMMIT")
                    self.assertEqual(con.execute("SELECT list(i ORDER BY i) FROM log").fetchone()[0], [1, 2])
                # Nothing was done by the failed call, and openivm still works.
                con.execute("INSERT INTO t VALUES (2, 2)")
                self.assertEqual(con.execute("SELECT terms_run FROM refresh('v')").fetchone()[0], 1)
                con.close()

    def test_an_error_while_the_work_runs_still_aborts_the_transaction(self):
        con = connect()
        con.execute("CREATE TABLE t(code VARCHAR)")
        con.execute("INSERT INTO t VALUES ('1')")
        con.execute("CALL openivm_create('v', 'SELECT CAST(code AS INTEGER) AS n, count(*) AS c FROM t GROUP BY 1')")
        con.execute("INSERT INTO t VALUES ('abc')")
        con.execute("CREATE TABLE log(i INTEGER)")
        con.execute("BEGIN")
        con.execute("INSERT INTO log VALUES (1)")
        with self.assertRaises(duckdb.Error) as caught:
            con.execute("CALL refresh('v')")
        self.assertIn("Could not convert string 'abc'", str(caught.exception))
        with self.assertRaises(duckdb.Error) as aborted:
            con.execute("INSERT INTO log VALUES (2)")
        self.assertIn("Current transaction is aborted", str(aborted.exception))
        con.execute("ROLLBACK")
        self.assertEqual(con.execute("SELECT count(*) FROM log").fetchone()[0], 0)
        self.assertEqual(con.execute("SELECT refresh_count FROM openivm_views").fetchone()[0], 0)
        con.close()


if __name__ == "__main__":
    unittest.main()
