DELETE FROM openivm_views WHERE view_schema = ? AND view_name = ?
