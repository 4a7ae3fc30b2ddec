-- DuckDB's own parse tree of a view query, as JSON.
SELECT json_serialize_sql(?::VARCHAR)
