-- Parameters: kind ('APPEND_ONLY', 'RECORDED', 'SOURCE_DIFF', 'SOURCE_TRIGGER', or '' for any),
-- the table's two catalog spellings (src/home.rs), schema, table.
DELETE FROM openivm_constraints_cache
WHERE constraint_kind IN ('APPEND_ONLY', 'RECORDED', 'SOURCE_DIFF', 'SOURCE_TRIGGER') AND (? IN ('', constraint_kind))
  AND child_catalog IN (?, ?) AND child_schema = ? AND child_table = ?
RETURNING child_table
