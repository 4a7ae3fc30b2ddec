//! `openivm_compile_with_facts`: the refresh program of a maintained view for an engine that
//! captures its own deltas and vouches for its own facts, rendered and not run.
//!
//! The caller passes the facts as JSON (`facts.rs`): foreign keys, the shape of each table's
//! delta and `assume_insert_only`. The live catalog and RELY declarations are not consulted: the
//! facts replace them. A fact FK still counts only when the view's join predicates equate all
//! its columns (`fk_pruning::proven_relations`). The program is the one planner's
//! (`plan::planner`), as a refresh's would be from the same facts, with the caller's engine
//! reading its tables' states before the batch; the 'facts' row that ends it says why
//! (`report.rs`).
//!
//! A set operation (UNION [ALL], INTERSECT [ALL], EXCEPT [ALL]: `ViewQuery::branches`) takes
//! inclusion-exclusion, as its refresh does: each branch its own 2^n - 1 terms over its own
//! leaves, foreign keys proven and pruning within a branch, a table's one `delta_<t>` read by
//! every branch that reads the table, and all terms merged at once.

mod decide;
mod facts;
mod report;
#[cfg(test)]
mod tests;

pub use decide::{branch_counts, decide, leaf_branch, Decision};
pub use facts::{parse_dialect, parse_facts, resolve, resolve_table, FactFk, Facts, Resolved, ShapeFact};
pub use report::facts_document;

use crate::db::Sql;
use crate::error::{Error, Result};
use crate::execute::Cache;
use crate::front::catalog::{table_name, SqlCatalog};
use crate::ir::ViewQuery;
pub use crate::plan::nterm::LeafState;
pub use crate::plan::planner::{Program, Rule};
use crate::plan::terms::{DeltaShape, Term, TermStatus};
use crate::render::{self, compile as rc, Dialect, Qualified, Source};

/// One statement of the program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    pub order: i64,
    pub kind: &'static str,
    pub sql: String,
}

/// The weighted SELECTs of the terms the decision runs.
pub fn term_selects(d: Dialect, q: &ViewQuery, dec: &Decision, deltas: &[String]) -> Vec<String> {
    let tables = q.tables();
    let delta = |i: usize| Source::Named(deltas[dec.leaf_table[i]].clone());
    let new = |i: usize| Source::Current(q.leaves[i].table.clone());
    match dec.program.rule {
        Rule::InclusionExclusion => dec
            .program
            .inclusion_exclusion
            .iter()
            .filter(|(_, s)| *s == TermStatus::Run)
            .map(|(t, _)| {
                let sources: Vec<Source> =
                    (0..q.leaves.len()).map(|i| if t.mask & (1 << i) != 0 { delta(i) } else { new(i) }).collect();
                render::term_select_in(d, q, *t, &sources)
            })
            .collect(),
        Rule::NTerm => dec
            .program
            .nterm
            .iter()
            .filter(|(_, s)| *s == TermStatus::Run)
            .map(|&(i, _)| {
                let sources: Vec<Source> = crate::plan::nterm::states(&dec.program.order, i)
                    .into_iter()
                    .enumerate()
                    .map(|(j, state)| match state {
                        LeafState::New => new(j),
                        LeafState::Delta => delta(j),
                        LeafState::Old => {
                            let k = dec.leaf_table[j];
                            let cols = render::column_list(&q.table_columns(&tables[k]));
                            Source::Bounded(rc::old_state(d, &tables[k], &cols, &deltas[k]))
                        }
                    })
                    .collect();
                render::term_select_in(d, q, Term { mask: 1 << i, sign: 1 }, &sources)
            })
            .collect(),
    }
}

/// The program's statements: one MERGE of the run terms into the stored result (none when no
/// term runs).
pub fn program(d: Dialect, q: &ViewQuery, data: &Qualified, dec: &Decision) -> Vec<Statement> {
    let deltas = rc::delta_relations(&q.tables());
    let terms = term_selects(d, q, dec, &deltas);
    if terms.is_empty() {
        return vec![];
    }
    rc::apply_terms(d, q, data, &terms, dec.program.merge_keys.as_deref())
        .into_iter()
        .enumerate()
        .map(|(i, sql)| Statement { order: i as i64 + 1, kind: "merge", sql })
        .collect()
}

/// Whether `name` resolves to a table or view in DuckDB's catalog.
fn table_exists(db: &dyn Sql, name: &str) -> Result<bool> {
    Ok(SqlCatalog::new(db).find(&table_name(name)?)?.is_some())
}

/// Checks the arguments at bind: dialect and facts parse, the view exists and compiles, and the
/// facts name only its tables and their columns.
pub fn validate(db: &dyn Sql, name: &str, facts: &str, dialect: Option<&str>) -> Result<()> {
    parse_dialect(dialect)?;
    let f = parse_facts(facts)?;
    let (_, c, _) = Cache::default().compiled(db, name)?;
    resolve(&c.q, &f, &|n| table_exists(db, n)).map(|_| ())
}

/// The program of view `name` under the given facts, and its 'facts' row last.
pub fn compile(
    db: &dyn Sql,
    cache: &mut Cache,
    name: &str,
    facts: &str,
    dialect: Option<&str>,
) -> Result<Vec<Statement>> {
    let d = parse_dialect(dialect)?;
    let f = parse_facts(facts)?;
    let (_, c, _) = cache.compiled(db, name)?;
    let r = resolve(&c.q, &f, &|n| table_exists(db, n))?;
    // A program merges a delta: aggregates without a delta rule have none.
    if let Some(a) = c.q.recomputed_aggregates().first() {
        return Err(Error::InvalidArgument(format!(
            "'{name}' has {}, which has no delta rule (the view recomputes the groups a change touches); a \
             compiled program covers views whose aggregates all merge deltas",
            a.display()
        )));
    }
    // MIN/MAX merge only insert-only deltas; a refresh with deletes recomputes instead.
    if c.q.has_extrema() && r.shapes.iter().any(|s| s.delta_shape(r.assume_insert_only).contains(DeltaShape::DELETES)) {
        return Err(Error::InvalidArgument(format!(
            "'{name}' has MIN/MAX, which merge insert-only deltas only; declare every table's delta_shape \
             INSERT_ONLY or UNCHANGED (or assume_insert_only), or recompute the view after deletes"
        )));
    }
    let dec = decide(&c.q, &r);
    let mut out = program(d, &c.q, &c.view.data, &dec);
    let doc = facts_document(d, &c.q, &c.view.data, &dec);
    out.push(Statement { order: out.len() as i64 + 1, kind: "facts", sql: doc.to_string() });
    Ok(out)
}
