//! The shared change log of a feed: numbered batches of captured deltas that every view over
//! the table reads from its own cursor, and the delta parts a refresh reads.

use super::position::POSITION;
use super::snapshot::{plain_columns, union_of};
use crate::ir::{ColumnDef, TableId};
use crate::render::{ident, list, table, Qualified, MULTIPLICITY};

/// The column of the change log that numbers capture batches.
pub const SEQ: &str = "openivm_seq";

/// An empty change log with the read columns, the multiplicity and the batch number.
pub fn create_log(log: &Qualified, base: &TableId, cols: &[ColumnDef]) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {} AS SELECT {}CAST(1 AS INTEGER) AS {}, CAST(0 AS BIGINT) AS {SEQ} FROM {} LIMIT 0",
        log.sql(),
        plain_columns(cols),
        ident(MULTIPLICITY),
        table(base)
    )
}

/// The change log `log` with the columns `added` at its end (NULL in the batches it holds),
/// made as a copy renamed into its place: an `ALTER TABLE ... ADD COLUMN` fails at commit in a
/// transaction that deleted rows of the log before (a trim), so the copy serves every caller.
pub fn widened_log(log: &Qualified, added: &[ColumnDef]) -> Vec<String> {
    let next = log.sibling(format!("{}_widened", log.name));
    vec![
        crate::render::drop_table(&next),
        format!(
            "CREATE TABLE {} AS SELECT *{} FROM {}",
            next.sql(),
            list(added, "", |c| format!(", {} AS {}", typed_null(c), ident(&c.name))),
            log.sql()
        ),
        crate::render::drop_table(log),
        format!("ALTER TABLE {} RENAME TO {}", next.sql(), ident(&log.name)),
    ]
}

/// A NULL of column `c`'s type, with its collation: a column added to a log compares its
/// values as the base table does.
fn typed_null(c: &ColumnDef) -> String {
    match &c.collation {
        Some(n) => format!("CAST(NULL AS {}) COLLATE {}", c.ty, ident(n)),
        None => format!("CAST(NULL AS {})", c.ty),
    }
}

/// Appends a captured delta to the change log as batch `seq`; with `appended_only`, only its rows
/// with a position (those past an append-only watermark): its others came from the feed's open
/// batch, which is in the log already as this batch.
pub fn append_log(log: &Qualified, delta: &Qualified, cols: &[ColumnDef], seq: i64, appended_only: bool) -> String {
    let only = appended_only.then(|| format!("{POSITION} IS NOT NULL"));
    insert_into_log(log, delta, cols, seq, only.as_deref())
}

/// `INSERT INTO` the log, as batch `seq`, of the rows of `from` (with the read columns and the
/// multiplicity) satisfying `only` when given.
pub(super) fn insert_into_log(
    log: &Qualified,
    from: &Qualified,
    cols: &[ColumnDef],
    seq: i64,
    only: Option<&str>,
) -> String {
    // Columns named: a widened log has its later columns at the end.
    format!(
        "INSERT INTO {} ({c}{m}, {SEQ}) SELECT {c}{m}, CAST({seq} AS BIGINT) FROM {}{}",
        log.sql(),
        from.sql(),
        only.map(|w| format!(" WHERE {w}")).unwrap_or_default(),
        c = plain_columns(cols),
        m = ident(MULTIPLICITY)
    )
}

/// The logged delta rows a view has not seen: batches after its cursor, up to the feed's newest
/// (`head`; the open batch after it is not captured yet).
pub fn log_after(log: &Qualified, cols: &[ColumnDef], cursor: i64, head: i64) -> String {
    format!(
        "SELECT {c}{m} FROM {} WHERE {SEQ} > {cursor} AND {SEQ} <= {head}",
        log.sql(),
        c = plain_columns(cols),
        m = ident(MULTIPLICITY)
    )
}

/// Per log (tagged with its index): the rows of its batches after the cursor up to the feed's
/// newest (`head`), those of them with a negative multiplicity, and the rows of the whole log
/// (equal to the first when the log holds nothing else, an open batch included). One statement
/// for all of a view's logs.
pub fn logs_stats(logs: &[(usize, Qualified, i64, i64)]) -> String {
    list(logs, " UNION ALL ", |(i, log, cursor, head)| {
        format!(
            "SELECT {i}::BIGINT, count(*) FILTER (WHERE {SEQ} > {cursor} AND {SEQ} <= {head})::BIGINT, \
             count(*) FILTER (WHERE {SEQ} > {cursor} AND {SEQ} <= {head} AND {m} < 0)::BIGINT, count(*)::BIGINT FROM {}",
            log.sql(),
            m = ident(MULTIPLICITY)
        )
    })
}

/// Forgets the batches every view has seen.
pub fn trim_log(log: &Qualified, up_to: i64) -> String {
    format!("DELETE FROM {} WHERE {SEQ} <= {up_to}", log.sql())
}

/// The columns of a delta (read columns and multiplicity) of a fresh capture.
pub fn delta_of(fresh: &Qualified, cols: &[ColumnDef]) -> String {
    format!("SELECT {}{} FROM {}", plain_columns(cols), ident(MULTIPLICITY), fresh.sql())
}

/// Rows and deleted rows of a delta.
pub fn delta_stats(delta: &Qualified) -> String {
    stats_of(&delta.sql())
}

/// Rows and deleted rows of the union of delta parts, read where they are.
pub fn parts_stats(parts: &[String]) -> String {
    stats_of(&format!("({}) AS openivm_parts", union_of(parts)))
}

fn stats_of(from: &str) -> String {
    format!(
        "SELECT count(*)::BIGINT, count(*) FILTER (WHERE {m} < 0)::BIGINT, NULL FROM {from}",
        m = ident(MULTIPLICITY)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_logs_statistics_in_one_statement() {
        let log = |n: &str| Qualified { catalog: "db".into(), schema: "openivm".into(), name: n.into() };
        let sql = logs_stats(&[(0, log("log_1"), 5, 7), (2, log("log_3"), -1, 2)]);
        assert_eq!(
            sql,
            "SELECT 0::BIGINT, count(*) FILTER (WHERE openivm_seq > 5 AND openivm_seq <= 7)::BIGINT, count(*) FILTER \
             (WHERE openivm_seq > 5 AND openivm_seq <= 7 AND \"openivm_multiplicity\" < 0)::BIGINT, count(*)::BIGINT \
             FROM \"db\".\"openivm\".\"log_1\" UNION ALL SELECT 2::BIGINT, count(*) FILTER (WHERE openivm_seq > -1 AND \
             openivm_seq <= 2)::BIGINT, count(*) FILTER (WHERE openivm_seq > -1 AND openivm_seq <= 2 AND \
             \"openivm_multiplicity\" < 0)::BIGINT, count(*)::BIGINT FROM \"db\".\"openivm\".\"log_3\""
        );
    }
}
