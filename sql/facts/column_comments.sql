-- The comments DuckDB keeps with a table's columns: declared key columns carry the table's
-- incarnation token.
SELECT column_name, coalesce(comment, '')
FROM duckdb_columns()
WHERE database_name = ? AND schema_name = ? AND table_name = ?
ORDER BY column_index
