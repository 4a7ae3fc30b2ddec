SELECT view_name, view_catalog, view_schema, query, data_table, signature, view_marker, strategy, strategy_reason
FROM openivm_views
WHERE lower(view_catalog) = lower(?) AND lower(view_schema) = lower(?) AND lower(view_name) = lower(?)
