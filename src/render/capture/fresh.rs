//! The batch a capture of an append-only table takes: the rows past its watermark with the feed's
//! open batch, and the counts that tell the capture what it took.

use super::log::SEQ;
use super::open_batch::{open_rows, OpenBatch};
use super::position::{count_all, Position, POSITION};
use super::snapshot::plain_columns;
use crate::ir::{ColumnDef, TableId};
use crate::render::{ident, table, Qualified, MULTIPLICITY};

/// The rows of an append-only table past its watermark, each an insert (+1), with its position;
/// and with `open`, the rows of the feed's open batch (recorded writes) after them, as they are,
/// with no position: the capture's whole batch in one table.
pub fn rows_after(
    base: &TableId,
    cols: &[ColumnDef],
    pos: &Position,
    watermark: Option<&str>,
    open: Option<&OpenBatch>,
) -> String {
    let appended = format!(
        "SELECT {}CAST(1 AS INTEGER) AS {}, {} AS {} FROM {} WHERE {}",
        plain_columns(cols),
        ident(MULTIPLICITY),
        pos.expr(),
        POSITION,
        table(base),
        pos.after(watermark)
    );
    match open {
        None => appended,
        Some(o) => format!("{appended} UNION ALL SELECT *, NULL FROM ({}) AS openivm_pending", open_rows(o, cols)),
    }
}

/// Where a capture of an append-only table finds its batch (`fresh_stats`).
pub enum FreshPart<'a> {
    /// A temp table holding the rows past the watermark, with their position, and the open
    /// batch's rows, without one (`rows_after`).
    Copied { fresh: &'a Qualified, base: &'a TableId },
    /// The feed's open batch where it lies, in a log expected to hold nothing else, for a capture
    /// that expects no row past the watermark: both are counted (`in_log_stats`).
    InLog { open: &'a OpenBatch, base: &'a TableId, pos: &'a Position, watermark: Option<&'a str> },
}

/// Per fresh batch of append-only tables (in order), one row each, in one statement (a statement
/// costs about 0.6 ms, and a star captures four tables): the rows appended past the watermark
/// (those with a position), the batch's deleted rows, the last position, the row count of its
/// table, the part's number, all the batch's rows (the pending batch's included), and the rows
/// of a log read in place that are not the open batch's (`FreshPart::InLog`; 0 for a copy).
pub fn fresh_stats(parts: &[FreshPart]) -> String {
    let m = ident(MULTIPLICITY);
    let one = |i: usize, part: &FreshPart| match part {
        FreshPart::Copied { fresh, base } => format!(
            "SELECT count({POSITION})::BIGINT, count(*) FILTER (WHERE {m} < 0)::BIGINT, max({POSITION})::VARCHAR, \
             ({})::BIGINT, {i} AS openivm_part, count(*)::BIGINT, 0::BIGINT FROM {}",
            count_all(base),
            fresh.sql(),
        ),
        FreshPart::InLog { open, base, pos, watermark } => {
            let (batch, others) = open_batch_filters(open);
            format!(
                "SELECT (SELECT count(*) FROM {} WHERE {})::BIGINT, count(*) FILTER (WHERE {batch} AND {m} < 0)::BIGINT, \
                 NULL::VARCHAR, ({})::BIGINT, {i} AS openivm_part, count(*) FILTER (WHERE {batch})::BIGINT, \
                 count(*) FILTER (WHERE {others})::BIGINT FROM {}",
                table(base),
                pos.after(*watermark),
                count_all(base),
                open.log.sql(),
            )
        }
    };
    let all: Vec<String> = parts.iter().enumerate().map(|(i, p)| one(i, p)).collect();
    format!("{} ORDER BY openivm_part", all.join(" UNION ALL "))
}

/// The conditions on a log's rows "in the open batch (a row of a copy)" and "any other row": a
/// batch taken where it lies must be the whole log (rows of multiplicity 0, which earlier
/// versions recorded, count as others).
fn open_batch_filters(open: &OpenBatch) -> (String, String) {
    let m = ident(MULTIPLICITY);
    (format!("{SEQ} = {} AND {m} <> 0", open.seq), format!("{SEQ} <> {} OR {m} = 0", open.seq))
}

