-- The comment DuckDB keeps with a table: it carries the table's incarnation token.
SELECT coalesce(comment, '') FROM duckdb_tables()
WHERE database_name = ? AND schema_name = ? AND table_name = ?
