//! Compiled views, kept per database instance: a refresh revalidates its view with one catalog
//! read (each table's identity and definition) instead of parsing, binding and describing the
//! query and re-reading foreign keys and declarations every time.

use std::collections::HashMap;

use super::view::{compile, find_view, signature_change, signature_matches, view_location, ViewRecord};
use crate::capture::feeds::FeedRows;
use crate::capture::SourceKind;
use crate::db::{read_all, tagged, typed_row, FromRow, Row, Sql};
use crate::declare::fk_facts;
use crate::declare::sources;
use crate::error::{Error, Result};
use crate::front::bind::FunctionInfo;
use crate::front::catalog::SqlCatalog;
use crate::front::macros::Macro;
use crate::front::strategy::Strategy;
use crate::ir::{ColumnDef, TableId, ViewQuery};
use crate::plan::fk_pruning::ForeignKey;
use crate::plan::mode::Mode;
use crate::render::OutputColumn;
use crate::render::{Qualified, Storage};
use crate::sql::capture::LAST_TIMES;
use crate::sql::capture::TABLE_SIZES;
use crate::sql::catalog::VIEW_ROWS;
use crate::sql::views::READ_ONLY;
use crate::sql::REFRESH_READS;
use crate::store::settings;

/// Everything a refresh needs to know about a view that does not change between refreshes.
#[derive(Clone, Debug)]
pub struct Compiled {
    pub view: ViewRecord,
    pub q: ViewQuery,
    pub outputs: Vec<OutputColumn>,
    /// Distinct base tables, and per table the columns the view reads (table order).
    pub tables: Vec<TableId>,
    pub read_columns: Vec<Vec<ColumnDef>>,
    /// Per leaf: its table's index in `tables`.
    pub leaf_table: Vec<usize>,
    /// Foreign-key facts between the tables (catalog constraints and valid RELY declarations).
    pub fks: Vec<ForeignKey>,
    /// The group keys that determine the others, which the merge may match on alone.
    pub merge_keys: Option<crate::plan::merge_keys::MergeKeys>,
    /// The leaves those keys determine that only give group attributes, which a refresh that
    /// did not change them leaves out of its terms (`merge_keys::GroupLookup`).
    pub group_lookup: Option<crate::plan::merge_keys::GroupLookup>,
    /// The change source each table declares.
    pub sources: Vec<SourceKind>,
    /// Why each table has its source.
    pub source_why: Vec<sources::SourceWhy>,
    /// The kind of database the view lives in.
    pub storage: Storage,
    /// How the view's stored sums are finalized (`render::sum_kinds`), for the rows it shows.
    pub sum_kinds: Vec<crate::render::SumKind>,
    /// Per table: (oid, definition) when compiled; any change recompiles.
    identity: Vec<(String, String)>,
    /// The user macros the query calls, as defined when compiled; any change recompiles.
    macros: Vec<Macro>,
    /// Measured on earlier refreshes (of this instance, else as the history recorded them).
    pub times: LastTimes,
}

/// What the latest refreshes of a view cost (ms), for auto mode.
#[derive(Clone, Copy, Debug, Default)]
pub struct LastTimes {
    pub incremental_ms: Option<f64>,
    /// Whether an incremental refresh of the view was measured (else `incremental_ms` is the
    /// time its change state took to start, which stands in for one).
    pub incremental_ran: bool,
    /// The capture's part of the last incremental refresh.
    pub incremental_capture_ms: Option<f64>,
    pub full_ms: Option<f64>,
}

typed_row! {
    /// A row of `capture/last_times.sql`.
    struct RecordedTimes {
        full_apply: Option<f64>,
        full_capture: Option<f64>,
        incremental_total: Option<f64>,
        incremental_capture: Option<f64>,
    }
}

/// Settings as read once per instance (changed only through openivm_set, which invalidates).
#[derive(Clone, Debug)]
pub struct Settings {
    pub fk_pruning: bool,
    pub refresh_mode: String,
    pub kept_plans: bool,
    pub default_source: String,
}

