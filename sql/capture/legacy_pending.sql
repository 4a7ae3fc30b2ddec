-- Tables in which earlier versions kept the writes recorded through openivm and not captured
-- yet (`openivm.pending_<feed id>`), now kept in the feed's log (`feeds::upgrade_legacy_pending`).
-- Parameter: the database holding the metadata.
SELECT table_name FROM duckdb_tables()
WHERE database_name = ? AND schema_name = 'openivm' AND starts_with(table_name, 'pending_')
ORDER BY table_name
