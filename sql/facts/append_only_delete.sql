DELETE FROM openivm_constraints_cache
WHERE constraint_kind = 'APPEND_ONLY' AND child_catalog = ? AND child_schema = ? AND child_table = ?
RETURNING child_table
