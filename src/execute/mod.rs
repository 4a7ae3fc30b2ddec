//! Stage 6: runs the data path against the database on the extension's connection: create
//! (parse, bind, fill, attach to the tables' change feeds), refresh (capture, plan, apply or
//! recompute, advance the cursors), explain (the same plan, not applied), drop.

pub mod cache;
pub mod compile_only;
pub mod database;
pub mod full;
pub mod lookup;
pub mod nterm;
pub mod refresh;
pub mod report;
pub mod verify;
pub mod widen;
pub mod write;

use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;

use crate::ast::TableName;
use crate::capture::{self, feeds};
use crate::db::{in_transaction, Cells, Sql};
use crate::error::{Error, Result, SqlErrorKind};
use crate::front::bind::bind;
use crate::front::catalog::{table_name, SqlCatalog};
use crate::front::macros::{self, Macro};
use crate::front::parse::parse_select;
use crate::front::strategy::{self, Strategy};
use crate::ir::{ColumnDef, SourceView, TableId, ViewQuery};
use crate::plan::mode;
use crate::render::{self, OutputColumn, Qualified};
use crate::store::home;
use crate::store::metadata;
use crate::store::settings;

pub use cache::Cache;
pub use database::Session;

use crate::sql::capture::HISTORY_INSERT;
use crate::sql::capture::RELATION_READERS;
use crate::sql::catalog::PARSE_TREE;
use crate::sql::catalog::SCHEMA_EXISTS;
use crate::sql::facts::NEW_TOKEN;
use crate::sql::views::ALL as ALL_VIEWS;
use crate::sql::views::DELETE as VIEW_DELETE;
use crate::sql::views::FIND as VIEW_FIND;
use crate::sql::views::INSERT as VIEW_INSERT;
use crate::sql::views::VIEW_COMMENT;

fn metadata_exists(db: &dyn Sql) -> Result<bool> {
    crate::front::catalog::main_table_exists(db, "openivm_views")
}

/// Where a view of this name lives: the default database, the given or default schema.
fn view_location(defaults: &(String, String), arg: &str) -> Result<Qualified> {
    let name = table_name(arg)?;
    let (default_catalog, default_schema) = defaults;
    if let Some(c) = &name.catalog {
        if !c.eq_ignore_ascii_case(default_catalog) {
            return Err(Error::InvalidArgument(format!(
                "'{arg}' names another database than the one this call works in ('{default_catalog}')"
            )));
        }
    }
    Ok(Qualified {
        catalog: default_catalog.clone(),
        schema: name.schema.unwrap_or_else(|| default_schema.clone()),
        name: name.name,
    })
}

/// A maintained view as its metadata row records it.
#[derive(Clone, Debug)]
pub struct ViewRecord {
    pub at: Qualified,
    pub query: String,
    /// The stored result: in the internal schema (in the view's schema for earlier layouts).
    pub data: Qualified,
    /// Written by an earlier layout of the metadata (it named the database and kept the stored
    /// result beside the view): such a view can only be dropped.
    pub earlier_layout: bool,
    pub signature: String,
    /// The comment openivm put on the view it created (None for views made before it did).
    pub marker: Option<String>,
    pub strategy: Strategy,
    /// The construct without an incremental rule (None for incremental views).
    pub strategy_reason: Option<String>,
}

/// What stands under a maintained view's name now.
#[derive(Debug, PartialEq, Eq)]
pub enum Standing {
    Ours,
    Replaced,
    Gone,
}

/// The comment on the DuckDB view `at` (None: there is no such view).
pub fn view_comment(db: &dyn Sql, at: &Qualified) -> Result<Option<String>> {
    let rows = VIEW_COMMENT.rows(db, [&at.catalog, &at.schema, &at.name])?;
    Ok(rows.first().and_then(|r| r.first().cloned().flatten()))
}

/// Whether the DuckDB view under the name is still the one openivm created.
pub fn standing(db: &dyn Sql, v: &ViewRecord) -> Result<Standing> {
    Ok(standing_of(view_comment(db, &v.at)?, v))
}

/// What stands under the view's name, from the comment on the DuckDB view there now.
fn standing_of(comment: Option<String>, v: &ViewRecord) -> Standing {
    match (comment, &v.marker) {
        (None, _) => Standing::Gone,
        (Some(now), Some(ours)) if &now != ours => Standing::Replaced,
        _ => Standing::Ours,
    }
}

