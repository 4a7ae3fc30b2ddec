//! The refresh history (`openivm_refresh_history`) and the rows create and refresh return.

use std::time::Instant;

use crate::db::Sql;
use crate::error::Result;
use crate::front::strategy::Strategy;
use crate::plan::mode;
use crate::render::{self, Qualified};
use crate::sql::capture::HISTORY_INSERT;

/// Milliseconds since `t`, to the microsecond: every time openivm reports (refresh results,
/// history) is measured by this, so none shows floating-point noise.
pub(crate) fn elapsed_ms(t: Instant) -> f64 {
    t.elapsed().as_micros() as f64 / 1000.0
}

/// One refresh (or the initial fill) as `openivm_refresh_history` records it.
pub struct HistoryRow<'a> {
    pub view: &'a Qualified,
    /// Microseconds between the refresh's start and its writing transaction's start.
    pub before_us: i64,
    pub mode: mode::Mode,
    pub reason: &'a str,
    pub counts: crate::plan::terms::TermCounts,
    pub delta_rows: i64,
    pub capture_ms: f64,
    pub apply_ms: f64,
    pub total_ms: f64,
    /// Of `capture_ms`, the one-time work of starting trigger feeds.
    pub setup_ms: f64,
    /// Each captured table and its change source, `t: source, ...` (empty: none captured).
    pub sources: String,
}

impl<'a> HistoryRow<'a> {
    /// A recompute that captured nothing (an initial fill, a refresh of a full view): all its
    /// time is applying.
    pub fn recompute(view: &'a Qualified, reason: &'a str, apply_ms: f64, total_ms: f64) -> HistoryRow<'a> {
        HistoryRow {
            view,
            before_us: 0,
            mode: mode::Mode::Full,
            reason,
            counts: Default::default(),
            delta_rows: 0,
            capture_ms: 0.0,
            apply_ms,
            total_ms,
            setup_ms: 0.0,
            sources: String::new(),
        }
    }
}

/// The parameters of `history_insert.sql` for one row.
pub(crate) fn history_params(h: &HistoryRow) -> [String; 15] {
    [
        h.view.name.clone(),
        h.view.schema.clone(),
        h.before_us.to_string(),
        h.mode.as_str().to_string(),
        h.reason.to_string(),
        h.counts.total.to_string(),
        h.counts.fk_pruned.to_string(),
        h.counts.empty_skipped.to_string(),
        h.counts.run.to_string(),
        h.delta_rows.to_string(),
        format!("{:.3}", h.capture_ms),
        format!("{:.3}", h.apply_ms),
        format!("{:.3}", h.total_ms),
        format!("{:.3}", h.setup_ms),
        h.sources.clone(),
    ]
}

pub(crate) fn record_history(db: &dyn Sql, h: &HistoryRow) -> Result<()> {
    let p = history_params(h);
    HISTORY_INSERT.run(db, std::array::from_fn(|i| p[i].as_str()))
}

/// What the refreshes of a round (`openivm_refresh_all`) record about themselves, written at its
/// end in two statements (each view's history row; its refresh time and count) instead of two
/// per view: the rows are the same, since the round is one transaction (`now()` is its start).
#[derive(Default)]
pub struct Refreshed {
    /// Each refresh's history row, as `history_insert.sql`'s parameters (view, schema, ...).
    history: Vec<[String; 15]>,
}

impl Refreshed {
    pub fn add(&mut self, h: &HistoryRow) {
        self.history.push(history_params(h));
    }

    pub fn flush(&self, db: &dyn Sql) -> Result<()> {
        if self.history.is_empty() {
            return Ok(());
        }
        db.execute(&render::capture::history_rows(&self.history))?;
        let views: Vec<(&str, &str)> = self.history.iter().map(|h| (h[1].as_str(), h[0].as_str())).collect();
        db.execute(&render::capture::views_refreshed(&views))
    }
}

pub struct Created {
    pub view: String,
    pub rows: i64,
    pub strategy: Strategy,
}
