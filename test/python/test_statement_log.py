"""What DuckDB 1.5.5's own log (`CALL enable_logging(level => 'debug')`, `FROM duckdb_logs`) tells
about writes, and what it does not: the evidence behind docs/statement-log.md (issue 8, part 2).

The question was whether the exact diff source could skip tables nothing wrote to, and read only
the inserts past a watermark of tables that received only inserts, from the log. Each test below
checks one fact the answer rests on, with DuckDB alone (the extension is not loaded: the facts are
DuckDB's). A test fails if a DuckDB version behaves otherwise, which is the signal to revisit the
decision.

Run as a script (`python test/python/test_statement_log.py --cost`) it also measures what DEBUG
logging costs on small statements and how much memory the in-memory log takes.
"""
import os
import subprocess
import sys
import tempfile
import time
import unittest

import duckdb


def setUpModule():
    # A study of DuckDB 1.5.5's own log (docs/statement-log.md): what it records is the host's.
    if not duckdb.__version__.startswith("1.5"):
        raise unittest.SkipTest(f"measures DuckDB 1.5.5's statement log (this is {duckdb.__version__})")


def log_rows(con, types=("QueryLog", "Transaction", "Checkpoint")):
    """(connection_id, transaction_id, type, message) of the log, in order."""
    kinds = ", ".join(f"'{t}'" for t in types)
    return con.execute(
        f"SELECT connection_id, transaction_id, type, message FROM duckdb_logs WHERE type IN ({kinds}) "
        "ORDER BY timestamp"
    ).fetchall()


def statements(con):
    return [m for _, _, t, m in log_rows(con, ("QueryLog",))]


def commits(con, database):
    """Commit entries of `database` (the message names the database and the transaction)."""
    return [m for _, _, t, m in log_rows(con, ("Transaction",))
            if f"'database': {database}," in m and "Commit" in m]