/// Fails when the view was replaced or dropped behind openivm's back (the comment read from the
/// cache's round of refreshes when in one).
pub fn check_standing(db: &dyn Sql, cache: &mut cache::Cache, v: &ViewRecord) -> Result<()> {
    let comment = cache.view_comment(db, &v.at)?;
    let uncommented = comment.as_deref() == Some("");
    let what = match standing_of(comment, v) {
        Standing::Ours => return Ok(()),
        // EXPORT/IMPORT DATABASE and COPY FROM DATABASE keep no comments.
        Standing::Replaced if uncommented => {
            return Err(Error::InvalidArgument(format!(
                "the view '{v}' lost openivm's marker (its comment): it was replaced by another definition (CREATE OR \
                 REPLACE VIEW) behind openivm's back, or the database was copied by EXPORT/IMPORT DATABASE or COPY \
                 FROM DATABASE, which keep no comments and no triggers; openivm no longer maintains it. CALL \
                 openivm_drop('{v}') removes openivm's state for it (and leaves any view of yours alone); after a copy, \
                 also DROP VIEW {v}, then create it again with openivm_create",
                v = v.at.name
            )))
        }
        Standing::Replaced => "was replaced by another definition (CREATE OR REPLACE VIEW)".to_string(),
        Standing::Gone => match renamed_to(db, v)? {
            // ALTER VIEW ... RENAME keeps the comment: the view is found under its new name.
            Some(now) => {
                return Err(Error::InvalidArgument(format!(
                    "the view '{}' was renamed to '{now}' (ALTER VIEW ... RENAME) behind openivm's back, so openivm \
                     no longer maintains it; rename it back (ALTER VIEW {now} RENAME TO {}) to maintain it again",
                    v.at.name, v.at.name
                )))
            }
            None => "was dropped (DROP VIEW)".to_string(),
        },
    };
    Err(Error::InvalidArgument(format!(
        "the view '{}' {what} behind openivm's back, so openivm no longer maintains it; \
         CALL openivm_drop('{}') removes openivm's state for it (and leaves any view of yours alone)",
        v.at.name, v.at.name
    )))
}

/// The name the maintained view `v` carries now when it was renamed (a view of its database
/// with its marker), as `schema.name` when in another schema.
fn renamed_to(db: &dyn Sql, v: &ViewRecord) -> Result<Option<String>> {
    let Some(marker) = &v.marker else { return Ok(None) };
    let rows = crate::sql::views::VIEW_WITH_COMMENT.rows(db, [&v.at.catalog, marker])?;
    let Some(r) = rows.first() else { return Ok(None) };
    let (schema, name) = (r.text(0)?, r.text(1)?);
    Ok(Some(if schema == v.at.schema { name } else { format!("{schema}.{name}") }))
}

fn find_view(db: &dyn Sql, defaults: &(String, String), arg: &str) -> Result<ViewRecord> {
    let at = view_location(defaults, arg)?;
    if !metadata_exists(db)? {
        return Err(Error::UnknownView(arg.to_string()));
    }
    let rows = VIEW_FIND.rows(db, [&at.schema, &at.name])?;
    let Some(r) = rows.first() else {
        return Err(Error::UnknownView(arg.to_string()));
    };
    let earlier_layout = r.text(1)? != home::HERE;
    let at = Qualified { catalog: at.catalog, schema: r.text(2)?, name: r.text(0)? };
    let data = if earlier_layout { at.sibling(r.text(4)?) } else { internal(&at.catalog, r.text(4)?) };
    Ok(ViewRecord {
        data,
        earlier_layout,
        query: r.text(3)?,
        signature: r.text(5)?,
        marker: r.opt_text(6)?.map(str::to_string),
        strategy: Strategy::parse(r.opt_text(7)?),
        strategy_reason: r.opt_text(8)?.map(str::to_string),
        at,
    })
}

/// A table of the internal schema of the database `catalog`.
fn internal(catalog: &str, name: String) -> Qualified {
    Qualified { catalog: catalog.to_string(), schema: feeds::SCHEMA.into(), name }
}

/// The names a view's stored result may take in the internal schema, in order of preference:
/// `data_<schema>_<view>`, then with a number appended (two views whose names join to the same
/// text, such as `a_b.c` and `a.b_c`, get distinct tables).
fn data_table_names(schema: &str, view: &str) -> impl Iterator<Item = String> {
    let base = format!("data_{schema}_{view}");
    std::iter::once(base.clone()).chain((2..).map(move |n| format!("{base}_{n}")))
}

/// The first of `data_table_names` that no table of the internal schema has yet.
fn free_data_table(db: &dyn Sql, at: &Qualified) -> Result<Qualified> {
    let cat = SqlCatalog::new(db);
    for name in data_table_names(&at.schema, &at.name) {
        let candidate = internal(&at.catalog, name);
        let probe = TableName {
            catalog: Some(candidate.catalog.clone()),
            schema: Some(candidate.schema.clone()),
            name: candidate.name.clone(),
        };
        if cat.find(&probe)?.is_none() {
            return Ok(candidate);
        }
    }
    Err(Error::Internal("no free name for a stored result".into()))
}

/// Parses and binds a view query against the current catalog; DuckDB's own binder then checks
/// it and names and types its output columns. Also returns the user macros it calls.
fn compile(db: &dyn Sql, query: &str) -> Result<(ViewQuery, Vec<OutputColumn>, Vec<Macro>)> {
    let json = PARSE_TREE.scalar(db, [query])?.ok_or_else(|| Error::Parse("DuckDB returned no parse tree".into()))?;
    let select = parse_select(&json)?;
    let mut q = bind(select, &SqlCatalog::new(db))?;
    full::plan_facts(db, query)?;
    let outputs = describe_typed(db, query, &q)?;
    q.set_output_types(&output_types(&outputs), &render::needs_text_identity);
    let macros = macros_called(db, &q, &json)?;
    Ok((q, outputs, macros))
}

