//! A captured batch: the change sources, a batch's statistics, the fresh batch a capture
//! returns, and the temp tables that hold deltas.

use super::batch_facts::BatchFacts;
use crate::db::{FromRow, Row, Sql};
use crate::error::{Error, Result};
use crate::ir::ColumnDef;
use crate::plan::terms::DeltaShape;
use crate::render::capture::Position;
use crate::render::Qualified;

/// Which source a table's changes come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceKind {
    Diff,
    AppendOnly(Position),
    Recorded,
    /// A table of a DuckLake catalog, with its durable DuckLake table id.
    DuckLake(i64),
    /// Statement triggers openivm installs append every write's rows to the log (DuckDB 2.0).
    Trigger,
}

impl SourceKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            SourceKind::Diff => "diff",
            SourceKind::AppendOnly(_) => "append_only",
            SourceKind::Recorded => "recorded",
            SourceKind::DuckLake(_) => "ducklake",
            SourceKind::Trigger => "trigger",
        }
    }

    /// The declared key column as stored in a feed (JSON of its name and type; empty: rowid).
    pub fn key_column(&self) -> String {
        match self {
            SourceKind::AppendOnly(Position::Key(c)) => serde_json::to_string(c).unwrap_or_default(),
            SourceKind::DuckLake(id) => id.to_string(),
            _ => String::new(),
        }
    }
}

/// What a capture or a view's delta holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeltaStats {
    pub rows: u64,
    /// Rows with multiplicity -1 (deletes, and the old halves of updates).
    pub deletes: u64,
}

impl DeltaStats {
    /// Which kinds of rows the delta holds.
    pub fn shape(&self) -> DeltaShape {
        DeltaShape::of(self.rows, self.deletes)
    }

    /// Reads (rows, deletes, ...) from a stats query's single row.
    pub(crate) fn from_row(row: Option<&Row>) -> Result<(DeltaStats, Option<String>)> {
        let row = row.ok_or_else(|| Error::Internal("a delta statistics query returned no row".into()))?;
        let (rows, deletes, extra): (u64, u64, Option<String>) = FromRow::from_row(row)?;
        Ok((DeltaStats { rows, deletes }, extra))
    }
}

/// A batch just captured from a table, not yet recorded in its feed.
#[derive(Clone, Debug)]
pub struct Fresh {
    /// Temp table with the read columns and the multiplicity (None: nothing changed).
    pub delta: Option<Qualified>,
    pub stats: DeltaStats,
    /// The feed's state after this batch.
    pub watermark: Option<String>,
    pub row_count: i64,
    pub size_seen: i64,
    /// diff: the net change the snapshot advances by.
    pub net: Option<Qualified>,
    /// The batch took in the feed's open batch (writes recorded through openivm, kept in the
    /// feed's log as the batch after its newest: committing this batch makes them part of it).
    pub took_pending: bool,
    /// Rows of the batch that came from the open batch: they are in the log already.
    pub logged: u64,
    /// The batch is the trigger log's unstamped rows, read where they lie (`delta` is the log):
    /// the commit deletes them, or stamps them as the batch when another view needs it.
    pub unstamped: bool,
    /// What this refresh's key checks found about the batch, recorded as the feed's batch facts
    /// if the commit logs the whole batch.
    pub facts: Option<BatchFacts>,
}

/// The columns of a table a feed tracks, in table order (the feed's identity with the table).
pub fn columns_key(columns: &[ColumnDef]) -> String {
    serde_json::to_string(columns).unwrap_or_default()
}

/// Stores the net change of delta `parts` (on `columns`) as the delta table `name`, in one
/// statement, and returns its statistics; with no row left, the table is dropped again.
pub fn netted_delta(db: &dyn Sql, name: &Qualified, parts: &[String], columns: &[ColumnDef]) -> Result<DeltaStats> {
    db.execute(&crate::render::create_temp_table_as(name, &crate::render::capture::netted_parts(parts, columns)))?;
    let (stats, _) = DeltaStats::from_row(db.query(&crate::render::capture::delta_stats(name))?.first())?;
    if stats.rows == 0 {
        db.execute(&crate::render::drop_table(name))?;
    }
    Ok(stats)
}

/// The delta name of the k-th table of a refresh.
pub fn temp_name(prefix: &str, k: usize) -> Qualified {
    Qualified::temp(format!("openivm_{prefix}_{k}"))
}