/// The open batch's rows and deleted rows, and the log's other rows (`open_batch_filters`).
pub fn in_log_stats(open: &OpenBatch) -> String {
    let (batch, others) = open_batch_filters(open);
    format!(
        "SELECT count(*) FILTER (WHERE {batch})::BIGINT, count(*) FILTER (WHERE {batch} AND {m} < 0)::BIGINT, \
         count(*) FILTER (WHERE {others})::BIGINT FROM {}",
        open.log.sql(),
        m = ident(MULTIPLICITY)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open_batch() -> OpenBatch {
        OpenBatch { log: Qualified { catalog: "db".into(), schema: "openivm".into(), name: "log_1".into() }, seq: 4 }
    }

    #[test]
    fn a_capture_takes_its_pending_batch_with_the_appended_rows_and_counts_them_apart() {
        let base = TableId { catalog: "db".into(), schema: "main".into(), name: "t".into() };
        let c = vec![ColumnDef { name: "k".into(), ty: "INTEGER".into(), collation: None }];
        let key = Position::Key(ColumnDef { name: "k".into(), ty: "INTEGER".into(), collation: None });
        // Appended rows carry their position; the open batch's rows (their recorded
        // multiplicity, zero ones left out) none, so `fresh_stats` counts the appended ones by it.
        assert_eq!(
            rows_after(&base, &c, &key, Some("7"), Some(&open_batch())),
            "SELECT \"k\", CAST(1 AS INTEGER) AS \"openivm_multiplicity\", \"k\" AS openivm_position \
             FROM \"db\".\"main\".\"t\" WHERE \"k\" > CAST('7' AS INTEGER) UNION ALL SELECT *, NULL FROM \
             (SELECT \"k\", \"openivm_multiplicity\" FROM \"db\".\"openivm\".\"log_1\" \
             WHERE openivm_seq = 4 AND \"openivm_multiplicity\" <> 0) AS openivm_pending"
        );
        let fresh = Qualified::temp("openivm_fresh_0_0".into());
        assert!(fresh_stats(&[FreshPart::Copied { fresh: &fresh, base: &base }]).starts_with(
            "SELECT count(openivm_position)::BIGINT, count(*) FILTER (WHERE \"openivm_multiplicity\" < 0)::BIGINT, \
             max(openivm_position)::VARCHAR"
        ));
    }

    #[test]
    fn an_open_batch_read_in_place_counts_the_rows_past_the_watermark_and_the_logs_other_rows() {
        let base = TableId { catalog: "db".into(), schema: "main".into(), name: "t".into() };
        let key = Position::Key(ColumnDef { name: "k".into(), ty: "INTEGER".into(), collation: None });
        let open = open_batch();
        // Batch 4 is the open one: its rows (multiplicity 0 left out) are the batch; rows past
        // key 7, other batches and zero rows must all be none for the log to be the delta.
        assert_eq!(
            fresh_stats(&[FreshPart::InLog { open: &open, base: &base, pos: &key, watermark: Some("7") }]),
            "SELECT (SELECT count(*) FROM \"db\".\"main\".\"t\" WHERE \"k\" > CAST('7' AS INTEGER))::BIGINT, \
             count(*) FILTER (WHERE openivm_seq = 4 AND \"openivm_multiplicity\" <> 0 AND \"openivm_multiplicity\" < 0)::BIGINT, \
             NULL::VARCHAR, (SELECT count(*)::BIGINT FROM \"db\".\"main\".\"t\")::BIGINT, 0 AS openivm_part, \
             count(*) FILTER (WHERE openivm_seq = 4 AND \"openivm_multiplicity\" <> 0)::BIGINT, \
             count(*) FILTER (WHERE openivm_seq <> 4 OR \"openivm_multiplicity\" = 0)::BIGINT \
             FROM \"db\".\"openivm\".\"log_1\" ORDER BY openivm_part"
        );
        assert_eq!(
            in_log_stats(&open),
            "SELECT count(*) FILTER (WHERE openivm_seq = 4 AND \"openivm_multiplicity\" <> 0)::BIGINT, \
             count(*) FILTER (WHERE openivm_seq = 4 AND \"openivm_multiplicity\" <> 0 AND \"openivm_multiplicity\" < 0)::BIGINT, \
             count(*) FILTER (WHERE openivm_seq <> 4 OR \"openivm_multiplicity\" = 0)::BIGINT \
             FROM \"db\".\"openivm\".\"log_1\""
        );
    }
}
