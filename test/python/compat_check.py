"""Loads the extension into another DuckDB host (run with that host's Python, e.g. DuckDB 2.0)
and checks one create/refresh cycle against a recompute. Prints 'N passed, M failed'."""
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


if __name__ == "__main__":
    try:
        main(sys.argv[1])
    except Exception as e:  # noqa: BLE001 - any failure is a failed check
        check(f"error: {e}", False)
    failed = checks.count(False)
    print(f"{len(checks) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
