//! A correlated subquery (EXISTS, or a comparison with a scalar aggregate) as an inner join
//! with a stage grouped by its inner column of the correlation (`ast::Correlated`).
//!
//! The stage's statement is the subquery's own tree with its WHERE and select list changed, which
//! DuckDB reads back as JSON: the rule edits the parse tree, and reads the typed AST to decide.

use serde_json::Value;

use crate::ast::{CompareOp, Correlated, CorrelatedCandidate, CorrelatedKind, Expr, FromItem, Select, TableName};
use crate::error::Result;
use crate::front::aggregates::{aggregate_func, contains_aggregate};
use crate::front::parse::raw::{aliased, empty, statement_tree};
use crate::ir::AggFunc;

/// A correlated subquery `sub` as a join with a stage, when it is a plain SELECT of tables
/// correlated by an equality of two columns (`ast::Correlated`); None otherwise. `read` is the
/// parser's reading of a statement into the typed AST.
pub fn correlated(
    sub: &Value,
    kind: CorrelatedKind,
    read: &dyn Fn(&Value) -> Result<Select>,
) -> Result<Option<Correlated>> {
    let node = &sub["node"];
    let plain = node["type"] == "SELECT_NODE"
        && empty(&node["cte_map"]["map"])
        && empty(&node["modifiers"])
        && node["having"].is_null()
        && node["qualify"].is_null()
        && node["sample"].is_null()
        && empty(&node["group_expressions"])
        && node["aggregate_handling"] == "STANDARD_HANDLING";
    if !plain {
        return Ok(None);
    }
    let Ok(inner) = read(sub) else {
        return Ok(None);
    };
    if !inner.semi_joins.is_empty() {
        return Ok(None);
    }
    let (mut inner_tables, mut on_columns) = (Vec::new(), Vec::new());
    if !from_tables(&inner.from, &mut inner_tables, &mut on_columns) {
        return Ok(None);
    }
    // A scalar's one item: joined on a correlation only if NULL over no rows; uncorrelated
    // only if it aggregates (then the subquery has exactly one row).
    let (correlatable, global) = match (&kind, inner.items.as_slice()) {
        (CorrelatedKind::Exists, _) => (true, false),
        (CorrelatedKind::Scalar { .. }, [item]) => {
            on_columns.extend(columns_in(&item.expr));
            (null_over_no_rows(&item.expr), contains_aggregate(&item.expr))
        }
        (CorrelatedKind::Scalar { .. }, _) => return Ok(None),
    };
    let w = &node["where_clause"];
    let conjuncts: Vec<Value> = if w["class"] == "CONJUNCTION" && w["type"] == "CONJUNCTION_AND" {
        w["children"].as_array().cloned().unwrap_or_default()
    } else if w.is_null() {
        vec![]
    } else {
        vec![w.clone()]
    };
    // The same conjuncts as parsed with the subquery (one by one, in order).
    let parsed = match inner.where_clause {
        Some(Expr::And(all)) if conjuncts.len() > 1 => all,
        Some(one) => vec![one],
        None => vec![],
    };
    if parsed.len() != conjuncts.len() {
        return Ok(None);
    }
    let mut candidates = Vec::new();
    for (i, c) in conjuncts.iter().enumerate() {
        let Expr::Compare { op: CompareOp::Eq, left, right } = &parsed[i] else { continue };
        let (Expr::Column(left), Expr::Column(right)) = (&**left, &**right) else { continue };
        if !correlatable {
            continue;
        }
        let rest: Vec<Value> = conjuncts.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, c)| c.clone()).collect();
        let mut rest_columns = on_columns.clone();
        for (j, e) in parsed.iter().enumerate() {
            if j != i {
                rest_columns.extend(columns_in(e));
            }
        }
        for (inner_side, inner, outer) in [("left", left, right), ("right", right, left)] {
            candidates.push(CorrelatedCandidate {
                outer: outer.clone(),
                inner: inner.clone(),
                tree: statement_tree(&stage_statement(sub, &rest, &c[inner_side], &kind)),
                rest_columns: rest_columns.clone(),
            });
        }
    }
    if global {
        // Not correlated at all (the binder checks every column is the subquery's own): the
        // stage is the subquery itself, one row, joined with every row.
        let mut all = on_columns.clone();
        all.extend(parsed.iter().flat_map(columns_in));
        let mut whole = sub.clone();
        whole["node"]["select_list"][0]["alias"] = Value::String("subquery_value".into());
        candidates.push(CorrelatedCandidate {
            outer: vec![],
            inner: vec![],
            tree: statement_tree(&whole),
            rest_columns: all,
        });
    }
    if candidates.is_empty() {
        return Ok(None);
    }
    Ok(Some(Correlated { kind, inner_tables, candidates }))
}

