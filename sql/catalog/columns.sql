SELECT column_name, data_type
FROM duckdb_columns()
WHERE database_name = ? AND schema_name = ? AND table_name = ?
ORDER BY column_index
