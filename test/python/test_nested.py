"""Nested and concurrent calls: a user function that a view's query evaluates calls openivm again.

DuckDB evaluates such a function on one of its worker threads or on the calling thread; the
call it makes must end in an error, never in a hang, and leave the views consistent. Each
scenario runs in a subprocess with a timeout, so that a hang fails the test instead of CI."""
import os
import subprocess
import sys
import textwrap
import threading
import time
import unittest

from support import EXTENSION, ROOT, connect, mismatches

RUNS = 20
QUERY = "SELECT k, SUM(f(v)) AS s, COUNT(*) AS n FROM t GROUP BY k"
PLAIN = "SELECT k, SUM(v) AS s, COUNT(*) AS n FROM t GROUP BY k"

SCENARIO = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {test_dir!r})
    from support import connect, mismatches
    QUERY, PLAIN = {query!r}, {plain!r}
    mode, runs = sys.argv[1], int(sys.argv[2])
    for run in range(runs):
        con = connect()
        con.execute("CREATE TABLE t(k INTEGER, v INTEGER)")
        con.execute("INSERT INTO t SELECT i % 7, i FROM range(3000) r(i)")
        inner_cursor = con.cursor()
        state = {{"armed": False, "inner": None}}

        def f(x):
            if state["armed"]:
                state["armed"] = False
                try:
                    inner_cursor.execute("CALL refresh('v')")
                    state["inner"] = "ok"
                except Exception as e:
                    state["inner"] = str(e)
                    raise
            return x

        con.create_function("f", f, ["INTEGER"], "INTEGER")
        if mode == "refresh":
            con.execute("CALL openivm_create('v', ?)", [QUERY])
            con.execute("INSERT INTO t SELECT i % 7, i FROM range(3000, 3100) r(i)")
            before = con.execute("SELECT refresh_count FROM openivm_views").fetchone()[0]
        state["armed"] = True
        try:
            if mode == "refresh":
                con.execute("CALL refresh('v')")
            else:
                con.execute("CALL openivm_create('v', ?)", [QUERY])
            outer = "ok"
        except Exception as e:
            outer = str(e)
        state["armed"] = False
        exists = con.execute("SELECT count(*) FROM duckdb_views() WHERE view_name = 'v'").fetchone()[0]
        if mode == "refresh":
            after = con.execute("SELECT refresh_count FROM openivm_views").fetchone()[0]
            # A failed refresh changed nothing; a successful one counted once.
            assert after == before + (1 if outer == "ok" else 0), (outer, before, after)
        else:
            assert exists == (1 if outer == "ok" else 0), (outer, exists)
        if exists:
            con.execute("CALL refresh('v')")
            assert mismatches(con, "v", PLAIN) == 0
        print("RUN", run, "inner:", state["inner"], "| outer:", outer.splitlines()[0][:160], flush=True)
        con.close()
    print("DONE", flush=True)
    """
).format(test_dir=os.path.dirname(os.path.abspath(__file__)), query=QUERY, plain=PLAIN)


def run_scenario(mode, runs, nested_wait_ms, timeout):
    env = dict(os.environ, OPENIVM_EXTENSION=EXTENSION, OPENIVM_NESTED_WAIT_MS=str(nested_wait_ms))
    return subprocess.run(
        [sys.executable, "-c", SCENARIO, mode, str(runs)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=ROOT,
    )


class NestedCallTest(unittest.TestCase):
    def check(self, mode):
        try:
            out = run_scenario(mode, RUNS, nested_wait_ms=500, timeout=150)
        except subprocess.TimeoutExpired as e:
            self.fail(f"{mode} with a nested refresh hung; output so far:\n{e.stdout}")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("DONE", out.stdout)
        runs = [line for line in out.stdout.splitlines() if line.startswith("RUN")]
        self.assertEqual(len(runs), RUNS)
        for line in runs:
            # The nested call always fails with openivm's error, whichever thread it ran on.
            self.assertIn("a function called from inside an openivm call cannot call openivm", line)
            self.assertNotIn("inner: ok", line)

    def test_a_udf_in_a_refresh_that_calls_refresh_fails_instead_of_hanging(self):
        self.check("refresh")

    def test_a_udf_in_a_create_that_calls_refresh_fails_instead_of_hanging(self):
        self.check("create")


class ConcurrentCallTest(unittest.TestCase):
    def test_two_threads_refreshing_a_view_with_a_udf_both_succeed(self):
        con = connect()
        con.execute("CREATE TABLE t(k INTEGER, v INTEGER)")
        con.execute("INSERT INTO t SELECT i % 7, i FROM range(3000) r(i)")

        def f(x):
            time.sleep(0.0001)  # slow enough that the two refreshes overlap
            return x

        con.create_function("f", f, ["INTEGER"], "INTEGER")
        con.execute("CALL openivm_create('v', ?)", [QUERY])
        errors = []

        def refresher(seed):
            c = con.cursor()
            try:
                for i in range(5):
                    c.execute("INSERT INTO t VALUES (?, ?)", [seed, 10000 * (seed + 1) + i])
                    c.execute("CALL refresh('v')")
            except Exception as e:  # noqa: BLE001 - report every failure
                errors.append(e)

        threads = [threading.Thread(target=refresher, args=(s,)) for s in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertEqual(errors, [])
        con.execute("CALL refresh('v')")
        self.assertEqual(mismatches(con, "v", PLAIN), 0)
        # A refresh that finds its batch already applied by the other thread's refresh writes
        # nothing and is not counted: between 1 and 11 refreshes did work.
        self.assertIn(con.execute("SELECT refresh_count FROM openivm_views").fetchone()[0], range(1, 12))
        con.close()


if __name__ == "__main__":
    unittest.main()
