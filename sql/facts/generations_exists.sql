SELECT count(*) FROM duckdb_tables()
WHERE database_name = ? AND schema_name = 'main' AND table_name = 'openivm_source_generations'
