//! The one planner: from what is known of a view's deltas to the rule and the terms of its
//! delta program. A refresh, `openivm_explain` and `openivm_compile_with_facts` all call
//! `plan`, so the same facts give the same program.
//!
//! The policy: a set operation takes inclusion-exclusion per branch (the N-term rule orders the
//! leaves of one join). A single join takes the N-term rule, its leaves in `leaf_order`
//! (referenced leaves first, so an insert-only parent's term is pruned), when every leaf's
//! state before the batch can be read and it runs fewer terms than the pruned
//! inclusion-exclusion plan: each term of either rule is one join driven by one delta, so the
//! terms run are the cost. On a tie inclusion-exclusion is kept: its terms read current states
//! only.

use crate::plan::fk_pruning::{leaf_order, ProvenRelation};
use crate::plan::nterm;
use crate::plan::terms::{count_terms, empty_delta_bits, plan_spans, DeltaShape, Mask, Term, TermCounts, TermStatus};

/// The delta rules a program can use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    InclusionExclusion,
    NTerm,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::InclusionExclusion => "inclusion_exclusion",
            Rule::NTerm => "n_term",
        }
    }
}

/// What the planner is told.
#[derive(Clone, Copy, Debug)]
pub struct Facts<'a> {
    /// The leaves of each join (`ViewQuery::spans`): one span, or one per branch of a set
    /// operation.
    pub spans: &'a [(usize, usize)],
    /// Per leaf: what its delta holds.
    pub shapes: &'a [DeltaShape],
    /// The foreign keys proven between leaves.
    pub relations: &'a [ProvenRelation],
    /// The leaves whose delta terms foreign keys prove empty in inclusion-exclusion
    /// (`fk_pruning::fk_pruning(..).skip`, or `fk_skip_bits` when no delete is checked).
    pub fk_skip: Mask,
    /// Whether every leaf's state before the batch can be read (the N-term rule reads them).
    pub old_states: bool,
}

/// The program's rule and terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    pub rule: Rule,
    /// The inclusion-exclusion terms, always computed (reports show them).
    pub inclusion_exclusion: Vec<(Term, TermStatus)>,
    /// The N-term rule's leaf order and one term per leaf in that order; empty for a set
    /// operation.
    pub order: Vec<usize>,
    pub nterm: Vec<(usize, TermStatus)>,
    /// Whether the old states could be read (`Facts::old_states`): the N-term rule was a choice.
    pub old_states: bool,
}

/// Plans the delta program of one refresh (or compile-only call) from `f`.
pub fn plan(f: &Facts) -> Program {
    let inclusion_exclusion = plan_spans(f.spans, empty_delta_bits(f.shapes), f.fk_skip);
    let (order, terms) = match f.spans {
        [(0, n)] => {
            let order = leaf_order(*n, f.relations);
            let terms = nterm::terms(&order, f.shapes, f.relations);
            (order, terms)
        }
        _ => (vec![], vec![]),
    };
    let cheaper =
        !terms.is_empty() && nterm::cheaper(crate::plan::terms::count_terms(&terms), count_terms(&inclusion_exclusion));
    let rule = if f.old_states && cheaper { Rule::NTerm } else { Rule::InclusionExclusion };
    Program { rule, inclusion_exclusion, order, nterm: terms, old_states: f.old_states }
}

impl Program {
    /// The term counts of the chosen rule.
    pub fn counts(&self) -> TermCounts {
        match self.rule {
            Rule::InclusionExclusion => count_terms(&self.inclusion_exclusion),
            Rule::NTerm => crate::plan::terms::count_terms(&self.nterm),
        }
    }

    /// The delta leaves of each term that runs: a mask per inclusion-exclusion term, a single
    /// leaf per N-term term.
    pub fn run_masks(&self) -> Vec<Mask> {
        match self.rule {
            Rule::InclusionExclusion => {
                self.inclusion_exclusion.iter().filter(|(_, s)| *s == TermStatus::Run).map(|(t, _)| t.mask).collect()
            }
            Rule::NTerm => self.nterm.iter().filter(|(_, s)| *s == TermStatus::Run).map(|(i, _)| 1 << i).collect(),
        }
    }

