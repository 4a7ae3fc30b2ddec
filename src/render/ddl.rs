//! Statements about tables and views: describe, create, drop, count, comment, and the
//! metadata tables of declarations.

use super::expr::expr;
use super::quote::{ident, list, literal, table, Qualified};
use crate::ast::Expr;
use crate::ir::{ColumnDef, Leaf, TableId};

/// DuckDB's types of expressions over the leaves of a join, one output column each (only
/// bound, nothing runs). The expressions are all row-level or all aggregates.
pub fn describe_expressions(leaves: &[Leaf], exprs: &[Expr]) -> String {
    let aliases: Vec<String> = leaves.iter().map(|l| l.alias.clone()).collect();
    format!(
        "DESCRIBE SELECT {} FROM {}",
        list(exprs.iter().enumerate(), ", ", |(i, e)| format!(
            "{} AS {}",
            expr(e, &aliases),
            ident(&format!("openivm_e{i}"))
        )),
        list(leaves, ", ", |l| format!("{} AS {}", table(&l.table), ident(&l.alias)))
    )
}

/// A query's output columns as an empty table's (`create_temp_table_as`), whose catalog entry
/// shows what DESCRIBE does not: the columns' collations.
pub fn no_rows_of(query: &str) -> String {
    format!("SELECT * FROM ({query}) AS openivm_q LIMIT 0")
}

/// DuckDB's names and types of a query's output columns (the query is the user's own SELECT,
/// already checked to be exactly one statement by the parser).
pub fn describe(query: &str) -> String {
    format!("DESCRIBE {query}")
}

/// DuckDB's optimized physical plan of a query, as JSON (nothing runs).
pub fn explain_json(query: &str) -> String {
    format!("EXPLAIN (FORMAT JSON) {query}")
}

/// A UNION ALL of one row of NULLs per branch, each cast to that branch's column types: its
/// description gives DuckDB's unified type of every column of such a union.
pub fn typed_union(branches: &[Vec<String>]) -> String {
    let row = |types: &Vec<String>| {
        let cols = list(types.iter().enumerate(), ", ", |(i, t)| format!("CAST(NULL AS {t}) AS c{i}"));
        format!("SELECT {cols}")
    };
    list(branches, " UNION ALL ", row)
}

/// The query of the stage of an IN subquery: its distinct values (`sql` is DuckDB's own text of
/// the subquery, from its parse tree).
pub fn distinct_stage(sql: &str) -> String {
    format!("SELECT DISTINCT * FROM ({sql}) AS {}", ident("in_subquery"))
}

pub fn create_view(name: &Qualified, select: &str) -> String {
    format!("CREATE VIEW {} AS {}", name.sql(), select)
}

pub fn drop_view(name: &Qualified) -> String {
    format!("DROP VIEW IF EXISTS {}", name.sql())
}

pub fn count_rows(name: &Qualified) -> String {
    format!("SELECT count(*)::BIGINT FROM {}", name.sql())
}

pub fn create_table_as(name: &Qualified, select: &str) -> String {
    format!("CREATE TABLE {} AS {}", name.sql(), select)
}

pub fn create_temp_table_as(name: &Qualified, select: &str) -> String {
    format!("CREATE TEMP TABLE {} AS {}", ident(&name.name), select)
}

