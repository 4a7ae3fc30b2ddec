-- Whether a database is attached read-only.
SELECT readonly::VARCHAR FROM duckdb_databases() WHERE database_name = ?
