-- Whether a function name is an aggregate, whether some overload is deterministic (which one a
-- call binds is checked on DuckDB's bound plan), and whether every overload is built in (not a
-- user's macro or function).
SELECT count(*),
       bool_or(function_type = 'aggregate'),
       bool_or(coalesce(stability, 'CONSISTENT') = 'CONSISTENT'),
       bool_and(internal)
FROM duckdb_functions()
WHERE lower(function_name) = lower(?) AND function_type IN ('scalar', 'aggregate', 'macro')
