-- Connections open on this database, the extension's own included (polled by the watchdog).
SELECT count::BIGINT AS connections FROM duckdb_connection_count()