/// The user macros a bound query calls (`macros::called`), in its text and in the definitions
/// of the DuckDB views it expanded.
fn macros_called(db: &dyn Sql, q: &ViewQuery, tree: &str) -> Result<Vec<Macro>> {
    let sources: Vec<&str> = q
        .source_views
        .iter()
        .filter_map(|v| crate::front::catalog::view_query_text(&v.sql, &v.view.schema, &v.view.name))
        .collect();
    macros::called(db, tree, &sources)
}

#[derive(Serialize)]
struct SignatureLeaf<'a> {
    alias: &'a str,
    table: TableId,
    columns: Vec<&'a ColumnDef>,
}

/// What a view depends on: each leaf's table (named as the metadata stores it, see `home`;
/// `main` is the database holding the metadata), the names and types of the columns it reads,
/// and the definitions of the DuckDB views and user macros it expands.
fn signature(q: &ViewQuery, macros: &[Macro], main: &str) -> String {
    let leaves: Vec<SignatureLeaf> = q
        .leaves
        .iter()
        .zip(&q.used_columns)
        .map(|(l, used)| SignatureLeaf {
            alias: &l.alias,
            table: home::stored_table(main, &l.table),
            columns: l.columns.iter().filter(|c| used.contains(&c.name)).collect(),
        })
        .collect();
    let mut signature = serde_json::to_string(&leaves).unwrap_or_default();
    // Each part follows only where there is one (the layout of views without stays as it was).
    if !q.source_views.is_empty() {
        signature += &views_signature(q, main);
    }
    if !macros.is_empty() {
        signature += &serde_json::to_string(macros).unwrap_or_default();
    }
    signature
}

/// Whether a recompiled view still matches the signature recorded at create. A view recorded
/// before macros were (its signature has no macro part) is checked without them.
fn signature_matches(q: &ViewQuery, macros: &[Macro], main: &str, recorded: &str) -> bool {
    signature(q, macros, main) == recorded || (!macros.is_empty() && signature(q, &[], main) == recorded)
}

/// The DuckDB views a view query expanded, with their definitions, as `signature` records them.
fn views_signature(q: &ViewQuery, main: &str) -> String {
    let views: Vec<SourceView> = q
        .source_views
        .iter()
        .map(|v| SourceView { view: home::stored_table(main, &v.view), sql: v.sql.clone() })
        .collect();
    serde_json::to_string(&views).unwrap_or_default()
}

