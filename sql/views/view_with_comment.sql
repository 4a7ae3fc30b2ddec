-- The schema and name of the views of a database that carry a comment (openivm's marker on a
-- maintained view: found under another name after ALTER VIEW ... RENAME).
SELECT schema_name, view_name FROM duckdb_views() WHERE database_name = ? AND comment = ?
