//! The data of one refresh between its steps: the options, each table's input (feed, fresh
//! batch, the view's delta), what the first transaction hands the second (`Go`), and the
//! prepared program (`Prepared`) that `apply` runs.

use std::collections::HashMap;
use std::time::Instant;

use super::cache::Compiled;
pub use super::report::RefreshReport;
use crate::capture::batch_facts::BatchFacts;
use crate::capture::view_delta;
use crate::capture::{feeds, feeds::Feed, DeltaStats, Fresh, SourceKind};
use crate::plan::fk_pruning::{self, FkPruning, ProvenRelation};
use crate::plan::mode::{Mode, Requested};
use crate::plan::terms::{Term, TermStatus};
use crate::render::{Qualified, Source};

/// Above this many run terms, a refresh evaluates them all in one combined join (see
/// `render::combined_terms`) instead of one join per term.
pub const COMBINE_ABOVE: usize = 15;

#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    pub fk_pruning: Option<bool>,
    pub mode: Option<Requested>,
    /// Net every trigger batch with deletes before the terms read it (`refresh::netting_on_error`).
    pub net_batches: bool,
}

/// One table of a refresh: its feed, what was captured, and the view's delta of it.
pub(crate) struct Input {
    pub(crate) feed: Feed,
    pub(crate) fresh: Fresh,
    /// The view's delta: logged batches after its cursor and the fresh batch.
    pub(crate) delta: Option<Qualified>,
    pub(crate) stats: DeltaStats,
    /// Captured in the first transaction: current-state scans read this bounded state.
    pub(crate) bounded: Option<String>,
    /// The source the table declares now, when the feed must switch to it after this batch.
    pub(crate) switch_to: Option<SourceKind>,
    pub(crate) round: InRound,
    /// The delta is the feed's log taken as it is although the view nets this table's deletes
    /// (`view_delta::logged_deltas` with `speculate`): netted only if its key check fails.
    pub(crate) unnetted: bool,
}

impl Input {
    /// A table's input, its delta neither a round's batch nor a log taken without netting.
    pub(crate) fn new(
        feed: Feed,
        fresh: Fresh,
        (delta, stats): feeds::ViewDelta,
        bounded: Option<String>,
        switch_to: Option<SourceKind>,
    ) -> Input {
        Input { feed, fresh, delta, stats, bounded, switch_to, round: InRound::Alone, unnetted: false }
    }

    /// Marks the delta of a `parent` (a table pruning may skip) unnetted when it is the trigger
    /// log's unstamped rows with deletes, taken as they are: an update of a column the view does
    /// not read is a -1 and a +1 of one key there, which fails the key check until netted.
    pub(crate) fn parent(self, parent: bool) -> Input {
        let unnetted = self.unnetted
            || (parent && self.fresh.unstamped && self.delta == self.fresh.delta && self.stats.deletes > 0);
        Input { unnetted, ..self }
    }

    /// Whether the terms read this table's delta from a temp table made in this refresh (its
    /// fresh batch, or a delta of its own).
    pub(crate) fn reads_temp_delta(&self) -> bool {
        self.fresh.delta.as_ref().is_some_and(view_delta::owned) || self.delta.as_ref().is_some_and(view_delta::owned)
    }
}

/// An input's part in a round of refreshes (`Round`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum InRound {
    /// Its batch is its own: not in a round, or nothing of the round's.
    Alone,
    /// The round's first view to capture the batch: it commits it, but neither logs it (the
    /// round's later views read it directly) nor drops it (the round does at its end).
    Captured,
    /// A later view of the round: its delta is the round's batch, which the round drops.
    Shares,
}

/// Whether a refresh changes whether the view tracks its tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tracking {
    Keep,
    /// Auto found the capture dearer than a recompute: the view stops reading its feeds.
    Stop,
    /// The view attaches to its tables' feeds again.
    Resume,
}

