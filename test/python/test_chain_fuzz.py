"""Random chains of maintained views: upstream views (grouped with HAVING, bags, DISTINCT, DISTINCT
aggregates through their stage of per-group values, MIN/MAX, ORDER BY ... LIMIT) and downstream
views over them (grouped, filtered, joined with a base table, three deep), under random batches
of inserts, deletes and updates (of keys, values and to NULL), refreshed in random orders: a
downstream alone (which cascades), an upstream alone (whose readers then lag), `cascade := false`,
`openivm_refresh_all`, and now and then `mode := 'full'` on an upstream (which restarts its
readers). After every round every view is compared with a recompute of its query, and the feeds
on upstreams that show their rows locally are checked to be recorded."""
import random
import unittest

from support import connect, mismatches

UPSTREAMS = [
    "SELECT g, SUM(x) AS s, COUNT(*) AS n FROM t GROUP BY g HAVING COUNT(*) > 1",
    "SELECT g, h, MIN(x) AS lo, MAX(x) AS hi FROM t GROUP BY g, h",
    "SELECT DISTINCT g, h FROM t WHERE x IS NOT NULL",
    "SELECT g, COUNT(DISTINCT x) AS kinds, SUM(DISTINCT x) AS total, COUNT(*) AS n FROM t GROUP BY g",
    "SELECT id, g, x FROM t WHERE x > 20",
    "SELECT g, SUM(x) AS s FROM t GROUP BY g ORDER BY s DESC NULLS LAST, g LIMIT 3",
]
# Over upstream {0}: each downstream names the upstream it reads by its index.
DOWNSTREAMS = [
    (0, "SELECT n, COUNT(*) AS groups, SUM(s) AS total FROM up0 GROUP BY n"),
    (1, "SELECT g, COUNT(*) AS hs, MAX(hi) AS top FROM up1 WHERE lo IS NOT NULL GROUP BY g"),
    (2, "SELECT h, COUNT(*) AS gs FROM up2 GROUP BY h"),
    (3, "SELECT kinds, COUNT(*) AS groups, SUM(n) AS rows FROM up3 GROUP BY kinds"),
    (4, "SELECT u.g, d.label, COUNT(*) AS n, SUM(u.x) AS s FROM up4 AS u JOIN d ON u.g = d.g GROUP BY u.g, d.label"),
    (5, "SELECT COUNT(*) AS n, SUM(s) AS s FROM up5"),
    (0, "SELECT g FROM up0 WHERE s > 50"),
]
THIRD = "SELECT COUNT(*) AS n, SUM(groups) AS g FROM down0"
GROUPS = ["a", "b", "c", "d", "e", None]


def query_of(con, view):
    return con.execute("SELECT query FROM openivm_views WHERE view_name = ?", [view]).fetchone()[0]


class ChainFuzzTest(unittest.TestCase):
    def run_seed(self, seed, rounds):
        rng = random.Random(seed)
        con = connect()
        con.execute("CREATE TABLE t(id INTEGER, g VARCHAR, h INTEGER, x INTEGER)")
        con.execute("CREATE TABLE d(g VARCHAR, label VARCHAR)")
        con.execute("INSERT INTO d VALUES ('a', 'A'), ('b', 'B'), ('c', 'C'), ('d', 'D')")
        next_id = [1]

        def insert(n):
            rows = []
            for _ in range(n):
                x = None if rng.random() < 0.1 else rng.randint(0, 40)
                rows.append((next_id[0], rng.choice(GROUPS), rng.randint(0, 3), x))
                next_id[0] += 1
            con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)

        insert(40)
        for i, q in enumerate(UPSTREAMS):
            con.execute("SELECT * FROM openivm_create(?, ?)", [f"up{i}", q]).fetchall()
        for i, (_, q) in enumerate(DOWNSTREAMS):
            con.execute("SELECT * FROM openivm_create(?, ?)", [f"down{i}", q]).fetchall()
        con.execute("SELECT * FROM openivm_create('third', ?)", [THIRD]).fetchall()
        views = [f"up{i}" for i in range(len(UPSTREAMS))] + [f"down{i}" for i in range(len(DOWNSTREAMS))] + ["third"]
        queries = {v: query_of(con, v) for v in views}
        # the upstreams that show their rows locally (all but the LIMIT one) record for their readers
        sources = dict(con.execute("SELECT table_name, source FROM openivm.feeds WHERE table_name LIKE 'up%' "
                                   "OR table_name LIKE 'down%'").fetchall())
        self.assertEqual(sources["up5"], "diff")
        for name in ("up0", "up1", "up2", "up3", "up4", "down0"):
            self.assertEqual(sources[name], "recorded", name)
        for rnd in range(rounds):
            kind = rng.random()
            if kind < 0.5:
                insert(rng.randint(1, 6))
            if rng.random() < 0.5:
                ids = [r[0] for r in con.execute("SELECT id FROM t USING SAMPLE 3 ROWS").fetchall()]
                con.executemany("DELETE FROM t WHERE id = ?", [[i] for i in ids])
            if rng.random() < 0.5:
                ids = [r[0] for r in con.execute("SELECT id FROM t USING SAMPLE 3 ROWS").fetchall()]
                for i in ids:
                    what = rng.choice(["x = x + 1", "x = NULL", "g = ?", "h = (h + 1) % 4"])
                    params = [rng.choice(GROUPS), i] if "?" in what else [i]
                    con.execute(f"UPDATE t SET {what} WHERE id = ?", params)
            how = rng.random()
            if how < 0.3:
                con.execute("SELECT * FROM openivm_refresh_all()").fetchall()
            elif how < 0.55:
                con.execute("SELECT * FROM refresh(?)", [rng.choice(views)]).fetchall()
            elif how < 0.7:
                up = rng.choice(views[: len(UPSTREAMS)])
                mode = "full" if rng.random() < 0.3 else "auto"
                con.execute("SELECT * FROM refresh(?, mode := ?)", [up, mode]).fetchall()
            elif how < 0.85:
                v = rng.choice(views)
                con.execute("SELECT * FROM refresh(?, cascade := false)", [v]).fetchall()
            # every round ends with everything refreshed (downstream first: each cascades)
            for v in reversed(views):
                con.execute("SELECT * FROM refresh(?)", [v]).fetchall()
            for v in views:
                self.assertEqual(mismatches(con, v, queries[v]), 0, f"seed {seed} round {rnd}: {v}")
        con.close()

    def test_random_chains_stay_exact(self):
        for seed in range(3):
            self.run_seed(seed, 15)


if __name__ == "__main__":
    unittest.main()
