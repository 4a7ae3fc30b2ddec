//! The decision of a compiled program: the facts proven on the view's joins, and the planner's
//! program from them.

use super::facts::{Resolved, ShapeFact};
use crate::ir::ViewQuery;
use crate::plan::fk_pruning::{self, ForeignKey, ProvenRelation};
use crate::plan::planner;
use crate::plan::planner::Program;
use crate::plan::terms::{self as plan, DeltaShape, Mask, Term, TermStatus};

/// The branch (index into `spans`) that leaf `i` belongs to.
pub fn leaf_branch(spans: &[(usize, usize)], i: usize) -> usize {
    plan::branch_of(spans, 1 << i).unwrap_or(0)
}

/// The term counts of each branch of `spans` in an inclusion-exclusion plan.
pub fn branch_counts(spans: &[(usize, usize)], ie: &[(Term, TermStatus)]) -> Vec<plan::TermCounts> {
    (0..spans.len())
        .map(|b| {
            let mine: Vec<(Term, TermStatus)> =
                ie.iter().filter(|(t, _)| plan::branch_of(spans, t.mask) == Some(b)).copied().collect();
            plan::count_terms(&mine)
        })
        .collect()
}

/// Everything the program is built from, and reported in its 'facts' row.
#[derive(Clone, Debug)]
pub struct Decision {
    /// The planner's program: rule, terms, merge keys, and why (`Program::why`).
    pub program: Program,
    /// Per leaf: its table's index in `ViewQuery::tables`, its shape, whether it is insert-only.
    pub leaf_table: Vec<usize>,
    pub leaf_shape: Vec<ShapeFact>,
    pub insert_only: Vec<bool>,
    pub empty_bits: Mask,
    pub fk_bits: Mask,
    pub proven: Vec<ProvenRelation>,
    /// Fact FKs that no pair of leaves proves, with why.
    pub rejected: Vec<(ForeignKey, String)>,
    /// Facts about tables the view does not read, with why.
    pub unused: Vec<(String, String)>,
}

/// Why no pair of leaves proves `fk`.
fn rejection(fk: &ForeignKey) -> String {
    if fk.child == fk.parent {
        "self-referencing: the child and parent are the same table".into()
    } else {
        let pairs: Vec<String> =
            fk.child_columns.iter().zip(&fk.parent_columns).map(|(c, p)| format!("{c} = {p}")).collect();
        format!("the view's inner-join predicates do not equate every column pair ({})", pairs.join(", "))
    }
}

/// Decides the plan from the resolved facts.
pub fn decide(q: &ViewQuery, r: &Resolved) -> Decision {
    let tables = q.tables();
    let leaf_table: Vec<usize> =
        q.leaves.iter().map(|l| tables.iter().position(|t| t == &l.table).unwrap_or(0)).collect();
    let leaf_shape: Vec<ShapeFact> =
        leaf_table.iter().map(|&k| r.shapes.get(k).copied().unwrap_or(ShapeFact::General)).collect();
    let shapes: Vec<DeltaShape> = leaf_shape.iter().map(|s| s.delta_shape(r.assume_insert_only)).collect();
    let insert_only: Vec<bool> = shapes.iter().map(|s| s.insert_only()).collect();
    let empty_bits = plan::empty_delta_bits(&shapes);
    let proven = fk_pruning::proven_relations(q, &r.fks);
    let rejected =
        r.fks.iter().filter(|fk| !proven.iter().any(|p| &p.fk == *fk)).map(|fk| (fk.clone(), rejection(fk))).collect();
    let fk_bits = fk_pruning::fk_skip_bits(&proven, &shapes);
    let spans = q.spans();
    // The caller's engine reads its tables' states before the batch (`old_state`), so the
    // N-term rule is open to it, as to a refresh of an all-DuckLake view.
    let aliases: Vec<String> = q.leaves.iter().map(|l| l.alias.clone()).collect();
    let merge_keys = crate::plan::merge_keys::merge_keys(q, &r.fks);
    let program = planner::plan(&planner::Facts {
        spans: &spans,
        shapes: &shapes,
        relations: &proven,
        fk_skip: fk_bits,
        old_states: planner::OldStates::Readable,
        merge_keys: merge_keys.as_ref(),
        mode: None,
        aliases: &aliases,
    });
    Decision {
        program,
        leaf_table,
        leaf_shape,
        insert_only,
        empty_bits,
        fk_bits,
        proven,
        rejected,
        unused: r.unused.clone(),
    }
}
