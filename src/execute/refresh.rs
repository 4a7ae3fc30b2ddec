//! Refresh: one view (`refresh`), a view after its stages and upstream views
//! (`refresh_cascade`), or every view in one round (`refresh_all`).
//!
//! A refresh runs in two transactions (`prepare`, then `apply`). The first captures the append-only tables (O(delta))
//! into temp tables and commits them, so that DuckDB's optimizer sees their real sizes (a table
//! created inside the transaction that reads it looks empty to it, and hash joins then build on
//! the wrong side). The second captures the diff tables, applies the delta terms (or
//! recomputes), and advances the feeds and the view's cursors. Its current-state scans of the
//! append-only tables are bounded by the watermarks the first reached, so rows committed in
//! between are left to the next refresh. If the second fails, nothing moved: the next refresh
//! captures the same rows again. A refresh that finds nothing to do writes nothing.

use std::time::Instant;

use super::apply::{finish, is_noop, report, NOTHING_CHANGED};
use super::cache::{Cache, Compiled};
use super::history::elapsed_ms;
use super::prepare::{discard_temp_tables, first_transaction, requested_mode, second_transaction};
use super::prepared::{First, Go, Options, Prepared};
pub use super::report::RefreshReport;
use super::round::{Round, ViewAt};
use crate::capture::feeds;
use crate::db::{in_transaction, Sql};
use crate::error::{Error, Result};
use crate::front::strategy::Strategy;
use crate::plan::mode::{Mode, Requested};
use crate::plan::terms::TermCounts;

/// What `openivm_refresh_all` does with a view that fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnError {
    /// Roll every view back and fail.
    Fail,
    /// Refresh and commit the others; report the failed views with their error.
    Skip,
}

impl OnError {
    pub fn parse(s: &str) -> Option<OnError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "fail" => Some(OnError::Fail),
            "skip" => Some(OnError::Skip),
            _ => None,
        }
    }
}

/// Refreshes every maintained view in one transaction, capturing each changed table once: the
/// first view over a table captures it and logs the batch for the others. With `OnError::Skip`,
/// a round that fails in a view is rolled back and run again without it (and without the views
/// that read a hidden stage that failed, since the stage is part of them), until one commits;
/// the failed views are reported last, with their error.
pub fn refresh_all(db: &dyn Sql, cache: &mut Cache, opts: Options, on_error: OnError) -> Result<Vec<RefreshReport>> {
    let mut failed: Vec<RefreshReport> = Vec::new();
    loop {
        let skipped: Vec<ViewAt> =
            failed.iter().map(|r| ViewAt { schema: r.schema.clone(), name: r.view.clone() }).collect();
        let outcome = super::widen::retrying_at(db, cache, |cache| {
            let mut at = None;
            netting_on_error(opts, |opts| round_of_all(db, cache, opts, &skipped, &mut at)).map_err(|e| (e, at))
        });
        match outcome {
            Ok(mut done) => {
                done.append(&mut failed);
                return Ok(done);
            }
            Err((e, Some(v))) if on_error == OnError::Skip && !skipped.contains(&v) => failed.push(RefreshReport {
                schema: v.schema,
                view: v.name,
                counts: TermCounts::default(),
                delta_rows: 0,
                duration_ms: 0.0,
                mode: None,
                mode_reason: String::new(),
                error: Some(e.to_string()),
            }),
            Err((e, _)) => return Err(e),
        }
    }
}

/// Fails a view that reads a hidden stage among the views `skipped`: the stage is part of it.
fn failed_stage(c: &Compiled, skipped: &[ViewAt]) -> Result<()> {
    let failed = |u: &&crate::ir::TableId| {
        u.schema == feeds::SCHEMA && skipped.iter().any(|s| s.schema == u.schema && s.name == u.name)
    };
    match c.q.upstream.iter().find(failed) {
        Some(stage) => Err(Error::InvalidArgument(format!(
            "its hidden stage {}.{} failed to refresh (see that row)",
            stage.schema, stage.name
        ))),
        None => Ok(()),
    }
}

