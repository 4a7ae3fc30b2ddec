-- Parameters: id, catalog, schema, table, columns, source, key ('' = rowid), watermark ('' = none),
-- row_count, size_seen.
INSERT INTO openivm.feeds (feed_id, table_catalog, table_schema, table_name, columns, source, key_column, watermark,
                           row_count, size_seen, seq, log_rows, pending_rows, batch_rows, batch_deletes)
VALUES (CAST(? AS BIGINT), ?, ?, ?, ?, ?, nullif(?, ''), nullif(?, ''), CAST(? AS BIGINT), CAST(? AS BIGINT), 0, 0, 0, -1, -1)
