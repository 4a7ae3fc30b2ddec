"""RELY foreign keys between DuckLake tables (DuckLake has no FOREIGN KEY constraints): bound to
the tables' durable DuckLake table ids, so a rename keeps a declaration and a drop + re-create ends
it; FK pruning on DuckLake joins, with the reference page's example (fact_sales -> dim_product,
a mixed batch: 3 terms, 2 pruned, 1 run) and a star with two dimensions (7 terms, 6 pruned).
Without a declaration these all-DuckLake views take the N-term rule (test_ducklake_nterm.py).
Every refresh is compared with a recompute."""
import tempfile
import unittest

from support import attach_ducklake, connect, mismatches, skip_without_ducklake

def setUpModule():
    skip_without_ducklake()


SALES = ("SELECT p.name, SUM(f.amount) AS total FROM lake.fact_sales f "
         "JOIN lake.dim_product p ON f.product_id = p.product_id GROUP BY p.name")
STAR = ("SELECT p.name, s.city, SUM(f.amount) AS total, COUNT(*) AS n FROM lake.fact_sales f "
        "JOIN lake.dim_product p ON f.product_id = p.product_id JOIN lake.dim_store s ON f.store_id = s.store_id "
        "GROUP BY p.name, s.city")


def refresh(con, view):
    cols = ["view_name", "terms_total", "terms_fk_pruned", "terms_empty_skipped", "terms_run", "delta_rows",
            "duration_ms", "mode"]
    return dict(zip(cols, con.execute("SELECT * FROM openivm_refresh(?, mode := 'incremental')", [view]).fetchone()))


def terms(r):
    return (r["terms_total"], r["terms_fk_pruned"], r["terms_empty_skipped"], r["terms_run"])


def setup(con, tmp):
    attach_ducklake(con, tmp)
    con.execute("CREATE TABLE lake.dim_product(product_id INTEGER, name VARCHAR)")
    con.execute("CREATE TABLE lake.dim_store(store_id INTEGER, city VARCHAR)")
    con.execute("CREATE TABLE lake.fact_sales(sale_id INTEGER, product_id INTEGER, store_id INTEGER, "
                "amount DECIMAL(10,2))")
    con.execute("INSERT INTO lake.dim_product VALUES (1, 'Widget'), (2, 'Gadget')")
    con.execute("INSERT INTO lake.dim_store VALUES (1, 'Oslo'), (2, 'Rome')")
    con.execute("INSERT INTO lake.fact_sales VALUES (1, 1, 1, 10.00), (2, 1, 2, 15.50), (3, 2, 1, 7.25)")


def declare(con):
    con.execute("SELECT * FROM openivm_declare_rely_fk('lake.fact_sales', 'product_id', "
                "'lake.dim_product', 'product_id')").fetchall()
    con.execute("SELECT * FROM openivm_declare_rely_fk('lake.fact_sales', 'store_id', "
                "'lake.dim_store', 'store_id')").fetchall()


def declared_then_renamed(con, tmp):
    """The tables with their declarations, dim_product renamed to products afterwards, and a view
    over the renamed table; returns the view's query."""
    setup(con, tmp)
    declare(con)
    con.execute("ALTER TABLE lake.dim_product RENAME TO products")
    renamed = SALES.replace("lake.dim_product", "lake.products")
    con.execute("SELECT * FROM openivm_create('by_product', ?)", [renamed])
    return renamed


def mixed_batch(con, pid, sid):
    con.execute("INSERT INTO lake.dim_product VALUES (?, 'NewProduct')", [pid])
    con.execute("INSERT INTO lake.fact_sales VALUES (?, ?, 1, 500.00)", [100 + pid, pid])
    con.execute("DELETE FROM lake.fact_sales WHERE sale_id = ?", [sid])


