DELETE FROM openivm_constraints_cache
WHERE constraint_kind = 'RELY_FK' AND child_catalog = ? AND child_schema = ? AND child_table = ? AND child_columns = ?
  AND parent_catalog = ? AND parent_schema = ? AND parent_table = ? AND parent_columns = ?
RETURNING child_table
