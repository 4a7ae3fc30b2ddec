-- Whether a function name is an aggregate, whether every overload is deterministic, and whether
-- every overload is built in (not a user's macro or function).
SELECT count(*),
       bool_or(function_type = 'aggregate'),
       bool_and(coalesce(stability, 'CONSISTENT') = 'CONSISTENT'),
       bool_and(internal)
FROM duckdb_functions()
WHERE lower(function_name) = lower(?) AND function_type IN ('scalar', 'aggregate', 'macro')
