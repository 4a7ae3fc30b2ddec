//! Refresh and explain.
//!
//! A refresh runs in two transactions. The first captures the append-only tables (O(delta))
//! into temp tables and commits them, so that DuckDB's optimizer sees their real sizes (a table
//! created inside the transaction that reads it looks empty to it, and hash joins then build on
//! the wrong side). The second captures the diff tables, applies the delta terms (or
//! recomputes), and advances the feeds and the view's cursors. Its current-state scans of the
//! append-only tables are bounded by the watermarks the first reached, so rows committed in
//! between are left to the next refresh. If the second fails, nothing moved: the next refresh
//! captures the same rows again. A refresh that finds nothing to do writes nothing.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use super::cache::{Cache, Compiled};
use super::history::{elapsed_ms, record_history, HistoryRow};
pub use super::report::RefreshReport;
use crate::capture::batch_facts::BatchFacts;
use crate::capture::{self, feeds, feeds::Feed, DeltaStats, Fresh, SourceKind};
use crate::db::in_transaction;
use crate::db::{Cells, Sql};
use crate::error::{Error, Result};
use crate::front::strategy::{self, Strategy};
use crate::plan::fk_pruning::{self, FkPruning, ProvenRelation};
use crate::plan::mode::{self, Mode, Requested};
use crate::plan::planner::{self, Rule};
use crate::plan::terms::{self as plan, DeltaShape, Term, TermCounts, TermStatus};
use crate::render::{self, Qualified, Source, Storage};

use crate::sql::views::MARK_REFRESHED as VIEW_MARK_REFRESHED;

/// Above this many run terms, a refresh evaluates them all in one combined join (see
/// `render::combined_terms`) instead of one join per term.
pub const COMBINE_ABOVE: usize = 15;

#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    pub fk_pruning: Option<bool>,
    pub mode: Option<Requested>,
}

/// One table of a refresh: its feed, what was captured, and the view's delta of it.
struct Input {
    feed: Feed,
    fresh: Fresh,
    /// The view's delta: logged batches after its cursor and the fresh batch.
    delta: Option<Qualified>,
    stats: DeltaStats,
    /// Captured in the first transaction: current-state scans read this bounded state.
    bounded: Option<String>,
    /// The source the table declares now, when the feed must switch to it after this batch.
    switch_to: Option<SourceKind>,
    /// In a round: the fresh batch is this view's to commit, but not to log (the round's later
    /// views read it directly) nor to drop (the round does at its end).
    round_owned: bool,
    /// The delta is a round's batch, which the round drops.
    shared_delta: bool,
    /// The delta is the feed's log taken as it is although the view nets this table's deletes
    /// (`feeds::logged_deltas` with `speculate`): netted only if its key check fails.
    unnetted: bool,
}

impl Input {
    /// A table's input, its delta neither a round's batch nor a log taken without netting.
    fn new(
        feed: Feed,
        fresh: Fresh,
        (delta, stats): feeds::ViewDelta,
        bounded: Option<String>,
        switch_to: Option<SourceKind>,
    ) -> Input {
        Input {
            feed,
            fresh,
            delta,
            stats,
            bounded,
            switch_to,
            round_owned: false,
            shared_delta: false,
            unnetted: false,
        }
    }

    /// Whether the terms read this table's delta from a temp table made in this refresh (its
    /// fresh batch, or a delta of its own).
    fn reads_temp_delta(&self) -> bool {
        self.fresh.delta.as_ref().is_some_and(feeds::owned) || self.delta.as_ref().is_some_and(feeds::owned)
    }
}

/// A refresh of several views in one transaction (`openivm_refresh_all`). The first view over a
/// feed captures it; the later ones read that batch straight from its temp table instead of a
/// round trip through the change log. At the end, a batch is logged only for views of the feed
/// that did not reach it (none, when every view was refreshed), and the temp tables are dropped.
#[derive(Default)]
pub struct Round {
    captured: HashSet<i64>,
    /// Feed id -> the batch committed by the round (non-empty, not logged), its sequence number
    /// and the feed's catalog.
    batches: HashMap<i64, (Fresh, i64, String)>,
    /// The refreshes' history rows and refreshed marks, written at the end.
    refreshed: super::history::Refreshed,
    /// Diff feeds read by several of the round's views, decided once for all of them
    /// (`mode::skip_shared_capture`): why they recompute instead of capturing, or None.
    shared: HashMap<i64, Option<String>>,
    /// Feed id -> how long the round's diff capture of it took (ms).
    diff_ms: HashMap<i64, f64>,
    /// The views' cursor moves, written together at the end: (view schema, view name, move).
    /// A later view of the round reads the earlier ones' cursors as they were, which only makes
    /// it trim a shared log less.
    cursor_moves: Vec<(String, String, feeds::CursorMove)>,
    /// Feeds with logged batches after a view's refresh, trimmed at the end: (catalog, id).
    to_trim: HashSet<(String, i64)>,
    /// Every cursor and feed, as read since the last view that wrote anything (None: read them
    /// again).
    feed_rows: Option<feeds::FeedRows>,
}

impl Round {
    /// Decides, for each diff feed that several of `views` read, whether the round captures it
    /// (see `mode::skip_shared_capture`).
    fn decide_shared(
        db: &dyn Sql,
        cache: &mut Cache,
        views: &[ViewAt],
        at: &mut Option<ViewAt>,
    ) -> Result<HashMap<i64, Option<String>>> {
        let mut times: HashMap<(String, String), mode::Reader> = HashMap::new();
        let mut catalog = None;
        for view in views {
            *at = Some(view.clone());
            let name = &view.to_string();
            if cache.strategy(db, name)? == Strategy::Full {
                continue;
            }
            let (_, c, _) = cache.compiled(db, name)?;
            let apply = match (c.last_incremental_ms, c.last_incremental_capture_ms) {
                (Some(total), Some(capture)) => Some((total - capture).max(0.0)),
                _ => None,
            };
            let reader = mode::Reader { full: c.last_full_ms, apply };
            catalog.get_or_insert_with(|| c.view.at.catalog.clone());
            times.insert((c.view.at.schema.clone(), c.view.at.name.clone()), reader);
        }
        *at = None;
        let Some(catalog) = catalog else { return Ok(HashMap::new()) };
        let mut out = HashMap::new();
        for (feed, readers) in feeds::with_readers(db, &catalog)? {
            if !matches!(feed.kind, SourceKind::Diff) || readers.len() < 2 {
                continue;
            }
            let readers: Vec<mode::Reader> = readers.iter().filter_map(|r| times.get(r)).copied().collect();
            // Only a diff this process measured in a round decides: until then the round diffs
            // (and measures it). A stand-in (a reader's last incremental refresh, or its
            // snapshot's start) once made a noisy machine stop tracking 50 views at once, for good.
            let capture = cache.diff_capture(feed.id);
            // A diff feed keeps no row count: the appended-row count it last saw stands for the size.
            let rows = feed.size_seen.max(feed.row_count).max(0) as u64;
            out.insert(feed.id, mode::skip_shared_capture(capture, &readers, rows));
        }
        Ok(out)
    }

    /// The round's verdict for a view over these diff feeds: Some(why) to recompute, Some(None)
    /// to capture, None where some feed was not decided by the round (the view's own rule).
    fn verdict(&self, diff_feeds: &[i64]) -> Option<Option<String>> {
        let verdicts: Vec<&Option<String>> = diff_feeds.iter().filter_map(|id| self.shared.get(id)).collect();
        if let Some(why) = verdicts.iter().find_map(|v| v.as_ref()) {
            return Some(Some(why.clone()));
        }
        (verdicts.len() == diff_feeds.len()).then_some(None)
    }

