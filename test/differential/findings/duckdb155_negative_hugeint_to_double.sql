-- DuckDB 1.5.5, without openivm: a negative HUGEINT cast to DOUBLE is not the nearest double.
-- The first column gives -8.271964487442237e+16; the BIGINT cast and the text parse give the
-- nearest, -8.271964487442238e+16 (the exact value is -82719644874422377, and doubles are 16
-- apart here). The positive value casts exactly. DuckDB 2.0.1 gives the nearest double for all.
-- openivm's AVG on DuckDB 1.5 therefore divides the sum's magnitude and applies the sign after
-- (render/visible.rs, exact_average; test/sql/aggregates/avg.test).
-- Run: duckdb < this file (1.5.5 CLI), or any DuckDB Python.
SELECT CAST(-82719644874422377::HUGEINT AS DOUBLE) AS hugeint_cast,
       CAST(-82719644874422377::BIGINT AS DOUBLE) AS bigint_cast,
       CAST('-82719644874422377' AS DOUBLE) AS parsed,
       CAST(82719644874422377::HUGEINT AS DOUBLE) AS positive_hugeint_cast;
