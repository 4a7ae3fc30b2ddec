//! `openivm_create` and `openivm_drop`: the stored result, the view, its feeds and cursors.

use std::time::Instant;

use super::cache::Cache;
use super::history::{elapsed_ms, record_history, Created, HistoryRow};
use super::view::{
    describe, describe_typed, fill, find_view, free_data_table, internal, macros_called, mark_as_ours, output_types,
    readers_of, signature, stages_read_by, standing, view_location, NewView, Standing,
};
use crate::ast::TableName;
use crate::capture::feeds;
use crate::db::{in_transaction, read_all, Sql};
use crate::error::{Error, Result, SqlErrorKind};
use crate::front::bind::bind;
use crate::front::catalog::SqlCatalog;
use crate::front::macros::Macro;
use crate::front::parse::parse_select;
use crate::front::strategy::{self, Strategy};
use crate::ir::{ColumnDef, TableId, ViewQuery};
use crate::render::{self, OutputColumn, Qualified};
use crate::sql::catalog::PARSE_TREE;
use crate::sql::catalog::SCHEMA_EXISTS;
use crate::sql::views::DELETE as VIEW_DELETE;
use crate::sql::views::FIND as VIEW_FIND;
use crate::store::{home, metadata};

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
    let mut created = match in_transaction(db, || attempt(Sums::Narrow)) {
        Err(Error::Sql { kind: SqlErrorKind::Conversion, .. }) => in_transaction(db, || attempt(Sums::Wide))?,
        other => other?,
    };
    // A subquery whose hidden stage another view made already reads that stage (`make_stage`),
    // and the fill read its stored rows: they lag the stage's tables by whatever changed since
    // the stage's last refresh (a refresh of its other readers). The view is therefore refreshed
    // at once, its stages first (a stage just made finds nothing changed): the stage's batch is
    // logged for the new view, whose cursor is at the stored rows it was filled from.
    let at = view_location(&defaults, name)?;
    if !stages_read_by(db, &at)?.is_empty() {
        super::refresh::refresh_cascade(
            db,
            cache,
            name,
            super::prepared::Options::default(),
            super::refresh::Upstream::Stages,
        )?;
        created.rows = db.scalar_int(&render::count_rows(&at), &[])?;
    }
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
pub(crate) fn create_in(
    db: &dyn Sql,
    at: &Qualified,
    query: &str,
    started: Instant,
    sums: Sums,
    source: &str,
) -> Result<Created> {
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
                return super::full::create(db, &at, query, &why, &outputs, started);
            }
            Err(e) => return Err(e),
        };
        let (strategy, strategy_reason) = strategy::of_bound(&q);
        // Attach to the tables' feeds first: a feed other views already read is brought up to
        // date (its batch logged for them), so that the fill below and the cursor agree.
        let attaching = Instant::now();
        let setup_ms = super::attach::attach(db, &q, &at, &at.catalog, source)?;
        let capture_ms = elapsed_ms(attaching);
        let data = free_data_table(db, &at)?;
        // The stored columns get the types refreshes produce; the fill is cast to them.
        let weighted = render::aggregate_weighted(&q, &render::full_select(&q));
        let storage = crate::front::catalog::storage_of(db, &at.catalog)?;
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
        let avg_finish = avg_finish(db, query, &q)?;
        let view_sql = render::visible_view(&q, &data, &outputs, &sum_kinds, avg_finish);
        db.execute(&render::create_view(&at, &view_sql))?;
        let marker = mark_as_ours(db, &at)?;
        let stored_leaves: Vec<(&String, TableId)> =
            q.leaves.iter().map(|l| (&l.alias, home::stored_table(&at.catalog, &l.table))).collect();
        let leaves = serde_json::to_string(&stored_leaves).map_err(|e| Error::Internal(e.to_string()))?;
        NewView {
            at: &at,
            query,
            leaves: &leaves,
            kind: q.kind(),
            data_table: &data.name,
            signature: &signature(&q, &macros, &at.catalog),
            marker: &marker,
            strategy,
            strategy_reason: &strategy_reason,
            avg_finish,
        }
        .insert(db)?;
        let rows = db.scalar_int(&render::count_rows(&at), &[])?;
        let total_ms = elapsed_ms(started);
        // Capture: starting the change state (for a diff source, its snapshot); apply: the fill.
        let row = HistoryRow { capture_ms, setup_ms, ..HistoryRow::recompute(&at, "initial fill", apply_ms, total_ms) };
        record_history(db, &row)?;
        Ok(Created { view: at.name.clone(), rows, strategy })
    }
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
pub(crate) fn drop_in(db: &dyn Sql, at: &Qualified) -> Result<()> {
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

pub(crate) fn query_tree(db: &dyn Sql, query: &str) -> Result<Option<String>> {
    PARSE_TREE.scalar(db, [query])
}

/// `compile` for a view being created: a subquery that needs a stage gets one (recorded in
/// `made`). A stage is made only for a query that binds incrementally on its own (a correlated
/// subquery does not), so that nothing DuckDB would refuse runs in the creating transaction.
pub(crate) fn compile_making_stages(
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
pub(crate) fn make_stage(
    db: &dyn Sql,
    sql: &str,
    catalog: &str,
    made: &std::cell::RefCell<Vec<Qualified>>,
    sums: Sums,
    source: &str,
) -> Result<Option<TableId>> {
    let known: Vec<(String,)> = read_all(&crate::sql::views::STAGE_FIND.rows(db, [sql])?)?;
    if let Some((name,)) = known.into_iter().next() {
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

/// How DuckDB finishes the query's AVGs on a host that may divide a sum cast to DOUBLE
/// (`strategy::avg_finish_of_plan`), from its optimized plan; None where the host always runs its
/// AVG aggregate, the query has no AVG, or the plan does not tell (openivm's model decides).
/// DuckDB's error on the EXPLAIN is returned: on DuckDB 2 it aborts the create's transaction.
fn avg_finish(db: &dyn Sql, query: &str, q: &crate::ir::ViewQuery) -> Result<Option<render::AvgRule>> {
    let crate::ir::Shape::Grouped { aggregates, .. } = &q.shape else { return Ok(None) };
    let averages = aggregates.iter().filter(|a| a.func == crate::ir::AggFunc::Avg).count();
    if averages == 0 || render::host_avg_rule() == render::AvgRule::Exact {
        return Ok(None);
    }
    let rows = db.query(&render::explain_json(query))?;
    let text = rows.first().and_then(|r| r.get(1)).and_then(|v| v.as_deref());
    let plan: Option<serde_json::Value> = text.and_then(|t| serde_json::from_str(t).ok());
    Ok(plan.and_then(|p| strategy::avg_finish_of_plan(&p, averages)))
}