/// Why a recompiled view no longer matches the signature recorded at create.
fn signature_change(q: &ViewQuery, macros: &[Macro], main: &str, recorded: &str) -> String {
    // The signature's last part lists the macros it called, when it called any.
    let parts: Vec<Value> = serde_json::Deserializer::from_str(recorded).into_iter().flatten().collect();
    let was: Vec<Macro> = parts.last().and_then(|v| serde_json::from_value(v.clone()).ok()).unwrap_or_default();
    let replaced: BTreeSet<&str> = was.iter().filter(|m| !macros.contains(m)).map(|m| m.name.as_str()).collect();
    if !replaced.is_empty() {
        return format!(
            "a macro it calls ({}) was replaced by another definition (CREATE OR REPLACE MACRO)",
            replaced.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    let views_now = serde_json::from_str::<Value>(&views_signature(q, main)).ok();
    if !q.source_views.is_empty() && !views_now.is_some_and(|v| parts.contains(&v)) {
        let names: Vec<String> = q.source_views.iter().map(|v| format!("{}.{}", v.view.schema, v.view.name)).collect();
        return format!(
            "a DuckDB view it reads ({}) was replaced by another definition (CREATE OR REPLACE VIEW)",
            names.join(", ")
        );
    }
    "a column it reads was added, dropped, renamed or retyped".into()
}

/// The names and types of a query's output columns, duplicate names made distinct as DuckDB's
/// CREATE VIEW makes them (`dedup_names`).
fn describe(db: &dyn Sql, query: &str) -> Result<Vec<OutputColumn>> {
    let rows = db.query(&render::describe(query))?;
    let mut outputs: Vec<OutputColumn> = rows
        .iter()
        .map(|r| Ok(OutputColumn { name: r.text(0)?, ty: r.text(1)?, collation: None }))
        .collect::<Result<_>>()?;
    let names = dedup_names(outputs.iter().map(|o| o.name.clone()).collect());
    outputs.iter_mut().zip(names).for_each(|(o, n)| o.name = n);
    Ok(outputs)
}

/// `describe` with the columns' collations, for a query over the leaves of `q` (a query reading
/// no collated column has none: only then is an empty copy of its result made to read them).
fn describe_typed(db: &dyn Sql, query: &str, q: &ViewQuery) -> Result<Vec<OutputColumn>> {
    let mut outputs = describe(db, query)?;
    if !q.reads_collated() {
        return Ok(outputs);
    }
    let probe = Qualified::temp("openivm_collations".into());
    db.execute(&render::drop_table(&probe))?;
    db.execute(&render::create_temp_table_as(&probe, &render::no_rows_of(query)))?;
    let columns = SqlCatalog::new(db).columns(&probe.table_id());
    db.execute(&render::drop_table(&probe))?;
    for (o, c) in outputs.iter_mut().zip(columns?) {
        o.collation = c.collation;
    }
    Ok(outputs)
}

fn output_types(outputs: &[OutputColumn]) -> Vec<(String, Option<String>)> {
    outputs.iter().map(|o| (o.ty.clone(), o.collation.clone())).collect()
}

/// Output names made distinct as DuckDB does (`QueryResult::DeduplicateColumns`): a repeated
/// name gets `_<n>` appended, n counting its repeats (case-insensitively), skipping names taken.
fn dedup_names(names: Vec<String>) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    names
        .into_iter()
        .map(|name| {
            let low = name.to_lowercase();
            let Some(&n) = seen.get(&low) else {
                seen.insert(low, 1);
                return name;
            };
            let mut n = n;
            let mut renamed = format!("{name}_{n}");
            while seen.contains_key(&renamed.to_lowercase()) {
                n += 1;
                renamed = format!("{name}_{n}");
            }
            seen.insert(low, n);
            seen.insert(renamed.to_lowercase(), 1);
            renamed
        })
        .collect()
}

/// Inserts the stored rows of `q` over `rows_sql` (rows of weight 1: the initial fill and every
/// recompute) into the empty stored result `data`: the fast form first, and the exact DOUBLE
/// split only when a DOUBLE sum came out non-finite (`render::aggregate_fill`).
pub(crate) fn fill(db: &dyn Sql, q: &ViewQuery, data: &Qualified, rows_sql: &str) -> Result<()> {
    db.execute(&render::insert_into(data, &render::aggregate_fill(q, rows_sql)))?;
    let Some(check) = render::nonfinite_sums(q, data) else { return Ok(()) };
    if db.scalar_int(&check, &[])? > 0 {
        db.execute(&render::delete_all(data))?;
        db.execute(&render::insert_into(data, &render::aggregate_fill_exact(q, rows_sql)))?;
    }
    Ok(())
}

/// Milliseconds since `t`, to the microsecond: every time openivm reports (refresh results,
/// history) is measured by this, so none shows floating-point noise.
pub(crate) fn elapsed_ms(t: Instant) -> f64 {
    t.elapsed().as_micros() as f64 / 1000.0
}

/// One refresh (or the initial fill) as `openivm_refresh_history` records it.
pub struct HistoryRow<'a> {
    pub view: &'a Qualified,
    /// Microseconds between the refresh's start and its writing transaction's start.
    pub before_us: i64,
    pub mode: mode::Mode,
    pub reason: &'a str,
    pub counts: crate::plan::terms::TermCounts,
    pub delta_rows: i64,
    pub capture_ms: f64,
    pub apply_ms: f64,
    pub total_ms: f64,
    /// Of `capture_ms`, the one-time work of starting trigger feeds.
    pub setup_ms: f64,
}

impl<'a> HistoryRow<'a> {
    /// A recompute that captured nothing (an initial fill, a refresh of a full view): all its
    /// time is applying.
    pub fn recompute(view: &'a Qualified, reason: &'a str, apply_ms: f64, total_ms: f64) -> HistoryRow<'a> {
        HistoryRow {
            view,
            before_us: 0,
            mode: mode::Mode::Full,
            reason,
            counts: Default::default(),
            delta_rows: 0,
            capture_ms: 0.0,
            apply_ms,
            total_ms,
            setup_ms: 0.0,
        }
    }
}

/// The parameters of `history_insert.sql` for one row.
fn history_params(h: &HistoryRow) -> [String; 14] {
    [
        h.view.name.clone(),
        h.view.schema.clone(),
        h.before_us.to_string(),
        h.mode.as_str().to_string(),
        h.reason.to_string(),
        h.counts.total.to_string(),
        h.counts.fk_pruned.to_string(),
        h.counts.empty_skipped.to_string(),
        h.counts.run.to_string(),
        h.delta_rows.to_string(),
        format!("{:.3}", h.capture_ms),
        format!("{:.3}", h.apply_ms),
        format!("{:.3}", h.total_ms),
        format!("{:.3}", h.setup_ms),
    ]
}

fn record_history(db: &dyn Sql, h: &HistoryRow) -> Result<()> {
    let p = history_params(h);
    HISTORY_INSERT.run(db, std::array::from_fn(|i| p[i].as_str()))
}