/// One round of `refresh_all`, without the views `skipped`; `at`: the view it was refreshing
/// when it failed.
fn round_of_all(
    db: &dyn Sql,
    cache: &mut Cache,
    opts: Options,
    skipped: &[ViewAt],
    at: &mut Option<ViewAt>,
) -> Result<Vec<RefreshReport>> {
    let views: Vec<ViewAt> = super::view::all_views(db)?
        .into_iter()
        .map(|(schema, name)| ViewAt { schema, name })
        .filter(|v| !skipped.contains(v))
        .collect();
    let mut done = Vec::new();
    let auto = requested_mode(&cache.settings(db)?, &opts) == Requested::Auto;
    cache.begin_round();
    let diff_ms = in_transaction(db, || {
        if !views.is_empty() {
            let (home, _) = cache.defaults(db)?;
            cache.upgrade_metadata(db, &home)?;
        }
        let mut round = Round::default();
        if auto {
            round.shared = Round::decide_shared(db, cache, &views, at)?;
        }
        for view in &views {
            *at = Some(view.clone());
            let name = &view.to_string();
            let started = Instant::now();
            if cache.strategy(db, name)? == Strategy::Full {
                let r = super::full::refresh_in(db, cache, name, started)?;
                done.push((String::new(), Mode::Full, (r.duration_ms, 0.0), r));
                continue;
            }
            let (key, c, sizes) = cache.compiled(db, name)?;
            failed_stage(&c, skipped)?;
            let settings = cache.settings(db)?;
            let requested = requested_mode(&settings, &opts);
            let pruning = opts.fk_pruning.unwrap_or(settings.fk_pruning);
            let inputs = (0..c.tables.len()).map(|_| None).collect();
            let net_batches = opts.net_batches;
            let go = Go { key, c, sizes, inputs, requested, pruning, feeds: None, full_first: None, net_batches };
            let p = second_transaction(db, go, started, Some(&mut round))?;
            let (p, counts, total_ms) = finish(db, cache, p, started, Some(&mut round))?;
            done.push((p.key.clone(), p.mode, p.steady((total_ms, p.capture_ms)), report(&p, counts, started)));
        }
        *at = None;
        let diff_ms = std::mem::take(&mut round.diff_ms);
        round.close(db)?;
        Ok(diff_ms)
    });
    cache.end_round();
    let diff_ms = diff_ms?;
    for (feed, ms) in diff_ms {
        cache.diff_captured(feed, ms);
    }
    Ok(done
        .into_iter()
        .map(|(key, mode, (ms, capture_ms), r)| {
            cache.measured(&key, mode, ms, capture_ms);
            r
        })
        .collect())
}

/// Which of the maintained views a view reads are refreshed before it (`refresh(v, cascade)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Upstream {
    /// All of them, transitively (`cascade := true`).
    All,
    /// Only its hidden stages (and the stages those read): they are part of the view, not
    /// views the user chose to read.
    Stages,
}

/// `refresh(v)`: first the maintained views v reads that `upstream` names (and theirs), in
/// dependency order and each once, each in its own refresh; then v. One report per view
/// refreshed.
pub fn refresh_cascade(
    db: &dyn Sql,
    cache: &mut Cache,
    name: &str,
    opts: Options,
    upstream: Upstream,
) -> Result<Vec<RefreshReport>> {
    let mut order = Vec::new();
    upstream_order(db, cache, name, upstream, &mut order, 0)?;
    let mut reports = Vec::new();
    for up in &order {
        reports.push(refresh(db, cache, up, opts)?);
    }
    reports.push(refresh(db, cache, name, opts)?);
    Ok(reports)
}

/// Appends the maintained views `name` reads that `upstream` names, transitively, upstream
/// first (each once).
fn upstream_order(
    db: &dyn Sql,
    cache: &mut Cache,
    name: &str,
    upstream: Upstream,
    order: &mut Vec<String>,
    depth: usize,
) -> Result<()> {
    if depth > 64 {
        return Err(Error::Internal("maintained views read each other more than 64 deep".into()));
    }
    if cache.reads_no_maintained_view(db, name)? || cache.strategy(db, name)? == Strategy::Full {
        return Ok(());
    }
    let (_, c, _) = cache.compiled(db, name)?;
    let main = cache.defaults(db)?.0;
    for up in &c.q.upstream {
        let stage = up.schema.eq_ignore_ascii_case(feeds::SCHEMA);
        if !up.catalog.eq_ignore_ascii_case(&main) || !(upstream == Upstream::All || stage) {
            continue;
        }
        let up_name = format!("{}.{}", crate::render::ident(&up.schema), crate::render::ident(&up.name));
        upstream_order(db, cache, &up_name, upstream, order, depth + 1)?;
        if !order.contains(&up_name) {
            order.push(up_name);
        }
    }
    Ok(())
}