    /// Writes the refreshes' history and marks, logs each batch for the views that have not
    /// applied it, then drops the round's tables.
    fn close(self, db: &dyn Sql) -> Result<()> {
        if !self.cursor_moves.is_empty() {
            let moves: Vec<crate::render::capture::CursorMoveRow> = self
                .cursor_moves
                .iter()
                .map(|(schema, view, m)| crate::render::capture::CursorMoveRow {
                    schema,
                    view,
                    feed: m.feed,
                    from: m.from,
                    to: m.to,
                    watermark: m.watermark.as_deref(),
                })
                .collect();
            db.execute(&crate::render::capture::cursors_advance_all(&moves))?;
        }
        for (catalog, id) in &self.to_trim {
            feeds::trim_by_id(db, catalog, *id)?;
        }
        self.refreshed.flush(db)?;
        for (id, (fresh, seq, catalog)) in &self.batches {
            feeds::log_for_laggards(db, catalog, *id, fresh, *seq)?;
        }
        for (fresh, _, _) in self.batches.values() {
            capture::discard(db, fresh)?;
        }
        Ok(())
    }
}

/// Everything a refresh or an explain decides before it writes.
struct Prepared {
    key: String,
    c: Compiled,
    inputs: Vec<Input>,
    relations: Vec<ProvenRelation>,
    pruning: FkPruning,
    /// Deleting parents a key check kept from pruning, and why (explain's reasons).
    unpruned: Vec<(usize, String)>,
    /// The relations (positions in `relations`) whose child's delta references only keys of its
    /// parent's delta (`fk_pruning::reads_delta_rows`).
    covered: Vec<usize>,
    plan: Vec<(Term, TermStatus)>,
    /// The N-term plan, when the refresh takes that rule instead of `plan`.
    nterm: Option<super::nterm::NTerm>,
    mode: Mode,
    reason: String,
    /// The feeds on the view itself, of the views that read it.
    readers: Vec<Feed>,
    /// The view stops tracking its tables (auto found the capture dearer than a recompute), or
    /// starts tracking them again.
    detach: bool,
    reattach: bool,
    capture_ms: f64,
    /// Of `capture_ms`, the first captures of trigger feeds (a diff each): one-time work that
    /// auto mode does not count as what this view's captures cost.
    setup_ms: f64,
    /// When the writing transaction began.
    t2_started: Instant,
}

/// What the second transaction starts from.
struct Go {
    key: String,
    c: Compiled,
    /// Appended-row count of each table, as the first transaction read it.
    sizes: Vec<i64>,
    /// Per table: captured in the first transaction, or None (captured in the second).
    inputs: Vec<Option<Input>>,
    requested: Requested,
    pruning: bool,
    /// The view's feeds as the first transaction read them (None: read them again), and the
    /// feeds on the view itself (of views that read it).
    feeds: Option<(Vec<Feed>, Vec<Feed>)>,
    /// A recompute decided before capture, and why (`mode::full_before_capture`).
    full_first: Option<String>,
}

impl Go {
    /// The temp tables the first transaction made, to drop when the second fails.
    fn temp_tables(&self) -> Vec<(Fresh, Option<Qualified>)> {
        self.inputs
            .iter()
            .flatten()
            .filter(|i| i.reads_temp_delta() || i.fresh.net.is_some())
            .map(|i| (i.fresh.clone(), i.delta.clone()))
            .collect()
    }

    /// For a second transaction that is the first one: the append-only tables are as their
    /// capture saw them, so their current-state scans read them whole, with no watermark bound.
    fn in_one_transaction(mut self) -> Go {
        for i in self.inputs.iter_mut().flatten() {
            if matches!(i.feed.kind, SourceKind::AppendOnly(_)) {
                i.bounded = None;
            }
        }
        self
    }
}

/// Per table of the view: whether it is the parent of a relation the join proves, which pruning
/// may skip (its delta's deletes may need netting, `feeds::view_delta`).
fn prunable_parents(c: &Compiled, pruning: bool) -> Vec<bool> {
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

/// What the first transaction found.
enum First {
    NothingToDo { c: Compiled },
    Go(Go),
}

fn requested_mode(c: &super::cache::Settings, opts: &Options) -> Requested {
    opts.mode.or_else(|| Requested::parse(&c.refresh_mode)).unwrap_or(Requested::Auto)
}

/// The feed of table `k` of the view among those it has cursors into.
fn feed_of(feeds: &[Feed], c: &Compiled, k: usize) -> Option<Feed> {
    feeds.iter().find(|f| f.table == c.tables[k] && f.covers(&c.read_columns[k])).cloned()
}

fn first_transaction(db: &dyn Sql, cache: &mut Cache, name: &str, opts: &Options) -> Result<First> {
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
    let later = full_first.is_some() || feeds.iter().any(|f| f.cursor < 0);
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
            (f, fr, feeds::nets_deletes(f, columns, parents[*k]).then_some(columns))
        })
        .collect();
    let (found, unnetted) = feeds::logged_deltas(db, &logged, true)?;
    for (j, ((k, feed, fresh), found)) in captured.into_iter().zip(found).enumerate() {
        let delta = match found {
            Some(d) => d,
            None => {
                feeds::view_delta(db, &feed, &fresh, &c.read_columns[k], parents[k], &capture::temp_name("delta", k))?
            }
        };
        let bounded = capture::bounded_state(&feed, &fresh);
        inputs[k] = Some(Input { unnetted: unnetted.contains(&j), ..Input::new(feed, fresh, delta, bounded, None) });
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
        && inputs.iter().flatten().all(|i| {
            i.stats.rows == 0
                && i.fresh.size_seen == i.feed.size_seen
                && i.fresh.watermark == i.feed.watermark
                && !i.fresh.took_pending
        })
        && requested != Requested::Full;
    if nothing {
        return Ok(First::NothingToDo { c });
    }
    Ok(First::Go(Go { key, c, sizes, inputs, requested, pruning, feeds: Some((feeds, readers)), full_first }))
}

/// Auto's choice before capture for a view with DuckLake tables only it reads whose pending
/// snapshots delete rows (`mode::lake_deletions_before_capture`); None when there is none.
fn lake_deletions_first(
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
            Some(f) if f.consumers == 1 && f.cursor >= 0 && f.kind == c.sources[k] => match f.kind {
                SourceKind::DuckLake(id) => capture::ducklake::deletes_pending(db, &f, id)?,
                _ => false,
            },
            _ => false,
        };
        deleting.push(d);
    }
    Ok(mode::lake_deletions_before_capture(requested, &deleting, rows))
}

