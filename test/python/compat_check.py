"""Loads the extension into another DuckDB host (run with that host's Python, e.g. DuckDB 2.0)
and checks one create/refresh cycle against a recompute. Prints 'N passed, M failed'."""
import os
import subprocess
import sys

import duckdb

checks = []


def check(name, ok):
    checks.append(ok)
    print(("PASS " if ok else "FAIL ") + name)


def main(extension):
    con = duckdb.connect(config={"allow_unsigned_extensions": True})
    con.execute(f"LOAD '{extension}'")
    check(f"loads into DuckDB {duckdb.__version__}", True)
    con.execute("CREATE TABLE d(id INTEGER PRIMARY KEY, name VARCHAR)")
    con.execute("CREATE TABLE f(id INTEGER, d_id INTEGER REFERENCES d(id), amount DECIMAL(10,2))")
    con.execute("INSERT INTO d VALUES (1, 'a'), (2, 'b')")
    con.execute("INSERT INTO f VALUES (1, 1, 1.50), (2, 2, 2.25), (3, 1, NULL)")
    q = "SELECT d.name, SUM(f.amount) AS s, COUNT(*) AS n FROM f JOIN d ON f.d_id = d.id GROUP BY d.name"
    con.execute("CALL openivm_create('v', ?)", [q])
    con.execute("INSERT INTO d VALUES (3, 'c')")
    con.execute("INSERT INTO f VALUES (4, 3, 9.00)")
    con.execute("DELETE FROM f WHERE id = 2")
    row = con.execute("SELECT terms_total, terms_fk_pruned, terms_run FROM refresh('v')").fetchone()
    check("refresh reports 3 terms, 2 pruned, 1 run", row == (3, 2, 1))
    diff = con.execute(
        f"SELECT count(*) FROM ((FROM v EXCEPT ALL ({q})) UNION ALL (({q}) EXCEPT ALL FROM v))"
    ).fetchone()[0]
    check("stored result equals a recompute", diff == 0)
    con.close()
    check_clean_exit(extension)


# A process whose connection is still open at exit (here leaked on purpose), with the watchdog
# polling every millisecond: a poll that ran into DuckDB's static destructors crashed the process
# (shell/instance.rs). Without the extension's exit guard most of these runs end in SIGSEGV.
EXIT_SCRIPT = """
import ctypes, sys, duckdb
con = duckdb.connect(config={'allow_unsigned_extensions': True})
con.execute(f"LOAD '{sys.argv[1]}'")
con.execute('CREATE TABLE t(k INTEGER, v INTEGER)')
con.execute("CALL openivm_create('v', 'SELECT k, SUM(v) AS s FROM t GROUP BY k')")
con.execute('INSERT INTO t VALUES (1, 2)')
con.execute("FROM refresh('v')")
ctypes.pythonapi.Py_IncRef(ctypes.py_object(con))
"""


def check_clean_exit(extension, runs=15):
    env = dict(os.environ, OPENIVM_WATCH_INTERVAL_MS="1")
    codes = [
        subprocess.run([sys.executable, "-c", EXIT_SCRIPT, extension], env=env, capture_output=True, timeout=60).returncode
        for _ in range(runs)
    ]
    check(f"{runs} processes exit cleanly with a connection open (exit codes {sorted(set(codes))})", set(codes) == {0})


if __name__ == "__main__":
    try:
        main(sys.argv[1])
    except Exception as e:  # noqa: BLE001 - any failure is a failed check
        check(f"error: {e}", False)
    failed = checks.count(False)
    print(f"{len(checks) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
