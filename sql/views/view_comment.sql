-- The comment of a view (no row: there is no such view).
SELECT coalesce(comment, '') FROM duckdb_views() WHERE database_name = ? AND schema_name = ? AND view_name = ?
