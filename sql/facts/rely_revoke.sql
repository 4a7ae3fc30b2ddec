-- Parameters: as rely_delete.sql.
DELETE FROM openivm_constraints_cache
WHERE constraint_kind = 'RELY_FK'
  AND child_catalog IN (?, ?) AND child_schema = ? AND child_table = ? AND child_columns = ?
  AND parent_catalog IN (?, ?) AND parent_schema = ? AND parent_table = ? AND parent_columns = ?
RETURNING child_table
