-- The maintained views that read a relation through a feed (parameters: the relation's catalog
-- as stored, schema, name).
SELECT DISTINCT c.view_schema, c.view_name
FROM openivm.feeds f JOIN openivm.cursors c ON c.feed_id = f.feed_id
WHERE f.table_catalog = ? AND lower(f.table_schema) = lower(?) AND lower(f.table_name) = lower(?)
ORDER BY 1, 2
