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
//! the feed's pending batch, which a capture adds to the rows past the watermark; the feed's
//! row count then already includes the pending batch's net rows.

use super::feeds::Feed;
use super::{temp_name, DeltaStats, Fresh};
use crate::db::{Cells, Row, Sql};
use crate::error::{Error, Result};
use crate::rely::qualified;
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

pub fn capture(db: &dyn Sql, feed: &Feed, pos: &Position, name: &str, size_now: i64) -> Result<Fresh> {
    let fresh = read(db, feed, pos, name)?;
    // The batch's size and last position, and the table's row count, in one statement.
    let row = db.query(&sql::fresh_stats(&[(&fresh, &feed.table)]))?;
    finish(db, feed, pos, name, fresh, row.first(), size_now)
}

/// The first half of a capture: the rows past the watermark, into a temp table. Several
/// captures read their statistics in one statement (`sql::fresh_stats`) before `finish`.
pub fn read(db: &dyn Sql, feed: &Feed, pos: &Position, name: &str) -> Result<Qualified> {
    let fresh = temp_name(name, 0);
    db.execute(&render::create_temp_table_as(
        &fresh,
        &sql::rows_after(&feed.table, &feed.columns, pos, feed.watermark.as_deref()),
    ))?;
    Ok(fresh)
}

/// The second half of a capture, from the row of `sql::fresh_stats` for the rows `read` took:
/// the promise check, the pending batch, the new watermark.
pub fn finish(
    db: &dyn Sql,
    feed: &Feed,
    pos: &Position,
    name: &str,
    fresh: Qualified,
    row: Option<&Row>,
    size_now: i64,
) -> Result<Fresh> {
    let (stats, max_position) = DeltaStats::from_row(row)?;
    let count = row.map(|r| r.int(3)).transpose()?.unwrap_or(0);
    if stats.rows == 0 {
        db.execute(&render::drop_table(&fresh))?;
    }
    let expected = feed.row_count + stats.rows as i64;
    if count != expected {
        let _ = db.execute(&render::drop_table(&fresh));
        return Err(Error::BrokenPromise(format!(
            "table '{}' was declared append-only, but it holds {count} rows where {} were expected ({} at the last \
             capture plus {} new ones past the watermark): rows were deleted{}. Its views cannot be maintained \
             from the new rows alone: refresh with mode := 'full' to recompute and restart capture, and \
             CALL openivm_revoke_append_only('{}') if the table does receive deletes or updates",
            qualified(&feed.table),
            expected,
            feed.row_count,
            stats.rows,
            if matches!(pos, Position::Key(_)) { ", or inserted with a key below the largest one seen" } else { "" },
            qualified(&feed.table),
        )));
    }
    let (delta, stats) = if feed.pending_rows > 0 {
        let read = (stats.rows > 0).then_some(fresh.clone());
        let netted = super::recorded::with_pending(db, feed, read.as_ref(), name)?;
        if let Some(r) = read {
            db.execute(&render::drop_table(&r))?;
        }
        netted
    } else {
        ((stats.rows > 0).then_some(fresh), stats)
    };
    let watermark = match (pos, max_position) {
        (_, None) => feed.watermark.clone(),
        (Position::RowId, Some(max)) => Some((max.parse::<i64>().unwrap_or(0) + 1).to_string()),
        (Position::Key(_), Some(max)) => Some(max),
    };
    Ok(Fresh {
        delta,
        stats,
        watermark,
        row_count: count,
        size_seen: size_now,
        net: None,
        took_pending: feed.pending_rows > 0,
    })
}