fn second_transaction(
    db: &dyn Sql,
    go: Go,
    capture_started: Instant,
    mut round: Option<&mut Round>,
) -> Result<Prepared> {
    let Go { key, c, sizes, inputs: mut captured, requested, pruning, feeds: known_feeds, full_first } = go;
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
            None => mode::skip_capture(requested, diff_rows, c.last_incremental_ms, c.incremental_ran, c.last_full_ms),
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
                c.last_incremental_capture_ms,
                c.last_full_ms,
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
            mode: Mode::Full,
            reason,
            readers,
            detach: skip.is_some(),
            reattach,
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
            && feed.consumers == 1
            && feed.pending_rows == 0;
        let restarted = if full_first.is_some() && round.is_none() && sole && switch_to.is_none() && feed.cursor >= 0 {
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
                let (delta, stats) = feeds::view_delta(db, &as_of, batch, columns, parents[k], &name)?;
                let shared_delta = delta.is_some() && delta == batch.delta;
                let fresh = feed.unchanged();
                let bounded = capture::lake_state(&feed, &fresh);
                inputs.push(Input { shared_delta, ..Input::new(feed, fresh, (delta, stats), bounded, switch_to) });
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
                    capture::trigger::capture_inspected(db, &feed, &fresh_name, sizes[k], seen)
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
            feeds::view_delta(db, &feed, &fresh, columns, parents[k], &name)?
        };
        let round_owned = first_in_round == Some(true) && fresh.delta.is_some();
        let bounded = capture::lake_state(&feed, &fresh);
        inputs.push(Input { round_owned, ..Input::new(feed, fresh, (delta, stats), bounded, switch_to) });
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
                inputs[k].feed.captured_facts.get_or_insert_with(|| BatchFacts::new(found.seq)).absorb(found);
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
    let all_lake = !lake_tables.is_empty() && lake_tables.iter().all(|t| matches!(t.kind, SourceKind::DuckLake(_)));
    let aliases: Vec<String> = c.q.leaves.iter().map(|l| l.alias.clone()).collect();
    let spans = c.q.spans();
    let facts = planner::Facts {
        spans: &spans,
        shapes: &shapes,
        relations: &relations,
        fk_skip: fk_pruning.skip,
        old_states: all_lake,
    };
    let mut program = planner::plan(&facts);
    let mut rule_note = program.reason(&aliases, all_lake);
    let mut nterm = None;
    if program.rule == Rule::NTerm {
        match super::nterm::old_states(db, &lake_tables)? {
            Ok(old) => {
                let why = rule_note.clone().unwrap_or_default();
                nterm =
                    Some(super::nterm::NTerm { order: program.order.clone(), terms: program.nterm.clone(), old, why })
            }
            Err(why) => {
                program = planner::plan(&planner::Facts { old_states: false, ..facts });
                rule_note = why;
            }
        }
    }
    let run_masks = program.run_masks();
    let plan = program.inclusion_exclusion;
    let leaf_table_rows: Vec<u64> = c.leaf_table.iter().map(|&k| table_rows[k].max(0) as u64).collect();
    let stale = inputs.iter().any(|i| i.feed.cursor < 0);
    let (mode, reason) = if stale {
        (
            Mode::Full,
            "the view starts following a table's changes at this refresh (the table's change state was rebuilt by \
          a full refresh of another view, or restarted with more columns for a view created later, or the view \
          was created before the table's last changes were captured); recomputed"
                .into(),
        )
    } else if !rebuilt.is_empty() {
        (Mode::Full, format!("recomputed, and change capture restarted: {}", rebuilt.join("; ")))
    } else if let Some(why) = full_first {
        (Mode::Full, why)
    } else {
        let leaf_rows: Vec<u64> = c.leaf_table.iter().map(|&k| inputs[k].stats.rows).collect();
        let chosen = mode::choose(requested, &run_masks, &leaf_rows, &leaf_table_rows);
        let deletes = shapes.iter().any(|s| s.contains(DeltaShape::DELETES));
        match strategy::recomputed_per_group(&c.q, deletes) {
            Some(why) if !run_masks.is_empty() => mode::choose_groups(chosen, &why, c.q.groups_recomputable()),
            _ => chosen,
        }
    };
    let reason = match (&rule_note, mode) {
        (Some(note), Mode::Incremental) => format!("{reason}; {note}"),
        _ => reason,
    };
    Ok(Prepared {
        key,
        c,
        inputs,
        relations,
        pruning: fk_pruning,
        unpruned,
        covered,
        plan,
        nterm,
        mode,
        reason,
        readers,
        detach: false,
        reattach: false,
        capture_ms,
        setup_ms,
        t2_started,
    })
}

/// Per table of the view: whether it is a small table on the diff source (`diff::PROBED_ROWS`)
/// found equal to its snapshot by one statement for all of them, so that its capture is
/// skipped. Not in a round, whose shared diffs are captured once for all its views.
fn unchanged_small_diffs(
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
        .filter(|(k, f)| f.kind == SourceKind::Diff && c.sources[*k] == SourceKind::Diff && f.cursor >= 0)
        .collect();
    let changed = capture::diff::changed(db, &probed.iter().map(|(_, f)| f).collect::<Vec<_>>())?;
    for ((k, _), changed) in probed.iter().zip(changed) {
        out[*k] = !changed;
    }
    Ok(out)
}

/// The view's trigger feeds this refresh captures, inspected in one statement (their logs'
/// unstamped rows and their triggers' health) instead of one per feed.
fn inspect_triggers(
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

/// Above this many rows, the child of a RELY key is not scanned for references to the keys its
/// parent deleted: the scan reads a column of the whole child (11 ms for TPC-H SF1's 6M-row
/// lineitem, a tenth of a recompute of Q3), so the promise is trusted there, as the insert-only
/// rule trusts it for inserted keys (docs/fk-aware-pruning.md).
pub const REFERENCE_CHECK_MAX_ROWS: i64 = 1_000_000;

/// Replaces a delta taken from the log without netting (`Input::unnetted`) by its net change on
/// the view's columns, in a temp table of its own (`name`; none when nothing is left).
fn net_delta(db: &dyn Sql, input: &mut Input, columns: &[crate::ir::ColumnDef], name: &Qualified) -> Result<()> {
    let parts = [render::capture::log_after(&input.feed.log(), columns, input.feed.cursor, input.feed.seq)];
    let stats = capture::netted_delta(db, name, &parts, columns)?;
    input.delta = (stats.rows > 0).then(|| name.clone());
    input.stats = stats;
    input.unnetted = false;
    Ok(())
}

/// The child and referencing columns of `k`'s reference check, where it has one: a declared key
/// whose child has at most `REFERENCE_CHECK_MAX_ROWS` rows. It reads the child's current rows, so
/// its outcome is no fact of a batch.
fn reference_check<'k>(
    k: &'k fk_pruning::KeyCheck,
    c: &Compiled,
    table_rows: &[i64],
) -> Option<&'k (usize, Vec<String>)> {
    k.child
        .as_ref()
        .filter(|(leaf, _)| table_rows.get(c.leaf_table[*leaf]).is_some_and(|&n| n <= REFERENCE_CHECK_MAX_ROWS))
}

/// The batch of its feed that the delta of table `k` is, exactly and as logged (not netted), when
/// it is one, so that facts about the batch (`BatchFacts`) hold for the delta: the batch a view at
/// its feed's head captured (logged as batch `seq + 1` when the refresh commits), or batch `seq`
/// read by a view one batch behind from a log that holds just that batch (`feeds::logged_deltas`
/// takes the log itself as the delta only when every row of it is after the cursor).
fn raw_batch(i: &Input) -> Option<i64> {
    let delta = i.delta.as_ref()?;
    let f = &i.feed;
    if i.fresh.delta.as_ref() == Some(delta) {
        (f.cursor >= 0 && f.cursor == f.seq && !i.round_owned && !i.shared_delta).then_some(f.seq + 1)
    } else {
        let nothing_fresh = i.fresh.stats.rows == 0;
        (nothing_fresh && *delta == f.log() && f.cursor >= 0 && f.cursor + 1 == f.seq && f.pending_rows == 0)
            .then_some(f.seq)
    }
}