#[derive(Default)]
pub struct Cache {
    views: HashMap<String, Compiled>,
    /// Views known to be maintained by the full strategy (their queries are not compiled).
    fulls: std::collections::HashSet<String>,
    settings: Option<Settings>,
    /// What the current call's caller set with `SET` (replaced at every call).
    pub caller: settings::CallerSettings,
    defaults: Option<(String, String)>,
    storage: Option<Storage>,
    read_only: Option<bool>,
    /// The metadata was seen to have the newest layout (its last added column exists).
    metadata_current: bool,
    /// The comment of the view a refresh compiled, read with the catalog in its transaction
    /// (`compiled`) and taken by the refresh's check of the view (`view_comment`).
    comment: Option<(Qualified, Option<String>)>,
    /// Every cursor and feed, read with the catalog by `compiled` in the refresh's transaction
    /// and taken by its first look at the feeds (`take_feed_rows`).
    feed_rows: Option<FeedRows>,
    /// Built-in functions looked up for writes through openivm (DuckDB's list of functions is
    /// dear to read: about 100 ms here).
    functions: HashMap<String, FunctionInfo>,
    /// Feed id -> the time its last diff capture in a round took (ms).
    diff_captures: HashMap<i64, f64>,
    /// The catalog as a round of refreshes read it (None outside a round: every refresh reads
    /// the catalog of its own transaction).
    round: Option<CatalogSnapshot>,
    /// The database openivm was loaded into, where `openivm_declare_rely_fk` keeps declarations
    /// (None: not known; only this database's metadata is read).
    declared_in: Option<String>,
}

/// A table's or view's state: (oid, definition, appended-row count; 0 for a view).
type State = (String, String, i64);

/// A DuckDB view as the catalog has it: identity, oid, definition and comment.
struct ViewRow {
    id: TableId,
    oid: String,
    sql: Option<String>,
    comment: String,
}

impl ViewRow {
    /// Its state as a leaf's (a view has no appended-row count).
    fn state(&self) -> State {
        (self.oid.clone(), self.sql.clone().unwrap_or_default(), 0)
    }
}

/// The catalog rows a refresh revalidates against, kept for a round of refreshes
/// (`openivm_refresh_all`, one transaction): no table or view a maintained view reads changes in
/// it, since openivm writes only its own tables, so one read serves every view of the round
/// instead of two per view.
#[derive(Default)]
pub struct CatalogSnapshot {
    tables: Option<Vec<(TableId, State)>>,
    views: Option<Vec<ViewRow>>,
    macros: Option<Vec<Macro>>,
}

impl CatalogSnapshot {
    /// Reads `tables` together with every view's comment and every cursor and feed of the
    /// database (one statement, through a kept plan), and returns the comment of the view `at`
    /// (None: no such view) and the feeds.
    fn tables_comment_and_feeds(&mut self, db: &dyn Sql, at: &Qualified) -> Result<(Option<String>, FeedRows)> {
        let rows = REFRESH_READS.rows_kept(db)?;
        db.catalog_seen(&at.catalog, ddl_fingerprint(&rows, &at.catalog));
        let (mut tables, mut comment) = (Vec::new(), None);
        for r in &rows {
            match tagged(r)? {
                (0, r) => tables.push(table_row(&r)?),
                (1, r) => {
                    let (catalog, schema, name, text): (String, String, String, String) = FromRow::from_row(&r)?;
                    if (catalog.as_str(), schema.as_str(), name.as_str()) == (&at.catalog, &at.schema, &at.name) {
                        comment = Some(text);
                    }
                }
                _ => {}
            }
        }
        self.tables = Some(tables);
        Ok((comment, FeedRows::from_rows(&at.catalog, &rows)?))
    }

    fn tables(&mut self, db: &dyn Sql) -> Result<&[(TableId, State)]> {
        if self.tables.is_none() {
            self.tables = Some(table_rows(db)?);
        }
        Ok(self.tables.as_deref().unwrap_or_default())
    }

