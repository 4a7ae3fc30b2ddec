-- Identity and definition of every view: the maintained views that other maintained views read
-- as leaves are revalidated like tables (a view has no appended-row count).
SELECT database_name, schema_name, view_name, view_oid::VARCHAR, sql
FROM duckdb_views()
WHERE NOT internal AND NOT temporary
