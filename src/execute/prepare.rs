//! The two transactions of a refresh up to its program: capture (O(delta) sources in the first,
//! diff and trigger feeds in the second), key checks, the planner and the mode, giving
//! `Prepared`.

use std::collections::HashMap;
use std::time::Instant;

use super::cache::{Cache, Compiled};
use super::history::elapsed_ms;
use super::key_checks::{net_delta, passed_key_checks};
use super::prepared::{feed_of, First, Go, InRound, Input, Options, Prepared, Tracking};
pub use super::report::RefreshReport;
use super::round::Round;
use crate::capture::batch_facts::BatchFacts;
use crate::capture::view_delta;
use crate::capture::{self, feeds, feeds::Feed, DeltaStats, Fresh, SourceKind};
use crate::db::Sql;
use crate::error::{Error, Result};
use crate::front::strategy::{self};
use crate::plan::fk_pruning::{self, FkPruning};
use crate::plan::mode::{self, Mode, Requested};
use crate::plan::planner::{self, Rule};
use crate::plan::terms::DeltaShape;
use crate::render::{self, Qualified};

/// Per table of the view: whether it is the parent of a relation the join proves, which pruning
/// may skip (its delta's deletes may need netting, `view_delta::view_delta`).
pub(crate) fn prunable_parents(c: &Compiled, pruning: bool) -> Vec<bool> {
    let mut out = vec![false; c.tables.len()];
    if pruning {
        for r in fk_pruning::proven_relations(&c.q, &c.fks) {
            if let Some(k) = c.leaf_table.get(r.parent_leaf) {
                out[*k] = true;
            }
        }
    }
    out
}

pub(crate) fn requested_mode(c: &super::cache::Settings, opts: &Options) -> Requested {
    opts.mode.or_else(|| Requested::parse(&c.refresh_mode)).unwrap_or(Requested::Auto)
}

