//! Change capture: the net delta of each base table since a view last applied it.
//!
//! DuckDB's C API has no hook on writes, so capture is a stage of its own. Change state is kept
//! once per base table and set of read columns, in a *feed* shared by every view over it
//! (`feeds`); each view has a cursor into it. A capture reads what changed since the feed's
//! last capture (one capture per changed table, however many views read it), and the batch is
//! appended to the feed's change log only while some other view has not applied it yet.
//!
//! These sources produce the batches, chosen per table:
//! - `diff` (the default for native tables on DuckDB 1.5): a counted snapshot of the read columns, compared
//!   with the table. Exact for every writer, but it reads the whole table.
//! - `append_only` (a trusted declaration, `openivm_declare_append_only`): the rows past a
//!   watermark (the rowid, or a declared ever-increasing key). O(delta).
//! - `recorded` (a trusted declaration, `openivm_declare_recorded`): every write goes through
//!   `openivm_insert` / `openivm_delete` / `openivm_update`, which record their exact delta.
//!   O(delta).
//! - `ducklake` (tables of an attached DuckLake catalog, chosen automatically): DuckLake's own
//!   change data between the snapshot the feed last captured and the current one. O(delta)
//!   for inserts; deletions cost a scan of the data files that carry delete files.
//! - `trigger` (DuckDB 2.0, the default for native tables of databases that allow triggers):
//!   statement triggers openivm installs log every write's rows, from any writer. O(delta).
//!
//! Writes through openivm record their delta in the feed's *open batch* (`write`): rows of the
//! feed's change log numbered one past its newest batch, which no reader takes until the next
//! capture makes them (with what it finds itself) that batch, in place. They are all of a
//! recorded feed's changes, and the deletes and updates of a key-declared append-only feed
//! (whose inserts the watermark finds). A diff feed records nothing: the diff sees those writes
//! like any other.
//!
//! Every delta has the read columns plus `openivm_multiplicity` (+1 insert, -1 delete; an
//! update is a deleted old row and an inserted new row).

pub mod append_only;
pub mod batch;
pub mod batch_facts;
pub mod diff;
pub mod ducklake;
pub mod feed;
pub mod feeds;
pub mod recorded;
pub mod trigger;
pub mod view_delta;

pub use batch::{columns_key, netted_delta, temp_name, DeltaStats, Fresh, SourceKind};

use crate::db::{read_all, Sql};
use crate::error::{Error, Result};
use crate::ir::ColumnDef;
use crate::render::capture::Position;

/// `capture` of several feeds (feed, name, size now), with the statistics of every append-only
/// batch read in one statement. Stops at the first error (the caller's transaction then rolls
/// back the temp tables), except a DuckLake range that cannot be read, which is returned in its
/// place for the caller to recompute.
pub fn capture_all(db: &dyn Sql, feeds: &[(&feeds::Feed, String, i64)]) -> Result<Vec<Result<Fresh>>> {
    let mut read = Vec::new();
    for (feed, name, size) in feeds {
        if let SourceKind::AppendOnly(pos) = &feed.kind {
            read.push((append_only::read(db, feed, pos, name, *size)?, *feed, pos));
        }
    }
    let stats = if read.is_empty() {
        vec![]
    } else {
        let parts: Vec<_> = read.iter().map(|(r, f, pos)| r.part(f, pos)).collect();
        read_all::<append_only::FreshStats>(&db.query(&crate::render::capture::fresh_stats(&parts))?)?
    };
    let (mut read, mut stats) = (read.into_iter().map(|(r, _, _)| r), stats.iter());
    let mut out = Vec::new();
    for (feed, name, size) in feeds {
        let fresh = match &feed.kind {
            SourceKind::AppendOnly(pos) => {
                let fresh = read.next().ok_or_else(|| Error::Internal("a capture without its batch".into()))?;
                let row = stats.next().ok_or_else(|| Error::Internal("a capture without its statistics".into()))?;
                append_only::finish(db, feed, pos, fresh, row, name, *size)?
            }
            SourceKind::DuckLake(_) => match capture(db, feed, name, *size) {
                Err(e @ Error::BrokenPromise(_)) => {
                    out.push(Err(e));
                    continue;
                }
                other => other?,
            },
            _ => capture(db, feed, name, *size)?,
        };
        out.push(Ok(fresh));
    }
    Ok(out)
}

