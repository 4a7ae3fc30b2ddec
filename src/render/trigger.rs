//! SQL of the trigger source (DuckDB 2.0): the statement triggers that append every write's
//! changed rows to a feed's change log, unstamped (`openivm_seq` NULL), the stamp a capture puts
//! on the rows its snapshot sees, and the registry that lets a refresh check the triggers are
//! still the ones openivm installed.

use super::capture::SEQ;
use super::{ident, list, literal, table, Qualified, MULTIPLICITY};
use crate::ir::{ColumnDef, TableId};

/// The write events a feed's triggers capture, and the transition tables each one offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    Insert,
    Delete,
    Update,
}

impl Event {
    pub const ALL: [Event; 3] = [Event::Insert, Event::Delete, Event::Update];

    fn keyword(self) -> &'static str {
        match self {
            Event::Insert => "INSERT",
            Event::Delete => "DELETE",
            Event::Update => "UPDATE",
        }
    }

    /// The name of feed `feed`'s trigger for this event (a trigger lives in its table's schema).
    pub fn trigger_name(self, feed: i64) -> String {
        format!("{TRIGGER_PREFIX}{feed}_{}", self.keyword().to_ascii_lowercase())
    }
}

/// What every trigger openivm installs is named with first.
const TRIGGER_PREFIX: &str = "openivm_feed_";

const NEW: &str = "openivm_new";
const OLD: &str = "openivm_old";

/// The columns of a log row a trigger writes, each followed by a comma (none for a view that
/// reads no column, `count(*)`).
fn leading(cols: &[ColumnDef]) -> String {
    list(cols, "", |c| format!("{}, ", ident(&c.name)))
}

/// The rows of a transition table as log rows of multiplicity `sign` (the batch left NULL).
fn signed_rows(cols: &[ColumnDef], from: &str, sign: i8) -> String {
    format!("SELECT {}{sign} FROM {from}", leading(cols))
}

/// `CREATE OR REPLACE TRIGGER` of feed `feed`'s trigger for `event` on `base`, appending the
/// columns `cols` of each changed row to `log` with its multiplicity. Explicit column lists: a
/// column added to the table later must not change what the body inserts. `log` is named with
/// its catalog, so that a writer whose default database is another one (an `ATTACH` under the
/// database's own name) reaches it: DuckDB binds a trigger's body in the writer's catalog.
pub fn create(event: Event, feed: i64, base: &TableId, log: &Qualified, cols: &[ColumnDef]) -> String {
    let (referencing, rows) = match event {
        Event::Insert => (format!("NEW TABLE AS {NEW}"), signed_rows(cols, NEW, 1)),
        Event::Delete => (format!("OLD TABLE AS {OLD}"), signed_rows(cols, OLD, -1)),
        Event::Update => (
            format!("OLD TABLE AS {OLD} NEW TABLE AS {NEW}"),
            format!("{} UNION ALL {}", signed_rows(cols, OLD, -1), signed_rows(cols, NEW, 1)),
        ),
    };
    format!(
        "CREATE OR REPLACE TRIGGER {} AFTER {} ON {} REFERENCING {referencing} FOR EACH STATEMENT \
         INSERT INTO {} ({}{}) {rows}",
        ident(&event.trigger_name(feed)),
        event.keyword(),
        table(base),
        log.sql(),
        leading(cols),
        ident(MULTIPLICITY),
    )
}

/// The names of feed `feed`'s triggers that are on `base` (none once the table is gone).
pub fn present(feed: i64, base: &TableId) -> String {
    let names = list(&Event::ALL, ", ", |e| literal(&e.trigger_name(feed)));
    format!("SELECT trigger_name FROM duckdb_triggers() WHERE {} AND trigger_name IN ({names})", on_table(base))
}

pub fn drop(name: &str, base: &TableId) -> String {
    format!("DROP TRIGGER IF EXISTS {} ON {}", ident(name), table(base))
}

/// Sets the table's comment to what it is: in the transaction that installs the triggers, this
/// makes the commit of a writer that wrote the table before the triggers existed (and so fired
/// none) fail instead of losing its rows.
pub fn fence(base: &TableId, comment: Option<&str>) -> String {
    format!("COMMENT ON TABLE {} IS {}", table(base), comment.map_or("NULL".to_string(), literal))
}

/// The table's comment.
pub fn table_comment(base: &TableId) -> String {
    format!(
        "SELECT comment FROM duckdb_tables() WHERE database_name = {} AND schema_name = {} AND table_name = {}",
        literal(&base.catalog),
        literal(&base.schema),
        literal(&base.name)
    )
}

/// Makes the log's unstamped rows (writes committed before this transaction's snapshot) batch
/// `seq`; its result is their number. Rows of writers that commit later stay unstamped.
pub fn stamp(log: &Qualified, seq: i64) -> String {
    format!("UPDATE {} SET {SEQ} = {seq} WHERE {SEQ} IS NULL", log.sql())
}

/// The log's unstamped rows this transaction sees, as delta rows on `cols`.
pub fn unstamped(log: &Qualified, cols: &[ColumnDef]) -> String {
    format!("SELECT {}{} FROM {} WHERE {SEQ} IS NULL", leading(cols), ident(MULTIPLICITY), log.sql())
}

/// A trigger feed as `inspect` reads it: its id, its log, and the database holding the metadata.
pub struct Inspected<'a> {
    pub feed: i64,
    pub log: &'a Qualified,
    pub catalog: &'a str,
}

