SELECT (coalesce(max(feed_id), 0) + 1)::VARCHAR FROM openivm.feeds