pub(crate) fn first_transaction(db: &dyn Sql, cache: &mut Cache, name: &str, opts: &Options) -> Result<First> {
    let (key, c, sizes) = cache.compiled(db, name)?;
    let settings = cache.settings(db)?;
    let requested = requested_mode(&settings, opts);
    let pruning = opts.fk_pruning.unwrap_or(settings.fk_pruning);
    let at = &c.view.at;
    let (feeds, readers) = match cache.take_feed_rows() {
        Some(rows) if rows.of(&at.catalog) => rows.view_and_readers(&at.schema, &at.name),
        _ => feeds::of_view_and_readers(db, &at.catalog, &at.schema, &at.name, true)?,
    };
    let mut inputs: Vec<Option<Input>> = Vec::new();
    // Much appended to append-only tables: recompute, and capture only what other views need.
    let full_first = {
        let appended: Option<Vec<u64>> = c
            .leaf_table
            .iter()
            .map(|&k| {
                let f = feed_of(&feeds, &c, k)?;
                let append_only = matches!(f.kind, SourceKind::AppendOnly(_)) && f.kind == c.sources[k];
                append_only.then(|| (sizes[k] - f.size_seen).max(0) as u64)
            })
            .collect();
        let rows: Vec<u64> = c.leaf_table.iter().map(|&k| sizes[k].max(0) as u64).collect();
        match appended {
            Some(a) => mode::full_before_capture(requested, &a, &rows),
            None if requested == Requested::Full => mode::full_before_capture(requested, &[], &[]),
            None => lake_deletions_first(db, &c, &feeds, requested, &rows)?,
        }
    };
    // A full refresh, or a view whose feed was rebuilt, captures in the second transaction only.
    let later = full_first.is_some() || feeds.iter().any(|f| f.reader.cursor < 0);
    let mut captured: Vec<(usize, Feed, Fresh)> = Vec::new();
    let mut to_capture: Vec<(usize, Feed)> = Vec::new();
    for (k, &size) in sizes.iter().enumerate() {
        inputs.push(None);
        if later {
            continue;
        }
        let Some(feed) = feed_of(&feeds, &c, k) else {
            continue;
        };
        let declared = &c.sources[k];
        if !capture::captured_first(&feed.kind) || &feed.kind != declared {
            continue; // captured in the second transaction
        }
        if capture::unchanged_now(db, &feed, size)? {
            let fresh = feed.unchanged();
            captured.push((k, feed, fresh));
        } else {
            to_capture.push((k, feed));
        }
    }
    // A batch that may be the open batch alone is taken where it lies once the log holds
    // nothing else (not on a read-only database, where the refresh fails with its own error).
    for (k, feed) in to_capture.iter_mut() {
        if feed.in_place_hint(sizes[*k]) && feed.log_rows > 0 && !cache.read_only(db, &at.catalog)? {
            feeds::trim_applied(db, feed)?;
        }
    }
    let requests: Vec<(&Feed, String, i64)> =
        to_capture.iter().map(|(k, f)| (f, format!("fresh_{k}"), sizes[*k])).collect();
    let results = capture::capture_all(db, &requests)?;
    for ((k, feed), fresh) in to_capture.into_iter().zip(results) {
        match fresh {
            Ok(fresh) => captured.push((k, feed, fresh)),
            // A DuckLake range that cannot be read exactly: the second transaction captures it
            // again and recomputes.
            Err(Error::BrokenPromise(_)) => {}
            Err(e) => return Err(e),
        }
    }
    captured.sort_by_key(|(k, _, _)| *k);
    // The deltas: those that are whole logs found by one statistics query for all of them.
    let parents = prunable_parents(&c, pruning);
    let logged: Vec<(&Feed, &Fresh, Option<&[crate::ir::ColumnDef]>)> = captured
        .iter()
        .map(|(k, f, fr)| {
            let columns = &c.read_columns[*k][..];
            (f, fr, view_delta::nets_deletes(f, columns, parents[*k]).then_some(columns))
        })
        .collect();
    let (found, unnetted) = view_delta::logged_deltas(db, &logged, true)?;
    for (j, ((k, feed, fresh), found)) in captured.into_iter().zip(found).enumerate() {
        let delta = match found {
            Some(d) => d,
            None => view_delta::view_delta(
                db,
                &feed,
                &fresh,
                &c.read_columns[k],
                parents[k],
                &capture::temp_name("delta", k),
            )?,
        };
        let bounded = capture::bounded_state(&feed, &fresh);
        let input = Input { unnetted: unnetted.contains(&j), ..Input::new(feed, fresh, delta, bounded, None) };
        inputs[k] = Some(input.parent(parents[k]));
    }
    // Where the only rows are in logs taken without netting, netting decides whether there is
    // anything to do at all (an update of a column the view does not read is nothing).
    let unnetted_only = inputs.iter().flatten().any(|i| i.unnetted)
        && inputs.iter().flatten().all(|i| i.unnetted || (i.stats.rows == 0 && i.fresh.delta.is_none()));
    if unnetted_only {
        for (k, i) in inputs.iter_mut().enumerate() {
            if let Some(i) = i.as_mut().filter(|i| i.unnetted) {
                net_delta(db, i, &c.read_columns[k], &capture::temp_name("delta", k))?;
            }
        }
    }
    let all_captured = inputs.iter().all(|i| i.is_some());
    let nothing = all_captured
        && inputs.iter().flatten().all(|i| i.stats.rows == 0 && !i.feed.moved_by(&i.fresh))
        && requested != Requested::Full;
    if nothing {
        return Ok(First::NothingToDo { c });
    }
    let net_batches = opts.net_batches;
    Ok(First::Go(Go {
        key,
        c,
        sizes,
        inputs,
        requested,
        pruning,
        feeds: Some((feeds, readers)),
        full_first,
        net_batches,
    }))
}

/// Auto's choice before capture for a view with DuckLake tables only it reads whose pending
/// snapshots delete rows (`mode::lake_deletions_before_capture`); None when there is none.
pub(crate) fn lake_deletions_first(
    db: &dyn Sql,
    c: &Compiled,
    feeds: &[Feed],
    requested: Requested,
    rows: &[u64],
) -> Result<Option<String>> {
    if requested != Requested::Auto || rows.iter().sum::<u64>() < mode::FULL_MIN_ROWS {
        return Ok(None);
    }
    let mut deleting = Vec::new();
    for &k in &c.leaf_table {
        let d = match feed_of(feeds, c, k) {
            Some(f) if f.reader.consumers == 1 && f.reader.cursor >= 0 && f.kind == c.sources[k] => match f.kind {
                SourceKind::DuckLake(id) => capture::ducklake::deletes_pending(db, &f, id)?,
                _ => false,
            },
            _ => false,
        };
        deleting.push(d);
    }
    Ok(mode::lake_deletions_before_capture(requested, &deleting, rows))
}

