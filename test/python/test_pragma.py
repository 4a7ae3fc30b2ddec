"""The PRAGMA forms (the companion file, pragma/), on the one DuckDB build they load into.

One LOAD of the main file gives them; each runs its CALL form in the caller's connection and
transaction and returns that form's rows. The reference design's example script runs here in its
own words (docs/fk-aware-pruning.md), with the view created by CALL openivm_create.
Run with DuckDB 2.0.1's Python (`make test` does, through test/run_all.py); skipped elsewhere."""
import pathlib
import unittest

import duckdb

from support import ROOT, connect, mismatches

HOST = (ROOT / "pragma" / "DUCKDB_VERSION").read_text().strip().lstrip("v")

QUERY = ("SELECT p.name, SUM(f.amount) as total "
         "FROM fact_sales f JOIN dim_product p ON f.product_id = p.product_id GROUP BY p.name")


def reference_tables():
    con = connect()
    con.execute("CREATE TABLE dim_product(product_id INTEGER PRIMARY KEY, name VARCHAR)")
    con.execute("""CREATE TABLE fact_sales(
        sale_id INTEGER,
        product_id INTEGER REFERENCES dim_product(product_id),
        amount DECIMAL(10,2)
    )""")
    con.execute("INSERT INTO dim_product VALUES (1, 'Widget'), (2, 'Gadget')")
    con.execute("INSERT INTO fact_sales VALUES (1, 1, 10.0), (2, 2, 20.0), (3, 1, 5.0)")
    con.execute("CALL openivm_create('sales_by_product', ?)", [QUERY])
    return con


def terms(result):
    """(terms_total, terms_fk_pruned, terms_run) of a refresh result."""
    cols = [d[0] for d in result.description]
    row = result.fetchone()
    return tuple(row[cols.index(c)] for c in ("terms_total", "terms_fk_pruned", "terms_run"))


def columns(result):
    return [d[0] for d in result.description]


@unittest.skipUnless(duckdb.__version__ == HOST,
                     f"the PRAGMA companion loads only into DuckDB {HOST} (this is {duckdb.__version__})")