    fn views(&mut self, db: &dyn Sql) -> Result<&[ViewRow]> {
        if self.views.is_none() {
            let rows: Vec<(String, String, String, String, Option<String>, String)> =
                read_all(&VIEW_ROWS.rows(db, [])?)?;
            let views = rows
                .into_iter()
                .map(|(catalog, schema, name, oid, sql, comment)| ViewRow {
                    id: TableId { catalog, schema, name },
                    oid,
                    sql,
                    comment,
                })
                .collect();
            self.views = Some(views);
        }
        Ok(self.views.as_deref().unwrap_or_default())
    }
}

/// A fingerprint of the tables and views of `catalog` in the rows of `sql::REFRESH_READS`: their
/// names, oids, definitions and comments (not their sizes), whatever the order of the rows. It
/// changes with every `CREATE`, `DROP`, `ALTER` or `COMMENT ON` of a table or view there (not
/// with DDL of other objects: sequences, macros, indexes, types).
pub fn ddl_fingerprint(rows: &[Row], catalog: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    rows.iter()
        .filter(|r| matches!(r.first(), Some(Some(k)) if k == "0" || k == "1"))
        .filter(|r| r.get(1).and_then(|c| c.as_deref()) == Some(catalog))
        .map(|r| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            r[..r.len().min(6)].hash(&mut h);
            h.finish()
        })
        .fold(0u64, u64::wrapping_add)
}

/// Every table's state, from one read of `duckdb_tables()`.
fn table_rows(db: &dyn Sql) -> Result<Vec<(TableId, State)>> {
    TABLE_SIZES.rows(db, [])?.iter().map(table_row).collect()
}

/// A table's identity and state from the columns of `table_sizes.sql`.
fn table_row(r: &Row) -> Result<(TableId, State)> {
    let (catalog, schema, name, oid, sql, size): (String, String, String, String, String, i64) = FromRow::from_row(r)?;
    Ok((TableId { catalog, schema, name }, (oid, sql, size)))
}

/// The state of a view's tables now: (oid, definition, appended-row count) per table.
pub fn table_states(db: &dyn Sql, tables: &[TableId]) -> Result<Vec<State>> {
    states_in(db, tables, &mut CatalogSnapshot::default())
}

/// `table_states`, read from `snapshot` (what it has not read yet, it reads).
fn states_in(db: &dyn Sql, tables: &[TableId], snapshot: &mut CatalogSnapshot) -> Result<Vec<State>> {
    let mut all: Vec<(TableId, State)> =
        snapshot.tables(db)?.iter().filter(|(id, _)| tables.contains(id)).cloned().collect();
    // Maintained views read as leaves are not tables: their identity is the view's (read only
    // when some relation was not found among the tables).
    if all.len() < tables.len() {
        all.extend(snapshot.views(db)?.iter().filter(|v| tables.contains(&v.id)).map(|v| (v.id.clone(), v.state())));
    }
    tables
        .iter()
        .map(|t| {
            all.iter().find(|(id, _)| id == t).map(|(_, state)| state.clone()).ok_or_else(|| Error::Stale {
                view: String::new(),
                detail: format!("its table {}.{}.{} no longer exists", t.catalog, t.schema, t.name),
            })
        })
        .collect()
}

/// Whether every DuckDB view the query expanded still has the definition it was compiled from
/// (one read of `duckdb_views()`, only for views that read DuckDB views).
fn views_unchanged(db: &dyn Sql, q: &ViewQuery, snapshot: &mut CatalogSnapshot) -> Result<bool> {
    if q.source_views.is_empty() {
        return Ok(true);
    }
    let now = snapshot.views(db)?;
    Ok(q.source_views.iter().all(|v| now.iter().any(|r| r.id == v.view && r.sql.as_deref() == Some(v.sql.as_str()))))
}

