DELETE FROM openivm.feeds WHERE feed_id = CAST(? AS BIGINT)