/// Captures what changed in the feed's table since its last capture into temp tables named
/// after `name`.
pub fn capture(db: &dyn Sql, feed: &feeds::Feed, name: &str, size_now: i64) -> Result<Fresh> {
    match &feed.kind {
        SourceKind::Diff => diff::capture(db, feed, name, size_now),
        SourceKind::AppendOnly(pos) => append_only::capture(db, feed, pos, name, size_now),
        SourceKind::Recorded => recorded::capture(db, feed, name, size_now),
        SourceKind::DuckLake(id) => ducklake::capture(db, feed, *id, name, size_now),
        SourceKind::Trigger => trigger::capture(db, feed, name, size_now),
    }
}

/// Restarts an append-only or DuckLake feed from its table as it is now, without reading the
/// changes: for a view that recomputes and is the feed's only reader. No promise is checked (the
/// recompute reads the table as it is). None: this feed cannot restart so (another source, or a
/// DuckLake table dropped and created again, which the capture reports).
pub fn rebaseline(db: &dyn Sql, feed: &feeds::Feed, size_now: i64) -> Result<Option<Fresh>> {
    let (watermark, row_count, size_seen) = match &feed.kind {
        SourceKind::AppendOnly(pos) => {
            let (watermark, count) = append_only::baseline(db, &feed.table, pos)?;
            let size_seen = append_only::size_accounted(feed, size_now, count, pos, watermark.as_deref());
            (watermark, count, size_seen)
        }
        SourceKind::DuckLake(id) => match ducklake::rebaseline(db, feed, *id)? {
            Some(w) => (Some(w), feed.row_count, size_now),
            None => return Ok(None),
        },
        _ => return Ok(None),
    };
    Ok(Some(Fresh {
        delta: None,
        stats: DeltaStats::default(),
        watermark,
        row_count,
        size_seen,
        net: None,
        took_pending: false,
        logged: 0,
        unstamped: false,
        facts: None,
    }))
}

/// What the appended-row count says about a table since its feed's last capture: an
/// append-only or recorded table whose appended-row count did not move since the last capture,
/// and that has no pending batch, has no new rows (a diff
/// table can only be known by reading it, a DuckLake table by its snapshots: deletes do not
/// move the appended-row count). The count is no proof for a key-declared table: a CHECKPOINT
/// (DuckDB runs them on its own, in memory too) drops deleted rows from it, those held at the
/// capture or those of a DELETE since (a broken promise), and as many new rows bring it back to
/// the number seen (`Unchanged::UnlessPastKey`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unchanged {
    /// Nothing was appended.
    Yes,
    /// The count did not move, but a CHECKPOINT may have dropped deleted rows from it since the
    /// capture: nothing was appended if no row lies past the key watermark (and, when the count
    /// included deleted rows at the capture, the table holds the rows it held then).
    UnlessPastKey,
    /// Read the table.
    No,
}

pub fn unchanged_by_size(feed: &feeds::Feed, size_now: i64) -> Unchanged {
    let same = size_now == feed.size_seen && feed.pending_rows == 0;
    match &feed.kind {
        _ if !same => Unchanged::No,
        // Deletes go through openivm only: a checkpoint dropping them and a direct insert of as
        // many rows would break the promise anyway (not seen, as a direct update is not).
        SourceKind::Recorded => Unchanged::Yes,
        SourceKind::AppendOnly(Position::Key(_)) => Unchanged::UnlessPastKey,
        SourceKind::AppendOnly(_) if feed.size_seen <= feed.row_count => Unchanged::Yes,
        _ => Unchanged::No,
    }
}