    /// Why the program has its rule, naming leaves by `aliases`; None when the old states cannot
    /// be read (inclusion-exclusion is then the only rule).
    pub fn reason(&self, aliases: &[String]) -> Option<String> {
        if !self.old_states {
            return None;
        }
        let ie = count_terms(&self.inclusion_exclusion);
        if self.nterm.is_empty() {
            return Some(format!(
                "a set operation: inclusion-exclusion per branch (the N-term rule orders one join); {} of {} terms \
                 run, {} pruned by foreign keys, {} skipped for empty deltas",
                ie.run, ie.total, ie.fk_pruned, ie.empty_skipped
            ));
        }
        let nt = crate::plan::terms::count_terms(&self.nterm);
        match self.rule {
            Rule::NTerm => Some(format!(
                "N-term rule: it runs {} of {} terms, inclusion-exclusion {} of {}; leaves in the order {}{}",
                nt.run,
                nt.total,
                ie.run,
                ie.total,
                self.order.iter().map(|&i| aliases.get(i).map_or("?", |a| a.as_str())).collect::<Vec<_>>().join(", "),
                if nt.fk_pruned > 0 { " (referenced leaves first, so their insert-only terms are empty)" } else { "" }
            )),
            Rule::InclusionExclusion => Some(format!(
                "inclusion-exclusion rule: it runs {} of {} terms, the N-term rule would run {} of {}",
                ie.run, ie.total, nt.run, nt.total
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::fk_pruning::{FactSource, ForeignKey};
    use crate::plan::terms::DeltaShape as S;

    fn rel(child: usize, parent: usize) -> ProvenRelation {
        let t = |n: &str| crate::ir::TableId { catalog: "c".into(), schema: "s".into(), name: n.into() };
        let fk = ForeignKey {
            child: t("f"),
            child_columns: vec!["k".into()],
            parent: t("d"),
            parent_columns: vec!["k".into()],
            source: FactSource::Rely,
        };
        ProvenRelation { child_leaf: child, parent_leaf: parent, fk }
    }

    fn facts<'a>(
        spans: &'a [(usize, usize)],
        shapes: &'a [S],
        relations: &'a [ProvenRelation],
        old: bool,
    ) -> Facts<'a> {
        let fk_skip = crate::plan::fk_pruning::fk_skip_bits(relations, shapes);
        Facts { spans, shapes, relations, fk_skip, old_states: old }
    }

    #[test]
    fn without_old_states_a_join_takes_inclusion_exclusion() {
        let shapes = [S::INSERTS | S::DELETES; 3];
        let p = plan(&facts(&[(0, 3)], &shapes, &[], false));
        assert_eq!(p.rule, Rule::InclusionExclusion);
        assert_eq!(p.counts().run, 7);
        assert_eq!(p.reason(&[]), None);
    }

    #[test]
    fn with_old_states_the_rule_that_runs_fewer_terms_wins_and_a_tie_keeps_inclusion_exclusion() {
        let general = [S::INSERTS | S::DELETES; 3];
        let p = plan(&facts(&[(0, 3)], &general, &[], true));
        assert_eq!((p.rule, p.counts().run), (Rule::NTerm, 3));
        assert_eq!(p.run_masks(), vec![1, 2, 4]);
        // A star whose two dimensions are insert-only: both rules run the fact's term alone.
        let star = [S::INSERTS | S::DELETES, S::INSERTS, S::INSERTS];
        let rels = [rel(0, 1), rel(0, 2)];
        let p = plan(&facts(&[(0, 3)], &star, &rels, true));
        assert_eq!((p.rule, p.counts().run, p.run_masks()), (Rule::InclusionExclusion, 1, vec![1]));
        // One insert-only parent of three: inclusion-exclusion runs 3 terms, the N-term rule 2.
        let one = [S::INSERTS | S::DELETES, S::INSERTS, S::INSERTS | S::DELETES];
        let p = plan(&facts(&[(0, 3)], &one, &[rel(0, 1)], true));
        assert_eq!((p.rule, p.counts().run, p.order.clone()), (Rule::NTerm, 2, vec![1, 0, 2]));
        assert!(p.reason(&["f".into(), "d1".into(), "d2".into()]).unwrap().contains("order d1, f, d2"));
    }

    #[test]
    fn a_set_operation_takes_inclusion_exclusion_per_branch() {
        let shapes = [S::INSERTS | S::DELETES; 3];
        let p = plan(&facts(&[(0, 2), (2, 1)], &shapes, &[], true));
        assert_eq!(p.rule, Rule::InclusionExclusion);
        assert!(p.nterm.is_empty());
        assert!(p.reason(&[]).unwrap().starts_with("a set operation"));
    }
}
