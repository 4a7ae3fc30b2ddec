-- Every table's identity, definition and appended-row count (kind 0, columns as in
-- table_sizes.sql) and every view's identity, comment and oid (kind 1; a refresh takes the
-- comment of the DuckDB view it maintains), each kind's columns from the second on, as text, padded with
-- NULLs to the width of cursors_and_feeds.sql's rows (kinds 2 and 3), with which
-- `sql::REFRESH_READS` reads them in one statement. No parameters: one plan, kept, serves every
-- refresh of the database (a statement with parameters is planned again at each run).
SELECT 0 AS kind, database_name, schema_name, table_name, table_oid::VARCHAR, sql, estimated_size::VARCHAR,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM duckdb_tables()
UNION ALL
SELECT 1, database_name, schema_name, view_name, coalesce(comment, ''), view_oid::VARCHAR, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL, NULL, NULL
FROM duckdb_views()
WHERE NOT internal
