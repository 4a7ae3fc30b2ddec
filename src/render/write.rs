//! SQL of writes through the extension (`openivm_insert`, `openivm_delete`, `openivm_update`):
//! the probe SELECTs a fragment is parsed in (never run), and the statements that perform a
//! write and materialize its rows. Fragments reach these functions only as bound expressions
//! (`ast::Expr` after `bind`), never as text.

use super::capture::{OpenBatch, SEQ};
use super::{expr, ident, list, table, Qualified, MULTIPLICITY};
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
        self.filter_and(None)
    }

    /// The predicate, and `extra` (a condition over the table's columns) when given.
    fn filter_and(&self, extra: Option<&str>) -> String {
        let aliases = [self.alias.clone()];
        let mut conjuncts: Vec<String> = self.predicate.iter().map(|p| expr(p, &aliases)).collect();
        conjuncts.extend(extra.map(|e| format!("({e})")));
        if conjuncts.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", conjuncts.join(" AND "))
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

/// Records the rows a delete will remove in the feed's open batch, read before it in the same
/// transaction by the same (deterministic) predicate: each row as it is, with multiplicity -1,
/// only those `only` selects when given (rows a capture has read: those past an append-only
/// watermark are found deleted by the next capture, and counted apart). Two scans, the INSERT
/// and the DELETE, cost less than one `DELETE ... RETURNING` read into the batch: measured at
/// 20M rows deleting 10,000, 380 ms against 635 ms (a plain DELETE: 247 ms).
pub fn record_deleted(open: &OpenBatch, t: &Target, cols: &[ColumnDef], only: Option<&str>) -> String {
    let a = ident(&t.alias);
    // A feed may read no column (a view of `count(*)`): the multiplicity alone is recorded.
    let mut names: Vec<String> = cols.iter().map(|c| ident(&c.name)).collect();
    let mut values: Vec<String> = cols.iter().map(|c| format!("{a}.{}", ident(&c.name))).collect();
    names.extend([ident(MULTIPLICITY), SEQ.to_string()]);
    values.extend(["CAST(-1 AS INTEGER)".to_string(), format!("CAST({} AS BIGINT)", open.seq)]);
    format!(
        "INSERT INTO {} ({}) SELECT {} FROM {}{}",
        open.log.sql(),
        names.join(", "),
        values.join(", "),
        t.from(),
        t.filter_and(only)
    )
}

/// The number of rows the write's predicate and `extra` select.
pub fn count_matching(t: &Target, extra: &str) -> String {
    format!("SELECT count(*)::BIGINT FROM {}{}", t.from(), t.filter_and(Some(extra)))
}

/// One assignment of an update: a column of the table and its new value.
#[derive(Clone, Debug, PartialEq)]
pub struct Assignment {
    pub column: ColumnDef,
    pub value: Expr,
}

/// `UPDATE t AS a SET c = CAST(e AS type), ... WHERE p`: every value converted to its
/// column's type by an explicit cast, as `record_updated` computes it.
pub fn update(t: &Target, set: &[Assignment]) -> String {
    format!(
        "UPDATE {} SET {}{}",
        t.from(),
        list(set, ", ", |a| format!("{} = {}", ident(&a.column.name), t.value(&a.value, &a.column.ty))),
        t.filter()
    )
}

/// Records the rows an update will change in the pending batch, read before it in the same
/// transaction: each row as it is (-1) and as the update makes it (+1), with the same values
/// and casts as `update`, from one scan of the table (each row is joined to the two signs).
/// `only`: the rows to record (rows past an append-only watermark are left to it).
pub fn record_updated(
    open: &OpenBatch,
    t: &Target,
    set: &[Assignment],
    cols: &[ColumnDef],
    only: Option<&str>,
) -> String {
    let a = ident(&t.alias);
    let sign = format!("{}.{}", ident(SIGNS), ident(SIGN));
    let mut names: Vec<String> = cols.iter().map(|c| ident(&c.name)).collect();
    let mut values: Vec<String> = cols
        .iter()
        .map(|c| {
            let old = format!("{a}.{}", ident(&c.name));
            match set.iter().find(|s| s.column.name == c.name) {
                Some(s) => format!("CASE WHEN {sign} < 0 THEN {old} ELSE {} END", t.value(&s.value, &s.column.ty)),
                None => old,
            }
        })
        .collect();
    names.extend([ident(MULTIPLICITY), SEQ.to_string()]);
    values.extend([sign, format!("CAST({} AS BIGINT)", open.seq)]);
    format!(
        "INSERT INTO {} ({}) SELECT {} FROM {} CROSS JOIN (VALUES (CAST(-1 AS INTEGER)), (CAST(1 AS INTEGER))) AS {}({}){}",
        open.log.sql(),
        names.join(", "),
        values.join(", "),
        t.from(),
        ident(SIGNS),
        ident(SIGN),
        t.filter_and(only)
    )
}

/// The relation and column of the two signs an update's rows are recorded with.
const SIGNS: &str = "openivm_signs";
const SIGN: &str = "openivm_sign";

/// `DESCRIBE <query>`: the columns of an insert's query, bound and not run. The query (checked
/// to be one SELECT statement) comes last, so nothing of ours follows a trailing comment.
pub fn describe(query: &str) -> String {
    format!("DESCRIBE {query}")
}

/// No row of the table's columns: the shape of the temp table an insert's rows are read into
/// (the column types as they are, constraints and defaults left to the insert into the table).
pub fn no_rows(t: &TableId, cols: &[ColumnDef]) -> String {
    format!("SELECT {} FROM {} LIMIT 0", list(cols, ", ", |c| ident(&c.name)), table(t))
}

/// `INSERT INTO rows <query>`: an insert's query evaluated once, into the temp table of the
/// table's column types (each value converted as DuckDB's `INSERT` converts it). The query
/// comes last, as in `describe`.
pub fn insert_query(rows: &Qualified, query: &str) -> String {
    format!("INSERT INTO {} {query}", rows.sql())
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

    fn open() -> OpenBatch {
        OpenBatch { log: Qualified { catalog: "db".into(), schema: "openivm".into(), name: "log_1".into() }, seq: 3 }
    }

    fn col(n: &str, ty: &str) -> ColumnDef {
        ColumnDef { name: n.into(), ty: ty.into(), collation: None }
    }

    #[test]
    fn deletes_and_their_rows_share_one_rendered_predicate() {
        let t = target(vec![k_is(1), k_is(2)]);
        assert_eq!(delete(&t), r#"DELETE FROM "db"."main"."t" AS "t" WHERE ("t"."k" = 1) AND ("t"."k" = 2)"#);
        assert_eq!(
            record_deleted(&open(), &t, &[col("k", "INTEGER")], None),
            r#"INSERT INTO "db"."openivm"."log_1" ("k", "openivm_multiplicity", openivm_seq) SELECT "t"."k", CAST(-1 AS INTEGER), CAST(3 AS BIGINT) FROM "db"."main"."t" AS "t" WHERE ("t"."k" = 1) AND ("t"."k" = 2)"#
        );
        assert_eq!(
            record_deleted(&open(), &t, &[], None),
            r#"INSERT INTO "db"."openivm"."log_1" ("openivm_multiplicity", openivm_seq) SELECT CAST(-1 AS INTEGER), CAST(3 AS BIGINT) FROM "db"."main"."t" AS "t" WHERE ("t"."k" = 1) AND ("t"."k" = 2)"#
        );
        // only the rows a capture has read (not past a watermark) are recorded; the others counted
        assert_eq!(
            record_deleted(&open(), &target(vec![]), &[col("k", "INTEGER")], Some("(k > 5) IS NOT TRUE")),
            r#"INSERT INTO "db"."openivm"."log_1" ("k", "openivm_multiplicity", openivm_seq) SELECT "t"."k", CAST(-1 AS INTEGER), CAST(3 AS BIGINT) FROM "db"."main"."t" AS "t" WHERE ((k > 5) IS NOT TRUE)"#
        );
        assert_eq!(
            count_matching(&t, "k > 5"),
            r#"SELECT count(*)::BIGINT FROM "db"."main"."t" AS "t" WHERE ("t"."k" = 1) AND ("t"."k" = 2) AND (k > 5)"#
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
            record_updated(&open(), &t, &set, &[col("k", "INTEGER"), col("v", "BIGINT")], None),
            r#"INSERT INTO "db"."openivm"."log_1" ("k", "v", "openivm_multiplicity", openivm_seq) SELECT "t"."k", CASE WHEN "openivm_signs"."openivm_sign" < 0 THEN "t"."v" ELSE CAST(5 AS BIGINT) END, "openivm_signs"."openivm_sign", CAST(3 AS BIGINT) FROM "db"."main"."t" AS "t" CROSS JOIN (VALUES (CAST(-1 AS INTEGER)), (CAST(1 AS INTEGER))) AS "openivm_signs"("openivm_sign") WHERE ("t"."k" = 1)"#
        );
    }

    #[test]
    fn an_inserts_query_comes_last() {
        let rows = Qualified::temp("openivm_write_rows".into());
        assert_eq!(
            insert_query(&rows, "FROM range(3) -- c"),
            r#"INSERT INTO "temp"."main"."openivm_write_rows" FROM range(3) -- c"#
        );
        assert_eq!(describe("SELECT 1;"), "DESCRIBE SELECT 1;");
        let t = TableId { catalog: "db".into(), schema: "main".into(), name: "t".into() };
        assert_eq!(no_rows(&t, &[col("k", "INTEGER")]), r#"SELECT "k" FROM "db"."main"."t" LIMIT 0"#);
    }
}
