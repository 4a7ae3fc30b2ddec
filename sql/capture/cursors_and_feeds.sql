-- Every view's cursor (kind 0) and every feed (kind 1) in one read, each row padded with NULLs
-- where the other kind has its columns: one statement per refresh instead of two. Cursor columns
-- as in cursors.sql (1-5), feed columns as in feeds_of_view.sql (6-20).
SELECT 0 AS kind, view_schema, view_name, feed_id, seq, coalesce(watermark, ''),
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM openivm.cursors
UNION ALL
SELECT 1, NULL, NULL, NULL, NULL, NULL,
       feed_id, table_catalog, table_schema, table_name, columns, source,
       coalesce(key_column, ''), coalesce(watermark, ''), row_count, size_seen, seq, log_rows, coalesce(pending_rows, 0),
       coalesce(batch_rows, -1), coalesce(batch_deletes, -1)
FROM openivm.feeds
