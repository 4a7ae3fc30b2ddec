-- Every view's cursor into every feed, with the feed's watermark when it last moved.
SELECT view_schema, view_name, feed_id, seq, watermark FROM openivm.cursors
