-- Parameters: catalog, schema, table, key columns (JSON array, empty for rowid), token.
INSERT INTO openivm_constraints_cache
VALUES ('APPEND_ONLY', true, ?, ?, ?, ?, NULL, NULL, '', '[]', ?, NULL, now()::TIMESTAMP)
