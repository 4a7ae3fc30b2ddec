-- Every feed (joined with the cursors by the caller: two plain scans cost less than a join).
SELECT feed_id, table_catalog, table_schema, table_name, columns, source,
       key_column, watermark, row_count, size_seen, seq, log_rows, coalesce(pending_rows, 0),
       coalesce(batch_rows, -1), coalesce(batch_deletes, -1), batch_facts
FROM openivm.feeds
