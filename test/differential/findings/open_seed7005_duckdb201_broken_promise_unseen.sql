-- Open finding of the campaign of 2026-12-06 (stop 38), not investigated yet: the differential's report with its replay script.
-- Rerun: test/differential/differential.py --extension build/release/openivm.duckdb_extension --seed 7005 --batches 300, under DuckDB 2.0.1 (.venv-duckdb2). The replay below is a DuckDB CLI script (for 2.0.1 run it through Python).
-- ====================================================================================================
-- FAILURE: a refresh succeeded after its table broke its append-only promise
-- seed=7005 scenario=3 kind=star fk_mode=catalog batch=10
-- view v1: SELECT SUM(f_1.amt) AS c0, AVG(d3ax.w) * 2 AS c1 FROM f f_1 JOIN d2 AS d2ax USING (d2_id) INNER JOIN d2 d2_2 ON f_1.k IS NOT DISTINCT FROM d2_2.w JOIN d3 AS d3ax USING (d3_id)
-- ---------------------------------------- detail
-- CALL refresh('v1_nofk', fk_pruning := false) returned [('v1_nofk', 15, 0, 0, 15, 97, 34.36, 'incremental', "auto: the 15 delta terms cost about 7045 row reads, a recompute 83; 121.69% of the changed tables' rows changed", 'main', None)]; expected an error containing 'was declared append-only'
-- ---------------------------------------- replay script (DuckDB 1.5.5 CLI, -unsigned)
-- LOAD '/tmp/camp2/openivm.duckdb_extension';
-- -- seed 7005, scenario 3: star (fk_mode=catalog, append-only, modes, lazy, no-kept-plans)
-- CALL openivm_set('openivm_kept_plans', 'false');
-- CREATE MACRO iv_twice(x) AS x * 2;
-- CREATE MACRO iv_tag(s) AS coalesce(CAST(s AS VARCHAR), '?') || '#';
LOAD 'build/release/openivm.duckdb_extension';
-- seed 7005, scenario 3: star (fk_mode=catalog, append-only, modes, lazy, no-kept-plans)
CALL openivm_set('openivm_kept_plans', 'false');
CREATE MACRO iv_twice(x) AS x * 2;
CREATE MACRO iv_tag(s) AS coalesce(CAST(s AS VARCHAR), '?') || '#';
CREATE TABLE d1(d1_id INTEGER PRIMARY KEY, name VARCHAR, w INTEGER);
CREATE TABLE d2(d2_id INTEGER PRIMARY KEY, name VARCHAR, cat VARCHAR, w INTEGER, p DECIMAL(10,2));
CREATE TABLE d3(d3_id INTEGER PRIMARY KEY, name VARCHAR, cat VARCHAR COLLATE NOCASE, w INTEGER, p DECIMAL(10,2));
CREATE TABLE d4(d4_id INTEGER PRIMARY KEY, name VARCHAR, cat VARCHAR COLLATE NOCASE.NOACCENT, w INTEGER, p DECIMAL(10,2));
CREATE TABLE f(fid INTEGER, d1_id INTEGER REFERENCES d1(d1_id), d2_id INTEGER REFERENCES d2(d2_id), d3_id INTEGER REFERENCES d3(d3_id), d4_id INTEGER REFERENCES d4(d4_id), g VARCHAR, qty INTEGER, amt DECIMAL(10,2), big BIGINT, k INTEGER);
CALL openivm_declare_append_only('d1');
CALL openivm_declare_append_only('d3');
CALL openivm_create('v0', 'SELECT count(f.d1_id) FILTER (WHERE f.qty BETWEEN 1 AND 4) AS c0, d2ax.d2_id, d1_1.w + 1 AS c2, SUM(d3_1.w) + 1 AS c3 FROM d3 d3_1 JOIN f ON f.d3_id = d3_1.d3_id JOIN d1 AS d1_1 ON d1_1.d1_id = f.d1_id INNER JOIN d2 AS d2ax ON f.k IS NOT DISTINCT FROM d2ax.w AND f.d2_id = d2ax.d2_id WHERE d3_1.d3_id > 7 AND f.qty BETWEEN -2 AND 7 GROUP BY d2ax.cat IS NULL, 2, 3');
CALL openivm_create('v0_nofk', 'SELECT count(f.d1_id) FILTER (WHERE f.qty BETWEEN 1 AND 4) AS c0, d2ax.d2_id, d1_1.w + 1 AS c2, SUM(d3_1.w) + 1 AS c3 FROM d3 d3_1 JOIN f ON f.d3_id = d3_1.d3_id JOIN d1 AS d1_1 ON d1_1.d1_id = f.d1_id INNER JOIN d2 AS d2ax ON f.k IS NOT DISTINCT FROM d2ax.w AND f.d2_id = d2ax.d2_id WHERE d3_1.d3_id > 7 AND f.qty BETWEEN -2 AND 7 GROUP BY d2ax.cat IS NULL, 2, 3');
CALL openivm_create('v1', 'SELECT SUM(f_1.amt) AS c0, AVG(d3ax.w) * 2 AS c1 FROM f f_1 JOIN d2 AS d2ax USING (d2_id) INNER JOIN d2 d2_2 ON f_1.k IS NOT DISTINCT FROM d2_2.w JOIN d3 AS d3ax USING (d3_id)');
CALL openivm_create('v1_nofk', 'SELECT SUM(f_1.amt) AS c0, AVG(d3ax.w) * 2 AS c1 FROM f f_1 JOIN d2 AS d2ax USING (d2_id) INNER JOIN d2 d2_2 ON f_1.k IS NOT DISTINCT FROM d2_2.w JOIN d3 AS d3ax USING (d3_id)');
-- initial data
INSERT INTO d1 (d1_id, name, w) VALUES (1, 'b', 6), (2, 'a', 13), (3, 'c', NULL), (4, NULL, NULL), (5, NULL, NULL);
INSERT INTO d2 (d2_id, name, cat, w, p) VALUES (1, '', 'e', 11, 198.19), (2, 'e', 'it''s', 15, 793.66), (3, '', NULL, 3, 812.11);
INSERT INTO d3 (d3_id, name, cat, w, p) VALUES (1, '', NULL, 3, 622.41), (2, 'ab', NULL, 11, 484.87), (3, 'A', 'it''s', NULL, 0.00), (4, 'c', 'B', 19, NULL), (5, NULL, NULL, 19, 286.78), (6, 'A', 'e', 12, 1.08), (7, 'a', '', 25, -94.69), (8, 'B', 'a', 0, 941.53);
INSERT INTO d4 (d4_id, name, cat, w, p) VALUES (1, 'ab', 'b', -3, 480.78), (2, 'b', 'c', 7, 831.08), (3, 'it''s', 'A', 9, 565.44), (4, 'A', 'c', 12, 534.02), (5, 'A', '', 6, 267.17), (6, 'e', 'a', 17, 160.84);
INSERT INTO f (fid, d1_id, d2_id, d3_id, d4_id, g, qty, amt, big, k) VALUES (-1000, 1, NULL, 6, 1, 'ab', -5, 741.99, 4000000000000000005, 3), (22, 3, 3, 1, 2, 'é', 18, 430.03, 0, 0), (0, 3, 2, 6, 2, 'e', 19, 835.28, -26, NULL), (15, 4, 2, 2, 1, 'B', 0, 958.65, 0, 3), (2, 1, 2, 6, 3, 'e', 5, 0.00, 242190987207, 2), (10, 1, 2, 6, NULL, 'it''s', NULL, -91.8, 0, 1), (9, 3, 3, 7, 2, 'e', 15, NULL, 660019646761, 4), (16, 1, 3, 8, 6, NULL, NULL, 265.52, 4000000000000000001, 3);
INSERT INTO f (fid, d1_id, d2_id, d3_id, d4_id, g, qty, amt, big, k) VALUES (15, 4, 2, 2, 1, 'B', 0, 958.65, 0, 3), (10, 1, 2, 6, NULL, 'it''s', NULL, -91.80, 0, 1), (9, 3, 3, 7, 2, 'e', 15, NULL, 660019646761, 4), (9, 3, 3, 7, 2, 'e', 15, NULL, 660019646761, 4), (9, 3, 3, 7, 2, 'e', 15, NULL, 660019646761, 4), (0, 3, 2, 6, 2, 'e', 19, 835.28, -26, NULL), (9, 3, 3, 7, 2, 'e', 15, NULL, 660019646761, 4), (10, 1, 2, 6, NULL, 'it''s', NULL, -91.80, 0, 1);
INSERT INTO f (fid, d1_id, d2_id, d3_id, d4_id, g, qty, amt, big, k) VALUES (0, 3, 2, 6, 2, 'e', 19, 835.28, -26, NULL), (9, 3, 3, 7, 2, 'e', 15, NULL, 660019646761, 4), (10, 1, 2, 6, NULL, 'it''s', NULL, -91.80, 0, 1), (9, 3, 3, 7, 2, 'e', 15, NULL, 660019646761, 4), (2, 1, 2, 6, 3, 'e', 5, 0.00, 242190987207, 2), (-1000, 1, NULL, 6, 1, 'ab', -5, 741.99, 4000000000000000005, 3), (22, 3, 3, 1, 2, 'é', 18, 430.03, 0, 0), (10, 1, 2, 6, NULL, 'it''s', NULL, -91.80, 0, 1);
INSERT INTO f (fid, d1_id, d2_id, d3_id, d4_id, g, qty, amt, big, k) VALUES (22, 3, 3, 1, 2, 'é', 18, 430.03, 0, 0), (10, 1, 2, 6, NULL, 'it''s', NULL, -91.80, 0, 1), (0, 3, 2, 6, 2, 'e', 19, 835.28, -26, NULL), (15, 4, 2, 2, 1, 'B', 0, 958.65, 0, 3), (9, 3, 3, 7, 2, 'e', 15, NULL, 660019646761, 4), (15, 4, 2, 2, 1, 'B', 0, 958.65, 0, 3), (10, 1, 2, 6, NULL, 'it''s', NULL, -91.80, 0, 1), (10, 1, 2, 6, NULL, 'it''s', NULL, -91.80, 0, 1);
INSERT INTO f (fid, d1_id, d2_id, d3_id, d4_id, g, qty, amt, big, k) VALUES (5, 4, 2, 6, 5, 'é', 4, 0.00, -4000000000000000008, 1), (15, 1, 2, 3, 3, '', -4, 782.81, 1000000000000, 7), (14, 5, 2, 2, 1, 'a', 0, -62.99, 1000000000000, 6), (0, 2, 2, 4, 4, 'e', 2, 895.27, 0, 2), (-1, 4, 1, 7, 2, NULL, 8, 810.54, -352159413912, 4), (20, 1, 2, 7, 3, 'é', 5, 174.53, 1000000000000, 2), (7, NULL, 1, 1, 1, 'a', 18, 438.51, 462454749890, 1), (0, 4, 3, 4, 6, 'é', 8, 872.98, NULL, 0);
INSERT INTO f (fid, d1_id, d2_id, d3_id, d4_id, g, qty, amt, big, k) VALUES (16, 2, 2, 4, 5, 'é', -1, 328.87, 4000000000000000001, 1), (23, NULL, 2, 1, 4, 'it''s', 11, 837.1, 1000000000000, 7), (22, 1, 1, 7, 6, 'a', 20, -51.19, 0, NULL), (25, 2, 2, 6, 5, '', 10, 317.65, -923003508732, 7), (19, 1, 2, 7, 3, 'it''s', 8, 748.5, -66272168995, 3), (0, 5, 1, 5, 5, 'B', 23, 362.92, NULL, 5), (-1, NULL, 3, 7, 4, 'A', 7, 0.00, -657780467045, 4), (15, 2, 1, 1, 2, 'A', 14, 946.93, 1000000000000, 2);
INSERT INTO f (fid, d1_id, d2_id, d3_id, d4_id, g, qty, amt, big, k) VALUES (16, 5, 2, 6, 5, 'a', 1, 455.79, 366135039270, 4), (20, 1, 3, NULL, 4, 'ab', 11, 814.33, NULL, 1), (22, 1, 2, 6, 6, 'it''s', 23, 689.57, 34, 4), (14, 5, 1, 6, 1, 'b', -1000, 7.39, 1000000000000, 0), (16, 1, 2, 2, 2, 'it''s', 0, 465.84, 1000000000000, 2), (21, 3, 2, 7, 2, 'é', 19, 819.99, 48, 3), (19, NULL, 2, 4, 4, 'it''s', -5, 214.18, 0, 6), (5, 1, 1, 5, 2, 'ab', 9, NULL, 527966983645, 6), (16, 5, 2, 6, 5, 'a', 1, 455.79, 366135039270, 4);
INSERT INTO f (fid, d1_id, d2_id, d3_id, d4_id, g, qty, amt, big, k) VALUES (4, 5, 2, 5, 2, 'B', 0, 21.16, -86408569625, 1), (-2, 4, 3, 8, 1, 'B', 13, 808.53, 688758006537, 0), (25, NULL, 2, 3, 4, NULL, 25, 588.14, -134111217212, 3), (15, 5, 3, 7, 2, '', 17, 0.00, 0, NULL), (19, 2, 2, 7, 4, 'b', 7, 444.7, 0, 0), (4, 5, 2, 5, 2, 'B', 0, 21.16, -86408569625, 1);
CALL refresh('v0', mode := 'incremental');
CALL refresh('v0_nofk', fk_pruning := false);
CALL refresh('v1', mode := 'auto');
CALL refresh('v1_nofk', fk_pruning := false);
-- batch 1 (mixed)
DELETE FROM f WHERE qty BETWEEN 2 AND 14;
INSERT INTO f (fid, d1_id, d2_id, d3_id, d4_id, g, qty, amt, big, k) VALUES (5, 3, 2, 7, 6, 'A', 24, 766.99, 0, 7), (6, 2, 1, 5, NULL, NULL, 4, 511.37, 1000000000000, 5), (5, 3, 2, 7, 6, 'A', 24, 766.99, 0, 7);
CALL refresh('v1', mode := 'incremental');
CALL refresh('v0_nofk', fk_pruning := false);
CALL refresh('v0', mode := 'incremental');
-- batch 2 (grow_all)
INSERT INTO d1 (d1_id, name, w) VALUES (6, 'c', -4);
INSERT INTO d2 (d2_id, name, cat, w, p) VALUES (4, 'A', 'e', NULL, 769.6);
INSERT INTO d3 (d3_id, name, cat, w, p) VALUES (9, 'b', 'B', 8, 257.61);
INSERT INTO d4 (d4_id, name, cat, w, p) VALUES (7, 'c', 'ab', 7, 167.9), (8, 'c', 'it''s', 17, 195.52), (9, NULL, 'e', 1000, 714.57);
INSERT INTO f (fid, d1_id, d2_id, d3_id, d4_id, g, qty, amt, big, k) VALUES (6, 5, 2, 9, 4, 'b', 21, 187.36, -38, NULL), (11, 5, 2, 8, 2, 'e', NULL, 145.77, 0, 2);
CALL refresh('v1_nofk', fk_pruning := false);
-- batch 3 (mixed)
DELETE FROM d4 WHERE d4_id IN (8, 7);
INSERT INTO d4 (d4_id, name, cat, w, p) VALUES (7, NULL, 'it''s', 21, 0.00), (10, 'é', 'c', 11, NULL), (11, 'A', 'e', 7, 58.57);
SELECT * FROM openivm_refresh_all(mode := 'incremental');
-- batch 4 (dim_reinsert)
DELETE FROM d4 WHERE d4_id = 11 AND name = 'A' AND cat = 'e' AND w = 7 AND p = 58.57;
INSERT INTO d4 (d4_id, name, cat, w, p) VALUES (11, 'A', 'e', 7, 58.57);
-- a broken promise: a DELETE from d3 (declared append-only), then new rows
CALL refresh('v0_nofk', fk_pruning := false);
CALL refresh('v0', mode := 'auto');
-- batch 5 (touch_all)
INSERT INTO d1 (d1_id, name, w) VALUES (7, 'it''s', 5), (8, '', 6), (9, 'A', 22), (10, 'b', 8), (11, 'B', -2);
UPDATE d2 SET name = 'ab', w = 15 WHERE name LIKE 'B%';
INSERT INTO d3 (d3_id, name, cat, w, p) VALUES (10, 'B', 'ab', -1000, 373.45);
DELETE FROM d4 WHERE d4_id IN (11, 10, 9);
DELETE FROM f WHERE fid = 22 AND d1_id = 1 AND d2_id = 2 AND d3_id = 6 AND d4_id = 6 AND g = 'it''s' AND qty = 23 AND amt = 689.57 AND big = 34 AND k = 4;
INSERT INTO f (fid, d1_id, d2_id, d3_id, d4_id, g, qty, amt, big, k) VALUES (22, 1, 2, 6, 6, 'it''s', 23, 689.57, 34, 4);
CALL refresh('v0', mode := 'incremental');
CALL refresh('v1', mode := 'auto');
-- batch 6 (empty)
CALL refresh('v1_nofk', fk_pruning := false);
CALL refresh('v0_nofk', fk_pruning := false);
-- batch 7 (mixed)
INSERT INTO d1 (d1_id, name, w) VALUES (12, '', 15);
INSERT INTO d4 (d4_id, name, cat, w, p) VALUES (12, 'b', 'a', 9, -76.79);
UPDATE f SET k = NULL, big = 0 WHERE d3_id BETWEEN 2 AND 3;
DELETE FROM d2 WHERE d2_id = 4 AND name = 'A' AND cat = 'e' AND w IS NULL AND p = 769.60;
INSERT INTO d2 (d2_id, name, cat, w, p) VALUES (4, 'A', 'e', NULL, 769.60);
CALL refresh('v0_nofk', fk_pruning := false);
CALL refresh('v0', mode := 'full');
-- batch 8 (mixed)
UPDATE f SET g = 'é', k = 5 WHERE d1_id BETWEEN 3 AND 3;
CALL refresh('v0', mode := 'auto');
CALL refresh('v0_nofk', fk_pruning := false);
-- batch 9 (dim_insert)
INSERT INTO d2 (d2_id, name, cat, w, p) VALUES (5, 'B', NULL, -3, 148.15), (6, 'A', 'e', 4, 368.19), (7, 'it''s', 'b', 4, 380.37);
INSERT INTO d1 (d1_id, name, w) VALUES (13, 'b', NULL), (14, NULL, 16), (15, '', -1000);
INSERT INTO d4 (d4_id, name, cat, w, p) VALUES (13, 'a', 'a', 14, NULL);
-- batch 10 (dim_insert_fact)
INSERT INTO d3 (d3_id, name, cat, w, p) VALUES (11, 'c', NULL, -3, NULL);
INSERT INTO d1 (d1_id, name, w) VALUES (16, NULL, 3), (17, 'e', 18), (18, NULL, 6);
INSERT INTO d2 (d2_id, name, cat, w, p) VALUES (8, 'c', 'c', -2, NULL);
INSERT INTO f (fid, d1_id, d2_id, d3_id, d4_id, g, qty, amt, big, k) VALUES (2, 8, 1, 8, 6, 'é', 24, 62.29, -4, 2), (11, 13, 1, 5, 7, 'é', 14, 685.75, 4000000000000000008, NULL), (21, 11, 7, 8, NULL, 'B', NULL, 147.23, 0, 3);
UPDATE f SET d2_id = 8 WHERE amt BETWEEN 7.39 AND 588.14;
UPDATE f SET d3_id = 11 WHERE big BETWEEN -38 AND -38;
-- a broken promise: a DELETE from d3 (declared append-only), then new rows
DELETE FROM d3 WHERE d3_id IN (10);
INSERT INTO d3 (d3_id, name, cat, w, p) VALUES (12, 'a', NULL, -1000, 266.37);
INSERT INTO d3 (d3_id, name, cat, w, p) VALUES (13, 'B', NULL, 10, 745.13);
CALL refresh('v1_nofk', fk_pruning := false);
