DELETE FROM openivm_views WHERE view_catalog = ? AND view_schema = ? AND view_name = ?
