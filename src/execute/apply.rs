//! Running a prepared refresh: the terms' SQL (one join per term, a combined join, or the
//! N-term rule), the merge into the stored result or a recompute, then the feeds, cursors and
//! history (`finish`).

use std::time::Instant;

use super::cache::Cache;
use super::history::{elapsed_ms, record_history, HistoryRow};
use super::prepare::drop_delta;
use super::prepared::{leaf_source, InRound, Input, Prepared, Tracking, COMBINE_ABOVE};
pub use super::report::RefreshReport;
use super::round::Round;
use crate::capture::feeds::{Committer, Handoff};
use crate::capture::{self, feeds, feeds::Feed, DeltaStats, SourceKind};
use crate::db::Sql;
use crate::error::{Error, Result};
use crate::plan::fk_pruning::{self, ProvenRelation};
use crate::plan::mode::Mode;
use crate::plan::terms::{self as plan, DeltaShape, Term, TermCounts, TermStatus};
use crate::render::{self, Qualified, Source, Storage};
use crate::sql::views::MARK_REFRESHED as VIEW_MARK_REFRESHED;

impl Prepared {
    /// A refresh's (total, capture) ms without its one-time work (`setup_ms`), as auto mode
    /// prices the view's next refreshes.
    pub(crate) fn steady(&self, (total_ms, capture_ms): (f64, f64)) -> (f64, f64) {
        (total_ms - self.setup_ms, capture_ms - self.setup_ms)
    }

    /// Where leaf `i` reads from: its delta, its bounded state, or the table.
    pub(crate) fn source(&self, i: usize, as_delta: bool) -> Source {
        leaf_source(&self.c, &self.inputs, i, as_delta)
    }

