//! What a view query must not depend on: the caller's session. A refresh evaluates the query on
//! openivm's own connection, whose session state (variables, settings, default schema,
//! TimeZone, Calendar) is not the caller's, so such a query would be maintained with other
//! values than the ones its recompute in the caller's session gives. Pure: the binder supplies
//! DuckDB's types of the expressions (`Catalog::expression_types`).

use crate::ast::{Constant, Expr};
use crate::error::{Error, Result};

const SESSION: &str = "depends on the caller's session; the refresh runs in openivm's own session";
const TIME_ZONE: &str =
    "depends on the caller's TimeZone and Calendar settings; the refresh runs in openivm's own session";

/// Functions whose result is the state of the calling session rather than of their arguments.
const SESSION_FUNCTIONS: &[&str] = &[
    "getvariable",
    "current_setting",
    "current_schema",
    "current_schemas",
    "current_database",
    "current_catalog",
    "current_query",
    "in_search_path",
];

/// Built-in functions that DuckDB lists as CONSISTENT although they read the clock.
pub const CLOCK_FUNCTIONS: &[&str] = &["current_localtime", "current_localtimestamp"];

/// Refuses a call of a session-dependent function.
pub fn check_function(name: &str) -> Result<()> {
    if SESSION_FUNCTIONS.iter().any(|f| f.eq_ignore_ascii_case(name)) {
        return Err(Error::Refused(format!("{}() ({SESSION})", name.to_ascii_lowercase())));
    }
    Ok(())
}

fn is_tz(ty: Option<&str>) -> bool {
    ty.is_some_and(|t| {
        let t = t.to_ascii_uppercase();
        t.contains("TIMESTAMP WITH TIME ZONE") || t.contains("TIMESTAMPTZ")
    })
}

fn is_null(e: &Expr) -> bool {
    matches!(e, Expr::Constant(Constant::Null))
}

fn is_text(e: &Expr) -> bool {
    matches!(e, Expr::Constant(Constant::Text(_)))
}

fn refuse<T>(what: String) -> Result<T> {
    Err(Error::Refused(format!("{what} ({TIME_ZONE})")))
}

const TZ: &str = "TIMESTAMP WITH TIME ZONE";

/// Aggregates that only compare, count, hash or collect their inputs: over TIMESTAMPTZ values
/// they convert nothing (any other aggregate may, like STRING_AGG's cast to VARCHAR).
const COMPARING_AGGREGATES: &[&str] = &[
    "min",
    "max",
    "count",
    "count_star",
    "list",
    "array_agg",
    "arg_min",
    "arg_max",
    "argmin",
    "argmax",
    "min_by",
    "max_by",
    "first",
    "last",
    "any_value",
    "arbitrary",
    "mode",
    "approx_count_distinct",
    "histogram",
];

/// The TIMESTAMPTZ rule for an aggregate without a delta rule: an input of that type is
/// allowed only for the aggregates that compare, count or collect (`COMPARING_AGGREGATES`).
pub fn check_recomputed_aggregate<'t>(
    name: &str,
    inputs: &[&Expr],
    type_of: &dyn Fn(&Expr) -> Option<&'t str>,
) -> Result<()> {
    let lower = name.to_ascii_lowercase();
    if inputs.iter().any(|e| is_tz(type_of(e))) && !COMPARING_AGGREGATES.contains(&lower.as_str()) {
        return refuse(format!("{lower}() over a {TZ} value"));
    }
    Ok(())
}

