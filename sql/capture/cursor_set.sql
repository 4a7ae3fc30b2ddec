-- Parameters: view schema, view name, feed id, seq. The view's cursor into a feed.
INSERT INTO openivm.cursors VALUES (?, ?, CAST(? AS BIGINT), CAST(? AS BIGINT))
