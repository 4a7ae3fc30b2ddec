"""DuckLake tables as sources captured from DuckLake's own change feed (the `ducklake` source):
the view lives in a DuckDB file, its tables in a DuckLake catalog with a DuckDB-file catalog.
Inserts, deletes, updates and mixed batches from two connections; compaction
(ducklake_rewrite_data_files, ducklake_merge_adjacent_files) is skipped; expired snapshots make the
refresh recompute with a clear reason; a dropped and re-created table restarts capture; the view
survives a reopen. After every refresh the stored result equals a recompute of the query."""
import os
import random
import tempfile
import unittest

from support import attach_ducklake, connect, connect_when_released, mismatches, random_lake_writes, skip_without_ducklake

def setUpModule():
    skip_without_ducklake()


QUERIES = {
    "by_name": "SELECT d.name, SUM(f.amount) AS total, COUNT(*) AS n FROM lake.fact f "
    "JOIN lake.dim d ON f.k = d.k GROUP BY d.name",
    "rows": "SELECT d.name, f.amount FROM lake.fact f JOIN lake.dim d ON f.k = d.k WHERE f.amount > 10",
    "facts": "SELECT k, SUM(amount) AS s FROM lake.fact GROUP BY k",
}


def refresh(con, view, **kw):
    args = "".join(f", {k} := '{v}'" for k, v in kw.items())
    cols = ["view_name", "terms_total", "terms_fk_pruned", "terms_empty_skipped", "terms_run", "delta_rows",
            "duration_ms", "mode"]
    return dict(zip(cols, con.execute(f"SELECT * FROM openivm_refresh(?{args})", [view]).fetchone()))


def last_reason(con, view):
    return con.execute(
        "SELECT mode, reason FROM openivm_refresh_history WHERE view_name = ? ORDER BY started_at DESC LIMIT 1",
        [view],
    ).fetchone()


def setup(con, tmp):
    attach_ducklake(con, tmp)
    con.execute("CREATE TABLE lake.dim(k INTEGER, name VARCHAR)")
    con.execute("CREATE TABLE lake.fact(id INTEGER, k INTEGER, amount INTEGER)")
    con.execute("INSERT INTO lake.dim SELECT i, 'n' || (i % 3) FROM range(5) r(i)")
    con.execute("INSERT INTO lake.fact SELECT i, i % 5, i FROM range(3000) r(i)")
    for name, q in QUERIES.items():
        con.execute("SELECT * FROM openivm_create(?, ?)", [name, q])


def check_all(test, con, what):
    for name, q in QUERIES.items():
        refresh(con, name)
        test.assertEqual(mismatches(con, name, q), 0, f"{name} after {what}")