    /// Where leaf `i` reads from in an inclusion-exclusion term: as `source`, except that a
    /// parent pruned with deletes is read with its deleted rows (`fk_pruning::FkPruning`).
    pub(crate) fn term_source(&self, i: usize, as_delta: bool) -> Source {
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
    pub(crate) fn term_source_in(&self, i: usize, term: Term) -> Source {
        let k = self.c.leaf_table[i];
        match &self.inputs[k].delta {
            Some(d) if self.reads_delta_rows(i, term).is_some() => {
                render::delta_rows_as_state(d, &render::column_list(&self.c.read_columns[k]))
            }
            _ => self.term_source(i, term.mask & (1 << i) != 0),
        }
    }

    pub(crate) fn reads_delta_rows(&self, i: usize, term: Term) -> Option<&ProvenRelation> {
        fk_pruning::reads_delta_rows(&self.relations, &self.covered, self.pruning.with_deleted, term.mask, i)
    }

    pub(crate) fn term_sql(&self, term: Term) -> String {
        let sources: Vec<Source> = (0..self.c.q.leaves.len()).map(|i| self.term_source_in(i, term)).collect();
        render::term_select(&self.c.q, term, &sources)
    }

    /// The SQL of the N-term term of `leaf`: the leaves before it in the rule's order at their
    /// new state, its delta, the leaves after it at their old state.
    pub(crate) fn nterm_sql(&self, nt: &super::nterm::NTerm, leaf: usize) -> String {
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
    pub(crate) fn counts(&self) -> TermCounts {
        match &self.nterm {
            Some(nt) => crate::plan::terms::count_terms(&nt.terms),
            None => plan::count_terms(&self.plan),
        }
    }

    /// The view's query over the states this refresh brings it to.
    pub(crate) fn full_sql(&self) -> String {
        if self.inputs.is_empty() {
            return render::full_select(&self.c.q);
        }
        let sources: Vec<Source> = (0..self.c.q.leaves.len()).map(|i| self.source(i, false)).collect();
        render::term_select(&self.c.q, Term { mask: 0, sign: 1 }, &sources)
    }

    pub(crate) fn run_terms(&self) -> Vec<Term> {
        self.plan.iter().filter(|(_, s)| *s == TermStatus::Run).map(|(t, _)| *t).collect()
    }

    pub(crate) fn delta_leaves(&self, term: Term) -> String {
        plan::leaves_of(term.mask).map(|i| self.c.q.leaves[i].alias.clone()).collect::<Vec<_>>().join(",")
    }

    pub(crate) fn leaf_stats(&self, i: usize) -> &DeltaStats {
        &self.inputs[self.c.leaf_table[i]].stats
    }

    pub(crate) fn reason(&self, term: Term, status: TermStatus) -> String {
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
    pub(crate) fn nterm_reason(&self, nt: &super::nterm::NTerm, leaf: usize, status: TermStatus) -> String {
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

    pub(crate) fn delta_rows(&self) -> i64 {
        self.inputs.iter().map(|i| i.stats.rows as i64).sum()
    }

    /// Applies the run terms to the stored result. With `readers` (the feeds on the view), the
    /// change of what the view shows is appended to their pending batches: what its changed
    /// groups showed before against what they show after (`shown_before`, `shown_after`), with
    /// the view's delta materialized once for both and for the merge. Returns whether it was.
    pub(crate) fn apply_terms(&self, db: &dyn Sql, readers: Option<&mut [Feed]>, kept_plans: bool) -> Result<bool> {
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
    pub(crate) fn plan_class(&self) -> Option<u32> {
        let native =
            self.c.storage == Storage::DuckDb && self.c.sources.iter().all(|s| !matches!(s, SourceKind::DuckLake(_)));
        let made_anew = self.inputs.iter().any(Input::reads_temp_delta);
        (native && !made_anew).then(|| size_class(self.delta_rows()))
    }

    /// The leaves this refresh leaves out of its terms, looking their group attributes up for
    /// new groups only (`merge_keys::GroupLookup`): where the merge matches on the keys that
    /// determine them, none of them changed, the terms are rendered one by one, and the change of
    /// what the view shows is not recorded for views over it (that reads the whole delta).
    pub(crate) fn group_lookup(&self) -> Option<&crate::plan::merge_keys::GroupLookup> {
        let g = self.c.group_lookup.as_ref()?;
        self.merge_keys()?;
        let unchanged =
            (0..self.c.q.leaves.len()).filter(|i| g.dropped & (1 << i) != 0).all(|i| self.leaf_stats(i).rows == 0);
        let one_by_one = self.nterm.is_none() && self.run_terms().len() <= COMBINE_ABOVE;
        (unchanged && one_by_one).then_some(g)
    }

    /// The SQL of a run term without the leaves `g` leaves out.
    pub(crate) fn reduced_term_sql(&self, term: Term, g: &crate::plan::merge_keys::GroupLookup) -> String {
        let sources: Vec<Source> = (0..self.c.q.leaves.len()).map(|i| self.term_source_in(i, term)).collect();
        render::group_lookup::reduced_term(&self.c.q, term, &sources, g)
    }

    /// The group keys this refresh's merge matches on when they determine the others (the
    /// planner's `merge_keys`).
    pub(crate) fn merge_keys(&self) -> Option<&[usize]> {
        self.merge_keys.as_deref()
    }

    /// What the view shows of its stored groups whose keys are in `keys`.
    pub(crate) fn shown(&self, keys: &Qualified) -> String {
        let from = render::stored_of_groups(&self.c.q, &self.c.view.data, keys);
        render::visible_rows(&self.c.q, &from, &self.c.outputs, &self.c.sum_kinds, self.c.view.avg_finish)
    }

    /// The first half of recording the change of what the view shows of the groups in `keys`
    /// for the feeds on it (`readers`), before the groups change: what they show, kept in a
    /// temp table, to net against what they show after (`shown_after`), so that a row shown
    /// alike is no change for the readers. Rows kept apart by their text (0.0 and -0.0, which
    /// netting would take as equal) are recorded as they are instead: shown before, -1.
    pub(crate) fn shown_before(
        &self,
        db: &dyn Sql,
        readers: &mut [Feed],
        keys: &Qualified,
    ) -> Result<Option<Qualified>> {
        if self.c.outputs.iter().any(|o| o.collation.is_some() || render::needs_text_identity(&o.ty)) {
            self.record_shown(db, readers, keys, -1)?;
            return Ok(None);
        }
        let before = Qualified::temp("openivm_shown_before".into());
        db.execute(&render::create_temp_table_as(&before, &self.shown(keys)))?;
        Ok(Some(before))
    }

    /// The second half (see `shown_before`): the netted change, or what the groups show now, +1.
    pub(crate) fn shown_after(
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
    pub(crate) fn record_shown(&self, db: &dyn Sql, readers: &mut [Feed], keys: &Qualified, sign: i8) -> Result<()> {
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
    pub(crate) fn recompute_groups(&self, db: &dyn Sql, readers: Option<&mut [Feed]>) -> Result<bool> {
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
    pub(crate) fn run_rows(&self) -> Option<String> {
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
    pub(crate) fn recompute(&self, db: &dyn Sql) -> Result<()> {
        let data = &self.c.view.data;
        db.execute(&render::delete_all(data))?;
        super::view::fill(db, &self.c.q, data, &self.full_sql())
    }

    pub(crate) fn discard(&self, db: &dyn Sql) -> Result<()> {
        for i in &self.inputs {
            drop_delta(db, i)?;
            if i.round != InRound::Captured {
                capture::discard(db, &i.fresh)?;
            }
        }
        Ok(())
    }
}

/// A delta's size class for kept plans: its number of binary digits, so that a plan made for a
/// delta is reused for deltas up to about twice or half its size, and planned again beyond.
pub(crate) fn size_class(rows: i64) -> u32 {
    64 - (rows.max(0) as u64).leading_zeros()
}

/// Whether a prepared refresh has nothing to write: no delta rows, every cursor at its feed's
/// newest batch, and no recompute asked for.
pub(crate) fn is_noop(p: &Prepared) -> bool {
    p.mode == Mode::Incremental
        && !p.inputs.is_empty()
        && p.inputs.iter().all(|i| {
            i.stats.rows == 0
                && i.feed.reader.cursor >= i.feed.seq
                && !i.feed.moved_by(&i.fresh)
                && i.switch_to.is_none()
                && i.round != InRound::Captured
        })
}

/// Applies a prepared refresh (terms or recompute), advances feeds and cursors, and records it.
/// Runs in the refresh's (last) transaction.
pub(crate) fn finish(
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
    match p.tracking {
        Tracking::Stop => feeds::detach_view(db, &at.catalog, &at.schema, &at.name)?,
        Tracking::Resume => {
            let source = cache.settings(db)?.default_source;
            super::attach::attach(db, &p.c.q, &at, &at.catalog, &source)?;
            cache.resumed(&p.key);
        }
        Tracking::Keep => {}
    }
    // The sources this refresh captured with, before a feed switches to its next one.
    let sources = render::list(&p.inputs, ", ", |i| format!("{}: {}", i.feed.table.name, i.feed.kind.as_str()));
    for i in p.inputs.iter_mut() {
        let handoff = if i.round == InRound::Captured { Handoff::Round } else { Handoff::Log };
        feeds::commit(db, &mut i.feed, &i.fresh, Committer::Refreshing { book: &mut book, handoff })?;
        if i.round == InRound::Captured {
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
        sources,
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

pub(crate) fn report(p: &Prepared, counts: TermCounts, started: Instant) -> RefreshReport {
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
pub(crate) const NOTHING_CHANGED: &str = "nothing changed in the view's tables since its last refresh";

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
