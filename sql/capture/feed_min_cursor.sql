-- The oldest batch some view of the feed has not seen yet is the one after this.
SELECT coalesce(min(seq), -1)::VARCHAR, count(*)::VARCHAR FROM openivm.cursors WHERE feed_id = CAST(? AS BIGINT)
