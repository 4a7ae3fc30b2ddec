-- Parameters: view schema, view name, feed id, seq, the feed's watermark ('' = none). The view's
-- cursor into a feed.
INSERT INTO openivm.cursors (view_schema, view_name, feed_id, seq, watermark)
VALUES (?, ?, CAST(? AS BIGINT), CAST(? AS BIGINT), NULLIF(?, ''))
