DELETE FROM openivm_snapshots WHERE view_catalog = ? AND view_schema = ? AND view_name = ?
