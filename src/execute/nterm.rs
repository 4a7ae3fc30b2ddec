//! The N-term (telescoping) rule in a refresh, for views whose every table is a DuckLake table:
//! a DuckLake table's old state is readable as it was (`AT (VERSION => n)` at the snapshot the
//! view last applied), so a term can read the leaves after its delta leaf at their old state.
//! The rule and its leaf order are in `telescope`; this module decides whether a refresh can
//! and should use it, and says why.

use crate::capture::SourceKind;
use crate::db::Sql;
use crate::error::Result;
use crate::facts::ProvenRelation;
use crate::ir::TableId;
use crate::plan::{self, DeltaShape, Term, TermStatus};
use crate::render::ducklake as lake_sql;
use crate::telescope;

/// An N-term plan chosen for a refresh.
#[derive(Clone, Debug)]
pub struct NTerm {
    /// The leaves in the order of the rule (referenced leaves first).
    pub order: Vec<usize>,
    /// One term per leaf, in `order`.
    pub terms: Vec<(usize, TermStatus)>,
    /// Per table of the view: its old state, as the view last applied it.
    pub old: Vec<String>,
    /// Why the rule was chosen.
    pub why: String,
}

/// What the refresh knows of one table of the view for this choice.
pub struct TableInput<'a> {
    pub table: &'a TableId,
    pub kind: &'a SourceKind,
    /// The snapshot at which the view's stored result has the table (`old_snapshot`).
    pub old_snapshot: Option<i64>,
}

/// The snapshot at which a view's stored result has a DuckLake feed's table: the feed's
/// watermark before this refresh when the view had applied every batch of the feed; else the
/// watermark recorded with the view's cursor when it last moved (the batches logged since then
/// are exactly the table's changes after it). None: not known (a cursor written before the
/// watermark was recorded, or a feed restarted for the view's readers).
pub fn old_snapshot(feed: &crate::capture::feeds::Feed) -> Option<i64> {
    let w = if feed.cursor >= feed.seq {
        feed.watermark.as_deref()
    } else if feed.cursor >= 0 {
        feed.cursor_watermark.as_deref()
    } else {
        None
    };
    w.and_then(|w| w.parse().ok())
}

/// The rule a refresh takes: the N-term plan, or inclusion-exclusion with a note on why the
/// N-term rule was not taken (None: the rule does not apply to the view at all).
pub enum Choice {
    NTerm(NTerm),
    InclusionExclusion(Option<String>),
}

/// Decides the rule for a view whose leaves read `tables` (`leaf_table[i]`: leaf i's table).
pub fn choose(
    db: &dyn Sql,
    aliases: &[String],
    leaf_table: &[usize],
    tables: &[TableInput],
    shapes: &[DeltaShape],
    relations: &[ProvenRelation],
    ie: &[(Term, TermStatus)],
) -> Result<Choice> {
    if tables.is_empty() || !tables.iter().all(|t| matches!(t.kind, SourceKind::DuckLake(_))) {
        return Ok(Choice::InclusionExclusion(None));
    }
    let n = leaf_table.len();
    let order = telescope::leaf_order(n, relations);
    let terms = telescope::terms(&order, shapes, relations);
    let (nt, ie_counts) = (telescope::count(&terms), plan::count_terms(ie));
    if !telescope::cheaper(nt, ie_counts) {
        return Ok(Choice::InclusionExclusion(Some(format!(
            "inclusion-exclusion rule: it runs {} of {} terms, the N-term rule would run {} of {}",
            ie_counts.run, ie_counts.total, nt.run, nt.total
        ))));
    }
    let mut old = Vec::new();
    for t in tables {
        let Some(snapshot) = t.old_snapshot else {
            return Ok(Choice::InclusionExclusion(Some(
                "inclusion-exclusion rule: the snapshot at which the view has a table is not known (its cursor was \
                 written by an earlier version, or its feed restarted)"
                    .into(),
            )));
        };
        // The old state must still be readable (not expired).
        if db.scalar_int(&lake_sql::snapshots_between(&t.table.catalog, snapshot - 1, snapshot), &[])? != 1 {
            return Ok(Choice::InclusionExclusion(Some(format!(
                "inclusion-exclusion rule: the old state of '{}.{}.{}' (snapshot {snapshot}) was expired",
                t.table.catalog, t.table.schema, t.table.name
            ))));
        }
        old.push(lake_sql::at_version(t.table, snapshot));
    }
    let why = format!(
        "N-term rule (all tables in DuckLake): it runs {} of {} terms, inclusion-exclusion {} of {}; leaves in the \
         order {}{}",
        nt.run,
        nt.total,
        ie_counts.run,
        ie_counts.total,
        order.iter().map(|&i| aliases.get(i).map_or("?", |a| a.as_str())).collect::<Vec<_>>().join(", "),
        if nt.fk_pruned > 0 { " (referenced leaves first, so their insert-only terms are empty)" } else { "" }
    );
    Ok(Choice::NTerm(NTerm { order, terms, old, why }))
}
