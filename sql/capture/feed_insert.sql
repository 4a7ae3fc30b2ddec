-- Parameters: id, catalog, schema, table, columns, source, key ('' = rowid), watermark ('' = none),
-- row_count, size_seen.
INSERT INTO openivm.feeds
VALUES (CAST(? AS BIGINT), ?, ?, ?, ?, ?, nullif(?, ''), nullif(?, ''), CAST(? AS BIGINT), CAST(? AS BIGINT), 0, 0)
