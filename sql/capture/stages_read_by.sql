-- The stages (hidden maintained views of the schema openivm) a maintained view reads through
-- feeds (parameters: the view's schema and name).
SELECT DISTINCT f.table_name
FROM openivm.feeds f JOIN openivm.cursors c ON c.feed_id = f.feed_id
WHERE c.view_schema = ? AND c.view_name = ? AND f.table_catalog = '' AND f.table_schema = 'openivm'
ORDER BY 1