pub(crate) fn second_transaction(
    db: &dyn Sql,
    go: Go,
    capture_started: Instant,
    mut round: Option<&mut Round>,
) -> Result<Prepared> {
    let Go { key, c, sizes, inputs: mut captured, requested, pruning, feeds: known_feeds, full_first, net_batches } =
        go;
    let t2_started = Instant::now();
    let at = c.view.at.clone();
    // The feeds cannot change between the two transactions of one refresh (only openivm writes
    // them, and a call holds the connection throughout).
    let (feeds, readers) = match (known_feeds, round.as_deref_mut()) {
        (Some(f), _) => f,
        (None, Some(r)) => {
            let rows = match &mut r.feed_rows {
                Some(rows) if rows.of(&at.catalog) => rows,
                slot => slot.insert(feeds::FeedRows::read(db, &at.catalog)?),
            };
            rows.view_and_readers(&at.schema, &at.name)
        }
        (None, None) => feeds::of_view_and_readers(db, &at.catalog, &at.schema, &at.name, true)?,
    };
    let detached = (0..c.tables.len()).any(|k| feed_of(&feeds, &c, k).is_none());
    let has_diff = c.sources.iter().any(|s| matches!(s, SourceKind::Diff));
    let table_rows: Vec<i64> = sizes.clone();
    // The rows the diff source reads at each capture: a capture that reads few is never what
    // makes an incremental refresh dear (the terms are priced per batch), and its times are too
    // small to tell apart.
    let diff_rows: u64 = c
        .leaf_table
        .iter()
        .filter(|&&k| matches!(c.sources[k], SourceKind::Diff))
        .map(|&k| table_rows[k].max(0) as u64)
        .sum();
    let skip = if has_diff && !detached {
        let diff_feeds: Vec<i64> = feeds.iter().filter(|f| matches!(f.kind, SourceKind::Diff)).map(|f| f.id).collect();
        match round.as_deref().and_then(|r| r.verdict(&diff_feeds)) {
            Some(verdict) => verdict,
            None => mode::skip_capture(
                requested,
                diff_rows,
                c.times.incremental_ms,
                c.times.incremental_ran,
                c.times.full_ms,
            ),
        }
    } else {
        None
    };
    if detached || skip.is_some() {
        // Recompute without capturing: a detached view reads no feed; re-attaching starts at
        // the tables' state in this transaction.
        for i in captured.iter().flatten() {
            capture::discard(db, &i.fresh)?;
            drop_delta(db, i)?;
        }
        let resumed = match requested {
            Requested::Auto if detached => mode::resume_tracking(
                has_diff,
                diff_rows,
                round.is_none(),
                c.times.incremental_capture_ms,
                c.times.full_ms,
            ),
            _ => None,
        };
        let reattach = detached && (requested == Requested::Incremental || resumed.is_some());
        let reason = match (&skip, reattach) {
            (Some(r), _) => r.clone(),
            (None, true) => resumed
                .unwrap_or_else(|| "the view tracks its tables again (mode := 'incremental'); recomputed once".into()),
            (None, false) => mode::UNTRACKED.into(),
        };
        return Ok(Prepared {
            key,
            c,
            inputs: vec![],
            relations: vec![],
            pruning: FkPruning::default(),
            unpruned: vec![],
            covered: vec![],
            plan: vec![],
            nterm: None,
            merge_keys: None,
            mode: Mode::Full,
            reason,
            readers,
            tracking: match (skip.is_some(), reattach) {
                (true, _) => Tracking::Stop,
                (false, true) => Tracking::Resume,
                (false, false) => Tracking::Keep,
            },
            capture_ms: elapsed_ms(capture_started),
            setup_ms: 0.0,
            t2_started,
        });
    }
    let mut inputs = Vec::new();
    let mut rebuilt: Vec<String> = Vec::new();
    let mut setup_ms = 0.0;
    let parents = prunable_parents(&c, pruning);
    let unchanged_small = unchanged_small_diffs(db, &c, &feeds, &captured, &sizes, round.is_some())?;
    let inspected = inspect_triggers(db, &c, &feeds, &captured, round.as_deref())?;
    for k in 0..c.tables.len() {
        if let Some(i) = captured[k].take() {
            inputs.push(i);
            continue;
        }
        let Some(feed) = feed_of(&feeds, &c, k) else {
            return Err(Error::Internal("a feed disappeared during a refresh".into()));
        };
        // In a refresh of several views, a feed is captured once; the views after the first
        // read its batch from the round (or, when it was empty, find nothing new).
        let mut feed = feed;
        let mut switch_to = (feed.kind != c.sources[k]).then(|| c.sources[k].clone());
        let columns = &c.read_columns[k];
        let name = capture::temp_name("delta", k);
        // A recompute decided before capture needs no batch of a table only this view reads.
        // (Not with writes recorded through openivm waiting: those must be applied or dropped.)
        let sole = matches!(feed.kind, SourceKind::AppendOnly(_) | SourceKind::DuckLake(_))
            && feed.reader.consumers == 1
            && feed.pending_rows == 0;
        let restarted =
            if full_first.is_some() && round.is_none() && sole && switch_to.is_none() && feed.reader.cursor >= 0 {
                capture::rebaseline(db, &feed, sizes[k])?
            } else {
                None
            };
        if let Some(fresh) = restarted {
            let bounded = capture::lake_state(&feed, &fresh);
            inputs.push(Input::new(feed, fresh, (None, DeltaStats::default()), bounded, switch_to));
            continue;
        }
        if let Some(r) = round.as_deref_mut() {
            if let Some((batch, seq, _)) = r.batches.get(&feed.id) {
                // The feed's log ends before the round's batch: read it as of the batch before.
                let mut as_of = feed.clone();
                as_of.seq = seq - 1;
                let (delta, stats) = view_delta::view_delta(db, &as_of, batch, columns, parents[k], &name)?;
                let shares = delta.is_some() && delta == batch.delta;
                let fresh = feed.unchanged();
                let bounded = capture::lake_state(&feed, &fresh);
                let round = if shares { InRound::Shares } else { InRound::Alone };
                inputs.push(Input { round, ..Input::new(feed, fresh, (delta, stats), bounded, switch_to) });
                continue;
            }
        }
        let first_in_round = round.as_deref_mut().map(|r| r.captured.insert(feed.id));
        let fresh = if first_in_round == Some(false)
            || unchanged_small[k]
            || (switch_to.is_none() && capture::unchanged_now(db, &feed, sizes[k])?)
        {
            feed.unchanged()
        } else {
            // A round keeps its batches until its end: one name per feed.
            let fresh_name =
                if first_in_round.is_some() { format!("fresh_f{}", feed.id) } else { format!("fresh_{k}") };
            let capture_started = Instant::now();
            let captured = match inspected.get(&feed.id) {
                Some(seen) if feed.kind == SourceKind::Trigger => {
                    capture::trigger::capture_inspected(db, &feed, &fresh_name, sizes[k], seen, net_batches)
                }
                _ => capture::capture(db, &feed, &fresh_name, sizes[k]),
            };
            match captured {
                Ok(fresh) => {
                    if let (Some(r), SourceKind::Diff) = (round.as_deref_mut(), &feed.kind) {
                        r.diff_ms.insert(feed.id, elapsed_ms(capture_started));
                    }
                    if capture::trigger::installing(&feed) {
                        setup_ms += elapsed_ms(capture_started);
                    }
                    fresh
                }
                // A full refresh repairs a broken promise, and a revoked declaration is no
                // promise any more: the feed restarts from the table as it is, this view is
                // recomputed, and the feed's other views recompute at their next refresh.
                // A DuckLake range that cannot be read exactly (expired snapshots, a table
                // created again), and a table whose triggers are gone (dropped, or the table
                // created again), are repaired the same way, whatever the mode.
                Err(Error::BrokenPromise(why))
                    if requested == Requested::Full
                        || switch_to.is_some()
                        || matches!(feed.kind, SourceKind::DuckLake(_) | SourceKind::Trigger) =>
                {
                    feeds::rebuild(db, &mut feed, &c.sources[k], &at.schema, &at.name)?;
                    rebuilt.push(why);
                    switch_to = None;
                    feed.unchanged()
                }
                Err(e) => return Err(e),
            }
        };
        // A recompute decided before capture reads the tables, not the view's delta: the
        // capture above was for the feed's other views.
        let (delta, stats) = if full_first.is_some() {
            (None, DeltaStats::default())
        } else {
            view_delta::view_delta(db, &feed, &fresh, columns, parents[k], &name)?
        };
        let round = match first_in_round == Some(true) && fresh.delta.is_some() {
            true => InRound::Captured,
            false => InRound::Alone,
        };
        let bounded = capture::lake_state(&feed, &fresh);
        inputs.push(Input { round, ..Input::new(feed, fresh, (delta, stats), bounded, switch_to) }.parent(parents[k]));
    }
    let capture_ms = elapsed_ms(capture_started);
    let mut shapes: Vec<DeltaShape> = c.leaf_table.iter().map(|&k| inputs[k].stats.shape()).collect();
    let (relations, fk_pruning, unpruned, covered) = if pruning {
        let relations = fk_pruning::proven_relations(&c.q, &c.fks);
        let (coverage, checks) = loop {
            let coverage = fk_pruning::coverage_checks(&relations, &shapes);
            let mut checks = passed_key_checks(
                db,
                &c,
                &inputs,
                &table_rows,
                &fk_pruning::key_checks(&relations, &shapes),
                &coverage.iter().map(|&i| &relations[i]).collect::<Vec<_>>(),
            )?;
            for (k, found) in checks.learned.drain() {
                inputs[k].fresh.facts.get_or_insert_with(|| BatchFacts::new(found.seq)).absorb(found);
            }
            // A parent whose log was taken without netting and failed its check: netted, it may
            // pass (an update of a column the view does not read cancels); check again.
            // Once per table: two leaves of one table (a self-join) share its delta.
            let mut to_net: Vec<usize> =
                checks.failed.iter().map(|(leaf, _)| c.leaf_table[*leaf]).filter(|&k| inputs[k].unnetted).collect();
            to_net.sort_unstable();
            to_net.dedup();
            if to_net.is_empty() {
                break (coverage, checks);
            }
            for k in to_net {
                net_delta(db, &mut inputs[k], &c.read_columns[k], &capture::temp_name("delta", k))?;
            }
            shapes = c.leaf_table.iter().map(|&k| inputs[k].stats.shape()).collect();
        };
        let pruned = fk_pruning::fk_pruning(&relations, &shapes, |k| checks.passed.contains(k));
        let unpruned = checks.failed.into_iter().filter(|(leaf, _)| pruned.skip & (1 << leaf) == 0).collect();
        let covered = coverage.into_iter().zip(checks.covered).filter_map(|(i, ok)| ok.then_some(i)).collect();
        (relations, pruned, unpruned, covered)
    } else {
        (vec![], FkPruning::default(), vec![], vec![])
    };
    // All-DuckLake views can read their tables' old states (time travel): the planner may then
    // take the N-term rule.
    let lake_tables: Vec<super::nterm::TableInput> = inputs
        .iter()
        .map(|i| super::nterm::TableInput {
            table: &i.feed.table,
            kind: &i.feed.kind,
            old_snapshot: super::nterm::old_snapshot(&i.feed),
        })
        .collect();
    let all_lake = super::nterm::all_in_ducklake(&lake_tables);
    let aliases: Vec<String> = c.q.leaves.iter().map(|l| l.alias.clone()).collect();
    let spans = c.q.spans();
    let leaf_rows: Vec<u64> = c.leaf_table.iter().map(|&k| inputs[k].stats.rows).collect();
    let leaf_table_rows: Vec<u64> = c.leaf_table.iter().map(|&k| table_rows[k].max(0) as u64).collect();
    let deletes = shapes.iter().any(|s| s.contains(DeltaShape::DELETES));
    let per_group = strategy::recomputed_per_group(&c.q, deletes);
    let mode_facts = planner::ModeFacts {
        requested,
        stale: inputs.iter().any(|i| i.feed.reader.cursor < 0),
        rebuilt: &rebuilt,
        full_first: full_first.as_deref(),
        delta_rows: &leaf_rows,
        table_rows: &leaf_table_rows,
        per_group: per_group.as_deref(),
        groups_recomputable: c.q.groups_recomputable(),
    };
    let facts = planner::Facts {
        spans: &spans,
        shapes: &shapes,
        relations: &relations,
        fk_skip: fk_pruning.skip,
        old_states: if all_lake { planner::OldStates::Readable } else { planner::OldStates::Unreadable },
        merge_keys: c.merge_keys.as_ref(),
        mode: Some(mode_facts),
        aliases: &aliases,
    };
    let mut program = planner::plan(&facts);
    let mut nterm = None;
    if program.rule == Rule::NTerm {
        match super::nterm::old_states(db, &lake_tables)? {
            Ok(old) => {
                let why = program.rule_reason.clone().unwrap_or_default();
                nterm =
                    Some(super::nterm::NTerm { order: program.order.clone(), terms: program.nterm.clone(), old, why })
            }
            Err(why) => {
                program = planner::plan(&planner::Facts { old_states: planner::OldStates::Refused(&why), ..facts })
            }
        }
    }
    Ok(Prepared {
        key,
        c,
        inputs,
        relations,
        pruning: fk_pruning,
        unpruned,
        covered,
        plan: program.inclusion_exclusion,
        nterm,
        merge_keys: program.merge_keys,
        mode: program.mode,
        reason: program.why,
        readers,
        tracking: Tracking::Keep,
        capture_ms,
        setup_ms,
        t2_started,
    })
}

