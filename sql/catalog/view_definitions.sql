-- Every DuckDB view's definition: a maintained view that expanded DuckDB views checks at each
-- refresh that they are still the ones it was compiled from.
SELECT database_name, schema_name, view_name, sql
FROM duckdb_views()
WHERE NOT internal AND NOT temporary