/// Everything a refresh or an explain decides before it writes.
pub(crate) struct Prepared {
    pub(crate) key: String,
    pub(crate) c: Compiled,
    pub(crate) inputs: Vec<Input>,
    pub(crate) relations: Vec<ProvenRelation>,
    pub(crate) pruning: FkPruning,
    /// Deleting parents a key check kept from pruning, and why (explain's reasons).
    pub(crate) unpruned: Vec<(usize, String)>,
    /// The relations (positions in `relations`) whose child's delta references only keys of its
    /// parent's delta (`fk_pruning::reads_delta_rows`).
    pub(crate) covered: Vec<usize>,
    pub(crate) plan: Vec<(Term, TermStatus)>,
    /// The N-term plan, when the refresh takes that rule instead of `plan`.
    pub(crate) nterm: Option<super::nterm::NTerm>,
    /// The group keys the merge matches on (`planner::Program::merge_keys`); None: every key.
    pub(crate) merge_keys: Option<Vec<usize>>,
    pub(crate) mode: Mode,
    pub(crate) reason: String,
    /// The feeds on the view itself, of the views that read it.
    pub(crate) readers: Vec<Feed>,
    pub(crate) tracking: Tracking,
    pub(crate) capture_ms: f64,
    /// Of `capture_ms`, the first captures of trigger feeds (a diff each): one-time work that
    /// auto mode does not count as what this view's captures cost.
    pub(crate) setup_ms: f64,
    /// When the writing transaction began.
    pub(crate) t2_started: Instant,
}

/// What the second transaction starts from.
pub(crate) struct Go {
    pub(crate) key: String,
    pub(crate) c: Compiled,
    /// Appended-row count of each table, as the first transaction read it.
    pub(crate) sizes: Vec<i64>,
    /// Per table: captured in the first transaction, or None (captured in the second).
    pub(crate) inputs: Vec<Option<Input>>,
    pub(crate) requested: Requested,
    pub(crate) pruning: bool,
    /// The view's feeds as the first transaction read them (None: read them again), and the
    /// feeds on the view itself (of views that read it).
    pub(crate) feeds: Option<(Vec<Feed>, Vec<Feed>)>,
    /// A recompute decided before capture, and why (`mode::full_before_capture`).
    pub(crate) full_first: Option<String>,
    pub(crate) net_batches: bool,
}

impl Go {
    /// The temp tables the first transaction made, to drop when the second fails.
    pub(crate) fn temp_tables(&self) -> Vec<(Fresh, Option<Qualified>)> {
        self.inputs
            .iter()
            .flatten()
            .filter(|i| i.reads_temp_delta() || i.fresh.net.is_some())
            .map(|i| (i.fresh.clone(), i.delta.clone()))
            .collect()
    }

    /// For a second transaction that is the first one: the append-only tables are as their
    /// capture saw them, so their current-state scans read them whole, with no watermark bound.
    pub(crate) fn in_one_transaction(mut self) -> Go {
        for i in self.inputs.iter_mut().flatten() {
            if matches!(i.feed.kind, SourceKind::AppendOnly(_)) {
                i.bounded = None;
            }
        }
        self
    }
}

/// What the first transaction found.
pub(crate) enum First {
    NothingToDo { c: Compiled },
    Go(Go),
}

/// The feed of table `k` of the view among those it has cursors into.
pub(crate) fn feed_of(feeds: &[Feed], c: &Compiled, k: usize) -> Option<Feed> {
    feeds.iter().find(|f| f.table == c.tables[k] && f.covers(&c.read_columns[k])).cloned()
}

/// What the key checks of a refresh found: the checks that passed, and for the leaves of those
/// that failed, why (for explain).
#[derive(Default)]
pub(crate) struct KeyChecks {
    pub(crate) passed: Vec<fk_pruning::KeyCheck>,
    pub(crate) failed: Vec<(usize, String)>,
    /// Per relation counted (`coverage`): whether its child's delta references only keys of
    /// its parent's delta.
    pub(crate) covered: Vec<bool>,
    /// By table: what the checks found about the batch this refresh captured from it.
    pub(crate) learned: HashMap<usize, BatchFacts>,
}

/// Where leaf `i` of a refresh reads from: its delta, its bounded state, or the table.
pub(crate) fn leaf_source(c: &Compiled, inputs: &[Input], i: usize, as_delta: bool) -> Source {
    let input = &inputs[c.leaf_table[i]];
    match (as_delta, &input.delta, &input.bounded) {
        (true, Some(d), _) => Source::Delta(d.clone()),
        (_, _, Some(b)) => Source::Bounded(b.clone()),
        _ => Source::Current(c.q.leaves[i].table.clone()),
    }
}
