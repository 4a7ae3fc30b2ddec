//! The delta programs evaluated on a case: an inclusion-exclusion plan's terms, the N-term rule's
//! terms in an order, and the combined join, each as the Z-sets of its terms.

use std::collections::BTreeMap;

use crate::plan::fk_pruning::FkPruning;
use crate::plan::nterm::{self, LeafState};
use crate::plan::terms::{Mask, Term, TermStatus};

use super::case::Case;
use super::show::{mask_label, show};
use super::view::alias;
use super::zset::{combined_rows, term_rows, Read, ZSet};

/// How a term reads a leaf it does not read as a delta.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum StateRead {
    New,
    /// new rows plus the delta's deleted rows
    WithDeleted,
    /// the delta's rows alone
    DeltaRows,
}

/// An inclusion-exclusion plan's run terms over the case, each with its rows: each leaf of a
/// term's mask read as its delta, the others as `read(term, leaf)` says. Asserts that every
/// skipped term is empty.
pub(super) fn inclusion_exclusion(
    case: &Case,
    plan: &[(Term, TermStatus)],
    read: &dyn Fn(Term, usize) -> StateRead,
) -> Vec<(Term, ZSet)> {
    let n = case.n();
    let inputs = |term: Term| -> Vec<Vec<Read>> {
        (0..n)
            .map(|i| match (term.mask & (1 << i) != 0, read(term, i)) {
                (true, _) => case.delta_of(i),
                (false, StateRead::New) => case.new_of(i),
                (false, StateRead::WithDeleted) => case.with_deleted_of(i),
                (false, StateRead::DeltaRows) => case.delta_rows_of(i),
            })
            .collect()
    };
    let mut out = Vec::new();
    for &(term, status) in plan {
        match status {
            TermStatus::Run => out.push((term, term_rows(term, &inputs(term), &case.eqs))),
            TermStatus::EmptySkipped => {
                let rows = term_rows(term, &inputs(term), &case.eqs);
                let mask = mask_label(n, term.mask);
                assert!(rows.is_empty(), "the skipped term {mask} is not empty: {}\n{}", show(&rows), case.describe());
            }
            TermStatus::FkPruned => {}
        }
    }
    out
}

/// Inclusion-exclusion terms with their masks and signs written out.
pub(super) fn labeled(n: usize, terms: Vec<(Term, ZSet)>) -> Vec<(String, ZSet)> {
    terms.into_iter().map(|(t, z)| (format!("mask {} sign {:+}", mask_label(n, t.mask), t.sign), z)).collect()
}

/// The N-term rule's run terms in `order`: each term's leaves at `nterm::states`.
pub(super) fn n_term(case: &Case, order: &[usize], terms: &[(usize, TermStatus)]) -> Vec<(String, ZSet)> {
    terms
        .iter()
        .filter(|(_, s)| *s == TermStatus::Run)
        .map(|&(leaf, _)| {
            let states = nterm::states(order, leaf);
            let inputs: Vec<Vec<Read>> = states
                .iter()
                .enumerate()
                .map(|(j, s)| match s {
                    LeafState::New => case.new_of(j),
                    LeafState::Delta => case.delta_of(j),
                    LeafState::Old => case.old_of(j),
                })
                .collect();
            let label = format!("term of {} in order {order:?}: {states:?}", alias(leaf));
            (label, term_rows(Term { mask: 1 << leaf, sign: 1 }, &inputs, &case.eqs))
        })
        .collect()
}

/// The combined join of a plan's run terms, as a refresh builds it (`run_rows`): each leaf's
/// current state (with its deleted rows for a leaf in `with_deleted`), its delta where a run
/// term reads it. Its rows by mask.
pub(super) fn combined(case: &Case, plan: &[(Term, TermStatus)], pruning: &FkPruning) -> BTreeMap<Mask, ZSet> {
    let with_delta = plan.iter().filter(|(_, s)| *s == TermStatus::Run).fold(0, |m, (t, _)| m | t.mask);
    let n = case.n();
    let current: Vec<Vec<Read>> = (0..n)
        .map(|i| if pruning.with_deleted & (1 << i) != 0 { case.with_deleted_of(i) } else { case.new_of(i) })
        .collect();
    let deltas: Vec<Option<Vec<Read>>> =
        (0..n).map(|i| (with_delta & (1 << i) != 0).then(|| case.delta_of(i))).collect();
    combined_rows(&current, &deltas, pruning.skip, &case.eqs)
}

pub(super) fn combined_labeled(n: usize, rows: &BTreeMap<Mask, ZSet>) -> Vec<(String, ZSet)> {
    rows.iter().map(|(&mask, z)| (format!("combined rows of mask {}", mask_label(n, mask)), z.clone())).collect()
}