/// What the refreshes of a round (`openivm_refresh_all`) record about themselves, written at its
/// end in two statements (each view's history row; its refresh time and count) instead of two
/// per view: the rows are the same, since the round is one transaction (`now()` is its start).
#[derive(Default)]
pub struct Refreshed {
    /// Each refresh's history row, as `history_insert.sql`'s parameters (view, schema, ...).
    history: Vec<[String; 14]>,
}

impl Refreshed {
    pub fn add(&mut self, h: &HistoryRow) {
        self.history.push(history_params(h));
    }

    pub fn flush(&self, db: &dyn Sql) -> Result<()> {
        if self.history.is_empty() {
            return Ok(());
        }
        db.execute(&render::capture::history_rows(&self.history))?;
        let views: Vec<(&str, &str)> = self.history.iter().map(|h| (h[1].as_str(), h[0].as_str())).collect();
        db.execute(&render::capture::views_refreshed(&views))
    }
}

pub struct Created {
    pub view: String,
    pub rows: i64,
    pub strategy: Strategy,
}

/// Comments a view openivm just created with a marker of its own (a fresh token), by which a
/// view replaced or dropped behind openivm's back is recognised later; returns the marker.
fn mark_as_ours(db: &dyn Sql, at: &Qualified) -> Result<String> {
    let token = NEW_TOKEN.scalar(db, [])?.ok_or_else(|| Error::Internal("no token was made".into()))?;
    let marker = format!("maintained by openivm ({token})");
    db.execute(&render::comment_on_view(at, &marker))?;
    Ok(marker)
}

pub fn create(db: &dyn Sql, cache: &mut Cache, name: &str, query: &str) -> Result<Created> {
    let started = Instant::now();
    let defaults = cache.defaults(db)?;
    let caller_source = cache.caller.default_source.clone();
    let attempt = |sums: Sums| -> Result<Created> {
        metadata::ensure(db)?;
        let source = match &caller_source {
            Some(s) => s.clone(),
            None => crate::store::settings::default_source(db)?,
        };
        let at = view_location(&defaults, name)?;
        if at.name.to_ascii_lowercase().starts_with("openivm_") {
            return Err(Error::InvalidArgument(format!("names starting with openivm_ are reserved ('{}')", at.name)));
        }
        if SCHEMA_EXISTS.scalar(db, [&at.catalog, &at.schema])?.as_deref() == Some("0") {
            return Err(Error::InvalidArgument(format!("schema '{}' does not exist", at.schema)));
        }
        let taken = SqlCatalog::new(db).find(&TableName {
            catalog: Some(at.catalog.clone()),
            schema: Some(at.schema.clone()),
            name: at.name.clone(),
        })?;
        if taken.is_some() {
            return Err(Error::NameTaken(name.to_string()));
        }
        if !VIEW_FIND.rows(db, [&at.schema, &at.name])?.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "a maintained view named '{}' is still registered although its DuckDB view was dropped; \
                 run openivm_drop('{}') first",
                at.name, at.name
            )));
        }
        create_in(db, &at, query, started, sums, &source)
    };
    // A sum too large for its 64-bit column fails the fill: the whole create runs again with
    // 128-bit sums (see `render::stored_table`).
    let created = match in_transaction(db, || attempt(Sums::Narrow)) {
        Err(Error::Sql { kind: SqlErrorKind::Conversion, .. }) => in_transaction(db, || attempt(Sums::Wide))?,
        other => other?,
    };
    Ok(created)
}

/// How a new stored result keeps its integer and decimal sums (`render::stored_table`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sums {
    /// In 64 bits while they fit.
    Narrow,
    /// In 128 bits, as DuckDB's SUM types them.
    Wide,
}