class Logged(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "x.duckdb")
        self.con = duckdb.connect(self.path)
        self.con.execute("CREATE TABLE t(a INTEGER, b VARCHAR)")
        self.con.execute("INSERT INTO t VALUES (0, 'seed')")
        self.con.execute("CALL enable_logging(level => 'debug')")
        self.con.execute("CALL truncate_duckdb_logs()")

    def tearDown(self):
        self.con.close()
        self.dir.cleanup()

    def test_a_statement_is_logged_as_text_and_its_commit_names_only_the_database(self):
        self.con.execute("INSERT INTO t VALUES (1, 'x')")
        self.assertIn("INSERT INTO t VALUES (1, 'x')", statements(self.con))
        # The commit says which database changed, never which table.
        for m in commits(self.con, "x"):
            self.assertNotIn("'table'", m)
        self.assertTrue(commits(self.con, "x"))

    def test_other_connections_are_logged_with_their_own_id(self):
        other = self.con.cursor()
        other.execute("UPDATE t SET b = 'k' WHERE a = 0")
        self.con.execute("SELECT 'mine'")
        ids = {r[3]: r[0] for r in log_rows(self.con, ("QueryLog",))}
        self.assertIsNotNone(ids["UPDATE t SET b = 'k' WHERE a = 0"])
        self.assertNotEqual(ids["UPDATE t SET b = 'k' WHERE a = 0"], ids["SELECT 'mine'"])

    def test_executemany_logs_placeholders_not_values(self):
        self.con.executemany("INSERT INTO t VALUES (?, ?)", [(2, "y"), (3, "z")])
        self.assertEqual(statements(self.con).count("INSERT INTO t VALUES (?, ?)"), 2)

    def test_relation_api_writes_are_logged_without_text(self):
        # A write through the Python relation API (no SQL text): the log holds an empty
        # statement and a commit of the database, so which table changed is not in the log.
        self.con.values([4, "w"]).insert_into("t")
        self.con.table("t").insert([5, "v"])
        self.assertEqual(self.con.execute("SELECT count(*) FROM t WHERE a IN (4, 5)").fetchone()[0], 2)
        texts = statements(self.con)
        self.assertGreaterEqual(texts.count(""), 2)
        self.assertFalse(any("insert" in s.lower() for s in texts if s))
        self.assertTrue(commits(self.con, "x"))

    def test_copy_and_insert_select_are_text_naming_the_table_only_as_written(self):
        csv = os.path.join(self.dir.name, "r.csv")
        self.con.execute(f"COPY (SELECT 6 AS a, 'q' AS b) TO '{csv}'")
        self.con.execute(f"COPY t FROM '{csv}'")
        self.con.execute("CREATE MACRO rows_of() AS TABLE SELECT 7 AS a, 'm' AS b")
        self.con.execute("INSERT INTO t SELECT * FROM rows_of()")
        texts = statements(self.con)
        self.assertIn(f"COPY t FROM '{csv}'", texts)
        self.assertIn("INSERT INTO t SELECT * FROM rows_of()", texts)

    def test_the_writers_search_path_is_not_logged(self):
        # The same text writes another table after USE / SET search_path on the writer's
        # connection; the log records neither the connection's default database nor its schema.
        self.con.execute("CREATE SCHEMA s")
        self.con.execute("CREATE TABLE s.t(a INTEGER, b VARCHAR)")
        other = self.con.cursor()
        other.execute("SET search_path = 's'")
        self.con.execute("CALL truncate_duckdb_logs()")
        other.execute("DELETE FROM t")
        self.assertEqual(self.con.execute("SELECT count(*) FROM main.t").fetchone()[0], 1)
        logged = [r[3] for r in log_rows(self.con) if r[2] == "QueryLog" and not r[3].startswith("SELECT")]
        self.assertEqual(logged, ["DELETE FROM t"])  # s.t was emptied, main.t kept its row
        self.assertEqual(self.con.execute("SELECT count(*) FROM s.t").fetchone()[0], 0)
        self.assertFalse(any("search_path" in r[3] for r in log_rows(self.con)))

    def test_rolled_back_statements_stay_in_the_log(self):
        self.con.execute("BEGIN")
        self.con.execute("DELETE FROM t WHERE a = 0")
        self.con.execute("ROLLBACK")
        texts = statements(self.con)
        self.assertIn("DELETE FROM t WHERE a = 0", texts)
        rollbacks = [m for _, _, t, m in log_rows(self.con, ("Transaction",)) if "Rollback" in m]
        self.assertTrue(rollbacks)
        self.assertEqual(self.con.execute("SELECT count(*) FROM t").fetchone()[0], 1)

    def test_checkpoint_names_tables_only_when_it_rewrites_them(self):
        self.con.execute("INSERT INTO t SELECT range, 'r' FROM range(200000)")
        self.con.execute("DELETE FROM t WHERE a % 3 = 0")
        self.con.execute("CALL truncate_duckdb_logs()")
        self.con.execute("CHECKPOINT")
        cps = [m for _, _, t, m in log_rows(self.con, ("Checkpoint",))]
        self.assertTrue(any("'table': t" in m for m in cps))

    def test_truncate_and_disable_leave_no_trace(self):
        self.con.execute("INSERT INTO t VALUES (8, 'a')")
        self.con.execute("CALL truncate_duckdb_logs()")
        self.assertEqual(statements(self.con), [])
        self.con.execute("CALL disable_logging()")
        self.con.execute("DELETE FROM t WHERE a = 8")
        self.con.execute("CALL enable_logging(level => 'debug')")
        self.assertNotIn("DELETE FROM t WHERE a = 8", statements(self.con))
        self.con.execute("SET enable_logging = false")
        self.con.execute("UPDATE t SET b = 'gone' WHERE a = 0")
        self.con.execute("SET enable_logging = true")
        self.assertFalse(any(s.startswith("UPDATE") for s in statements(self.con)))

    def test_the_log_is_the_users_global_setting(self):
        # enable_logging / logging_level / logging_storage are GLOBAL: a connection changing them
        # changes them for every connection of the database (openivm's kept one included).
        other = self.con.cursor()
        other.execute("SET logging_level = 'info'")
        self.assertEqual(self.con.execute("SELECT current_setting('logging_level')").fetchone()[0], "INFO")
        self.con.execute("INSERT INTO t VALUES (9, 'b')")
        self.assertFalse(commits(self.con, "x"))  # commits are DEBUG entries

    def test_a_reopen_starts_with_an_empty_log_and_other_processes_are_not_seen(self):
        self.con.execute("INSERT INTO t VALUES (10, 'c')")
        self.con.close()
        # Another process writes the file while this one has it closed.
        code = (f"import duckdb; c = duckdb.connect({self.path!r}); "
                "c.execute(\"CALL enable_logging(level => 'debug')\"); "
                "c.execute(\"INSERT INTO t VALUES (11, 'p')\"); c.close()")
        subprocess.run([sys.executable, "-c", code], check=True)
        self.con = duckdb.connect(self.path)
        self.assertEqual(self.con.execute("SELECT count(*) FROM t WHERE a = 11").fetchone()[0], 1)
        # Logging is off again, and nothing of either process's earlier statements survives.
        self.assertEqual(self.con.execute("SELECT current_setting('enable_logging')").fetchone()[0], False)
        self.con.execute("CALL enable_logging(level => 'debug')")
        self.assertFalse(any("INSERT INTO t" in s for s in statements(self.con)))


