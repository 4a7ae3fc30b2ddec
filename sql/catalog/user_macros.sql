-- Every macro a user created (scalar and table macros, each overload), with what defines it: a
-- maintained view records those it calls, so that one replaced behind its back is noticed. The
-- database's name is left out (it follows the file's name).
SELECT schema_name, function_name, function_type, array_to_string(parameters, ', '), coalesce(macro_definition, '')
FROM duckdb_functions()
WHERE NOT internal AND function_type IN ('macro', 'table_macro')
ORDER BY ALL