/// The key checks (`fk_pruning::key_checks`) the deltas pass and fail: no key of a deleting parent's delta is
/// on two rows, and no row of a declared key's child (up to `REFERENCE_CHECK_MAX_ROWS` rows)
/// references a deleted one; and for each relation in `coverage` (`fk_pruning::coverage_checks`),
/// whether every key its child's delta references is in its parent's delta. One statement, for
/// the checks whose outcome the feeds' batch facts do not already say (a view one batch behind
/// takes what the view that captured the batch found); what it finds about a batch this refresh
/// captured is returned to be recorded with the batch (`KeyChecks::learned`).
fn passed_key_checks(
    db: &dyn Sql,
    c: &Compiled,
    inputs: &[Input],
    table_rows: &[i64],
    checks: &[fk_pruning::KeyCheck],
    coverage: &[&ProvenRelation],
) -> Result<KeyChecks> {
    let delta_of = |leaf: usize| inputs.get(*c.leaf_table.get(leaf)?)?.delta.as_ref();
    let with_delta: Vec<(&fk_pruning::KeyCheck, &Qualified)> =
        checks.iter().filter_map(|k| Some((k, delta_of(k.leaf)?))).collect();
    if with_delta.is_empty() {
        return Ok(KeyChecks { covered: vec![false; coverage.len()], ..KeyChecks::default() });
    }
    // Per leaf: its table and the batch its delta is; the facts known about that batch.
    let batch_of = |leaf: usize| -> Option<(usize, i64)> {
        let k = *c.leaf_table.get(leaf)?;
        Some((k, raw_batch(inputs.get(k)?)?))
    };
    let known = |leaf: usize| -> Option<&BatchFacts> {
        let (k, batch) = batch_of(leaf)?;
        inputs[k].feed.facts().filter(|f| f.seq == batch)
    };
    // A relation counts only with both deltas at hand (with its parent's); the others are not
    // covered.
    let counted: Vec<(usize, &ProvenRelation, &Qualified)> = coverage
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            delta_of(r.child_leaf)?;
            Some((i, *r, delta_of(r.parent_leaf)?))
        })
        .collect();
    let parent_batch = |r: &ProvenRelation| batch_of(r.parent_leaf).map(|(k, b)| (inputs[k].feed.id, b));
    // Outcomes: keys unique, no child row references a deleted key, child delta covered.
    let mut unique: Vec<Option<bool>> = with_delta
        .iter()
        .map(
            |(k, _)| if reference_check(k, c, table_rows).is_some() { None } else { known(k.leaf)?.unique(&k.columns) },
        )
        .collect();
    let mut unreferenced = vec![true; with_delta.len()];
    let mut covered: Vec<Option<bool>> = counted
        .iter()
        .map(|(_, r, _)| {
            let (parent, batch) = parent_batch(r)?;
            known(r.child_leaf)?.covered(&r.fk.child_columns, parent, batch, &r.fk.parent_columns)
        })
        .collect();
    let to_check: Vec<usize> = (0..unique.len()).filter(|&i| unique[i].is_none()).collect();
    let to_count: Vec<usize> = (0..covered.len()).filter(|&j| covered[j].is_none()).collect();
    let mut learned: HashMap<usize, BatchFacts> = HashMap::new();
    // Facts about a batch this refresh captured (numbered past its feed's newest).
    let mut learn = |leaf: usize, note: &dyn Fn(&mut BatchFacts)| {
        if let Some((k, batch)) = batch_of(leaf).filter(|&(k, b)| b > inputs[k].feed.seq) {
            note(learned.entry(k).or_insert_with(|| BatchFacts::new(batch)));
        }
    };
    if !to_check.is_empty() || !to_count.is_empty() {
        let parts: Vec<render::capture::KeyCheckSql> = to_check
            .iter()
            .map(|&i| {
                let (k, delta) = with_delta[i];
                render::capture::KeyCheckSql {
                    delta,
                    keys: &k.columns,
                    child: reference_check(k, c, table_rows).map(|(leaf, refs)| {
                        (render::relation_sql(&leaf_source(c, inputs, *leaf, false)), refs.as_slice())
                    }),
                }
            })
            .collect();
        // One count per relation of `to_count`, in its order: the row's columns are read by position.
        let coverage_sql: Vec<render::capture::CoverageSql> = to_count
            .iter()
            .map(|&j| {
                let (_, r, parent) = counted[j];
                render::capture::CoverageSql {
                    child: render::relation_sql(&leaf_source(c, inputs, r.child_leaf, true)),
                    refs: &r.fk.child_columns,
                    parent,
                    keys: &r.fk.parent_columns,
                }
            })
            .collect();
        let rows = db.query(&render::capture::key_checks(&parts, &coverage_sql))?;
        let row = rows.first().ok_or_else(|| Error::Internal("a key check returned no row".into()))?;
        for (j, &i) in to_check.iter().enumerate() {
            let holds = row.int(2 * j)? == 0;
            unique[i] = Some(holds);
            unreferenced[i] = row.int(2 * j + 1)? == 0;
            let k = with_delta[i].0;
            learn(k.leaf, &|f| f.note_unique(&k.columns, holds));
        }
        for (n, &j) in to_count.iter().enumerate() {
            let holds = row.int(2 * to_check.len() + n)? == 0;
            covered[j] = Some(holds);
            let r = counted[j].1;
            if let Some((parent, batch)) = parent_batch(r) {
                learn(r.child_leaf, &|f| {
                    f.note_covered(&r.fk.child_columns, parent, batch, &r.fk.parent_columns, holds)
                });
            }
        }
    }
    let mut out = KeyChecks { covered: vec![false; coverage.len()], learned, ..KeyChecks::default() };
    for (j, (i, _, _)) in counted.iter().enumerate() {
        out.covered[*i] = covered[j] == Some(true);
    }
    for (i, (k, _)) in with_delta.iter().enumerate() {
        let alias = |leaf: usize| c.q.leaves[leaf].alias.clone();
        let why = if unique[i] != Some(true) {
            Some("a key of its delta is on two rows (an update, or a key deleted and inserted again)".to_string())
        } else if !unreferenced[i] {
            let child = k.child.as_ref().map(|(leaf, _)| alias(*leaf)).unwrap_or_default();
            Some(format!("a row of {child} still references a key it deleted (the RELY foreign key does not hold)"))
        } else {
            None
        };
        match why {
            None => out.passed.push((*k).clone()),
            Some(why) => out.failed.push((k.leaf, format!("{} is not pruned: {why}", alias(k.leaf)))),
        }
    }
    Ok(out)
}

/// What the key checks of a refresh found: the checks that passed, and for the leaves of those
/// that failed, why (for explain).
#[derive(Default)]
struct KeyChecks {
    passed: Vec<fk_pruning::KeyCheck>,
    failed: Vec<(usize, String)>,
    /// Per relation counted (`coverage`): whether its child's delta references only keys of
    /// its parent's delta.
    covered: Vec<bool>,
    /// By table: what the checks found about the batch this refresh captured from it.
    learned: HashMap<usize, BatchFacts>,
}

/// Where leaf `i` of a refresh reads from: its delta, its bounded state, or the table.
fn leaf_source(c: &Compiled, inputs: &[Input], i: usize, as_delta: bool) -> Source {
    let input = &inputs[c.leaf_table[i]];
    match (as_delta, &input.delta, &input.bounded) {
        (true, Some(d), _) => Source::Delta(d.clone()),
        (_, _, Some(b)) => Source::Bounded(b.clone()),
        _ => Source::Current(c.q.leaves[i].table.clone()),
    }
}

/// Drops the temp tables the first transaction committed, after the second failed or was only
/// explained (best effort: they vanish with the connection anyway).
fn discard_temp_tables(db: &dyn Sql, tables: &[(Fresh, Option<Qualified>)]) {
    for (fresh, delta) in tables {
        let _ = capture::discard(db, fresh);
        if let Some(d) = delta.as_ref().filter(|d| feeds::owned(d)) {
            let _ = db.execute(&render::drop_table(d));
        }
    }
}

fn drop_delta(db: &dyn Sql, i: &Input) -> Result<()> {
    if let Some(d) = i.delta.as_ref().filter(|d| feeds::owned(d)) {
        if Some(d) != i.fresh.delta.as_ref() && !i.shared_delta {
            db.execute(&render::drop_table(d))?;
        }
    }
    Ok(())
}

impl Prepared {
    /// A refresh's (total, capture) ms without its one-time work (`setup_ms`), as auto mode
    /// prices the view's next refreshes.
    fn steady(&self, (total_ms, capture_ms): (f64, f64)) -> (f64, f64) {
        (total_ms - self.setup_ms, capture_ms - self.setup_ms)
    }

    /// Where leaf `i` reads from: its delta, its bounded state, or the table.
    fn source(&self, i: usize, as_delta: bool) -> Source {
        leaf_source(&self.c, &self.inputs, i, as_delta)
    }