pub fn refresh(db: &dyn Sql, cache: &mut Cache, name: &str, opts: Options) -> Result<RefreshReport> {
    super::widen::retrying(db, cache, |cache| {
        netting_on_error(opts, |opts| refresh_once(db, cache, name, opts)).map_err(|e| (e, Some(name.to_string())))
    })
}

/// Runs a refresh, and once more with every trigger batch netted if it fails on an error of
/// DuckDB's: a batch read as it is (`capture::trigger`) may hold a row inserted and deleted (or
/// updated away) between two refreshes, on which a view's expression fails (a cast) where a
/// recompute, and a netted batch, would not meet it. A refresh that fails so fails twice.
fn netting_on_error<T>(opts: Options, mut call: impl FnMut(Options) -> Result<T>) -> Result<T> {
    match call(opts) {
        Err(Error::Sql { .. }) if !opts.net_batches => call(Options { net_batches: true, ..opts }),
        other => other,
    }
}

/// One attempt of `refresh`.
fn refresh_once(db: &dyn Sql, cache: &mut Cache, name: &str, opts: Options) -> Result<RefreshReport> {
    if cache.strategy(db, name)? == Strategy::Full {
        return super::full::refresh(db, cache, name);
    }
    let started = Instant::now();
    // A refresh whose first transaction made no temp table (its batches are logged already, or
    // nothing changed) goes on in the same transaction: its tables are then as the capture saw
    // them, so the append-only states need no bound, and its merge renders the same SQL as in
    // the last such refresh (whose plan is kept).
    let first = in_transaction(db, || match first_transaction(db, cache, name, &opts)? {
        First::Go(go) if go.temp_tables().is_empty() => {
            let go = go.in_one_transaction();
            let mut p = second_transaction(db, go, started, None)?;
            p.t2_started = started;
            finish(db, cache, p, started, None).map(Ok)
        }
        first => Ok(Err(first)),
    })?;
    let go = match first {
        Ok(done) => return Ok(finished(cache, done, started)),
        Err(First::NothingToDo { c }) => {
            cache.forget_comment();
            let counts = TermCounts { total: c.q.term_count(), empty_skipped: c.q.term_count(), ..Default::default() };
            return Ok(RefreshReport {
                schema: c.view.at.schema.clone(),
                view: c.view.at.name.clone(),
                counts,
                delta_rows: 0,
                duration_ms: elapsed_ms(started),
                mode: Some(Mode::Incremental),
                mode_reason: NOTHING_CHANGED.into(),
                error: None,
            });
        }
        Err(First::Go(go)) => go,
    };
    let first_inputs = go.temp_tables();
    // The view's comment read with the catalog was of the first transaction.
    cache.forget_comment();
    let outcome = in_transaction(db, || {
        let p = second_transaction(db, go, started, None)?;
        finish(db, cache, p, started, None)
    });
    let done = match outcome {
        Ok(v) => v,
        Err(e) => {
            discard_temp_tables(db, &first_inputs);
            return Err(e);
        }
    };
    Ok(finished(cache, done, started))
}

/// The report of a refresh that `finish`ed, its times noted for auto mode.
fn finished(cache: &mut Cache, (p, counts, total_ms): (Prepared, TermCounts, f64), started: Instant) -> RefreshReport {
    if !is_noop(&p) {
        let (ms, capture_ms) = p.steady((total_ms, p.capture_ms));
        cache.measured(&p.key, p.mode, ms, capture_ms);
    }
    report(&p, counts, started)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refresh_failing_on_duckdbs_error_runs_once_more_with_batches_netted() {
        let mut seen = Vec::new();
        let failing = netting_on_error(Options::default(), |o| -> Result<()> {
            seen.push(o.net_batches);
            Err(Error::sql("Conversion Error: Could not convert string '4x' to INT32", "MERGE ..."))
        });
        assert!(failing.is_err());
        assert_eq!(seen, [false, true]);

        let mut seen = Vec::new();
        let other = netting_on_error(Options::default(), |o| -> Result<()> {
            seen.push(o.net_batches);
            Err(Error::InvalidArgument("no such view".into()))
        });
        assert!(other.is_err());
        assert_eq!(seen, [false]);

        let mut seen = Vec::new();
        let passing = netting_on_error(Options::default(), |o| {
            seen.push(o.net_batches);
            Ok(1)
        });
        assert_eq!((passing.ok(), seen), (Some(1), vec![false]));
    }
}
