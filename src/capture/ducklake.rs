//! The DuckLake source: tables of an attached DuckLake catalog, captured from DuckLake's own
//! change data. The feed's watermark is the last snapshot id captured; a capture reads the
//! snapshots after it up to the one the refresh's transaction reads the lake at.
//!
//! - `ducklake_snapshot_changes` (under 1 ms) tells which snapshots touched the table: a table
//!   no snapshot touched is not read at all, and the deletion half of the change feed (which
//!   scans every data file carrying a delete file, whatever the range) is read only for ranges
//!   in which the table had rows deleted.
//! - Compaction snapshots (`rewrite_delete`) report every surviving row of the rewritten files
//!   as an update pair: the range is split around them (what they report nets to nothing and
//!   would cost a read of the whole table). `merge_adjacent` and `inline_flush` change no rows.
//! - Every snapshot of the range must still exist: `ducklake_expire_snapshots` removes them,
//!   and a range over removed snapshots cannot be read exactly. The capture then fails with
//!   `Error::BrokenPromise`, which the refresh turns into a recompute that restarts the feed
//!   (never a wrong result). So does a table dropped and re-created under the same name (its
//!   DuckLake table id changed).
//!
//! Rows are netted on the read columns (an update pair of equal values, a row inserted and
//! deleted again, cancel); a range without deletions is insert-only as read.

use super::batch::{temp_name, DeltaStats, Fresh};
use super::feed::Feed;
use crate::db::{read_all, Sql};
use crate::error::{Error, Result};
use crate::ir::TableId;
use crate::render::capture as sql;
use crate::render::ducklake::{self as lake_sql, Half};
use crate::render::{self};

/// What one snapshot did to one table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Touch {
    /// Rows were inserted, deleted or otherwise changed: the snapshot must be read.
    pub data: bool,
    /// Rows may have been deleted (or updated): the deletion half must be read.
    pub deletes: bool,
    /// A compaction that rewrote the table's files without changing its rows.
    pub compaction: bool,
}

