//! The aggregates openivm maintains, by name: read by the parser (scalar subqueries, the
//! DISTINCT rewrite) and by the binder.

use crate::ast::Expr;
use crate::ir::AggFunc;

/// The function name the parser gives `GROUPING(...)` / `GROUPING_ID(...)` (bound over the
/// stored grouping set by the binder).
pub const GROUPING: &str = "grouping";

/// The plain aggregate calls `distinct_by_values` aggregates in its subquery first (their
/// partial results combine: counts and sums add up, extremes of extremes).
pub const PRE_AGGREGATED: [&str; 5] = ["count_star", "count", "sum", "min", "max"];

/// The aggregate a function name denotes, if it is one of the supported ones.
pub fn aggregate_func(name: &str) -> Option<AggFunc> {
    match name.to_ascii_lowercase().as_str() {
        "sum" => Some(AggFunc::Sum),
        "count_star" => Some(AggFunc::CountStar),
        "count" => Some(AggFunc::Count),
        "avg" | "mean" => Some(AggFunc::Avg),
        "min" => Some(AggFunc::Min),
        "max" => Some(AggFunc::Max),
        _ => None,
    }
}

/// Whether `e` calls a supported aggregate (also read by the parser, for scalar subqueries).
pub(crate) fn contains_aggregate(e: &Expr) -> bool {
    let mut found = false;
    e.visit(&mut |x| match x {
        Expr::Function { name, is_operator: false, .. } => found |= aggregate_func(name).is_some(),
        Expr::Aggregate(_) => found = true,
        _ => {}
    });
    found
}
