UPDATE openivm_views
SET refreshed_at = now()::TIMESTAMP, refresh_count = refresh_count + 1
WHERE view_schema = ? AND view_name = ?
