-- Parameters: the child's two catalog spellings (src/home.rs), schema, table, columns, then the same for the parent.
DELETE FROM openivm_constraints_cache
WHERE constraint_kind = 'RELY_FK'
  AND child_catalog IN (?, ?) AND child_schema = ? AND child_table = ? AND child_columns = ?
  AND parent_catalog IN (?, ?) AND parent_schema = ? AND parent_table = ? AND parent_columns = ?
