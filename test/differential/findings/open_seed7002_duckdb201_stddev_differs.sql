-- Open finding of the campaign of 2026-12-06 (stop 38), not investigated yet: the differential's report with its replay script.
-- Rerun: test/differential/differential.py --extension build/release/openivm.duckdb_extension --seed 7002 --batches 300, under DuckDB 2.0.1 (.venv-duckdb2). The replay below is a DuckDB CLI script (for 2.0.1 run it through Python).
-- ====================================================================================================
-- FAILURE: view differs from recompute
-- seed=7002 scenario=3 kind=chain fk_mode=catalog batch=20
-- view v2: SELECT SUM(d2.w) + 1 AS c0, d1_1.cat, STDDEV_SAMP(d2.w) AS c2, COUNT(*) * 2 AS c3 FROM f f_1 INNER JOIN d1 AS d1_1 USING (d1_id) INNER JOIN e AS e_1 USING (e_id) JOIN d2 USING (d2_id) WHERE d1_1.d2_id IS NOT NULL GROUP BY d1_1.cat HAVING sum(1) <> 2
-- ---------------------------------------- detail
-- v2_nofk: 2 row(s) in the view but not in the recompute, 2 row(s) missing
-- rows in the view, not in the recompute (FROM v EXCEPT ALL query):
--   (247, 'B', 2.138089935299395, 28)
--   (-807, None, 341.3435870855705, 20)
-- rows in the recompute, not in the view (query EXCEPT ALL FROM v):
--   (247, 'b', 2.1380899352993956, 28)
--   (-807, None, 341.34358708557045, 20)
LOAD 'build/release/openivm.duckdb_extension';
-- seed 7002, scenario 3: chain (fk_mode=catalog, append-only, modes, writes)
CREATE MACRO iv_twice(x) AS x * 2;
CREATE MACRO iv_tag(s) AS coalesce(CAST(s AS VARCHAR), '?') || '#';
CREATE TABLE d2(d2_id INTEGER PRIMARY KEY, name VARCHAR, cat VARCHAR, w INTEGER, seq BIGINT);
CREATE TABLE d1(d1_id INTEGER PRIMARY KEY, d2_id INTEGER REFERENCES d2(d2_id), name VARCHAR, cat VARCHAR COLLATE NOCASE, w INTEGER, p DECIMAL(10,2));
CREATE TABLE e(e_id INTEGER PRIMARY KEY, name VARCHAR, cat VARCHAR COLLATE NOCASE, w INTEGER, p DECIMAL(10,2), seq BIGINT);
CREATE TABLE f(fid INTEGER, d1_id INTEGER REFERENCES d1(d1_id), e_id INTEGER REFERENCES e(e_id), g VARCHAR, qty INTEGER, amt DECIMAL(10,2), big BIGINT, k INTEGER, seq BIGINT);
CALL openivm_declare_append_only('d2', key := 'seq');
CREATE TABLE w_stage_d2 AS SELECT * FROM d2 LIMIT 0;
CALL openivm_declare_append_only('d1');
CALL openivm_declare_append_only('e', key := 'seq');
CREATE TABLE w_stage_e AS SELECT * FROM e LIMIT 0;
CALL openivm_declare_append_only('f', key := 'seq');
CREATE TABLE w_stage_f AS SELECT * FROM f LIMIT 0;
CALL openivm_create('v0', 'SELECT coalesce(SUM(fax.fid), 0) AS c0, eax.e_id, eax.cat AS c2, eax.w AS c3, COUNT(fax.e_id) AS c4, COUNT(fax.amt) + SUM(fax.amt) AS c5 FROM f fax JOIN e eax USING (e_id) WHERE sign(fax.big) >= 0 AND fax.fid + eax.w > 20 AND CAST(eax.p AS INTEGER) % 3 = 0 GROUP BY c3, c2, eax.e_id');
CALL openivm_create('v0_nofk', 'SELECT coalesce(SUM(fax.fid), 0) AS c0, eax.e_id, eax.cat AS c2, eax.w AS c3, COUNT(fax.e_id) AS c4, COUNT(fax.amt) + SUM(fax.amt) AS c5 FROM f fax JOIN e eax USING (e_id) WHERE sign(fax.big) >= 0 AND fax.fid + eax.w > 20 AND CAST(eax.p AS INTEGER) % 3 = 0 GROUP BY c3, c2, eax.e_id');
CALL openivm_create('v0_inc', 'SELECT coalesce(SUM(fax.fid), 0) AS c0, eax.e_id, eax.cat AS c2, eax.w AS c3, COUNT(fax.e_id) AS c4, COUNT(fax.amt) + SUM(fax.amt) AS c5 FROM f fax JOIN e eax USING (e_id) WHERE sign(fax.big) >= 0 AND fax.fid + eax.w > 20 AND CAST(eax.p AS INTEGER) % 3 = 0 GROUP BY c3, c2, eax.e_id');
CALL openivm_create('v1', 'SELECT f_1.qty AS c0, TRY_CAST(d1.p AS SMALLINT) AS c1 FROM f f_1 JOIN d1 ON f_1.d1_id = d1.d1_id WHERE f_1.e_id <> 6 AND d1.p >= (SELECT sum(sq_in.amt) FROM f AS sq_in WHERE d1.d1_id = sq_in.d1_id)');
CALL openivm_create('v1_nofk', 'SELECT f_1.qty AS c0, TRY_CAST(d1.p AS SMALLINT) AS c1 FROM f f_1 JOIN d1 ON f_1.d1_id = d1.d1_id WHERE f_1.e_id <> 6 AND d1.p >= (SELECT sum(sq_in.amt) FROM f AS sq_in WHERE d1.d1_id = sq_in.d1_id)');
CALL openivm_create('v2', 'SELECT COUNT(*) * 2 AS c0 FROM f f_1 INNER JOIN d1 AS d1_1 USING (d1_id) INNER JOIN d2 ON d1_1.d2_id = d2.d2_id INNER JOIN e ON e.e_id = f_1.e_id WHERE NOT (d1_1.d1_id IS DISTINCT FROM d2.w) AND (d2.w % 2 = 1 OR d1_1.p BETWEEN 533.86 AND 576.29) AND coalesce(d1_1.d1_id, 0) > 9');
CALL openivm_create('v2_nofk', 'SELECT COUNT(*) * 2 AS c0 FROM f f_1 INNER JOIN d1 AS d1_1 USING (d1_id) INNER JOIN d2 ON d1_1.d2_id = d2.d2_id INNER JOIN e ON e.e_id = f_1.e_id WHERE NOT (d1_1.d1_id IS DISTINCT FROM d2.w) AND (d2.w % 2 = 1 OR d1_1.p BETWEEN 533.86 AND 576.29) AND coalesce(d1_1.d1_id, 0) > 9');
-- initial data
INSERT INTO d2 (d2_id, name, cat, w, seq) VALUES (1, 'A', 'e', NULL, 1), (2, 'ab', 'c', 14, 2), (3, 'é', NULL, 25, 3), (4, 'it''s', 'é', 14, 4), (5, 'it''s', 'b', 15, 5), (6, 'é', 'a', 17, 6), (7, 'a', 'c', 14, 7), (8, 'it''s', '', -1000, 8);
INSERT INTO d1 (d1_id, d2_id, name, cat, w, p) VALUES (1, 3, '', NULL, 4, NULL), (2, 6, 'c', 'b', 21, 373.27), (3, 8, 'B', 'a', 15, 799.71), (4, 6, 'é', 'a', 10, 836.27), (5, 1, 'A', 'a', 1, 364.44), (6, 6, 'b', 'b', 13, 555.37);
DELETE FROM w_stage_e;
INSERT INTO w_stage_e (e_id, name, cat, w, p, seq) VALUES (1, NULL, NULL, 7, 442.8, 1), (2, 'a', 'B', 16, 886.88, 2), (3, 'e', 'é', 20, -75.54, 3), (4, 'é', 'it''s', -5, 157.93, 4), (5, 'é', 'it''s', 14, 22.97, 5), (6, 'a', 'b', 4, 415.56, 6), (7, 'a', 'B', -1, NULL, 7), (8, 'b', 'é', 6, NULL, 8);
CALL openivm_insert('e', 'SELECT e_id, name, cat, w, p, seq FROM w_stage_e');
INSERT INTO f (fid, d1_id, e_id, g, qty, amt, big, k, seq) VALUES (13, 6, 5, 'b', NULL, NULL, 14, 5, 1), (2, 6, NULL, NULL, -5, 551.64, 4000000000000000000, 0, 2), (-2, 3, 4, 'b', -2, 900.76, -26, 6, 3), (4, 2, 5, 'a', 9, 965.14, -29, 4, 4), (7, 2, 8, 'b', 0, 584.48, -4000000000000000005, NULL, 5), (-1000, 2, 5, 'A', 25, 393.16, NULL, 3, 6), (10, 6, 5, 'ab', NULL, 408.72, -41, 0, 7), (4, 2, 6, 'ab', 19, NULL, -14, 4, 8);
DELETE FROM w_stage_f;
INSERT INTO w_stage_f (fid, d1_id, e_id, g, qty, amt, big, k, seq) VALUES (10, 1, 4, NULL, 1000, 933.94, 0, 7, 9), (17, 4, 5, 'A', 5, 727.38, 44, 5, 10), (16, 6, NULL, 'b', 0, 891.05, 1000000000000, 2, 11), (-2, 2, 8, 'a', 19, 165.22, 1000000000000, 6, 12), (20, 5, 1, NULL, 15, 99999.99, 1000000000000, 1, 13), (23, 6, 7, 'A', 20, 831.02, -25, 4, 14), (8, 4, 6, 'é', 5, 268.63, -45, 0, 15), (2, 3, 3, 'a', 24, 119.26, -624690184770, 5, 16);
CALL openivm_insert('f', 'SELECT fid, d1_id, e_id, g, qty, amt, big, k, seq FROM w_stage_f');
DELETE FROM w_stage_f;
INSERT INTO w_stage_f (fid, d1_id, e_id, g, qty, amt, big, k, seq) VALUES (6, 3, 4, 'it''s', 5, 250.37, 4000000000000000005, 2, 17), (7, 3, 7, 'é', 2, 653.46, 1000000000000, 5, 18), (19, 3, 3, 'ab', 11, NULL, 0, 0, 19), (12, 1, 4, 'A', NULL, 0.00, 1000000000000, 4, 20), (21, 6, 3, 'c', -1, 413.99, -520978805743, 1, 21), (-2, 5, 5, 'b', 13, 90.09, 0, 1, 22), (1000, NULL, 8, NULL, 9, 204.55, -26, 5, 23), (1000, 4, NULL, 'b', NULL, 689.79, -9, 1, 24);
CALL openivm_insert('f', 'SELECT fid, d1_id, e_id, g, qty, amt, big, k, seq FROM w_stage_f');
INSERT INTO f (fid, d1_id, e_id, g, qty, amt, big, k, seq) VALUES (8, 1, 7, 'é', 5, 920.82, 1000000000000, 0, 25), (11, 5, 3, NULL, NULL, 202.76, 441355448283, 4, 26), (9, 1, 6, 'A', 16, 298.37, 1000000000000, 7, 27), (1, 1, 4, '', 25, 0.00, 0, 1, 28), (0, 3, 7, '', NULL, 526.29, 1000000000000, 2, 29), (1000, 6, 6, 'b', 0, 594.72, 1000000000000, 4, 30), (11, 1, 1, 'B', -5, 500.86, -11, 1, 31), (2, NULL, 6, 'ab', NULL, 850.7, -961732838051, 6, 32), (8, 1, 7, 'é', 5, 920.82, 1000000000000, 0, 25);
CALL refresh('v0');
CALL refresh('v0_nofk', fk_pruning := false);
CALL refresh('v0_inc', mode := 'incremental');
CALL refresh('v1', mode := 'full');
CALL refresh('v1_nofk', fk_pruning := false);
CALL refresh('v2', mode := 'auto');
CALL refresh('v2_nofk', fk_pruning := false);
-- batch 1 (mixed)
CALL openivm_update('d2', 'w = NULL, cat = NULL', 'seq = 1');
CALL openivm_delete('d2', 'd2_id IN (7, 4, 2)');
CALL openivm_update('d2', 'cat = upper(cat)', 'w BETWEEN 25 AND 25');
INSERT INTO e (e_id, name, cat, w, p, seq) VALUES (9, 'c', 'e', NULL, 466.59, 9), (10, 'ab', 'B', 1000, 79.4, 10);
CALL openivm_update('e', 'name = ''A''', 'e_id BETWEEN 10 AND 10');
INSERT INTO e (e_id, name, cat, w, p, seq) VALUES (11, 'a', 'a', 19, 880.02, 11), (12, 'é', 'it''s', 0, 902.88, 12);
CALL refresh('v0', mode := 'incremental');
CALL refresh('v0_nofk', fk_pruning := false);
CALL refresh('v0_inc', mode := 'incremental');
CALL refresh('v1', mode := 'auto');
CALL refresh('v1_nofk', fk_pruning := false);
CALL refresh('v2', mode := 'auto');
CALL refresh('v2_nofk', fk_pruning := false);
-- batch 2 (grow_all)
INSERT INTO d2 (d2_id, name, cat, w, seq) VALUES (9, 'ab', 'b', 1, 9), (10, 'b', 'it''s', NULL, 10), (11, 'é', 'it''s', 11, 11);
INSERT INTO d1 (d1_id, d2_id, name, cat, w, p) VALUES (7, 8, 'é', NULL, 4, 469.86), (8, 9, 'it''s', NULL, 1, 482.84);
DELETE FROM w_stage_e;
INSERT INTO w_stage_e (e_id, name, cat, w, p, seq) VALUES (13, 'B', 'ab', 20, -90.97, 13), (14, 'e', 'it''s', NULL, 777.02, 14);
CALL openivm_insert('e', 'SELECT e_id, name, cat, w, p, seq FROM w_stage_e');
DELETE FROM w_stage_f;
INSERT INTO w_stage_f (fid, d1_id, e_id, g, qty, amt, big, k, seq) VALUES (20, 3, 8, 'e', 4, 706.28, NULL, 7, 33), (14, 4, 8, 'a', NULL, 714.48, -571994258187, 2, 34), (1000, 7, 11, 'e', 24, 400.62, 4000000000000000005, 6, 35), (20, 3, 8, 'e', 4, 706.28, NULL, 7, 33);
CALL openivm_insert('f', 'SELECT fid, d1_id, e_id, g, qty, amt, big, k, seq FROM w_stage_f');
CALL refresh('v0');
CALL refresh('v0_nofk', fk_pruning := false);
CALL refresh('v0_inc', mode := 'incremental');
CALL refresh('v1', mode := 'incremental');
CALL refresh('v1_nofk', fk_pruning := false);
CALL refresh('v2');
SELECT * FROM openivm_verify('v2', repair := true);
CALL refresh('v2_nofk', fk_pruning := false);
-- batch 3 (mixed)
DELETE FROM w_stage_e;
INSERT INTO w_stage_e (e_id, name, cat, w, p, seq) VALUES (15, 'a', 'a', NULL, 196.64, 15), (16, 'B', 'ab', 20, 109.19, 16), (17, NULL, NULL, 17, 154.16, 17), (18, 'a', 'A', -5, 763.22, 18);
CALL openivm_insert('e', 'SELECT e_id, name, cat, w, p, seq FROM w_stage_e');
SELECT * FROM openivm_refresh_all(mode := 'incremental');
-- batch 4 (single)
INSERT INTO d1 (d1_id, d2_id, name, cat, w, p) VALUES (9, 6, 'a', 'é', 13, 216.33), (10, 11, 'e', 'é', 14, 79.45), (11, 3, 'e', '', 8, 975.32), (12, 1, 'b', 'B', NULL, 573.41), (13, 6, 'it''s', 'b', 17, NULL);
INSERT INTO d1 (d1_id, d2_id, name, cat, w, p) VALUES (14, 8, 'c', '', 15, 946.55), (15, 5, 'B', 'é', 18, 787.77);
INSERT INTO d1 (d1_id, d2_id, name, cat, w, p) VALUES (16, NULL, 'B', 'A', 21, NULL), (17, 3, NULL, 'e', 9, 765.78), (18, 8, '', 'B', 19, 821.62), (19, 3, 'ab', '', 9, 99999.99);
INSERT INTO d1 (d1_id, d2_id, name, cat, w, p) VALUES (20, 9, 'é', 'e', 1000, NULL), (21, 10, NULL, 'b', 14, 356.04);
INSERT INTO d1 (d1_id, d2_id, name, cat, w, p) VALUES (22, 6, 'b', NULL, 10, 617.43), (23, 1, 'b', 'e', 23, 219.29), (24, 6, 'é', 'e', 1000, 964.29), (25, 6, 'B', 'e', 1, NULL), (26, 9, 'ab', '', -1, 463.35), (27, 5, 'c', 'A', 21, 814.46);
INSERT INTO d1 (d1_id, d2_id, name, cat, w, p) VALUES (28, 8, 'it''s', '', NULL, 2.13);
CALL refresh('v2_nofk', fk_pruning := false);
CALL refresh('v0_nofk', fk_pruning := false);
CALL refresh('v0_inc', mode := 'incremental');
CALL refresh('v2');
CALL refresh('v1', mode := 'incremental');
CALL refresh('v0', mode := 'auto');
CALL refresh('v1_nofk', fk_pruning := false);
-- batch 5 (mixed)
CALL openivm_delete('f', 'g = ''it''''s''');
INSERT INTO d1 (d1_id, d2_id, name, cat, w, p) VALUES (29, 3, 'a', 'b', 8, 419.32), (30, 9, 'b', 'A', -2, NULL), (31, 6, '', 'a', 0, 54.55);
CALL openivm_update('d2', 'name = ''c'', cat = upper(cat)', 'd2_id = 8');
CALL openivm_delete('e', 'e_id IN (18, 17) AND w = 0');
CALL refresh('v0', mode := 'full');
CALL refresh('v0_nofk', fk_pruning := false);
SELECT * FROM openivm_verify('v0_nofk');
CALL refresh('v0_inc', mode := 'incremental');
CALL refresh('v1');
CALL refresh('v1_nofk', fk_pruning := false);
CALL refresh('v2');
CALL refresh('v2_nofk', fk_pruning := false);
-- batch 6 (grow_all)
INSERT INTO d2 (d2_id, name, cat, w, seq) VALUES (12, 'b', 'B', NULL, 12);
INSERT INTO d1 (d1_id, d2_id, name, cat, w, p) VALUES (32, 11, 'ab', NULL, 2, 439.52), (33, 12, 'a', '', 1000, 203.96);
INSERT INTO e (e_id, name, cat, w, p, seq) VALUES (19, NULL, 'it''s', 15, 702.44, 19), (20, NULL, '', 2, 799.89, 20);
DELETE FROM w_stage_f;
INSERT INTO w_stage_f (fid, d1_id, e_id, g, qty, amt, big, k, seq) VALUES (15, 5, 14, '', 23, 99999.99, -60138166102, 0, 36), (0, 22, 14, 'é', -3, 167.09, 0, 0, 37);
CALL openivm_insert('f', 'SELECT fid, d1_id, e_id, g, qty, amt, big, k, seq FROM w_stage_f');
CALL refresh('v0', mode := 'auto');
CALL refresh('v0_nofk', fk_pruning := false);
CALL refresh('v0_inc', mode := 'incremental');
CALL refresh('v1', mode := 'incremental');
CALL refresh('v1_nofk', fk_pruning := false);
CALL refresh('v2');
CALL refresh('v2_nofk', fk_pruning := false);
-- batch 7 (mixed)
CALL openivm_delete('e', 'e_id IN (17, 9)');
INSERT INTO d1 (d1_id, d2_id, name, cat, w, p) VALUES (34, 10, 'b', NULL, -4, 338.32), (35, 10, '', 'c', 4, 270.91);
DELETE FROM w_stage_e;
INSERT INTO w_stage_e (e_id, name, cat, w, p, seq) VALUES (21, 'ab', 'é', NULL, 564.15, 21), (22, 'a', 'c', 0, 148.64, 22), (23, 'it''s', NULL, 18, 139.49, 23), (24, 'b', 'A', 0, 65.58, 24), (25, 'b', 'B', -4, 474.6, 25), (26, 'a', 'A', 2, 855.02, 26);
CALL openivm_insert('e', 'SELECT e_id, name, cat, w, p, seq FROM w_stage_e');
CALL refresh('v0');
CALL refresh('v0_nofk', fk_pruning := false);
CALL refresh('v0_inc', mode := 'incremental');
CALL refresh('v1', mode := 'auto');
SELECT * FROM openivm_verify('v1');
CALL refresh('v1_nofk', fk_pruning := false);
CALL refresh('v2', mode := 'incremental');
CALL refresh('v2_nofk', fk_pruning := false);
-- batch 8 (single)
INSERT INTO d1 (d1_id, d2_id, name, cat, w, p) VALUES (36, 11, 'c', NULL, 9, 141.42), (37, 10, 'c', 'c', NULL, 686.18), (38, 5, 'é', 'it''s', 7, 995.81), (39, 5, 'ab', 'a', 1000, 9.94), (40, NULL, 'B', 'it''s', 0, 271.73), (41, 10, 'B', 'b', 8, -72.65);
INSERT INTO d1 (d1_id, d2_id, name, cat, w, p) VALUES (42, 12, 'é', 'e', -5, 784.14), (43, 3, '', 'c', 13, NULL), (44, 9, NULL, 'ab', NULL, 500.1), (45, 12, 'B', NULL, 22, 128.38), (46, 1, NULL, 'it''s', NULL, 99999.99);
CALL refresh('v0', mode := 'incremental');
CALL refresh('v0_nofk', fk_pruning := false);
CALL refresh('v0_inc', mode := 'incremental');
CALL refresh('v1', mode := 'incremental');
SELECT * FROM openivm_verify('v1');
CALL refresh('v1_nofk', fk_pruning := false);
CALL refresh('v2', mode := 'auto');
CALL refresh('v2_nofk', fk_pruning := false);
-- batch 9 (touch_all)
CALL openivm_update('d2', 'name = ''é''', 'w BETWEEN 15 AND 15');
CALL openivm_update('e', 'cat = NULL', 'name = ''e''');
DELETE FROM w_stage_f;
INSERT INTO w_stage_f (fid, d1_id, e_id, g, qty, amt, big, k, seq) VALUES (2, 6, 26, 'b', NULL, 585.6, 655899128092, 1, 38), (-5, 35, 11, 'it''s', 1000, 196.24, -50530846285, 1, 39), (10, NULL, 13, 'b', 6, NULL, -4000000000000000002, 1, 40);
CALL openivm_insert('f', 'SELECT fid, d1_id, e_id, g, qty, amt, big, k, seq FROM w_stage_f');
CALL refresh('v0', mode := 'auto');
CALL refresh('v0_nofk', fk_pruning := false);
CALL refresh('v0_inc', mode := 'incremental');
CALL refresh('v1');
CALL refresh('v1_nofk', fk_pruning := false);
CALL refresh('v2', mode := 'auto');
CALL refresh('v2_nofk', fk_pruning := false);
-- batch 10 (mixed)
DELETE FROM w_stage_d2;
INSERT INTO w_stage_d2 (d2_id, name, cat, w, seq) VALUES (13, 'A', 'b', -4, 13), (14, 'c', 'a', -2, 14), (15, 'A', 'c', 5, 15), (16, 'it''s', 'e', -3, 16), (17, '', NULL, 2, 17), (18, NULL, NULL, 7, 18);
CALL openivm_insert('d2', 'SELECT d2_id, name, cat, w, seq FROM w_stage_d2');
CALL refresh('v0_inc', mode := 'incremental');
CALL refresh('v0_nofk', fk_pruning := false);
CALL refresh('v1_nofk', fk_pruning := false);
CALL refresh('v2');
CALL refresh('v0');
CALL refresh('v1', mode := 'auto');
CALL refresh('v2_nofk', fk_pruning := false);
-- batch 11 (touch_all)
CALL openivm_delete('d2', 'd2_id IN (13, 17)');
CALL openivm_update('e', 'e_id = 27', 'e_id IN (20)');
CALL openivm_update('f', 'd1_id = 45', 'amt = 268.63');
CALL refresh('v2', mode := 'full');
CALL refresh('v1_nofk', fk_pruning := false);
CALL refresh('v0_inc', mode := 'incremental');
CALL refresh('v2_nofk', fk_pruning := false);
CALL refresh('v1', mode := 'auto');
SELECT * FROM openivm_verify('v1');
CALL refresh('v0_nofk', fk_pruning := false);
CALL refresh('v0');
-- batch 12 (touch_all)
CALL openivm_delete('d2', 'd2_id IN (16) AND seq BETWEEN 9 AND 12');
CALL openivm_update('e', 'e_id = 28', 'e_id IN (23)');
CALL openivm_update('f', 'k = NULL', 'd1_id = 7');
CALL refresh('v0', mode := 'auto');
CALL refresh('v2', mode := 'incremental');
CALL refresh('v0_inc', mode := 'incremental');
CALL refresh('v1_nofk', fk_pruning := false);
CALL refresh('v2_nofk', fk_pruning := false);
CALL refresh('v0_nofk', fk_pruning := false);
CALL refresh('v1');
-- batch 13 (grow_all)
INSERT INTO d2 (d2_id, name, cat, w, seq) VALUES (19, '', 'A', -1, 19);
INSERT INTO d1 (d1_id, d2_id, name, cat, w, p) VALUES (47, 6, 'e', 'B', 23, 420.65);
INSERT INTO e (e_id, name, cat, w, p, seq) VALUES (29, NULL, 'a', 17, 561.36, 27), (30, 'a', 'e', 2, 316.21, 28), (31, NULL, 'é', -1000, NULL, 29);
INSERT INTO f (fid, d1_id, e_id, g, qty, amt, big, k, seq) VALUES (21, 42, 19, 'it''s', -1000, 681.3, 0, 2, 41), (-1000, 28, 3, NULL, 22, 742.45, 1000000000000, 2, 42), (19, 31, 25, 'ab', NULL, 0.00, 1000000000000, 5, 43), (21, 42, 19, 'it''s', -1000, 681.3, 0, 2, 41);
CALL refresh('v0', mode := 'auto');
CALL refresh('v0_nofk', fk_pruning := false);
CALL refresh('v0_inc', mode := 'incremental');
SELECT * FROM openivm_verify('v0_inc', repair := true);
CALL refresh('v1', mode := 'auto');
CALL refresh('v1_nofk', fk_pruning := false);
CALL refresh('v2', mode := 'incremental');
SELECT * FROM openivm_verify('v2');
CALL refresh('v2_nofk', fk_pruning := false);
-- batch 14 (dim_insert_fact)
INSERT INTO e (e_id, name, cat, w, p, seq) VALUES (32, 'c', 'ab', NULL, 712.56, 30), (33, '', NULL, 8, 361.4, 31);
INSERT INTO d1 (d1_id, d2_id, name, cat, w, p) VALUES (48, 16, 'ab', 'b', 2, 99999.99), (49, 5, 'c', 'it''s', 15, NULL);
INSERT INTO f (fid, d1_id, e_id, g, qty, amt, big, k, seq) VALUES (13, 5, 19, 'e', 15, 89.36, 0, 4, 44), (9, 42, 33, NULL, 3, 704.99, 1000000000000, 7, 45), (-5, 31, NULL, '', 0, 993.66, 31, 1, 46), (-5, 15, 25, 'b', 18, NULL, 0, 0, 47), (13, 5, 19, 'e', 15, 89.36, 0, 4, 44);
CALL refresh('v1', mode := 'incremental');
CALL refresh('v0_inc', mode := 'incremental');
CALL refresh('v2_nofk', fk_pruning := false);
CALL refresh('v0_nofk', fk_pruning := false);
CALL refresh('v0');
CALL refresh('v2', mode := 'incremental');
CALL refresh('v1_nofk', fk_pruning := false);
-- batch 15 (dim_insert_fact)
DELETE FROM w_stage_d2;
INSERT INTO w_stage_d2 (d2_id, name, cat, w, seq) VALUES (20, 'B', 'it''s', NULL, 20), (21, 'é', 'ab', 3, 21), (22, 'ab', 'ab', 23, 22);
CALL openivm_insert('d2', 'SELECT d2_id, name, cat, w, seq FROM w_stage_d2');
INSERT INTO d1 (d1_id, d2_id, name, cat, w, p) VALUES (50, 12, 'a', NULL, 11, 683.24), (51, 6, 'A', 'ab', 3, 0.00), (52, 21, 'c', 'A', -3, 650.15);
DELETE FROM w_stage_e;
INSERT INTO w_stage_e (e_id, name, cat, w, p, seq) VALUES (34, 'a', NULL, NULL, 99999.99, 32), (35, 'é', 'é', 7, 0.00, 33), (36, 'ab', '', 4, 341.05, 34);
CALL openivm_insert('e', 'SELECT e_id, name, cat, w, p, seq FROM w_stage_e');
INSERT INTO f (fid, d1_id, e_id, g, qty, amt, big, k, seq) VALUES (8, 2, 28, 'a', 24, 352.15, 821636981050, 0, 48), (10, 29, 28, '', 19, 585.33, -31, 3, 49), (12, 16, 35, 'it''s', 2, 166.31, 0, 2, 50), (4, 47, 10, 'é', 11, 342.72, 4000000000000000003, 5, 51);
CALL refresh('v0_nofk', fk_pruning := false);
CALL refresh('v0_inc', mode := 'incremental');
CALL refresh('v2_nofk', fk_pruning := false);
CALL refresh('v1_nofk', fk_pruning := false);
CALL refresh('v0', mode := 'auto');
CALL refresh('v2', mode := 'auto');
CALL refresh('v1', mode := 'full');
-- batch 16 (mixed)
CALL openivm_delete('e', 'e_id IN (31, 22, 27)');
CALL refresh('v0', mode := 'auto');
CALL refresh('v0_nofk', fk_pruning := false);
CALL refresh('v0_inc', mode := 'incremental');
CALL refresh('v1', mode := 'incremental');
CALL refresh('v1_nofk', fk_pruning := false);
CALL refresh('v2', mode := 'full');
CALL refresh('v2_nofk', fk_pruning := false);
CALL openivm_drop('v2');
CALL openivm_drop('v2_nofk');
CALL openivm_create('v2', 'SELECT SUM(d2.w) + 1 AS c0, d1_1.cat, STDDEV_SAMP(d2.w) AS c2, COUNT(*) * 2 AS c3 FROM f f_1 INNER JOIN d1 AS d1_1 USING (d1_id) INNER JOIN e AS e_1 USING (e_id) JOIN d2 USING (d2_id) WHERE d1_1.d2_id IS NOT NULL GROUP BY d1_1.cat HAVING sum(1) <> 2');
CALL openivm_create('v2_nofk', 'SELECT SUM(d2.w) + 1 AS c0, d1_1.cat, STDDEV_SAMP(d2.w) AS c2, COUNT(*) * 2 AS c3 FROM f f_1 INNER JOIN d1 AS d1_1 USING (d1_id) INNER JOIN e AS e_1 USING (e_id) JOIN d2 USING (d2_id) WHERE d1_1.d2_id IS NOT NULL GROUP BY d1_1.cat HAVING sum(1) <> 2');
CALL openivm_create('v2_full', 'SELECT SUM(d2.w) + 1 AS c0, d1_1.cat, STDDEV_SAMP(d2.w) AS c2, COUNT(*) * 2 AS c3 FROM f f_1 INNER JOIN d1 AS d1_1 USING (d1_id) INNER JOIN e AS e_1 USING (e_id) JOIN d2 USING (d2_id) WHERE d1_1.d2_id IS NOT NULL GROUP BY d1_1.cat HAVING sum(1) <> 2');
-- batch 17 (dim_reinsert)
CALL openivm_delete('e', 'e_id = 36 AND name = ''ab'' AND cat = '''' AND w = 4 AND p = 341.05 AND seq = 34');
DELETE FROM w_stage_e;
INSERT INTO w_stage_e (e_id, name, cat, w, p, seq) VALUES (36, 'ab', '', 4, 341.05, 34);
CALL openivm_insert('e', 'SELECT e_id, name, cat, w, p, seq FROM w_stage_e');
CALL refresh('v0_nofk', fk_pruning := false);
CALL refresh('v2');
CALL refresh('v1_nofk', fk_pruning := false);
CALL refresh('v1', mode := 'auto');
CALL refresh('v0_inc', mode := 'incremental');
CALL refresh('v2_nofk', fk_pruning := false);
CALL refresh('v2_full', mode := 'full');
CALL refresh('v0', mode := 'auto');
-- batch 18 (single)
CALL openivm_delete('d2', 'd2_id = 18 AND name IS NULL AND cat IS NULL AND w = 7 AND seq = 18');
DELETE FROM w_stage_d2;
INSERT INTO w_stage_d2 (d2_id, name, cat, w, seq) VALUES (18, NULL, NULL, -3, 18);
CALL openivm_insert('d2', 'SELECT d2_id, name, cat, w, seq FROM w_stage_d2');
CALL openivm_delete('d2', 'd2_id = 14 AND name = ''c'' AND cat = ''a'' AND w = -2 AND seq = 14');
DELETE FROM w_stage_d2;
INSERT INTO w_stage_d2 (d2_id, name, cat, w, seq) VALUES (14, 'c', 'a', -2, 14);
CALL openivm_insert('d2', 'SELECT d2_id, name, cat, w, seq FROM w_stage_d2');
CALL openivm_delete('d2', 'd2_id IN (15)');
CALL openivm_update('d2', 'w = w + 0', 'cat = ''ab''');
CALL openivm_delete('d2', 'd2_id IN (22) AND seq = 6');
CALL openivm_update('d2', 'w = NULL, name = upper(name)', 'seq BETWEEN 10 AND 14');
CALL refresh('v1', mode := 'auto');
CALL refresh('v0_nofk', fk_pruning := false);
CALL refresh('v2_full', mode := 'full');
CALL refresh('v2_nofk', fk_pruning := false);
CALL refresh('v1_nofk', fk_pruning := false);
CALL refresh('v2');
CALL refresh('v0_inc', mode := 'incremental');
CALL refresh('v0', mode := 'incremental');
-- batch 19 (dim_insert)
DELETE FROM w_stage_e;
INSERT INTO w_stage_e (e_id, name, cat, w, p, seq) VALUES (37, 'é', 'e', NULL, 251.3, 35), (38, 'A', 'c', -1, 832.17, 36), (39, 'a', 'A', NULL, 986.83, 37);
CALL openivm_insert('e', 'SELECT e_id, name, cat, w, p, seq FROM w_stage_e');
INSERT INTO d1 (d1_id, d2_id, name, cat, w, p) VALUES (53, 22, 'B', 'ab', 22, 220.96), (54, 19, 'a', 'é', 23, 80.71), (55, 10, 'c', 'é', 19, 229.71);
CALL refresh('v0', mode := 'incremental');
CALL refresh('v0_nofk', fk_pruning := false);
CALL refresh('v0_inc', mode := 'incremental');
CALL refresh('v1');
CALL refresh('v1_nofk', fk_pruning := false);
CALL refresh('v2');
CALL refresh('v2_nofk', fk_pruning := false);
CALL refresh('v2_full', mode := 'full');
-- batch 20 (dim_insert_fact)
DELETE FROM w_stage_d2;
INSERT INTO w_stage_d2 (d2_id, name, cat, w, seq) VALUES (23, 'it''s', '', 0, 23);
CALL openivm_insert('d2', 'SELECT d2_id, name, cat, w, seq FROM w_stage_d2');
DELETE FROM w_stage_e;
INSERT INTO w_stage_e (e_id, name, cat, w, p, seq) VALUES (40, '', 'B', -5, 99999.99, 38);
CALL openivm_insert('e', 'SELECT e_id, name, cat, w, p, seq FROM w_stage_e');
INSERT INTO d1 (d1_id, d2_id, name, cat, w, p) VALUES (56, 12, 'a', NULL, NULL, 353.04), (57, 23, 'c', NULL, NULL, -75.79);
INSERT INTO d1 (d1_id, d2_id, name, cat, w, p) VALUES (58, 22, 'é', 'é', 5, 856.89), (59, 18, NULL, 'a', 20, 949.04), (60, 9, 'e', 'ab', 23, NULL);
INSERT INTO d1 (d1_id, d2_id, name, cat, w, p) VALUES (61, 20, 'b', 'c', 1000, NULL), (62, 11, 'é', 'A', 21, NULL), (63, NULL, 'b', 'a', 1, 532.59), (64, NULL, 'e', 'b', NULL, 0.00);
CALL refresh('v2_full', mode := 'full');
CALL refresh('v0_inc', mode := 'incremental');
CALL refresh('v0', mode := 'full');
CALL refresh('v1', mode := 'incremental');
CALL refresh('v0_nofk', fk_pruning := false);
CALL refresh('v2_nofk', fk_pruning := false);
