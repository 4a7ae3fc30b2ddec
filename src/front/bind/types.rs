//! DuckDB's types of a query's expressions, and what is checked or chosen by them.

use std::collections::HashMap;

use crate::ast::Expr;
use crate::error::Result;
use crate::front::aggregates::{aggregate_func, contains_aggregate};
use crate::ir::{AggFunc, Aggregate, Leaf, Shape};

use super::catalog::Catalog;
use super::groups::typed_grouping;

/// An aggregate call of a select item (`SUM(x)`, `count(*)`), not an expression over one.
fn is_aggregate_call(e: &Expr) -> bool {
    matches!(e, Expr::Function { name, is_operator: false, .. } if aggregate_func(name).is_some())
        || matches!(e, Expr::Aggregate(_))
}

/// Asks DuckDB for the types of every expression of the query, then refuses what depends on
/// the session's TimeZone (`session::check_time_zone`) and records the types of the aggregates'
/// arguments (they decide how each sum is kept exact). Expressions over aggregates are typed
/// with each aggregate replaced by a NULL of the aggregate's type.
pub(super) fn type_and_check(
    leaves: &[Leaf],
    predicates: &[Expr],
    shape: &mut Shape,
    items: &[Expr],
    catalog: &dyn Catalog,
) -> Result<()> {
    // GROUPING() reads the grouping set, not the leaves: typed as the BIGINT it gives.
    let items: Vec<Expr> = items.iter().map(|e| typed_grouping(e.clone())).collect();
    let mut roots: Vec<Expr> = predicates.to_vec();
    match &*shape {
        Shape::Grouped { keys, aggregates, .. } => {
            roots.extend(keys.iter().cloned());
            roots.extend(aggregates.iter().filter_map(|a| a.arg.clone()));
            roots.extend(aggregates.iter().filter_map(|a| a.call.as_ref()).flat_map(|c| c.inputs()).cloned());
        }
        Shape::Bag { outputs, .. } => roots.extend(outputs.iter().cloned()),
    }
    if matches!(shape, Shape::Grouped { .. }) {
        let over_aggregates: Vec<&Expr> =
            items.iter().filter(|e| contains_aggregate(e) && !is_aggregate_call(e)).collect();
        let mut calls: Vec<Expr> = Vec::new();
        for e in &over_aggregates {
            e.visit(&mut |x| {
                if is_aggregate_call(x) && !calls.contains(x) {
                    calls.push(x.clone());
                }
            });
        }
        let call_types = catalog.expression_types(leaves, &calls)?;
        for e in over_aggregates {
            let typed = e.clone().rewrite(&mut |x| -> Result<Expr> {
                if !is_aggregate_call(&x) {
                    return Ok(x);
                }
                let null = Expr::Constant(crate::ast::Constant::Null);
                Ok(match calls.iter().position(|c| c == &x).and_then(|i| call_types.get(i).cloned().flatten()) {
                    Some(ty) => Expr::Cast {
                        expr: Box::new(null),
                        ty: crate::ast::TypeName { id: ty, decimal: None },
                        try_cast: false,
                    },
                    None => null,
                })
            })?;
            roots.push(typed);
        }
        roots.extend(items.iter().filter(|e| !contains_aggregate(e)).cloned());
    }
    // Each distinct node once, found again by its printed form (comparing every node with every
    // other was quadratic: a write's `k IN (<thousands of keys>)` spent most of its time there).
    let mut nodes: Vec<Expr> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for r in &roots {
        r.visit(&mut |x| {
            index.entry(format!("{x:?}")).or_insert_with(|| {
                nodes.push(x.clone());
                nodes.len() - 1
            });
        });
    }
    let types = catalog.expression_types(leaves, &nodes)?;
    let type_of = |e: &Expr| index.get(&format!("{e:?}")).and_then(|&i| types.get(i)?.as_deref());
    for r in &roots {
        crate::front::session::check_time_zone(r, &type_of)?;
    }
    if let Shape::Grouped { aggregates, .. } = shape {
        for a in aggregates.iter_mut() {
            a.arg_type = a.arg.as_ref().and_then(&type_of).map(str::to_string);
            if let Some(call) = &a.call {
                crate::front::session::check_recomputed_aggregate(&call.name, &call.inputs(), &type_of)?;
                exact_variance(a, &type_of);
            }
        }
    }
    Ok(())
}

/// A plain VAR_*/STDDEV_* call over an exact input (`ir::variance_input`) gets the incremental
/// rule (`AggFunc::Variance`); any other stays recomputed per group.
fn exact_variance<'t>(a: &mut Aggregate, type_of: &dyn Fn(&Expr) -> Option<&'t str>) {
    let Some(call) = &a.call else { return };
    let Some((population, root)) = crate::ir::variance_kind(&call.name) else { return };
    let plain = !call.distinct && call.order_by.is_empty() && call.filter.is_none() && call.args.len() == 1;
    if !plain || crate::ir::variance_input(type_of(&call.args[0])).is_none() {
        return;
    }
    a.arg_type = type_of(&call.args[0]).map(str::to_string);
    a.arg = Some(call.args[0].clone());
    a.func = AggFunc::Variance { population, root };
    a.call = None;
}
