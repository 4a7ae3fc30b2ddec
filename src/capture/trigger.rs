//! The trigger source (DuckDB 2.0, databases of storage v2.0.0+): statement triggers openivm
//! installs on the table append every write's changed rows to the feed's change log, unstamped,
//! in the writer's own transaction, whoever writes (other connections and processes, COPY,
//! appenders). A capture stamps the unstamped rows its snapshot sees as the feed's next batch
//! (rows of writers that commit later stay unstamped for the next one) and takes them in as the
//! open batch of a recorded feed is taken: O(rows written), whatever the table's size.
//!
//! Installing: a writer that wrote the table before the triggers existed fires none. The
//! installing transaction sets the table's comment to itself, which turns the commit of such a
//! writer still open into an error; one that committed while the triggers were being installed
//! is found by a diff: a feed keeps a counted snapshot (as the diff source does) until its
//! first capture in a writable session, which diffs the table and drops the unstamped rows it
//! sees (the diff holds them), and only then trusts the log.
//!
//! Health: every capture checks that the triggers are on the table as they were installed
//! (`duckdb_triggers().sql`, recorded at installation). A dropped or replaced trigger, a table
//! created again, or a database exported and imported lose writes: the refresh recomputes the
//! view, installs the triggers again, and marks the feed's other views to recompute (as for a
//! DuckLake range that cannot be read).

use std::collections::HashMap;

use super::batch::{temp_name, DeltaStats, Fresh, SourceKind};
use super::feed::Feed;
use super::recorded;
use crate::db::{read_all, typed_row, FromRow, Row, Sql};
use crate::error::{Error, Result};
use crate::ir::TableId;
use crate::render::trigger::{self as sql, Event};
use crate::sql::views::READ_ONLY;

/// The watermark of a feed whose triggers are installed and whose first capture (a diff) has
/// not run yet.
pub const INSTALLING: &str = "installing";

/// Whether the feed is a trigger feed that still diffs its table at its next capture
/// (`INSTALLING`).
pub fn installing(feed: &Feed) -> bool {
    feed.kind == SourceKind::Trigger && feed.watermark.as_deref() == Some(INSTALLING)
}

/// Whether tables of database `catalog` can carry openivm's triggers: DuckDB 2.0 or later, a
/// native database in memory or of storage v2.0.0 or later. (A database attached read-only
/// keeps its sources: a refresh with nothing to do works there, one with work says why not.)
pub fn supported(db: &dyn Sql, catalog: &str) -> Result<bool> {
    Ok(unsupported_why(db, catalog)?.is_none())
}

/// Why tables of database `catalog` cannot carry openivm's triggers (None: they can).
pub fn unsupported_why(db: &dyn Sql, catalog: &str) -> Result<Option<String>> {
    let rows: Vec<(String, Option<String>, Option<String>)> = read_all(&db.query(&sql::support(catalog))?)?;
    let Some((library, storage, kind)) = rows.into_iter().next() else {
        return Ok(Some(format!("database '{catalog}' is not attached")));
    };
    Ok(unsupported(&library, storage.as_deref(), kind.as_deref()))
}

/// `unsupported_why` on what DuckDB reports: its version (`v2.0.1`), the database's storage
/// version tag (none in memory) and type.
pub fn unsupported(library: &str, storage: Option<&str>, kind: Option<&str>) -> Option<String> {
    let major = |v: &str| v.trim_start_matches('v').split('.').next().and_then(|m| m.parse::<u32>().ok());
    if major(library).is_none_or(|m| m < 2) {
        return Some(format!("DuckDB {library} has no triggers"));
    }
    if !kind.is_some_and(|k| k.eq_ignore_ascii_case("duckdb")) {
        return Some(format!("a database of type {} cannot carry triggers", kind.unwrap_or("unknown")));
    }
    match storage {
        Some(s) if major(s).is_none_or(|m| m < 2) => Some(format!(
            "storage version {s} has no triggers: ATTACH ... (STORAGE_VERSION 'v2.0.0') upgrades a database"
        )),
        _ => None,
    }
}

/// Installs (or replaces) the feed's triggers on its table, writing into its log (which must
/// exist), fences writers that wrote before them, and records them as DuckDB keeps them.
pub fn install(db: &dyn Sql, feed: &Feed) -> Result<()> {
    for e in Event::ALL {
        db.execute(&sql::create(e, feed.id, &feed.table, &feed.log(), &feed.columns))?;
    }
    let comment: Vec<(Option<String>,)> = read_all(&db.query(&sql::table_comment(&feed.table))?)?;
    let comment = comment.into_iter().next().and_then(|(c,)| c);
    db.execute(&sql::fence(&feed.table, comment.as_deref()))?;
    db.execute(&sql::forget(&feed.catalog, feed.id))?;
    db.execute(&sql::remember(&feed.catalog, feed.id, &feed.table))
}

