//! SQL of writes through the extension (`openivm_insert`, `openivm_delete`, `openivm_update`):
//! the probe SELECTs a fragment is parsed in (never run), and the statements that perform a
//! write and materialize its rows. Fragments reach these functions only as bound expressions
//! (`ast::Expr` after `bind`), never as text.

use super::{expr, ident, list, table, Qualified};
use crate::ast::Expr;
use crate::ir::{ColumnDef, TableId};

/// A write's predicate, bound to the table's single leaf, with the leaf's alias.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    pub table: TableId,
    pub alias: String,
    /// Conjuncts of the predicate (empty: every row).
    pub predicate: Vec<Expr>,
}

impl Target {
    fn from(&self) -> String {
        format!("{} AS {}", table(&self.table), ident(&self.alias))
    }

    fn filter(&self) -> String {
        if self.predicate.is_empty() {
            String::new()
        } else {
            let aliases = [self.alias.clone()];
            format!(" WHERE {}", list(&self.predicate, " AND ", |p| expr(p, &aliases)))
        }
    }

    fn value(&self, e: &Expr, ty: &str) -> String {
        format!("CAST({} AS {ty})", expr(e, std::slice::from_ref(&self.alias)))
    }
}

/// The probe a predicate is parsed in: `SELECT * FROM <table> WHERE (<predicate>)`. Only
/// parsed, never run; the parse tree must have exactly this shape.
pub fn predicate_probe(t: &TableId, predicate: &str) -> String {
    format!("SELECT * FROM {} WHERE ({predicate})", table(t))
}

/// The probe assignments are parsed in: `SELECT <assignments> FROM <table>` (each item must
/// come back as `column = expression`). Only parsed, never run.
pub fn assignments_probe(t: &TableId, assignments: &str) -> String {
    format!("SELECT {assignments} FROM {}", table(t))
}

/// `DELETE FROM t AS a WHERE p`.
pub fn delete(t: &Target) -> String {
    format!("DELETE FROM {}{}", t.from(), t.filter())
}

/// The rows a delete will remove (the columns `cols`), read before it in the same transaction.
pub fn matching_rows(t: &Target, cols: &[ColumnDef]) -> String {
    let aliases = [t.alias.clone()];
    let c = list(cols, ", ", |c| format!("{}.{}", ident(&aliases[0]), ident(&c.name)));
    format!("SELECT {c} FROM {}{}", t.from(), t.filter())
}

/// One assignment of an update: a column of the table and its new value.
#[derive(Clone, Debug, PartialEq)]
pub struct Assignment {
    pub column: ColumnDef,
    pub value: Expr,
}

/// `UPDATE t AS a SET c = CAST(e AS type), ... WHERE p`: every value converted to its
/// column's type by an explicit cast, as `changed_rows` computes it.
pub fn update(t: &Target, set: &[Assignment]) -> String {
    format!(
        "UPDATE {} SET {}{}",
        t.from(),
        list(set, ", ", |a| format!("{} = {}", ident(&a.column.name), t.value(&a.value, &a.column.ty))),
        t.filter()
    )
}

/// The name of the new value of read column `i` in `changed_rows`.
pub fn new_column(i: usize) -> String {
    format!("openivm_new_{i}")
}

/// The rows an update will change: the read columns `cols` as they are, then as the update
/// makes them (`openivm_new_<i>`), read before it in the same transaction.
pub fn changed_rows(t: &Target, set: &[Assignment], cols: &[ColumnDef]) -> String {
    let a = ident(&t.alias);
    let old = list(cols, ", ", |c| format!("{a}.{}", ident(&c.name)));
    let new = list(cols.iter().enumerate(), ", ", |(i, c)| {
        let value = match set.iter().find(|s| s.column.name == c.name) {
            Some(s) => t.value(&s.value, &s.column.ty),
            None => format!("{a}.{}", ident(&c.name)),
        };
        format!("{value} AS {}", ident(&new_column(i)))
    });
    format!("SELECT {old}, {new} FROM {}{}", t.from(), t.filter())
}

/// The rows of an insert's query (rendered by `render::full_select`, its outputs named
/// `openivm_g<i>`), converted to the table's column types and named after its columns.
pub fn insert_rows(query: &str, cols: &[ColumnDef]) -> String {
    let c = list(cols.iter().enumerate(), ", ", |(i, c)| {
        format!("CAST(openivm_q.{} AS {}) AS {}", ident(&crate::ir::stored::group(i)), c.ty, ident(&c.name))
    });
    format!("SELECT {c} FROM ({query}) AS openivm_q")
}

/// `INSERT INTO t (columns) <rows>`.
pub fn insert(t: &TableId, cols: &[ColumnDef], rows: &str) -> String {
    format!("INSERT INTO {} ({}) {rows}", table(t), list(cols, ", ", |c| ident(&c.name)))
}

/// `INSERT INTO t (columns) SELECT columns FROM rows`.
pub fn insert_from(t: &TableId, cols: &[ColumnDef], rows: &Qualified) -> String {
    let c = list(cols, ", ", |c| ident(&c.name));
    format!("INSERT INTO {} ({c}) SELECT {c} FROM {}", table(t), rows.sql())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::{CompareOp, Constant};

    fn target(predicate: Vec<Expr>) -> Target {
        Target {
            table: TableId { catalog: "db".into(), schema: "main".into(), name: "t".into() },
            alias: "t".into(),
            predicate,
        }
    }

    fn k_is(v: i128) -> Expr {
        Expr::Compare {
            op: CompareOp::Eq,
            left: Box::new(Expr::Bound { leaf: 0, column: "k".into() }),
            right: Box::new(Expr::Constant(Constant::Integer(v))),
        }
    }

    fn col(n: &str, ty: &str) -> ColumnDef {
        ColumnDef { name: n.into(), ty: ty.into() }
    }

    #[test]
    fn deletes_and_their_rows_share_one_rendered_predicate() {
        let t = target(vec![k_is(1), k_is(2)]);
        assert_eq!(delete(&t), r#"DELETE FROM "db"."main"."t" AS "t" WHERE ("t"."k" = 1) AND ("t"."k" = 2)"#);
        assert_eq!(
            matching_rows(&t, &[col("k", "INTEGER")]),
            r#"SELECT "t"."k" FROM "db"."main"."t" AS "t" WHERE ("t"."k" = 1) AND ("t"."k" = 2)"#
        );
        assert_eq!(delete(&target(vec![])), r#"DELETE FROM "db"."main"."t" AS "t""#);
    }

    #[test]
    fn updates_cast_values_as_their_rows_do() {
        let t = target(vec![k_is(1)]);
        let set = vec![Assignment { column: col("v", "BIGINT"), value: Expr::Constant(Constant::Integer(5)) }];
        assert_eq!(
            update(&t, &set),
            r#"UPDATE "db"."main"."t" AS "t" SET "v" = CAST(5 AS BIGINT) WHERE ("t"."k" = 1)"#
        );
        assert_eq!(
            changed_rows(&t, &set, &[col("k", "INTEGER"), col("v", "BIGINT")]),
            r#"SELECT "t"."k", "t"."v", "t"."k" AS "openivm_new_0", CAST(5 AS BIGINT) AS "openivm_new_1" FROM "db"."main"."t" AS "t" WHERE ("t"."k" = 1)"#
        );
    }

    #[test]
    fn inserted_rows_take_the_table_types() {
        assert_eq!(
            insert_rows("SELECT 1", &[col("k", "INTEGER")]),
            r#"SELECT CAST(openivm_q."openivm_g0" AS INTEGER) AS "k" FROM (SELECT 1) AS openivm_q"#
        );
    }
}
