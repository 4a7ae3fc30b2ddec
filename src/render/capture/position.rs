//! Reads bounded by a watermark: where a declared append-only table's rows are counted from
//! (`Position`), and its rows past or up to what a capture saw.

use crate::ir::{ColumnDef, TableId};
use crate::render::{ident, literal, table, Qualified};

/// The column of a fresh capture that holds each row's position (rowid or key value).
pub const POSITION: &str = "openivm_position";

/// Where an append-only table's rows are counted from: its rowid, or a declared ever-increasing
/// key column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Position {
    RowId,
    Key(ColumnDef),
}

impl Position {
    pub(super) fn expr(&self) -> String {
        match self {
            Position::RowId => "rowid".into(),
            Position::Key(c) => ident(&c.name),
        }
    }

    /// The condition "row is past the watermark". The rowid watermark is the next rowid (rows
    /// are numbered from 0 without gaps while nothing is deleted); a key watermark is the
    /// largest key seen (NULL: none seen yet).
    pub(super) fn after(&self, watermark: Option<&str>) -> String {
        match (self, watermark) {
            (Position::RowId, w) => format!("rowid >= {}", w.and_then(|w| w.parse::<i64>().ok()).unwrap_or(0)),
            (Position::Key(c), None) => format!("{} IS NOT NULL", ident(&c.name)),
            (Position::Key(c), Some(w)) => format!("{} > CAST({} AS {})", ident(&c.name), literal(w), c.ty),
        }
    }

    /// The condition "row is at or before the watermark": the table as of a capture.
    fn up_to(&self, watermark: Option<&str>) -> String {
        match (self, watermark) {
            (Position::RowId, w) => format!("rowid < {}", w.and_then(|w| w.parse::<i64>().ok()).unwrap_or(0)),
            (Position::Key(_), None) => "FALSE".into(),
            (Position::Key(c), Some(w)) => format!("{} <= CAST({} AS {})", ident(&c.name), literal(w), c.ty),
        }
    }
}

/// An append-only table as of a watermark (the state its captured delta leads to), for the
/// current-state scans of a refresh that runs after the capture's transaction.
pub fn bounded_state(base: &TableId, pos: &Position, watermark: Option<&str>) -> String {
    format!("(SELECT * FROM {} WHERE {})", table(base), pos.up_to(watermark))
}

/// The largest key of a table (the first watermark of a key-declared append-only table).
pub fn max_key(base: &TableId, key: &ColumnDef) -> String {
    format!("SELECT max({})::VARCHAR FROM {}", ident(&key.name), table(base))
}

/// The rows of the table past the watermark.
pub fn count_past(base: &TableId, pos: &Position, watermark: Option<&str>) -> String {
    format!("SELECT count(*)::BIGINT FROM {} WHERE {}", table(base), pos.after(watermark))
}

/// The rows of the table past the watermark, and all its rows (two counts, so that the first
/// still skips the blocks before the watermark).
pub fn count_past_and_all(base: &TableId, pos: &Position, watermark: Option<&str>) -> String {
    format!(
        "SELECT (SELECT count(*) FROM {t} WHERE {})::BIGINT, (SELECT count(*) FROM {t})::BIGINT",
        pos.after(watermark),
        t = table(base)
    )
}

/// The rowid watermark of a table whose rows a CHECKPOINT may have renumbered: one past its
/// `seen`-th row in rowid order (a renumbering keeps the order). That row's rowid is at least
/// `seen - 1`, so only the rows from rowid `seen` on are ranked (the rows below it are counted);
/// `seen` when every row seen lies below it.
pub fn renumbered_watermark(base: &TableId, seen: i64) -> String {
    format!(
        "SELECT coalesce(max(rowid) + 1, {seen})::BIGINT FROM (SELECT rowid, row_number() OVER (ORDER BY rowid) AS n \
         FROM {t} WHERE rowid >= {seen}) WHERE n <= {seen} - (SELECT count(*) FROM {t} WHERE rowid < {seen})",
        t = table(base),
    )
}

pub fn count_all(base: &TableId) -> String {
    format!("SELECT count(*)::BIGINT FROM {}", table(base))
}

/// The condition "the row is not past the watermark" (also true for a NULL position): rows an
/// insert through openivm records because no capture past the watermark would find them.
pub fn not_after(pos: &Position, watermark: Option<&str>) -> String {
    format!("({}) IS NOT TRUE", pos.after(watermark))
}

/// The condition "the row is past the watermark": rows no capture has seen yet.
pub fn after(pos: &Position, watermark: Option<&str>) -> String {
    pos.after(watermark)
}

/// The number of rows of `rows` satisfying `condition`.
pub fn count_where(rows: &Qualified, condition: &str) -> String {
    format!("SELECT count(*)::BIGINT FROM {} WHERE {condition}", rows.sql())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watermarks_bound_rows_on_both_sides() {
        let key = ColumnDef { name: "id".into(), ty: "BIGINT".into(), collation: None };
        assert_eq!(Position::RowId.after(Some("10")), "rowid >= 10");
        assert_eq!(Position::RowId.up_to(Some("10")), "rowid < 10");
        assert_eq!(Position::RowId.after(None), "rowid >= 0");
        let k = Position::Key(key);
        assert_eq!(k.after(Some("7")), "\"id\" > CAST('7' AS BIGINT)");
        assert_eq!(k.up_to(Some("7")), "\"id\" <= CAST('7' AS BIGINT)");
        assert_eq!(k.after(None), "\"id\" IS NOT NULL");
        assert_eq!(k.up_to(None), "FALSE");
        assert_eq!(not_after(&k, Some("7")), "(\"id\" > CAST('7' AS BIGINT)) IS NOT TRUE");
        assert_eq!(not_after(&Position::RowId, Some("3")), "(rowid >= 3) IS NOT TRUE");
        assert_eq!(after(&k, Some("7")), k.after(Some("7")));
    }
}
