//! The exact diff source: a counted snapshot of the read columns (each distinct row once, with
//! its number of copies), shared by every view over the table, compared with the table at each
//! capture. Exact for every writer and every kind of change; it reads the whole table.

use super::feeds::Feed;
use super::{temp_name, DeltaStats, Fresh};
use crate::db::Sql;
use crate::error::Result;
use crate::render::{self, capture as sql, Storage};

/// Builds the feed's first snapshot: the table as it is in this transaction.
pub fn start(db: &dyn Sql, feed: &Feed) -> Result<()> {
    db.execute(&render::create_table_as(&feed.snapshot(), &sql::snapshot_fill(&feed.table, &feed.columns)))
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
    })
}

/// Moves the snapshot to the state the capture saw.
pub fn advance(db: &dyn Sql, storage: Storage, feed: &Feed, fresh: &Fresh) -> Result<()> {
    match &fresh.net {
        Some(net) if fresh.stats.rows > 0 => {
            db.execute_all(&sql::advance_snapshot(storage, &feed.snapshot(), net, &feed.columns))
        }
        _ => Ok(()),
    }
}
