-- Every DuckDB view's identity, definition and comment, read once for a round of refreshes
-- (`openivm_refresh_all`), which revalidates every maintained view against it.
SELECT database_name, schema_name, view_name, view_oid::VARCHAR, sql, coalesce(comment, '')
FROM duckdb_views()
WHERE NOT internal AND NOT temporary
