-- Parameters: view schema, view name, JSON array of {feed_id, seq}: every cursor of the view a
-- refresh moved, in one statement.
UPDATE openivm.cursors SET seq = v.seq
FROM (SELECT unnest(from_json(?::JSON, '[{"feed_id":"BIGINT","seq":"BIGINT"}]'), recursive := true)) v
WHERE openivm.cursors.view_schema = ? AND openivm.cursors.view_name = ? AND openivm.cursors.feed_id = v.feed_id