/// Whether every user macro the query calls still has the definition it was compiled with (one
/// read of `duckdb_functions()`, only for views that call user macros).
fn macros_unchanged(db: &dyn Sql, called: &[Macro], snapshot: &mut CatalogSnapshot) -> Result<bool> {
    if called.is_empty() {
        return Ok(true);
    }
    if snapshot.macros.is_none() {
        snapshot.macros = Some(crate::front::macros::all(db)?);
    }
    let now = snapshot.macros.as_deref().unwrap_or_default();
    Ok(called.iter().all(|m| now.contains(m)))
}

/// Whether the view's stored result still exists (a user may drop it): else the view is
/// compiled again, which says so.
fn stored_exists(db: &dyn Sql, data: &Qualified, snapshot: &mut CatalogSnapshot) -> Result<bool> {
    let id = data.table_id();
    Ok(snapshot.tables(db)?.iter().any(|(t, _)| t == &id))
}

impl Cache {
    /// Forgets every compiled view and the settings (after a declaration, a revocation or a
    /// setting changed).
    pub fn invalidate(&mut self) {
        self.views.clear();
        self.fulls.clear();
        self.settings = None;
        self.forget_comment();
    }

    /// Starts a round of refreshes in one transaction: the catalog is read once for all of them.
    pub fn begin_round(&mut self) {
        self.round = Some(CatalogSnapshot::default());
    }

    pub fn end_round(&mut self) {
        self.round = None;
    }

    /// Forgets the view comment and the feeds `compiled` read (the transaction that read them
    /// ended): a later call must read them again, not check another incarnation of the view
    /// against them.
    pub fn forget_comment(&mut self) {
        self.comment = None;
        self.feed_rows = None;
    }

    /// The comment on the DuckDB view `at` (None: there is no such view), from the round's
    /// catalog when in one.
    pub fn view_comment(&mut self, db: &dyn Sql, at: &Qualified) -> Result<Option<String>> {
        let Some(snapshot) = self.round.as_mut() else {
            return match self.comment.take() {
                Some((seen, comment)) if &seen == at => Ok(comment),
                _ => super::view::view_comment(db, at),
            };
        };
        let id = TableId { catalog: at.catalog.clone(), schema: at.schema.clone(), name: at.name.clone() };
        Ok(snapshot.views(db)?.iter().find(|v| v.id == id).map(|v| v.comment.clone()))
    }

    /// The cursors and feeds `compiled` read with the catalog, when it did (a compiled view,
    /// outside a round); taken once, by the statement that follows in the same transaction.
    pub fn take_feed_rows(&mut self) -> Option<FeedRows> {
        self.feed_rows.take()
    }

    /// The built-in functions known so far, by lower-case name.
    pub fn functions(&mut self) -> &mut HashMap<String, FunctionInfo> {
        &mut self.functions
    }

    pub fn forget(&mut self, at: &Qualified) {
        self.views.remove(&key_of(at));
        self.fulls.remove(&key_of(at));
    }

    /// Whether `name` resolves to a view this instance has compiled, answered without a query
    /// (a bind-time check: a view dropped since is still found by the refresh's revalidation,
    /// and `openivm_drop` forgets it).
    pub fn knows(&mut self, db: &dyn Sql, name: &str) -> Result<bool> {
        let key = self.key(db, name)?;
        Ok(self.views.contains_key(&key) || self.fulls.contains(&key))
    }

    /// How the view `name` is maintained: known from the cache, else read from its metadata row.
    pub fn strategy(&mut self, db: &dyn Sql, name: &str) -> Result<Strategy> {
        let key = self.key(db, name)?;
        if let Some(c) = self.views.get(&key) {
            return Ok(c.view.strategy);
        }
        if self.fulls.contains(&key) {
            return Ok(Strategy::Full);
        }
        let strategy = find_view(db, &self.defaults(db)?, name)?.strategy;
        if strategy == Strategy::Full {
            self.fulls.insert(key);
        }
        Ok(strategy)
    }

