-- Every append-only declaration (matched to tables by the caller; catalogs as stored, see src/home.rs).
SELECT child_catalog, child_schema, child_table, child_columns, coalesce(child_token, '')
FROM openivm_constraints_cache
WHERE constraint_kind = 'APPEND_ONLY' AND is_trusted