/// Whether a capture can be skipped (`unchanged_by_size`); for a key-declared table, whether no
/// row lies past the key watermark (DuckDB's zonemaps skip the blocks before it: a DELETE, a
/// CHECKPOINT and as many inserts leave the appended-row count as it was, and the capture then
/// run reports the deleted rows) and, for a table holding deleted rows at the capture, the table
/// holds the rows counted then: a CHECKPOINT that dropped them can hide as many inserts below the
/// watermark (a broken promise) from the appended-row count; the row count shows them.
pub fn unchanged_now(db: &dyn Sql, feed: &feeds::Feed, size_now: i64) -> Result<bool> {
    match (unchanged_by_size(feed, size_now), &feed.kind) {
        (Unchanged::Yes, _) => Ok(true),
        (Unchanged::UnlessPastKey, SourceKind::AppendOnly(pos)) if feed.size_seen <= feed.row_count => {
            let past = crate::render::capture::count_past(&feed.table, pos, feed.watermark.as_deref());
            Ok(db.scalar_int(&past, &[])? == 0)
        }
        (Unchanged::UnlessPastKey, SourceKind::AppendOnly(pos)) => {
            let counts = crate::render::capture::count_past_and_all(&feed.table, pos, feed.watermark.as_deref());
            let rows: Vec<(i64, i64)> = read_all(&db.query(&counts)?)?;
            let Some(&(past, all)) = rows.first() else { return Ok(false) };
            Ok(past == 0 && all == feed.row_count)
        }
        _ => Ok(false),
    }
}

/// How a view attaching to a shared diff feed may skip the diff of the whole table that brings
/// the feed's snapshot up to date before the view's cursor is set (`mode::start_by_recomputing`
/// decides whether it does).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkipDiff {
    /// The feed tracks every column the view reads: the view joins with a cursor of -1 and
    /// recomputes at its first refresh (`feeds::join_to_recompute`).
    Join,
    /// The view reads columns the feed does not track: the feed starts again from the table as
    /// it is, with the wider columns, the view at its head and every other view of it at -1
    /// (`feeds::widen_by_restarting`).
    Restart,
}

/// Whether, and how, a view attaching to `feed` (reading `columns`, under the declared `kind`)
/// may skip capturing the feed's changes first: only for a diff feed other views read already,
/// whose snapshot only a diff of the whole table can bring up to date. Not when the feed must
/// switch sources (it starts again from the table as it is, after its last batch is captured),
/// nor with writes recorded through openivm waiting.
pub fn skip_diff(feed: &feeds::Feed, kind: &SourceKind, columns: &[ColumnDef]) -> Option<SkipDiff> {
    let shared_diff = feed.reader.consumers > 0
        && matches!(feed.kind, SourceKind::Diff)
        && &feed.kind == kind
        && feed.pending_rows == 0;
    shared_diff.then(|| if feed.covers(columns) { SkipDiff::Join } else { SkipDiff::Restart })
}

/// Whether a refresh captures this source in its first transaction (O(delta) sources), so
/// that the optimizer sees the committed deltas' sizes.
pub fn captured_first(kind: &SourceKind) -> bool {
    matches!(kind, SourceKind::AppendOnly(_) | SourceKind::Recorded | SourceKind::DuckLake(_))
}

/// The table's state a refresh's current-state scans must read when they run in a later
/// transaction than the capture: an append-only table bounded by the watermark the capture
/// reached, a DuckLake table as of the snapshot the capture reached (None: read the table as it
/// is).
pub fn bounded_state(feed: &feeds::Feed, fresh: &Fresh) -> Option<String> {
    match &feed.kind {
        SourceKind::AppendOnly(pos) => {
            Some(crate::render::capture::bounded_state(&feed.table, pos, fresh.watermark.as_deref()))
        }
        SourceKind::DuckLake(_) => lake_state(feed, fresh),
        SourceKind::Diff | SourceKind::Recorded | SourceKind::Trigger => None,
    }
}

/// A DuckLake table's current-state scans, in whichever transaction they run, read the
/// snapshot its delta leads to: the lake's snapshot is fixed per transaction, at the first
/// access to the lake, so a scan in another transaction, or a capture that found the table
/// unchanged while writers committed, would otherwise read a state its cursor does not name.
pub fn lake_state(feed: &feeds::Feed, fresh: &Fresh) -> Option<String> {
    let SourceKind::DuckLake(_) = feed.kind else { return None };
    let snapshot = fresh.watermark.as_deref()?.parse::<i64>().ok()?;
    Some(crate::render::ducklake::at_version(&feed.table, snapshot))
}

/// Drops the temp tables a capture made.
pub fn discard(db: &dyn Sql, fresh: &Fresh) -> Result<()> {
    // A batch taken where it lies in the feed's log is only borrowed (`view_delta::owned`).
    for t in [&fresh.delta, &fresh.net].into_iter().flatten().filter(|t| view_delta::owned(t)) {
        db.execute(&crate::render::drop_table(t))?;
    }
    Ok(())
}
