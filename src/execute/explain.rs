//! `openivm_explain`: what the next refresh would run, term by term, without applying it.

use std::time::Instant;

use super::cache::Cache;
use super::prepare::{discard_temp_tables, first_transaction, second_transaction};
use super::prepared::{First, Options};
pub use super::report::RefreshReport;
use crate::db::{in_transaction, Sql};
use crate::error::Result;
use crate::front::strategy::Strategy;
use crate::plan::mode::Mode;
use crate::plan::terms::{self as plan, TermStatus};

pub struct ExplainRow {
    pub mask: u32,
    pub delta_leaves: String,
    pub sign: i32,
    pub status: TermStatus,
    pub reason: String,
    pub sql: String,
    pub mode: Mode,
    pub mode_reason: String,
}

/// Each table of view `name` and the change source its next refresh captures it with, as
/// `table: source (why)` (empty for a view that is recomputed).
pub fn sources_of(db: &dyn Sql, cache: &mut Cache, name: &str) -> Result<String> {
    if cache.strategy(db, name)? == Strategy::Full {
        return Ok(String::new());
    }
    let (_, c, _) = cache.compiled(db, name)?;
    let named: Vec<String> = c
        .tables
        .iter()
        .zip(c.sources.iter().zip(&c.source_why))
        .map(|(t, (s, why))| format!("{}: {} ({})", t.name, s.as_str(), why.text()))
        .collect();
    Ok(named.join(", "))
}

/// The plan of the next refresh, without applying it: the capture runs in transactions whose
/// persistent writes are rolled back (only temp tables are committed, and dropped).
pub fn explain(db: &dyn Sql, cache: &mut Cache, name: &str, opts: Options) -> Result<Vec<ExplainRow>> {
    if cache.strategy(db, name)? == Strategy::Full {
        let view = super::full::record(db, cache, name)?;
        return Ok(vec![ExplainRow {
            mask: 0,
            delta_leaves: String::new(),
            sign: 1,
            status: TermStatus::Run,
            reason: format!(
                "recompute of the whole view: no incremental rule for {}",
                view.strategy_reason.as_deref().unwrap_or("its query")
            ),
            sql: view.query.clone(),
            mode: Mode::Full,
            mode_reason: super::full::mode_reason(&view),
        }]);
    }
    let started = Instant::now();
    let first = in_transaction(db, || first_transaction(db, cache, name, &opts))?;
    let go = match first {
        First::NothingToDo { c } => {
            return Ok(plan::union_terms(&c.q.spans())
                .into_iter()
                .map(|t| ExplainRow {
                    mask: t.mask,
                    delta_leaves: plan::leaves_of(t.mask)
                        .map(|i| c.q.leaves[i].alias.clone())
                        .collect::<Vec<_>>()
                        .join(","),
                    sign: t.sign,
                    status: TermStatus::EmptySkipped,
                    reason: "empty delta: no table changed".into(),
                    sql: String::new(),
                    mode: Mode::Incremental,
                    mode_reason: "nothing to do: no table changed".into(),
                })
                .collect());
        }
        First::Go(go) => go,
    };
    let first_inputs = go.temp_tables();
    db.execute("BEGIN TRANSACTION")?;
    let prepared = second_transaction(db, go, started, None);
    let outcome = prepared.map(|p| {
        if p.plan.is_empty() {
            // Recomputed without capturing (a view that does not track its tables): one row.
            return vec![ExplainRow {
                mask: 0,
                delta_leaves: String::new(),
                sign: 1,
                status: TermStatus::Run,
                reason: "recompute of the whole view".into(),
                sql: p.full_sql(),
                mode: p.mode,
                mode_reason: p.reason.clone(),
            }];
        }
        if let Some(nt) = &p.nterm {
            return nt
                .terms
                .iter()
                .map(|&(i, s)| ExplainRow {
                    mask: 1 << i,
                    delta_leaves: p.c.q.leaves[i].alias.clone(),
                    sign: 1,
                    status: s,
                    reason: p.nterm_reason(nt, i, s),
                    sql: p.nterm_sql(nt, i),
                    mode: p.mode,
                    mode_reason: p.reason.clone(),
                })
                .collect();
        }
        p.plan
            .iter()
            .map(|&(t, s)| ExplainRow {
                mask: t.mask,
                delta_leaves: p.delta_leaves(t),
                sign: t.sign,
                status: s,
                reason: p.reason(t, s),
                sql: match p.group_lookup().filter(|_| s == TermStatus::Run) {
                    Some(g) => p.reduced_term_sql(t, g),
                    None => p.term_sql(t),
                },
                mode: p.mode,
                mode_reason: p.reason.clone(),
            })
            .collect::<Vec<_>>()
    });
    let _ = db.execute("ROLLBACK");
    discard_temp_tables(db, &first_inputs);
    outcome
}