    /// Whether the view `name` is compiled here and reads no maintained view: its refresh then
    /// needs no upstream order, and so no catalog read besides its own. (The cache is the
    /// instance's, and openivm_create / openivm_drop replace its entries.)
    pub fn reads_no_maintained_view(&mut self, db: &dyn Sql, name: &str) -> Result<bool> {
        let key = self.key(db, name)?;
        Ok(self.views.get(&key).is_some_and(|c| c.q.upstream.is_empty()))
    }

    /// The cache key of the view `name` as written (resolved against the default database).
    fn key(&mut self, db: &dyn Sql, name: &str) -> Result<String> {
        Ok(key_of(&view_location(&self.defaults(db)?, name)?))
    }

    /// Notes the database openivm was loaded into (the session's home), whose declarations
    /// apply to this database's views too.
    pub fn set_declared_in(&mut self, home: &str) {
        if self.declared_in.as_deref() != Some(home) {
            self.declared_in = Some(home.to_string());
            self.views.clear();
        }
    }

    pub fn defaults(&mut self, db: &dyn Sql) -> Result<(String, String)> {
        if let Some(d) = &self.defaults {
            return Ok(d.clone());
        }
        let d = SqlCatalog::new(db).defaults()?;
        self.defaults = Some(d.clone());
        Ok(d)
    }

    /// The kind of the database this cache is for (the connection's default in its calls).
    pub fn storage(&mut self, db: &dyn Sql) -> Result<Storage> {
        if let Some(s) = self.storage {
            return Ok(s);
        }
        let s = crate::front::catalog::storage_of(db, &self.defaults(db)?.0)?;
        self.storage = Some(s);
        Ok(s)
    }

    /// The settings of the current call: the caller's `SET` over the database's stored ones.
    pub fn settings(&mut self, db: &dyn Sql) -> Result<Settings> {
        let stored = match &self.settings {
            Some(s) => s.clone(),
            None => {
                let s = Settings {
                    fk_pruning: settings::fk_pruning(db)?,
                    refresh_mode: settings::refresh_mode(db)?,
                    kept_plans: settings::kept_plans(db)?,
                    default_source: settings::default_source(db)?,
                };
                self.settings = Some(s.clone());
                s
            }
        };
        let caller = &self.caller;
        Ok(Settings {
            fk_pruning: caller.fk_pruning.unwrap_or(stored.fk_pruning),
            refresh_mode: caller.refresh_mode.clone().unwrap_or(stored.refresh_mode),
            kept_plans: caller.kept_plans.unwrap_or(stored.kept_plans),
            default_source: caller.default_source.clone().unwrap_or(stored.default_source),
        })
    }

