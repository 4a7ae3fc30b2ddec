-- The append-only declarations of the given tables (parameter: JSON array of [catalog, schema, name]).
SELECT child_catalog, child_schema, child_table, child_columns, coalesce(child_token, '')
FROM openivm_constraints_cache
WHERE constraint_kind = 'APPEND_ONLY' AND is_trusted
  AND [child_catalog, child_schema, child_table] IN (SELECT unnest(CAST(? AS VARCHAR[][])))
