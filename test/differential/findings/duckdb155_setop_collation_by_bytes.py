"""DuckDB 1.5.5, without openivm: INTERSECT and EXCEPT [ALL] whose result column is collated
(one operand's column is VARCHAR COLLATE NOCASE) compare the operands by their bytes unless the
first operand is itself a collated table column, while the same query's result type is collated
and its DISTINCT merges under the collation. So `u EXCEPT c` shows 'a' though c holds 'A' and the
result column says 'a' = 'A'; `c EXCEPT u` removes 'a'/'A' under the collation; and an explicit
`x COLLATE NOCASE` on the first operand does not help. DuckDB 2.0.1 compares under the result's
collation in every case (the consistent answer, which openivm maintains on both hosts: a value's
copies on each side are counted over its spellings). Found 2026-12-07 triaging differential seed
9240. The differential test accepts such a view on 1.5.5 when it equals a recompute of the set
operation over the collation keys (lower / strip_accents) of each operand, and reports those checks
in a FINDING line. Run: .venv/bin/python <this> (1.5.5: 'inconsistent'; 2.0.1: 'consistent')"""
import duckdb

con = duckdb.connect()
con.execute("CREATE TABLE u(x VARCHAR)")
con.execute("CREATE TABLE c(x VARCHAR COLLATE NOCASE)")
con.execute("INSERT INTO u VALUES ('a'), ('b')")
con.execute("INSERT INTO c VALUES ('A')")
u_except_c = sorted(con.execute("SELECT x FROM u EXCEPT SELECT x FROM c").fetchall())
explicit = sorted(con.execute("SELECT x COLLATE NOCASE FROM u EXCEPT SELECT x FROM c").fetchall())
c_except_u = sorted(con.execute("SELECT x FROM c EXCEPT SELECT x FROM u").fetchall())
result_type = con.execute(
    "CREATE TABLE r AS SELECT x FROM u EXCEPT SELECT x FROM c; "
    "SELECT sql FROM duckdb_tables() WHERE table_name = 'r'").fetchone()[0]
print(duckdb.__version__)
print("u EXCEPT c:                 ", u_except_c, "(under NOCASE: [('b',)])")
print("u COLLATE NOCASE EXCEPT c:  ", explicit)
print("c EXCEPT u:                 ", c_except_u, "(under NOCASE: [])")
print("result table:               ", result_type)
print("consistent" if u_except_c == explicit == [("b",)] and c_except_u == [] else "inconsistent")