/// Creates the maintained view `at` in the caller's transaction (its name checked); the stages
/// its query needs are created first, and dropped again when the query is maintained by
/// recomputing after all.
fn create_in(db: &dyn Sql, at: &Qualified, query: &str, started: Instant, sums: Sums, source: &str) -> Result<Created> {
    let at = at.clone();
    {
        // DuckDB's own binder has the last word on the query and names its columns. A query
        // without incremental rules that DuckDB can run is maintained by recomputing it.
        let made = std::cell::RefCell::new(Vec::new());
        let (q, outputs, macros) = match compile_making_stages(db, query, &at.catalog, &made, sums, source) {
            Ok(compiled) => compiled,
            Err(why) if strategy::falls_back(&why) => {
                // (a stage's own stages went with it when nothing else reads them)
                for stage in made.borrow().iter().rev() {
                    if !VIEW_FIND.rows(db, [&stage.schema, &stage.name])?.is_empty()
                        && readers_of(db, stage)?.is_empty()
                    {
                        drop_in(db, stage)?;
                    }
                }
                // A construct no strategy maintains (a parameter) is said so, rather than how
                // DuckDB fails on it.
                if let Some(p) = strategy::refused_parameters(query_tree(db, query)?.as_deref()) {
                    return Err(p);
                }
                let outputs = match describe(db, query) {
                    Ok(o) => o,
                    // A name that does not resolve for openivm's binder nor for DuckDB's.
                    Err(_) if matches!(why, Error::Bind(_)) => return Err(why),
                    Err(e) => return Err(e),
                };
                return full::create(db, &at, query, &why, &outputs, started);
            }
            Err(e) => return Err(e),
        };
        let (strategy, strategy_reason) = strategy::of_bound(&q);
        // Attach to the tables' feeds first: a feed other views already read is brought up to
        // date (its batch logged for them), so that the fill below and the cursor agree.
        let attaching = Instant::now();
        let setup_ms = attach(db, &q, &at, &at.catalog, source)?;
        let capture_ms = elapsed_ms(attaching);
        let data = free_data_table(db, &at)?;
        // The stored columns get the types refreshes produce; the fill is cast to them.
        let weighted = render::aggregate_weighted(&q, &render::full_select(&q));
        let storage = database::storage_of(db, &at.catalog)?;
        let mut columns = describe_typed(db, &weighted, &q)?;
        if sums == Sums::Narrow {
            columns = render::stored_table::narrowed(&q, storage, &columns);
        }
        db.execute(&render::stored_table::create_table(storage, &data, &columns))?;
        let filling = Instant::now();
        fill(db, &q, &data, &render::full_select(&q))?;
        let apply_ms = elapsed_ms(filling);
        // The stored columns as created (their types as DuckDB describes them).
        let data_columns: Vec<ColumnDef> = columns
            .iter()
            .map(|c| ColumnDef { name: c.name.clone(), ty: c.ty.clone(), collation: c.collation.clone() })
            .collect();
        let sum_kinds = render::sum_kinds(&q, &data_columns);
        let view_sql = render::visible_view(&q, &data, &outputs, &sum_kinds);
        db.execute(&render::create_view(&at, &view_sql))?;
        let marker = mark_as_ours(db, &at)?;
        let stored_leaves: Vec<(&String, TableId)> =
            q.leaves.iter().map(|l| (&l.alias, home::stored_table(&at.catalog, &l.table))).collect();
        let leaves = serde_json::to_string(&stored_leaves).map_err(|e| Error::Internal(e.to_string()))?;
        VIEW_INSERT.run(
            db,
            [
                &at.name,
                home::HERE,
                &at.schema,
                query,
                &leaves,
                q.kind(),
                &data.name,
                &signature(&q, &macros, &at.catalog),
                &marker,
                strategy.as_str(),
                &strategy_reason,
            ],
        )?;
        let rows = db.scalar_int(&render::count_rows(&at), &[])?;
        let total_ms = elapsed_ms(started);
        // Capture: starting the change state (for a diff source, its snapshot); apply: the fill.
        let row = HistoryRow { capture_ms, setup_ms, ..HistoryRow::recompute(&at, "initial fill", apply_ms, total_ms) };
        record_history(db, &row)?;
        Ok(Created { view: at.name.clone(), rows, strategy })
    }
}

fn query_tree(db: &dyn Sql, query: &str) -> Result<Option<String>> {
    PARSE_TREE.scalar(db, [query])
}

/// `compile` for a view being created: a subquery that needs a stage gets one (recorded in
/// `made`). A stage is made only for a query that binds incrementally on its own (a correlated
/// subquery does not), so that nothing DuckDB would refuse runs in the creating transaction.
fn compile_making_stages(
    db: &dyn Sql,
    query: &str,
    catalog: &str,
    made: &std::cell::RefCell<Vec<Qualified>>,
    sums: Sums,
    source: &str,
) -> Result<(ViewQuery, Vec<OutputColumn>, Vec<Macro>)> {
    let maker = |sql: &str| -> Result<Option<TableId>> { make_stage(db, sql, catalog, made, sums, source) };
    let json = PARSE_TREE.scalar(db, [query])?.ok_or_else(|| Error::Parse("DuckDB returned no parse tree".into()))?;
    let select = parse_select(&json)?;
    let mut q = bind(select, &SqlCatalog::making_stages(db, &maker))?;
    let outputs = describe_typed(db, query, &q)?;
    q.set_output_types(&output_types(&outputs), &render::needs_text_identity);
    let macros = macros_called(db, &q, &json)?;
    Ok((q, outputs, macros))
}

