-- One cheap catalog read per refresh: identity, definition and appended-row count of every
-- table (filtered by the caller; a filter here costs more than it saves).
SELECT database_name, schema_name, table_name, table_oid::VARCHAR, sql, estimated_size::VARCHAR
FROM duckdb_tables()
