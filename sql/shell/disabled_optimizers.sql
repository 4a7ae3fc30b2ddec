-- The optimizers DuckDB skips: one setting for the whole database, not per connection.
SELECT current_setting('disabled_optimizers')