/// Creates the stage for `sql` (a hidden maintained view `openivm.stage_<n>`), or finds the one
/// a nested compile made meanwhile.
fn make_stage(
    db: &dyn Sql,
    sql: &str,
    catalog: &str,
    made: &std::cell::RefCell<Vec<Qualified>>,
    sums: Sums,
    source: &str,
) -> Result<Option<TableId>> {
    if let Some(name) = crate::sql::views::STAGE_FIND.rows(db, [sql])?.first().map(|r| r.text(0)).transpose()? {
        return Ok(Some(TableId { catalog: catalog.to_string(), schema: feeds::SCHEMA.into(), name }));
    }
    // Bind it first (which makes the stages it needs, to the end): a query that does not bind
    // incrementally on its own gets no stage, and the name below is chosen after every stage
    // it reads exists, so that none of them can take it meanwhile.
    let json = PARSE_TREE.scalar(db, [sql])?.ok_or_else(|| Error::Parse("DuckDB returned no parse tree".into()))?;
    let maker = |s: &str| -> Result<Option<TableId>> { make_stage(db, s, catalog, made, sums, source) };
    match parse_select(&json).and_then(|s| bind(s, &SqlCatalog::making_stages(db, &maker))) {
        Ok(_) => {}
        Err(e) if strategy::falls_back(&e) || matches!(e, Error::Parse(_)) => return Ok(None),
        Err(e) => return Err(e),
    }
    let mut n = 1;
    let at = loop {
        let at = internal(catalog, format!("stage_{n}"));
        let taken = SqlCatalog::new(db).find(&TableName {
            catalog: Some(at.catalog.clone()),
            schema: Some(at.schema.clone()),
            name: at.name.clone(),
        })?;
        if taken.is_none() && VIEW_FIND.rows(db, [&at.schema, &at.name])?.is_empty() {
            break at;
        }
        n += 1;
    };
    let created = create_in(db, &at, sql, Instant::now(), sums, source)?;
    if created.strategy == Strategy::Full {
        drop_in(db, &at)?;
        return Ok(None);
    }
    made.borrow_mut().push(at.clone());
    Ok(Some(at.table_id()))
}

/// The source of each maintained view `q` reads in its own database (`home`): recorded where
/// the upstream view's refreshes record the change of the rows it shows (an incremental view
/// that shows its rows locally, `ViewQuery::shows_rows_locally`), so a capture of it costs
/// O(change); otherwise the diff of its visible rows, as for any table.
pub fn chain_sources(
    db: &dyn Sql,
    home: &str,
    q: &ViewQuery,
    tables: &[TableId],
    kinds: &mut [capture::SourceKind],
) -> Result<()> {
    for (k, t) in tables.iter().enumerate() {
        if !q.upstream.contains(t) || !t.catalog.eq_ignore_ascii_case(home) {
            continue;
        }
        let defaults = (home.to_string(), t.schema.clone());
        let name = format!("{}.{}", render::ident(&t.schema), render::ident(&t.name));
        let view = find_view(db, &defaults, &name)?;
        if view.strategy == Strategy::Full || view.earlier_layout {
            continue;
        }
        if compile(db, &view.query)?.0.shows_rows_locally() {
            kinds[k] = capture::SourceKind::Recorded;
        }
    }
    Ok(())
}

/// Attaches a view to the feeds of its tables (starting feeds no view reads yet), with its
/// cursors at each feed's newest batch after bringing shared feeds up to date. Returns the ms
/// spent starting trigger feeds (their installation and snapshot: one-time work).
pub(crate) fn attach(db: &dyn Sql, q: &ViewQuery, at: &Qualified, catalog: &str, source: &str) -> Result<f64> {
    let tables = q.tables();
    let all_columns: Vec<Vec<ColumnDef>> = tables
        .iter()
        .map(|t| q.leaves.iter().find(|l| &l.table == t).map(|l| l.columns.clone()).unwrap_or_default())
        .collect();
    let mut kinds = crate::declare::sources::sources(db, catalog, &tables, &all_columns, source)?;
    chain_sources(db, catalog, q, &tables, &mut kinds)?;
    let sizes: Vec<i64> = cache::table_states(db, &tables)?.iter().map(|s| s.2).collect();
    // The database's refresh mode, read at most once, and only for a feed that may need it.
    let mut refresh_mode: Option<mode::Requested> = None;
    let mut setup_ms = 0.0;
    for (k, t) in tables.iter().enumerate() {
        let started = Instant::now();
        let columns = q.table_columns(t);
        let mut feed = feeds::find_or_start(db, catalog, t, &columns, &kinds[k], sizes[k])?;
        let setup = capture::trigger::installing(&feed);
        if let Some(skip) = capture::skip_diff(&feed, &kinds[k], &columns) {
            let skips = mode::start_by_recomputing(sizes[k], || match refresh_mode {
                Some(m) => Ok(m),
                None => {
                    let m = mode::Requested::parse(&settings::refresh_mode(db)?).unwrap_or(mode::Requested::Auto);
                    Ok(*refresh_mode.insert(m))
                }
            })?;
            if skips {
                match skip {
                    capture::SkipDiff::Join => feeds::join_to_recompute(db, &mut feed, &at.schema, &at.name)?,
                    capture::SkipDiff::Restart => {
                        feeds::widen_by_restarting(db, &mut feed, &columns, &all_columns[k], &at.schema, &at.name)?
                    }
                }
                continue;
            }
        }
        let fresh = if feed.consumers > 0 && !capture::unchanged_now(db, &feed, sizes[k])? {
            match capture::capture(db, &feed, &format!("attach_{k}"), sizes[k]) {
                Ok(fresh) => fresh,
                // The attaching view is computed in full anyway: a broken promise restarts the
                // feed from the table as it is, and its other views recompute once.
                Err(Error::BrokenPromise(_)) => {
                    feeds::rebuild(db, &mut feed, &kinds[k], &at.schema, &at.name)?;
                    capture::unchanged(&feed)
                }
                Err(e) => return Err(e),
            }
        } else {
            capture::unchanged(&feed)
        };
        feed.cursor = feed.seq;
        feeds::commit(db, &mut feed, &fresh, &at.schema, &at.name, false, true, None)?;
        feeds::widen(db, &mut feed, &columns, &all_columns[k])?;
        if feed.kind != kinds[k] {
            feeds::switch_source(db, &mut feed, &kinds[k])?;
        }
        capture::discard(db, &fresh)?;
        // Started here, or switched to triggers here (installing them).
        if setup || capture::trigger::installing(&feed) {
            setup_ms += elapsed_ms(started);
        }
    }
    Ok(setup_ms)
}

