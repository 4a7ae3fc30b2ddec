"""Which group keys the merge of a refresh matches on (src/merge_keys.rs), seen in the MERGE
statement the extension runs, as DuckDB's own statement log records it: the key alone while the
tables it determines only received inserts, every key once one of them deleted or updated rows.
The results themselves are checked against a recompute after every refresh (and in
test/sql/aggregates/merge_keys.test)."""
import re
import unittest

from support import connect, mismatches

Q10 = ("SELECT c.ck, c.cname, n.nname, SUM(o.qty) AS qty, COUNT(*) AS n FROM orders o "
       "JOIN customer c ON o.ck = c.ck JOIN nation n ON c.nk = n.nk GROUP BY c.ck, c.cname, n.nname")
NO_KEY = "SELECT c.cname, n.nname, SUM(o.qty) AS qty FROM orders o JOIN customer c ON o.ck = c.ck " \
         "JOIN nation n ON c.nk = n.nk GROUP BY c.cname, n.nname"


class MergeKeys(unittest.TestCase):
    def setUp(self):
        self.con = connect()
        for s in [
            "CREATE TABLE nation(nk INTEGER PRIMARY KEY, nname VARCHAR)",
            "CREATE TABLE customer(ck INTEGER PRIMARY KEY, cname VARCHAR, nk INTEGER REFERENCES nation(nk))",
            "CREATE TABLE orders(ok INTEGER PRIMARY KEY, ck INTEGER REFERENCES customer(ck), qty INTEGER)",
            "INSERT INTO nation SELECT i, 'n' || i FROM range(3) t(i)",
            "INSERT INTO customer SELECT i, 'c' || i, i % 3 FROM range(10) t(i)",
            "INSERT INTO orders SELECT i, i % 10, i % 7 FROM range(100) t(i)",
        ]:
            self.con.execute(s)
        self.con.execute("CALL openivm_create('q10', ?)", [Q10]).fetchall()
        self.con.execute("CALL openivm_create('nokey', ?)", [NO_KEY]).fetchall()
        self.next_order = 100

    def tearDown(self):
        self.con.close()

    def matched_on(self, view):
        """The stored key columns the refresh's MERGE into `view`'s result matched on."""
        self.con.execute("CALL enable_logging(level => 'debug')")
        self.con.execute("CALL truncate_duckdb_logs()")
        self.con.execute(f"SELECT * FROM refresh('{view}')").fetchall()
        self.con.execute("CALL disable_logging()")
        # (one statement: a merge run through a kept plan is logged when prepared and when run)
        merges = sorted({m for (m,) in self.con.execute(
            "SELECT message FROM duckdb_logs WHERE type = 'QueryLog' AND message LIKE 'MERGE INTO%'").fetchall()
            if f"data_main_{view}" in m})
        self.assertEqual(len(merges), 1, merges)
        on = merges[0].split(" AS openivm_d ON ", 1)[1].split(" WHEN ", 1)[0]
        self.assertEqual(mismatches(self.con, view, Q10 if view == "q10" else NO_KEY), 0)
        return re.findall(r'openivm_t\."(openivm_g\d+)"', on)

    def new_orders(self, customers):
        for ck in customers:
            self.con.execute("INSERT INTO orders VALUES (?, ?, 5)", [self.next_order, ck])
            self.next_order += 1

    def test_inserts_match_on_the_key_alone(self):
        self.new_orders([1, 2, 3])
        self.assertEqual(self.matched_on("q10"), ["openivm_g0"])
        self.con.execute("INSERT INTO customer VALUES (10, 'c10', 1)")
        self.new_orders([10])
        self.assertEqual(self.matched_on("q10"), ["openivm_g0"])
        # deleted orders do not change what a customer's key stands for
        self.con.execute("DELETE FROM orders WHERE ok < 5")
        self.assertEqual(self.matched_on("q10"), ["openivm_g0"])

    def test_an_updated_attribute_matches_every_key(self):
        self.con.execute("UPDATE customer SET cname = 'renamed' WHERE ck = 4")
        self.new_orders([4])
        self.assertEqual(self.matched_on("q10"), ["openivm_g0", "openivm_g1", "openivm_g2"])
        self.con.execute("UPDATE nation SET nname = 'renamed' WHERE nk = 1")
        self.assertEqual(self.matched_on("q10"), ["openivm_g0", "openivm_g1", "openivm_g2"])
        # and back to the key alone once the determined tables only receive inserts again
        self.new_orders([4, 5])
        self.assertEqual(self.matched_on("q10"), ["openivm_g0"])

    def test_keys_without_a_determining_key_are_all_matched(self):
        self.new_orders([1, 2])
        self.assertEqual(self.matched_on("nokey"), ["openivm_g0", "openivm_g1"])


if __name__ == "__main__":
    unittest.main()
