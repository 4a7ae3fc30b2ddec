-- Base tables and views with a given name (case-insensitive), in every attached database.
SELECT database_name, schema_name, table_name, 'table' AS kind
FROM duckdb_tables()
WHERE lower(table_name) = lower(?) AND NOT temporary
UNION ALL
SELECT database_name, schema_name, view_name, 'view' AS kind
FROM duckdb_views()
WHERE lower(view_name) = lower(?) AND NOT temporary AND NOT internal
