-- Parameters: seq, view schema, view name, feed id.
UPDATE openivm.cursors SET seq = CAST(? AS BIGINT)
WHERE view_schema = ? AND view_name = ? AND feed_id = CAST(? AS BIGINT)
