//! A maintained view's record and compilation: finding it, its standing (still ours?), its
//! signature, stages and output columns.

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;
use serde_json::Value;

use crate::ast::TableName;
use crate::capture::{self, feeds};
use crate::db::{read_all, typed_row, JsonList, Sql};
use crate::error::{Error, Result};
use crate::front::bind::bind;
use crate::front::catalog::{table_name, SqlCatalog};
use crate::front::macros::{self, Macro};
use crate::front::parse::parse_select;
use crate::front::strategy::{self, Strategy};
use crate::ir::{ColumnDef, SourceView, TableId, ViewQuery};
use crate::render::AvgRule;
use crate::render::{self, OutputColumn, Qualified};
use crate::sql::capture::RELATION_READERS;
use crate::sql::catalog::PARSE_TREE;
use crate::sql::catalog::{OVERLOADS, PLAN_TREE};
use crate::sql::facts::NEW_TOKEN;
use crate::sql::views::ALL as ALL_VIEWS;
use crate::sql::views::FIND as VIEW_FIND;
use crate::sql::views::VIEW_COMMENT;
use crate::sql::Query;
use crate::store::home;

pub(crate) fn metadata_exists(db: &dyn Sql) -> Result<bool> {
    crate::front::catalog::main_table_exists(db, "openivm_views")
}

/// Where a view of this name lives: the default database, the given or default schema.
pub(crate) fn view_location(defaults: &(String, String), arg: &str) -> Result<Qualified> {
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
    /// How DuckDB finished the view's AVGs when it was created (None: openivm's model decides).
    pub avg_finish: Option<AvgRule>,
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
    let rows: Vec<(Option<String>,)> = read_all(&VIEW_COMMENT.rows(db, [&at.catalog, &at.schema, &at.name])?)?;
    Ok(rows.into_iter().next().and_then(|(comment,)| comment))
}

/// Whether the DuckDB view under the name is still the one openivm created.
pub fn standing(db: &dyn Sql, v: &ViewRecord) -> Result<Standing> {
    Ok(standing_of(view_comment(db, &v.at)?, v))
}

/// What stands under the view's name, from the comment on the DuckDB view there now.
pub(crate) fn standing_of(comment: Option<String>, v: &ViewRecord) -> Standing {
    match (comment, &v.marker) {
        (None, _) => Standing::Gone,
        (Some(now), Some(ours)) if &now != ours => Standing::Replaced,
        _ => Standing::Ours,
    }
}

/// The name the maintained view `v` carries now when it was renamed (a view of its database
/// with its marker), as `schema.name` when in another schema.
pub(crate) fn renamed_to(db: &dyn Sql, v: &ViewRecord) -> Result<Option<String>> {
    let Some(marker) = &v.marker else { return Ok(None) };
    let rows: Vec<(String, String)> =
        read_all(&crate::sql::views::VIEW_WITH_COMMENT.rows(db, [&v.at.catalog, marker])?)?;
    let Some((schema, name)) = rows.into_iter().next() else { return Ok(None) };
    Ok(Some(if schema == v.at.schema { name } else { format!("{schema}.{name}") }))
}

pub(crate) fn find_view(db: &dyn Sql, defaults: &(String, String), arg: &str) -> Result<ViewRecord> {
    let at = view_location(defaults, arg)?;
    if !metadata_exists(db)? {
        return Err(Error::UnknownView(arg.to_string()));
    }
    let rows: Vec<StoredView> = read_all(&VIEW_FIND.rows(db, [&at.schema, &at.name])?)?;
    let Some(r) = rows.into_iter().next() else {
        return Err(Error::UnknownView(arg.to_string()));
    };
    let earlier_layout = r.view_catalog != home::HERE;
    let at = Qualified { catalog: at.catalog, schema: r.view_schema, name: r.view_name };
    let data = if earlier_layout { at.sibling(r.data_table) } else { internal(&at.catalog, r.data_table) };
    Ok(ViewRecord {
        data,
        earlier_layout,
        query: r.query,
        signature: r.signature,
        marker: r.view_marker,
        strategy: Strategy::parse(r.strategy.as_deref()),
        strategy_reason: r.strategy_reason,
        avg_finish: r.avg_finish.as_deref().and_then(AvgRule::parse),
        at,
    })
}

/// A maintained view's row as `views/insert.sql` writes it.
pub(crate) struct NewView<'a> {
    pub at: &'a Qualified,
    pub query: &'a str,
    /// The leaves' aliases and stored tables, as JSON.
    pub leaves: &'a str,
    pub kind: &'a str,
    pub data_table: &'a str,
    pub signature: &'a str,
    pub marker: &'a str,
    pub strategy: Strategy,
    /// '' = none.
    pub strategy_reason: &'a str,
    pub avg_finish: Option<AvgRule>,
}

