//! The append-only source: a table its owner declared to receive only inserts. A capture reads
//! the rows past the feed's watermark, the next rowid or the largest value of a declared
//! ever-increasing key, so it costs O(delta) (with a key, DuckDB's zonemaps skip the old
//! blocks; a rowid filter still visits them).
//!
//! The promise is checked where that is cheap: the table must hold exactly the rows it held at
//! the last capture plus the new ones. A delete (or an insert below the watermark) breaks that
//! count and fails the refresh with an error naming the table. An UPDATE in place keeps the
//! count and cannot be seen without reading the whole table: `openivm_verify` finds it.
//!
//! Deletes and updates made through openivm (`write`) on a key-declared table are recorded in
//! the feed's open batch, which a capture adds to the rows past the watermark; the feed's row
//! count then already includes the open batch's net rows.

use super::batch::{temp_name, DeltaStats, Fresh};
use super::feed::Feed;
use crate::db::{read_one, typed_row, Sql};
use crate::error::{Error, Result};
use crate::render::capture::{self as sql, Position};
use crate::render::{self, Qualified};

/// The first watermark and row count of a table: everything in it now counts as seen.
pub fn baseline(db: &dyn Sql, feed_table: &crate::ir::TableId, pos: &Position) -> Result<(Option<String>, i64)> {
    let count = db.scalar_int(&sql::count_all(feed_table), &[])?;
    let watermark = match pos {
        Position::RowId => Some(db.scalar_int(&render::next_rowid(feed_table), &[])?.to_string()),
        Position::Key(key) => db.scalar(&sql::max_key(feed_table, key), &[])?,
    };
    Ok((watermark, count))
}

/// The appended-row count a capture records, from `estimated_size` now and the table's row count
/// in this transaction's snapshot. `estimated_size` already counts the rows of a commit still in
/// progress, which the snapshot does not show: recording it would make the next refresh find the
/// size unchanged and skip those rows until the next insert. While every row appended so far was
/// visible (no delete, nothing pending), the snapshot's row count is what this capture accounts
/// for. A table that has had deletes keeps `estimated_size` (its deleted rows are in it too, and
/// cannot be told from a commit in progress), as does a feed's first state.
///
/// A rowid watermark with holes below it (`holes_below` of the new state) keeps `estimated_size`
/// too: its holes then show as deleted rows, so a capture runs (`unchanged_by_size`) and sees a
/// CHECKPOINT close them (`renumbered`) even when new rows bring the count back.
pub fn size_accounted(feed: &Feed, size_now: i64, count: i64, pos: &Position, watermark: Option<&str>) -> i64 {
    let holes = holes_below(pos, watermark.and_then(|w| w.parse::<i64>().ok()), count);
    let all_shown = feed.size_seen == feed.row_count && feed.pending_rows == 0 && holes == 0;
    if all_shown {
        size_now.min(count)
    } else {
        size_now
    }
}

pub fn capture(db: &dyn Sql, feed: &Feed, pos: &Position, name: &str, size_now: i64) -> Result<Fresh> {
    let read = read(db, feed, pos, name, size_now)?;
    // The batch's size and last position, and the table's row count, in one statement.
    let stats = read_one(&db.query(&sql::fresh_stats(&[read.part(feed, pos)]))?, "fresh_stats")?;
    finish(db, feed, pos, read, &stats, name, size_now)
}

typed_row! {
    /// A row of `sql::fresh_stats`, for one batch.
    pub struct FreshStats {
        /// Rows appended past the watermark (those with a position).
        pub appended: u64,
        /// The batch's deleted rows.
        pub deletes: u64,
        pub last_position: Option<String>,
        /// The table's row count.
        pub table_rows: i64,
        /// The part's number in the statement.
        pub part: i64,
        /// All the batch's rows, the open batch's included.
        pub rows: u64,
        /// Rows of a log read in place that are not the open batch's (0 for a copy).
        pub others: u64,
    }
}

/// Where the first half of a capture left its batch.
pub enum Read {
    /// The rows past the watermark and the open batch, copied into a temp table.
    Copied(Qualified),
    /// Nothing copied: the batch is expected to be the open batch alone, read where it lies in a
    /// log that holds nothing else (`in_place`), which the statistics confirm or `finish` copies.
    InLog(sql::OpenBatch),
}

