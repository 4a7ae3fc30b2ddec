-- Tables of database ? that a FOREIGN KEY of the catalog references (DuckDB keeps both sides in
-- one schema): on DuckDB 2.0.1 an UPDATE trigger on such a table makes every UPDATE of it fail
-- the key check, so the trigger source is not their default.
SELECT DISTINCT schema_name, referenced_table
FROM duckdb_constraints()
WHERE constraint_type = 'FOREIGN KEY' AND lower(database_name) = lower(?)
