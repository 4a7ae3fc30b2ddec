-- Whether a function name is an aggregate, and whether every overload is deterministic.
SELECT count(*),
       bool_or(function_type = 'aggregate'),
       bool_and(coalesce(stability, 'CONSISTENT') = 'CONSISTENT')
FROM duckdb_functions()
WHERE lower(function_name) = lower(?) AND function_type IN ('scalar', 'aggregate', 'macro')
