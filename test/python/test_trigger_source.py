"""The trigger source (DuckDB 2.0): every write path a Python user has is captured, from any
connection, and writers running while views refresh lose nothing. Every refresh is compared with
a recompute. Skipped on DuckDB 1.5 (no triggers).
"""
import os
import re
import subprocess
import sys
import tempfile
import threading
import unittest

import duckdb

from support import EXTENSION, connect, mismatches

QUERY = "SELECT k, sum(v) AS s, count(*) AS n FROM t GROUP BY k"
JOIN = "SELECT d.name, sum(t.v) AS s, count(*) AS n FROM t JOIN d ON t.k = d.id GROUP BY d.name"


def setup(con):
    con.execute("CALL openivm_set('openivm_default_source', 'trigger')")  # opt-in for now
    con.execute("CREATE TABLE d(id INTEGER PRIMARY KEY, name VARCHAR)")
    con.execute("INSERT INTO d SELECT i, 'n' || (i % 3) FROM range(10) r(i)")
    con.execute("CREATE TABLE t(id BIGINT, k INTEGER, v DECIMAL(12,2), note VARCHAR)")
    con.execute("INSERT INTO t SELECT i, i % 10, i, 'x' FROM range(1000) r(i)")
    con.execute("CALL openivm_create('agg', ?)", [QUERY])
    con.execute("CALL openivm_create('joined', ?)", [JOIN])


