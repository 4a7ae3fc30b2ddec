//! The key checks a deleting parent's delta must pass before foreign keys prune it, and the
//! coverage checks of child deltas, run in one statement (`render::capture::key_checks`).

use std::collections::HashMap;

use super::cache::Compiled;
use super::prepared::{leaf_source, InRound, Input, KeyChecks};
pub use super::report::RefreshReport;
use crate::capture::batch_facts::BatchFacts;
use crate::capture::{self};
use crate::db::{read_one, Sql};
use crate::error::{Error, Result};
use crate::plan::fk_pruning::{self, ProvenRelation};
use crate::render::{self, Qualified};

/// Above this many rows, the child of a RELY key is not scanned for references to the keys its
/// parent deleted: the scan reads a column of the whole child (11 ms for TPC-H SF1's 6M-row
/// lineitem, a tenth of a recompute of Q3), so the promise is trusted there, as the insert-only
/// rule trusts it for inserted keys (docs/fk-aware-pruning.md).
pub const REFERENCE_CHECK_MAX_ROWS: i64 = 1_000_000;

/// Replaces a delta taken from the log without netting (`Input::unnetted`: logged batches after
/// the view's cursor, or a trigger log's unstamped rows) by its net change on the view's
/// columns, in a temp table of its own (`name`; none when nothing is left).
pub(crate) fn net_delta(
    db: &dyn Sql,
    input: &mut Input,
    columns: &[crate::ir::ColumnDef],
    name: &Qualified,
) -> Result<()> {
    let log = input.feed.log();
    let parts = [match input.fresh.unstamped {
        true => render::trigger::unstamped(&log, columns),
        false => render::capture::log_after(&log, columns, input.feed.reader.cursor, input.feed.seq),
    }];
    let stats = capture::netted_delta(db, name, &parts, columns)?;
    input.delta = (stats.rows > 0).then(|| name.clone());
    input.stats = stats;
    input.unnetted = false;
    Ok(())
}

/// The child and referencing columns of `k`'s reference check, where it has one: a declared key
/// whose child has at most `REFERENCE_CHECK_MAX_ROWS` rows. It reads the child's current rows, so
/// its outcome is no fact of a batch.
pub(crate) fn reference_check<'k>(
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
/// read by a view one batch behind from a log that holds just that batch (`view_delta::logged_deltas`
/// takes the log itself as the delta only when every row of it is after the cursor).
pub(crate) fn raw_batch(i: &Input) -> Option<i64> {
    let delta = i.delta.as_ref()?;
    let f = &i.feed;
    if i.fresh.delta.as_ref() == Some(delta) {
        (f.reader.cursor >= 0 && f.reader.cursor == f.seq && i.round == InRound::Alone).then_some(f.seq + 1)
    } else {
        let nothing_fresh = i.fresh.stats.rows == 0;
        (nothing_fresh
            && *delta == f.log()
            && f.reader.cursor >= 0
            && f.reader.cursor + 1 == f.seq
            && f.pending_rows == 0)
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
pub(crate) fn passed_key_checks(
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
        let sql = render::capture::key_checks(&parts, &coverage_sql);
        let counts: Vec<i64> = read_one(&db.query(&sql)?, &sql)?;
        let count = |i: usize| {
            counts
                .get(i)
                .copied()
                .ok_or_else(|| Error::Internal(format!("a key check returned {} counts", counts.len())))
        };
        for (j, &i) in to_check.iter().enumerate() {
            let holds = count(2 * j)? == 0;
            unique[i] = Some(holds);
            unreferenced[i] = count(2 * j + 1)? == 0;
            let k = with_delta[i].0;
            learn(k.leaf, &|f| f.note_unique(&k.columns, holds));
        }
        for (n, &j) in to_count.iter().enumerate() {
            let holds = count(2 * to_check.len() + n)? == 0;
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
