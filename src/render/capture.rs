//! SQL of change capture: counted snapshots and their diffs (the exact diff source), reads past
//! a watermark (declared append-only tables), and the shared change log that every view over a
//! table reads from its own cursor.

use super::{ident, list, literal, table, with_comma, Qualified, MULTIPLICITY};
use crate::ir::{ColumnDef, TableId};

/// The column of a fresh capture that holds each row's position (rowid or key value).
pub const POSITION: &str = "openivm_position";
/// The column of the change log that numbers capture batches.
pub const SEQ: &str = "openivm_seq";

fn is_float(ty: &str) -> bool {
    let t = ty.to_ascii_uppercase();
    ["DOUBLE", "FLOAT", "REAL"].iter().any(|f| t == *f)
}

fn is_interval(ty: &str) -> bool {
    ty.eq_ignore_ascii_case("INTERVAL")
}

/// Extra grouping keys that keep apart values DuckDB's equality merges: the sign bit of a
/// floating-point value (0.0 = -0.0 but they print differently), the text of an INTERVAL
/// ('1 month' = '30 days'), and the bytes of a collated string ('a' = 'A' under NOCASE). Each
/// is (expression over the base column, stored name).
fn identity_extras(cols: &[ColumnDef]) -> Vec<(String, String)> {
    cols.iter()
        .filter_map(|c| {
            let col = ident(&c.name);
            if c.collation.is_some() {
                Some((format!("encode({col})"), format!("openivm_bytes_{}", c.name)))
            } else if is_float(&c.ty) {
                Some((format!("signbit({col})"), format!("openivm_sign_{}", c.name)))
            } else if is_interval(&c.ty) {
                Some((format!("CAST({col} AS VARCHAR)"), format!("openivm_text_{}", c.name)))
            } else {
                None
            }
        })
        .collect()
}

/// The grouping keys of a snapshot, computed from the base table or read as stored columns.
fn snapshot_keys(cols: &[ColumnDef], from_base: bool) -> Vec<String> {
    let mut keys: Vec<String> = cols.iter().map(|c| ident(&c.name)).collect();
    for (e, name) in identity_extras(cols) {
        keys.push(if from_base { format!("{e} AS {}", ident(&name)) } else { ident(&name) });
    }
    keys
}

/// The first snapshot of a base table: one row per row of the table, with count 1. Grouping the
/// copies here would cost a hash aggregate over the whole table (0.8-1.2 s against 0.2-0.7 s for
/// the copy at 5M rows): every reader of a snapshot sums the counts of equal rows instead.
pub fn snapshot_fill(base: &TableId, cols: &[ColumnDef]) -> String {
    format!("SELECT {}1::BIGINT AS openivm_count FROM {}", with_comma(&snapshot_keys(cols, true)), table(base))
}

/// The net change of a base table against its snapshot: rows with a non-zero signed count.
pub fn net_change(base: &TableId, snapshot: &Qualified, cols: &[ColumnDef]) -> String {
    let (from_base, stored) = (with_comma(&snapshot_keys(cols, true)), with_comma(&snapshot_keys(cols, false)));
    format!(
        "SELECT {stored}SUM(openivm_n) AS openivm_n FROM (SELECT {from_base}1 AS openivm_n FROM {base} \
         UNION ALL SELECT {stored}-openivm_count FROM {snap}) AS openivm_both GROUP BY ALL HAVING SUM(openivm_n) <> 0",
        base = table(base),
        snap = snapshot.sql()
    )
}

fn plain_columns(cols: &[ColumnDef]) -> String {
    with_comma(&cols.iter().map(|c| ident(&c.name)).collect::<Vec<_>>())
}

/// The delta rows of a net change, one per inserted (+1) or deleted (-1) copy.
pub fn expand_delta(net: &Qualified, cols: &[ColumnDef]) -> String {
    expand_from(&net.sql(), cols)
}

/// The delta rows of the net change of several delta parts (`net_of_parts`), in one statement:
/// the net change is never stored.
pub fn netted_parts(parts: &[String], cols: &[ColumnDef]) -> String {
    expand_from(&format!("({}) AS openivm_net", net_of_parts(parts, cols)), cols)
}