/// Removes the feed's triggers (those still there: none once the table was dropped) and their
/// record.
pub fn uninstall(db: &dyn Sql, feed: &Feed) -> Result<()> {
    for (name,) in read_all::<(String,)>(&db.query(&sql::present(feed.id, &feed.table))?)? {
        db.execute(&sql::drop(&name, &feed.table))?;
    }
    db.execute(&sql::forget(&feed.catalog, feed.id))
}

/// What a row of `sql::inspect` tells.
#[derive(PartialEq, Eq)]
enum Found {
    /// A feed's unstamped log rows (a), how many of them delete (b), and its stamped rows (c).
    Stats,
    /// A trigger (a: name, b: text) a feed's registry records.
    Recorded,
    /// A trigger (a: name, b: text) DuckDB has on `table`.
    Present,
}

/// One row of `sql::inspect`.
struct InspectRow {
    kind: Found,
    feed: Option<i64>,
    a: Option<String>,
    b: Option<String>,
    c: Option<String>,
    table: Option<TableId>,
}

typed_row! {
    /// A row of `sql::inspect` as it reads.
    struct InspectCells {
        kind: String,
        feed: Option<i64>,
        a: Option<String>,
        b: Option<String>,
        c: Option<String>,
        catalog: Option<String>,
        schema: Option<String>,
        name: Option<String>,
    }
}

impl FromRow for InspectRow {
    fn from_row(r: &Row) -> Result<Self> {
        let r = InspectCells::from_row(r)?;
        let table = match (r.catalog, r.schema, r.name) {
            (Some(catalog), Some(schema), Some(name)) => Some(TableId { catalog, schema, name }),
            _ => None,
        };
        let kind = match r.kind.as_str() {
            "stats" => Found::Stats,
            "recorded" => Found::Recorded,
            "present" => Found::Present,
            other => return Err(Error::Internal(format!("an unknown trigger inspection row '{other}'"))),
        };
        Ok(InspectRow { kind, feed: r.feed, a: r.a, b: r.b, c: r.c, table })
    }
}

/// What a capture reads of a trigger feed before taking its batch: the log's unstamped rows,
/// and its triggers that are gone or changed (`missing`), with how many its registry records.
#[derive(Clone, Debug, Default)]
pub struct Inspection {
    raw: DeltaStats,
    /// Rows of logged batches the log holds besides.
    stamped: u64,
    missing: Vec<String>,
    recorded: usize,
}

/// Inspects the trigger feeds in one statement (`sql::inspect`), by feed id.
pub fn inspect(db: &dyn Sql, feeds: &[&Feed]) -> Result<HashMap<i64, Inspection>> {
    if feeds.is_empty() {
        return Ok(HashMap::new());
    }
    let logs: Vec<_> = feeds.iter().map(|f| f.log()).collect();
    let asked: Vec<sql::Inspected> =
        feeds.iter().zip(&logs).map(|(f, log)| sql::Inspected { feed: f.id, log, catalog: &f.catalog }).collect();
    // The same text at every refresh of these feeds: its plan is kept.
    let rows: Vec<InspectRow> = read_all(&db.query_reusing_plan(&sql::inspect(&asked), 0)?)?;
    let count = |v: &Option<String>| -> Result<u64> {
        v.as_deref()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| Error::Internal("a trigger log's row count is not a number".into()))
    };
    let mut out = HashMap::new();
    for f in feeds {
        let mut seen = Inspection::default();
        for r in rows.iter().filter(|r| r.feed == Some(f.id)) {
            match r.kind {
                Found::Stats => {
                    seen.raw = DeltaStats { rows: count(&r.a)?, deletes: count(&r.b)? };
                    seen.stamped = count(&r.c)?;
                }
                Found::Recorded => {
                    seen.recorded += 1;
                    let present = rows.iter().any(|p| {
                        p.kind == Found::Present && p.table.as_ref() == Some(&f.table) && p.a == r.a && p.b == r.b
                    });
                    if !present {
                        seen.missing.push(r.a.clone().unwrap_or_default());
                    }
                }
                Found::Present => {}
            }
        }
        seen.missing.sort();
        out.insert(f.id, seen);
    }
    Ok(out)
}

/// Fails unless the feed's triggers are on its table as they were installed.
fn check(feed: &Feed, seen: &Inspection) -> Result<()> {
    if seen.missing.is_empty() && seen.recorded == Event::ALL.len() {
        return Ok(());
    }
    let what = if seen.missing.is_empty() {
        "the record of its triggers is incomplete".to_string()
    } else {
        format!("trigger(s) {} are gone or were replaced", seen.missing.join(", "))
    };
    Err(Error::BrokenPromise(format!(
        "table '{t}' is captured by triggers openivm installed, but {what} (a DROP TRIGGER, CREATE OR REPLACE TABLE, \
         EXPORT/IMPORT DATABASE or COPY FROM DATABASE drops them): writes since then may be missing from its change log, so a \
         refresh recomputes its views and installs the triggers again; to capture the table by diffing it \
         instead, CALL openivm_set_source('{t}', 'diff')",
        t = feed.table.dotted(),
    )))
}

