//! A feed as the metadata row records it (`openivm.feeds`), with the reading view's cursor
//! into it, and the names of its internal tables.

use super::batch::{DeltaStats, Fresh, SourceKind};
use super::batch_facts::BatchFacts;
use crate::db::{FromRow, Row, Sql};
use crate::error::{Error, Result};
use crate::ir::{ColumnDef, TableId};
use crate::render::capture::{self as sql, Position};
use crate::render::Qualified;
use crate::store::feed_state::FeedState;
use crate::store::home;
use crate::store::metadata::SCHEMA;

/// A view by (schema, name).
pub type ViewName = (String, String);

/// A view's delta of one table: its relation (None: nothing to apply) and statistics.
pub type ViewDelta = (Option<Qualified>, DeltaStats);

/// A feed's row in `openivm.feeds`, as `feeds_of_view.sql` reads it: the table it follows, the
/// columns it keeps, then its state.
pub struct StoredFeed {
    pub id: i64,
    pub table: TableId,
    pub columns: String,
    pub state: FeedState,
}

impl FromRow for StoredFeed {
    fn from_row(r: &Row) -> Result<StoredFeed> {
        let (id, catalog, schema, name, columns): (i64, String, String, String, String) = FromRow::from_row(r)?;
        let state = FeedState::from_row(&r.get(5..).unwrap_or_default().to_vec())?;
        Ok(StoredFeed { id, table: TableId { catalog, schema, name }, columns, state })
    }
}

/// One feed: its persisted state, and the reading view's position in it.
#[derive(Clone, Debug)]
pub struct Feed {
    pub id: i64,
    pub catalog: String,
    pub table: TableId,
    pub columns: Vec<ColumnDef>,
    pub kind: SourceKind,
    pub watermark: Option<String>,
    pub row_count: i64,
    pub size_seen: i64,
    pub seq: i64,
    pub log_rows: i64,
    /// Rows of the open batch: deltas recorded by writes through openivm since the last capture
    /// (`open_batch`), which the next capture takes in.
    pub pending_rows: i64,
    /// Rows and deleted rows of batch `seq` as logged (-1: not known), see `logged_deltas`.
    pub batch_rows: i64,
    pub batch_deletes: i64,
    /// What a key check found about batch `seq` (see `fk_pruning`).
    pub batch_facts: Option<BatchFacts>,
    pub reader: Reader,
}

/// The reading view's position in a feed, and the feed's other readers.
#[derive(Clone, Debug, Default)]
pub struct Reader {
    /// The reading view's cursor (the feed's `seq` for a view not attached yet).
    pub cursor: i64,
    /// The feed's watermark when the reading view's cursor last moved (None: not recorded, or
    /// the feed has none): a DuckLake feed's snapshot at which the view's state of the table is.
    pub watermark: Option<String>,
    /// Views with a cursor into this feed.
    pub consumers: i64,
    /// The oldest cursor of the feed's other views (None: no other view, or not read), as
    /// `of_view` read them: with the reading view's cursor it says how far the log is trimmed.
    pub others_min: Option<i64>,
}

impl Reader {
    /// A reader at `seq` with no other view known.
    pub fn at(seq: i64) -> Reader {
        Reader { cursor: seq, ..Reader::default() }
    }
}

impl Feed {
    pub(super) fn internal(&self, prefix: &str) -> Qualified {
        Qualified { catalog: self.catalog.clone(), schema: SCHEMA.into(), name: format!("{prefix}_{}", self.id) }
    }

    /// The counted snapshot of a diff feed.
    pub fn snapshot(&self) -> Qualified {
        self.internal("snapshot")
    }

    /// The change log: batches some view has not applied.
    pub fn log(&self) -> Qualified {
        self.internal("log")
    }

    /// The open batch: deltas recorded by writes through openivm, not captured yet, in the log
    /// as the batch after the newest.
    pub fn open_batch(&self) -> sql::OpenBatch {
        sql::OpenBatch { log: self.log(), seq: self.seq + 1 }
    }

    /// Where earlier versions kept the open batch, in a table of its own (`upgrade`).
    pub(super) fn legacy_pending(&self) -> Qualified {
        self.internal("pending")
    }

    /// The feed a stored row describes, in the database `catalog`, read by no view yet.
    pub(super) fn from_stored(catalog: &str, r: StoredFeed) -> Result<Feed> {
        let columns: Vec<ColumnDef> = serde_json::from_str(&r.columns)
            .map_err(|e| Error::Internal(format!("a feed's column list is not readable: {e}")))?;
        let s = r.state;
        let kind = match s.source.as_str() {
            "diff" => SourceKind::Diff,
            "append_only" => match s.key_column.as_deref().filter(|k| !k.is_empty()) {
                None => SourceKind::AppendOnly(Position::RowId),
                Some(key) => {
                    let c: ColumnDef = serde_json::from_str(key)
                        .map_err(|e| Error::Internal(format!("a feed's key column is not readable: {e}")))?;
                    SourceKind::AppendOnly(Position::Key(c))
                }
            },
            "recorded" => SourceKind::Recorded,
            "trigger" => SourceKind::Trigger,
            "ducklake" => SourceKind::DuckLake(
                s.key_column
                    .unwrap_or_default()
                    .parse::<i64>()
                    .map_err(|e| Error::Internal(format!("a feed's DuckLake table id: {e}")))?,
            ),
            other => return Err(Error::Internal(format!("unknown change source '{other}'"))),
        };
        Ok(Feed {
            id: r.id,
            catalog: catalog.to_string(),
            table: home::live_table(catalog, r.table),
            columns,
            kind,
            watermark: s.watermark.filter(|w| !w.is_empty()),
            row_count: s.row_count,
            size_seen: s.size_seen,
            seq: s.seq,
            log_rows: s.log_rows,
            pending_rows: s.pending_rows,
            batch_rows: s.batch_rows,
            batch_deletes: s.batch_deletes,
            batch_facts: s.batch_facts.as_deref().and_then(BatchFacts::from_text),
            reader: Reader::at(s.seq),
        })
    }

