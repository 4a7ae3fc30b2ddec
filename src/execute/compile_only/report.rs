//! The 'facts' row that ends a compiled program: what it was decided from, and why.

use serde_json::{json, Value as Json};

use super::decide::{branch_counts, leaf_branch, Decision};
use crate::ir::ViewQuery;
use crate::plan::fk_pruning::ForeignKey;
use crate::plan::nterm::LeafState;
use crate::plan::planner::Rule;
use crate::plan::terms::{self as plan, Mask, Term, TermStatus};
use crate::render::{self, compile as rc, Dialect, Qualified};

fn fk_json(fk: &ForeignKey) -> Json {
    json!({
        "child_table": fk.child.dotted(),
        "child_columns": fk.child_columns,
        "parent_table": fk.parent.dotted(),
        "parent_columns": fk.parent_columns,
    })
}

fn delta_leaves(q: &ViewQuery, mask: Mask) -> Vec<String> {
    plan::leaves_of(mask).map(|i| q.leaves[i].alias.clone()).collect()
}

/// For a set operation, what the 'facts' row says of each branch: its leaves, its operand of an
/// INTERSECT / EXCEPT, and its terms' counts.
fn branches_json(q: &ViewQuery, dec: &Decision) -> Vec<Json> {
    let spans = q.spans();
    q.branches
        .iter()
        .zip(&spans)
        .zip(branch_counts(&spans, &dec.program.inclusion_exclusion))
        .enumerate()
        .map(|(b, ((branch, &(first, n)), c))| {
            let mut j = json!({
                "branch": b,
                "leaves": (first..first + n).map(|i| q.leaves[i].alias.clone()).collect::<Vec<_>>(),
                "terms": c.total,
                "terms_run": c.run,
                "terms_fk_pruned": c.fk_pruned,
                "terms_empty_skipped": c.empty_skipped,
            });
            if let Some(side) = branch.side {
                j["side"] = json!(side);
            }
            j
        })
        .collect()
}

/// The 'facts' row: what the program was built from. For a set operation, leaves, proven FK
/// relations and terms carry their `branch`, and `branches` sums up each branch.
pub fn facts_document(d: Dialect, q: &ViewQuery, data: &Qualified, dec: &Decision) -> Json {
    let tables = q.tables();
    let deltas = rc::delta_relations(&tables);
    let spans = q.spans();
    let set_operation = !q.branches.is_empty();
    let with_branch = |mut j: Json, leaf: usize| {
        if set_operation {
            j["branch"] = json!(leaf_branch(&spans, leaf));
        }
        j
    };
    let leaves: Vec<Json> = q
        .leaves
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let j = json!({
                "leaf": i,
                "alias": l.alias,
                "table": l.table.dotted(),
                "delta_shape": dec.leaf_shape[i].as_str(),
                "insert_only": dec.insert_only[i],
                "delta_relation": deltas[dec.leaf_table[i]],
            });
            with_branch(j, i)
        })
        .collect();
    let proven: Vec<Json> = dec
        .proven
        .iter()
        .map(|p| {
            let mut j = fk_json(&p.fk);
            j["child_leaf"] = json!(q.leaves[p.child_leaf].alias);
            j["parent_leaf"] = json!(q.leaves[p.parent_leaf].alias);
            j["prunes"] = json!(dec.insert_only[p.parent_leaf]);
            with_branch(j, p.parent_leaf)
        })
        .collect();
    let rejected: Vec<Json> = dec
        .rejected
        .iter()
        .map(|(fk, why)| {
            let mut j = fk_json(fk);
            j["reason"] = json!(why);
            j
        })
        .collect();
    let unused: Vec<Json> = dec.unused.iter().map(|(fact, why)| json!({"fact": fact, "reason": why})).collect();
    let (kept, pruned): (Vec<Json>, Vec<Json>) = match dec.program.rule {
        Rule::InclusionExclusion => {
            let one = |t: &Term, s: &TermStatus| {
                let j = json!({"mask": t.mask, "delta_leaves": delta_leaves(q, t.mask), "sign": t.sign, "status": s.as_str()});
                with_branch(j, t.mask.trailing_zeros() as usize)
            };
            (
                dec.program
                    .inclusion_exclusion
                    .iter()
                    .filter(|(_, s)| *s == TermStatus::Run)
                    .map(|(t, s)| one(t, s))
                    .collect(),
                dec.program
                    .inclusion_exclusion
                    .iter()
                    .filter(|(_, s)| *s != TermStatus::Run)
                    .map(|(t, s)| one(t, s))
                    .collect(),
            )
        }
        Rule::NTerm => {
            let one = |i: usize, s: &TermStatus| {
                let states: Vec<&str> = crate::plan::nterm::states(&dec.program.order, i)
                    .iter()
                    .map(|s| match s {
                        LeafState::New => "new",
                        LeafState::Delta => "delta",
                        LeafState::Old => "old",
                    })
                    .collect();
                json!({"delta_leaf": q.leaves[i].alias, "leaf_states": states, "status": s.as_str()})
            };
            (
                dec.program.nterm.iter().filter(|(_, s)| *s == TermStatus::Run).map(|(i, s)| one(*i, s)).collect(),
                dec.program.nterm.iter().filter(|(_, s)| *s != TermStatus::Run).map(|(i, s)| one(*i, s)).collect(),
            )
        }
    };
    let mut doc = json!({
        "dialect": d.as_str(),
        "rule": dec.program.rule.as_str(),
        "rule_reason": dec.program.why,
        "stored_result": data.sql_in(d),
        "leaves": leaves,
        "fk_relations": {"proven": proven, "rejected": rejected},
        "unused_facts": unused,
        "skip_bits": {"empty_delta": dec.empty_bits, "fk": dec.fk_bits},
        "terms_kept": kept,
        "terms_pruned": pruned,
        "inclusion_exclusion_terms": plan::count_terms(&dec.program.inclusion_exclusion).total,
        "merge_keys": merge_key_names(q, dec),
    });
    if set_operation {
        doc["branches"] = json!(branches_json(q, dec));
    }
    doc
}

/// The stored key columns the program's MERGE matches on (empty without a MERGE of groups).
fn merge_key_names(q: &ViewQuery, dec: &Decision) -> Vec<String> {
    render::matched_keys(&render::stored_columns(q).0, dec.program.merge_keys.as_deref())
}
