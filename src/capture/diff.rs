//! The exact diff source: a counted snapshot of the read columns, shared by every view over the
//! table, compared with the table at each capture. Exact for every writer and every kind of
//! change; it reads the whole table.
//!
//! The snapshot is a multiset of rows with signed counts: a row's number of copies is the sum of
//! the counts of the snapshot's rows equal to it. It starts as a plain copy of the table (count 1
//! per row, no grouping), each capture appends its net change, and it is regrouped once the
//! appended rows make it half again as large as its table.

use super::batch::{temp_name, DeltaStats, Fresh};
use super::feed::Feed;
use crate::db::{read_one, Sql};
use crate::error::Result;
use crate::render::{self, capture as sql};

/// Builds the feed's first snapshot: the table as it is in this transaction.
pub fn start(db: &dyn Sql, feed: &Feed) -> Result<()> {
    db.execute(&render::create_table_as(&feed.snapshot(), &sql::snapshot_fill(&feed.table, &feed.columns)))
}

/// Tables of at most this many rows are first compared with their snapshots all in one
/// statement (`changed`), and captured only when they changed: most of them (dimensions) are
/// unchanged at most refreshes, and a capture of a changed one computes the net change again,
/// which costs little at this size.
pub const PROBED_ROWS: i64 = 100_000;

/// Which of the feeds' tables differ from their snapshots, in one statement.
pub fn changed(db: &dyn Sql, feeds: &[&Feed]) -> Result<Vec<bool>> {
    if feeds.is_empty() {
        return Ok(vec![]);
    }
    let parts: Vec<String> = feeds.iter().map(|f| sql::net_change(&f.table, &f.snapshot(), &f.columns)).collect();
    let probe = sql::any_net_change(&parts);
    let counts: Vec<i64> = read_one(&db.query(&probe)?, &probe)?;
    if counts.len() != feeds.len() {
        return Err(crate::error::Error::Internal(format!(
            "a diff probe of {} tables gave {} counts",
            feeds.len(),
            counts.len()
        )));
    }
    Ok(counts.into_iter().map(|n| n > 0).collect())
}

pub fn capture(db: &dyn Sql, feed: &Feed, name: &str, size_now: i64) -> Result<Fresh> {
    let net = temp_name(&format!("{name}_net"), 0);
    db.execute(&render::create_temp_table_as(&net, &sql::net_change(&feed.table, &feed.snapshot(), &feed.columns)))?;
    let (stats, _) = DeltaStats::from_row(db.query(&sql::net_stats(&net))?.first())?;
    let delta = if stats.rows > 0 {
        let d = temp_name(name, 0);
        db.execute(&render::create_temp_table_as(&d, &sql::expand_delta(&net, &feed.columns)))?;
        Some(d)
    } else {
        None
    };
    Ok(Fresh {
        delta,
        stats,
        watermark: None,
        row_count: feed.row_count,
        size_seen: size_now,
        net: Some(net),
        took_pending: false,
        logged: 0,
        unstamped: false,
        facts: None,
    })
}

/// Moves the snapshot to the state the capture saw: appends the net change, and regroups the
/// snapshot once appended changes have made it much larger than its table.
pub fn advance(db: &dyn Sql, feed: &Feed, fresh: &Fresh) -> Result<()> {
    let Some(net) = fresh.net.as_ref().filter(|_| fresh.stats.rows > 0) else {
        return Ok(());
    };
    let snapshot = feed.snapshot();
    db.execute(&sql::advance_snapshot(&snapshot, net, &feed.columns))?;
    // Only ever appended to or rebuilt, the snapshot has no deleted rows: DuckDB counts it from
    // its metadata.
    let rows = db.scalar_int(&render::count_rows(&snapshot), &[])?;
    if needs_regrouping(rows, fresh.size_seen) {
        db.execute(&sql::compact_snapshot(&snapshot, &feed.columns))?;
    }
    Ok(())
}

/// Whether a snapshot of `rows` rows should be regrouped: once it holds half again as many rows
/// as its table (`table_rows`, DuckDB's estimate, which counts deleted rows until they are
/// vacuumed) and a few thousand more. Regrouping costs a hash aggregate over the snapshot; every
/// capture reads the whole snapshot, so a bloated one slows every capture.
fn needs_regrouping(rows: i64, table_rows: i64) -> bool {
    rows > table_rows.saturating_add(table_rows / 2).saturating_add(4096)
}

#[cfg(test)]
mod tests {
    use super::needs_regrouping;

    #[test]
    fn a_snapshot_is_regrouped_at_half_again_its_table() {
        // 1M table rows: 1,504,096 snapshot rows are the most left as they are.
        assert!(!needs_regrouping(1_504_096, 1_000_000));
        assert!(needs_regrouping(1_504_097, 1_000_000));
        // A small table keeps a few thousand appended rows, however small it is.
        assert!(!needs_regrouping(4_096, 0));
        assert!(needs_regrouping(4_097, 0));
    }
}
