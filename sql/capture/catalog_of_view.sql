-- Every table's identity, definition and appended-row count (kind 0, columns as in
-- table_sizes.sql) and, when it exists, the comment of the DuckDB view a refresh maintains
-- (kind 1), each kind's columns from the second on, as text, padded with NULLs to the width of
-- cursors_and_feeds.sql's rows (kinds 2 and 3), with which `sql::REFRESH_READS` reads them in one
-- statement. Parameters: the view's database, schema and name.
SELECT 0 AS kind, database_name, schema_name, table_name, table_oid::VARCHAR, sql, estimated_size::VARCHAR,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM duckdb_tables()
UNION ALL
SELECT 1, coalesce(comment, ''), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM duckdb_views()
WHERE database_name = ? AND schema_name = ? AND view_name = ?