/// Every maintained view, as `schema.name` in creation order.
pub fn all_views(db: &dyn Sql) -> Result<Vec<(String, String)>> {
    if !metadata_exists(db)? {
        return Ok(vec![]);
    }
    ALL_VIEWS.rows(db, []).and_then(|rows| rows.iter().map(|r| Ok((r.text(0)?, r.text(1)?))).collect())
}

/// Removes a view, its stored result and its cursors (and feeds no other view reads).
pub fn drop_view(db: &dyn Sql, cache: &mut Cache, name: &str) -> Result<String> {
    let defaults = cache.defaults(db)?;
    let dropped = in_transaction(db, || {
        let view = find_view(db, &defaults, name)?;
        let at = view.at.clone();
        drop_in(db, &at)?;
        Ok(at)
    })?;
    cache.invalidate();
    Ok(dropped.name)
}

/// Drops the maintained view `at` in the caller's transaction, and then the stages it read that
/// no other view reads.
fn drop_in(db: &dyn Sql, at: &Qualified) -> Result<()> {
    let defaults = (at.catalog.clone(), at.schema.clone());
    let stages = stages_read_by(db, at)?;
    {
        let view = find_view(db, &defaults, &format!("{}.{}", render::ident(&at.schema), render::ident(&at.name)))?;
        let at = &view.at;
        let readers = readers_of(db, at)?;
        if !readers.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "the maintained view '{}' is read by the maintained views {}; drop them first",
                at.name,
                readers.join(", ")
            )));
        }
        // Never drop what is not ours: a view replaced behind openivm's back stays.
        if standing(db, &view)? == Standing::Ours {
            db.execute(&render::drop_view(at))?;
        }
        db.execute(&render::drop_table(&view.data))?;
        if crate::front::catalog::main_table_exists(db, "openivm_views")? {
            feeds::detach_view(db, &at.catalog, &at.schema, &at.name)?;
        }
        VIEW_DELETE.run(db, [&at.schema, &at.name])?;
    }
    for stage in stages {
        if readers_of(db, &stage)?.is_empty() {
            drop_in(db, &stage)?;
        }
    }
    Ok(())
}

/// The stages (hidden maintained views of the schema openivm) that the view `at` reads.
fn stages_read_by(db: &dyn Sql, at: &Qualified) -> Result<Vec<Qualified>> {
    if !crate::front::catalog::main_table_exists(db, "openivm_views")? {
        return Ok(vec![]);
    }
    crate::sql::capture::STAGES_READ_BY
        .rows(db, [&at.schema, &at.name])?
        .iter()
        .map(|r| Ok(internal(&at.catalog, r.text(0)?)))
        .collect()
}

/// The other maintained views that read the maintained view `at` as a leaf (through a feed on it).
fn readers_of(db: &dyn Sql, at: &Qualified) -> Result<Vec<String>> {
    if !crate::front::catalog::main_table_exists(db, "openivm_views")? {
        return Ok(vec![]);
    }
    let mut out = Vec::new();
    for r in RELATION_READERS.rows(db, [home::HERE, &at.schema, &at.name])? {
        let (schema, name) = (r.text(0)?, r.text(1)?);
        if !(schema.eq_ignore_ascii_case(&at.schema) && name.eq_ignore_ascii_case(&at.name)) {
            out.push(format!("{schema}.{name}"));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_output_names_are_made_distinct_as_duckdb_does() {
        let names = |v: &[&str]| dedup_names(v.iter().map(|s| s.to_string()).collect());
        assert_eq!(names(&["a", "a", "a_1", "a"]), ["a", "a_1", "a_1_1", "a_2"]);
        assert_eq!(names(&["a", "A"]), ["a", "A_1"]);
        assert_eq!(names(&["x", "y"]), ["x", "y"]);
    }

    #[test]
    fn stored_results_are_named_after_schema_and_view() {
        let names: Vec<String> = data_table_names("main", "v").take(3).collect();
        assert_eq!(names, ["data_main_v", "data_main_v_2", "data_main_v_3"]);
        // `a_b.c` and `a.b_c` start from the same name; the second view created takes the next
        assert_eq!(data_table_names("a_b", "c").next(), data_table_names("a", "b_c").next());
    }
}
