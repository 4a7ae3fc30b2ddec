-- The first read of a refresh whose view is compiled, in one statement (each costs about a
-- millisecond, most of it fixed): every table's identity, definition and appended-row count
-- (kind 0, columns as in table_sizes.sql), the comment of the DuckDB view the refresh maintains
-- (kind 1, when that view exists), and every cursor and feed (kinds 2 and 3, as in
-- cursors_and_feeds.sql). Each kind's columns start at the second, as text, padded with NULLs.
-- Parameters: the view's database, schema and name.
SELECT 0 AS kind, database_name, schema_name, table_name, table_oid::VARCHAR, sql, estimated_size::VARCHAR,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM duckdb_tables()
UNION ALL
SELECT 1, coalesce(comment, ''), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM duckdb_views()
WHERE database_name = ? AND schema_name = ? AND view_name = ?
UNION ALL
SELECT 2 AS kind, view_schema, view_name, feed_id::VARCHAR, seq::VARCHAR, coalesce(watermark, ''),
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM openivm.cursors
UNION ALL
SELECT 3, feed_id::VARCHAR, table_catalog, table_schema, table_name, columns, source,
       coalesce(key_column, ''), coalesce(watermark, ''), row_count::VARCHAR, size_seen::VARCHAR, seq::VARCHAR,
       log_rows::VARCHAR, coalesce(pending_rows, 0)::VARCHAR, coalesce(batch_rows, -1)::VARCHAR,
       coalesce(batch_deletes, -1)::VARCHAR
FROM openivm.feeds
