//! Expressions of the user's query, in a dialect.

use super::dialect::Dialect;
use super::quote::{list, literal};
use crate::ast::{AggCall, CompareOp, Constant, Expr};

pub(crate) fn constant(c: &Constant) -> String {
    match c {
        Constant::Null => "NULL".into(),
        Constant::Bool(b) => if *b { "TRUE" } else { "FALSE" }.into(),
        Constant::Integer(i) if *i < 0 => format!("({i})"),
        Constant::Integer(i) => i.to_string(),
        Constant::Double(d) if d.is_finite() => {
            let s = format!("{d:e}");
            if *d < 0.0 {
                format!("({s})")
            } else {
                s
            }
        }
        Constant::Double(d) => format!("CAST({} AS DOUBLE)", literal(&d.to_string())),
        Constant::Decimal { digits, scale } => {
            let neg = *digits < 0;
            let mut s = digits.unsigned_abs().to_string();
            let scale = *scale as usize;
            if scale > 0 {
                while s.len() <= scale {
                    s.insert(0, '0');
                }
                s.insert(s.len() - scale, '.');
            }
            if neg {
                format!("(-{s})")
            } else {
                s
            }
        }
        Constant::Text(s) => literal(s),
    }
}

pub(crate) fn compare_op(op: CompareOp) -> &'static str {
    match op {
        CompareOp::Eq => "=",
        CompareOp::NotEq => "<>",
        CompareOp::Lt => "<",
        CompareOp::Gt => ">",
        CompareOp::LtEq => "<=",
        CompareOp::GtEq => ">=",
        CompareOp::DistinctFrom => "IS DISTINCT FROM",
        CompareOp::NotDistinctFrom => "IS NOT DISTINCT FROM",
    }
}

/// Renders an expression; bound columns use the alias of their leaf.
pub fn expr(e: &Expr, aliases: &[String]) -> String {
    expr_in(Dialect::DuckDb, e, aliases)
}

/// `expr` in dialect `d` (its quoting; function names stay DuckDB's).
pub fn expr_in(d: Dialect, e: &Expr, aliases: &[String]) -> String {
    let r = |x: &Expr| expr_in(d, x, aliases);
    match e {
        Expr::Column(parts) => list(parts, ".", |p| d.ident(p)),
        Expr::Bound { leaf, column } => format!("{}.{}", d.ident(&aliases[*leaf]), d.ident(column)),
        Expr::Star { relation: None } => "*".into(),
        Expr::Star { relation: Some(r) } => format!("{}.*", d.ident(r)),
        Expr::Constant(c) => constant(c),
        Expr::Function { name, args, is_operator: true } => {
            let keyword = match name.as_str() {
                "~~" => Some("LIKE"),
                "!~~" => Some("NOT LIKE"),
                "~~*" => Some("ILIKE"),
                "!~~*" => Some("NOT ILIKE"),
                "~~~" => Some("GLOB"),
                _ => None,
            };
            match (args.as_slice(), keyword) {
                ([a], _) => format!("({} {})", name, r(a)),
                ([a, b], Some(k)) => format!("({} {} {})", r(a), k, r(b)),
                ([a, b], None) => format!("({} {} {})", r(a), name, r(b)),
                _ => format!("{}({})", d.ident(name), list(args, ", ", r)),
            }
        }
        Expr::Function { name, args, .. } if name == "count_star" && args.is_empty() => "count(*)".into(),
        Expr::Function { name, args, .. } => {
            format!("{}({})", function_name(d, name), list(args, ", ", r))
        }
        Expr::Compare { op, left, right } => {
            format!("({} {} {})", r(left), compare_op(*op), r(right))
        }
        Expr::And(v) if v.is_empty() => "TRUE".into(),
        Expr::And(v) => format!("({})", list(v, " AND ", r)),
        Expr::Or(v) if v.is_empty() => "FALSE".into(),
        Expr::Or(v) => format!("({})", list(v, " OR ", r)),
        Expr::Not(x) => format!("(NOT {})", r(x)),
        Expr::IsNull { expr: x, negated } => {
            format!("({} IS {}NULL)", r(x), if *negated { "NOT " } else { "" })
        }
        Expr::InList { expr: x, list: l, negated } => {
            format!("({} {}IN ({}))", r(x), if *negated { "NOT " } else { "" }, list(l, ", ", r))
        }
        Expr::Between { expr: x, low, high } => {
            format!("({} BETWEEN {} AND {})", r(x), r(low), r(high))
        }
        Expr::Coalesce(v) => format!("COALESCE({})", list(v, ", ", r)),
        Expr::Case { checks, otherwise } => format!(
            "CASE {} ELSE {} END",
            list(checks, " ", |(w, t)| format!("WHEN {} THEN {}", r(w), r(t))),
            r(otherwise)
        ),
        Expr::Cast { expr: x, ty, try_cast } => {
            format!("{}({} AS {})", if *try_cast { "TRY_CAST" } else { "CAST" }, r(x), ty.sql())
        }
        Expr::Struct(fields) => {
            format!("struct_pack({})", list(fields, ", ", |(n, v)| format!("{} := {}", d.ident(n), r(v))))
        }
        Expr::Aggregate(call) => aggregate_call(d, call, aliases),
    }
}

/// An aggregate call with its modifiers: `name(DISTINCT a, b ORDER BY k DESC) FILTER (WHERE c)`.
pub(crate) fn aggregate_call(d: Dialect, call: &AggCall, aliases: &[String]) -> String {
    let r = |x: &Expr| expr_in(d, x, aliases);
    let mut inside = if call.name == "count_star" && call.args.is_empty() {
        "*".to_string()
    } else {
        format!("{}{}", if call.distinct { "DISTINCT " } else { "" }, list(&call.args, ", ", r))
    };
    if !call.order_by.is_empty() {
        inside.push_str(&format!(
            " ORDER BY {}",
            list(&call.order_by, ", ", |o| format!("{}{}", r(&o.key), order_suffix(o.descending, o.nulls_first)))
        ));
    }
    let name = if call.name == "count_star" { "count".to_string() } else { function_name(d, &call.name) };
    let filter = call.filter.as_ref().map(|f| format!(" FILTER (WHERE {})", r(f))).unwrap_or_default();
    format!("{name}({inside}){filter}")
}

/// ` ASC`/` DESC` and ` NULLS FIRST`/` NULLS LAST` as written (nothing for DuckDB's defaults).
pub(crate) fn order_suffix(descending: Option<bool>, nulls_first: Option<bool>) -> String {
    let dir = match descending {
        None => "",
        Some(false) => " ASC",
        Some(true) => " DESC",
    };
    let nulls = match nulls_first {
        None => "",
        Some(true) => " NULLS FIRST",
        Some(false) => " NULLS LAST",
    };
    format!("{dir}{nulls}")
}

/// Function names that DuckDB's grammar reads as keywords when unquoted (`position(a IN b)`).
pub(crate) const KEYWORD_FUNCTIONS: &[&str] = &["position"];

/// Function names are identifiers; plain lower-case ones stay unquoted for readability.
pub(crate) fn function_name(d: Dialect, name: &str) -> String {
    if !name.is_empty()
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !KEYWORD_FUNCTIONS.contains(&name)
    {
        name.to_string()
    } else {
        d.ident(name)
    }
}

pub(crate) fn conjunction(d: Dialect, preds: &[Expr], aliases: &[String]) -> String {
    if preds.is_empty() {
        "TRUE".into()
    } else {
        list(preds, " AND ", |p| expr_in(d, p, aliases))
    }
}
