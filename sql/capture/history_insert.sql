-- Parameters: view, schema, mode, reason, term counts, delta rows, capture / apply / total /
-- setup ms, sources. started_at: when the refresh began (the writing transaction's start less
-- the time before it).
INSERT INTO openivm_refresh_history (view_name, view_schema, started_at, mode, reason, terms_total, terms_fk_pruned,
                                     terms_empty_skipped, terms_run, delta_rows, capture_ms, apply_ms, total_ms, setup_ms,
                                     sources)
VALUES (?, ?, CAST(now() AS TIMESTAMP) - to_microseconds(CAST(? AS BIGINT)), ?, ?, CAST(? AS INTEGER), CAST(? AS INTEGER),
        CAST(? AS INTEGER), CAST(? AS INTEGER), CAST(? AS BIGINT), CAST(? AS DOUBLE), CAST(? AS DOUBLE), CAST(? AS DOUBLE),
        CAST(? AS DOUBLE), ?)
