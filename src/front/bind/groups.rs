//! GROUP BY keys, and a grouped query's expressions over its stored result: keys and
//! aggregates as stored columns, GROUPING() as a constant per grouping set.

use crate::ast::{Constant, Expr, TypeName};
use crate::error::{Error, Result};
use crate::front::aggregates::{aggregate_func, contains_aggregate, GROUPING};
use crate::ir::{stored, AggFunc, Aggregate, GroupingSets};

use super::catalog::Catalog;
use super::scope::{bind_columns, bind_error, eq, eq_ci, resolve_column, Scope};

/// A GROUP BY item: a position (`GROUP BY 1`), a column, or a select-list alias.
pub(super) fn bind_group_key(
    g: Expr,
    items: &[(Expr, Option<String>)],
    scope: &Scope,
    catalog: &dyn Catalog,
) -> Result<Expr> {
    if let Expr::Constant(crate::ast::Constant::Integer(n)) = g {
        return match usize::try_from(n).ok().and_then(|n| n.checked_sub(1)).and_then(|i| items.get(i)) {
            Some((e, _)) if !contains_aggregate(e) => Ok(e.clone()),
            Some(_) => Err(Error::Unsupported("GROUP BY a position that holds an aggregate".into())),
            None => bind_error(format!("GROUP BY position {n} is not in the select list")),
        };
    }
    if let Expr::Column(parts) = &g {
        if parts.len() == 1 && resolve_column(parts, scope)?.is_none() {
            if let Some((e, _)) = items.iter().find(|(_, a)| a.as_deref().is_some_and(|a| eq_ci(a, &parts[0]))) {
                return Ok(e.clone());
            }
        }
    }
    let bound = bind_columns(g, scope, catalog, false)?;
    Ok(bound)
}

/// Rewrites a select item of a grouped query over the stored columns: group keys become
/// `openivm_g<i>`, aggregates `openivm_a<j>` (recorded in `aggregates`).
pub(super) fn over_stored(
    e: Expr,
    keys: &[Expr],
    sets: Option<&GroupingSets>,
    aggregates: &mut Vec<Aggregate>,
) -> Result<Expr> {
    if let Some(i) = keys.iter().position(|k| k == &e) {
        return Ok(Expr::column(&stored::group(i)));
    }
    match e {
        Expr::Function { name, args, is_operator: false } if name == GROUPING => {
            let positions = args
                .iter()
                .map(|a| keys.iter().position(|k| k == a))
                .collect::<Option<Vec<usize>>>()
                .ok_or_else(|| Error::Bind("the arguments of GROUPING() must be GROUP BY keys".into()))?;
            Ok(grouping_over_stored(sets, &positions))
        }
        Expr::Function { name, mut args, is_operator: false } if aggregate_func(&name).is_some() => {
            let func = aggregate_func(&name).expect("checked");
            if args.iter().any(contains_aggregate) {
                return Err(Error::Unsupported("nested aggregates".into()));
            }
            let arg = match (func, args.len()) {
                (AggFunc::CountStar, 0) => None,
                (AggFunc::Count, 0) => None,
                (_, 1) => Some(args.remove(0)),
                _ => {
                    return Err(Error::Unsupported(format!("{}() with {} arguments", name.to_uppercase(), args.len())))
                }
            };
            let func = if func == AggFunc::Count && arg.is_none() { AggFunc::CountStar } else { func };
            Ok(Expr::column(&stored::agg(add_aggregate(
                aggregates,
                Aggregate { func, arg, arg_type: None, call: None },
            ))))
        }
        Expr::Aggregate(call) => {
            if call.inputs().into_iter().any(contains_aggregate) {
                return Err(Error::Unsupported("nested aggregates".into()));
            }
            // MIN/MAX(DISTINCT x) is MIN/MAX(x), which has a delta rule.
            let extremum = matches!(aggregate_func(&call.name), Some(AggFunc::Min | AggFunc::Max));
            if extremum && call.order_by.is_empty() && call.filter.is_none() && call.args.len() == 1 {
                let plain = Expr::Function { name: call.name, args: call.args, is_operator: false };
                return over_stored(plain, keys, sets, aggregates);
            }
            let agg = Aggregate { func: AggFunc::Recomputed, arg: None, arg_type: None, call: Some(*call) };
            Ok(Expr::column(&stored::agg(add_aggregate(aggregates, agg))))
        }
        Expr::Bound { leaf: _, column } => bind_error(format!(
            "column '{column}' must appear in the GROUP BY clause or be used in an aggregate function"
        )),
        other => other.map_children(&mut |c| over_stored(c, keys, sets, aggregates)),
    }
}

/// `GROUPING(k_1, ...)` over the stored result: a constant per grouping set, chosen by the
/// stored set id (0 without grouping sets: every key is in the one set).
fn grouping_over_stored(sets: Option<&GroupingSets>, positions: &[usize]) -> Expr {
    let Some(g) = sets else {
        return Expr::Constant(Constant::Integer(0));
    };
    let checks = g
        .sets
        .iter()
        .map(|set| {
            let id = g.id(set);
            let is_set = eq(Expr::column(stored::GROUPING_SET), Expr::Constant(Constant::Integer(id.into())));
            (is_set, Expr::Constant(Constant::Integer(g.grouping(id, positions).into())))
        })
        .collect();
    Expr::Case { checks, otherwise: Box::new(Expr::Constant(Constant::Null)) }
}

/// `e` with each GROUPING() call replaced by a BIGINT NULL, for asking DuckDB its types.
pub(super) fn typed_grouping(e: Expr) -> Expr {
    e.rewrite(&mut |x| -> std::result::Result<Expr, std::convert::Infallible> {
        Ok(match x {
            Expr::Function { name, is_operator: false, .. } if name == GROUPING => Expr::Cast {
                expr: Box::new(Expr::Constant(Constant::Null)),
                ty: TypeName { id: "BIGINT".into(), decimal: None },
                try_cast: false,
            },
            other => other,
        })
    })
    .unwrap_or_else(|never| match never {})
}

/// Whether `e` calls GROUPING().
pub(super) fn calls_grouping(e: &Expr) -> bool {
    let mut found = false;
    e.visit(&mut |x| found |= matches!(x, Expr::Function { name, is_operator: false, .. } if name == GROUPING));
    found
}

/// The index of `agg` among the view's aggregates, added if it is new (equal calls share one).
fn add_aggregate(aggregates: &mut Vec<Aggregate>, agg: Aggregate) -> usize {
    match aggregates.iter().position(|a| a == &agg) {
        Some(j) => j,
        None => {
            aggregates.push(agg);
            aggregates.len() - 1
        }
    }
}
