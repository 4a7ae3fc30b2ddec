-- FOREIGN KEY constraints of the catalog (DuckDB keeps both sides in one schema).
SELECT database_name, schema_name, table_name, to_json(constraint_column_names)::VARCHAR,
       referenced_table, to_json(referenced_column_names)::VARCHAR
FROM duckdb_constraints()
WHERE constraint_type = 'FOREIGN KEY'