/// Per table of the view: whether it is a small table on the diff source (`diff::PROBED_ROWS`)
/// found equal to its snapshot by one statement for all of them, so that its capture is
/// skipped. Not in a round, whose shared diffs are captured once for all its views.
pub(crate) fn unchanged_small_diffs(
    db: &dyn Sql,
    c: &Compiled,
    feeds: &[Feed],
    captured: &[Option<Input>],
    sizes: &[i64],
    in_round: bool,
) -> Result<Vec<bool>> {
    let mut out = vec![false; c.tables.len()];
    if in_round {
        return Ok(out);
    }
    let probed: Vec<(usize, Feed)> = (0..c.tables.len())
        .filter(|&k| captured[k].is_none() && sizes[k] <= capture::diff::PROBED_ROWS)
        .filter_map(|k| feed_of(feeds, c, k).map(|f| (k, f)))
        .filter(|(k, f)| f.kind == SourceKind::Diff && c.sources[*k] == SourceKind::Diff && f.reader.cursor >= 0)
        .collect();
    let changed = capture::diff::changed(db, &probed.iter().map(|(_, f)| f).collect::<Vec<_>>())?;
    for ((k, _), changed) in probed.iter().zip(changed) {
        out[*k] = !changed;
    }
    Ok(out)
}

