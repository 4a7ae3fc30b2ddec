//! WHERE conjuncts with a subquery as joins with a stage: `x IN (SELECT ...)`, `EXISTS (...)`
//! and a comparison with a scalar subquery (`ast::SubqueryJoin`).
//!
//! Read from the parse tree, not the typed AST, which has no subqueries: a stage is the
//! subquery's own statement, handed back to DuckDB as JSON.

use serde_json::Value;

use crate::ast::{CompareOp, Correlated, CorrelatedKind, Select, SemiJoin, SubqueryJoin};
use crate::error::Result;
use crate::front::parse::expr::{compare_op, expr};
use crate::front::parse::raw::{statement_tree, RawExpr};
use crate::front::rewrite::correlated::correlated;

/// Splits a WHERE clause into the conjuncts whose subquery is a join with a stage (`x IN
/// (SELECT ...)`, and the correlated forms of `ast::Correlated`) and the rest. Whether an IN
/// subquery is uncorrelated is decided when its stage is bound (a correlated one does not bind
/// on its own). `read` is the parser's reading of a subquery's statement into the typed AST.
pub(crate) fn split_semi_joins(
    w: RawExpr,
    read: &dyn Fn(&Value) -> Result<Select>,
) -> Result<(Option<RawExpr>, Vec<SubqueryJoin>)> {
    let conjuncts = if w.class == "CONJUNCTION" && w.kind == "CONJUNCTION_AND" { w.children } else { vec![w] };
    let mut rest = Vec::new();
    let mut semi = Vec::new();
    for c in conjuncts {
        if let Some(corr) = correlated_conjunct(&c, read)? {
            semi.push(SubqueryJoin::Correlated(corr));
            continue;
        }
        let is_in = c.class == "SUBQUERY" && c.subquery_type == "ANY" && c.comparison_type == "COMPARE_EQUAL";
        match (is_in, c.subquery, c.child) {
            (true, Some(sub), Some(child)) => {
                semi.push(SubqueryJoin::In(SemiJoin { expr: expr(*child)?, tree: statement_tree(&sub) }))
            }
            (_, subquery, child) => rest.push(RawExpr { subquery, child, ..c }),
        }
    }
    let rest = match rest.len() {
        0 => None,
        1 => rest.pop(),
        _ => Some(RawExpr {
            class: "CONJUNCTION".into(),
            kind: "CONJUNCTION_AND".into(),
            children: rest,
            ..Default::default()
        }),
    };
    Ok((rest, semi))
}

/// `EXISTS (...)` or a comparison with a scalar subquery, as a correlated join where its shape
/// allows (`ast::Correlated`); None leaves the conjunct as it is.
fn correlated_conjunct(c: &RawExpr, read: &dyn Fn(&Value) -> Result<Select>) -> Result<Option<Correlated>> {
    if c.class == "SUBQUERY" && c.subquery_type == "EXISTS" {
        return match &c.subquery {
            Some(sub) => correlated(sub, CorrelatedKind::Exists, read),
            None => Ok(None),
        };
    }
    if c.class != "COMPARISON" {
        return Ok(None);
    }
    let op = match compare_op(&c.kind) {
        // IS [NOT] DISTINCT FROM is true or false against NULL: the join would drop rows it keeps.
        Some(CompareOp::DistinctFrom | CompareOp::NotDistinctFrom) | None => return Ok(None),
        Some(op) => op,
    };
    let scalar = |e: &Option<Box<RawExpr>>| {
        e.as_deref().filter(|e| e.class == "SUBQUERY" && e.subquery_type == "SCALAR").and_then(|e| e.subquery.clone())
    };
    let (x, sub, op) = match (scalar(&c.left), scalar(&c.right)) {
        (None, Some(sub)) => (c.left.clone(), sub, op),
        (Some(sub), None) => (c.right.clone(), sub, op.flipped()),
        _ => return Ok(None),
    };
    let Some(x) = x else { return Ok(None) };
    let Ok(x) = expr(*x) else { return Ok(None) };
    correlated(&sub, CorrelatedKind::Scalar { x, op }, read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comparison_turned_around_keeps_its_meaning() {
        assert_eq!(CompareOp::Lt.flipped(), CompareOp::Gt);
        assert_eq!(CompareOp::GtEq.flipped(), CompareOp::LtEq);
        assert_eq!(CompareOp::Eq.flipped(), CompareOp::Eq);
        assert_eq!(CompareOp::NotEq.flipped(), CompareOp::NotEq);
    }
}
