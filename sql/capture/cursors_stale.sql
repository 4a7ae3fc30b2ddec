-- Parameters: feed id, view schema, view name. The other views of a rebuilt feed must recompute.
UPDATE openivm.cursors SET seq = -1
WHERE feed_id = CAST(? AS BIGINT) AND NOT (view_schema = ? AND view_name = ?)
