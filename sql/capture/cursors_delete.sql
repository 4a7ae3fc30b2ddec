DELETE FROM openivm.cursors WHERE view_schema = ? AND view_name = ?
