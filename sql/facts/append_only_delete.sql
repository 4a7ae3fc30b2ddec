-- Parameters: the table's two catalog spellings (src/home.rs), schema, table.
DELETE FROM openivm_constraints_cache
WHERE constraint_kind = 'APPEND_ONLY' AND child_catalog IN (?, ?) AND child_schema = ? AND child_table = ?
RETURNING child_table