    /// `from_stored` of a row of `feeds_of_view.sql`'s columns.
    pub(super) fn from_row(catalog: &str, r: &Row) -> Result<Feed> {
        Feed::from_stored(catalog, StoredFeed::from_row(r)?)
    }

    /// The feed's state as `feeds_update` writes it.
    pub(super) fn state(&self) -> (i64, FeedState) {
        let key_column = Some(self.kind.key_column()).filter(|k| !k.is_empty());
        let state = FeedState {
            source: self.kind.as_str().to_string(),
            key_column,
            watermark: self.watermark.clone(),
            row_count: self.row_count,
            size_seen: self.size_seen,
            seq: self.seq,
            log_rows: self.log_rows,
            pending_rows: self.pending_rows,
            batch_rows: self.batch_rows,
            batch_deletes: self.batch_deletes,
            batch_facts: self.facts().map(BatchFacts::to_text),
        };
        (self.id, state)
    }

    /// Notes the statistics of batch `seq`, just appended to the log.
    pub(super) fn logged(&mut self, stats: &DeltaStats) {
        self.batch_rows = stats.rows as i64;
        self.batch_deletes = stats.deletes as i64;
        self.batch_facts = None;
    }

    /// The facts known about batch `seq` (none recorded for an earlier batch hold for it).
    pub fn facts(&self) -> Option<&BatchFacts> {
        self.batch_facts.as_ref().filter(|f| f.seq == self.seq)
    }

    /// The counts `logged_deltas` would read from the log for the reading view, known without
    /// reading it when the view's delta is exactly batch `seq` and the log holds nothing else (the
    /// view is one batch behind, and the log's rows are that batch's): the rows and deletes its
    /// capture counted, and the log's rows. None: the log must be counted.
    pub(super) fn known_log_counts(&self) -> Option<(DeltaStats, u64)> {
        let just_the_last = self.reader.cursor >= 0 && self.reader.cursor + 1 == self.seq;
        if !just_the_last
            || self.batch_rows <= 0
            || self.batch_deletes < 0
            || self.log_rows != self.batch_rows
            || self.pending_rows != 0
        {
            return None;
        }
        let after = DeltaStats { rows: self.batch_rows as u64, deletes: self.batch_deletes as u64 };
        Some((after, self.log_rows as u64))
    }

    /// The reading view's delta taken from the log, given the log's rows after its cursor
    /// (`after`) and all of them (`whole`): nothing when no row is after the cursor, the log
    /// itself when every row is and none deletes or the view need not net them (`nets`, see
    /// `view_delta`); None otherwise (`view_delta` copies, and nets, the rows after the cursor).
    pub(super) fn delta_in_log(&self, after: DeltaStats, whole: u64, nets: bool) -> Option<ViewDelta> {
        if after.rows == 0 {
            Some((None, after))
        } else if after.rows == whole && (after.deletes == 0 || !nets) {
            Some((Some(self.log()), after))
        } else {
            None
        }
    }

    /// Whether the reading view's cursor is at the feed's newest batch (a cursor of -1, marked
    /// by `rebuild`, counts as there: such a view recomputes).
    pub fn at_head(&self) -> bool {
        self.reader.cursor >= self.seq || self.reader.cursor < 0
    }

    pub fn save(&self, db: &dyn Sql) -> Result<()> {
        db.execute(&sql::feeds_update(&[self.state()]))
    }
}

impl Feed {
    /// A capture that found the table as the feed last saw it.
    pub fn unchanged(&self) -> Fresh {
        Fresh {
            delta: None,
            stats: DeltaStats::default(),
            watermark: self.watermark.clone(),
            row_count: self.row_count,
            size_seen: self.size_seen,
            net: None,
            took_pending: false,
            logged: 0,
            unstamped: false,
            facts: None,
        }
    }

    /// Whether a capture moved this feed: it found rows (on the feed's columns, whichever views
    /// read them), took the open batch, or saw a new watermark, size or row count. Such a capture
    /// must be recorded even when the refreshing view's own delta is empty, or the batch it took
    /// out of the table's change log is lost for the feed's other views.
    pub fn moved_by(&self, fresh: &Fresh) -> bool {
        fresh.stats.rows > 0
            || fresh.watermark != self.watermark
            || fresh.size_seen != self.size_seen
            || fresh.row_count != self.row_count
            || fresh.took_pending
    }

    /// Whether a capture of this feed may find its batch to be the open batch alone: writes through
    /// openivm wait in it, and (for an append-only table) the appended-row count did not move since
    /// the last capture, a hint the capture's statistics confirm. Before such a capture the logged
    /// batches every view applied are trimmed (`feeds::trim_applied`), so that the log holds the open
    /// batch alone and the capture takes it where it lies.
    pub fn in_place_hint(&self, size_now: i64) -> bool {
        self.pending_rows > 0
            && match &self.kind {
                SourceKind::Recorded => true,
                SourceKind::AppendOnly(Position::Key(_)) => size_now == self.size_seen,
                _ => false,
            }
    }

    /// Whether the feed tracks every one of `columns`.
    pub fn covers(&self, columns: &[ColumnDef]) -> bool {
        columns.iter().all(|c| self.columns.contains(c))
    }
}