impl Read {
    /// The part of `sql::fresh_stats` that counts this batch.
    pub fn part<'a>(&'a self, feed: &'a Feed, pos: &'a Position) -> sql::FreshPart<'a> {
        match self {
            Read::Copied(fresh) => sql::FreshPart::Copied { fresh, base: &feed.table },
            Read::InLog(open) => {
                sql::FreshPart::InLog { open, base: &feed.table, pos, watermark: feed.watermark.as_deref() }
            }
        }
    }
}

/// Whether a capture may expect its batch to be the feed's open batch alone, where it lies: there
/// is one, the log holds no earlier batch (every view applied them all and they were trimmed),
/// and the appended-row count did not move since the last capture. The count is only a hint (a
/// commit in progress, or a CHECKPOINT that dropped deleted rows, can hide new rows), so the
/// statistics count the rows past the watermark too. The delta then needs no copy, and the
/// merge reads the log as the views that follow do, through a plan kept for it.
fn in_place(feed: &Feed, size_now: i64) -> bool {
    feed.log_rows == 0 && feed.in_place_hint(size_now)
}

/// The first half of a capture: the rows past the watermark and the feed's open batch, into one
/// temp table, unless the open batch alone is expected (`in_place`). Several captures read their
/// statistics in one statement (`sql::fresh_stats`) before `finish`.
pub fn read(db: &dyn Sql, feed: &Feed, pos: &Position, name: &str, size_now: i64) -> Result<Read> {
    if in_place(feed, size_now) {
        return Ok(Read::InLog(feed.open_batch()));
    }
    copy(db, feed, pos, name)
}

/// The rows past the watermark and the open batch, copied into a temp table named after `name`.
fn copy(db: &dyn Sql, feed: &Feed, pos: &Position, name: &str) -> Result<Read> {
    let fresh = temp_name(name, 0);
    let open = (feed.pending_rows > 0).then(|| feed.open_batch());
    db.execute(&render::create_temp_table_as(
        &fresh,
        &sql::rows_after(&feed.table, &feed.columns, pos, feed.watermark.as_deref(), open.as_ref()),
    ))?;
    Ok(Read::Copied(fresh))
}

/// The second half of a capture, from the row of `sql::fresh_stats` for the rows `read` took:
/// the promise check, the open batch, the new watermark. A batch read in place that turns out to
/// hold more than the open batch is copied after all (`name`).
pub fn finish(
    db: &dyn Sql,
    feed: &Feed,
    pos: &Position,
    read: Read,
    stats: &FreshStats,
    name: &str,
    size_now: i64,
) -> Result<Fresh> {
    finish_read(db, feed, pos, read, stats, name, size_now, true)
}

