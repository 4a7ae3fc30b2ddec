-- Where one-part names resolve on the extension's connection.
SELECT current_database(), current_schema()
