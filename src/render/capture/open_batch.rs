//! A feed's open batch: the deltas writes through openivm record in its change log ahead of the
//! next capture.

use super::log::{insert_into_log, SEQ};
use super::snapshot::{expand_delta, plain_columns};
use crate::ir::ColumnDef;
use crate::render::{ident, Qualified, MULTIPLICITY};

/// A feed's open batch: the deltas writes through openivm recorded since its last capture. They
/// are kept in its change log under the number the next capture gives its batch (one past the
/// newest, `seq`), which no reader of the log takes (each reads up to the newest batch): the
/// capture takes them in where they are, with no copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenBatch {
    pub log: Qualified,
    pub seq: i64,
}

/// Forgets a feed's open batch (rows numbered past its newest batch `head`): a feed that
/// restarts from its table as it is.
pub fn drop_open_batch(log: &Qualified, head: i64) -> String {
    format!("DELETE FROM {} WHERE {SEQ} > {head}", log.sql())
}

/// Appends rows of `rows` (a temp table with the read columns among its columns) to the open
/// batch with multiplicity `sign`, only those satisfying `only` when given.
pub fn append_recorded(open: &OpenBatch, rows: &Qualified, cols: &[ColumnDef], sign: i8, only: Option<&str>) -> String {
    append_signed(open, &rows.sql(), cols, sign, only)
}

/// `INSERT INTO` the open batch of the read columns of `from` (a relation as SQL) with
/// multiplicity `sign`, only the rows satisfying `only` when given.
fn append_signed(open: &OpenBatch, from: &str, cols: &[ColumnDef], sign: i8, only: Option<&str>) -> String {
    format!(
        "INSERT INTO {} ({c}{m}, {SEQ}) SELECT {c}CAST({sign} AS INTEGER), CAST({} AS BIGINT) FROM {from}{}",
        open.log.sql(),
        open.seq,
        only.map(|w| format!(" WHERE {w}")).unwrap_or_default(),
        c = plain_columns(cols),
        m = ident(MULTIPLICITY)
    )
}

/// Appends the rows a view shows of some of its stored rows (`visible`, see
/// `render::visible_rows`) to the open batch of a feed on the view, with multiplicity `sign`.
pub fn append_visible(open: &OpenBatch, visible: &str, cols: &[ColumnDef], sign: i8) -> String {
    append_signed(open, &format!("({visible}) AS openivm_v"), cols, sign, None)
}

/// The change of what a view shows, netted: the rows it showed (`before`, a table) against the
/// rows it shows now (`after`), as a net change (`openivm_n` per distinct row, 0 left out) to
/// expand with `expand_delta`. A row shown alike before and after is no change.
pub fn shown_change(before: &Qualified, after: &str, cols: &[ColumnDef]) -> String {
    let c = plain_columns(cols);
    format!(
        "SELECT {c}SUM(openivm_m) AS openivm_n FROM (SELECT {c}-1 AS openivm_m FROM {} UNION ALL \
         SELECT {c}1 AS openivm_m FROM ({after}) AS openivm_a) AS openivm_c GROUP BY ALL HAVING SUM(openivm_m) <> 0",
        before.sql()
    )
}

/// Appends a net change of what a view shows (`shown_change`) to an open batch, one row per copy.
pub fn append_net(open: &OpenBatch, net: &Qualified, cols: &[ColumnDef]) -> String {
    format!(
        "INSERT INTO {} ({}{}, {SEQ}) SELECT *, CAST({} AS BIGINT) FROM ({}) AS openivm_e",
        open.log.sql(),
        plain_columns(cols),
        ident(MULTIPLICITY),
        open.seq,
        expand_delta(net, cols)
    )
}

/// Moves the rows of a table in which an earlier version kept a feed's open batch into the
/// feed's log, as its open batch (the rows recorded with 0 left out).
pub fn move_legacy_pending(pending: &Qualified, open: &OpenBatch, cols: &[ColumnDef]) -> String {
    let nonzero = format!("{} <> 0", ident(MULTIPLICITY));
    insert_into_log(&open.log, pending, cols, open.seq, Some(&nonzero))
}

/// The rows of an open batch, as a delta part: one row per copy, +1 or -1 (a row recorded with 0
/// by an earlier version, past an append-only watermark, is left out).
pub fn open_rows(open: &OpenBatch, cols: &[ColumnDef]) -> String {
    format!(
        "SELECT {}{m} FROM {} WHERE {SEQ} = {} AND {m} <> 0",
        plain_columns(cols),
        open.log.sql(),
        open.seq,
        m = ident(MULTIPLICITY)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::capture::{append_log, log_after};

    fn open_batch() -> OpenBatch {
        OpenBatch { log: Qualified { catalog: "db".into(), schema: "openivm".into(), name: "log_1".into() }, seq: 4 }
    }

    #[test]
    fn writes_record_into_the_open_batch_of_the_log_and_readers_stop_before_it() {
        let rows = Qualified::temp("openivm_write_rows".into());
        let c = vec![ColumnDef { name: "k".into(), ty: "INTEGER".into(), collation: None }];
        assert_eq!(
            append_recorded(&open_batch(), &rows, &c, -1, None),
            "INSERT INTO \"db\".\"openivm\".\"log_1\" (\"k\", \"openivm_multiplicity\", openivm_seq) SELECT \"k\", \
             CAST(-1 AS INTEGER), CAST(4 AS BIGINT) FROM \"temp\".\"main\".\"openivm_write_rows\""
        );
        // A view 1 batch behind a feed at batch 3 reads batches 2 and 3, not the open batch 4.
        assert_eq!(
            log_after(&open_batch().log, &c, 1, 3),
            "SELECT \"k\", \"openivm_multiplicity\" FROM \"db\".\"openivm\".\"log_1\" WHERE openivm_seq > 1 AND \
             openivm_seq <= 3"
        );
        assert_eq!(
            drop_open_batch(&open_batch().log, 3),
            "DELETE FROM \"db\".\"openivm\".\"log_1\" WHERE openivm_seq > 3"
        );
        // A capture appends to the log only the rows the open batch does not hold.
        let fresh = Qualified::temp("openivm_fresh_0_0".into());
        assert!(append_log(&open_batch().log, &fresh, &c, 4, true).ends_with(" WHERE openivm_position IS NOT NULL"));
        assert!(append_log(&open_batch().log, &fresh, &c, 4, false).ends_with("\"openivm_fresh_0_0\""));
    }
}
