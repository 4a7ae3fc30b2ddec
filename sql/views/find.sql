-- A maintained view by schema and name (every view in this metadata lives in its database).
-- view_catalog is '' in the current layout and the database's name in rows of earlier layouts.
SELECT view_name, view_catalog, view_schema, query, data_table, signature, view_marker
FROM openivm_views
WHERE lower(view_schema) = lower(?) AND lower(view_name) = lower(?)