/// `finish`; `follow` is false for the batch read again past a watermark `renumbered` moved.
#[allow(clippy::too_many_arguments)]
fn finish_read(
    db: &dyn Sql,
    feed: &Feed,
    pos: &Position,
    read: Read,
    row: &FreshStats,
    name: &str,
    size_now: i64,
    follow: bool,
) -> Result<Fresh> {
    let fresh = match read {
        Read::Copied(fresh) => Some(fresh),
        Read::InLog(_) => {
            if row.appended > 0 || row.others > 0 {
                let read = copy(db, feed, pos, name)?;
                let again = read_one(&db.query(&sql::fresh_stats(&[read.part(feed, pos)]))?, "fresh_stats")?;
                return finish_read(db, feed, pos, read, &again, name, size_now, follow);
            }
            None
        }
    };
    let appended = DeltaStats { rows: row.appended, deletes: row.deletes };
    let (count, max_position) = (row.table_rows, row.last_position.clone());
    let stats = DeltaStats { rows: row.rows, deletes: row.deletes };
    let expected = feed.row_count + appended.rows as i64;
    if let Some(watermark) = follow.then(|| renumbered(db, feed, pos, size_now, count, expected)).transpose()?.flatten()
    {
        // Read again past the watermark in the new numbering.
        if let Some(f) = &fresh {
            db.execute(&render::drop_table(f))?;
        }
        let moved = Feed { watermark: Some(watermark.to_string()), ..feed.clone() };
        let read = copy(db, &moved, pos, name)?;
        let again = read_one(&db.query(&sql::fresh_stats(&[read.part(&moved, pos)]))?, "fresh_stats")?;
        return finish_read(db, &moved, pos, read, &again, name, size_now, false);
    }
    if let Some(f) = fresh.as_ref().filter(|_| stats.rows == 0) {
        db.execute(&render::drop_table(f))?;
    }
    if count != expected {
        if let Some(f) = &fresh {
            let _ = db.execute(&render::drop_table(f));
        }
        return Err(broken_promise(feed, pos, count, expected, appended.rows));
    }
    // A batch read in place is the log itself (never dropped: `view_delta::owned`).
    let delta = (stats.rows > 0).then(|| fresh.unwrap_or_else(|| feed.log()));
    let watermark = match (pos, max_position) {
        (_, None) => feed.watermark.clone(),
        (Position::RowId, Some(max)) => Some((max.parse::<i64>().unwrap_or(0) + 1).to_string()),
        (Position::Key(_), Some(max)) => Some(max),
    };
    let size_seen = size_accounted(feed, size_now, count, pos, watermark.as_deref());
    // The rows without a position came from the open batch.
    let logged = stats.rows.saturating_sub(appended.rows);
    Ok(Fresh {
        delta,
        stats,
        watermark,
        row_count: count,
        size_seen,
        net: None,
        took_pending: feed.pending_rows > 0,
        logged,
        unstamped: false,
        facts: None,
    })
}

/// The watermark of a rowid-watermarked feed in its table's new numbering, when a CHECKPOINT
/// renumbered the rows. Deletes leave holes (rows deleted before the declaration, or those of a
/// broken promise before `mode := 'full'` restarted capture) that a CHECKPOINT may close later,
/// moving the rows after them down: the watermark then lies past new rows, and the count check
/// would report a broken promise that was not. Every rowid below the watermark was a row once,
/// so `watermark - row_count` of them are holes. Under the promise the rows seen are still the
/// first `row_count` rows in rowid order, each moved down by at most those holes, so the new
/// watermark is found among the rows from rowid `row_count` on (the holes and the new rows). It
/// is looked for when the count is over (new rows below the watermark) or the holes DuckDB
/// counts shrank. A broken promise then still fails the count check, except a delete with at
/// least as many inserts in the same interval: as many new rows are then ranked among the rows
/// seen, which no count can tell from holes closing (documented as unseeable, docs/reference.md).
fn renumbered(
    db: &dyn Sql,
    feed: &Feed,
    pos: &Position,
    size_now: i64,
    count: i64,
    expected: i64,
) -> Result<Option<i64>> {
    let Some(watermark) = feed.watermark.as_deref().and_then(|w| w.parse::<i64>().ok()) else {
        return Ok(None);
    };
    let holes = holes_below(pos, Some(watermark), feed.row_count);
    let closed = size_now - count < feed.size_seen - feed.row_count;
    if holes <= 0 || !(count > expected || closed) {
        return Ok(None);
    }
    let moved = db.scalar_int(&sql::renumbered_watermark(&feed.table, feed.row_count), &[])?;
    // Past the old watermark, rows seen are gone: a broken promise the count check reports.
    Ok((moved < watermark).then_some(moved))
}

/// The holes below a rowid watermark (rowids of deleted rows a CHECKPOINT may close); 0 for a key.
fn holes_below(pos: &Position, watermark: Option<i64>, row_count: i64) -> i64 {
    match (pos, watermark) {
        (Position::RowId, Some(w)) => (w - row_count).max(0),
        _ => 0,
    }
}