class PragmaTest(unittest.TestCase):
    def test_the_reference_example_script(self):
        con = reference_tables()
        con.execute("PRAGMA openivm_declare_rely_fk('fact_sales', 'product_id', 'dim_product', 'product_id')")

        def mixed_batch_then_refresh(product, name, sale, amount, deleted):
            """A dimension insert, a fact insert and a fact delete; the PRAGMA refresh's terms."""
            con.execute("INSERT INTO dim_product VALUES (?, ?)", [product, name])
            con.execute("INSERT INTO fact_sales VALUES (?, ?, ?)", [sale, product, amount])
            con.execute("DELETE FROM fact_sales WHERE sale_id = ?", [deleted])
            counts = terms(con.execute("PRAGMA refresh('sales_by_product')"))
            self.assertEqual(mismatches(con, "sales_by_product", QUERY), 0)
            return counts

        self.assertEqual(mixed_batch_then_refresh(99, "NewProduct", 100, 500.0, 1), (3, 2, 1))
        self.assertEqual(con.execute("SELECT name, total FROM sales_by_product ORDER BY name").fetchall(),
                         [("Gadget", 20), ("NewProduct", 500), ("Widget", 5)])
        # The session's setting reaches the PRAGMA: it runs in the caller's connection.
        con.execute("SET openivm_fk_pruning = false")
        self.assertEqual(mixed_batch_then_refresh(100, "Other", 101, 7.0, 2), (3, 0, 3))
        con.close()

    def test_each_pragma_gives_its_call_forms_result(self):
        con = reference_tables()
        fk = "'fact_sales', 'product_id', 'dim_product', 'product_id'"
        declared = con.execute(f"PRAGMA openivm_declare_rely_fk({fk})")
        self.assertEqual((columns(declared), declared.fetchall()),
                         (columns(c := con.execute(f"CALL openivm_declare_rely_fk({fk})")), c.fetchall()))
        explained = con.execute("PRAGMA openivm_explain('sales_by_product')")
        self.assertEqual((columns(explained), explained.fetchall()),
                         (columns(c := con.execute("FROM openivm_explain('sales_by_product')")), c.fetchall()))
        revoked = con.execute(f"PRAGMA openivm_revoke_rely_fk({fk})")
        self.assertEqual(columns(revoked), ["child_table", "child_columns", "parent_table", "parent_columns", "revoked"])
        self.assertEqual(revoked.fetchall(), [("memory.main.fact_sales", "product_id", "memory.main.dim_product", "product_id", True)])
        # Each refresh PRAGMA after a change; the CALL form after it (nothing left to do) gives the columns.
        for pragma, call in (("refresh('sales_by_product')", "refresh('sales_by_product')"),
                             ("openivm_refresh('sales_by_product')", "openivm_refresh('sales_by_product')"),
                             ("openivm_refresh_all", "openivm_refresh_all()")):
            con.execute("INSERT INTO fact_sales VALUES (7, 1, 1.0)")
            result = con.execute(f"PRAGMA {pragma}")
            cols, rows = columns(result), result.fetchall()
            self.assertEqual(cols, columns(con.execute(f"CALL {call}")))
            self.assertEqual([(r[0], r[cols.index("terms_run")]) for r in rows], [("sales_by_product", 1)])
            self.assertEqual(mismatches(con, "sales_by_product", QUERY), 0)
        self.assertEqual(con.execute("PRAGMA openivm_drop('sales_by_product')").fetchall(),
                         [("sales_by_product", True)])
        self.assertEqual(con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'sales_by_product'")
                         .fetchone()[0], 0)
        con.close()

    def test_arguments_are_literals(self):
        con = connect()
        con.execute("CREATE TABLE t(k INTEGER, v INTEGER)")
        con.execute("INSERT INTO t VALUES (1, 1)")
        con.execute("""CALL openivm_create('"it''s"', 'SELECT k, SUM(v) AS s FROM t GROUP BY k')""")
        con.execute("INSERT INTO t VALUES (1, 2)")
        self.assertEqual(terms(con.execute("""PRAGMA refresh('"it''s"')""")), (1, 0, 1))
        self.assertEqual(con.execute("""FROM "it's" """).fetchall(), [(1, 3)])
        # A name that tries to end the literal is one argument, and names no view.
        with self.assertRaises(duckdb.BinderException) as caught:
            con.execute("PRAGMA refresh('v''); DROP TABLE t; --')")
        self.assertIn("does not exist", str(caught.exception))
        self.assertEqual(con.execute("SELECT count(*) FROM t").fetchone()[0], 2)
        con.close()

    def test_pragma_refresh_runs_in_the_callers_transaction(self):
        con = connect()
        con.execute("CREATE TABLE t(code VARCHAR)")
        con.execute("INSERT INTO t VALUES ('1')")
        con.execute("CALL openivm_create('v', 'SELECT CAST(code AS INTEGER) AS n, count(*) AS c FROM t GROUP BY 1')")
        con.execute("CREATE TABLE log(i INTEGER)")
        # A bad argument: the same error as the CALL form, with the same effect on the transaction
        # (on this host any bind error aborts the caller's transaction).
        outcomes = []
        for sql in ("CALL refresh('no_such_view')", "PRAGMA refresh('no_such_view')"):
            con.execute("BEGIN")
            con.execute("INSERT INTO log VALUES (0)")
            with self.assertRaises(duckdb.BinderException) as caught:
                con.execute(sql)
            try:
                con.execute("INSERT INTO log VALUES (0)")
                usable = True
            except duckdb.TransactionException:
                usable = False
            con.execute("ROLLBACK")
            outcomes.append((str(caught.exception), usable))
        self.assertEqual(outcomes[0], outcomes[1])
        # A refresh inside the caller's open transaction leaves it open; COMMIT keeps its writes.
        con.execute("BEGIN")
        con.execute("INSERT INTO log VALUES (1)")
        self.assertEqual(terms(con.execute("PRAGMA refresh('v')")), (1, 0, 0))
        con.execute("INSERT INTO log VALUES (2)")
        con.execute("COMMIT")
        self.assertEqual(con.execute("SELECT list(i ORDER BY i) FROM log").fetchone()[0], [1, 2])
        # An error while the work runs aborts the caller's transaction, as the CALL form does.
        con.execute("INSERT INTO t VALUES ('abc')")
        con.execute("BEGIN")
        con.execute("INSERT INTO log VALUES (3)")
        with self.assertRaises(duckdb.Error) as caught:
            con.execute("PRAGMA refresh('v')")
        self.assertIn("Could not convert string 'abc'", str(caught.exception))
        with self.assertRaises(duckdb.Error) as aborted:
            con.execute("INSERT INTO log VALUES (4)")
        self.assertIn("Current transaction is aborted", str(aborted.exception))
        con.execute("ROLLBACK")
        self.assertEqual(con.execute("SELECT list(i ORDER BY i) FROM log").fetchone()[0], [1, 2])
        con.close()


if __name__ == "__main__":
    unittest.main()
