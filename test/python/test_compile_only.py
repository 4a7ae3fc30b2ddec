"""openivm_compile_with_facts: the duckdb dialect's program, run against delta relations built
by hand from the tables' states before and after a batch, gives the stored result a refresh
gives. Each batch is applied to the tables once; the view `ref` is refreshed by openivm, the view
`cmp` (the same query) is brought up to date only by running the compiled program, and both are
compared with each other and with a recompute of the query after every batch."""
import json
import random
import unittest

from support import connect, mismatches

TABLES = {
    "fact": "id INTEGER, pid INTEGER, sid INTEGER, amount DECIMAL(10,2), qty INTEGER",
    "product": "pid INTEGER, name VARCHAR",
    "store": "sid INTEGER, city VARCHAR",
}

QUERIES = [
    "SELECT p.name, s.city, SUM(f.amount) AS total, COUNT(*) AS n, AVG(f.qty) AS q "
    "FROM fact f JOIN product p ON f.pid = p.pid JOIN store s ON f.sid = s.sid GROUP BY p.name, s.city",
    "SELECT SUM(f.qty) AS q, COUNT(f.amount) AS c FROM fact f JOIN product p ON f.pid = p.pid",
    "SELECT p.name, f.qty FROM fact f JOIN product p ON f.pid = p.pid WHERE f.qty > 2",
]

# Set operations: every branch a join of its own, inclusion-exclusion per branch.
SET_QUERIES = [
    # a UNION ALL of two joins over the same tables
    "SELECT p.name, f.qty FROM fact f JOIN product p ON f.pid = p.pid WHERE f.qty > 3 "
    "UNION ALL SELECT p.name, f.qty FROM fact f JOIN product p ON f.pid = p.pid WHERE f.amount < 10",
    # a UNION ALL in FROM, grouped: a 2-leaf and a 3-leaf branch
    "SELECT u.city, SUM(u.v) AS total, COUNT(*) AS n FROM (SELECT s.city, f.amount AS v FROM fact f "
    "JOIN store s ON f.sid = s.sid UNION ALL SELECT s.city, f.qty FROM fact f JOIN product p ON f.pid = p.pid "
    "JOIN store s ON f.sid = s.sid WHERE p.name = 'p1') u GROUP BY u.city",
    # a UNION (distinct)
    "SELECT p.name FROM fact f JOIN product p ON f.pid = p.pid WHERE f.qty > 4 "
    "UNION SELECT s.city FROM fact f JOIN store s ON f.sid = s.sid",
    # INTERSECT ALL and EXCEPT ALL, EXCEPT
    "SELECT f.pid FROM fact f JOIN store s ON f.sid = s.sid WHERE s.city <> 'c0' "
    "INTERSECT ALL SELECT p.pid FROM product p JOIN fact f ON f.pid = p.pid WHERE f.qty > 2",
    "SELECT f.pid, f.sid FROM fact f EXCEPT ALL "
    "SELECT f.pid, s.sid FROM fact f JOIN store s ON f.sid = s.sid WHERE f.qty < 3",
    "SELECT p.name FROM product p EXCEPT SELECT p.name FROM fact f JOIN product p ON f.pid = p.pid WHERE f.qty = 0",
    # one table in both branches (one delta relation read by both)
    "SELECT f.id, f.pid FROM fact f WHERE f.qty > 3 UNION ALL SELECT f.id, f.sid FROM fact f WHERE f.amount > 20",
    "SELECT name FROM product UNION ALL SELECT p.name FROM product p JOIN fact f ON f.pid = p.pid",
]

FKS = [
    {"child_table": "fact", "child_columns": ["pid"], "parent_table": "product", "parent_columns": ["pid"]},
    {"child_table": "main.fact", "child_columns": "sid", "parent_table": "memory.main.store", "parent_columns": "sid"},
]


