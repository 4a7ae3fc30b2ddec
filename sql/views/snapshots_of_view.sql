SELECT table_catalog, table_schema, table_name, snapshot_table
FROM openivm_snapshots
WHERE view_catalog = ? AND view_schema = ? AND view_name = ?