impl NewView<'_> {
    pub(crate) fn insert(&self, db: &dyn Sql) -> Result<()> {
        crate::sql::views::INSERT.run(
            db,
            [
                &self.at.name,
                home::HERE,
                &self.at.schema,
                self.query,
                self.leaves,
                self.kind,
                self.data_table,
                self.signature,
                self.marker,
                self.strategy.as_str(),
                self.strategy_reason,
                self.avg_finish.map_or("", AvgRule::as_str),
            ],
        )
    }
}

typed_row! {
    /// A maintained view's row in `openivm_views`, as `views/find.sql` reads it.
    struct StoredView {
        view_name: String,
        /// '' in the current layout, the database's name in rows of earlier layouts.
        view_catalog: String,
        view_schema: String,
        query: String,
        data_table: String,
        signature: String,
        view_marker: Option<String>,
        strategy: Option<String>,
        strategy_reason: Option<String>,
        avg_finish: Option<String>,
    }
}

/// A table of the internal schema of the database `catalog`.
pub(crate) fn internal(catalog: &str, name: String) -> Qualified {
    Qualified { catalog: catalog.to_string(), schema: feeds::SCHEMA.into(), name }
}

/// The names a view's stored result may take in the internal schema, in order of preference:
/// `data_<schema>_<view>`, then with a number appended (two views whose names join to the same
/// text, such as `a_b.c` and `a.b_c`, get distinct tables).
pub(crate) fn data_table_names(schema: &str, view: &str) -> impl Iterator<Item = String> {
    let base = format!("data_{schema}_{view}");
    std::iter::once(base.clone()).chain((2..).map(move |n| format!("{base}_{n}")))
}

/// The first of `data_table_names` that no table of the internal schema has yet.
pub(crate) fn free_data_table(db: &dyn Sql, at: &Qualified) -> Result<Qualified> {
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
pub(crate) fn compile(db: &dyn Sql, query: &str) -> Result<(ViewQuery, Vec<OutputColumn>, Vec<Macro>)> {
    let json = PARSE_TREE.scalar(db, [query])?.ok_or_else(|| Error::Parse("DuckDB returned no parse tree".into()))?;
    let select = parse_select(&json)?;
    let mut q = bind(select, &SqlCatalog::new(db))?;
    plan_facts(db, query)?;
    let outputs = describe_typed(db, query, &q)?;
    q.set_output_types(&output_types(&outputs), &render::needs_text_identity);
    let macros = macros_called(db, &q, &json)?;
    Ok((q, outputs, macros))
}

/// The user macros a bound query calls (`macros::called`), in its text and in the definitions
/// of the DuckDB views it expanded.
pub(crate) fn macros_called(db: &dyn Sql, q: &ViewQuery, tree: &str) -> Result<Vec<Macro>> {
    let sources: Vec<&str> = q
        .source_views
        .iter()
        .filter_map(|v| crate::front::catalog::view_query_text(&v.sql, &v.view.schema, &v.view.name))
        .collect();
    macros::called(db, tree, &sources)
}

#[derive(Serialize)]
pub(crate) struct SignatureLeaf<'a> {
    alias: &'a str,
    table: TableId,
    columns: Vec<&'a ColumnDef>,
}

