-- How many FOREIGN KEYs table ? . ? . ? (database, schema, name) has (it is their child side).
SELECT count(*)::BIGINT FROM duckdb_constraints()
WHERE constraint_type = 'FOREIGN KEY' AND lower(database_name) = lower(?) AND schema_name = ? AND table_name = ?
