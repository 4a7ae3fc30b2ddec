-- The type of an attached database ('duckdb', 'ducklake', ...; no row: not attached).
SELECT type FROM duckdb_databases() WHERE lower(database_name) = lower(?) AND NOT internal