/// The stage's statement for one reading of a correlated subquery: `sub` with the WHERE
/// conjuncts `rest`, selecting `inner` (EXISTS) or `inner, agg` grouped by `inner` (a scalar).
fn stage_statement(sub: &Value, rest: &[Value], inner: &Value, kind: &CorrelatedKind) -> Value {
    let mut s = sub.clone();
    let node = &mut s["node"];
    node["where_clause"] = match rest {
        [] => Value::Null,
        [one] => one.clone(),
        many => serde_json::json!({"class": "CONJUNCTION", "type": "CONJUNCTION_AND", "alias": "", "children": many}),
    };
    match kind {
        CorrelatedKind::Exists => node["select_list"] = Value::Array(vec![aliased(inner, "")]),
        CorrelatedKind::Scalar { .. } => {
            let value = aliased(&node["select_list"][0], "subquery_value");
            node["select_list"] = Value::Array(vec![aliased(inner, "subquery_key"), value]);
            node["group_expressions"] = Value::Array(vec![aliased(inner, "")]);
            node["group_sets"] = serde_json::json!([[0]]);
        }
    }
    s
}

/// The tables of a FROM clause of plain tables and inner joins, and the columns its ON
/// conditions name; None for anything else.
fn from_tables(from: &FromItem, tables: &mut Vec<(TableName, Option<String>)>, on: &mut Vec<Vec<String>>) -> bool {
    match from {
        FromItem::Table { name, alias } => {
            tables.push((name.clone(), alias.clone()));
            true
        }
        FromItem::Join { left, right, on: cond, .. } => {
            on.extend(cond.iter().flat_map(columns_in));
            from_tables(left, tables, on) && from_tables(right, tables, on)
        }
        FromItem::Subquery { .. } | FromItem::Union { .. } | FromItem::UnionBranch { .. } => false,
    }
}

/// Whether `e`, an expression over aggregates, is NULL when the aggregates read no rows: SUM,
/// AVG, MIN and MAX are, and so is arithmetic and a cast over them; COUNT (0) is not.
fn null_over_no_rows(e: &Expr) -> bool {
    match e {
        Expr::Function { name, args, is_operator: false } => {
            matches!(aggregate_func(name), Some(AggFunc::Sum | AggFunc::Avg | AggFunc::Min | AggFunc::Max))
                && args.len() == 1
        }
        Expr::Function { name, args, is_operator: true } if matches!(name.as_str(), "+" | "-" | "*" | "/") => {
            args.iter().any(null_over_no_rows)
                && args.iter().all(|a| null_over_no_rows(a) || matches!(a, Expr::Constant(_)))
        }
        Expr::Cast { expr, .. } => null_over_no_rows(expr),
        _ => false,
    }
}

/// The column references in `e`.
fn columns_in(e: &Expr) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    e.visit(&mut |e| {
        if let Expr::Column(parts) = e {
            out.push(parts.clone());
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::{Constant, TypeName};

    fn col(parts: &[&str]) -> Expr {
        Expr::Column(parts.iter().map(|s| s.to_string()).collect())
    }

    fn call(name: &str, args: Vec<Expr>, is_operator: bool) -> Expr {
        Expr::Function { name: name.into(), args, is_operator }
    }

    #[test]
    fn a_scalar_subquery_joins_only_when_it_is_null_over_no_rows() {
        let avg = call("avg", vec![col(&["q"])], false);
        // 0.2 * avg(q): NULL when avg is
        assert!(null_over_no_rows(&call("*", vec![Expr::Constant(Constant::Double(0.2)), avg.clone()], true)));
        assert!(null_over_no_rows(&Expr::Cast {
            expr: Box::new(call("MAX", vec![col(&["q"])], false)),
            ty: TypeName { id: "VARCHAR".into(), decimal: None },
            try_cast: false
        }));
        // count is 0 over no rows; a constant alone or a column is no aggregate; coalesce hides NULL
        assert!(!null_over_no_rows(&call("count", vec![col(&["q"])], false)));
        assert!(!null_over_no_rows(&call("+", vec![Expr::Constant(Constant::Integer(1)), col(&["q"])], true)));
        assert!(!null_over_no_rows(&Expr::Coalesce(vec![avg.clone(), Expr::Constant(Constant::Integer(0))])));
        assert!(!null_over_no_rows(&call("+", vec![avg, call("count_star", vec![], false)], true)));
    }
}
