"""The N-term (telescoping) rule for views whose every table is a DuckLake table: one term per
changed leaf, earlier leaves at their new state, later ones at their old state (AT (VERSION => n)),
chosen when it runs fewer terms than inclusion-exclusion; openivm_explain shows the rule and why.
With RELY foreign keys the referenced leaves come first, so the term of an insert-only referenced
leaf reads the referencing leaf at its old state and is pruned. The same view with a native one-row
table joined in (so not all-DuckLake: inclusion-exclusion) gives the same result after every batch,
and both equal a recompute."""
import json
import random
import tempfile
import unittest

from support import attach_ducklake, connect, mismatches, skip_without_ducklake

def setUpModule():
    skip_without_ducklake()


LAKE = ("SELECT o.region, c.segment, SUM(l.qty) AS qty, COUNT(*) AS n FROM lake.lines l "
        "JOIN lake.orders o ON l.order_id = o.order_id JOIN lake.customers c ON o.cust_id = c.cust_id "
        "GROUP BY o.region, c.segment")
# the same rows, with a native table joined in: not all-DuckLake, so inclusion-exclusion
MIXED = ("SELECT o.region, c.segment, SUM(l.qty) AS qty, COUNT(*) AS n FROM lake.lines l "
         "JOIN lake.orders o ON l.order_id = o.order_id JOIN lake.customers c ON o.cust_id = c.cust_id "
         "JOIN one_row x ON x.k = 1 GROUP BY o.region, c.segment")


def refresh(con, view, **kw):
    args = "".join(f", {k} := {v}" if isinstance(v, bool) else f", {k} := '{v}'" for k, v in kw.items())
    cols = ["view_name", "terms_total", "terms_fk_pruned", "terms_empty_skipped", "terms_run", "delta_rows",
            "duration_ms", "mode"]
    return dict(zip(cols, con.execute(f"SELECT * FROM openivm_refresh(?{args})", [view]).fetchone()))


RELY_FKS = [
    {"child_table": "lake.lines", "child_columns": ["order_id"], "parent_table": "lake.orders",
     "parent_columns": ["order_id"]},
    {"child_table": "lake.orders", "child_columns": ["cust_id"], "parent_table": "lake.customers",
     "parent_columns": ["cust_id"]},
]


def compile_only(con, view, facts):
    """The 'facts' row of openivm_compile_with_facts: the plan it chose from `facts`."""
    rows = con.execute("SELECT stmt_kind, sql FROM openivm_compile_with_facts(?, ?)", [view, json.dumps(facts)]).fetchall()
    return json.loads([sql for kind, sql in rows if kind == "facts"][0])


def terms(r):
    return (r["terms_total"], r["terms_fk_pruned"], r["terms_empty_skipped"], r["terms_run"])


def setup(con, tmp):
    attach_ducklake(con, tmp)
    con.execute("CREATE TABLE one_row(k INTEGER)")
    con.execute("INSERT INTO one_row VALUES (1)")
    con.execute("CREATE TABLE lake.customers(cust_id INTEGER, segment VARCHAR)")
    con.execute("CREATE TABLE lake.orders(order_id INTEGER, cust_id INTEGER, region VARCHAR)")
    con.execute("CREATE TABLE lake.lines(line_id INTEGER, order_id INTEGER, qty INTEGER)")
    con.execute("INSERT INTO lake.customers SELECT i, 's' || (i % 3) FROM range(20) r(i)")
    con.execute("INSERT INTO lake.orders SELECT i, i % 20, 'r' || (i % 4) FROM range(200) r(i)")
    con.execute("INSERT INTO lake.lines SELECT i, i % 200, i % 9 FROM range(2000) r(i)")
    con.execute("SELECT * FROM openivm_create('lake_v', ?)", [LAKE])
    con.execute("SELECT * FROM openivm_create('mixed_v', ?)", [MIXED])