/// What a capture needs to know of several trigger feeds, in one statement, as rows of (kind,
/// feed, a, b, c, database, schema, table): `stats` rows (a feed, its log's unstamped rows, how
/// many of them delete, and its other rows: logged batches), `recorded` rows (a feed, a trigger
/// name and text its registry holds), and `present` rows (the name, text and table of each
/// openivm trigger DuckDB has).
/// `duckdb_triggers()` is read once, whatever the number of feeds.
pub fn inspect(feeds: &[Inspected]) -> String {
    let stats = list(feeds, " UNION ALL ", |f| {
        format!(
            "SELECT 'stats', {id}::BIGINT, (count(*) FILTER (WHERE {SEQ} IS NULL))::VARCHAR, (count(*) FILTER (WHERE \
             {SEQ} IS NULL AND {m} < 0))::VARCHAR, (count(*) FILTER (WHERE {SEQ} IS NOT NULL))::VARCHAR, NULL, NULL, \
             NULL FROM {log}",
            id = f.feed,
            m = ident(MULTIPLICITY),
            log = f.log.sql()
        )
    });
    let mut catalogs: Vec<&str> = feeds.iter().map(|f| f.catalog).collect();
    catalogs.sort_unstable();
    catalogs.dedup();
    let recorded = list(&catalogs, " UNION ALL ", |c| {
        let ids = list(feeds.iter().filter(|f| f.catalog == *c), ", ", |f| f.feed.to_string());
        format!(
            "SELECT 'recorded', feed_id, trigger_name, trigger_sql, NULL, NULL, NULL, NULL FROM {} WHERE feed_id IN ({ids})",
            registry(c).sql()
        )
    });
    format!(
        "{stats} UNION ALL {recorded} UNION ALL SELECT 'present', NULL, trigger_name, sql, NULL, database_name, schema_name, \
         table_name FROM duckdb_triggers() WHERE starts_with(trigger_name, {})",
        literal(TRIGGER_PREFIX)
    )
}

/// Deletes the log's unstamped rows this transaction sees: writes a diff of the table read in
/// the same transaction holds already.
pub fn drop_unstamped(log: &Qualified) -> String {
    format!("DELETE FROM {} WHERE {SEQ} IS NULL", log.sql())
}

/// The registry of installed triggers, in the database holding the metadata (`openivm.triggers`,
/// made by `sql/metadata.sql`): each trigger's name and the text DuckDB keeps for it
/// (`duckdb_triggers().sql`), read back at installation.
pub fn registry(catalog: &str) -> Qualified {
    Qualified { catalog: catalog.to_string(), schema: "openivm".into(), name: "triggers".into() }
}

pub fn forget(catalog: &str, feed: i64) -> String {
    format!("DELETE FROM {} WHERE feed_id = {feed}", registry(catalog).sql())
}

/// Records feed `feed`'s triggers on `base` as DuckDB keeps them.
pub fn remember(catalog: &str, feed: i64, base: &TableId) -> String {
    let names = list(&Event::ALL, ", ", |e| literal(&e.trigger_name(feed)));
    format!(
        "INSERT INTO {} SELECT {feed}, trigger_name, sql FROM duckdb_triggers() WHERE {} AND trigger_name IN ({names})",
        registry(catalog).sql(),
        on_table(base)
    )
}

fn on_table(base: &TableId) -> String {
    format!(
        "database_name = {} AND schema_name = {} AND table_name = {}",
        literal(&base.catalog),
        literal(&base.schema),
        literal(&base.name)
    )
}

/// What decides whether a database can carry triggers: DuckDB's version, and the database's
/// storage version and type.
pub fn support(catalog: &str) -> String {
    format!(
        "SELECT (SELECT library_version FROM pragma_version()), \
         (SELECT tags['storage_version'] FROM duckdb_databases() WHERE database_name = {c}), \
         (SELECT type FROM duckdb_databases() WHERE database_name = {c})",
        c = literal(catalog)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(n: &str) -> ColumnDef {
        ColumnDef { name: n.into(), ty: "INTEGER".into(), collation: None }
    }

    #[test]
    fn an_update_trigger_logs_old_rows_negative_and_new_rows_positive() {
        let base = TableId { catalog: "db".into(), schema: "main".into(), name: "t".into() };
        let log = Qualified { catalog: "db".into(), schema: "openivm".into(), name: "log_4".into() };
        let s = create(Event::Update, 4, &base, &log, &[col("a"), col("b")]);
        assert_eq!(
            s,
            "CREATE OR REPLACE TRIGGER \"openivm_feed_4_update\" AFTER UPDATE ON \"db\".\"main\".\"t\" REFERENCING \
             OLD TABLE AS openivm_old NEW TABLE AS openivm_new FOR EACH STATEMENT INSERT INTO \"db\".\"openivm\".\"log_4\" \
             (\"a\", \"b\", \"openivm_multiplicity\") SELECT \"a\", \"b\", -1 FROM openivm_old UNION ALL SELECT \"a\", \"b\", 1 \
             FROM openivm_new"
        );
    }

    #[test]
    fn a_trigger_of_a_feed_without_columns_logs_multiplicities() {
        let base = TableId { catalog: "db".into(), schema: "main".into(), name: "t".into() };
        let log = Qualified { catalog: "db".into(), schema: "openivm".into(), name: "log_4".into() };
        assert!(create(Event::Delete, 4, &base, &log, &[]).ends_with(
            "INSERT INTO \"db\".\"openivm\".\"log_4\" (\"openivm_multiplicity\") SELECT -1 FROM openivm_old"
        ));
    }

    #[test]
    fn a_stamp_takes_only_unstamped_rows() {
        let log = Qualified { catalog: "db".into(), schema: "openivm".into(), name: "log_4".into() };
        assert_eq!(stamp(&log, 7), "UPDATE \"db\".\"openivm\".\"log_4\" SET openivm_seq = 7 WHERE openivm_seq IS NULL");
    }
}