class OpenivmWrites(unittest.TestCase):
    def test_openivm_writes_are_logged_as_the_statements_they_run(self):
        # openivm_delete records the rows it deletes in the feed's open batch (in its log) with
        # an INSERT ... SELECT, then deletes them: both are logged as the statements they are.
        from support import connect

        con = connect()
        con.execute("CREATE TABLE t(a INTEGER)")
        con.execute("INSERT INTO t SELECT range FROM range(10)")
        con.execute("CALL openivm_declare_recorded('t')")
        con.execute("CALL openivm_create('v', 'SELECT count(*) AS n FROM t')")
        con.execute("CALL enable_logging(level => 'debug')")
        con.execute("CALL truncate_duckdb_logs()")
        con.execute("CALL openivm_delete('t', 'a < 3')")
        pending = con.execute("SELECT count(*) FROM openivm.log_1 WHERE openivm_seq = 1").fetchone()[0]
        self.assertEqual(pending, 3)
        texts = statements(con)
        self.assertTrue(any(s.startswith('INSERT INTO "memory"."openivm"."log_1"') for s in texts), texts)
        self.assertTrue(any(s.startswith('DELETE FROM "memory"."main"."t"') for s in texts), texts)
        con.close()


def measure_cost(rounds=5, statements_per_round=2000):
    """Single-row INSERTs with logging off and at DEBUG, alternating; and the log's memory."""
    with tempfile.TemporaryDirectory() as d:
        con = duckdb.connect(os.path.join(d, "c.duckdb"))
        con.execute("CREATE TABLE t(a INTEGER, b VARCHAR)")
        times = {"off": [], "debug": []}
        for r in range(rounds):
            for mode in (("off", "debug") if r % 2 == 0 else ("debug", "off")):
                if mode == "debug":
                    con.execute("CALL enable_logging(level => 'debug')")
                else:
                    con.execute("CALL disable_logging()")
                started = time.perf_counter()
                for i in range(statements_per_round):
                    con.execute(f"INSERT INTO t VALUES ({i}, 'row {i}')")
                times[mode].append((time.perf_counter() - started) * 1000)
        con.execute("CALL enable_logging(level => 'debug')")
        entries = con.execute("SELECT count(*) FROM duckdb_logs").fetchone()[0]
        started = time.perf_counter()
        con.execute("SELECT count(*) FROM duckdb_logs WHERE type = 'QueryLog'").fetchone()
        read_ms = (time.perf_counter() - started) * 1000
        med = lambda v: sorted(v)[len(v) // 2]
        print(f"{statements_per_round} single-row INSERTs (autocommit), median of {rounds}: "
              f"logging off {med(times['off']):.0f} ms, DEBUG {med(times['debug']):.0f} ms "
              f"({med(times['debug']) / med(times['off']):.2f}x)")
        print(f"log entries after {rounds * statements_per_round} logged statements: {entries}; "
              f"reading them: {read_ms:.1f} ms")
        con.close()


if __name__ == "__main__":
    if "--cost" in sys.argv:
        measure_cost()
    else:
        unittest.main()
