-- Parameters: kind ('APPEND_ONLY' or 'RECORDED'), catalog, schema, table, key columns (JSON
-- array, empty for rowid or a recorded table), token.
INSERT INTO openivm_constraints_cache
VALUES (?, true, ?, ?, ?, ?, NULL, NULL, '', '[]', ?, NULL, now()::TIMESTAMP)
