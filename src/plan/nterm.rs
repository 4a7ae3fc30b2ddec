//! The N-term (telescoping) delta rule, with an order of the leaves that lets foreign keys prune
//! its terms.
//!
//! For a join of n leaves taken in an order π, ΔV = Σ_k term(π_k), where term(π_k) joins the
//! leaves before π_k at their new state, Δπ_k, and the leaves after π_k at their old state
//! (each joined row weighted by its delta row's multiplicity). It telescopes: term(π_k) is V with
//! π_1..π_k new and the rest old, minus V with π_1..π_(k-1) new, so the sum is V_new - V_old,
//! for any order. One term per changed leaf (a leaf with an empty delta gives an empty term),
//! against 2^n - 1 inclusion-exclusion terms.
//!
//! Foreign keys. When a proven relation C -> P (C's columns reference P's key, equated by the
//! view's join) has an insert-only ΔP and C comes after P in the order, the term of P is empty:
//! it joins ΔP with C_old on the key, C_old's non-NULL references are keys of P_old (the FK holds
//! in the old state), and ΔP's keys are not keys of P_old (P_new = P_old ⊎ ΔP keeps its key
//! unique). `leaf_order` therefore puts every referenced leaf before the leaves that reference
//! it (docs/fk-aware-pruning.md has the proof in full).

use crate::plan::fk_pruning::ProvenRelation;
use crate::plan::terms::{DeltaShape, TermCounts, TermStatus};

/// Where a leaf reads from in an N-term term.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeafState {
    /// The table after the batch.
    New,
    /// The table's delta.
    Delta,
    /// The table before the batch.
    Old,
}

/// The state of every leaf in the term of `leaf`, for the leaves taken in `order`.
pub fn states(order: &[usize], leaf: usize) -> Vec<LeafState> {
    let pos = |j: usize| order.iter().position(|&o| o == j).unwrap_or(usize::MAX);
    let at = pos(leaf);
    (0..order.len())
        .map(|j| match pos(j).cmp(&at) {
            std::cmp::Ordering::Less => LeafState::New,
            std::cmp::Ordering::Equal => LeafState::Delta,
            std::cmp::Ordering::Greater => LeafState::Old,
        })
        .collect()
}

/// The relation that proves the term of `leaf` empty in `order`, if any: `leaf` is its parent,
/// its delta is insert-only, and its child reads the old state.
pub fn pruning_relation<'a>(
    order: &[usize],
    leaf: usize,
    shapes: &[DeltaShape],
    relations: &'a [ProvenRelation],
) -> Option<&'a ProvenRelation> {
    if !shapes.get(leaf).is_some_and(|s| s.insert_only()) {
        return None;
    }
    let st = states(order, leaf);
    relations.iter().find(|r| r.parent_leaf == leaf && st.get(r.child_leaf) == Some(&LeafState::Old))
}

/// The terms of the N-term rule, one per leaf in `order`: skipped when the leaf's delta is
/// empty (the more basic reason wins, as for inclusion-exclusion), pruned when a relation
/// proves it empty, run otherwise.
pub fn terms(order: &[usize], shapes: &[DeltaShape], relations: &[ProvenRelation]) -> Vec<(usize, TermStatus)> {
    order
        .iter()
        .map(|&i| {
            let status = if shapes.get(i).is_none_or(|s| s.is_empty()) {
                TermStatus::EmptySkipped
            } else if pruning_relation(order, i, shapes, relations).is_some() {
                TermStatus::FkPruned
            } else {
                TermStatus::Run
            };
            (i, status)
        })
        .collect()
}

