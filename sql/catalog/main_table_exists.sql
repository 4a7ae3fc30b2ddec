-- Whether the extension's metadata table ? exists in the main schema of the default database.
SELECT count(*) FROM duckdb_tables()
WHERE database_name = current_database() AND schema_name = 'main' AND table_name = ?
