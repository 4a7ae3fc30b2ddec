INSERT INTO openivm_views (view_name, view_catalog, view_schema, query, leaves, kind, data_table, signature,
                           created_at, refreshed_at, refresh_count, view_marker, strategy, strategy_reason, avg_finish)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, now()::TIMESTAMP, NULL, 0, ?, ?, NULLIF(?, ''), NULLIF(?, ''))
