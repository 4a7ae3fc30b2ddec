SELECT count(*) FROM duckdb_schemas() WHERE lower(database_name) = lower(?) AND lower(schema_name) = lower(?)
