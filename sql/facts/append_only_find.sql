-- Every source declaration: append-only, recorded, or a chosen diff or trigger source (matched to
-- tables by the caller; catalogs as stored, see src/home.rs).
SELECT child_catalog, child_schema, child_table, child_columns, coalesce(child_token, ''), constraint_kind
FROM openivm_constraints_cache
WHERE constraint_kind IN ('APPEND_ONLY', 'RECORDED', 'SOURCE_DIFF', 'SOURCE_TRIGGER') AND is_trusted