    /// Where leaf `i` reads from in an inclusion-exclusion term: as `source`, except that a
    /// parent pruned with deletes is read with its deleted rows (`fk_pruning::FkPruning`).
    fn term_source(&self, i: usize, as_delta: bool) -> Source {
        let k = self.c.leaf_table[i];
        let with_deleted = !as_delta && self.pruning.with_deleted & (1 << i) != 0;
        match (&self.inputs[k].delta, with_deleted) {
            (Some(d), true) => {
                render::with_deleted_rows(&self.source(i, false), d, &render::column_list(&self.c.read_columns[k]))
            }
            _ => self.source(i, as_delta),
        }
    }

    /// Where leaf `i` reads from in `term`: as `term_source`, except that a parent the term
    /// joins only on keys of its delta is read as its delta's rows (`fk_pruning::reads_delta_rows`).
    fn term_source_in(&self, i: usize, term: Term) -> Source {
        let k = self.c.leaf_table[i];
        match &self.inputs[k].delta {
            Some(d) if self.reads_delta_rows(i, term).is_some() => {
                render::delta_rows_as_state(d, &render::column_list(&self.c.read_columns[k]))
            }
            _ => self.term_source(i, term.mask & (1 << i) != 0),
        }
    }

    fn reads_delta_rows(&self, i: usize, term: Term) -> Option<&ProvenRelation> {
        fk_pruning::reads_delta_rows(&self.relations, &self.covered, self.pruning.with_deleted, term.mask, i)
    }

    fn term_sql(&self, term: Term) -> String {
        let sources: Vec<Source> = (0..self.c.q.leaves.len()).map(|i| self.term_source_in(i, term)).collect();
        render::term_select(&self.c.q, term, &sources)
    }

    /// The SQL of the N-term term of `leaf`: the leaves before it in the rule's order at their
    /// new state, its delta, the leaves after it at their old state.
    fn nterm_sql(&self, nt: &super::nterm::NTerm, leaf: usize) -> String {
        let sources: Vec<Source> = crate::plan::nterm::states(&nt.order, leaf)
            .into_iter()
            .enumerate()
            .map(|(j, state)| match state {
                crate::plan::nterm::LeafState::New => self.source(j, false),
                crate::plan::nterm::LeafState::Delta => self.source(j, true),
                crate::plan::nterm::LeafState::Old => Source::Bounded(nt.old[self.c.leaf_table[j]].clone()),
            })
            .collect();
        render::term_select(&self.c.q, Term { mask: 1 << leaf, sign: 1 }, &sources)
    }

    /// The term counts of the rule the refresh takes.
    fn counts(&self) -> TermCounts {
        match &self.nterm {
            Some(nt) => crate::plan::nterm::count(&nt.terms),
            None => plan::count_terms(&self.plan),
        }
    }

    /// The view's query over the states this refresh brings it to.
    fn full_sql(&self) -> String {
        if self.inputs.is_empty() {
            return render::full_select(&self.c.q);
        }
        let sources: Vec<Source> = (0..self.c.q.leaves.len()).map(|i| self.source(i, false)).collect();
        render::term_select(&self.c.q, Term { mask: 0, sign: 1 }, &sources)
    }

    fn run_terms(&self) -> Vec<Term> {
        self.plan.iter().filter(|(_, s)| *s == TermStatus::Run).map(|(t, _)| *t).collect()
    }

    fn delta_leaves(&self, term: Term) -> String {
        plan::leaves_of(term.mask).map(|i| self.c.q.leaves[i].alias.clone()).collect::<Vec<_>>().join(",")
    }

    fn leaf_stats(&self, i: usize) -> &DeltaStats {
        &self.inputs[self.c.leaf_table[i]].stats
    }

    fn reason(&self, term: Term, status: TermStatus) -> String {
        let run = self.run_terms().len();
        match status {
            TermStatus::Run => {
                let mut why = String::from("delta rows to join");
                if run > COMBINE_ABOVE {
                    why += &format!("; the {run} run terms are evaluated in one combined join");
                }
                for (_, note) in self.unpruned.iter().filter(|(leaf, _)| term.mask & (1 << leaf) != 0) {
                    why += &format!("; {note}");
                }
                if let Some(g) = self.group_lookup() {
                    let left: Vec<&str> = (0..self.c.q.leaves.len())
                        .filter(|i| g.dropped & (1 << i) != 0)
                        .map(|i| self.c.q.leaves[i].alias.as_str())
                        .collect();
                    why += &format!(
                        "; {} left out (unchanged, read for group attributes only): looked up for new groups only",
                        left.join(",")
                    );
                }
                if run <= COMBINE_ABOVE {
                    for r in (0..self.c.q.leaves.len()).filter_map(|i| self.reads_delta_rows(i, term)) {
                        let alias = |leaf: usize| &self.c.q.leaves[leaf].alias;
                        why += &format!(
                            "; {} is read as its delta's rows alone: every key the delta of {} references is in it",
                            alias(r.parent_leaf),
                            alias(r.child_leaf)
                        );
                    }
                }
                why
            }
            TermStatus::EmptySkipped => {
                let empty: Vec<String> = plan::leaves_of(term.mask)
                    .filter(|&i| self.leaf_stats(i).rows == 0)
                    .map(|i| self.c.q.leaves[i].alias.clone())
                    .collect();
                format!("empty delta: {}", empty.join(","))
            }
            TermStatus::FkPruned => {
                let mut parts = Vec::new();
                for i in plan::leaves_of(term.mask & self.pruning.skip) {
                    for r in self.pruning.reasons(&self.relations, i) {
                        let child = &self.c.q.leaves[r.child_leaf].alias;
                        let parent = &self.c.q.leaves[r.parent_leaf].alias;
                        let shape = if self.pruning.with_deleted & (1 << i) != 0 {
                            format!("delta of {parent} deletes keys it does not insert again, so the other terms read {parent} with its deleted rows")
                        } else {
                            format!("delta of {parent} is insert-only")
                        };
                        parts.push(format!(
                            "{child}({}) -> {parent}({}) [{}]; {shape}",
                            r.fk.child_columns.join(","),
                            r.fk.parent_columns.join(","),
                            r.fk.source.as_str()
                        ));
                    }
                }
                parts.dedup();
                format!("foreign key {}", parts.join("; "))
            }
        }
    }

    /// Why an N-term term runs, is skipped or pruned.
    fn nterm_reason(&self, nt: &super::nterm::NTerm, leaf: usize, status: TermStatus) -> String {
        let alias = |i: usize| self.c.q.leaves[i].alias.clone();
        let status_reason = match status {
            TermStatus::Run => "delta rows to join".to_string(),
            TermStatus::EmptySkipped => format!("empty delta: {}", alias(leaf)),
            TermStatus::FkPruned => {
                let shapes: Vec<DeltaShape> = (0..self.c.q.leaves.len()).map(|i| self.leaf_stats(i).shape()).collect();
                match crate::plan::nterm::pruning_relation(&nt.order, leaf, &shapes, &self.relations) {
                    Some(r) => format!(
                        "foreign key {}({}) -> {}({}) [{}]; delta of {} is insert-only and {} is read at its old state",
                        alias(r.child_leaf),
                        r.fk.child_columns.join(","),
                        alias(r.parent_leaf),
                        r.fk.parent_columns.join(","),
                        r.fk.source.as_str(),
                        alias(r.parent_leaf),
                        alias(r.child_leaf)
                    ),
                    None => "foreign key".into(),
                }
            }
        };
        format!("{}; {status_reason}", nt.why)
    }

    fn delta_rows(&self) -> i64 {
        self.inputs.iter().map(|i| i.stats.rows as i64).sum()
    }

