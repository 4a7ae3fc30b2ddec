-- Whether the metadata table ? (second parameter) exists in the main schema of the attached database ?.
SELECT count(*) FROM duckdb_tables()
WHERE lower(database_name) = lower(?) AND schema_name = 'main' AND table_name = ?
