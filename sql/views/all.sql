SELECT view_schema, view_name FROM openivm_views ORDER BY created_at, rowid
