-- openivm demo: a sales rollup kept up to date incrementally.
-- Run with `make demo` (DuckDB 1.5.5 CLI, unsigned extensions allowed).
LOAD 'build/release/openivm.duckdb_extension';
.mode box

CREATE TABLE dim_product(product_id INTEGER PRIMARY KEY, name VARCHAR);
CREATE TABLE fact_sales(sale_id INTEGER, product_id INTEGER REFERENCES dim_product(product_id),
                        amount DECIMAL(10,2));
INSERT INTO dim_product VALUES (1, 'Widget'), (2, 'Gadget');
INSERT INTO fact_sales VALUES (1, 1, 10.00), (2, 1, 15.50), (3, 2, 7.25);

CALL openivm_create('sales_by_product',
  'SELECT p.name, SUM(f.amount) AS total, COUNT(*) AS sales
   FROM fact_sales f JOIN dim_product p ON f.product_id = p.product_id
   GROUP BY p.name');

.print 'The view after openivm_create:'
FROM sales_by_product ORDER BY name;

-- A batch of ordinary DML: a new product with a sale, and a deleted sale.
INSERT INTO dim_product VALUES (99, 'NewProduct');
INSERT INTO fact_sales VALUES (100, 99, 500.00);
DELETE FROM fact_sales WHERE sale_id = 1;

.print 'The plan of the next refresh (the dimension only received inserts, so the foreign key prunes its terms):'
SELECT term, delta_leaves, sign, status, reason FROM openivm_explain('sales_by_product');

.print 'The refresh:'
CALL refresh('sales_by_product');

.print 'The view after the refresh:'
FROM sales_by_product ORDER BY name;

.print 'A recompute of the query, for comparison:'
SELECT p.name, SUM(f.amount) AS total, COUNT(*) AS sales
FROM fact_sales f JOIN dim_product p ON f.product_id = p.product_id
GROUP BY p.name ORDER BY name;