@unittest.skipUnless(duckdb.__version__.startswith("2"), f"no triggers in DuckDB {duckdb.__version__}")
class TriggerSourceTest(unittest.TestCase):
    def assertExact(self, con):
        con.execute("CALL openivm_refresh_all()")
        self.assertEqual(mismatches(con, "agg", QUERY), 0)
        self.assertEqual(mismatches(con, "joined", JOIN), 0)

    def test_every_python_write_path_is_captured(self):
        con = connect()
        setup(con)
        self.assertEqual(con.execute("SELECT source FROM openivm.feeds WHERE table_name = 't'").fetchone()[0], "trigger")
        other = con.cursor()
        self.assertExact(con)
        # a DataFrame-free append (the Python appender of a relation), rel.insert, executemany
        other.execute("INSERT INTO t VALUES (5000, 1, 1.5, 'a')")
        other.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", [(5001 + i, i % 10, i, "m") for i in range(20)])
        self.assertExact(con)
        other.sql("SELECT 6000 + i AS id, i % 10 AS k, i::DECIMAL(12,2) AS v, 'r' AS note FROM range(30) r(i)").insert_into("t")
        other.table("t").insert([7000, 3, 2.25, "ins"])
        self.assertExact(con)
        with tempfile.TemporaryDirectory() as d:
            csv = os.path.join(d, "rows.csv")
            parquet = os.path.join(d, "rows.parquet")
            other.execute(f"COPY (SELECT 8000 + i AS id, i % 10 AS k, i AS v, 'csv' AS note FROM range(50) r(i)) TO '{csv}'")
            other.execute(f"COPY (SELECT 9000 + i AS id, i % 10 AS k, i AS v, 'pq' AS note FROM range(50) r(i)) TO '{parquet}'")
            other.execute(f"COPY t FROM '{csv}'")
            other.execute(f"COPY t FROM '{parquet}'")
        self.assertExact(con)
        # UPDATE of the grouping key, UPDATE ... FROM, DELETE ... USING, RETURNING
        other.execute("UPDATE t SET k = (k + 1) % 10 WHERE id % 17 = 0")
        other.execute("UPDATE t SET v = v + d.id FROM d WHERE t.k = d.id AND d.id = 4")
        other.execute("DELETE FROM t USING d WHERE t.k = d.id AND d.name = 'n1' AND t.id % 5 = 0")
        other.execute("DELETE FROM t WHERE id % 101 = 0 RETURNING id").fetchall()
        self.assertExact(con)
        # a failed statement and a rolled-back transaction leave nothing
        other.execute("BEGIN")
        other.execute("DELETE FROM t WHERE k = 2")
        other.execute("ROLLBACK")
        with self.assertRaises(duckdb.Error):
            other.execute("INSERT INTO t VALUES (1, 'not a number', 1, 'bad')")
        self.assertExact(con)
        # a multi-statement transaction, then TRUNCATE and a reload
        other.execute("BEGIN")
        other.execute("INSERT INTO t VALUES (10000, 9, 9, 'tx')")
        other.execute("UPDATE t SET note = 'y' WHERE id = 10000")
        other.execute("DELETE FROM t WHERE k = 8")
        other.execute("COMMIT")
        self.assertExact(con)
        other.execute("TRUNCATE t")
        self.assertExact(con)
        other.execute("INSERT INTO t SELECT i, i % 10, i, 'again' FROM range(100) r(i)")
        self.assertExact(con)

    def test_writers_during_refreshes_lose_nothing(self):
        con = connect()
        setup(con)
        con.execute("CALL openivm_refresh_all()")
        stop = threading.Event()
        errors = []
        duckdb_defects = []

        def writer(n):
            w = con.cursor()
            i = 0
            while not stop.is_set():
                try:
                    base = 100000 * (n + 1) + i * 10
                    w.execute(f"INSERT INTO t SELECT {base} + j, j % 10, j, 'w' FROM range(5) r(j)")
                    if i % 3 == 0:
                        w.execute(f"UPDATE t SET v = v + 1 WHERE id = {base}")
                    if i % 4 == 0:
                        w.execute(f"DELETE FROM t WHERE id = {base + 1}")
                    if i % 5 == 0:
                        w.execute("BEGIN")
                        w.execute(f"INSERT INTO t VALUES ({base + 9}, 1, 1, 'rolled back')")
                        w.execute("ROLLBACK")
                except duckdb.Error as e:
                    # Only DuckDB's own failures may fail a write: write-write conflicts between the
                    # writers, and, rarely on a loaded machine, DuckDB 2.0.1's read of t's storage
                    # during a concurrent append ("Corrupted ... segment"; it shows without openivm:
                    # test/differential/findings/duckdb201_concurrent_string_segment.py). The
                    # failed statement wrote nothing, so the views must still be exact.
                    if "onflict" in str(e):
                        pass
                    elif re.search(r"Corrupted .* segment", str(e)):
                        duckdb_defects.append(str(e))
                    else:
                        errors.append(str(e))
                i += 1

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
        for th in threads:
            th.start()
        refreshes = 0
        try:
            for _ in range(15):
                con.execute("CALL refresh('agg')")
                con.execute("CALL refresh('joined')")
                refreshes += 2
        finally:
            stop.set()
            for th in threads:
                th.join()
        self.assertEqual(errors, [])
        if duckdb_defects:
            print(f"FINDING: DuckDB failed {len(duckdb_defects)} write(s): {duckdb_defects[0]}", file=sys.stderr)
        self.assertGreater(refreshes, 0)
        self.assertExact(con)
        # with the writers stopped, the refreshes took every row they logged
        feed = con.execute("SELECT feed_id FROM openivm.feeds WHERE table_name = 't'").fetchone()[0]
        left = con.execute(f"SELECT count(*) FROM openivm.log_{feed} WHERE openivm_seq IS NULL").fetchone()[0]
        self.assertEqual(left, 0)
        written = con.execute("SELECT count(*) FROM t WHERE note = 'w'").fetchone()[0]
        self.assertGreater(written, 0)

    def test_another_process_writes_the_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "shared.db")
            con = connect(path)
            setup(con)
            con.execute("CALL openivm_refresh_all()")
            con.close()
            # a plain DuckDB process without the extension writes the file
            script = (
                "import duckdb; c = duckdb.connect(%r); "
                "c.execute(\"INSERT INTO t SELECT 50000 + i, i %% 10, i, 'p' FROM range(40) r(i)\"); "
                "c.execute('DELETE FROM t WHERE id < 30'); "
                "c.execute('UPDATE t SET v = v * 2 WHERE k = 3'); c.close()" % path
            )
            subprocess.run([sys.executable, "-c", script], check=True)
            con = connect(path)
            self.assertExact(con)
            con.close()

    def test_tables_with_a_foreign_key_keep_the_diff_and_their_updates(self):
        con = connect()
        con.execute("CALL openivm_set('openivm_default_source', 'trigger')")
        con.execute("CREATE TABLE p(id INTEGER PRIMARY KEY, name VARCHAR)")
        con.execute("CREATE TABLE c(id INTEGER, p_id INTEGER REFERENCES p(id))")
        con.execute("INSERT INTO p VALUES (1, 'a'), (2, 'b'); INSERT INTO c VALUES (1, 1), (2, 2)")
        q = "SELECT p.name, count(*) AS n FROM c JOIN p ON c.p_id = p.id GROUP BY p.name"
        con.execute("CALL openivm_create('pc', ?)", [q])
        sources = dict(con.execute("SELECT table_name, source FROM openivm.feeds").fetchall())
        # both sides keep the diff (the child: DuckDB 2.0.1 may hand an UPDATE trigger fewer rows)
        self.assertEqual(sources, {"p": "diff", "c": "diff"})
        # DuckDB 2.0.1 would refuse this UPDATE if p had an UPDATE trigger
        con.execute("UPDATE p SET name = 'z' WHERE id = 1")
        con.execute("CALL refresh('pc')")
        self.assertEqual(mismatches(con, "pc", q), 0)
        with self.assertRaisesRegex(duckdb.Error, "has a FOREIGN KEY"):
            con.execute("CALL openivm_set_source('c', 'trigger')")
        # choosing triggers for the referenced side anyway: then DuckDB refuses such UPDATEs, as documented
        con.execute("CALL openivm_set_source('p', 'trigger')")
        con.execute("CALL refresh('pc')")
        self.assertEqual(dict(con.execute("SELECT table_name, source FROM openivm.feeds").fetchall())["p"], "trigger")
        with self.assertRaisesRegex(duckdb.Error, "foreign key"):
            con.execute("UPDATE p SET name = 'y' WHERE id = 1")
        con.execute("INSERT INTO p VALUES (3, 'c'); INSERT INTO c VALUES (3, 3)")
        con.execute("CALL refresh('pc')")
        self.assertEqual(mismatches(con, "pc", q), 0)

    def test_checkpoint_vacuum_and_reopen_between_writes_and_refreshes(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "f.db")
            con = connect(path)
            setup(con)
            con.execute("CALL openivm_refresh_all()")
            con.execute("INSERT INTO t SELECT 3000 + i, i % 10, i, 'c' FROM range(50) r(i)")
            con.execute("DELETE FROM t WHERE id < 100")
            con.execute("CHECKPOINT")
            con.execute("UPDATE t SET v = v + 1 WHERE k = 4")
            con.execute("VACUUM")
            self.assertExact(con)
            con.execute("INSERT INTO t VALUES (4000, 5, 5, 'before close')")
            con.close()
            con = connect(path)
            self.assertEqual(con.execute("SELECT count(*) FROM duckdb_triggers()").fetchone()[0], 6)  # t and d, three each
            con.execute("DELETE FROM t WHERE id = 3001")
            self.assertExact(con)
            con.close()

    def test_a_storage_v1_database_keeps_the_diff(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "old.db")
            con = duckdb.connect(path, config={"allow_unsigned_extensions": True,
                                               "storage_compatibility_version": "v1.0.0"})
            con.execute(f"LOAD '{EXTENSION}'")
            con.execute("CALL openivm_set('openivm_default_source', 'trigger')")
            con.execute("CREATE TABLE t(id BIGINT, k INTEGER, v DECIMAL(12,2), note VARCHAR)")
            con.execute("INSERT INTO t SELECT i, i % 10, i, 'x' FROM range(100) r(i)")
            con.execute("CALL openivm_create('agg', ?)", [QUERY])
            self.assertEqual(con.execute("SELECT source FROM openivm.feeds").fetchone()[0], "diff")
            self.assertEqual(con.execute("SELECT DISTINCT sources FROM openivm_explain('agg')").fetchone()[0],
                             "t: diff (storage version v1.0.0+ has no triggers: ATTACH ... (STORAGE_VERSION 'v2.0.0') upgrades a database)")
            with self.assertRaisesRegex(duckdb.Error, "cannot be captured by triggers.*v2.0.0"):
                con.execute("CALL openivm_set_source('t', 'trigger')")
            con.execute("DELETE FROM t WHERE id < 10")
            con.execute("CALL refresh('agg')")
            self.assertEqual(mismatches(con, "agg", QUERY), 0)
            con.close()

    def test_a_copied_database_recaptures_or_says_to_create_its_views_again(self):
        # A copy keeps no triggers. COPY FROM DATABASE keeps the views' comments: a refresh finds
        # the triggers gone, recomputes and installs them again. EXPORT/IMPORT DATABASE keeps no
        # comments either: a refresh fails with the way out (drop, create again). Never a stale
        # result; then every write is captured exactly. The original keeps working.
        with tempfile.TemporaryDirectory() as d:
            a, b, c, ex = (os.path.join(d, n) for n in ("a.db", "b.db", "c.db", "export"))
            con = connect(a)
            setup(con)
            con.execute("INSERT INTO t VALUES (5000, 1, 5, 'y')")
            self.assertExact(con)
            installed = con.execute("SELECT count(*) FROM duckdb_triggers()").fetchone()[0]
            self.assertEqual(installed, 6)  # on t and d, three each
            con.execute(f"EXPORT DATABASE '{ex}'")
            con.execute(f"ATTACH '{c}' AS dst")
            con.execute("COPY FROM DATABASE a TO dst")
            con.execute("DETACH dst")
            con.close()
            con = connect(c)
            self.assertEqual(con.execute("SELECT count(*) FROM duckdb_triggers()").fetchone()[0], 0)
            con.execute("INSERT INTO t VALUES (5001, 2, 7, 'y')")
            mode, reason = con.execute("SELECT mode, mode_reason FROM refresh('agg')").fetchone()
            self.assertEqual(mode, "full")
            self.assertRegex(reason, "trigger.*are gone.*COPY FROM DATABASE")
            self.assertEqual(mismatches(con, "agg", QUERY), 0)
            con.execute("UPDATE t SET v = v + 1 WHERE id % 7 = 0")
            self.assertExact(con)
            self.assertEqual(con.execute("SELECT count(*) FROM duckdb_triggers()").fetchone()[0], installed)
            con.execute("DELETE FROM t WHERE id % 11 = 0")
            self.assertExact(con)
            con.close()
            con = connect(b)
            con.execute(f"IMPORT DATABASE '{ex}'")
            self.assertEqual(con.execute("SELECT count(*) FROM duckdb_triggers()").fetchone()[0], 0)
            con.execute("INSERT INTO t VALUES (5001, 2, 7, 'y')")
            for view in ("agg", "joined"):
                with self.assertRaisesRegex(duckdb.Error, "lost openivm's marker.*EXPORT/IMPORT DATABASE or COPY FROM DATABASE"):
                    con.execute(f"CALL refresh('{view}')")
                con.execute(f"CALL openivm_drop('{view}')")
                con.execute(f"DROP VIEW {view}")
            con.execute("CALL openivm_create('agg', ?)", [QUERY])
            con.execute("CALL openivm_create('joined', ?)", [JOIN])
            self.assertEqual(con.execute("SELECT count(*) FROM duckdb_triggers()").fetchone()[0], installed)
            con.execute("UPDATE t SET v = v + 1 WHERE id % 7 = 0")
            con.execute("DELETE FROM t WHERE id % 11 = 0")
            self.assertExact(con)
            con.close()
            con = connect(a)
            con.execute("DELETE FROM t WHERE id % 13 = 0")
            self.assertExact(con)
            con.close()

    def test_upserts_and_merge_take_the_documented_way_out(self):
        con = connect()
        con.execute("CALL openivm_set('openivm_default_source', 'trigger')")
        con.execute("CREATE TABLE u(id INTEGER PRIMARY KEY, v INTEGER)")
        con.execute("INSERT INTO u VALUES (1, 1), (2, 2)")
        q = "SELECT sum(v) AS s, count(*) AS n FROM u"
        con.execute("CALL openivm_create('uv', ?)", [q])
        with self.assertRaisesRegex(duckdb.Error, "ON CONFLICT DO UPDATE is not yet supported"):
            con.execute("INSERT OR REPLACE INTO u VALUES (1, 10)")
        with self.assertRaisesRegex(duckdb.Error, "MERGE INTO is not supported on tables with triggers"):
            con.execute("MERGE INTO u USING (SELECT 2 AS id, 20 AS v) s ON u.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v")
        # the way out: the diff source for the statement, then the default again
        con.execute("CALL openivm_set_source('u', 'diff')")
        con.execute("CALL openivm_refresh_all()")
        self.assertEqual(con.execute("SELECT count(*) FROM duckdb_triggers()").fetchone()[0], 0)
        con.execute("INSERT OR REPLACE INTO u VALUES (1, 10)")
        con.execute("MERGE INTO u USING (SELECT 2 AS id, 20 AS v) s ON u.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v")
        con.execute("ALTER TABLE u RENAME COLUMN v TO w")
        con.execute("ALTER TABLE u RENAME COLUMN w TO v")
        con.execute("CALL openivm_set_source('u', 'default')")
        con.execute("CALL refresh('uv')")
        self.assertEqual(mismatches(con, "uv", q), 0)
        self.assertEqual(con.execute("SELECT source FROM openivm.feeds").fetchone()[0], "trigger")
        con.execute("UPDATE u SET v = v + 1")
        con.execute("CALL refresh('uv')")
        self.assertEqual(mismatches(con, "uv", q), 0)

    def test_a_writer_open_across_the_installation_loses_nothing(self):
        con = connect()
        con.execute("CALL openivm_set('openivm_default_source', 'trigger')")
        con.execute("CREATE TABLE t(id BIGINT, k INTEGER, v DECIMAL(12,2), note VARCHAR)")
        con.execute("INSERT INTO t SELECT i, i % 10, i, 'x' FROM range(100) r(i)")
        early = con.cursor()
        # wrote before the triggers existed, commits after: DuckDB fires none for it, so the
        # installation's fence makes its commit fail instead of losing its rows
        early.execute("BEGIN")
        early.execute("INSERT INTO t VALUES (500, 1, 5, 'early')")
        con.execute("CALL openivm_create('agg', ?)", [QUERY])
        with self.assertRaises(duckdb.Error):
            early.execute("COMMIT")
        # one that commits while the triggers are new is found by the first capture's diff
        late = con.cursor()
        late.execute("INSERT INTO t VALUES (501, 2, 6, 'late')")
        con.execute("CALL refresh('agg')")
        self.assertEqual(mismatches(con, "agg", QUERY), 0)
        late.execute("INSERT INTO t VALUES (502, 3, 7, 'after')")
        con.execute("CALL refresh('agg')")
        self.assertEqual(mismatches(con, "agg", QUERY), 0)
        self.assertEqual(con.execute("SELECT count(*) FROM t WHERE id >= 500").fetchone()[0], 2)


if __name__ == "__main__":
    unittest.main()
