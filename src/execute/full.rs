//! The `full` strategy: a view whose query has no incremental rule is stored as the query's
//! result and recomputed whole in every refresh's transaction.
//!
//! Creating one checks what `strategy` checks (deterministic, no session state, no value with a
//! time zone, only tables as sources) on DuckDB's parse tree and bound plan of the query, stores
//! `CREATE TABLE openivm_data_v AS <query>` and creates the view `v` over it; a query whose
//! outermost level orders its rows (ORDER BY, with or without LIMIT) keeps that order, since an
//! insert preserves the order of the query it inserts and the view reads the rows by rowid. A
//! refresh always recomputes (it has no change state to tell it that nothing changed).

use std::time::Instant;

use super::cache::Cache;
use super::history::{elapsed_ms, record_history, Created, HistoryRow};
use super::report::RefreshReport;
use super::standing::check_standing;
use super::view::{describe, find_view, free_data_table, json_of, plan_facts, NewView, ViewRecord};
use crate::db::Sql;
use crate::error::{Error, Result};
use crate::front::catalog::SqlCatalog;
use crate::front::strategy::{self, FunctionFacts, Strategy};
use crate::plan::mode::Mode;
use crate::render::{self, OutputColumn, Qualified};
use crate::sql::catalog::PARSE_TREE;
use crate::sql::views::MARK_REFRESHED as VIEW_MARK_REFRESHED;

/// The names and types of a full view's output, as stored in `signature`: a refresh whose
/// query no longer gives them fails as a schema change instead of inserting other columns.
fn output_signature(outputs: &[OutputColumn]) -> String {
    serde_json::to_string(&outputs.iter().map(|o| (&o.name, &o.ty)).collect::<Vec<_>>()).unwrap_or_default()
}

/// Checks that a query the incremental rules do not cover may be maintained by recomputing it,
/// and returns whether its outermost level orders its rows.
fn check(db: &dyn Sql, query: &str) -> Result<bool> {
    let tree = json_of(db, PARSE_TREE, query, "parse tree")?;
    let node = tree
        .get("statements")
        .and_then(|s| s.get(0))
        .and_then(|s| s.get("node"))
        .ok_or_else(|| Error::Internal("the parse tree has no statement".into()))?;
    let scan = strategy::scan(node);
    let catalog = SqlCatalog::new(db);
    strategy::check_full(&scan, &mut |name| {
        use crate::front::bind::Catalog;
        Ok(catalog.function(name)?.map(|f| FunctionFacts { deterministic: f.deterministic }))
    })?;
    // DuckDB binds the query (its errors are the user's answer), expanding views and CTEs.
    let plan = plan_facts(db, query)?;
    strategy::check_time_zones(&plan)?;
    for t in &plan.tables {
        // The stored results (openivm.data_*) are what maintained views show: fine to read.
        let name = t.name.to_ascii_lowercase();
        let internal = t.schema.eq_ignore_ascii_case(crate::store::metadata::SCHEMA);
        let own = (internal && !name.starts_with("data_")) || (!internal && name.starts_with("openivm_"));
        if own {
            return Err(Error::Refused(format!(
                "the extension's own tables as sources ('{}.{}': every refresh writes them)",
                t.schema, t.name
            )));
        }
    }
    Ok(scan.ordered)
}

/// Creates a full view (in the caller's transaction). `why` is what the incremental rules
/// could not cover; it becomes the view's `strategy_reason`.
pub fn create(
    db: &dyn Sql,
    at: &Qualified,
    query: &str,
    why: &Error,
    outputs: &[OutputColumn],
    started: Instant,
) -> Result<Created> {
    let ordered = check(db, query)?;
    let reason = match why {
        Error::Unsupported(what) | Error::Bind(what) => what.clone(),
        other => other.to_string(),
    };
    let data = free_data_table(db, at)?;
    db.execute(&render::create_table_as(&data, query))?;
    db.execute(&render::create_view(at, &render::full_view(&data, outputs, ordered)))?;
    let marker = super::view::mark_as_ours(db, at)?;
    NewView {
        at,
        query,
        leaves: "[]",
        kind: "query",
        data_table: &data.name,
        signature: &output_signature(outputs),
        marker: &marker,
        strategy: Strategy::Full,
        strategy_reason: &reason,
        avg_finish: None,
    }
    .insert(db)?;
    let rows = db.scalar_int(&render::count_rows(at), &[])?;
    let total_ms = elapsed_ms(started);
    record_history(db, &HistoryRow::recompute(at, "initial fill (strategy full)", total_ms, total_ms))?;
    Ok(Created { view: at.name.clone(), rows, strategy: Strategy::Full })
}

/// Why the view is recomputed, as explain and the history say it.
pub fn mode_reason(view: &ViewRecord) -> String {
    format!(
        "strategy full: the whole view is recomputed at every refresh (no incremental rule for {})",
        view.strategy_reason.as_deref().unwrap_or("its query")
    )
}

/// Refreshes a full view in the caller's transaction: the stored result is replaced by the
/// query's result now.
pub fn refresh_in(db: &dyn Sql, cache: &mut Cache, name: &str, started: Instant) -> Result<RefreshReport> {
    let defaults = cache.defaults(db)?;
    let view = find_view(db, &defaults, name)?;
    let at = &view.at;
    if cache.read_only(db, &at.catalog)? {
        return Err(Error::InvalidArgument(format!(
            "the database '{}' is attached read-only, and '{}' (strategy full) is recomputed at every refresh; \
             open it read-write to refresh",
            at.catalog, at.name
        )));
    }
    // A full view's comment is read here, never ahead (by `Cache::compiled`).
    cache.forget_comment();
    check_standing(db, cache, &view)?;
    let outputs = describe(db, &view.query)?;
    if output_signature(&outputs) != view.signature {
        return Err(Error::Stale {
            view: name.to_string(),
            detail: "its query now gives other output columns or types".into(),
        });
    }
    let apply_started = Instant::now();
    db.execute(&render::delete_all(&view.data))?;
    db.execute(&render::insert_into(&view.data, &view.query))?;
    VIEW_MARK_REFRESHED.run(db, [&at.schema, &at.name])?;
    let apply_ms = elapsed_ms(apply_started);
    let total_ms = elapsed_ms(started);
    record_history(db, &HistoryRow::recompute(at, &mode_reason(&view), apply_ms, total_ms))?;
    Ok(RefreshReport {
        schema: at.schema.clone(),
        view: at.name.clone(),
        counts: Default::default(),
        delta_rows: 0,
        duration_ms: elapsed_ms(started),
        mode: Some(Mode::Full),
        mode_reason: mode_reason(&view),
        error: None,
    })
}

/// Refreshes a full view in a transaction of its own.
pub fn refresh(db: &dyn Sql, cache: &mut Cache, name: &str) -> Result<RefreshReport> {
    let started = Instant::now();
    crate::db::in_transaction(db, || refresh_in(db, cache, name, started))
}

/// The view's record, for explain and verify.
pub fn record(db: &dyn Sql, cache: &mut Cache, name: &str) -> Result<ViewRecord> {
    let defaults = cache.defaults(db)?;
    find_view(db, &defaults, name)
}