/// The TIMESTAMP WITH TIME ZONE rule. A TIMESTAMPTZ value is an instant; everything that turns
/// it into or out of a local time uses the session's TimeZone (and Calendar): casts to and from
/// other types, arithmetic with intervals, date_trunc, date_part, strftime, comparisons with a
/// value of another type (which is cast), and so on. The rule: TIMESTAMPTZ values (also inside
/// lists and structs) may only be read as columns, compared with =, <, BETWEEN, IN, IS [NOT]
/// DISTINCT FROM or IS NULL against other TIMESTAMPTZ values, grouped, counted, output as they
/// are, chosen by CASE/COALESCE among TIMESTAMPTZ values, put in lists and structs, and turned
/// into epoch numbers (`epoch`, `epoch_ms`, `epoch_us`, `epoch_ns`) or into a local time of a
/// named zone (`timezone('UTC', x)`, `x AT TIME ZONE 'UTC'`); they may be made from epoch
/// numbers (`to_timestamp`) or from a local time of a named zone (`timezone('UTC', ts)`,
/// `make_timestamptz(..., 'UTC')`). Anything else over or into TIMESTAMPTZ is refused.
/// `type_of` gives DuckDB's type of each node (None: unknown, not checked).
pub fn check_time_zone<'t>(e: &Expr, type_of: &dyn Fn(&Expr) -> Option<&'t str>) -> Result<()> {
    for child in e.children() {
        check_time_zone(child, type_of)?;
    }
    let children = e.children();
    let child_tz = children.iter().any(|c| is_tz(type_of(c)));
    let own = type_of(e);
    if !child_tz && !is_tz(own) {
        return Ok(());
    }
    let same_type_or_null = |values: &[&Expr]| {
        let tz_type = values.iter().find_map(|v| type_of(v).filter(|t| is_tz(Some(t))));
        values.iter().all(|v| is_null(v) || (type_of(v).is_some() && type_of(v) == tz_type))
    };
    let other_type = |values: &[&Expr]| {
        values
            .iter()
            .filter(|v| !is_null(v) && !is_tz(type_of(v)))
            .find_map(|v| type_of(v))
            .unwrap_or("another type")
            .to_string()
    };
    if !child_tz {
        // A TIMESTAMPTZ value made here from values of other types.
        return match e {
            Expr::Bound { .. } | Expr::Column(_) => Ok(()),
            Expr::Cast { expr, .. } if is_null(expr) => Ok(()),
            Expr::Constant(_) => Ok(()),
            Expr::Function { name, args, is_operator: false } => {
                match (name.to_ascii_lowercase().as_str(), &args[..]) {
                    ("to_timestamp", [_]) => Ok(()),
                    ("timezone", [zone, _]) if is_text(zone) => Ok(()),
                    ("make_timestamptz", [_, _, _, _, _, _, zone]) if is_text(zone) => Ok(()),
                    (n, _) => refuse(format!("{n}() making a {TZ} value")),
                }
            }
            Expr::Cast { expr, .. } => {
                refuse(format!("a cast of a {} value to {TZ}", type_of(expr).unwrap_or("non-TIMESTAMPTZ")))
            }
            Expr::Function { name, .. } => refuse(format!("the operator {name} making a {TZ} value")),
            // CASE/COALESCE over NULLs and the like: nothing is converted.
            _ => Ok(()),
        };
    }
    // A node over TIMESTAMPTZ values.
    match e {
        Expr::Compare { left, right, .. } => {
            let v = [&**left, &**right];
            if same_type_or_null(&v) {
                Ok(())
            } else {
                refuse(format!("comparing a {TZ} value with a value of type {}", other_type(&v)))
            }
        }
        Expr::Between { expr, low, high } => {
            let v = [&**expr, &**low, &**high];
            if same_type_or_null(&v) {
                Ok(())
            } else {
                refuse(format!("BETWEEN over a {TZ} value and a value of type {}", other_type(&v)))
            }
        }
        Expr::InList { expr, list, .. } => {
            let v: Vec<&Expr> = std::iter::once(&**expr).chain(list.iter()).collect();
            if same_type_or_null(&v) {
                Ok(())
            } else {
                refuse(format!("IN over a {TZ} value and a value of type {}", other_type(&v)))
            }
        }
        Expr::IsNull { .. } => Ok(()),
        Expr::Coalesce(values) => {
            let v: Vec<&Expr> = values.iter().collect();
            if same_type_or_null(&v) {
                Ok(())
            } else {
                refuse(format!("COALESCE over a {TZ} value and a value of type {}", other_type(&v)))
            }
        }
        Expr::Case { checks, otherwise } => {
            let v: Vec<&Expr> = checks.iter().map(|(_, t)| t).chain(std::iter::once(&**otherwise)).collect();
            if !v.iter().any(|x| is_tz(type_of(x))) || same_type_or_null(&v) {
                Ok(())
            } else {
                refuse(format!("CASE over a {TZ} value and a value of type {}", other_type(&v)))
            }
        }
        Expr::Cast { expr, ty: _, .. } if own.is_some() && type_of(expr) == own => Ok(()),
        Expr::Cast { .. } => refuse(format!("a cast of a {TZ} value to {}", own.unwrap_or("another type"))),
        Expr::Struct(_) => Ok(()),
        Expr::Function { name, args, is_operator: false } => match (name.to_ascii_lowercase().as_str(), &args[..]) {
            ("list_value", _) => Ok(()),
            ("epoch" | "epoch_ms" | "epoch_us" | "epoch_ns", [_]) => Ok(()),
            ("timezone", [zone, _]) if is_text(zone) => Ok(()),
            (n, _) => refuse(format!("{n}() over a {TZ} value")),
        },
        Expr::Function { name, .. } => refuse(format!("the operator {name} over a {TZ} value")),
        Expr::And(_) | Expr::Or(_) | Expr::Not(_) => Ok(()),
        _ => refuse(format!("an expression over a {TZ} value")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::{CompareOp, TypeName};

    fn col(c: &str) -> Expr {
        Expr::Bound { leaf: 0, column: c.into() }
    }

    fn cast(e: Expr, ty: &str) -> Expr {
        Expr::Cast { expr: Box::new(e), ty: TypeName { id: ty.into(), decimal: None }, try_cast: false }
    }

    fn func(name: &str, args: Vec<Expr>) -> Expr {
        Expr::Function { name: name.into(), args, is_operator: false }
    }

    fn text(s: &str) -> Expr {
        Expr::Constant(Constant::Text(s.into()))
    }

    /// A hand-written typer: columns tz (TIMESTAMPTZ), ts (TIMESTAMP), n (BIGINT); casts to their
    /// type; a few functions.
    fn type_of(e: &Expr) -> Option<&'static str> {
        Some(match e {
            Expr::Bound { column, .. } if column == "tz" || column == "tz2" => TZ,
            Expr::Bound { column, .. } if column == "ts" => "TIMESTAMP",
            Expr::Bound { .. } => "BIGINT",
            Expr::Constant(Constant::Text(_)) => "VARCHAR",
            Expr::Constant(_) => "INTEGER",
            Expr::Cast { ty, .. } if ty.id == "VARCHAR" => "VARCHAR",
            Expr::Cast { ty, .. } if ty.id == "DATE" => "DATE",
            Expr::Cast { ty, .. } if ty.id == TZ => TZ,
            Expr::Compare { .. } | Expr::IsNull { .. } | Expr::Between { .. } | Expr::InList { .. } => "BOOLEAN",
            Expr::Function { name, args, .. } => match name.as_str() {
                "epoch" => "DOUBLE",
                "to_timestamp" => TZ,
                "strftime" => "VARCHAR",
                "date_trunc" | "+" => TZ,
                "timezone" if type_of(&args[1]) == Some(TZ) => "TIMESTAMP",
                "timezone" => TZ,
                "list_value" => "TIMESTAMP WITH TIME ZONE[]",
                _ => return None,
            },
            Expr::Coalesce(v) => return type_of(&v[0]),
            _ => return None,
        })
    }

    fn check(e: &Expr) -> std::result::Result<(), String> {
        check_time_zone(e, &type_of).map_err(|e| e.to_string())
    }

    #[test]
    fn compares_groups_and_outputs_timestamptz_as_it_is() {
        let ok = [
            col("tz"),
            Expr::Compare { op: CompareOp::Lt, left: Box::new(col("tz")), right: Box::new(col("tz2")) },
            Expr::IsNull { expr: Box::new(col("tz")), negated: true },
            Expr::Coalesce(vec![col("tz"), Expr::Constant(Constant::Null)]),
            func("epoch", vec![col("tz")]),
            func("timezone", vec![text("UTC"), col("tz")]),
            func("timezone", vec![text("UTC"), col("ts")]),
            Expr::Compare {
                op: CompareOp::GtEq,
                left: Box::new(col("tz")),
                right: Box::new(func("to_timestamp", vec![col("n")])),
            },
            func("list_value", vec![col("tz"), col("tz2")]),
            cast(col("ts"), "VARCHAR"),
        ];
        for e in ok {
            assert_eq!(check(&e), Ok(()), "{e:?}");
        }
    }

    #[test]
    fn refuses_every_conversion_that_reads_the_time_zone() {
        let refused = [
            (cast(col("tz"), "VARCHAR"), "a cast of a TIMESTAMP WITH TIME ZONE value to VARCHAR"),
            (cast(col("tz"), "DATE"), "a cast of a TIMESTAMP WITH TIME ZONE value to DATE"),
            (cast(col("ts"), TZ), "a cast of a TIMESTAMP value to TIMESTAMP WITH TIME ZONE"),
            (cast(text("2024-01-01"), TZ), "a cast of a VARCHAR value to TIMESTAMP WITH TIME ZONE"),
            (func("strftime", vec![col("tz"), text("%H")]), "strftime() over a TIMESTAMP WITH TIME ZONE value"),
            (func("date_trunc", vec![text("day"), col("tz")]), "date_trunc() over a TIMESTAMP WITH TIME ZONE value"),
            (
                Expr::Compare { op: CompareOp::Eq, left: Box::new(col("tz")), right: Box::new(text("2024-01-01")) },
                "comparing a TIMESTAMP WITH TIME ZONE value with a value of type VARCHAR",
            ),
            (
                Expr::Compare { op: CompareOp::Eq, left: Box::new(col("tz")), right: Box::new(col("ts")) },
                "comparing a TIMESTAMP WITH TIME ZONE value with a value of type TIMESTAMP",
            ),
            (
                cast(func("list_value", vec![col("tz")]), "VARCHAR"),
                "a cast of a TIMESTAMP WITH TIME ZONE value to VARCHAR",
            ),
        ];
        for (e, want) in refused {
            let got = check(&e).unwrap_err();
            assert!(got.contains(want), "{got}");
            assert!(got.ends_with(
                "(depends on the caller's TimeZone and Calendar settings; the refresh runs in openivm's own session)"
            ));
        }
        // nested: the conversion is found below other nodes
        let nested = Expr::Not(Box::new(Expr::IsNull {
            expr: Box::new(func("strftime", vec![col("tz"), text("%Y")])),
            negated: false,
        }));
        assert!(check(&nested).unwrap_err().contains("strftime()"));
    }

    #[test]
    fn refuses_session_functions() {
        assert_eq!(
            check_function("getvariable").unwrap_err().to_string(),
            "openivm: refused as a maintained view: getvariable() (depends on the caller's session; the refresh runs in openivm's own session)"
        );
        assert!(check_function("CURRENT_SETTING").is_err());
        assert!(check_function("upper").is_ok());
    }
}