/// Rows of a recompute (materialized in `recompute`, with `columns`) that the view lacks, and
/// rows of the view the recompute lacks (multisets: duplicates count): each distinct row's copies
/// are counted on both sides by a GROUP BY over their UNION ALL. With `by_bytes`, collated
/// columns are compared by their bytes (`encode`); otherwise the GROUP BY groups under the
/// collation the view's columns carry, whichever side lost it. (DuckDB 1.5.5's EXCEPT ALL
/// compares collated values by their bytes unless its first operand is a collated column,
/// test/differential/findings/duckdb155_setop_collation_by_bytes.py: it gave different answers
/// in its two directions.)
pub fn verify_counts(view: &Qualified, recompute: &Qualified, columns: &[ColumnDef], by_bytes: bool) -> String {
    let compared = list(columns, ", ", |c| match c.collation {
        Some(_) if by_bytes => format!("encode({0}) AS {0}", ident(&c.name)),
        _ => ident(&c.name),
    });
    let names = list(columns, ", ", |c| ident(&c.name));
    format!(
        "SELECT coalesce(sum(openivm_d) FILTER (WHERE openivm_d > 0), 0)::BIGINT, \
         coalesce(-sum(openivm_d) FILTER (WHERE openivm_d < 0), 0)::BIGINT \
         FROM (SELECT sum(openivm_w) AS openivm_d FROM (SELECT {compared}, 1 AS openivm_w FROM {r} \
         UNION ALL SELECT {compared}, -1 FROM {v}) GROUP BY {names})",
        v = view.sql(),
        r = ident(&recompute.name)
    )
}

pub fn delete_all(name: &Qualified) -> String {
    format!("DELETE FROM {}", name.sql())
}

pub fn insert_into(name: &Qualified, select: &str) -> String {
    format!("INSERT INTO {} {}", name.sql(), select)
}

/// The rowid the next insert into a table gets while nothing is deleted from it.
pub fn next_rowid(t: &TableId) -> String {
    format!("SELECT (coalesce(max(rowid), -1) + 1)::VARCHAR FROM {}", table(t))
}

pub fn drop_table(name: &Qualified) -> String {
    format!("DROP TABLE IF EXISTS {}", name.sql())
}

/// The incarnation tokens of one source database's tables (durable, in that database).
pub fn generations_table(catalog: &str) -> Qualified {
    Qualified { catalog: catalog.to_string(), schema: "main".into(), name: "openivm_source_generations".into() }
}

pub fn create_generations(catalog: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {} (table_schema VARCHAR NOT NULL, table_name VARCHAR NOT NULL, \
         token VARCHAR NOT NULL, columns_signature VARCHAR NOT NULL, created_at TIMESTAMP)",
        generations_table(catalog).sql()
    )
}

/// Parameters: table_schema, table_name, token, columns_signature.
pub fn insert_generation(catalog: &str) -> String {
    format!("INSERT INTO {} VALUES (?, ?, ?, ?, now()::TIMESTAMP)", generations_table(catalog).sql())
}

/// Parameters: table_schema, table_name, token.
pub fn find_generation(catalog: &str) -> String {
    format!(
        "SELECT columns_signature FROM {} WHERE table_schema = ? AND table_name = ? AND token = ?",
        generations_table(catalog).sql()
    )
}

/// The trusted RELY foreign keys kept in the metadata of the database `catalog`, both endpoints
/// fully qualified (rows without a catalog or schema, written by hand or by earlier versions, are
/// never used). Catalogs as stored there (see src/home.rs).
pub fn rely_declarations(catalog: &str) -> String {
    let cache =
        Qualified { catalog: catalog.to_string(), schema: "main".into(), name: "openivm_constraints_cache".into() };
    format!(
        "SELECT child_catalog, child_schema, child_table, child_columns, \
         parent_catalog, parent_schema, parent_table, parent_columns, \
         coalesce(child_token, ''), coalesce(parent_token, '') FROM {} \
         WHERE constraint_kind = 'RELY_FK' AND is_trusted \
         AND child_catalog IS NOT NULL AND child_schema IS NOT NULL \
         AND parent_catalog IS NOT NULL AND parent_schema IS NOT NULL",
        cache.sql()
    )
}

pub fn comment_on_view(v: &Qualified, comment: &str) -> String {
    format!("COMMENT ON VIEW {} IS {}", v.sql(), literal(comment))
}

pub fn comment_on_column(t: &TableId, column: &str, comment: &str) -> String {
    format!("COMMENT ON COLUMN {}.{} IS {}", table(t), ident(column), literal(comment))
}