class DuckLakeFeedTest(unittest.TestCase):
    def test_the_feed_is_the_source_and_mixed_batches_are_exact(self):
        rng = random.Random(5)
        with tempfile.TemporaryDirectory() as tmp:
            con = connect()
            setup(con, tmp)
            sources = con.execute("SELECT table_name, source, watermark FROM openivm.feeds ORDER BY 1").fetchall()
            self.assertEqual([(t, s) for t, s, _ in sources], [("dim", "ducklake"), ("fact", "ducklake")])
            current = con.execute("SELECT id FROM lake.current_snapshot()").fetchone()[0]
            self.assertTrue(all(int(w) == current for _, _, w in sources))
            other = con.cursor()
            batches = random_lake_writes(rng, [3000], 7)
            for step in range(10):
                for _ in range(rng.randint(1, 3)):
                    rng.choice(batches)(rng.choice([con, other]))
                before = con.execute("SELECT count(*) FROM lake.snapshots()").fetchone()[0]
                check_all(self, con, f"batch {step}")
                # refreshing reads the lake and writes nothing into it
                self.assertEqual(con.execute("SELECT count(*) FROM lake.snapshots()").fetchone()[0], before)
            # nothing changed: nothing read, incremental, no delta
            r = refresh(con, "by_name")
            self.assertEqual((r["mode"], r["delta_rows"]), ("incremental", 0))
            # an insert-only batch: only the inserted rows, insert-only
            other.execute("INSERT INTO lake.fact VALUES (99990, 1, 5), (99991, 2, 6)")
            r = refresh(con, "facts")
            self.assertEqual((r["mode"], r["delta_rows"]), ("incremental", 2))
            # a write to another table of the lake is skipped without a read
            other.execute("INSERT INTO lake.dim VALUES (50, 'far')")
            r = refresh(con, "facts")
            self.assertEqual((r["mode"], r["delta_rows"]), ("incremental", 0))
            check_all(self, con, "the last batches")
            for name in QUERIES:
                self.assertTrue(con.execute("SELECT ok FROM openivm_verify(?)", [name]).fetchone()[0])
            con.close()

    def test_compaction_is_skipped_and_expiry_recomputes(self):
        with tempfile.TemporaryDirectory() as tmp:
            con = connect()
            setup(con, tmp)
            con.execute("DELETE FROM lake.fact WHERE id % 3 = 0")
            check_all(self, con, "a delete")
            # rewriting the files with deletes reports every surviving row as an update pair:
            # the refresh skips that snapshot and reads nothing
            con.execute("CALL ducklake_rewrite_data_files('lake', 'fact', delete_threshold => 0.0)")
            changes = con.execute(
                "SELECT changes_made FROM __ducklake_metadata_lake.ducklake_snapshot_changes "
                "ORDER BY snapshot_id DESC LIMIT 1").fetchone()[0]
            self.assertIn("rewrite_delete", changes)
            r = refresh(con, "facts")
            self.assertEqual((r["mode"], r["delta_rows"]), ("incremental", 0))
            check_all(self, con, "a rewrite")
            # changes on both sides of a compaction in one refresh
            con.execute("INSERT INTO lake.fact SELECT 5000 + i, i % 5, 1 FROM range(3000) r(i)")
            con.execute("INSERT INTO lake.fact SELECT 9000 + i, i % 5, 2 FROM range(3000) r(i)")
            con.execute("DELETE FROM lake.fact WHERE id % 7 = 1")
            con.execute("CALL ducklake_rewrite_data_files('lake', 'fact', delete_threshold => 0.0)")
            con.execute("CALL ducklake_merge_adjacent_files('lake')")
            con.execute("UPDATE lake.fact SET amount = amount * 2 WHERE id % 5 = 2")
            r = refresh(con, "facts")
            self.assertEqual(r["mode"], "incremental")
            check_all(self, con, "changes around compactions")
            # expired snapshots: the range is unreadable, the refresh recomputes and says why
            con.execute("INSERT INTO lake.fact VALUES (123456, 1, 1)")
            con.execute("DELETE FROM lake.fact WHERE id = 5001")
            con.execute("SELECT count(*) FROM ducklake_expire_snapshots('lake', older_than => now())").fetchall()
            r = refresh(con, "by_name")
            self.assertEqual(r["mode"], "full")
            mode, reason = last_reason(con, "by_name")
            self.assertIn("expired", reason)
            self.assertIn("change capture restarted", reason)
            check_all(self, con, "expiry")
            # capture goes on from the restarted feed
            con.execute("INSERT INTO lake.fact VALUES (123457, 2, 2)")
            for name in QUERIES:
                self.assertEqual(refresh(con, name)["mode"], "incremental", name)
            check_all(self, con, "after expiry")
            con.close()

    def test_recreated_table_restarts_and_reopen_keeps_the_view(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "home.db")
            con = connect(path)
            setup(con, tmp)
            con.execute("DROP TABLE lake.fact")
            con.execute("CREATE TABLE lake.fact(id INTEGER, k INTEGER, amount INTEGER)")
            con.execute("INSERT INTO lake.fact SELECT i, i % 3, 2 * i FROM range(50) r(i)")
            r = refresh(con, "facts")
            self.assertEqual(r["mode"], "full")
            self.assertIn("dropped and created again", last_reason(con, "facts")[1])
            check_all(self, con, "a re-created table")
            con.execute("INSERT INTO lake.fact VALUES (1000, 1, 1)")
            con.close()
            con = connect_when_released(path)
            attach_ducklake(con, tmp)
            con.execute("DELETE FROM lake.fact WHERE id < 10")
            for name in QUERIES:
                self.assertEqual(refresh(con, name)["mode"], "incremental", name)
            check_all(self, con, "a reopen")
            con.close()


if __name__ == "__main__":
    unittest.main()