    /// Applies the run terms to the stored result. With `readers` (the feeds on the view), the
    /// change of what the view shows is appended to their pending batches: what its changed
    /// groups showed before against what they show after (`shown_before`, `shown_after`), with
    /// the view's delta materialized once for both and for the merge. Returns whether it was.
    fn apply_terms(&self, db: &dyn Sql, readers: Option<&mut [Feed]>, kept_plans: bool) -> Result<bool> {
        let recording = readers.is_some();
        let Some(rows) = self.run_rows() else {
            return Ok(recording);
        };
        let q = &self.c.q;
        if !q.recomputed_aggregates().is_empty() {
            return Err(Error::Internal("a view with aggregates without a delta rule cannot merge a delta".into()));
        }
        let matched = self.merge_keys();
        let Some(readers) = readers else {
            let delta = match self.group_lookup() {
                Some(g) => {
                    let reduced = self.run_terms().iter().map(|t| self.reduced_term_sql(*t, g)).collect::<Vec<_>>();
                    let sources: Vec<Source> = (0..q.leaves.len()).map(|i| self.term_source(i, false)).collect();
                    render::group_lookup::looked_up_delta(
                        q,
                        &self.c.view.data,
                        &render::union_all(&reduced),
                        &sources,
                        g,
                    )
                }
                None => render::aggregate_weighted(q, &rows),
            };
            let merge = render::apply_view_delta(self.c.storage, q, &self.c.view.data, &delta, matched);
            match self.plan_class().filter(|_| kept_plans) {
                Some(class) => merge.iter().try_for_each(|s| db.execute_reusing_plan(s, class))?,
                None => db.execute_all(&merge)?,
            }
            return Ok(false);
        };
        let delta = Qualified::temp("openivm_view_delta".into());
        db.execute(&render::create_temp_table_as(&delta, &render::aggregate_weighted(q, &rows)))?;
        let applied = self.shown_before(db, readers, &delta).and_then(|before| {
            let merged = format!("SELECT * FROM {}", delta.sql());
            db.execute_all(&render::apply_view_delta(self.c.storage, q, &self.c.view.data, &merged, matched))?;
            self.shown_after(db, readers, &delta, before)
        });
        let dropped = db.execute(&render::drop_table(&delta));
        applied.and(dropped)?;
        Ok(true)
    }

    /// The size class under which the merge's plan is kept for the next refresh with the same
    /// SQL (a follower reading whole logs renders the same merge every time), or None where it
    /// is not kept: DuckLake, whose snapshots are not DuckDB's catalog versions, and a merge
    /// reading a delta in a temp table, which each refresh makes anew (DuckDB would plan the
    /// kept statement again anyway).
    fn plan_class(&self) -> Option<u32> {
        let native =
            self.c.storage == Storage::DuckDb && self.c.sources.iter().all(|s| !matches!(s, SourceKind::DuckLake(_)));
        let made_anew = self.inputs.iter().any(Input::reads_temp_delta);
        (native && !made_anew).then(|| size_class(self.delta_rows()))
    }

    /// The leaves this refresh leaves out of its terms, looking their group attributes up for
    /// new groups only (`merge_keys::GroupLookup`): where the merge matches on the keys that
    /// determine them, none of them changed, the terms are rendered one by one, and the change of
    /// what the view shows is not recorded for views over it (that reads the whole delta).
    fn group_lookup(&self) -> Option<&crate::plan::merge_keys::GroupLookup> {
        let g = self.c.group_lookup.as_ref()?;
        self.merge_keys()?;
        let unchanged =
            (0..self.c.q.leaves.len()).filter(|i| g.dropped & (1 << i) != 0).all(|i| self.leaf_stats(i).rows == 0);
        let one_by_one = self.nterm.is_none() && self.run_terms().len() <= COMBINE_ABOVE;
        (unchanged && one_by_one).then_some(g)
    }

    /// The SQL of a run term without the leaves `g` leaves out.
    fn reduced_term_sql(&self, term: Term, g: &crate::plan::merge_keys::GroupLookup) -> String {
        let sources: Vec<Source> = (0..self.c.q.leaves.len()).map(|i| self.term_source_in(i, term)).collect();
        render::group_lookup::reduced_term(&self.c.q, term, &sources, g)
    }

    /// The group keys this refresh's merge matches on when they determine the others: none of
    /// the leaves they determine deleted anything (`merge_keys`).
    fn merge_keys(&self) -> Option<&[usize]> {
        let m = self.c.merge_keys.as_ref()?;
        m.usable(|leaf| self.leaf_stats(leaf).deletes > 0).then_some(&m.matched[..])
    }

    /// What the view shows of its stored groups whose keys are in `keys`.
    fn shown(&self, keys: &Qualified) -> String {
        let from = render::stored_of_groups(&self.c.q, &self.c.view.data, keys);
        render::visible_rows(&self.c.q, &from, &self.c.outputs, &self.c.sum_kinds)
    }

    /// The first half of recording the change of what the view shows of the groups in `keys`
    /// for the feeds on it (`readers`), before the groups change: what they show, kept in a
    /// temp table, to net against what they show after (`shown_after`), so that a row shown
    /// alike is no change for the readers. Rows kept apart by their text (0.0 and -0.0, which
    /// netting would take as equal) are recorded as they are instead: shown before, -1.
    fn shown_before(&self, db: &dyn Sql, readers: &mut [Feed], keys: &Qualified) -> Result<Option<Qualified>> {
        if self.c.outputs.iter().any(|o| o.collation.is_some() || render::needs_text_identity(&o.ty)) {
            self.record_shown(db, readers, keys, -1)?;
            return Ok(None);
        }
        let before = Qualified::temp("openivm_shown_before".into());
        db.execute(&render::create_temp_table_as(&before, &self.shown(keys)))?;
        Ok(Some(before))
    }

    /// The second half (see `shown_before`): the netted change, or what the groups show now, +1.
    fn shown_after(
        &self,
        db: &dyn Sql,
        readers: &mut [Feed],
        keys: &Qualified,
        before: Option<Qualified>,
    ) -> Result<()> {
        let Some(before) = before else { return self.record_shown(db, readers, keys, 1) };
        let columns: Vec<crate::ir::ColumnDef> = self
            .c
            .outputs
            .iter()
            .map(|o| crate::ir::ColumnDef { name: o.name.clone(), ty: o.ty.clone(), collation: o.collation.clone() })
            .collect();
        let net = Qualified::temp("openivm_shown_net".into());
        let recorded = db
            .execute(&render::create_temp_table_as(
                &net,
                &render::capture::shown_change(&before, &self.shown(keys), &columns),
            ))
            .and_then(|()| {
                let shown_rows = db.scalar_int(&render::capture::net_total(&net), &[])?;
                for f in readers.iter_mut() {
                    capture::recorded::record_with(
                        db,
                        f,
                        &render::capture::append_net(&f.open_batch(), &net, &f.columns),
                    )?;
                    f.row_count += shown_rows;
                }
                Ok(())
            });
        let dropped = db.execute(&render::drop_table(&net)).and(db.execute(&render::drop_table(&before)));
        recorded.and(dropped)
    }

    /// Appends the rows the view shows of its stored groups whose keys are in `keys` to the
    /// open batch of each feed in `readers`, with multiplicity `sign`.
    fn record_shown(&self, db: &dyn Sql, readers: &mut [Feed], keys: &Qualified, sign: i8) -> Result<()> {
        let shown = self.shown(keys);
        for f in readers.iter_mut() {
            let insert = render::capture::append_visible(&f.open_batch(), &shown, &f.columns, sign);
            let n = capture::recorded::record_with(db, f, &insert)?;
            f.row_count += i64::from(sign) * n;
        }
        Ok(())
    }

