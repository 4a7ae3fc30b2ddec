//! Change capture: the net delta of each base table since a view's last refresh.
//!
//! DuckDB's C API has no hook on writes, so capture is a stage of its own behind `ChangeSource`.
//! Every source produces the same thing: a temporary table named `openivm_delta_<table>` with
//! the base columns the view reads plus `openivm_multiplicity` (+1 per inserted copy, -1 per
//! deleted copy; an update is a deleted old row and an inserted new row).
//!
//! `SnapshotSource` is the default for native DuckDB tables. It keeps, per view and base table,
//! a counted snapshot of the columns the view reads (each distinct row once, with its number of
//! copies) and compares the table with it. That is exact for every writer (any connection,
//! COPY, INSERT ... SELECT, key updates) and needs no cooperation, but reads the whole table on
//! every refresh: correct, never fast. Sources that cost O(delta) (writes made through the
//! extension, append-only tables, DuckLake's change feed) fit the same trait.

use crate::db::{int, Sql};
use crate::error::Result;
use crate::ir::{ColumnDef, TableId};
use crate::render::{self, Qualified};

/// One base table of a view, as change capture tracks it.
#[derive(Clone, Debug)]
pub struct Tracked {
    pub table: TableId,
    /// The columns of the table the view reads, in table order.
    pub columns: Vec<ColumnDef>,
    /// Where the source keeps its state for this view and table.
    pub state: Qualified,
}

/// What a capture found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeltaStats {
    pub rows: u64,
    /// Rows with multiplicity -1 (deletes, and the old halves of updates).
    pub deletes: u64,
}

impl DeltaStats {
    pub fn insert_only(&self) -> bool {
        self.deletes == 0
    }
}

pub trait ChangeSource {
    /// Starts tracking: from now on the view has seen the table as it is in this transaction.
    fn start(&self, db: &dyn Sql, t: &Tracked) -> Result<()>;
    /// Materializes the net delta since the view last advanced into the temp table `delta`.
    fn capture(&self, db: &dyn Sql, t: &Tracked, delta: &Qualified) -> Result<DeltaStats>;
    /// Marks the captured delta as seen; runs in the refresh's transaction.
    fn advance(&self, db: &dyn Sql, t: &Tracked, delta: &Qualified, stats: &DeltaStats) -> Result<()>;
    /// Forgets the state kept for the view and table.
    fn stop(&self, db: &dyn Sql, t: &Tracked) -> Result<()>;
}

/// The default source: compare the table with a counted snapshot of what the view last saw.
pub struct SnapshotSource;

fn net_name(delta: &Qualified) -> Qualified {
    Qualified::temp(format!("{}_net", delta.name))
}

impl ChangeSource for SnapshotSource {
    fn start(&self, db: &dyn Sql, t: &Tracked) -> Result<()> {
        db.execute(&render::create_table_as(&t.state, &render::snapshot_fill(&t.table, &t.columns)))
    }

    fn capture(&self, db: &dyn Sql, t: &Tracked, delta: &Qualified) -> Result<DeltaStats> {
        let net = net_name(delta);
        db.execute(&render::create_temp_table_as(&net, &render::net_change(&t.table, &t.state, &t.columns)))?;
        let rows = db.query(&render::net_stats(&net))?;
        let row = rows.first().cloned().unwrap_or_default();
        let stats = DeltaStats {
            rows: int(row.first().unwrap_or(&None)) as u64,
            deletes: int(row.get(1).unwrap_or(&None)) as u64,
        };
        // An empty delta is never read: every term over it is skipped.
        if stats.rows > 0 {
            db.execute(&render::create_temp_table_as(delta, &render::expand_delta(&net, &t.columns)))?;
        }
        Ok(stats)
    }

    fn advance(&self, db: &dyn Sql, t: &Tracked, delta: &Qualified, stats: &DeltaStats) -> Result<()> {
        if stats.rows == 0 {
            return Ok(()); // nothing changed: the snapshot is already the current state
        }
        db.execute(&render::advance_snapshot(&t.state, &net_name(delta), &t.columns))
    }

    fn stop(&self, db: &dyn Sql, t: &Tracked) -> Result<()> {
        db.execute(&render::drop_table(&t.state))
    }
}

/// Drops the temp tables a capture made (they would vanish with the connection anyway; a
/// refresh drops them so the next one starts clean).
pub fn discard(db: &dyn Sql, delta: &Qualified) -> Result<()> {
    db.execute(&render::drop_table(delta))?;
    db.execute(&render::drop_table(&net_name(delta)))
}
