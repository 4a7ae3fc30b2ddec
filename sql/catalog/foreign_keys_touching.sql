-- How many FOREIGN KEYs table ? . ? . ? (database, schema, name) has on either side (DuckDB keeps
-- both sides in one schema).
SELECT count(*)::BIGINT FROM duckdb_constraints()
WHERE constraint_type = 'FOREIGN KEY' AND lower(database_name) = lower(?) AND schema_name = ?
  AND (table_name = ? OR referenced_table = ?)
