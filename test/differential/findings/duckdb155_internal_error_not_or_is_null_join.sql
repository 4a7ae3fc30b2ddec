-- DuckDB 1.5.5, without openivm: a grouped four-way join whose WHERE is NOT (a <> b OR a IS NULL)
-- fails to plan with "INTERNAL Error: Failed to bind column reference "w" [...]" on this data
-- (the data of differential seed 17502, scenario 7, batch 8, where it failed the harness's own
-- comparison query; the view's refreshes were not involved). The same query over a few rows of
-- the same tables plans and runs; not reduced further. DuckDB 2.0.1 runs it (no rows).
-- Run: duckdb < this file (1.5.5 CLI), or any DuckDB Python.
CREATE MACRO iv_twice(x) AS x * 2;
CREATE MACRO iv_tag(s) AS coalesce(CAST(s AS VARCHAR), '?') || '#';
CREATE TABLE d1(d1_id INTEGER PRIMARY KEY, name VARCHAR, cat VARCHAR COLLATE NOACCENT, w INTEGER, p DECIMAL(10,2));
CREATE TABLE d2(d2_id INTEGER PRIMARY KEY, name VARCHAR, w INTEGER, p DECIMAL(10,2));
CREATE TABLE d3(d3_id INTEGER PRIMARY KEY, name VARCHAR, w INTEGER, p DECIMAL(10,2));
CREATE TABLE dc(ka INTEGER, kb INTEGER, name VARCHAR, cat VARCHAR COLLATE NOCASE.NOACCENT, w INTEGER, PRIMARY KEY (ka, kb));
CREATE TABLE f(fid INTEGER, d1_id INTEGER, d2_id INTEGER, d3_id INTEGER, dc_a INTEGER, dc_b INTEGER, g VARCHAR, qty INTEGER, amt DECIMAL(10,2), big BIGINT, k INTEGER);
INSERT INTO d1 (d1_id, name, cat, w, p) VALUES (1, 'é', NULL, 12, 23.72), (2, 'B', 'b', 13, 416.63), (3, 'é', NULL, 23, -0.78), (4, 'it''s', 'é', 21, NULL);
INSERT INTO d2 (d2_id, name, w, p) VALUES (1, 'a', 16, 559.34), (2, 'ab', -5, 244.36), (3, '', 15, 531.4);
INSERT INTO d3 (d3_id, name, w, p) VALUES (1, 'é', 15, 688.62), (2, 'A', NULL, 67.6), (3, NULL, 11, 853.15), (4, '', NULL, 244.06);
INSERT INTO dc (ka, kb, name, cat, w) VALUES (0, 1, 'c', 'A', 9), (0, 2, 'A', 'é', NULL), (1, 0, 'it''s', 'a', 5), (1, 1, 'it''s', 'a', 7);
INSERT INTO f SELECT * FROM f WHERE g = 'B';
INSERT INTO f (fid, d1_id, d2_id, d3_id, dc_a, dc_b, g, qty, amt, big, k) VALUES (16, 3, 3, 1, NULL, NULL, NULL, 18, 961.16, 1000000000000, 7), (9, 3, 3, 4, NULL, NULL, 'a', 6, 813.64, NULL, 6), (-5, 3, 2, 1, 1, 0, 'ab', -1, 27.66, 1000000000000, 3), (4, 4, 1, 2, 0, 2, 'ab', 6, 73.23, 30, 5), (-4, 4, 3, 1, 1, 1, 'é', 0, 823.22, 290535126302, 7), (25, 1, 2, 3, 1, 1, 'a', 3, NULL, 339271432626, 5), (17, 3, 2, NULL, 1, 0, '', NULL, -13.22, 1000000000000, 3), (-1000, 1, 3, 2, NULL, NULL, NULL, 0, NULL, -995496628769, 5);
INSERT INTO f (fid, d1_id, d2_id, d3_id, dc_a, dc_b, g, qty, amt, big, k) VALUES (4, 3, 3, 1, 1, 1, 'B', 2, 681.98, NULL, 4), (16, 3, 3, 4, 0, 2, 'A', 15, 122.25, 0, 7), (12, 4, 1, 4, 0, 2, 'ab', 14, 448.55, 0, NULL), (2, NULL, 1, 1, 0, 2, 'e', 25, 0.00, -293932312853, 4), (21, 4, 3, 1, 1, 0, 'A', 25, -86.57, 1000000000000, NULL), (22, 1, 3, 2, 1, 0, 'e', -1000, 966.36, 949276524502, 1), (2, NULL, 1, 2, 0, 1, 'A', 3, 72.31, 0, 7), (25, 2, 1, 3, 1, 0, 'c', 25, 106.68, -823550304527, NULL);
INSERT INTO f (fid, d1_id, d2_id, d3_id, dc_a, dc_b, g, qty, amt, big, k) VALUES (16, 3, 3, 1, NULL, NULL, NULL, 18, 961.16, 1000000000000, 7), (9, 3, 3, 4, NULL, NULL, 'a', 6, 813.64, NULL, 6), (21, 4, 3, 1, 1, 0, 'A', 25, -86.57, 1000000000000, NULL), (25, 1, 2, 3, 1, 1, 'a', 3, NULL, 339271432626, 5), (2, NULL, 1, 2, 0, 1, 'A', 3, 72.31, 0, 7), (-4, 4, 3, 1, 1, 1, 'é', 0, 823.22, 290535126302, 7), (25, 2, 1, 3, 1, 0, 'c', 25, 106.68, -823550304527, NULL), (25, 2, 1, 3, 1, 0, 'c', 25, 106.68, -823550304527, NULL);
INSERT INTO f (fid, d1_id, d2_id, d3_id, dc_a, dc_b, g, qty, amt, big, k) VALUES (-1, 1, 1, 4, 0, 1, 'b', 18, 0.00, 0, 7), (0, 4, 3, 1, 1, 1, NULL, -2, 689.89, 31, 4), (16, 3, 1, 3, 1, 1, 'b', 16, 875.87, NULL, 0), (9, NULL, 1, 4, 0, 2, 'ab', 17, 153.45, 893405088703, 7), (7, 3, 1, 4, NULL, 9, '', 1, 371.24, 0, 5), (-1000, 2, 2, 2, 1, 0, 'e', 0, 994.63, 16, 5), (0, 4, 2, 2, 0, 2, 'ab', NULL, 213.86, 1000000000000, 5), (1000, 1, 3, 4, 1, 0, 'e', 20, 943.74, 1000000000000, NULL);
INSERT INTO f (fid, d1_id, d2_id, d3_id, dc_a, dc_b, g, qty, amt, big, k) VALUES (25, 1, 1, 2, NULL, 9, 'a', 0, NULL, 279587002453, 0), (16, 1, 3, 4, 1, 0, 'a', NULL, 208.38, 7, 1), (0, 3, 2, 3, 1, 0, 'e', 4, 173.53, 4000000000000000006, 1), (15, 1, 2, 4, 0, 1, 'c', 21, 783.16, 0, 1), (22, 2, 1, 1, NULL, NULL, 'A', 9, NULL, -7, 5), (18, 2, 1, 3, 1, 1, '', 17, 48.07, 1000000000000, 3), (10, NULL, 3, 1, 0, 1, 'B', -5, 616.93, 1000000000000, 5), (1000, 3, 3, 4, 0, 1, '', 1, 0.00, -427986312500, 1);
INSERT INTO f (fid, d1_id, d2_id, d3_id, dc_a, dc_b, g, qty, amt, big, k) VALUES (3, 2, 3, NULL, 1, 1, 'e', 16, 659.6, -655421710730, 6), (15, NULL, 2, 4, 0, 1, '', NULL, 680.79, 25, 0), (4, 1, 1, 4, NULL, NULL, 'a', 4, 947.51, NULL, 6), (-1000, 1, 3, 4, 1, 1, 'B', 1000, 767.19, -979199419334, 6), (5, NULL, 1, 3, 0, 2, '', 17, 14.31, 0, 2);
INSERT INTO d2 (d2_id, name, w, p) VALUES (4, 'b', NULL, 814.21), (5, 'B', 11, 794.31);
INSERT INTO dc (ka, kb, name, cat, w) VALUES (1, 2, 'ab', 'c', 1000), (2, 0, 'A', 'b', 5);
INSERT INTO d2 (d2_id, name, w, p) VALUES (6, '', -4, 721.9);
INSERT INTO d1 (d1_id, name, cat, w, p) VALUES (5, 'c', 'b', 23, -97.3), (6, 'é', 'c', 23, 244.84);
INSERT INTO dc (ka, kb, name, cat, w) VALUES (2, 1, 'é', 'it''s', -4);
INSERT INTO d3 (d3_id, name, w, p) VALUES (5, 'it''s', 5, 332.13), (6, 'a', 19, 448.18);
UPDATE d1 SET cat = NULL WHERE p BETWEEN -97.30 AND 244.84;
UPDATE d1 SET p = NULL, name = '' WHERE cat IS NULL;
INSERT INTO d1 (d1_id, name, cat, w, p) VALUES (7, 'c', 'a', 1000, 99999.99), (8, NULL, '', 17, 522.74), (9, 'c', NULL, NULL, 479.09), (10, 'B', 'é', 7, 8.03), (11, 'a', 'é', 24, NULL);
UPDATE d1 SET w = NULL;
DELETE FROM d1 WHERE d1_id IN (7) AND cat LIKE '%''%';
UPDATE d2 SET p = p + 3.25 WHERE p = 244.36;
UPDATE d3 SET p = p + 3.46;
UPDATE dc SET ka = 2, kb = 2 WHERE ((ka = 2 AND kb = 1));
DELETE FROM f WHERE fid = 25 AND d1_id = 1 AND d2_id = 1 AND d3_id = 2 AND dc_a IS NULL AND dc_b = 9 AND g = 'a' AND qty = 0 AND amt IS NULL AND big = 279587002453 AND k = 0;
INSERT INTO f (fid, d1_id, d2_id, d3_id, dc_a, dc_b, g, qty, amt, big, k) VALUES (25, 1, 1, 2, NULL, 9, 'a', 0, NULL, 279587002453, 0);
INSERT INTO d1 (d1_id, name, cat, w, p) VALUES (12, '', 'e', 1, 285.8), (13, 'c', 'c', 8, 899.1);
INSERT INTO f (fid, d1_id, d2_id, d3_id, dc_a, dc_b, g, qty, amt, big, k) VALUES (16, NULL, NULL, 2, 1, 2, NULL, -3, 64.51, 533913244321, 2), (17, 4, 4, 4, 1, 2, 'é', NULL, 316.26, -38, 6), (1000, 10, 5, 5, 1, NULL, '', -1000, NULL, 434261685184, 1), (2, 6, 1, 4, NULL, NULL, 'é', 21, 99999.99, 1000000000000, 2), (1000, 8, 2, 2, 2, 0, 'é', 22, 743.63, NULL, NULL), (16, NULL, NULL, 2, 1, 2, NULL, -3, 64.51, 533913244321, 2);
UPDATE f SET d1_id = 13 WHERE d1_id = 2;
INSERT INTO f (fid, d1_id, d2_id, d3_id, dc_a, dc_b, g, qty, amt, big, k) VALUES (1, 11, 5, 1, 0, 2, 'e', -4, 390.97, 0, 6), (25, 13, 6, 4, 0, 1, 'it''s', 1, 44.6, 0, 1);
INSERT INTO d1 (d1_id, name, cat, w, p) VALUES (14, 'e', 'B', 0, 827.34), (15, '', 'e', 13, -28.35), (16, '', 'e', 23, -53.76);
INSERT INTO dc (ka, kb, name, cat, w) VALUES (2, 1, 'A', 'c', 10), (3, 0, '', '', 7), (3, 1, 'b', NULL, 1);
INSERT INTO d3 (d3_id, name, w, p) VALUES (7, 'c', 5, NULL);
INSERT INTO d2 (d2_id, name, w, p) VALUES (7, '', 16, 489.08), (8, 'A', -5, 799.59), (9, 'B', 13, 950.75);
INSERT INTO f (fid, d1_id, d2_id, d3_id, dc_a, dc_b, g, qty, amt, big, k) VALUES (9, 3, 3, 4, NULL, NULL, 'a', 6, 813.64, NULL, 6), (25, 13, 6, 4, 0, 1, 'it''s', 1, 44.60, 0, 1);
DELETE FROM f WHERE fid = 21 AND d1_id = 4 AND d2_id = 3 AND d3_id = 1 AND dc_a = 1 AND dc_b = 0 AND g = 'A' AND qty = 25 AND amt = -86.57 AND big = 1000000000000 AND k IS NULL;
INSERT INTO f (fid, d1_id, d2_id, d3_id, dc_a, dc_b, g, qty, amt, big, k) VALUES (21, 4, 3, 1, 1, 0, 'A', 25, 381.18, 1000000000000, NULL);
SELECT SUM(d2ax.p) * 1.5 AS c0, fax.d1_id, d2ax.name AS c2, MIN(d2ax.p) AS c3, SUM(d3_1.w) - SUM(fax.fid) AS c4 FROM f fax JOIN dc dc_1 ON dc_1.ka = fax.dc_a AND dc_1.kb = fax.dc_b JOIN d3 d3_1 ON fax.d3_id = d3_1.d3_id JOIN d2 AS d2ax ON fax.d2_id = d2ax.d2_id WHERE NOT (d3_1.w <> fax.dc_b OR d3_1.w IS NULL) GROUP BY d2ax.name, fax.d1_id;
