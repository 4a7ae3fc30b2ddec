-- The SQL text of a parse tree (a subquery's statement), as DuckDB writes it back.
SELECT json_deserialize_sql(?::JSON)