    /// Recomputes the groups the run terms touch: their keys (the distinct group keys of the
    /// terms' rows) are deleted from the stored result and inserted again, aggregated from the
    /// tables' state this refresh brings the view to. A view without GROUP BY has one group.
    /// With `readers`, what those groups show is recorded for them as by `apply_terms`; returns
    /// whether it was (not for a view recomputed whole).
    fn recompute_groups(&self, db: &dyn Sql, readers: Option<&mut [Feed]>) -> Result<bool> {
        let recording = readers.is_some();
        let Some(rows) = self.run_rows() else {
            return Ok(recording);
        };
        let q = &self.c.q;
        if matches!(&q.shape, crate::ir::Shape::Grouped { keys, .. } if keys.is_empty()) {
            self.recompute(db)?;
            return Ok(false);
        }
        let data = &self.c.view.data;
        let keys = Qualified::temp("openivm_touched_groups".into());
        db.execute(&render::create_temp_table_as(&keys, &render::touched_keys(q, &rows)))?;
        let mut readers = readers;
        let applied = match readers.as_deref_mut() {
            Some(r) => self.shown_before(db, r, &keys).map(Some),
            None => Ok(None),
        }
        .and_then(|before| {
            db.execute(&render::delete_groups(q, data, &keys))?;
            // The exact DOUBLE split at once: these are the touched groups only.
            let rows = render::rows_of_groups(q, &self.full_sql(), &keys);
            db.execute(&render::insert_into(data, &render::aggregate_fill_exact(q, &rows)))?;
            match (readers, before) {
                (Some(r), Some(before)) => self.shown_after(db, r, &keys, before),
                _ => Ok(()),
            }
        });
        let dropped = db.execute(&render::drop_table(&keys));
        applied.and(dropped)?;
        Ok(recording)
    }

    /// The payload rows of the run terms (None when no term runs): their union, or above
    /// `COMBINE_ABOVE` terms one combined join.
    fn run_rows(&self) -> Option<String> {
        let run = self.run_terms();
        if let Some(nt) = &self.nterm {
            let terms: Vec<String> =
                nt.terms.iter().filter(|(_, s)| *s == TermStatus::Run).map(|&(i, _)| self.nterm_sql(nt, i)).collect();
            return (!terms.is_empty()).then(|| render::union_all(&terms));
        }
        if run.is_empty() {
            return None;
        }
        let q = &self.c.q;
        Some(if run.len() > COMBINE_ABOVE {
            let with_delta = run.iter().fold(0, |m, t| m | t.mask);
            let leaves: Vec<render::CombinedLeaf> = q
                .leaves
                .iter()
                .enumerate()
                .map(|(i, l)| render::CombinedLeaf {
                    current: self.term_source(i, false),
                    delta: (with_delta & (1 << i) != 0)
                        .then(|| self.inputs[self.c.leaf_table[i]].delta.clone())
                        .flatten(),
                    columns: render::column_list(&q.table_columns(&l.table)),
                })
                .collect();
            render::combined_terms(q, &leaves, self.pruning.skip)
        } else {
            render::union_all(&run.iter().map(|t| self.term_sql(*t)).collect::<Vec<_>>())
        })
    }

    /// Recomputes the stored result from the tables' state this refresh brings the view to.
    fn recompute(&self, db: &dyn Sql) -> Result<()> {
        let data = &self.c.view.data;
        db.execute(&render::delete_all(data))?;
        super::view::fill(db, &self.c.q, data, &self.full_sql())
    }

    fn discard(&self, db: &dyn Sql) -> Result<()> {
        for i in &self.inputs {
            drop_delta(db, i)?;
            if !i.round_owned {
                capture::discard(db, &i.fresh)?;
            }
        }
        Ok(())
    }
}

/// A delta's size class for kept plans: its number of binary digits, so that a plan made for a
/// delta is reused for deltas up to about twice or half its size, and planned again beyond.
fn size_class(rows: i64) -> u32 {
    64 - (rows.max(0) as u64).leading_zeros()
}

/// Whether a prepared refresh has nothing to write: no delta rows, every cursor at its feed's
/// newest batch, and no recompute asked for.
fn is_noop(p: &Prepared) -> bool {
    p.mode == Mode::Incremental
        && !p.inputs.is_empty()
        && p.inputs.iter().all(|i| {
            i.stats.rows == 0
                && i.feed.cursor >= i.feed.seq
                && i.fresh.watermark == i.feed.watermark
                && i.switch_to.is_none()
                && !i.round_owned
                && !i.fresh.took_pending
        })
}

/// Applies a prepared refresh (terms or recompute), advances feeds and cursors, and records it.
/// Runs in the refresh's (last) transaction.
fn finish(
    db: &dyn Sql,
    cache: &mut Cache,
    mut p: Prepared,
    started: Instant,
    round: Option<&mut Round>,
) -> Result<(Prepared, TermCounts, f64)> {
    if is_noop(&p) {
        p.discard(db)?;
        let counts = p.counts();
        return Ok((p, counts, elapsed_ms(started)));
    }
    // This view writes: the round's later views read the feeds and cursors again.
    let mut round = round;
    if let Some(r) = round.as_deref_mut() {
        r.feed_rows = None;
    }
    let at = p.c.view.at.clone();
    if cache.read_only(db, &at.catalog)? {
        return Err(Error::InvalidArgument(format!(
            "the database '{}' is attached read-only, and refreshing '{}' has {} delta rows to apply; open it \
             read-write to refresh (a refresh with nothing to do works read-only)",
            at.catalog,
            at.name,
            p.delta_rows()
        )));
    }
    super::standing::check_standing(db, cache, &p.c.view)?;
    let apply_started = Instant::now();
    // Views reading this one through recorded feeds get the change of what it shows, when it
    // shows its rows locally; otherwise (a recompute, or rows that are not local) their feeds
    // restart and they recompute once.
    let mut readers: Vec<Feed> = p.readers.iter().filter(|f| matches!(f.kind, SourceKind::Recorded)).cloned().collect();
    let record = (p.c.q.shows_rows_locally() && !readers.is_empty()).then_some(&mut readers[..]);
    let recorded = match p.mode {
        Mode::Incremental => p.apply_terms(db, record, cache.settings(db)?.kept_plans)?,
        Mode::GroupRecompute => p.recompute_groups(db, record)?,
        Mode::Full => {
            p.recompute(db)?;
            false
        }
    };
    let mut book = feeds::Bookkeeping::default();
    for f in readers.iter_mut() {
        if recorded {
            book.save(f.id);
        } else {
            feeds::rebuild(db, f, &SourceKind::Recorded, &at.schema, &at.name)?;
        }
    }
    if p.detach {
        feeds::detach_view(db, &at.catalog, &at.schema, &at.name)?;
    } else if p.reattach {
        let source = cache.settings(db)?.default_source;
        super::create::attach(db, &p.c.q, &at, &at.catalog, &source)?;
        cache.resumed(&p.key);
    }
    for i in p.inputs.iter_mut() {
        feeds::commit(db, &mut i.feed, &i.fresh, &at.schema, &at.name, true, !i.round_owned, Some(&mut book))?;
        if i.round_owned {
            if let Some(r) = round.as_deref_mut() {
                r.batches.insert(i.feed.id, (i.fresh.clone(), i.feed.seq, i.feed.catalog.clone()));
            }
        }
        if let Some(kind) = &i.switch_to {
            feeds::switch_source(db, &mut i.feed, kind)?;
        }
    }
    let saved = p.inputs.iter().map(|i| &i.feed).chain(readers.iter());
    match round.as_deref_mut() {
        Some(r) => {
            book.flush_feeds(db, saved)?;
            r.cursor_moves
                .extend(book.take_cursor_moves().into_iter().map(|m| (at.schema.clone(), at.name.clone(), m)));
            r.to_trim
                .extend(p.inputs.iter().filter(|i| i.feed.log_rows > 0).map(|i| (i.feed.catalog.clone(), i.feed.id)));
        }
        None => book.flush(db, &at.schema, &at.name, saved)?,
    }
    let apply_ms = elapsed_ms(apply_started);
    let counts = match p.mode {
        Mode::Incremental | Mode::GroupRecompute => p.counts(),
        // A recompute runs no term; terms_total still counts the view's terms.
        Mode::Full => TermCounts { total: p.c.q.term_count(), ..Default::default() },
    };
    let total_ms = elapsed_ms(started);
    let history = HistoryRow {
        view: &at,
        before_us: (p.t2_started - started).as_micros() as i64,
        mode: p.mode,
        reason: &p.reason,
        counts,
        delta_rows: p.delta_rows(),
        capture_ms: p.capture_ms,
        apply_ms,
        total_ms,
        setup_ms: p.setup_ms,
    };
    match round {
        Some(r) => r.refreshed.add(&history),
        None => {
            VIEW_MARK_REFRESHED.run(db, [&at.schema, &at.name])?;
            record_history(db, &history)?;
        }
    }
    p.discard(db)?;
    Ok((p, counts, total_ms))
}

