-- A DuckDB view's definition, as DuckDB writes it back (CREATE VIEW <name> [(<aliases>)] AS <query>;).
SELECT sql
FROM duckdb_views()
WHERE database_name = ? AND schema_name = ? AND view_name = ?