/// The delta rows of the net change in the FROM item `net` (with an `openivm_n` column).
fn expand_from(net: &str, cols: &[ColumnDef]) -> String {
    let c = plain_columns(cols);
    format!(
        "SELECT {c}CAST(CASE WHEN openivm_n > 0 THEN 1 ELSE -1 END AS INTEGER) AS {m} FROM \
         (SELECT {c}openivm_n, UNNEST(range(CAST(abs(openivm_n) AS BIGINT))) AS openivm_copy FROM {net}) AS openivm_n",
        m = ident(MULTIPLICITY),
    )
}

/// Whether each of several tables differs from its snapshot (`net_change` queries), in one row
/// of 0/1 values: one statement for all the small diff-captured tables of a refresh, most of
/// which are unchanged at any one refresh.
pub fn any_net_change(net_changes: &[String]) -> String {
    format!("SELECT {}", list(net_changes, ", ", |q| format!("(EXISTS ({q}))::BIGINT")))
}

/// The signed total of a net change: rows added less rows removed.
pub fn net_total(net: &Qualified) -> String {
    format!("SELECT COALESCE(SUM(openivm_n), 0)::BIGINT FROM {}", net.sql())
}

/// Rows and deleted rows of the delta a net change expands to.
pub fn net_stats(net: &Qualified) -> String {
    format!(
        "SELECT COALESCE(SUM(abs(openivm_n)), 0)::BIGINT, COALESCE(SUM(-openivm_n) FILTER (WHERE openivm_n < 0), 0)::BIGINT, NULL FROM {}",
        net.sql()
    )
}

/// Advances a snapshot by the net change it was compared with: the net rows are appended with
/// their signed counts (the snapshot is a multiset whose rows' counts add up per distinct row).
pub fn advance_snapshot(snapshot: &Qualified, net: &Qualified, cols: &[ColumnDef]) -> String {
    let keys = with_comma(&snapshot_keys(cols, false));
    format!("INSERT INTO {s} SELECT {keys}openivm_n FROM {n}", s = snapshot.sql(), n = net.sql())
}

/// A snapshot regrouped to one row per distinct row, rows whose counts add up to zero left out
/// (once appended net changes have made it much larger than its table).
pub fn compact_snapshot(snapshot: &Qualified, cols: &[ColumnDef]) -> String {
    let s = snapshot.sql();
    format!(
        "CREATE OR REPLACE TABLE {s} AS SELECT {}SUM(openivm_count)::BIGINT AS openivm_count FROM {s} GROUP BY ALL \
         HAVING SUM(openivm_count) <> 0",
        with_comma(&snapshot_keys(cols, false))
    )
}

/// Where an append-only table's rows are counted from: its rowid, or a declared ever-increasing
/// key column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Position {
    RowId,
    Key(ColumnDef),
}

impl Position {
    fn expr(&self) -> String {
        match self {
            Position::RowId => "rowid".into(),
            Position::Key(c) => ident(&c.name),
        }
    }

