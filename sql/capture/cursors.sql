-- Every view's cursor into every feed.
SELECT view_schema, view_name, feed_id, seq FROM openivm.cursors
