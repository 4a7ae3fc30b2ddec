"""Random RF1/RF2-shaped batches on a chain lineitem -> orders -> customer: parents deleted with
their children, new parents with children, parent updates (a key deleted and inserted again) and
keys deleted and inserted in one batch. Foreign keys from the catalog, and the same as RELY
declarations over append-only tables written through openivm_delete / openivm_update. Every
refresh is compared with a recompute and with the same view refreshed without pruning, and the
pruning of deleting parents must have happened."""
import random
import unittest

from support import connect, mismatches

VIEWS = {
    "by_seg": "SELECT c.seg, o.prio, SUM(l.qty) AS qty, COUNT(*) AS n FROM lineitem l "
              "JOIN orders o ON l.ok = o.ok JOIN customer c ON o.ck = c.ck GROUP BY c.seg, o.prio",
    "lines": "SELECT l.lk, o.prio, c.seg FROM lineitem l JOIN orders o ON l.ok = o.ok JOIN customer c ON o.ck = c.ck",
    "orders_of": "SELECT c.ck, MAX(o.prio) AS top, COUNT(*) AS n FROM orders o JOIN customer c ON o.ck = c.ck GROUP BY c.ck",
}


class Chain:
    def __init__(self, con, rng, through_openivm):
        self.con, self.rng, self.through = con, rng, through_openivm
        self.next_ck, self.next_ok, self.next_lk = 30, 300, 3000

    def delete(self, table, predicate):
        if self.through:
            self.con.execute(f"SELECT * FROM openivm_delete('{table}', $${predicate}$$)").fetchall()
        else:
            self.con.execute(f"DELETE FROM {table} WHERE {predicate}")

    def update(self, table, assignments, predicate):
        if self.through:
            self.con.execute(f"SELECT * FROM openivm_update('{table}', $${assignments}$$, $${predicate}$$)").fetchall()
        else:
            self.con.execute(f"UPDATE {table} SET {assignments} WHERE {predicate}")

    def keys(self, sql):
        return [k for (k,) in self.con.execute(sql).fetchall()]

    def rf2(self):
        """Deletes a few orders with their lineitems (and sometimes a customer with all of it)."""
        r = self.rng
        oks = self.keys("SELECT ok FROM orders ORDER BY random() LIMIT 3")
        if r.random() < 0.3:
            ck = self.keys("SELECT ck FROM customer ORDER BY random() LIMIT 1")
            oks += self.keys(f"SELECT ok FROM orders WHERE ck = {ck[0]}") if ck else []
        else:
            ck = []
        if oks:
            keys = ", ".join(map(str, sorted(set(oks))))
            self.delete("lineitem", f"ok IN ({keys})")
            self.delete("orders", f"ok IN ({keys})")
        if ck:
            self.delete("customer", f"ck = {ck[0]}")

    def rf1(self):
        """New orders (of new or old customers) with lineitems, and lineitems of old orders."""
        r = self.rng
        if r.random() < 0.4:
            self.con.execute(f"INSERT INTO customer VALUES ({self.next_ck}, 'seg{r.randint(0, 3)}')")
            self.next_ck += 1
        cks = self.keys("SELECT ck FROM customer ORDER BY random() LIMIT 3")
        for ck in cks:
            self.con.execute(f"INSERT INTO orders VALUES ({self.next_ok}, {ck}, {r.randint(0, 3)})")
            n = r.randint(0, 3)
            for _ in range(n):
                self.con.execute(f"INSERT INTO lineitem VALUES ({self.next_lk}, {self.next_ok}, {r.randint(1, 9)})")
                self.next_lk += 1
            self.next_ok += 1
        old = self.keys("SELECT ok FROM orders ORDER BY random() LIMIT 2")
        for ok in old:
            self.con.execute(f"INSERT INTO lineitem VALUES ({self.next_lk}, {ok}, {r.randint(1, 9)})")
            self.next_lk += 1

    def batch(self):
        r = self.rng
        kind = r.choices(["rf2", "rf1+rf2", "update", "reinsert", "rf1"], [3, 4, 1, 1, 1])[0]
        if kind in ("rf1", "rf1+rf2"):
            self.rf1()
        if kind in ("rf2", "rf1+rf2"):
            self.rf2()
        if kind == "update":
            ok = self.keys("SELECT ok FROM orders ORDER BY random() LIMIT 1")
            if ok:
                self.update("orders", f"prio = {r.randint(0, 3)}", f"ok = {ok[0]}")
        if kind == "reinsert":
            # an order without lineitems deleted and inserted again with another customer
            ok = self.keys("SELECT ok FROM orders WHERE ok NOT IN (SELECT ok FROM lineitem WHERE ok IS NOT NULL) LIMIT 1")
            ck = self.keys("SELECT ck FROM customer ORDER BY random() LIMIT 1")
            if ok and ck and not self.through:
                self.delete("orders", f"ok = {ok[0]}")
                self.con.execute(f"INSERT INTO orders VALUES ({ok[0]}, {ck[0]}, 1)")
        return kind