class DuckLakeRelyTest(unittest.TestCase):
    def test_reference_example_on_ducklake_tables(self):
        with tempfile.TemporaryDirectory() as tmp:
            con = connect()
            setup(con, tmp)
            con.execute("SELECT * FROM openivm_create('sales_by_product', ?)", [SALES])
            con.execute("SELECT * FROM openivm_create('star', ?)", [STAR])
            # without a declaration nothing is pruned, and the N-term rule (one term per changed
            # leaf) runs fewer terms than inclusion-exclusion (3, or 3 of 7)
            mixed_batch(con, 99, 1)
            self.assertEqual(terms(refresh(con, "sales_by_product")), (2, 0, 0, 2))
            # the star shares its feeds with the view refreshed just before, so it applies a logged
            # batch: its old states are the snapshots recorded with its cursors, and the N-term
            # rule runs 2 of 3 terms (the store did not change), inclusion-exclusion 3 of 7
            self.assertEqual(terms(refresh(con, "star")), (3, 0, 1, 2))
            for v, q in (("sales_by_product", SALES), ("star", STAR)):
                self.assertEqual(mismatches(con, v, q), 0, v)
            declare(con)
            stored = con.execute("SELECT child_token, parent_token FROM openivm_constraints_cache "
                                 "WHERE constraint_kind = 'RELY_FK'").fetchall()
            self.assertTrue(all(c.startswith("ducklake:") and p.startswith("ducklake:") for c, p in stored))
            # the reference page's batch: 3 terms, 2 pruned by the FK, 1 run
            mixed_batch(con, 98, 2)
            r = refresh(con, "sales_by_product")
            self.assertEqual(terms(r), (3, 2, 0, 1))
            self.assertEqual(mismatches(con, "sales_by_product", SALES), 0)
            explain = con.execute("SELECT status, reason FROM openivm_explain('sales_by_product')").fetchall()
            self.assertEqual(len(explain), 3)
            # the star: fact and product changed, store unchanged: 1 term of 7 runs
            r = refresh(con, "star")
            self.assertEqual(terms(r), (7, 2, 4, 1))
            self.assertEqual(mismatches(con, "star", STAR), 0)
            # both dimensions insert-only and the fact changed: 6 of 7 terms pruned or skipped, 1 run
            con.execute("INSERT INTO lake.dim_product VALUES (97, 'P97')")
            con.execute("INSERT INTO lake.dim_store VALUES (97, 'S97')")
            con.execute("INSERT INTO lake.fact_sales VALUES (500, 97, 97, 1.00), (501, 1, 97, 2.00)")
            r = refresh(con, "star")
            self.assertEqual((r["terms_total"], r["terms_run"]), (7, 1))
            self.assertEqual(r["terms_fk_pruned"] + r["terms_empty_skipped"], 6)
            self.assertGreater(r["terms_fk_pruned"], 0)
            self.assertEqual(mismatches(con, "star", STAR), 0)
            refresh(con, "sales_by_product")
            self.assertEqual(mismatches(con, "sales_by_product", SALES), 0)
            # a deleting dimension batch disables pruning of its terms: N-term, 2 terms
            con.execute("DELETE FROM lake.dim_product WHERE product_id = 97")
            con.execute("INSERT INTO lake.fact_sales VALUES (502, 2, 1, 3.00)")
            r = refresh(con, "sales_by_product")
            self.assertEqual(terms(r), (2, 0, 0, 2))
            self.assertEqual(mismatches(con, "sales_by_product", SALES), 0)
            con.close()

    def test_declarations_follow_renames_and_end_with_recreation(self):
        with tempfile.TemporaryDirectory() as tmp:
            con = connect()
            renamed = declared_then_renamed(con, tmp)
            mixed_batch_renamed = lambda pid, sid: (
                con.execute("INSERT INTO lake.products VALUES (?, 'N')", [pid]),
                con.execute("INSERT INTO lake.fact_sales VALUES (?, ?, 1, 1.00)", [100 + pid, pid]),
                con.execute("DELETE FROM lake.fact_sales WHERE sale_id = ?", [sid]),
            )
            mixed_batch_renamed(90, 1)
            # the declaration was made before the rename and still prunes
            self.assertEqual(terms(refresh(con, "by_product")), (3, 2, 0, 1))
            self.assertEqual(mismatches(con, "by_product", renamed), 0)
            # dropping and creating the parent again ends it
            con.execute("SELECT * FROM openivm_drop('by_product')")
            rows = con.execute("FROM lake.products").fetchall()
            con.execute("DROP TABLE lake.products")
            con.execute("CREATE TABLE lake.products(product_id INTEGER, name VARCHAR)")
            con.executemany("INSERT INTO lake.products VALUES (?, ?)", [list(r) for r in rows])
            con.execute("SELECT * FROM openivm_create('by_product', ?)", [renamed])
            mixed_batch_renamed(91, 2)
            self.assertEqual(terms(refresh(con, "by_product")), (2, 0, 0, 2))
            self.assertEqual(mismatches(con, "by_product", renamed), 0)
            # declared again for the new incarnation: pruning is back
            con.execute("SELECT * FROM openivm_declare_rely_fk('lake.fact_sales', 'product_id', "
                        "'lake.products', 'product_id')").fetchall()
            mixed_batch_renamed(92, 3)
            self.assertEqual(terms(refresh(con, "by_product")), (3, 2, 0, 1))
            self.assertEqual(mismatches(con, "by_product", renamed), 0)
            # nothing was written into the lake by declaring: its tables carry no comments
            comments = con.execute("SELECT count(*) FROM duckdb_columns() WHERE database_name = 'lake' "
                                   "AND comment IS NOT NULL").fetchone()[0]
            self.assertEqual(comments, 0)
            con.close()

    def test_a_declaration_is_revoked_by_the_tables_new_names(self):
        with tempfile.TemporaryDirectory() as tmp:
            con = connect()
            renamed = declared_then_renamed(con, tmp)
            con.execute("INSERT INTO lake.products VALUES (80, 'N')")
            con.execute("INSERT INTO lake.fact_sales VALUES (180, 80, 1, 1.00)")
            self.assertEqual(terms(refresh(con, "by_product")), (3, 2, 0, 1))
            # the old name no longer names a table; the new one finds the declaration by table id
            with self.assertRaises(Exception):
                con.execute("SELECT * FROM openivm_revoke_rely_fk('lake.fact_sales', 'product_id', "
                            "'lake.dim_product', 'product_id')").fetchall()
            row = con.execute("SELECT * FROM openivm_revoke_rely_fk('lake.fact_sales', 'product_id', "
                              "'lake.products', 'product_id')").fetchone()
            self.assertEqual(row[2:], ("lake.main.products", "product_id", True))
            left = con.execute("SELECT count(*) FROM openivm_constraints_cache "
                               "WHERE constraint_kind = 'RELY_FK' AND child_table = 'fact_sales'").fetchone()[0]
            self.assertEqual(left, 1)  # the store declaration stays
            # revoked once: a second call finds nothing
            again = con.execute("SELECT revoked FROM openivm_revoke_rely_fk('lake.fact_sales', 'product_id', "
                                "'lake.products', 'product_id')").fetchone()[0]
            self.assertFalse(again)
            # pruning ended: the dimension's insert-only delta is joined again
            con.execute("INSERT INTO lake.products VALUES (81, 'M')")
            con.execute("INSERT INTO lake.fact_sales VALUES (181, 81, 1, 2.00)")
            self.assertEqual(terms(refresh(con, "by_product")), (2, 0, 0, 2))  # the N-term rule, unpruned
            self.assertEqual(mismatches(con, "by_product", renamed), 0)
            con.close()

    def test_a_declaration_prunes_wherever_the_view_is_kept(self):
        """The reference example with the declaration made in the in-memory database, where
        openivm was loaded, and the view kept there, in the lake and in an attached DuckDB file:
        a declaration names tables, so each view sees it and the mixed batch (a dimension insert,
        a fact insert, a fact delete) prunes the same terms; every refresh exact."""
        with tempfile.TemporaryDirectory() as tmp:
            con = connect()
            setup(con, tmp)
            con.execute(f"ATTACH '{tmp}/other.db' AS other")
            con.execute("SELECT * FROM openivm_declare_rely_fk('lake.fact_sales', 'product_id', "
                        "'lake.dim_product', 'product_id')").fetchall()
            views = ["sales_by_product", "lake.main.sales_by_product", "other.main.sales_by_product"]
            for v in views:
                con.execute("SELECT * FROM openivm_create(?, ?)", [v, SALES])
            for pid, sid in ((98, 2), (97, 3)):
                mixed_batch(con, pid, sid)
                for v in views:
                    self.assertEqual(terms(refresh(con, v)), (3, 2, 0, 1), f"{v} after batch {pid}")
                    self.assertEqual(mismatches(con, v, SALES), 0, v)
            # revoked in the database it was declared in: no view prunes any more
            con.execute("SELECT * FROM openivm_revoke_rely_fk('lake.fact_sales', 'product_id', "
                        "'lake.dim_product', 'product_id')").fetchall()
            mixed_batch(con, 96, 100 + 98)
            for v in views:
                self.assertEqual(terms(refresh(con, v)), (2, 0, 0, 2), v)
                self.assertEqual(mismatches(con, v, SALES), 0, v)
            con.close()

    def test_group_attributes_of_lake_tables_are_looked_up(self):
        """A view in the main database grouped by a lake customer's key and attributes: while the
        customers and nations do not change, its terms leave them out and look them up for new
        groups only (src/merge_keys.rs, GroupLookup), also for orders whose customer is NULL or
        missing; a new customer brings the full terms back. Exact after every refresh."""
        q = ("SELECT c.ck, c.cname, n.nname, SUM(o.qty) AS qty, COUNT(*) AS n FROM lake.orders o "
             "JOIN lake.customer c ON o.ck = c.ck JOIN lake.nation n ON c.nk = n.nk GROUP BY c.ck, c.cname, n.nname")
        with tempfile.TemporaryDirectory() as tmp:
            con = connect()
            attach_ducklake(con, tmp)
            for s in ["CREATE TABLE lake.nation(nk INTEGER, nname VARCHAR)",
                      "CREATE TABLE lake.customer(ck INTEGER, cname VARCHAR, nk INTEGER)",
                      "CREATE TABLE lake.orders(ok INTEGER, ck INTEGER, qty INTEGER)",
                      "INSERT INTO lake.nation SELECT i, 'n' || i FROM range(3) t(i)",
                      "INSERT INTO lake.customer SELECT i, 'c' || i, i % 3 FROM range(20) t(i)",
                      "INSERT INTO lake.orders SELECT i, i % 10, i % 7 FROM range(100) t(i)"]:
                con.execute(s)
            con.execute("SELECT * FROM openivm_declare_rely_fk('lake.orders', 'ck', 'lake.customer', 'ck')").fetchall()
            con.execute("SELECT * FROM openivm_declare_rely_fk('lake.customer', 'nk', 'lake.nation', 'nk')").fetchall()
            con.execute("SELECT * FROM openivm_create('q10', ?)", [q]).fetchall()
            batches = [
                (["INSERT INTO lake.orders VALUES (100, 1, 5), (101, 15, 6), (102, NULL, 7), (103, 99, 8)"], True),
                (["DELETE FROM lake.orders WHERE ok < 10", "INSERT INTO lake.orders VALUES (104, 16, 1)"], True),
                (["UPDATE lake.orders SET qty = qty + 1 WHERE ok % 3 = 0"], True),
                (["INSERT INTO lake.customer VALUES (30, 'c30', 1)", "INSERT INTO lake.orders VALUES (105, 30, 2)"],
                 False),
            ]
            for step, (stmts, looked_up) in enumerate(batches):
                for s in stmts:
                    con.execute(s)
                reasons = [r for (r,) in con.execute(
                    "SELECT reason FROM openivm_explain('q10') WHERE status = 'run'").fetchall()]
                self.assertEqual(any("looked up for new groups only" in r for r in reasons), looked_up, step)
                con.execute("SELECT * FROM refresh('q10')").fetchall()
                self.assertEqual(mismatches(con, "q10", q), 0, step)
            con.close()


if __name__ == "__main__":
    unittest.main()
