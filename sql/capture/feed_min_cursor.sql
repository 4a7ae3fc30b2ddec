-- The oldest batch some view of the feed has not seen yet is the one after this (-1: none). A
-- view whose cursor is -1 recomputes at its next refresh and needs no logged batch.
SELECT coalesce(min(seq) FILTER (WHERE seq >= 0), -1) FROM openivm.cursors WHERE feed_id = CAST(? AS BIGINT)
