-- Parameter: JSON array of feed rows {feed_id, source, key_column, watermark, row_count,
-- size_seen, seq, log_rows, pending_rows} ('' = NULL for key_column and watermark): every
-- feed a refresh changed, in one statement.
UPDATE openivm.feeds
SET source = v.source, key_column = nullif(v.key_column, ''), watermark = nullif(v.watermark, ''),
    row_count = v.row_count, size_seen = v.size_seen, seq = v.seq, log_rows = v.log_rows,
    pending_rows = v.pending_rows
FROM (SELECT unnest(from_json(?::JSON, '[{"feed_id":"BIGINT","source":"VARCHAR","key_column":"VARCHAR",
        "watermark":"VARCHAR","row_count":"BIGINT","size_seen":"BIGINT","seq":"BIGINT","log_rows":"BIGINT",
        "pending_rows":"BIGINT"}]'), recursive := true)) v
WHERE openivm.feeds.feed_id = v.feed_id