/// Captures the feed's batch: while installing, a diff of the table (whose unstamped log rows it
/// holds, so they are dropped); else the log's unstamped rows. A feed one view reads, whose log
/// holds nothing else, has the log itself as its delta: no copy, and the commit deletes the rows
/// (a statement that costs what the trim of a batch costs). With other views, rows that only
/// insert are stamped as the next batch and taken where they lie, and a batch that deletes is
/// netted (into a temp table, its raw rows deleted from the log, the net rows logged for the
/// others): stamping rows the commit may delete makes the commit write both.
pub fn capture(db: &dyn Sql, feed: &Feed, name: &str, size_now: i64) -> Result<Fresh> {
    let seen = inspect(db, &[feed])?.remove(&feed.id).unwrap_or_default();
    capture_inspected(db, feed, name, size_now, &seen, false)
}

/// `capture`, the feed inspected already (by one statement for all the feeds of a refresh);
/// `net`: a batch with deletes is netted even where one view reads it.
pub fn capture_inspected(
    db: &dyn Sql,
    feed: &Feed,
    name: &str,
    size_now: i64,
    seen: &Inspection,
    net: bool,
) -> Result<Fresh> {
    check(feed, seen)?;
    let log = feed.log();
    let raw = seen.raw.clone();
    let read_only = || -> Result<bool> { Ok(READ_ONLY.scalar(db, [&feed.catalog])?.as_deref() == Some("true")) };
    // Taking logged rows writes the log: on a database attached read-only, say so.
    if raw.rows > 0 && read_only()? {
        return Err(Error::InvalidArgument(format!(
            "the database '{}' is attached read-only, and table '{}' has {} changed rows its triggers logged; open it \
             read-write to refresh (a refresh with nothing to do works read-only)",
            feed.catalog,
            feed.table.dotted(),
            raw.rows
        )));
    }
    if installing(feed) {
        let diffed = super::diff::capture(db, feed, name, size_now)?;
        // Nothing written since the installation: the log is trusted from now on, except on a
        // database attached read-only, where the feed stays as it is (a refresh with nothing to
        // do writes nothing) until a capture in a writable session.
        if raw.rows == 0 && diffed.stats.rows == 0 && read_only()? {
            return Ok(Fresh { watermark: feed.watermark.clone(), ..diffed });
        }
        if raw.rows > 0 {
            db.execute(&sql::drop_unstamped(&log))?;
        }
        return Ok(Fresh { watermark: None, ..diffed });
    }
    let fresh = |delta, stats, took_pending, logged| Fresh {
        delta,
        stats,
        unstamped: false,
        watermark: None,
        row_count: feed.row_count,
        size_seen: size_now,
        net: None,
        took_pending,
        logged,
        facts: None,
    };
    if raw.rows == 0 {
        return Ok(fresh(None, raw, false, 0));
    }
    // The log holds nothing but the batch, which no other view reads: the delta is the log
    // itself, its rows used as they are (a signed multiset), deleted or stamped at the commit.
    if !(net && raw.deletes > 0) && seen.stamped == 0 && feed.pending_rows == 0 && feed.reader.consumers == 1 {
        return Ok(Fresh { unstamped: true, ..fresh(Some(log), raw, false, 0) });
    }
    if raw.deletes == 0 {
        let open = feed.open_batch();
        let stamped = db.scalar_int(&sql::stamp(&log, open.seq), &[])?;
        let armed = Feed { pending_rows: stamped, ..feed.clone() };
        let (delta, stats) = recorded::open_batch(db, &armed, name)?;
        let logged = stats.rows;
        return Ok(fresh(delta, stats, true, logged));
    }
    let delta = temp_name(name, 0);
    let stats = super::batch::netted_delta(db, &delta, &[sql::unstamped(&log, &feed.columns)], &feed.columns)?;
    db.execute(&sql::drop_unstamped(&log))?;
    Ok(fresh((stats.rows > 0).then_some(delta), stats, false, 0))
}

#[cfg(test)]
mod tests {
    use super::unsupported;

    fn supports(library: &str, storage: Option<&str>, kind: Option<&str>) -> bool {
        unsupported(library, storage, kind).is_none()
    }

    #[test]
    fn triggers_need_duckdb_2_and_a_storage_2_database() {
        assert!(supports("v2.0.1", None, Some("duckdb")));
        assert!(supports("v2.0.1", Some("v2.0.0+"), Some("duckdb")));
        assert!(!supports("v2.0.1", Some("v1.0.0+"), Some("duckdb")));
        assert!(!supports("v1.5.5", None, Some("duckdb")));
        assert!(!supports("v2.0.1", None, Some("ducklake")));
        assert_eq!(unsupported("v1.5.5", None, Some("duckdb")).unwrap(), "DuckDB v1.5.5 has no triggers");
        assert!(unsupported("v2.0.1", Some("v1.0.0+"), Some("duckdb")).unwrap().contains("STORAGE_VERSION 'v2.0.0'"));
    }
}
