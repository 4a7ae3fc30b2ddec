-- Parameters: columns (JSON), feed id.
UPDATE openivm.feeds SET columns = ? WHERE feed_id = CAST(? AS BIGINT)
