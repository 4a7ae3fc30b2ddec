"""Refresh of a view over DuckLake tables against a recompute (medians), with the stored result
checked against the recompute at the end. Usage: .venv/bin/python bench/ducklake/refresh_vs_recompute.py
[fact rows, default 1000000] [runs, default 5]. The README's DuckLake figures come from `5000000 3`."""
import statistics, sys, tempfile, time
sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parents[2] / 'test' / 'python'))
from support import attach_ducklake, connect
N = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
Q = ("SELECT d.name, SUM(f.amount) AS total, COUNT(*) AS n FROM lake.fact f JOIN lake.dim d ON f.k = d.k "
     "GROUP BY d.name")
def ms(f):
    t = time.perf_counter(); f(); return (time.perf_counter() - t) * 1000
with tempfile.TemporaryDirectory() as tmp:
    con = connect()
    attach_ducklake(con, tmp)
    con.execute("CREATE TABLE lake.dim(k INTEGER, name VARCHAR)")
    con.execute("CREATE TABLE lake.fact(id BIGINT, k INTEGER, amount DECIMAL(12,2))")
    con.execute("INSERT INTO lake.dim SELECT i, 'n' || (i % 100) FROM range(10000) r(i)")
    con.execute(f"INSERT INTO lake.fact SELECT i, i % 10000, (i % 97)::DECIMAL(12,2) FROM range({N}) r(i)")
    con.execute("SELECT * FROM openivm_create('v', ?)", [Q])
    rec = lambda: con.execute(f"CREATE OR REPLACE TABLE recompute AS {Q}")
    nid = [N]
    def ins():
        con.execute("INSERT INTO lake.fact SELECT ? + i, i % 10000, 1 FROM range(1000) r(i)", [nid[0]]); nid[0] += 1000
    def dele():
        con.execute("DELETE FROM lake.fact WHERE id % 1000 = ? AND id < ?", [nid[0] % 997, N]); nid[0] += 1
    refresh = lambda: con.execute("SELECT * FROM openivm_refresh('v')").fetchall()
    out = {}
    out['nothing changed'] = [ms(refresh) for _ in range(RUNS)]
    r = []
    for _ in range(RUNS): ins(); r.append(ms(refresh))
    out['1000-row insert'] = r
    r = []
    for _ in range(RUNS): dele(); r.append(ms(refresh))
    out['~1000-row scattered delete'] = r
    r = []
    for _ in range(RUNS): ins(); r.append(ms(refresh))
    out['1000-row insert after deletes'] = r
    out['recompute'] = [ms(rec) for _ in range(RUNS)]
    modes = con.execute("SELECT mode, count(*) FROM openivm_refresh_history GROUP BY 1").fetchall()
    bad = con.execute(f"SELECT count(*) FROM ((FROM v EXCEPT ALL ({Q})) UNION ALL (({Q}) EXCEPT ALL FROM v))").fetchone()[0]
    rc = statistics.median(out['recompute'])
    for k, v in out.items():
        m = statistics.median(v)
        print(f"{k:32s} median {m:8.1f} ms  ({rc / m:.1f}x faster than recompute)" if k != 'recompute' else f"{k:32s} median {m:8.1f} ms")
    print('modes', modes, 'mismatches', bad)