class DuckLakeNTermTest(unittest.TestCase):
    def check(self, con, what):
        for v, q in (("lake_v", LAKE), ("mixed_v", MIXED)):
            self.assertEqual(mismatches(con, v, q), 0, f"{v} after {what}")
        self.assertEqual(mismatches(con, "lake_v", "FROM mixed_v"), 0, what)

    def test_n_term_without_foreign_keys(self):
        rng = random.Random(9)
        with tempfile.TemporaryDirectory() as tmp:
            con = connect()
            setup(con, tmp)
            other = con.cursor()
            next_id = [10000]

            def lines(c):
                c.execute("INSERT INTO lake.lines SELECT ? + i, (? + i) % 230, i % 5 FROM range(30) r(i)",
                          [next_id[0], rng.randint(0, 200)])
                next_id[0] += 100

            writes = [
                lines,
                lambda c: c.execute("DELETE FROM lake.lines WHERE line_id % 19 = ?", [rng.randint(0, 18)]),
                lambda c: c.execute("UPDATE lake.orders SET region = 'r9' WHERE order_id % 23 = ?", [rng.randint(0, 22)]),
                lambda c: c.execute("INSERT INTO lake.orders SELECT 200 + i + ?, i % 25, 'r1' FROM range(10) r(i)",
                                    [rng.randint(0, 5) * 10]),
                lambda c: c.execute("UPDATE lake.customers SET segment = segment || 'x' WHERE cust_id = ?",
                                    [rng.randint(0, 24)]),
                lambda c: c.execute("INSERT INTO lake.customers VALUES (?, 'new')", [rng.randint(20, 24)]),
            ]
            # all three tables changed: 3 N-term terms against 7
            con.execute("INSERT INTO lake.lines VALUES (5000, 1, 7)")
            con.execute("UPDATE lake.orders SET region = 'rz' WHERE order_id = 3")
            con.execute("DELETE FROM lake.customers WHERE cust_id = 5")
            explain = con.execute("SELECT term, delta_leaves, status, reason, sql FROM openivm_explain('lake_v', "
                                  "fk_pruning := false)").fetchall()
            self.assertEqual(len(explain), 3)
            self.assertTrue(all("N-term rule" in r[3] for r in explain), explain)
            self.assertTrue(any("AT (VERSION =>" in r[4] for r in explain))
            mixed = con.execute("SELECT count(*) FROM openivm_explain('mixed_v')").fetchone()[0]
            self.assertEqual(mixed, 15)
            r = refresh(con, "lake_v", mode="incremental")
            self.assertEqual(terms(r), (3, 0, 0, 3))
            refresh(con, "mixed_v", mode="incremental")
            self.check(con, "all tables changed")
            # two tables changed: 2 terms (one skipped) against 3 of 7
            con.execute("INSERT INTO lake.lines VALUES (5001, 2, 7)")
            con.execute("UPDATE lake.orders SET region = 'ry' WHERE order_id = 4")
            r = refresh(con, "lake_v", mode="incremental")
            self.assertEqual(terms(r), (3, 0, 1, 2))
            history = con.execute("SELECT reason FROM openivm_refresh_history WHERE view_name = 'lake_v' "
                                  "ORDER BY started_at DESC LIMIT 1").fetchone()[0]
            self.assertIn("N-term rule", history)
            refresh(con, "mixed_v", mode="incremental")
            self.check(con, "two tables changed")
            # one table changed: inclusion-exclusion runs 1 term too, and is kept
            con.execute("INSERT INTO lake.lines VALUES (5002, 3, 7)")
            r = refresh(con, "lake_v", mode="incremental")
            self.assertEqual(r["terms_total"], 7)
            self.assertEqual(r["terms_run"], 1)
            refresh(con, "mixed_v", mode="incremental")
            self.check(con, "one table changed")
            for step in range(10):
                for _ in range(rng.randint(1, 4)):
                    rng.choice(writes)(rng.choice([con, other]))
                for v in ("lake_v", "mixed_v"):
                    refresh(con, v, mode="incremental")
                self.check(con, f"batch {step}")
            con.close()

    def test_a_view_behind_its_feeds_takes_the_rule_too(self):
        # Two all-DuckLake views share the feeds of the three tables. The one refreshed less often
        # applies the batches logged for it: its old state of each table is the snapshot recorded
        # with its cursor, so the N-term rule still applies, and it stays exact.
        rng = random.Random(4)
        other_q = LAKE.replace("SUM(l.qty) AS qty", "AVG(l.qty) AS mean, SUM(l.qty) AS qty")
        with tempfile.TemporaryDirectory() as tmp:
            con = connect()
            setup(con, tmp)
            con.execute("SELECT * FROM openivm_create('lake_w', ?)", [other_q])

            def change_all(k):
                con.execute("INSERT INTO lake.lines VALUES (?, ?, 4)", [7000 + k, k % 200])
                con.execute("UPDATE lake.orders SET region = 'q' || ? WHERE order_id = ?", [k, k % 200])
                con.execute("DELETE FROM lake.customers WHERE cust_id = ?", [k % 20])

            change_all(1)
            refresh(con, "lake_v", mode="incremental")
            change_all(2)
            refresh(con, "lake_v", mode="incremental")
            # lake_w is two batches behind on every feed: the rule's 3 terms, not 7
            self.assertEqual(con.execute("SELECT min(seq) < max(seq) FROM openivm.cursors").fetchone()[0], True)
            explain = con.execute("SELECT reason FROM openivm_explain('lake_w', fk_pruning := false)").fetchall()
            self.assertEqual(len(explain), 3, explain)
            self.assertTrue(all("N-term rule" in r[0] for r in explain), explain)
            r = refresh(con, "lake_w", mode="incremental")
            self.assertEqual(terms(r), (3, 0, 0, 3))
            self.assertEqual(mismatches(con, "lake_w", other_q), 0)
            self.assertEqual(mismatches(con, "lake_v", LAKE), 0)
            # random batches, each view refreshed or left behind at random
            for step in range(12):
                change_all(10 + step) if rng.random() < 0.5 else con.execute(
                    "INSERT INTO lake.lines SELECT 8000 + ? * 10 + i, i, 1 FROM range(5) r(i)", [step])
                for v, q in (("lake_v", LAKE), ("lake_w", other_q), ("mixed_v", MIXED)):
                    if rng.random() < 0.5:
                        refresh(con, v, mode="incremental")
                        self.assertEqual(mismatches(con, v, q), 0, f"{v} at step {step}")
            for v, q in (("lake_v", LAKE), ("lake_w", other_q), ("mixed_v", MIXED)):
                refresh(con, v, mode="incremental")
                self.assertEqual(mismatches(con, v, q), 0, v)
            rules = [r[0] for r in con.execute("SELECT reason FROM openivm_refresh_history "
                                                "WHERE view_name = 'lake_w'").fetchall()]
            self.assertTrue(any("N-term rule" in r for r in rules), rules)
            con.close()

    def test_referenced_leaves_first_prune_telescoping_terms(self):
        with tempfile.TemporaryDirectory() as tmp:
            con = connect()
            setup(con, tmp)
            con.execute("SELECT * FROM openivm_declare_rely_fk('lake.lines', 'order_id', 'lake.orders', "
                        "'order_id')").fetchall()
            con.execute("SELECT * FROM openivm_declare_rely_fk('lake.orders', 'cust_id', 'lake.customers', "
                        "'cust_id')").fetchall()
            # orders and customers insert-only, lines changed with a delete: inclusion-exclusion
            # runs 1 of 7 (the two dimensions pruned) and is kept
            con.execute("INSERT INTO lake.customers VALUES (30, 'snew')")
            con.execute("INSERT INTO lake.orders VALUES (300, 30, 'rnew')")
            con.execute("INSERT INTO lake.lines VALUES (9000, 300, 4)")
            con.execute("DELETE FROM lake.lines WHERE line_id = 1")
            doc = compile_only(con, "lake_v", {"fk_relations": RELY_FKS, "delta_shape": {
                "lake.customers": "INSERT_ONLY", "lake.orders": "INSERT_ONLY", "lake.lines": "GENERAL"}})
            self.assertEqual((doc["rule"], [t["delta_leaves"] for t in doc["terms_kept"]]),
                             ("inclusion_exclusion", [["l"]]))
            r = refresh(con, "lake_v", mode="incremental")
            self.assertEqual((r["terms_total"], r["terms_run"]), (7, 1))
            self.assertIn("inclusion-exclusion rule", con.execute(
                "SELECT reason FROM openivm_refresh_history WHERE view_name = 'lake_v' "
                "ORDER BY started_at DESC LIMIT 1").fetchone()[0])
            refresh(con, "mixed_v", mode="incremental")
            self.check(con, "insert-only dimensions")
            # customers insert-only, orders updated (not insert-only), lines changed: the pruned
            # inclusion-exclusion plan runs the 3 terms over {l, o}, the N-term plan in the order
            # customers, orders, lines runs 2 (the customers term reads orders at its old state
            # and is pruned)
            con.execute("INSERT INTO lake.customers VALUES (31, 'snew2')")
            con.execute("UPDATE lake.orders SET region = 'rupd' WHERE order_id = 7")
            con.execute("INSERT INTO lake.lines VALUES (9001, 7, 4)")
            explain = con.execute("SELECT delta_leaves, status, reason FROM openivm_explain('lake_v', "
                                  "mode := 'incremental')").fetchall()
            self.assertEqual([(d, s) for d, s, _ in explain], [("c", "fk_pruned"), ("o", "run"), ("l", "run")])
            self.assertIn("read at its old state", explain[0][2])
            self.assertIn("referenced leaves first", explain[0][2])
            # compile-only, told the same facts, plans the same: one planner for both
            doc = compile_only(con, "lake_v", {"fk_relations": RELY_FKS, "delta_shape": {
                "lake.customers": "INSERT_ONLY", "lake.orders": "GENERAL", "lake.lines": "GENERAL"}})
            self.assertEqual(doc["rule"], "n_term")
            planned = [(t["delta_leaf"], t["status"]) for t in doc["terms_kept"] + doc["terms_pruned"]]
            self.assertEqual(sorted(planned), sorted((d, s) for d, s, _ in explain))
            r = refresh(con, "lake_v", mode="incremental")
            self.assertEqual(terms(r), (3, 1, 0, 2))
            refresh(con, "mixed_v", mode="incremental")
            self.check(con, "pruned telescoping")
            # the same batch shape without pruning runs every changed leaf's term
            con.execute("INSERT INTO lake.customers VALUES (32, 'snew3')")
            con.execute("UPDATE lake.orders SET region = 'rupd2' WHERE order_id = 8")
            con.execute("INSERT INTO lake.lines VALUES (9002, 8, 4)")
            r = refresh(con, "lake_v", mode="incremental", fk_pruning=False)
            self.assertEqual(terms(r), (3, 0, 0, 3))
            refresh(con, "mixed_v", mode="incremental")
            self.check(con, "unpruned telescoping")
            con.close()


if __name__ == "__main__":
    unittest.main()
