-- The tables of database ? (schema, name) that the trigger source may take by default: base
-- tables (only they carry triggers) that have no FOREIGN KEY of the catalog on either side
-- (DuckDB keeps both sides in one schema). On DuckDB 2.0.1 an UPDATE trigger on a referenced
-- table makes every UPDATE of it fail the key check, and an UPDATE of a large table that has a
-- foreign key, with a statement trigger, fails with an internal error or hands the trigger
-- fewer rows than it changed (test/differential/findings/duckdb201_update_fk_trigger_rows.py).
SELECT t.schema_name, t.table_name
FROM duckdb_tables() t
WHERE lower(t.database_name) = lower(?) AND NOT t.temporary
  AND NOT EXISTS (SELECT 1 FROM duckdb_constraints() c
                  WHERE c.constraint_type = 'FOREIGN KEY' AND c.database_name = t.database_name
                    AND c.schema_name = t.schema_name
                    AND (c.referenced_table = t.table_name OR c.table_name = t.table_name))