    /// The compiled view `name`, revalidated against the catalog, and its tables'
    /// appended-row counts now.
    pub fn compiled(&mut self, db: &dyn Sql, name: &str) -> Result<(String, Compiled, Vec<i64>)> {
        let defaults = self.defaults(db)?;
        let at = view_location(&defaults, name)?;
        let key = key_of(&at);
        let mut own = CatalogSnapshot::default();
        self.comment = None;
        self.feed_rows = None;
        if let Some(c) = self.views.get(&key) {
            // The refresh checks its view's comment and reads the feeds later in this
            // transaction: read them now, with the tables (a round reads every view's comment
            // with its own snapshot, and the feeds once).
            let (comment, feed_rows) = match self.round {
                None => {
                    let (comment, rows) = own.tables_comment_and_feeds(db, &c.view.at)?;
                    (Some((c.view.at.clone(), comment)), Some(rows))
                }
                Some(_) => (None, None),
            };
            let snapshot = self.round.as_mut().unwrap_or(&mut own);
            let now = states_in(db, &c.tables, snapshot).map_err(|e| restale(e, name))?;
            if now.iter().zip(&c.identity).all(|(n, (oid, sql))| &n.0 == oid && &n.1 == sql)
                && views_unchanged(db, &c.q, snapshot)?
                && macros_unchanged(db, &c.macros, snapshot)?
                && stored_exists(db, &c.view.data, snapshot)?
            {
                let c = c.clone();
                self.comment = comment;
                self.feed_rows = feed_rows;
                return Ok((key, c, now.iter().map(|n| n.2).collect()));
            }
        }
        let view = find_view(db, &defaults, name)?;
        self.upgrade_metadata(db, &defaults.0)?;
        if view.strategy == Strategy::Full {
            return Err(Error::InvalidArgument(format!(
                "'{name}' is maintained by recomputing (strategy full: no incremental rule for {}); it has no \
                 incremental plan",
                view.strategy_reason.as_deref().unwrap_or("its query")
            )));
        }
        if view.earlier_layout {
            return Err(Error::Stale {
                view: name.to_string(),
                detail: "its metadata was written by an earlier version of openivm, which named the database by its \
                         file name and kept the stored result beside the view"
                    .into(),
            });
        }
        // A name that no longer resolves is a schema change; DuckDB's own errors pass through.
        let (q, outputs, macros) = compile(db, &view.query).map_err(|e| {
            if e.is_schema_change() {
                Error::Stale { view: name.to_string(), detail: e.to_string() }
            } else {
                e
            }
        })?;
        if !signature_matches(&q, &macros, &defaults.0, &view.signature) {
            return Err(Error::Stale {
                view: name.to_string(),
                detail: signature_change(&q, &macros, &defaults.0, &view.signature),
            });
        }
        let stored_columns = check_stored_layout(db, &q, &view, name)?;
        let sum_kinds = crate::render::sum_kinds(&q, &stored_columns);
        let tables = q.tables();
        let read_columns: Vec<Vec<ColumnDef>> = tables.iter().map(|t| q.table_columns(t)).collect();
        let all_columns: Vec<Vec<ColumnDef>> = tables
            .iter()
            .map(|t| q.leaves.iter().find(|l| &l.table == t).map(|l| l.columns.clone()).unwrap_or_default())
            .collect();
        let leaf_table = q
            .leaves
            .iter()
            .map(|l| tables.iter().position(|t| t == &l.table))
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| Error::Internal("a leaf's table is not among the view's tables".into()))?;
        let metadata: Vec<&str> = std::iter::once(defaults.0.as_str()).chain(self.declared_in.as_deref()).collect();
        let fks = fk_facts::foreign_keys(db, &metadata, &tables)?;
        let default_source = self.settings(db)?.default_source;
        let mut sourced = sources::sources(db, &defaults.0, &tables, &all_columns, &default_source)?;
        super::view::chain_sources(db, &defaults.0, &q, &tables, &mut sourced)?;
        let (sources, source_why) = sourced.into_iter().unzip();
        let now = states_in(db, &tables, self.round.as_mut().unwrap_or(&mut own)).map_err(|e| restale(e, name))?;
        let times = match self.views.get(&key) {
            Some(c) => c.times,
            None => last_times(db, &view.at)?,
        };
        let merge_keys = crate::plan::merge_keys::merge_keys(&q, &fks);
        let group_lookup = merge_keys.as_ref().and_then(|m| crate::plan::merge_keys::group_lookup(&q, m));
        let c = Compiled {
            view,
            merge_keys,
            group_lookup,
            q,
            outputs,
            tables,
            read_columns,
            leaf_table,
            fks,
            sources,
            source_why,
            storage: self.storage(db)?,
            sum_kinds,
            identity: now.iter().map(|n| (n.0.clone(), n.1.clone())).collect(),
            macros,
            times,
        };
        self.views.insert(key.clone(), c.clone());
        Ok((key, c, now.iter().map(|n| n.2).collect()))
    }

    /// Remembers how long a refresh of the view took (and its capture), for auto mode.
    pub fn measured(&mut self, key: &str, mode: Mode, ms: f64, capture_ms: f64) {
        if let Some(c) = self.views.get_mut(key) {
            match mode {
                Mode::Incremental | Mode::GroupRecompute => {
                    c.times.incremental_ms = Some(ms);
                    c.times.incremental_ran = true;
                    c.times.incremental_capture_ms = Some(capture_ms);
                }
                Mode::Full => c.times.full_ms = Some(ms),
            }
        }
    }

    /// Forgets the view's last incremental refresh once it tracks its tables again: that refresh
    /// stopped the tracking, and the next one is measured before auto decides again.
    pub fn resumed(&mut self, key: &str) {
        if let Some(c) = self.views.get_mut(key) {
            c.times.incremental_ms = None;
            c.times.incremental_capture_ms = None;
        }
    }

    /// How long the last capture of a diff feed took in a round (ms), for auto mode.
    pub fn diff_capture(&self, feed: i64) -> Option<f64> {
        self.diff_captures.get(&feed).copied()
    }

    pub fn diff_captured(&mut self, feed: i64, ms: f64) {
        self.diff_captures.insert(feed, ms);
    }

    /// Brings metadata written by an earlier version to the newest layout (the columns added
    /// since, by `sql/metadata.sql`'s `ADD COLUMN IF NOT EXISTS`, and the writes recorded in
    /// tables of their own moved into the feeds' logs) before a view of it is first compiled or
    /// a write through openivm records into it in this instance, unless the database is
    /// read-only. Two catalog reads per instance once the layout is current; the upgrade runs in
    /// the caller's transaction, and is checked again at the next call until a check finds
    /// nothing left to do (a transaction that rolls back undoes it).
    pub fn upgrade_metadata(&mut self, db: &dyn Sql, catalog: &str) -> Result<()> {
        if self.metadata_current {
            return Ok(());
        }
        // The columns added to each table after its first layout (by `sql/metadata.sql`'s ADD
        // COLUMN IF NOT EXISTS), all of them, and the tables added later (`triggers`): one
        // catalog read per table.
        let has = |schema: &str, table: &str, columns: &[&str]| -> Result<bool> {
            let t = TableId { catalog: catalog.to_string(), schema: schema.into(), name: table.into() };
            let found = SqlCatalog::new(db).columns(&t)?;
            Ok(columns.iter().all(|&want| found.iter().any(|c| c.name == want)))
        };
        let mut current = has("openivm", "cursors", &["watermark"])?
            && has("openivm", "feeds", &["pending_rows", "batch_rows", "batch_deletes", "batch_facts"])?
            && has("openivm", "triggers", &["trigger_sql"])?
            && has("main", "openivm_refresh_history", &["setup_ms", "sources"])?
            && has("main", "openivm_views", &["avg_finish"])?;
        if !self.read_only(db, catalog)? {
            if !current {
                crate::store::metadata::ensure(db)?;
            }
            // Checked again at the next call: the transaction may roll back.
            current &= !crate::capture::feeds::upgrade_legacy_pending(db, catalog)?;
        }
        self.metadata_current = current;
        Ok(())
    }

    /// `upgrade_metadata` before a write through openivm, where the database has metadata.
    pub fn upgrade_before_write(&mut self, db: &dyn Sql) -> Result<()> {
        if self.metadata_current || !crate::front::catalog::main_table_exists(db, "openivm_views")? {
            return Ok(());
        }
        let (home, _) = self.defaults(db)?;
        self.upgrade_metadata(db, &home)
    }

    /// Whether the database holding the views is attached read-only (fixed for an instance).
    pub fn read_only(&mut self, db: &dyn Sql, catalog: &str) -> Result<bool> {
        if let Some(r) = self.read_only {
            return Ok(r);
        }
        let r = READ_ONLY.scalar(db, [catalog])?.as_deref() == Some("true");
        self.read_only = Some(r);
        Ok(r)
    }
}

