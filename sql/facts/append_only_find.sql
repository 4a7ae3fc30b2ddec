-- The source declarations (append-only, recorded) of the given tables (parameter: JSON array of
-- [catalog, schema, name]).
SELECT child_catalog, child_schema, child_table, child_columns, coalesce(child_token, ''), constraint_kind
FROM openivm_constraints_cache
WHERE constraint_kind IN ('APPEND_ONLY', 'RECORDED') AND is_trusted
  AND [child_catalog, child_schema, child_table] IN (SELECT unnest(CAST(? AS VARCHAR[][])))
