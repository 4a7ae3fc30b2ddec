-- The feed of a table (one per table: its columns are those any of its views reads).
-- Parameters: the table's two catalog spellings (src/home.rs), schema, table.
SELECT feed_id, table_catalog, table_schema, table_name, columns, source,
       key_column, watermark, row_count, size_seen, seq, log_rows, coalesce(pending_rows, 0),
       coalesce(batch_rows, -1), coalesce(batch_deletes, -1), batch_facts
FROM openivm.feeds
WHERE table_catalog IN (?, ?) AND table_schema = ? AND table_name = ?
ORDER BY table_catalog
LIMIT 1