/// Splits `changes_made` into its entries (`kind:value`), at commas outside double quotes
/// (quoted names may hold commas).
fn entries(changes_made: &str) -> Vec<(&str, &str)> {
    fn entry(s: &str) -> Option<(&str, &str)> {
        let s = s.trim();
        (!s.is_empty()).then(|| s.split_once(':').unwrap_or((s, "")))
    }
    let mut out = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (i, ch) in changes_made.char_indices() {
        match ch {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.extend(entry(&changes_made[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    out.extend(entry(&changes_made[start..]));
    out
}

/// What a snapshot's `changes_made` says about the table with DuckLake id `table_id`. Kinds
/// that do not name a table by id (creating schemas or tables, which name them by name) touch
/// no rows; a kind not known here that names the table counts as a change with deletions, so
/// it is read (exact, only perhaps dearer).
pub fn touch(changes_made: &str, table_id: i64) -> Touch {
    let mut t = Touch::default();
    for (kind, value) in entries(changes_made) {
        if value.trim().parse::<i64>().ok() != Some(table_id) {
            continue;
        }
        match kind {
            "inserted_into_table" | "inlined_insert" => t.data = true,
            "deleted_from_table" | "inlined_delete" => {
                t.data = true;
                t.deletes = true;
            }
            "rewrite_delete" => t.compaction = true,
            "merge_adjacent" | "inline_flush" | "flushed_inlined" => {}
            _ => {
                t.data = true;
                t.deletes = true;
            }
        }
    }
    t
}

/// A range of snapshots to read: `from..=to`, with or without its deletion half.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub from: i64,
    pub to: i64,
    pub deletes: bool,
}

/// The ranges to read for the snapshots of a capture, in order: each maximal run of snapshots
/// between compactions, narrowed to its first and last snapshot that changed rows. A snapshot
/// that compacts and also changes rows is read (its update pairs net out).
pub fn segments(snapshots: &[(i64, Touch)]) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut open: Option<Segment> = None;
    for &(id, t) in snapshots {
        if t.compaction && !t.data {
            out.extend(open.take());
            continue;
        }
        if !t.data {
            continue;
        }
        match &mut open {
            Some(s) => {
                s.to = id;
                s.deletes |= t.deletes;
            }
            None => open = Some(Segment { from: id, to: id, deletes: t.deletes }),
        }
    }
    out.extend(open);
    out
}

/// The DuckLake id of a live table (None: no such table in the lake's metadata).
pub fn table_id(db: &dyn Sql, t: &TableId) -> Result<Option<i64>> {
    let rows: Vec<(i64,)> = read_all(&db.query(&lake_sql::table_id(t))?)?;
    Ok(rows.first().map(|&(id,)| id))
}

/// The snapshot this transaction reads the lake at.
pub fn current_snapshot(db: &dyn Sql, lake: &str) -> Result<i64> {
    db.scalar_int(&lake_sql::current_snapshot(lake), &[])
}

/// The first watermark of a feed: the snapshot this transaction reads (the view's fill reads
/// the same one).
pub fn baseline(db: &dyn Sql, t: &TableId) -> Result<Option<String>> {
    Ok(Some(current_snapshot(db, &t.catalog)?.to_string()))
}

/// The snapshot a feed's watermark names.
pub fn watermark(feed: &Feed) -> Result<i64> {
    feed.watermark
        .as_deref()
        .and_then(|w| w.parse::<i64>().ok())
        .ok_or_else(|| Error::Internal(format!("the DuckLake feed of '{}' has no snapshot id", feed.table.dotted())))
}

/// The refusal that makes a refresh recompute and restart the feed.
fn unreadable(feed: &Feed, why: String) -> Error {
    Error::BrokenPromise(format!(
        "the changes of DuckLake table '{}' since snapshot {} cannot be read exactly: {why}",
        feed.table.dotted(),
        feed.watermark.as_deref().unwrap_or("?")
    ))
}

/// Whether an error of DuckDB says that a snapshot of a range does not exist (expired).
fn is_missing_snapshot(e: &Error) -> bool {
    e.to_string().contains("No snapshot found")
}

/// Whether the snapshots after the feed's watermark delete or update rows of its table (so a
/// capture would read DuckLake's deletion half, which scans the table's data files). Two reads
/// of the lake's metadata; false when nothing is pending or the range cannot be told (the
/// capture then finds out).
pub fn deletes_pending(db: &dyn Sql, feed: &Feed, id: i64) -> Result<bool> {
    let (Ok(after), Ok(to)) = (watermark(feed), current_snapshot(db, &feed.table.catalog)) else {
        return Ok(false);
    };
    if to <= after {
        return Ok(false);
    }
    Ok(pending_segments(db, feed, id, after, to)?.iter().any(|s| s.deletes))
}

/// The ranges of snapshots after `after` up to `to` to read for the feed's table (`segments` of
/// what `ducklake_snapshot_changes` says each snapshot did to it).
fn pending_segments(db: &dyn Sql, feed: &Feed, id: i64, after: i64, to: i64) -> Result<Vec<Segment>> {
    let mut touched = Vec::new();
    let changes: Vec<(i64, String)> =
        read_all(&db.query(&lake_sql::snapshot_changes(&feed.table.catalog, after, to))?)?;
    for (snapshot, changed) in changes {
        touched.push((snapshot, touch(&changed, id)));
    }
    Ok(segments(&touched))
}

/// The watermark of a feed restarted without reading its changes, for a recompute that reads
/// the table in this transaction: the lake's snapshot now. None when the table is not the one
/// the feed follows any more (the capture then says so and restarts the feed).
pub fn rebaseline(db: &dyn Sql, feed: &Feed, id: i64) -> Result<Option<String>> {
    if table_id(db, &feed.table)? != Some(id) {
        return Ok(None);
    }
    Ok(Some(current_snapshot(db, &feed.table.catalog)?.to_string()))
}

pub fn capture(db: &dyn Sql, feed: &Feed, id: i64, name: &str, size_now: i64) -> Result<Fresh> {
    let after = watermark(feed)?;
    let to = current_snapshot(db, &feed.table.catalog)?;
    let mut fresh = feed.unchanged();
    fresh.size_seen = size_now;
    if to <= after {
        return Ok(fresh);
    }
    match table_id(db, &feed.table)? {
        Some(now) if now == id => {}
        Some(now) => {
            return Err(unreadable(
                feed,
                format!("the table was dropped and created again (DuckLake table id {id}, now {now})"),
            ))
        }
        None => return Err(unreadable(feed, "the table is not in the lake's metadata any more".into())),
    }
    let present = db.scalar_int(&lake_sql::snapshots_between(&feed.table.catalog, after, to), &[])?;
    if present != to - after {
        return Err(unreadable(
            feed,
            format!(
                "{} of the snapshots {}..{to} were expired (ducklake_expire_snapshots)",
                to - after - present,
                after + 1
            ),
        ));
    }
    let ranges = pending_segments(db, feed, id, after, to)?;
    fresh.watermark = Some(to.to_string());
    if ranges.is_empty() {
        return Ok(fresh);
    }
    let mut parts = Vec::new();
    for s in &ranges {
        parts.push(lake_sql::changed_rows(&feed.table, &feed.columns, Half::Insertions, s.from, s.to));
        if s.deletes {
            parts.push(lake_sql::changed_rows(&feed.table, &feed.columns, Half::Deletions, s.from, s.to));
        }
    }
    let read = |e: Error| if is_missing_snapshot(&e) { unreadable(feed, e.to_string()) } else { e };
    let delta = temp_name(name, 0);
    if ranges.iter().all(|s| !s.deletes) {
        // Insert-only: the rows as read are the delta.
        db.execute(&render::create_temp_table_as(&delta, &sql::union_of(&parts))).map_err(read)?;
        let (stats, _) = DeltaStats::from_row(db.query(&sql::delta_stats(&delta))?.first())?;
        if stats.rows == 0 {
            db.execute(&render::drop_table(&delta))?;
            return Ok(fresh);
        }
        fresh.delta = Some(delta);
        fresh.stats = stats;
        return Ok(fresh);
    }
    let stats = super::batch::netted_delta(db, &delta, &parts, &feed.columns).map_err(read)?;
    if stats.rows > 0 {
        fresh.delta = Some(delta);
    }
    fresh.stats = stats;
    Ok(fresh)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_made_name_tables_by_id() {
        assert_eq!(touch("inserted_into_table:2", 2), Touch { data: true, deletes: false, compaction: false });
        assert_eq!(
            touch("inlined_insert:2,inlined_delete:2", 2),
            Touch { data: true, deletes: true, compaction: false }
        );
        assert_eq!(touch("inserted_into_table:12", 2), Touch::default());
        assert_eq!(touch("rewrite_delete:2", 2), Touch { data: false, deletes: false, compaction: true });
        assert_eq!(touch("merge_adjacent:2", 2), Touch::default());
        assert_eq!(touch("inline_flush:2", 2), Touch::default());
        // names are quoted and may hold commas and colons
        assert_eq!(touch("created_table:\"main\".\"a,2:b\",inserted_into_table:3", 2), Touch::default());
        assert!(touch("created_table:\"main\".\"a,2\",deleted_from_table:2", 2).deletes);
        // a kind not known here that names the table is read, with deletions
        assert_eq!(touch("altered_table:2", 2), Touch { data: true, deletes: true, compaction: false });
        assert_eq!(touch("", 2), Touch::default());
    }

    #[test]
    fn ranges_split_around_compactions_and_skip_untouched_snapshots() {
        let ins = Touch { data: true, ..Default::default() };
        let del = Touch { data: true, deletes: true, compaction: false };
        let compact = Touch { compaction: true, ..Default::default() };
        let none = Touch::default();
        assert_eq!(segments(&[(5, none), (6, none)]), vec![]);
        assert_eq!(
            segments(&[(5, none), (6, ins), (7, none), (8, ins), (9, none)]),
            vec![Segment { from: 6, to: 8, deletes: false }]
        );
        assert_eq!(
            segments(&[(5, ins), (6, compact), (7, del), (8, compact)]),
            vec![Segment { from: 5, to: 5, deletes: false }, Segment { from: 7, to: 7, deletes: true }]
        );
        // a compaction that also changed rows is read
        let both = Touch { data: true, deletes: true, compaction: true };
        assert_eq!(segments(&[(5, ins), (6, both)]), vec![Segment { from: 5, to: 6, deletes: true }]);
    }
}
