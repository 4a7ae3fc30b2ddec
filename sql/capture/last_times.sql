-- What the latest refreshes of a view cost, for auto mode in a new instance: the apply and
-- capture times of its latest recompute (a full refresh or the initial fill, whose capture is
-- the start of its change state: for a diff source, a snapshot about as dear as a diff) and the
-- total and capture times of its latest incremental refresh (NULL where there was none), each
-- without the one-time work of starting trigger feeds (setup_ms).
-- Parameters: view schema, view name (twice).
SELECT f.apply_ms::VARCHAR, f.capture_ms::VARCHAR, i.total_ms::VARCHAR, i.capture_ms::VARCHAR
FROM (SELECT 1) AS one
LEFT JOIN (SELECT total_ms - coalesce(setup_ms, 0) AS total_ms, capture_ms - coalesce(setup_ms, 0) AS capture_ms
           FROM openivm_refresh_history WHERE view_schema = ? AND view_name = ? AND mode = 'incremental'
           ORDER BY started_at DESC LIMIT 1) AS i ON true
LEFT JOIN (SELECT apply_ms, capture_ms - coalesce(setup_ms, 0) AS capture_ms
           FROM openivm_refresh_history WHERE view_schema = ? AND view_name = ? AND mode = 'full'
           ORDER BY started_at DESC LIMIT 1) AS f ON true
