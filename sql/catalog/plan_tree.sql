-- DuckDB's bound, optimized plan of a query, as JSON (views and CTEs expanded; nothing runs).
SELECT json_serialize_plan(?::VARCHAR)
