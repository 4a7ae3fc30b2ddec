-- Trusted RELY foreign keys with fully qualified endpoints (legacy unqualified rows are ignored).
SELECT child_catalog, child_schema, child_table, child_columns,
       parent_catalog, parent_schema, parent_table, parent_columns,
       coalesce(child_token, ''), coalesce(parent_token, '')
FROM openivm_constraints_cache
WHERE constraint_kind = 'RELY_FK' AND is_trusted
  AND child_catalog IS NOT NULL AND child_schema IS NOT NULL
  AND parent_catalog IS NOT NULL AND parent_schema IS NOT NULL
