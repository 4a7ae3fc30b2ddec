"""DuckDB 1.5.5, without openivm: COUNT(DISTINCT x) over a collated column (VARCHAR COLLATE
NOCASE.NOACCENT) counts the values by their bytes, while the same column's SELECT DISTINCT and
GROUP BY merge them under the collation. Over 'B', 'b', 'e', 'é', 'E', NULL: COUNT(DISTINCT) 5,
SELECT DISTINCT 3 rows (2 values and NULL). DuckDB 2.0.1 counts under the collation (2), the
consistent answer, which openivm maintains on both hosts (its distinct values are group keys, which
merge under the collation). So on 1.5.5 a maintained view with COUNT(DISTINCT collated) differs
from a recompute by 1.5.5 itself. Found 2026-12-07 in differential seed 15008 (1.5.5, scenario 7,
view v1: COUNT(DISTINCT d1.CAT) 4 in the view, 6 in the recompute). Not yet accepted by the
differential test the way duckdb155_setop_collation_by_bytes.py is.
Run: .venv/bin/python <this> (1.5.5: 'inconsistent'; 2.0.1: 'consistent')"""
import duckdb

con = duckdb.connect()
con.execute("CREATE TABLE d1(cat VARCHAR COLLATE NOCASE.NOACCENT)")
con.execute("INSERT INTO d1 VALUES ('B'), ('b'), ('e'), ('é'), ('E'), (NULL)")
counted = con.execute("SELECT COUNT(DISTINCT cat) FROM d1").fetchone()[0]
distinct = con.execute("SELECT count(cat) FROM (SELECT DISTINCT cat FROM d1)").fetchone()[0]
grouped = con.execute("SELECT count(*) FROM (SELECT cat FROM d1 WHERE cat IS NOT NULL GROUP BY cat)").fetchone()[0]
print(duckdb.__version__)
print("COUNT(DISTINCT cat):        ", counted)
print("values of SELECT DISTINCT:  ", distinct)
print("groups of GROUP BY:         ", grouped)
print("consistent" if counted == distinct == grouped else "inconsistent")
