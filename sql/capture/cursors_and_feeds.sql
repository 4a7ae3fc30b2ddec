-- Every view's cursor (kind 2, columns as in cursors.sql) and every feed (kind 3, columns as in
-- feeds_of_view.sql) in one read. Each kind's columns start at the second, as text, padded with
-- NULLs to the width of the widest (kinds 0 and 1 are the catalog's, in catalog_of_view.sql).
SELECT 2 AS kind, view_schema, view_name, feed_id::VARCHAR, seq::VARCHAR, watermark,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM openivm.cursors
UNION ALL
SELECT 3, feed_id::VARCHAR, table_catalog, table_schema, table_name, columns, source,
       key_column, watermark, row_count::VARCHAR, size_seen::VARCHAR, seq::VARCHAR,
       log_rows::VARCHAR, coalesce(pending_rows, 0)::VARCHAR, coalesce(batch_rows, -1)::VARCHAR,
       coalesce(batch_deletes, -1)::VARCHAR, batch_facts
FROM openivm.feeds
