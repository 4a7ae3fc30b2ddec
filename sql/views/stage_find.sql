-- The maintained stage (a hidden view in the schema openivm) that stores a query, by its text.
SELECT view_name FROM openivm_views
WHERE view_schema = 'openivm' AND view_catalog = '' AND query = ?
ORDER BY view_name
LIMIT 1
