-- Parameters: source, key ('' = rowid), watermark ('' = none), row_count, size_seen, seq, log_rows, pending_rows, id.
UPDATE openivm.feeds
SET source = ?, key_column = nullif(?, ''), watermark = nullif(?, ''), row_count = CAST(? AS BIGINT),
    size_seen = CAST(? AS BIGINT), seq = CAST(? AS BIGINT), log_rows = CAST(? AS BIGINT),
    pending_rows = CAST(? AS BIGINT)
WHERE feed_id = CAST(? AS BIGINT)
