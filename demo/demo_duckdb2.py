"""openivm on DuckDB 2.0.1, the reference design's script in its own words: PRAGMA forms and SET.
Run with `make demo2` (DuckDB 2.0.1's Python package; no 2.0 CLI is published on PyPI)."""
import sys

import duckdb

extension = sys.argv[1] if len(sys.argv) > 1 else "build/release/openivm.duckdb_extension"
con = duckdb.connect(config={"allow_unsigned_extensions": True})
con.execute(f"LOAD '{extension}'")  # also loads the PRAGMA companion beside it


def show(title, sql):
    print(f"\n{title}\n  {sql}")
    rel = con.sql(sql)
    print(rel if rel is not None else "  (ok)")


print(f"DuckDB {duckdb.__version__}")
con.execute("""
    CREATE TABLE dim_product(product_id INTEGER, name VARCHAR);
    CREATE TABLE fact_sales(sale_id INTEGER, product_id INTEGER, amount DECIMAL(10,2));
    INSERT INTO dim_product VALUES (1, 'Widget'), (2, 'Gadget');
    INSERT INTO fact_sales VALUES (1, 1, 10.00), (2, 1, 15.50), (3, 2, 7.25);
""")
show("A foreign key the catalog does not carry, declared RELY:",
     "PRAGMA openivm_declare_rely_fk('fact_sales', 'product_id', 'dim_product', 'product_id')")
show("The view (created with its CALL form):",
     "CALL openivm_create('sales_by_product', 'SELECT p.name, SUM(f.amount) AS total "
     "FROM fact_sales f JOIN dim_product p ON f.product_id = p.product_id GROUP BY p.name')")
con.execute("INSERT INTO dim_product VALUES (99, 'NewProduct')")
con.execute("INSERT INTO fact_sales VALUES (100, 99, 500.00)")
con.execute("DELETE FROM fact_sales WHERE sale_id = 1")
show("A mixed batch ran (a dimension insert, a fact insert, a fact delete); the refresh prunes 2 of 3 terms:",
     "PRAGMA refresh('sales_by_product')")
show("The view:", "FROM sales_by_product ORDER BY name")
con.execute("SET openivm_fk_pruning = false")
con.execute("INSERT INTO dim_product VALUES (100, 'Other')")
con.execute("INSERT INTO fact_sales VALUES (101, 100, 7.00)")
show("With SET openivm_fk_pruning = false, the next refresh prunes nothing:", "PRAGMA refresh('sales_by_product')")
show("The view equals a recompute:",
     "SELECT count(*) AS differences FROM (FROM sales_by_product EXCEPT ALL SELECT p.name, SUM(f.amount) "
     "FROM fact_sales f JOIN dim_product p ON f.product_id = p.product_id GROUP BY p.name)")