/// What a view depends on: each leaf's table (named as the metadata stores it, see `home`;
/// `main` is the database holding the metadata), the names and types of the columns it reads,
/// and the definitions of the DuckDB views and user macros it expands.
pub(crate) fn signature(q: &ViewQuery, macros: &[Macro], main: &str) -> String {
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
pub(crate) fn signature_matches(q: &ViewQuery, macros: &[Macro], main: &str, recorded: &str) -> bool {
    signature(q, macros, main) == recorded || (!macros.is_empty() && signature(q, &[], main) == recorded)
}

/// The DuckDB views a view query expanded, with their definitions, as `signature` records them.
pub(crate) fn views_signature(q: &ViewQuery, main: &str) -> String {
    let views: Vec<SourceView> = q
        .source_views
        .iter()
        .map(|v| SourceView { view: home::stored_table(main, &v.view), sql: v.sql.clone() })
        .collect();
    serde_json::to_string(&views).unwrap_or_default()
}

/// Why a recompiled view no longer matches the signature recorded at create.
pub(crate) fn signature_change(q: &ViewQuery, macros: &[Macro], main: &str, recorded: &str) -> String {
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
pub(crate) fn describe(db: &dyn Sql, query: &str) -> Result<Vec<OutputColumn>> {
    let rows = db.query(&render::describe(query))?;
    let mut outputs: Vec<OutputColumn> = read_all::<(String, String)>(&rows)?
        .into_iter()
        .map(|(name, ty)| OutputColumn { name, ty, collation: None })
        .collect();
    let names = dedup_names(outputs.iter().map(|o| o.name.clone()).collect());
    outputs.iter_mut().zip(names).for_each(|(o, n)| o.name = n);
    Ok(outputs)
}

/// `describe` with the columns' collations, for a query over the leaves of `q` (a query reading
/// no collated column has none: only then is an empty copy of its result made to read them).
pub(crate) fn describe_typed(db: &dyn Sql, query: &str, q: &ViewQuery) -> Result<Vec<OutputColumn>> {
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

pub(crate) fn output_types(outputs: &[OutputColumn]) -> Vec<(String, Option<String>)> {
    outputs.iter().map(|o| (o.ty.clone(), o.collation.clone())).collect()
}

/// Output names made distinct as DuckDB does (`QueryResult::DeduplicateColumns`): a repeated
/// name gets `_<n>` appended, n counting its repeats (case-insensitively), skipping names taken.
pub(crate) fn dedup_names(names: Vec<String>) -> Vec<String> {
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

/// Comments a view openivm just created with a marker of its own (a fresh token), by which a
/// view replaced or dropped behind openivm's back is recognised later; returns the marker.
pub(crate) fn mark_as_ours(db: &dyn Sql, at: &Qualified) -> Result<String> {
    let token = NEW_TOKEN.scalar(db, [])?.ok_or_else(|| Error::Internal("no token was made".into()))?;
    let marker = format!("maintained by openivm ({token})");
    db.execute(&render::comment_on_view(at, &marker))?;
    Ok(marker)
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
    kinds: &mut [(capture::SourceKind, crate::declare::sources::SourceWhy)],
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
            kinds[k] = (capture::SourceKind::Recorded, crate::declare::sources::SourceWhy::MaintainedView);
        }
    }
    Ok(())
}

/// Every maintained view, as `schema.name` in creation order.
pub fn all_views(db: &dyn Sql) -> Result<Vec<(String, String)>> {
    if !metadata_exists(db)? {
        return Ok(vec![]);
    }
    read_all(&ALL_VIEWS.rows(db, [])?)
}

/// The stages (hidden maintained views of the schema openivm) that the view `at` reads.
pub(crate) fn stages_read_by(db: &dyn Sql, at: &Qualified) -> Result<Vec<Qualified>> {
    if !crate::front::catalog::main_table_exists(db, "openivm_views")? {
        return Ok(vec![]);
    }
    let stages: Vec<(String,)> = read_all(&crate::sql::capture::STAGES_READ_BY.rows(db, [&at.schema, &at.name])?)?;
    Ok(stages.into_iter().map(|(name,)| internal(&at.catalog, name)).collect())
}

/// The other maintained views that read the maintained view `at` as a leaf (through a feed on it).
pub(crate) fn readers_of(db: &dyn Sql, at: &Qualified) -> Result<Vec<String>> {
    if !crate::front::catalog::main_table_exists(db, "openivm_views")? {
        return Ok(vec![]);
    }
    let mut out = Vec::new();
    let readers: Vec<(String, String)> = read_all(&RELATION_READERS.rows(db, [home::HERE, &at.schema, &at.name])?)?;
    for (schema, name) in readers {
        if !(schema.eq_ignore_ascii_case(&at.schema) && name.eq_ignore_ascii_case(&at.name)) {
            out.push(format!("{schema}.{name}"));
        }
    }
    Ok(out)
}

pub(crate) fn json_of(db: &dyn Sql, sql: Query<1>, query: &str, what: &str) -> Result<Value> {
    let text = sql.scalar(db, [query])?.ok_or_else(|| Error::Internal(format!("DuckDB returned no {what}")))?;
    let v: Value =
        serde_json::from_str(&text).map_err(|e| Error::Internal(format!("DuckDB's {what} could not be read ({e})")))?;
    if v.get("error").and_then(Value::as_bool) == Some(true) {
        let message = v.get("error_message").and_then(Value::as_str).unwrap_or("unknown error");
        return Err(Error::sql(message, query));
    }
    Ok(v)
}

/// DuckDB's bound plan of a query, read (`strategy::plan_facts`), its function calls checked
/// overload by overload (`strategy::check_bound_calls`).
pub(crate) fn plan_facts(db: &dyn Sql, query: &str) -> Result<strategy::PlanFacts> {
    let plan = strategy::plan_facts(&json_of(db, PLAN_TREE, query, "plan")?);
    if !plan.calls.is_empty() {
        let names: Vec<&str> = plan.calls.iter().map(|c| c.name.as_str()).collect();
        let names = serde_json::to_string(&names).map_err(|e| Error::Internal(e.to_string()))?;
        let rows: Vec<(String, JsonList, String, bool)> = read_all(&OVERLOADS.rows(db, [&names])?)?;
        let overloads: Vec<strategy::Overload> = rows
            .into_iter()
            .map(|(name, JsonList(params), returns, consistent)| {
                let time_zone = params.iter().chain([&returns]).any(|t| strategy::is_time_zone_type(t));
                strategy::Overload { name, params, consistent, time_zone }
            })
            .collect();
        strategy::check_bound_calls(&plan.calls, &overloads)?;
    }
    Ok(plan)
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