/// The view's trigger feeds this refresh captures, inspected in one statement (their logs'
/// unstamped rows and their triggers' health) instead of one per feed.
pub(crate) fn inspect_triggers(
    db: &dyn Sql,
    c: &Compiled,
    feeds: &[Feed],
    captured: &[Option<Input>],
    round: Option<&Round>,
) -> Result<HashMap<i64, capture::trigger::Inspection>> {
    let mut asked: Vec<Feed> = Vec::new();
    for k in (0..c.tables.len()).filter(|&k| captured[k].is_none()) {
        let Some(f) = feed_of(feeds, c, k) else { continue };
        let taken = round.is_some_and(|r| r.captured.contains(&f.id));
        if f.kind == SourceKind::Trigger
            && c.sources[k] == SourceKind::Trigger
            && !taken
            && !asked.iter().any(|a| a.id == f.id)
        {
            asked.push(f);
        }
    }
    capture::trigger::inspect(db, &asked.iter().collect::<Vec<_>>())
}

/// Drops the temp tables the first transaction committed, after the second failed or was only
/// explained (best effort: they vanish with the connection anyway).
pub(crate) fn discard_temp_tables(db: &dyn Sql, tables: &[(Fresh, Option<Qualified>)]) {
    for (fresh, delta) in tables {
        let _ = capture::discard(db, fresh);
        if let Some(d) = delta.as_ref().filter(|d| view_delta::owned(d)) {
            let _ = db.execute(&render::drop_table(d));
        }
    }
}

pub(crate) fn drop_delta(db: &dyn Sql, i: &Input) -> Result<()> {
    if let Some(d) = i.delta.as_ref().filter(|d| view_delta::owned(d)) {
        if Some(d) != i.fresh.delta.as_ref() && i.round != InRound::Shares {
            db.execute(&render::drop_table(d))?;
        }
    }
    Ok(())
}
