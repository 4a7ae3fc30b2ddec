//! The old states the N-term (telescoping) rule reads, for views whose every table is a
//! DuckLake table: a DuckLake table's old state is readable as it was (`AT (VERSION => n)` at
//! the snapshot the view last applied). The planner (`plan::planner`) chooses the rule; this
//! module finds whether the old states can be read.

use crate::capture::SourceKind;
use crate::db::Sql;
use crate::error::Result;
use crate::ir::TableId;
use crate::plan::terms::TermStatus;
use crate::render::ducklake as lake_sql;

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
    let w = if feed.reader.cursor >= feed.seq {
        feed.watermark.as_deref()
    } else if feed.reader.cursor >= 0 {
        feed.reader.watermark.as_deref()
    } else {
        None
    };
    w.and_then(|w| w.parse().ok())
}

/// Whether every table of the view is a DuckLake table, whose old states time travel may read.
pub fn all_in_ducklake(tables: &[TableInput]) -> bool {
    !tables.is_empty() && tables.iter().all(|t| matches!(t.kind, SourceKind::DuckLake(_)))
}

/// The old state of every table of an all-DuckLake view (`all_in_ducklake`), as
/// `AT (VERSION => n)` sources in `tables` order, when the snapshot the view last applied is
/// known and still readable for each; else why not.
pub fn old_states(db: &dyn Sql, tables: &[TableInput]) -> Result<std::result::Result<Vec<String>, String>> {
    let mut old = Vec::new();
    for t in tables {
        let Some(snapshot) = t.old_snapshot else {
            return Ok(Err(
                "inclusion-exclusion rule: the snapshot at which the view has a table is not known (its cursor was \
                 written by an earlier version, or its feed restarted)"
                    .into(),
            ));
        };
        // The old state must still be readable (not expired).
        if db.scalar_int(&lake_sql::snapshots_between(&t.table.catalog, snapshot - 1, snapshot), &[])? != 1 {
            return Ok(Err(format!(
                "inclusion-exclusion rule: the old state of '{}' (snapshot {snapshot}) was expired",
                t.table.dotted()
            )));
        }
        old.push(lake_sql::at_version(t.table, snapshot));
    }
    Ok(Ok(old))
}
