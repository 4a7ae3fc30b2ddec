-- Every scalar and aggregate overload of the functions named in a JSON list of names: its
-- parameter types (a JSON list), its result type and whether its stability is CONSISTENT.
SELECT function_name,
       to_json(parameter_types)::VARCHAR,
       coalesce(return_type, ''),
       coalesce(stability, 'CONSISTENT') = 'CONSISTENT'
FROM duckdb_functions()
WHERE function_type IN ('scalar', 'aggregate')
  AND lower(function_name) IN (SELECT lower(unnest(from_json(?::VARCHAR, '["VARCHAR"]'))))