class CompileOnlyTest(unittest.TestCase):
    def setUp(self):
        self.rng = random.Random(7)
        self.con = connect()
        for t, cols in TABLES.items():
            self.con.execute(f"CREATE TABLE {t}({cols})")
        self.con.execute("INSERT INTO product SELECT i, 'p' || (i % 4) FROM range(1, 9) r(i)")
        self.con.execute("INSERT INTO store SELECT i, 'c' || (i % 3) FROM range(1, 5) r(i)")
        self.next_id = 1
        self.next_pid, self.next_sid = 9, 5
        self.insert_facts(40)
        self.views = [(f"{k}", q) for k, q in enumerate(QUERIES)] + [(f"s{k}", q) for k, q in enumerate(SET_QUERIES)]
        for k, q in self.views:
            for role in ("ref", "cmp"):
                self.con.execute("SELECT * FROM openivm_create(?, ?)", [f"{role}{k}", q])

    def insert_facts(self, n):
        pids = [r[0] for r in self.con.execute("SELECT pid FROM product").fetchall()]
        sids = [r[0] for r in self.con.execute("SELECT sid FROM store").fetchall()]
        for _ in range(n):
            self.con.execute(
                "INSERT INTO fact VALUES (?, ?, ?, ?, ?)",
                [self.next_id, self.rng.choice(pids), self.rng.choice(sids),
                 self.rng.randint(-500, 5000) / 100, self.rng.randint(0, 6)],
            )
            self.next_id += 1

    def snapshot(self):
        for t in TABLES:
            self.con.execute(f"CREATE OR REPLACE TEMP TABLE old_{t} AS FROM {t}")

    def build_deltas(self):
        """delta_<t>: one row per inserted (+1) or deleted (-1) copy, from the two states."""
        for t in TABLES:
            self.con.execute(
                f"CREATE OR REPLACE TEMP TABLE delta_{t} AS "
                f"SELECT *, 1 AS openivm_multiplicity FROM (FROM {t} EXCEPT ALL FROM old_{t}) "
                f"UNION ALL SELECT *, -1 FROM (FROM old_{t} EXCEPT ALL FROM {t})"
            )

    def run_batch(self, batch, facts, expect_rule):
        self.snapshot()
        batch()
        self.build_deltas()
        pruned = 0
        for k, q in self.views:
            program = self.con.execute(
                "SELECT stmt_order, stmt_kind, sql FROM openivm_compile_with_facts(?, ?) ORDER BY stmt_order",
                [f"cmp{k}", json.dumps(facts)],
            ).fetchall()
            self.assertEqual(program[-1][1], "facts")
            doc = json.loads(program[-1][2])
            if k == "0":
                self.assertEqual(doc["rule"], expect_rule, doc["rule_reason"])
            if k.startswith("s"):
                # A set operation: inclusion-exclusion per branch, every term tagged with its branch.
                self.assertEqual(doc["rule"], "inclusion_exclusion", doc["rule_reason"])
                self.assertTrue(doc["rule_reason"].startswith("a set operation"), doc["rule_reason"])
                self.assertEqual(len(doc["branches"]), 2)
                self.assertEqual(sum(b["terms"] for b in doc["branches"]), doc["inclusion_exclusion_terms"])
                terms = doc["terms_kept"] + doc["terms_pruned"]
                self.assertTrue(all(t["branch"] in (0, 1) for t in terms))
                pruned += sum(b["terms_fk_pruned"] for b in doc["branches"])
            self.con.execute("BEGIN")
            for _, kind, sql in program[:-1]:
                self.assertEqual(kind, "merge")
                self.con.execute(sql)
            self.con.execute("COMMIT")
            self.con.execute("SELECT * FROM openivm_refresh(?)", [f"ref{k}"])
            self.assertEqual(mismatches(self.con, f"ref{k}", q), 0, f"refresh of {q}")
            self.assertEqual(mismatches(self.con, f"cmp{k}", q), 0, f"compiled program of {q} ({doc['rule']})")
            self.assertEqual(mismatches(self.con, f"cmp{k}", f"FROM ref{k}"), 0)
        return pruned

    def general_batch(self):
        self.insert_facts(8)
        self.con.execute("DELETE FROM fact WHERE id % 7 = ?", [self.rng.randint(0, 6)])
        self.con.execute("UPDATE fact SET qty = qty + 1, amount = amount * 2 WHERE id % 5 = ?", [self.rng.randint(0, 4)])
        self.con.execute("UPDATE product SET name = name || 'x' WHERE pid % 3 = ?", [self.rng.randint(0, 2)])
        self.con.execute("DELETE FROM store WHERE sid = (SELECT max(sid) FROM store)")
        self.con.execute("INSERT INTO store VALUES (?, 'c9')", [self.next_sid])
        self.next_sid += 1

    def dims_insert_only_batch(self):
        """New products and stores, facts inserted (some referencing the new keys) and deleted."""
        self.con.execute("INSERT INTO product VALUES (?, 'new')", [self.next_pid])
        self.con.execute("INSERT INTO store VALUES (?, 'cnew')", [self.next_sid])
        self.con.execute("INSERT INTO fact VALUES (?, ?, ?, 1.50, 4)", [self.next_id, self.next_pid, self.next_sid])
        self.next_id += 1
        self.next_pid += 1
        self.next_sid += 1
        self.insert_facts(5)
        self.con.execute("DELETE FROM fact WHERE id % 11 = ?", [self.rng.randint(0, 10)])

    def test_program_equals_refresh_for_each_rule_and_shape(self):
        # Nothing known: N-term (telescoping) for all leaves.
        self.run_batch(self.general_batch, {}, "n_term")
        # FKs known, dimensions insert-only: the pruned inclusion-exclusion plan (in the set
        # operations, within the branches that join fact to a dimension).
        pruned = self.run_batch(
            self.dims_insert_only_batch,
            {"fk_relations": FKS, "delta_shape": {"product": "INSERT_ONLY", "store": "INSERT_ONLY", "fact": "GENERAL"}},
            "inclusion_exclusion",
        )
        self.assertGreater(pruned, 0)
        # FKs known, but the dimensions changed in general: nothing pruned, N-term.
        self.run_batch(self.general_batch, {"fk_relations": FKS, "unknown_field": [1, 2]}, "n_term")
        # Only facts change; the dimensions are declared unchanged (their terms skipped): both
        # rules run the fact's term alone, and the tie keeps inclusion-exclusion.
        self.run_batch(
            lambda: self.insert_facts(6),
            {"delta_shape": {"product": "UNCHANGED", "store": "UNCHANGED"}},
            "inclusion_exclusion",
        )
        # New stores, products changed in general: the FK to store prunes store's N-term term
        # (store placed first, the fact read at its old state), 2 of 3 terms against
        # inclusion-exclusion's 3 of 7, so the pruned N-term program runs.
        def new_stores():
            self.con.execute("INSERT INTO store VALUES (?, 'cn')", [self.next_sid])
            self.next_sid += 1
            self.con.execute("UPDATE product SET name = name || 'y' WHERE pid % 2 = ?", [self.rng.randint(0, 1)])
            self.insert_facts(6)
            self.con.execute("DELETE FROM fact WHERE id % 13 = ?", [self.rng.randint(0, 12)])

        self.run_batch(
            new_stores,
            {"fk_relations": FKS[1:], "delta_shape": {"store": "INSERT_ONLY", "product": "GENERAL", "fact": "GENERAL"}},
            "n_term",
        )
        # Only inserts everywhere, said once by assume_insert_only: pruned inclusion-exclusion.
        def inserts():
            self.con.execute("INSERT INTO product VALUES (?, 'p1')", [self.next_pid])
            self.next_pid += 1
            self.insert_facts(6)

        self.run_batch(inserts, {"fk_relations": FKS, "assume_insert_only": True}, "inclusion_exclusion")
        for k, _ in self.views:
            ok = self.con.execute("SELECT ok FROM openivm_verify(?)", [f"ref{k}"]).fetchone()[0]
            self.assertTrue(ok)


if __name__ == "__main__":
    unittest.main()