    /// The condition "row is past the watermark". The rowid watermark is the next rowid (rows
    /// are numbered from 0 without gaps while nothing is deleted); a key watermark is the
    /// largest key seen (NULL: none seen yet).
    fn after(&self, watermark: Option<&str>) -> String {
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

/// A feed's open batch: the deltas writes through openivm recorded since its last capture. They
/// are kept in its change log under the number the next capture gives its batch (one past the
/// newest, `seq`), which no reader of the log takes (each reads up to the newest batch): the
/// capture takes them in where they are, with no copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenBatch {
    pub log: Qualified,
    pub seq: i64,
}

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
fn insert_into_log(log: &Qualified, from: &Qualified, cols: &[ColumnDef], seq: i64, only: Option<&str>) -> String {
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

/// The columns of a delta (read columns and multiplicity) of a fresh capture.
pub fn delta_of(fresh: &Qualified, cols: &[ColumnDef]) -> String {
    format!("SELECT {}{} FROM {}", plain_columns(cols), ident(MULTIPLICITY), fresh.sql())
}

/// The net change of several delta parts (logged batches, a fresh batch) on the columns one view
/// reads: a row inserted and deleted again, or a change of a column the view does not read,
/// cancels out. Same shape as `net_change` (expand it with `expand_delta`).
pub fn net_of_parts(parts: &[String], cols: &[ColumnDef]) -> String {
    format!(
        "SELECT {}SUM({m}) AS openivm_n FROM ({}) AS openivm_parts GROUP BY ALL HAVING SUM({m}) <> 0",
        with_comma(&snapshot_keys(cols, true)),
        union_of(parts),
        m = ident(MULTIPLICITY)
    )
}

/// Per delta (`(i, a SELECT of its rows, the view's columns)`): how many groups of its rows
/// netting on the view's columns (`net_of_parts`, grouped alike) could change: a row that
/// repeats another's values (they may cancel) or that is not one copy (netting drops a 0 and
/// splits a 2). None: the delta is its own net change.
pub fn nettable_groups(deltas: &[(usize, String, &[ColumnDef])]) -> String {
    list(deltas, " UNION ALL ", |(i, rows, cols)| {
        format!(
            "SELECT {i}::BIGINT, (SELECT count(*) FROM (SELECT {} FROM ({rows}) AS openivm_rows GROUP BY ALL \
             HAVING count(*) > 1 OR max(abs({m})) <> 1))::BIGINT",
            snapshot_keys(cols, true).join(", "),
            m = ident(MULTIPLICITY)
        )
    })
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

/// A check of a deleting parent's delta (`fk_pruning::KeyCheck`) as SQL: the delta, its key columns,
/// and for a declared key the child's current relation (a FROM item) with its referencing columns.
pub struct KeyCheckSql<'a> {
    pub delta: &'a Qualified,
    pub keys: &'a [String],
    pub child: Option<(String, &'a [String])>,
}

/// A child delta whose keys are looked up in its parent's delta (`fk_pruning::coverage_checks`): the
/// child's delta (a FROM item) with its referencing columns, the parent's delta with its key.
pub struct CoverageSql<'a> {
    pub child: String,
    pub refs: &'a [String],
    pub parent: &'a Qualified,
    pub keys: &'a [String],
}

/// For each check, two counts (both 0 when it holds): the keys of the delta on more than one row
/// or on a row of multiplicity other than +1 or -1, and, for a declared key, whether a row of the
/// child references a deleted key (0 or 1; always 0 without a child). Then for each coverage
/// count, whether a row of the child's delta references a key (all of it non-NULL) its parent's
/// delta lacks (0 or 1). One row: two columns per check, then one per coverage count.
pub fn key_checks(checks: &[KeyCheckSql], coverage: &[CoverageSql]) -> String {
    let m = ident(MULTIPLICITY);
    let joined = |refs: &[String], keys: &[String]| {
        list(refs.iter().zip(keys), " AND ", |(r, c)| format!("openivm_c.{} = openivm_d.{}", ident(r), ident(c)))
    };
    let one = |k: &KeyCheckSql| {
        let repeated = format!(
            "(SELECT count(*) FROM (SELECT 1 FROM {} GROUP BY {} HAVING count(*) > 1 OR max(abs({m})) <> 1))::BIGINT",
            k.delta.sql(),
            list(k.keys.iter(), ", ", |c| ident(c))
        );
        let referencing = match &k.child {
            None => "0::BIGINT".to_string(),
            Some((child, refs)) => format!(
                "(SELECT count(*) FROM (SELECT 1 FROM {child} AS openivm_c JOIN {} AS openivm_d ON {} \
                 WHERE openivm_d.{m} < 0 LIMIT 1))::BIGINT",
                k.delta.sql(),
                joined(refs, k.keys)
            ),
        };
        format!("{repeated}, {referencing}")
    };
    // DuckDB's ANTI JOIN: planned in about half the time of the NOT EXISTS it stands for.
    let missing = |v: &CoverageSql| {
        format!(
            "(SELECT count(*) FROM (SELECT 1 FROM {} AS openivm_c ANTI JOIN {} AS openivm_d ON {} WHERE {} LIMIT 1))::BIGINT",
            v.child,
            v.parent.sql(),
            joined(v.refs, v.keys),
            list(v.refs.iter(), " AND ", |r| format!("openivm_c.{} IS NOT NULL", ident(r))),
        )
    };
    let cols: Vec<String> = checks.iter().map(one).chain(coverage.iter().map(missing)).collect();
    format!("SELECT {}", cols.join(", "))
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

pub fn union_of(parts: &[String]) -> String {
    list(parts, " UNION ALL ", |p| p.clone())
}

/// One feed row as a capture leaves it (`feeds_update`).
pub struct FeedRow<'a> {
    pub id: i64,
    pub source: &'a str,
    /// '' = NULL (rowid), as stored.
    pub key_column: String,
    pub watermark: Option<&'a str>,
    pub row_count: i64,
    pub size_seen: i64,
    pub seq: i64,
    pub log_rows: i64,
    pub pending_rows: i64,
    pub batch_rows: i64,
    pub batch_deletes: i64,
    /// '' = NULL (no facts).
    pub batch_facts: String,
}

fn opt_literal(v: Option<&str>) -> String {
    v.filter(|v| !v.is_empty()).map_or_else(|| "NULL".to_string(), literal)
}

/// Feed rows written in one statement: every feed a refresh changed, or one (`Feed::save`).
/// A statement costs about a millisecond; literals here cost less than parameters unnested
/// from JSON.
pub fn feeds_update(rows: &[FeedRow]) -> String {
    let set = |column: &str, value: &dyn Fn(&FeedRow) -> String| {
        format!("{column} = {}", by_feed(rows.iter().map(|r| (r.id, value(r)))))
    };
    let assignments = [
        set("source", &|r| literal(r.source)),
        set("key_column", &|r| opt_literal(Some(&r.key_column))),
        set("watermark", &|r| opt_literal(r.watermark)),
        set("row_count", &|r| r.row_count.to_string()),
        set("size_seen", &|r| r.size_seen.to_string()),
        set("seq", &|r| r.seq.to_string()),
        set("log_rows", &|r| r.log_rows.to_string()),
        set("pending_rows", &|r| r.pending_rows.to_string()),
        set("batch_rows", &|r| r.batch_rows.to_string()),
        set("batch_deletes", &|r| r.batch_deletes.to_string()),
        set("batch_facts", &|r| opt_literal(Some(&r.batch_facts))),
    ];
    format!(
        "UPDATE openivm.feeds SET {} WHERE feed_id IN ({})",
        assignments.join(", "),
        list(rows, ", ", |r| r.id.to_string())
    )
}

/// `CASE feed_id WHEN <id> THEN <value> ... END`: the value of a column per feed in an UPDATE of
/// several feeds' rows. DuckDB plans and runs it in about two thirds of the time of a join with a
/// `VALUES` list, and such updates are in every refresh.
fn by_feed(values: impl IntoIterator<Item = (i64, String)>) -> String {
    format!("CASE feed_id {} END", list(values, " ", |(id, v)| format!("WHEN {id} THEN {v}")))
}

/// History rows of several refreshes in one INSERT: each as the 14 parameters of
/// `sql/capture/history_insert.sql` (view, schema, microseconds before the writing transaction,
/// mode, reason, term counts, delta rows, capture / apply / total / setup ms), typed as there.
pub fn history_rows(rows: &[[String; 14]]) -> String {
    let values = list(rows, ", ", |r| format!("({})", list(r.iter(), ", ", |v| literal(v))));
    format!(
        "INSERT INTO openivm_refresh_history (view_name, view_schema, started_at, mode, reason, terms_total, \
         terms_fk_pruned, terms_empty_skipped, terms_run, delta_rows, capture_ms, apply_ms, total_ms, setup_ms) \
         SELECT v0, v1, CAST(now() AS TIMESTAMP) - to_microseconds(CAST(v2 AS BIGINT)), \
         v3, v4, CAST(v5 AS INTEGER), CAST(v6 AS INTEGER), CAST(v7 AS INTEGER), CAST(v8 AS INTEGER), CAST(v9 AS BIGINT), \
         CAST(v10 AS DOUBLE), CAST(v11 AS DOUBLE), CAST(v12 AS DOUBLE), CAST(v13 AS DOUBLE) \
         FROM (VALUES {values}) v(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13)"
    )
}

/// Marks views (schema, name) refreshed once more, as `sql/views/mark_refreshed.sql` does one.
pub fn views_refreshed(views: &[(&str, &str)]) -> String {
    let values = list(views, ", ", |(s, n)| format!("({}, {})", literal(s), literal(n)));
    format!(
        "UPDATE openivm_views SET refreshed_at = now()::TIMESTAMP, refresh_count = refresh_count + 1 \
         FROM (VALUES {values}) v(s, n) WHERE openivm_views.view_schema = v.s AND openivm_views.view_name = v.n"
    )
}

/// Moves a view's cursors: (feed id, seq, the feed's watermark then).
pub fn cursors_advance(schema: &str, view: &str, moves: &[(i64, i64, Option<String>)]) -> String {
    let seqs = by_feed(moves.iter().map(|(id, seq, _)| (*id, seq.to_string())));
    let watermarks = by_feed(
        moves.iter().map(|(id, _, w)| (*id, w.as_deref().map_or("CAST(NULL AS VARCHAR)".to_string(), literal))),
    );
    format!(
        "UPDATE openivm.cursors SET seq = {seqs}, watermark = {watermarks} WHERE view_schema = {} AND view_name = {} \
         AND feed_id IN ({})",
        literal(schema),
        literal(view),
        list(moves, ", ", |(id, _, _)| id.to_string())
    )
}

/// A view's cursor move, as `cursors_advance_all` writes it.
pub struct CursorMoveRow<'a> {
    pub schema: &'a str,
    pub view: &'a str,
    pub feed: i64,
    /// The cursor's seq before the move: a cursor another statement moved since keeps its value.
    pub from: i64,
    pub to: i64,
    /// The feed's watermark then.
    pub watermark: Option<&'a str>,
}

/// Moves the cursors of several views at once. A cursor that another statement moved since
/// (a rebuilt feed marks the other views' cursors -1) keeps that value.
pub fn cursors_advance_all(moves: &[CursorMoveRow]) -> String {
    let values = list(moves, ", ", |m| {
        format!(
            "({}, {}, {}, {}, {}, {})",
            literal(m.schema),
            literal(m.view),
            m.feed,
            m.from,
            m.to,
            m.watermark.map_or("CAST(NULL AS VARCHAR)".to_string(), literal)
        )
    });
    format!(
        "UPDATE openivm.cursors SET seq = v.seq, watermark = v.watermark FROM (VALUES {values}) \
         v(view_schema, view_name, feed_id, moved_from, seq, watermark) \
         WHERE openivm.cursors.view_schema = v.view_schema AND openivm.cursors.view_name = v.view_name \
         AND openivm.cursors.feed_id = v.feed_id AND openivm.cursors.seq = v.moved_from"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_the_cursors_of_several_views_only_from_where_they_were() {
        let row = |view, feed, from, to, watermark| CursorMoveRow { schema: "main", view, feed, from, to, watermark };
        let sql = cursors_advance_all(&[row("a", 1, 4, 5, Some("10")), row("b'x", 2, -1, 3, None)]);
        assert_eq!(
            sql,
            "UPDATE openivm.cursors SET seq = v.seq, watermark = v.watermark FROM (VALUES ('main', 'a', 1, 4, 5, '10'), \
             ('main', 'b''x', 2, -1, 3, CAST(NULL AS VARCHAR))) v(view_schema, view_name, feed_id, moved_from, seq, \
             watermark) WHERE openivm.cursors.view_schema = v.view_schema AND openivm.cursors.view_name = \
             v.view_name AND openivm.cursors.feed_id = v.feed_id AND openivm.cursors.seq = v.moved_from"
        );
    }

    fn cols() -> Vec<ColumnDef> {
        vec![
            ColumnDef { name: "k".into(), ty: "INTEGER".into(), collation: None },
            ColumnDef { name: "d".into(), ty: "DOUBLE".into(), collation: None },
            ColumnDef { name: "i".into(), ty: "INTERVAL".into(), collation: None },
        ]
    }

    #[test]
    fn finds_what_netting_could_change_in_every_delta_in_one_statement() {
        let cols = vec![
            ColumnDef { name: "k".into(), ty: "INTEGER".into(), collation: None },
            ColumnDef { name: "d".into(), ty: "DOUBLE".into(), collation: None },
        ];
        let sql = nettable_groups(&[(1, "SELECT k, d, openivm_multiplicity FROM l".into(), &cols)]);
        assert_eq!(
            sql,
            "SELECT 1::BIGINT, (SELECT count(*) FROM (SELECT \"k\", \"d\", signbit(\"d\") AS \"openivm_sign_d\" FROM \
             (SELECT k, d, openivm_multiplicity FROM l) AS openivm_rows GROUP BY ALL HAVING count(*) > 1 OR \
             max(abs(\"openivm_multiplicity\")) <> 1))::BIGINT"
        );
    }

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

    #[test]
    fn snapshots_keep_signed_zeros_and_interval_spellings_apart() {
        let base = TableId { catalog: "db".into(), schema: "main".into(), name: "t".into() };
        assert_eq!(
            snapshot_fill(&base, &cols()),
            "SELECT \"k\", \"d\", \"i\", signbit(\"d\") AS \"openivm_sign_d\", CAST(\"i\" AS VARCHAR) AS \"openivm_text_i\", \
             1::BIGINT AS openivm_count FROM \"db\".\"main\".\"t\""
        );
        let snap = Qualified { catalog: "db".into(), schema: "openivm".into(), name: "snapshot_1".into() };
        let net = Qualified::temp("openivm_net".into());
        assert_eq!(
            advance_snapshot(&snap, &net, &cols()),
            "INSERT INTO \"db\".\"openivm\".\"snapshot_1\" SELECT \"k\", \"d\", \"i\", \"openivm_sign_d\", \
             \"openivm_text_i\", openivm_n FROM \"temp\".\"main\".\"openivm_net\""
        );
        assert_eq!(
            compact_snapshot(&snap, &cols()),
            "CREATE OR REPLACE TABLE \"db\".\"openivm\".\"snapshot_1\" AS SELECT \"k\", \"d\", \"i\", \"openivm_sign_d\", \
             \"openivm_text_i\", SUM(openivm_count)::BIGINT AS openivm_count FROM \"db\".\"openivm\".\"snapshot_1\" GROUP BY \
             ALL HAVING SUM(openivm_count) <> 0"
        );
    }

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

    #[test]
    fn a_refresh_writes_its_feed_rows_and_cursor_moves_as_literals() {
        let row = FeedRow {
            id: 3,
            source: "append_only",
            key_column: String::new(),
            watermark: Some("it's 9"),
            row_count: 10,
            size_seen: 12,
            seq: 4,
            log_rows: 0,
            pending_rows: 0,
            batch_rows: 7,
            batch_deletes: 1,
            batch_facts: r#"{"seq":4}"#.into(),
        };
        let sql = feeds_update(&[row]);
        assert_eq!(
            sql,
            "UPDATE openivm.feeds SET source = CASE feed_id WHEN 3 THEN 'append_only' END, key_column = CASE feed_id \
             WHEN 3 THEN NULL END, watermark = CASE feed_id WHEN 3 THEN 'it''s 9' END, row_count = CASE feed_id WHEN 3 \
             THEN 10 END, size_seen = CASE feed_id WHEN 3 THEN 12 END, seq = CASE feed_id WHEN 3 THEN 4 END, log_rows = \
             CASE feed_id WHEN 3 THEN 0 END, pending_rows = CASE feed_id WHEN 3 THEN 0 END, batch_rows = CASE feed_id \
             WHEN 3 THEN 7 END, batch_deletes = CASE feed_id WHEN 3 THEN 1 END, batch_facts = CASE feed_id WHEN 3 THEN \
             '{\"seq\":4}' END WHERE feed_id IN (3)"
        );
        let moves = cursors_advance("main", "o'v", &[(1, 5, None), (2, 7, Some("12".into()))]);
        assert_eq!(
            moves,
            "UPDATE openivm.cursors SET seq = CASE feed_id WHEN 1 THEN 5 WHEN 2 THEN 7 END, watermark = CASE feed_id \
             WHEN 1 THEN CAST(NULL AS VARCHAR) WHEN 2 THEN '12' END WHERE view_schema = 'main' AND view_name = 'o''v' \
             AND feed_id IN (1, 2)"
        );
    }
}
