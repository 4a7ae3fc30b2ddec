-- Parameters: view, schema, mode, reason, term counts, delta rows, capture / apply / total ms.
-- started_at: when the refresh began (the writing transaction's start less the time before it).
INSERT INTO openivm_refresh_history
VALUES (?, ?, CAST(now() AS TIMESTAMP) - to_microseconds(CAST(? AS BIGINT)), ?, ?, CAST(? AS INTEGER), CAST(? AS INTEGER),
        CAST(? AS INTEGER), CAST(? AS INTEGER), CAST(? AS BIGINT), CAST(? AS DOUBLE), CAST(? AS DOUBLE), CAST(? AS DOUBLE))
