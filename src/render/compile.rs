//! The SQL of the compile-only program (`openivm_compile_with_facts`): the relations the caller
//! provides, a table's state before the batch, and the one MERGE that applies the terms.
//!
//! The program reads, for each table `t` of the view, a relation `delta_<t>` (unqualified, so
//! the caller's engine resolves it, e.g. a temp table) with the columns the view reads of `t`
//! and `openivm_multiplicity` (+1 for an inserted copy, -1 for a deleted one, one row per copy),
//! and the table itself at its state after the batch.

use super::{aggregate_weighted_in, apply_view_delta_in, union_all, Dialect, Qualified, Storage, MULTIPLICITY};
use crate::ir::{TableId, ViewQuery};

/// The names of the delta relations of `tables`: `delta_<name>`, or `delta_<schema>_<name>`
/// for every table when two tables share a name, `delta_<catalog>_<schema>_<name>` when that
/// still collides.
pub fn delta_relations(tables: &[TableId]) -> Vec<String> {
    let distinct = |names: &[String]| names.iter().enumerate().all(|(i, a)| !names[..i].contains(a));
    let short: Vec<String> = tables.iter().map(|t| format!("delta_{}", t.name)).collect();
    if distinct(&short) {
        return short;
    }
    let schema: Vec<String> = tables.iter().map(|t| format!("delta_{}_{}", t.schema, t.name)).collect();
    if distinct(&schema) {
        return schema;
    }
    tables.iter().map(|t| format!("delta_{}_{}_{}", t.catalog, t.schema, t.name)).collect()
}

/// A table's state before the batch, from its state after it and its delta, as a
/// parenthesized SELECT of `columns`: (new ⊎ deleted) ∖ inserted with multiset difference. For
/// each distinct row with o copies before, i inserted and d deleted, new has o + i - d copies,
/// so the difference keeps o + i - d + d - i = o of them; this holds whether or not the delta
/// was netted.
pub fn old_state(d: Dialect, table: &TableId, columns: &[String], delta: &str) -> String {
    let cols = columns.iter().map(|c| d.ident(c)).collect::<Vec<_>>().join(", ");
    let (delta, m) = (d.ident(delta), d.ident(MULTIPLICITY));
    format!(
        "(SELECT {cols} FROM (SELECT {cols} FROM {new} UNION ALL SELECT {cols} FROM {delta} WHERE {m} < 0) \
         AS openivm_new_and_deleted EXCEPT ALL SELECT {cols} FROM {delta} WHERE {m} > 0)",
        new = d.table(table)
    )
}

/// The statement that applies a program's terms (weighted SELECTs) to the stored result,
/// matching on the group keys `matched` when they determine the others (None: every key).
pub fn apply_terms(
    d: Dialect,
    q: &ViewQuery,
    data: &Qualified,
    terms: &[String],
    matched: Option<&[usize]>,
) -> Vec<String> {
    apply_view_delta_in(d, Storage::DuckDb, q, data, &aggregate_weighted_in(d, q, &union_all(terms)), matched)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(c: &str, s: &str, n: &str) -> TableId {
        TableId { catalog: c.into(), schema: s.into(), name: n.into() }
    }

    #[test]
    fn names_delta_relations_uniquely() {
        assert_eq!(delta_relations(&[id("m", "main", "f"), id("m", "main", "d")]), vec!["delta_f", "delta_d"]);
        assert_eq!(delta_relations(&[id("m", "a", "t"), id("m", "b", "t")]), vec!["delta_a_t", "delta_b_t"]);
        assert_eq!(delta_relations(&[id("x", "a", "t"), id("y", "a", "t")]), vec!["delta_x_a_t", "delta_y_a_t"]);
    }

    #[test]
    fn old_state_is_new_plus_deleted_minus_inserted() {
        let sql = old_state(Dialect::DuckDb, &id("memory", "main", "r"), &["k".into()], "delta_r");
        assert_eq!(
            sql,
            "(SELECT \"k\" FROM (SELECT \"k\" FROM \"memory\".\"main\".\"r\" UNION ALL SELECT \"k\" FROM \"delta_r\" \
             WHERE \"openivm_multiplicity\" < 0) AS openivm_new_and_deleted EXCEPT ALL SELECT \"k\" FROM \"delta_r\" \
             WHERE \"openivm_multiplicity\" > 0)"
        );
        assert!(old_state(Dialect::Spark, &id("memory", "main", "r"), &["k".into()], "delta_r")
            .starts_with("(SELECT `k` FROM (SELECT `k` FROM `memory`.`main`.`r` UNION ALL"));
    }
}