/// (last incremental, last recompute) times of a view as its history records them, so that a
/// new instance (a reopened file) knows what an earlier one measured. The initial fill counts
/// as a recompute; before any incremental refresh, the capture of the latest recompute (for a
/// diff source: building or diffing its snapshot, which every incremental refresh pays too)
/// stands in for one (then the second value, whether an incremental refresh ran, is false).
fn last_times(db: &dyn Sql, at: &Qualified) -> Result<LastTimes> {
    let rows: Vec<RecordedTimes> = read_all(&LAST_TIMES.rows(db, [&at.schema, &at.name, &at.schema, &at.name])?)?;
    let Some(r) = rows.into_iter().next() else { return Ok(LastTimes::default()) };
    let full_capture = r.full_capture.filter(|&c| c > 0.0);
    // Before any incremental refresh, the start of the change state stands in for one: all of
    // it capture.
    let (incremental_ms, incremental_ran, incremental_capture_ms) = match r.incremental_total {
        Some(total) => (Some(total), true, r.incremental_capture),
        None => (full_capture, false, full_capture),
    };
    Ok(LastTimes { incremental_ms, incremental_ran, incremental_capture_ms, full_ms: r.full_apply })
}

/// A stored result made by an older openivm (other hidden columns) cannot be maintained by this
/// one: say so instead of failing on a column mismatch.
fn check_stored_layout(db: &dyn Sql, q: &ViewQuery, view: &ViewRecord, name: &str) -> Result<Vec<ColumnDef>> {
    let described =
        db.query(&crate::render::describe(&crate::render::aggregate_weighted(q, &crate::render::full_select(q))))?;
    let expected: Vec<String> = read_all::<(String,)>(&described)?.into_iter().map(|(name,)| name).collect();
    let columns = SqlCatalog::new(db).columns(&view.data.table_id())?;
    if columns.is_empty() {
        return Err(Error::Stale {
            view: name.to_string(),
            detail: format!(
                "its stored result {}.{} is missing: it was dropped behind openivm's back",
                view.data.schema, view.data.name
            ),
        });
    }
    let stored: Vec<&String> = columns.iter().map(|c| &c.name).collect();
    if stored != expected.iter().collect::<Vec<_>>() {
        return Err(Error::Stale {
            view: name.to_string(),
            detail: "its stored result was made by another version of openivm (different hidden columns)".into(),
        });
    }
    Ok(columns)
}

