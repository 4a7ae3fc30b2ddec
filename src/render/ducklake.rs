//! SQL of the DuckLake change source: the lake's current snapshot, which snapshots touched a
//! table (`ducklake_snapshot_changes` in the lake's metadata catalog), the durable table id, the
//! inserted and deleted rows of a snapshot range, and a table as of a snapshot.
//!
//! A DuckLake catalog `lake` keeps its metadata in the attached catalog
//! `__ducklake_metadata_lake` (a DuckDB file, SQLite or PostgreSQL database).

use super::{ident, literal, table, MULTIPLICITY};
use crate::ir::{ColumnDef, TableId};

/// The metadata catalog of the DuckLake catalog `lake`, quoted.
fn metadata(lake: &str) -> String {
    ident(&format!("__ducklake_metadata_{lake}"))
}

/// The snapshot the calling transaction reads the lake at (DuckLake fixes it at the
/// transaction's first access to the lake, so reads in the same transaction agree with it).
pub fn current_snapshot(lake: &str) -> String {
    format!("SELECT CAST(id AS BIGINT) FROM {}.current_snapshot()", ident(lake))
}

/// How many snapshots the lake still has with an id in `(after, to]` (expired ones are gone).
pub fn snapshots_between(lake: &str, after: i64, to: i64) -> String {
    format!(
        "SELECT count(*)::BIGINT FROM {}.{} WHERE snapshot_id > {after} AND snapshot_id <= {to}",
        metadata(lake),
        ident("ducklake_snapshot")
    )
}

/// What each snapshot in `(after, to]` changed (`changes_made`), in snapshot order.
pub fn snapshot_changes(lake: &str, after: i64, to: i64) -> String {
    format!(
        "SELECT snapshot_id::BIGINT, COALESCE(changes_made, '') FROM {}.{} WHERE snapshot_id > {after} AND \
         snapshot_id <= {to} ORDER BY snapshot_id",
        metadata(lake),
        ident("ducklake_snapshot_changes")
    )
}

/// The durable DuckLake id of a live table (kept by a rename, new after a drop and re-create).
pub fn table_id(t: &TableId) -> String {
    let m = metadata(&t.catalog);
    format!(
        "SELECT t.table_id::BIGINT FROM {m}.{} AS t JOIN {m}.{} AS s ON t.schema_id = s.schema_id \
         WHERE s.schema_name = {} AND t.table_name = {} AND t.end_snapshot IS NULL AND s.end_snapshot IS NULL",
        ident("ducklake_table"),
        ident("ducklake_schema"),
        literal(&t.schema),
        literal(&t.name)
    )
}

/// Which half of a table's change feed to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Half {
    Insertions,
    Deletions,
}

/// The rows inserted (+1) or deleted (-1) in snapshots `from..=to` (both bounds inclusive, as
/// DuckLake takes them), with the read columns and the multiplicity. An update is a deletion of
/// the old row and an insertion of the new one; a row inserted and deleted inside the range is
/// in both halves.
pub fn changed_rows(t: &TableId, cols: &[ColumnDef], half: Half, from: i64, to: i64) -> String {
    let (function, sign) = match half {
        Half::Insertions => ("ducklake_table_insertions", 1),
        Half::Deletions => ("ducklake_table_deletions", -1),
    };
    let columns: String = cols.iter().map(|c| format!("{}, ", ident(&c.name))).collect();
    format!(
        "SELECT {columns}CAST({sign} AS INTEGER) AS {} FROM {function}({}, {}, {}, {from}, {to})",
        ident(MULTIPLICITY),
        literal(&t.catalog),
        literal(&t.schema),
        literal(&t.name)
    )
}

/// A DuckLake table as of a snapshot: the state a captured delta leads to, for current-state
/// scans that must not see what writers committed after the capture.
pub fn at_version(t: &TableId, snapshot: i64) -> String {
    format!("(SELECT * FROM {} AT (VERSION => {snapshot}))", table(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t() -> TableId {
        TableId { catalog: "la\"ke".into(), schema: "main".into(), name: "o'rders".into() }
    }

    #[test]
    fn names_are_quoted_and_literals_escaped() {
        assert_eq!(current_snapshot("la\"ke"), "SELECT CAST(id AS BIGINT) FROM \"la\"\"ke\".current_snapshot()");
        let c = vec![ColumnDef { name: "k".into(), ty: "INTEGER".into(), collation: None }];
        assert_eq!(
            changed_rows(&t(), &c, Half::Deletions, 3, 7),
            "SELECT \"k\", CAST(-1 AS INTEGER) AS \"openivm_multiplicity\" FROM \
             ducklake_table_deletions('la\"ke', 'main', 'o''rders', 3, 7)"
        );
        assert_eq!(at_version(&t(), 9), "(SELECT * FROM \"la\"\"ke\".\"main\".\"o'rders\" AT (VERSION => 9))");
        assert!(table_id(&t()).contains("\"__ducklake_metadata_la\"\"ke\".\"ducklake_table\""));
        assert!(table_id(&t()).contains("t.table_name = 'o''rders'"));
    }
}
