"""DuckDB 2.0.1, without openivm: an UPDATE of 1% of a 20M-row table with foreign keys and three
statement triggers (the trigger source's shape), after a 1% INSERT and a 1% DELETE, fails with
"INTERNAL Error: DataChunk::CheckCardinality - vector has size 1 but expected size 20"
(2026-12-06; at 2M and 5M rows the same statements pass). Run: .venv-duckdb2/bin/python <this> 20000000
The same statements pass without the triggers, and with the triggers but without the foreign
keys (one run each): both are needed. Not yet narrowed down further (the DELETE before?)."""
import duckdb, sys
n = int(sys.argv[1]); step = 100
con = duckdb.connect()
for d in ("d1", "d2", "d3"):
    con.execute(f"CREATE TABLE {d}(id INTEGER PRIMARY KEY, name VARCHAR, cat VARCHAR)")
    con.execute(f"INSERT INTO {d} SELECT i, 'n' || i, 'c' || (i % 25) FROM range(1000) t(i)")
con.execute("CREATE TABLE fact(fid BIGINT, d1_id INTEGER REFERENCES d1(id), d2_id INTEGER REFERENCES d2(id), d3_id INTEGER REFERENCES d3(id), amt DECIMAL(12,2), qty INTEGER)")
con.execute(f"INSERT INTO fact SELECT i, i % 1000, (i * 7) % 1000, (i * 13) % 1000, (i % 1000) / 10, i % 10 FROM range({n}) t(i)")
cols = "d1_id, d2_id, d3_id, amt"
con.execute(f"CREATE TABLE log AS SELECT {cols}, 1 AS m, NULL::BIGINT AS s FROM fact LIMIT 0")
for ev, ref, body in [("INSERT", "NEW TABLE AS nw", f"SELECT {cols}, 1 FROM nw"), ("DELETE", "OLD TABLE AS o", f"SELECT {cols}, -1 FROM o"), ("UPDATE", "OLD TABLE AS o NEW TABLE AS nw", f"SELECT {cols}, -1 FROM o UNION ALL SELECT {cols}, 1 FROM nw")]:
    con.execute(f"CREATE TRIGGER t_{ev} AFTER {ev} ON fact REFERENCING {ref} FOR EACH STATEMENT INSERT INTO log ({cols}, m) {body}")
w = con.cursor()
k = n // 100
try:
    w.execute(f"INSERT INTO fact SELECT {n} + i, i % 1000, (i * 3) % 1000, (i * 5) % 1000, i % 97, 1 FROM range({k}) t(i)")
    w.execute(f"DELETE FROM fact WHERE fid < {n} AND fid % {step} = 0")
    w.execute(f"UPDATE fact SET amt = amt + 1 WHERE fid < {n} AND fid % {step} = 1")
    print("ok", con.execute("SELECT count(*) FROM log").fetchone())
except Exception as e:
    print("ERR", str(e)[:300])
