//! The recorded source, and the pending batch every recording feed keeps.
//!
//! A table declared recorded (`openivm_declare_recorded`) is written only through
//! `openivm_insert` / `openivm_delete` / `openivm_update`, which append the exact delta of each
//! write to the feed's open batch (rows of its change log `openivm.log_<id>` numbered one past
//! its newest batch) in the write's own transaction. A capture takes the open batch in as it is
//! (one row per copy, +1 or -1) and costs O(rows written), whatever the table's size: the rows
//! become the new batch where they are, and are never copied into the log.
//!
//! The promise is checked where that is cheap: the table must hold exactly the rows of the last
//! capture plus the open batch's net rows (`row_count`, kept by every write; one `count(*)`
//! per capture). A direct INSERT or DELETE breaks that count and fails the refresh; a direct
//! UPDATE keeps it and cannot be seen (`openivm_verify` finds it).

use super::batch::{temp_name, DeltaStats, Fresh};
use super::feed::Feed;
use crate::db::Sql;
use crate::error::{Error, Result};
use crate::render::capture as sql;
use crate::render::{self, Qualified};

pub fn capture(db: &dyn Sql, feed: &Feed, name: &str, size_now: i64) -> Result<Fresh> {
    let count = db.scalar_int(&sql::count_all(&feed.table), &[])?;
    if count != feed.row_count {
        return Err(Error::BrokenPromise(format!(
            "table '{t}' was declared recorded (written only through openivm_insert, openivm_delete and \
             openivm_update), but it holds {count} rows where {} were recorded: it was written directly. Its views \
             cannot be maintained from the recorded writes alone: refresh with mode := 'full' to recompute and restart \
             capture, and CALL openivm_revoke_recorded('{t}') if the table is written directly",
            feed.row_count,
            t = feed.table.dotted(),
        )));
    }
    let (delta, stats) =
        if feed.pending_rows > 0 { open_batch(db, feed, name)? } else { (None, DeltaStats::default()) };
    // All of the batch is the open batch, in the log already.
    let logged = stats.rows;
    Ok(Fresh {
        delta,
        stats,
        watermark: None,
        row_count: count,
        size_seen: size_now,
        net: None,
        took_pending: feed.pending_rows > 0,
        logged,
        unstamped: false,
        facts: None,
    })
}

/// The batch of a recorded feed's capture: its open batch (None when it is empty), where it lies
/// when the log holds nothing else (every view applied the earlier batches and they were
/// trimmed: no copy, and the merge reads the log through a plan kept for it, as the views that
/// follow do), else copied as it is into a delta table named after `name`. The rows are used as
/// they are, one per copy, without netting them: a delta is a signed multiset, so a row recorded
/// +1 and -1 contributes nothing to any term (`view_delta::view_delta` says when a view nets its own).
/// An append-only feed takes its open batch with the rows past its watermark
/// (`append_only::read`).
pub(super) fn open_batch(db: &dyn Sql, feed: &Feed, name: &str) -> Result<(Option<Qualified>, DeltaStats)> {
    if feed.log_rows == 0 {
        let rows = db.query(&sql::in_log_stats(&feed.open_batch()))?;
        let (stats, others) = DeltaStats::from_row(rows.first())?;
        if others.and_then(|o| o.parse::<i64>().ok()) == Some(0) {
            return Ok(((stats.rows > 0).then(|| feed.log()), stats));
        }
    }
    let delta = temp_name(&format!("{name}_pending"), 0);
    db.execute(&render::create_temp_table_as(&delta, &sql::open_rows(&feed.open_batch(), &feed.columns)))?;
    let (stats, _) = DeltaStats::from_row(db.query(&sql::delta_stats(&delta))?.first())?;
    if stats.rows == 0 {
        db.execute(&render::drop_table(&delta))?;
        return Ok((None, stats));
    }
    Ok((Some(delta), stats))
}

/// Appends the rows of `rows` (a temp table holding the feed's columns) to the feed's open batch
/// with multiplicity `sign`, only those satisfying `only` when given; returns how many. The
/// caller saves the feed.
pub fn record(db: &dyn Sql, feed: &mut Feed, rows: &Qualified, sign: i8, only: Option<&str>) -> Result<i64> {
    let n = match only {
        None => db.scalar_int(&render::count_rows(rows), &[])?,
        Some(w) => db.scalar_int(&sql::count_where(rows, w), &[])?,
    };
    if n == 0 {
        return Ok(0);
    }
    db.execute(&sql::append_recorded(&feed.open_batch(), rows, &feed.columns, sign, only))?;
    feed.pending_rows += n;
    Ok(n)
}

/// Runs `insert`, an INSERT into the feed's open batch (rendered for `Feed::open_batch`), and
/// returns how many rows it appended. The caller saves the feed.
pub fn record_with(db: &dyn Sql, feed: &mut Feed, insert: &str) -> Result<i64> {
    let n = db.scalar_int(insert, &[])?;
    feed.pending_rows += n;
    Ok(n)
}
