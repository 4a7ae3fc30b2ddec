-- NOT an openivm bug: a DuckDB 1.5.5 bug that the differential test ran into (seed 12, scenario 12,
-- a "generic" schema), recorded here because it makes the reference recompute of a view fail.
--
-- Plain DuckDB 1.5.5, no extension loaded. A three-way join with a range (BETWEEN) join predicate,
-- a filter mixing two tables, an equality between the range-joined table and the second one, and
-- a GROUP BY, over an EMPTY t1:
--
-- Expected: one empty result (t1 has no rows).
-- Actual:   INTERNAL Error: Failed to bind column reference "z" [..] (bindings: {#[..]})
--           (an internal error; the database stays usable).
-- Without the GROUP BY, or without the filter c.z + b.j > 17, or with rows in t1, the query runs.
--
-- The differential test treats a reference query that DuckDB itself cannot run as "no reference":
-- that check is skipped (neither passed nor failed) and counted in a NOTE line at the end.

CREATE TABLE t0(j INTEGER, k INTEGER, z INTEGER);
CREATE TABLE t1(j INTEGER, z INTEGER, k INTEGER);
INSERT INTO t0 SELECT i % 8, i % 5, i % 23 FROM range(20) r(i);

SELECT count(*)
FROM t0 a, t0 b, t1 c
WHERE a.k = b.j AND a.z BETWEEN c.k AND c.j AND c.z + b.j > 17 AND c.k = b.k
GROUP BY c.z;