fn report(p: &Prepared, counts: TermCounts, started: Instant) -> RefreshReport {
    let reason = if is_noop(p) { NOTHING_CHANGED.to_string() } else { p.reason.clone() };
    RefreshReport {
        schema: p.c.view.at.schema.clone(),
        view: p.c.view.at.name.clone(),
        counts,
        delta_rows: p.delta_rows(),
        duration_ms: elapsed_ms(started),
        mode: Some(p.mode),
        mode_reason: reason,
        error: None,
    }
}

/// The reason of a refresh that found nothing to apply.
const NOTHING_CHANGED: &str = "nothing changed in the view's tables since its last refresh";

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

/// A maintained view by schema and name (displayed quoted, as `cache` takes names).
#[derive(Clone, Debug, PartialEq, Eq)]
struct ViewAt {
    schema: String,
    name: String,
}

impl std::fmt::Display for ViewAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", crate::render::ident(&self.schema), crate::render::ident(&self.name))
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
            round_of_all(db, cache, opts, &skipped, &mut at).map_err(|e| (e, at))
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
            let go = Go { key, c, sizes, inputs, requested, pruning, feeds: None, full_first: None };
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

/// `refresh(v)`: first the maintained views v reads (and theirs), in dependency order and each
/// once, each in its own refresh; then v. One report per view refreshed. Without `cascade` only
/// v's hidden stages are refreshed first: they are part of v, not views the user chose to read.
pub fn refresh_cascade(
    db: &dyn Sql,
    cache: &mut Cache,
    name: &str,
    opts: Options,
    cascade: bool,
) -> Result<Vec<RefreshReport>> {
    let mut order = Vec::new();
    upstream_order(db, cache, name, cascade, &mut order, 0)?;
    let mut reports = Vec::new();
    for up in &order {
        reports.push(refresh(db, cache, up, opts)?);
    }
    reports.push(refresh(db, cache, name, opts)?);
    Ok(reports)
}

/// Appends the maintained views `name` reads, transitively, upstream first (each once): all of
/// them with `users`, else only the hidden stages (and the stages those read).
fn upstream_order(
    db: &dyn Sql,
    cache: &mut Cache,
    name: &str,
    users: bool,
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
        if !up.catalog.eq_ignore_ascii_case(&main) || !(users || stage) {
            continue;
        }
        let up_name = format!("{}.{}", crate::render::ident(&up.schema), crate::render::ident(&up.name));
        upstream_order(db, cache, &up_name, users, order, depth + 1)?;
        if !order.contains(&up_name) {
            order.push(up_name);
        }
    }
    Ok(())
}

pub fn refresh(db: &dyn Sql, cache: &mut Cache, name: &str, opts: Options) -> Result<RefreshReport> {
    super::widen::retrying(db, cache, |cache| {
        refresh_once(db, cache, name, opts).map_err(|e| (e, Some(name.to_string())))
    })
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

pub struct ExplainRow {
    pub mask: u32,
    pub delta_leaves: String,
    pub sign: i32,
    pub status: TermStatus,
    pub reason: String,
    pub sql: String,
    pub mode: Mode,
    pub mode_reason: String,
}

/// Each table of view `name` and the change source its next refresh captures it with, as
/// `table: source` (empty for a view that is recomputed).
pub fn sources_of(db: &dyn Sql, cache: &mut Cache, name: &str) -> Result<String> {
    if cache.strategy(db, name)? == Strategy::Full {
        return Ok(String::new());
    }
    let (_, c, _) = cache.compiled(db, name)?;
    let named: Vec<String> =
        c.tables.iter().zip(&c.sources).map(|(t, s)| format!("{}: {}", t.name, s.as_str())).collect();
    Ok(named.join(", "))
}

/// The plan of the next refresh, without applying it: the capture runs in transactions whose
/// persistent writes are rolled back (only temp tables are committed, and dropped).
pub fn explain(db: &dyn Sql, cache: &mut Cache, name: &str, opts: Options) -> Result<Vec<ExplainRow>> {
    if cache.strategy(db, name)? == Strategy::Full {
        let view = super::full::record(db, cache, name)?;
        return Ok(vec![ExplainRow {
            mask: 0,
            delta_leaves: String::new(),
            sign: 1,
            status: TermStatus::Run,
            reason: format!(
                "recompute of the whole view: no incremental rule for {}",
                view.strategy_reason.as_deref().unwrap_or("its query")
            ),
            sql: view.query.clone(),
            mode: Mode::Full,
            mode_reason: super::full::mode_reason(&view),
        }]);
    }
    let started = Instant::now();
    let first = in_transaction(db, || first_transaction(db, cache, name, &opts))?;
    let go = match first {
        First::NothingToDo { c } => {
            return Ok(plan::union_terms(&c.q.spans())
                .into_iter()
                .map(|t| ExplainRow {
                    mask: t.mask,
                    delta_leaves: plan::leaves_of(t.mask)
                        .map(|i| c.q.leaves[i].alias.clone())
                        .collect::<Vec<_>>()
                        .join(","),
                    sign: t.sign,
                    status: TermStatus::EmptySkipped,
                    reason: "empty delta: no table changed".into(),
                    sql: String::new(),
                    mode: Mode::Incremental,
                    mode_reason: "nothing to do: no table changed".into(),
                })
                .collect());
        }
        First::Go(go) => go,
    };
    let first_inputs = go.temp_tables();
    db.execute("BEGIN TRANSACTION")?;
    let prepared = second_transaction(db, go, started, None);
    let outcome = prepared.map(|p| {
        if p.plan.is_empty() {
            // Recomputed without capturing (a view that does not track its tables): one row.
            return vec![ExplainRow {
                mask: 0,
                delta_leaves: String::new(),
                sign: 1,
                status: TermStatus::Run,
                reason: "recompute of the whole view".into(),
                sql: p.full_sql(),
                mode: p.mode,
                mode_reason: p.reason.clone(),
            }];
        }
        if let Some(nt) = &p.nterm {
            return nt
                .terms
                .iter()
                .map(|&(i, s)| ExplainRow {
                    mask: 1 << i,
                    delta_leaves: p.c.q.leaves[i].alias.clone(),
                    sign: 1,
                    status: s,
                    reason: p.nterm_reason(nt, i, s),
                    sql: p.nterm_sql(nt, i),
                    mode: p.mode,
                    mode_reason: p.reason.clone(),
                })
                .collect();
        }
        p.plan
            .iter()
            .map(|&(t, s)| ExplainRow {
                mask: t.mask,
                delta_leaves: p.delta_leaves(t),
                sign: t.sign,
                status: s,
                reason: p.reason(t, s),
                sql: match p.group_lookup().filter(|_| s == TermStatus::Run) {
                    Some(g) => p.reduced_term_sql(t, g),
                    None => p.term_sql(t),
                },
                mode: p.mode,
                mode_reason: p.reason.clone(),
            })
            .collect::<Vec<_>>()
    });
    let _ = db.execute("ROLLBACK");
    discard_temp_tables(db, &first_inputs);
    outcome
}

#[cfg(test)]
mod tests {
    use super::size_class;

    #[test]
    fn size_classes_are_binary_digits() {
        // A kept plan serves deltas of the same number of binary digits: 4..7 rows share one.
        assert_eq!(size_class(0), 0);
        assert_eq!(size_class(1), 1);
        assert_eq!(size_class(4), 3);
        assert_eq!(size_class(7), 3);
        assert_eq!(size_class(8), 4);
        assert_eq!(size_class(6000), 13);
        assert_eq!(size_class(-5), 0);
    }
}
