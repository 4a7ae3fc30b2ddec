-- A maintained view by schema and name (every view in this metadata lives in its database).
-- view_catalog is '' in the current layout and the database's name in rows of earlier layouts.
-- avg_finish is read from the row as JSON: NULL where a database attached read-only still has
-- the layout from before that column.
SELECT view_name, view_catalog, view_schema, query, data_table, signature, view_marker, strategy, strategy_reason,
       to_json(openivm_views) ->> 'avg_finish' AS avg_finish
FROM openivm_views
WHERE lower(view_schema) = lower(?) AND lower(view_name) = lower(?)