/// Whether the N-term plan is cheaper than the inclusion-exclusion one: fewer terms to run
/// (each term of either rule is one join driven by one delta, so terms are the cost). On a
/// tie the inclusion-exclusion plan is kept: its terms read current states, no old ones.
pub fn cheaper(nterm: TermCounts, inclusion_exclusion: TermCounts) -> bool {
    nterm.run < inclusion_exclusion.run
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::TableId;
    use crate::plan::fk_pruning::{leaf_order, FactSource, ForeignKey};
    use crate::plan::terms::{self as plan, count_terms, DeltaShape as S};

    fn rel(child: usize, parent: usize) -> ProvenRelation {
        let t = |n: &str| TableId { catalog: "c".into(), schema: "s".into(), name: n.into() };
        ProvenRelation {
            child_leaf: child,
            parent_leaf: parent,
            fk: ForeignKey {
                child: t("f"),
                child_columns: vec!["k".into()],
                parent: t("d"),
                parent_columns: vec!["k".into()],
                source: FactSource::Rely,
            },
        }
    }

    #[test]
    fn parents_come_before_the_leaves_that_reference_them() {
        // f(0) -> d1(1), f(0) -> d2(2)
        assert_eq!(leaf_order(3, &[rel(0, 1), rel(0, 2)]), vec![1, 2, 0]);
        // a chain: f(0) -> o(1) -> c(2)
        assert_eq!(leaf_order(3, &[rel(0, 1), rel(1, 2)]), vec![2, 1, 0]);
        assert_eq!(leaf_order(3, &[]), vec![0, 1, 2]);
        // a cycle still places every leaf once
        let mut o = leaf_order(2, &[rel(0, 1), rel(1, 0)]);
        o.sort();
        assert_eq!(o, vec![0, 1]);
    }

    #[test]
    fn states_telescope_in_any_order() {
        use LeafState::*;
        assert_eq!(states(&[0, 1, 2], 1), vec![New, Delta, Old]);
        assert_eq!(states(&[1, 2, 0], 1), vec![Old, Delta, Old]);
        assert_eq!(states(&[1, 2, 0], 0), vec![Delta, New, New]);
    }

    #[test]
    fn the_reference_star_runs_one_term_of_three() {
        // f(0) -> d1(1), f(0) -> d2(2); every delta non-empty, the dimensions insert-only
        let rels = [rel(0, 1), rel(0, 2)];
        let shapes = [S::INSERTS | S::DELETES, S::INSERTS, S::INSERTS];
        let order = leaf_order(3, &rels);
        let t = terms(&order, &shapes, &rels);
        assert_eq!(t, vec![(1, TermStatus::FkPruned), (2, TermStatus::FkPruned), (0, TermStatus::Run)]);
        let ie = plan::count_terms(&plan::plan_terms(3, 0, facts_bits(&rels, &shapes)));
        assert_eq!((count_terms(&t).run, ie.run), (1, 1));
        assert!(!cheaper(count_terms(&t), ie));
        // in the leaves' own order the fact comes first and reads the dimensions new: no pruning
        assert!(terms(&[0, 1, 2], &shapes, &rels).iter().all(|(_, s)| *s == TermStatus::Run));
    }

    #[test]
    fn without_pruning_n_term_is_cheaper_and_skips_empty_deltas() {
        let shapes = [S::INSERTS | S::DELETES, S::DELETES, S::empty()];
        let t = terms(&[0, 1, 2], &shapes, &[]);
        assert_eq!(t, vec![(0, TermStatus::Run), (1, TermStatus::Run), (2, TermStatus::EmptySkipped)]);
        let ie = plan::count_terms(&plan::plan_terms(3, plan::empty_delta_bits(&shapes), 0));
        assert_eq!((count_terms(&t).run, ie.run), (2, 3));
        assert!(cheaper(count_terms(&t), ie));
    }

    #[test]
    fn a_deleting_parent_is_not_pruned() {
        let rels = [rel(0, 1)];
        let shapes = [S::INSERTS, S::INSERTS | S::DELETES];
        let order = leaf_order(2, &rels);
        assert_eq!(terms(&order, &shapes, &rels), vec![(1, TermStatus::Run), (0, TermStatus::Run)]);
    }

    fn facts_bits(r: &[ProvenRelation], s: &[DeltaShape]) -> plan::Mask {
        crate::plan::fk_pruning::fk_skip_bits(r, s)
    }
}
