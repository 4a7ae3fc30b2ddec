SELECT count(*) FROM duckdb_tables()
WHERE database_name = current_database() AND schema_name = 'main' AND table_name = 'openivm_views'