/// The error of a row count that breaks the promise, saying which way it is off.
fn broken_promise(feed: &Feed, pos: &Position, count: i64, expected: i64, appended: u64) -> Error {
    let what = if count < expected {
        "rows were deleted".to_string()
    } else {
        match pos {
            Position::Key(_) => "rows were inserted with a key not past the largest one seen".to_string(),
            Position::RowId => {
                "rows lie below the rowid watermark: rows were deleted, and a CHECKPOINT renumbered the \
                                rows after them"
                    .to_string()
            }
        }
    };
    let off = if count < expected { expected - count } else { count - expected };
    let dir = if count < expected { "fewer" } else { "more" };
    Error::BrokenPromise(format!(
        "table '{}' was declared append-only, but it holds {count} rows where {expected} were expected ({} at the last \
         capture plus {appended} new ones past the watermark), {off} {dir}: {what}. Its views cannot be maintained \
         from the new rows alone: refresh with mode := 'full' to recompute and restart capture, and \
         CALL openivm_revoke_append_only('{}') if the table does receive deletes or updates",
        feed.table.dotted(),
        feed.row_count,
        feed.table.dotted(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::feed::Reader;
    use crate::capture::SourceKind;
    use crate::ir::TableId;

    fn feed(size_seen: i64, row_count: i64, pending_rows: i64) -> Feed {
        Feed {
            id: 1,
            catalog: "db".into(),
            table: TableId { catalog: "db".into(), schema: "main".into(), name: "t".into() },
            columns: vec![],
            kind: SourceKind::AppendOnly(Position::RowId),
            watermark: None,
            row_count,
            size_seen,
            seq: 0,
            log_rows: 0,
            pending_rows,
            batch_rows: -1,
            batch_deletes: -1,
            batch_facts: None,
            reader: Reader { consumers: 1, ..Reader::default() },
        }
    }

    #[test]
    fn a_commit_in_progress_is_not_recorded_as_seen() {
        // 1000 rows, all visible so far; estimated_size says 1500 while the snapshot shows 1200:
        // 300 rows of a commit in progress stay unseen, so the next refresh captures them.
        let (pos, w) = (Position::RowId, Some("1200"));
        assert_eq!(size_accounted(&feed(1000, 1000, 0), 1500, 1200, &pos, w), 1200);
        assert_eq!(size_accounted(&feed(1000, 1000, 0), 1200, 1200, &pos, w), 1200);
        // A table with deleted rows (or a pending batch) keeps estimated_size: its deleted rows
        // count there and cannot be told from a commit in progress.
        assert_eq!(size_accounted(&feed(1000, 990, 0), 1500, 1190, &pos, w), 1500);
        assert_eq!(size_accounted(&feed(1000, 1000, 4), 1500, 1200, &pos, w), 1500);
        // Holes below a rowid watermark (1200 rowids, 1190 rows) keep it too.
        assert_eq!(size_accounted(&feed(1000, 1000, 0), 1500, 1190, &pos, w), 1500);
    }

    #[test]
    fn an_unmoved_count_proves_nothing_appended_only_on_the_rowid_without_deleted_rows() {
        use crate::capture::{unchanged_by_size, Unchanged};
        let key = SourceKind::AppendOnly(Position::Key(crate::ir::ColumnDef {
            name: "id".into(),
            ty: "BIGINT".into(),
            collation: None,
        }));
        let with = |mut f: Feed, kind: &SourceKind| {
            f.kind = kind.clone();
            f
        };
        // 1000 rows seen, none deleted: the same count means nothing was appended on the rowid;
        // on a key, a DELETE, a CHECKPOINT and as many inserts past the key restore the count.
        assert_eq!(unchanged_by_size(&with(feed(1000, 1000, 0), &key), 1000), Unchanged::UnlessPastKey);
        assert_eq!(unchanged_by_size(&feed(1000, 1000, 0), 1000), Unchanged::Yes);
        // 10 of them deleted: a CHECKPOINT may drop them and 10 new rows restore the count.
        assert_eq!(unchanged_by_size(&with(feed(1000, 990, 0), &key), 1000), Unchanged::UnlessPastKey);
        // A rowid watermark has no key to probe (and deletes there break the promise).
        assert_eq!(unchanged_by_size(&feed(1000, 990, 0), 1000), Unchanged::No);
        // A recorded table is written through openivm only.
        assert_eq!(unchanged_by_size(&with(feed(1000, 990, 0), &SourceKind::Recorded), 1000), Unchanged::Yes);
        // A moved count, or a pending batch, is read.
        assert_eq!(unchanged_by_size(&with(feed(1000, 1000, 0), &key), 1001), Unchanged::No);
        assert_eq!(unchanged_by_size(&with(feed(1000, 1000, 3), &key), 1000), Unchanged::No);
    }
}