def setup(con, rely):
    fk = "" if rely else " REFERENCES customer(ck)"
    fk2 = "" if rely else " REFERENCES orders(ok)"
    pk = "" if rely else " PRIMARY KEY"
    con.execute(f"CREATE TABLE customer(ck INTEGER{pk}, seg VARCHAR)")
    con.execute(f"CREATE TABLE orders(ok INTEGER{pk}, ck INTEGER{fk}, prio INTEGER)")
    con.execute(f"CREATE TABLE lineitem(lk INTEGER, ok INTEGER{fk2}, qty INTEGER)")
    con.execute("INSERT INTO customer SELECT i, 'seg' || (i % 4) FROM range(30) t(i)")
    con.execute("INSERT INTO orders SELECT i, i % 30, i % 4 FROM range(300) t(i)")
    con.execute("INSERT INTO lineitem SELECT i, i % 300, i % 9 FROM range(3000) t(i)")
    if rely:
        con.execute("CALL openivm_declare_rely_fk('lineitem', 'ok', 'orders', 'ok')").fetchall()
        con.execute("CALL openivm_declare_rely_fk('orders', 'ck', 'customer', 'ck')").fetchall()
        con.execute("CALL openivm_declare_append_only('customer', key := 'ck')").fetchall()
        con.execute("CALL openivm_declare_append_only('orders', key := 'ok')").fetchall()
        con.execute("CALL openivm_declare_append_only('lineitem', key := 'lk')").fetchall()
    for name, q in VIEWS.items():
        con.execute(f"CALL openivm_create('{name}', $${q}$$)").fetchall()
        con.execute(f"CALL openivm_create('{name}_plain', $${q}$$)").fetchall()


class DeletingParents(unittest.TestCase):
    def run_chain(self, rely, seed):
        rng = random.Random(seed)
        con = connect()
        setup(con, rely)
        chain = Chain(con, rng, through_openivm=rely)
        pruned_deleting = 0
        for b in range(15):
            kind = chain.batch()
            for name, q in VIEWS.items():
                explain = con.execute(
                    f"SELECT count(*) FROM openivm_explain('{name}') WHERE status = 'fk_pruned' AND reason LIKE '%deleted rows%'"
                ).fetchone()[0]
                pruned_deleting += explain
                order = [name, f"{name}_plain"] if rng.random() < 0.5 else [f"{name}_plain", name]
                for v in order:
                    prune = "false" if v.endswith("_plain") else "true"
                    con.execute(f"SELECT * FROM refresh('{v}', fk_pruning := {prune})").fetchall()
                    self.assertEqual(mismatches(con, v, q), 0, f"seed {seed} batch {b} ({kind}): {v}")
        self.assertGreater(pruned_deleting, 0, "no refresh pruned a deleting parent")
        con.close()

    def test_catalog_foreign_keys(self):
        for seed in range(3):
            self.run_chain(rely=False, seed=seed)

    def test_rely_foreign_keys_through_openivm(self):
        for seed in range(3):
            self.run_chain(rely=True, seed=seed)


if __name__ == "__main__":
    unittest.main()