/// The cache key of a view: its schema and name, case-folded as DuckDB resolves them.
fn key_of(at: &Qualified) -> String {
    format!("{}.{}", at.schema.to_lowercase(), at.name.to_lowercase())
}

fn restale(e: Error, name: &str) -> Error {
    match e {
        Error::Stale { detail, .. } => Error::Stale { view: name.to_string(), detail },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cells: &[&str]) -> Row {
        cells.iter().map(|c| Some(c.to_string())).collect()
    }

    #[test]
    fn the_ddl_fingerprint_sees_definitions_not_sizes_nor_other_databases() {
        let table = row(&["0", "db", "main", "t", "42", "CREATE TABLE t(a INTEGER);", "100"]);
        let view = row(&["1", "db", "main", "v", "openivm marker", "43"]);
        let other = row(&["0", "rc", "main", "r", "50", "CREATE TABLE r(a INTEGER);", "1"]);
        let feed = row(&["3", "1", "db", "main", "t"]);
        let base = ddl_fingerprint(&[table.clone(), view.clone(), other.clone(), feed.clone()], "db");
        // Order, sizes, other databases and other kinds of rows change nothing.
        let mut grown = table.clone();
        grown[6] = Some("200".into());
        assert_eq!(ddl_fingerprint(&[view.clone(), grown, feed], "db"), base);
        // A table altered, a view replaced, a comment changed, a table added: all change it.
        let mut altered = table.clone();
        altered[5] = Some("CREATE TABLE t(a INTEGER, b INTEGER);".into());
        assert_ne!(ddl_fingerprint(&[altered, view.clone()], "db"), base);
        let mut replaced = view.clone();
        replaced[5] = Some("44".into());
        assert_ne!(ddl_fingerprint(&[table.clone(), replaced], "db"), base);
        let mut commented = view.clone();
        commented[4] = Some("".into());
        assert_ne!(ddl_fingerprint(&[table.clone(), commented], "db"), base);
        let added = row(&["0", "db", "main", "u", "45", "CREATE TABLE u(a INTEGER);", "0"]);
        assert_ne!(ddl_fingerprint(&[table, view, added], "db"), base);
    }
}
