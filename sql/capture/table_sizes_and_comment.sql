-- table_sizes.sql (kind 0) and, when it exists, the DuckDB view a refresh maintains with its
-- comment in the place of the definition (kind 1): the refresh's two catalog reads in one
-- statement. Parameters: the view's database, schema and name.
SELECT 0 AS kind, database_name, schema_name, table_name, table_oid::VARCHAR, sql, estimated_size::VARCHAR
FROM duckdb_tables()
UNION ALL
SELECT 1, database_name, schema_name, view_name, NULL, coalesce(comment, ''), NULL
FROM duckdb_views()
WHERE database_name = ? AND schema_name = ? AND view_name = ?
