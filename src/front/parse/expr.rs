//! Expressions, constants and type names of DuckDB's parse tree, read into the typed AST.

use serde_json::Value;

use super::raw::{RawExpr, RawLiteral, RawOrder, RawType, RawValue};
use crate::ast::{AggCall, CompareOp, Constant, Expr, TypeName};
use crate::error::{Error, Result};
use crate::front::aggregates::GROUPING;

/// The error of a construct outside the supported set, naming it.
pub(crate) fn unsupported<T>(what: impl Into<String>) -> Result<T> {
    Err(Error::Unsupported(what.into()))
}

/// The comparison of a parse tree's COMPARISON type name.
pub(crate) fn compare_op(kind: &str) -> Option<CompareOp> {
    Some(match kind {
        "COMPARE_EQUAL" => CompareOp::Eq,
        "COMPARE_NOTEQUAL" => CompareOp::NotEq,
        "COMPARE_LESSTHAN" => CompareOp::Lt,
        "COMPARE_GREATERTHAN" => CompareOp::Gt,
        "COMPARE_LESSTHANOREQUALTO" => CompareOp::LtEq,
        "COMPARE_GREATERTHANOREQUALTO" => CompareOp::GtEq,
        "COMPARE_DISTINCT_FROM" => CompareOp::DistinctFrom,
        "COMPARE_NOT_DISTINCT_FROM" => CompareOp::NotDistinctFrom,
        _ => return None,
    })
}

/// An expression of the tree, read into the AST.
pub(crate) fn raw_expr(v: Value) -> Result<Expr> {
    expr(serde_json::from_value(v).map_err(|e| Error::Parse(format!("DuckDB's parse tree could not be read ({e})")))?)
}

/// One ORDER BY key (of the query or inside an aggregate) with its direction and NULL order.
pub(crate) fn order_item(o: RawOrder) -> Result<crate::ast::OrderItem<Expr>> {
    let descending = match o.kind.as_str() {
        "ORDER_DEFAULT" => None,
        "ASCENDING" => Some(false),
        "DESCENDING" => Some(true),
        other => return unsupported(format!("ORDER BY direction {other}")),
    };
    let nulls_first = match o.null_order.as_str() {
        "ORDER_DEFAULT" => None,
        "NULLS FIRST" | "NULLS_FIRST" => Some(true),
        "NULLS LAST" | "NULLS_LAST" => Some(false),
        other => return unsupported(format!("ORDER BY null order {other}")),
    };
    Ok(crate::ast::OrderItem { key: expr(o.expression)?, descending, nulls_first })
}

/// A LIMIT or OFFSET: a non-negative integer literal (anything computed is not modelled).
pub(crate) fn row_count(e: RawExpr) -> Result<i64> {
    match expr(e)? {
        Expr::Constant(Constant::Integer(n)) if (0..=i64::MAX as i128).contains(&n) => Ok(n as i64),
        _ => unsupported("LIMIT/OFFSET other than an integer literal"),
    }
}

/// Functions DuckDB's parser itself writes as `main.<name>` for a piece of syntax (`LIKE ...
/// ESCAPE`, `[1, 2]`, `{'a': 1}`, `EXTRACT`, `POSITION(a IN b)`, `SUBSTRING(a FROM 1)`, `TRIM(...
/// FROM a)`, `MAP {...}`, `AT TIME ZONE`): built-in functions, resolved by their plain name like
/// any other (and checked by the binder like any other). `row(...)` is left out: the
/// unnamed STRUCT it builds has a type the visible view cannot name in a cast.
const PARSER_FUNCTIONS: &[&str] = &[
    "like_escape",
    "not_like_escape",
    "ilike_escape",
    "not_ilike_escape",
    "list_value",
    "struct_pack",
    "date_part",
    "position",
    "substring",
    "trim",
    "ltrim",
    "rtrim",
    "map",
    "timezone",
];

fn written_by_the_parser(e: &RawExpr) -> bool {
    e.catalog.is_empty()
        && e.schema.eq_ignore_ascii_case("main")
        && PARSER_FUNCTIONS.iter().any(|f| f.eq_ignore_ascii_case(&e.function_name))
}

fn boxed(e: Option<Box<RawExpr>>, what: &str) -> Result<Box<Expr>> {
    match e {
        Some(e) => Ok(Box::new(expr(*e)?)),
        None => Err(Error::Parse(format!("{what} without an operand"))),
    }
}

fn exprs(v: Vec<RawExpr>) -> Result<Vec<Expr>> {
    v.into_iter().map(expr).collect()
}

pub(crate) fn expr(mut e: RawExpr) -> Result<Expr> {
    match e.class.as_str() {
        "COLUMN_REF" => {
            if e.column_names.is_empty() || e.column_names.len() > 3 {
                return unsupported(format!("the column reference {}", e.column_names.join(".")));
            }
            Ok(Expr::Column(e.column_names))
        }
        "CONSTANT" => match e.literal {
            Some(l) => literal(l).map(Expr::Constant),
            None => constant(e.value.unwrap_or_default()).map(Expr::Constant),
        },
        "STAR" => {
            if e.columns || e.expr.is_some() {
                return unsupported("COLUMNS(...)");
            }
            if !e.exclude_list.is_empty() || !is_empty_list(&e.replace_list) || !is_empty_list(&e.rename_list) {
                return unsupported("* EXCLUDE/REPLACE/RENAME");
            }
            if e.unpacked {
                return unsupported("*COLUMNS(...)");
            }
            Ok(Expr::Star { relation: if e.relation_name.is_empty() { None } else { Some(e.relation_name) } })
        }
        "FUNCTION" => {
            let filter = e.filter.take().map(|f| expr(*f)).transpose()?;
            let order_by = e
                .order_bys
                .take()
                .map(|o| o.orders)
                .unwrap_or_default()
                .into_iter()
                .map(order_item)
                .collect::<Result<Vec<_>>>()?;
            if (!e.schema.is_empty() || !e.catalog.is_empty()) && !written_by_the_parser(&e) {
                return unsupported(format!("schema-qualified function {}.{}", e.schema, e.function_name));
            }
            // Arguments with their names: `children` with aliases (1.5), or `arguments` (2.0).
            let named: Vec<(String, RawExpr)> = if e.children.is_empty() {
                e.arguments.into_iter().map(|a| (a.name, a.expression)).collect()
            } else {
                e.children.into_iter().map(|c| (c.alias.clone(), c)).collect()
            };
            if e.function_name.eq_ignore_ascii_case("struct_pack") && !e.is_operator {
                // {'a': 1} and struct_pack(a := 1): the names are the struct's field names.
                let fields = named
                    .into_iter()
                    .map(|(name, value)| {
                        if name.is_empty() {
                            return unsupported("struct_pack() with an unnamed field (use row(...) or name it)");
                        }
                        Ok((name, expr(value)?))
                    })
                    .collect::<Result<Vec<_>>>()?;
                return Ok(Expr::Struct(fields));
            }
            if named.iter().any(|(n, _)| !n.is_empty()) {
                return unsupported(format!("named arguments in {}()", e.function_name));
            }
            let args = named.into_iter().map(|(_, a)| expr(a)).collect::<Result<_>>()?;
            match filter {
                None if !e.distinct && order_by.is_empty() => {
                    Ok(Expr::Function { name: e.function_name, args, is_operator: e.is_operator })
                }
                Some(condition) if !e.distinct && order_by.is_empty() => {
                    Ok(filtered_aggregate(e.function_name, args, condition))
                }
                filter => Ok(Expr::Aggregate(Box::new(AggCall {
                    name: e.function_name,
                    args,
                    distinct: e.distinct,
                    order_by,
                    filter,
                }))),
            }
        }
        "COMPARISON" => {
            let Some(op) = compare_op(&e.kind) else {
                return unsupported(format!("comparison {}", e.kind));
            };
            Ok(Expr::Compare { op, left: boxed(e.left, "comparison")?, right: boxed(e.right, "comparison")? })
        }
        "CONJUNCTION" => match e.kind.as_str() {
            "CONJUNCTION_AND" => Ok(Expr::And(exprs(e.children)?)),
            "CONJUNCTION_OR" => Ok(Expr::Or(exprs(e.children)?)),
            other => unsupported(format!("conjunction {other}")),
        },
        "OPERATOR" => {
            let mut args = exprs(e.children)?;
            match e.kind.as_str() {
                "OPERATOR_NOT" if args.len() == 1 => Ok(Expr::Not(Box::new(args.remove(0)))),
                "OPERATOR_IS_NULL" if args.len() == 1 => {
                    Ok(Expr::IsNull { expr: Box::new(args.remove(0)), negated: false })
                }
                "OPERATOR_IS_NOT_NULL" if args.len() == 1 => {
                    Ok(Expr::IsNull { expr: Box::new(args.remove(0)), negated: true })
                }
                "COMPARE_IN" | "COMPARE_NOT_IN" if !args.is_empty() => {
                    let first = args.remove(0);
                    Ok(Expr::InList { expr: Box::new(first), list: args, negated: e.kind == "COMPARE_NOT_IN" })
                }
                "OPERATOR_COALESCE" => Ok(Expr::Coalesce(args)),
                // GROUPING(a, ...) and GROUPING_ID(a, ...): which keys a row's grouping set leaves out.
                "GROUPING_FUNCTION" => Ok(Expr::Function { name: GROUPING.into(), args, is_operator: false }),
                "ARRAY_EXTRACT" | "ARRAY_SLICE" => unsupported("list indexing and slicing"),
                "STRUCT_EXTRACT" => unsupported("struct field access"),
                "ARROW" => unsupported("lambda functions"),
                other => unsupported(format!("operator {other}")),
            }
        }
        "BETWEEN" => Ok(Expr::Between {
            expr: boxed(e.input, "BETWEEN")?,
            low: boxed(e.lower, "BETWEEN")?,
            high: boxed(e.upper, "BETWEEN")?,
        }),
        "CASE" => Ok(Expr::Case {
            checks: e
                .case_checks
                .into_iter()
                .map(|c| Ok((expr(c.when_expr)?, expr(c.then_expr)?)))
                .collect::<Result<_>>()?,
            otherwise: match e.else_expr {
                Some(x) => Box::new(expr(*x)?),
                None => Box::new(Expr::Constant(Constant::Null)),
            },
        }),
        "CAST" => {
            let ty = match (e.cast_type, e.type_expr) {
                (Some(t), _) => type_name(t)?,
                (None, Some(t)) => type_expression(*t)?,
                (None, None) => return Err(Error::Parse("a CAST without a type".into())),
            };
            Ok(Expr::Cast { expr: boxed(e.child, "CAST")?, ty, try_cast: e.try_cast })
        }
        "SUBQUERY" => unsupported("subqueries"),
        "WINDOW" => unsupported(format!("window functions ({})", e.function_name)),
        // Not a construct to recompute instead: the query cannot run without a value for it.
        "PARAMETER" => Err(Error::Refused(crate::front::strategy::PARAMETERS.into())),
        "COLLATE" => unsupported("COLLATE"),
        "LAMBDA" => unsupported("lambda functions"),
        "POSITIONAL_REFERENCE" => unsupported("positional references (#n)"),
        "DEFAULT" => unsupported("DEFAULT"),
        other => unsupported(format!("expression {other}")),
    }
}

/// `agg(x) FILTER (WHERE c)` as `agg(CASE WHEN c THEN x END)`, for the aggregates that ignore
/// NULL inputs (`count(*) FILTER (WHERE c)` counts `CASE WHEN c THEN 1 END`): the rows where `c`
/// is not true contribute a NULL, which these aggregates skip, exactly as the filter skips them.
/// Other aggregates keep their FILTER (an `Expr::Aggregate`, recomputed per touched group).
fn filtered_aggregate(name: String, mut args: Vec<Expr>, condition: Expr) -> Expr {
    let when = |value: Expr| Expr::Case {
        checks: vec![(condition.clone(), value)],
        otherwise: Box::new(Expr::Constant(Constant::Null)),
    };
    let lower = name.to_ascii_lowercase();
    match (lower.as_str(), args.len()) {
        ("count_star", 0) => Expr::Function {
            name: "count".into(),
            args: vec![when(Expr::Constant(Constant::Integer(1)))],
            is_operator: false,
        },
        (
            "sum" | "count" | "avg" | "mean" | "min" | "max" | "var_samp" | "variance" | "var_pop" | "stddev_samp"
            | "stddev" | "stddev_pop",
            1,
        ) => {
            let arg = args.remove(0);
            Expr::Function { name, args: vec![when(arg)], is_operator: false }
        }
        _ => Expr::Aggregate(Box::new(AggCall {
            name,
            args,
            distinct: false,
            order_by: vec![],
            filter: Some(condition),
        })),
    }
}

fn is_empty_list(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty() || o.get("map").is_some_and(is_empty_list),
        _ => false,
    }
}

fn type_name(t: RawType) -> Result<TypeName> {
    let decimal = match (&t.id[..], &t.type_info) {
        ("DECIMAL", Some(info)) => {
            let w = info.get("width").and_then(Value::as_u64).unwrap_or(18) as u8;
            let s = info.get("scale").and_then(Value::as_u64).unwrap_or(3) as u8;
            Some((w, s))
        }
        (_, Some(info)) if !info.is_null() => {
            return unsupported(format!("casts to the composite or parameterized type {}", t.id))
        }
        _ => None,
    };
    if t.id == "USER" || t.id.is_empty() {
        return unsupported("casts to user-defined or unnamed types");
    }
    Ok(TypeName { id: t.id, decimal })
}

/// A DuckDB 2.0 type expression: a plain type name, or DECIMAL with width and scale.
fn type_expression(t: RawExpr) -> Result<TypeName> {
    let id = t.type_name.to_ascii_uppercase();
    if id.is_empty()
        || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        || !t.catalog.is_empty()
        || !t.schema.is_empty()
    {
        return unsupported(format!("casts to the type {}", t.type_name));
    }
    let params: Vec<Constant> = t
        .children
        .into_iter()
        .map(|c| match expr(c)? {
            Expr::Constant(k) => Ok(k),
            _ => unsupported("casts to a type with computed parameters"),
        })
        .collect::<Result<_>>()?;
    let int = |k: &Constant| match k {
        Constant::Integer(n) => u8::try_from(*n).ok(),
        _ => None,
    };
    match (id.as_str(), params.as_slice()) {
        (_, []) => Ok(TypeName { id, decimal: None }),
        ("DECIMAL" | "NUMERIC", [w]) => Ok(TypeName {
            id: "DECIMAL".into(),
            decimal: Some((int(w).ok_or_else(|| Error::Parse("DECIMAL width".into()))?, 0)),
        }),
        ("DECIMAL" | "NUMERIC", [w, s]) => {
            let bad = || Error::Parse("DECIMAL width and scale".into());
            Ok(TypeName { id: "DECIMAL".into(), decimal: Some((int(w).ok_or_else(bad)?, int(s).ok_or_else(bad)?)) })
        }
        _ => unsupported(format!("casts to the parameterized type {}", t.type_name)),
    }
}

fn constant(v: RawValue) -> Result<Constant> {
    if v.is_null {
        return Ok(Constant::Null);
    }
    let id = v.ty.id.as_str();
    let bad = || Error::Parse(format!("a {id} literal that could not be read"));
    match id {
        "NULL" => Ok(Constant::Null),
        "BOOLEAN" => v.value.as_bool().map(Constant::Bool).ok_or_else(bad),
        "TINYINT" | "SMALLINT" | "INTEGER" | "BIGINT" | "UTINYINT" | "USMALLINT" | "UINTEGER" | "UBIGINT" => {
            let n = v.value.as_i64().map(i128::from).or_else(|| v.value.as_u64().map(i128::from));
            n.map(Constant::Integer).ok_or_else(bad)
        }
        "HUGEINT" => {
            let upper = v.value.get("upper").and_then(Value::as_i64).ok_or_else(bad)?;
            let lower = v.value.get("lower").and_then(Value::as_u64).ok_or_else(bad)?;
            Ok(Constant::Integer(((upper as i128) << 64) | lower as i128))
        }
        "DOUBLE" | "FLOAT" => v.value.as_f64().map(Constant::Double).ok_or_else(bad),
        "DECIMAL" => {
            let scale = v.ty.type_info.as_ref().and_then(|i| i.get("scale")).and_then(Value::as_u64).ok_or_else(bad)?;
            let digits = match &v.value {
                Value::Number(n) => n.as_i64().map(i128::from).ok_or_else(bad)?,
                Value::Object(o) => {
                    let upper = o.get("upper").and_then(Value::as_i64).ok_or_else(bad)?;
                    let lower = o.get("lower").and_then(Value::as_u64).ok_or_else(bad)?;
                    ((upper as i128) << 64) | lower as i128
                }
                _ => return Err(bad()),
            };
            Ok(Constant::Decimal { digits, scale: scale as u8 })
        }
        "VARCHAR" => v.value.as_str().map(|s| Constant::Text(s.to_string())).ok_or_else(bad),
        other => unsupported(format!("literals of type {other}")),
    }
}

/// A DuckDB 2.0 literal: its kind and its text as written.
fn literal(l: RawLiteral) -> Result<Constant> {
    let bad = || Error::Parse(format!("a {} literal '{}' that could not be read", l.kind, l.text));
    match l.kind.as_str() {
        "NULL_LITERAL" => Ok(Constant::Null),
        "BOOLEAN" => match l.text.to_ascii_lowercase().as_str() {
            "true" => Ok(Constant::Bool(true)),
            "false" => Ok(Constant::Bool(false)),
            _ => Err(bad()),
        },
        "STRING" => Ok(Constant::Text(l.text.clone())),
        "INTEGER" => l.text.parse::<i128>().map(Constant::Integer).map_err(|_| bad()),
        "NUMERIC" if l.text.contains(['e', 'E']) => l.text.parse::<f64>().map(Constant::Double).map_err(|_| bad()),
        "NUMERIC" => {
            let (whole, fraction) = l.text.split_once('.').unwrap_or((&l.text, ""));
            let digits = format!("{whole}{fraction}").parse::<i128>().map_err(|_| bad())?;
            let scale = u8::try_from(fraction.len()).map_err(|_| bad())?;
            Ok(Constant::Decimal { digits, scale })
        }
        other => unsupported(format!("literals of kind {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(parts: &[&str]) -> Expr {
        Expr::Column(parts.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn reads_functions_the_parser_qualifies() {
        // json_serialize_sql('SELECT a LIKE b ESCAPE c, [1, a], {''f'': a} ...'), trimmed.
        let raw = |name: &str, children: &str| -> RawExpr {
            serde_json::from_str(&format!(
                r#"{{"class":"FUNCTION","type":"FUNCTION","function_name":"{name}","schema":"main","catalog":"","children":[{children}]}}"#
            ))
            .unwrap()
        };
        let a = r#"{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","column_names":["a"]}"#;
        let named_a = r#"{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"f","column_names":["a"]}"#;
        assert_eq!(
            expr(raw("like_escape", &[a, a, a].join(","))).unwrap(),
            Expr::Function {
                name: "like_escape".into(),
                args: vec![col(&["a"]), col(&["a"]), col(&["a"])],
                is_operator: false
            }
        );
        assert_eq!(
            expr(raw("list_value", a)).unwrap(),
            Expr::Function { name: "list_value".into(), args: vec![col(&["a"])], is_operator: false }
        );
        assert_eq!(expr(raw("struct_pack", named_a)).unwrap(), Expr::Struct(vec![("f".into(), col(&["a"]))]));
        assert!(expr(raw("struct_pack", a)).unwrap_err().to_string().contains("unnamed field"));
        // a user's own schema-qualified function, and the unnamed struct row(...), stay refused
        assert!(expr(raw("my_macro", a)).unwrap_err().to_string().contains("schema-qualified function main.my_macro"));
        assert!(expr(raw("row", a)).unwrap_err().to_string().contains("schema-qualified function main.row"));
        // named arguments of other functions are not silently dropped
        let mut upper = raw("upper", named_a);
        upper.schema.clear();
        assert!(expr(upper).unwrap_err().to_string().contains("named arguments in upper()"));
    }

    #[test]
    fn rewrites_filter_clauses_into_case() {
        let cond = Expr::Compare {
            op: CompareOp::Gt,
            left: Box::new(col(&["a"])),
            right: Box::new(Expr::Constant(Constant::Integer(1))),
        };
        let case = |v: Expr| Expr::Case {
            checks: vec![(cond.clone(), v)],
            otherwise: Box::new(Expr::Constant(Constant::Null)),
        };
        assert_eq!(
            filtered_aggregate("sum".into(), vec![col(&["b"])], cond.clone()),
            Expr::Function { name: "sum".into(), args: vec![case(col(&["b"]))], is_operator: false }
        );
        assert_eq!(
            filtered_aggregate("count_star".into(), vec![], cond.clone()),
            Expr::Function {
                name: "count".into(),
                args: vec![case(Expr::Constant(Constant::Integer(1)))],
                is_operator: false
            }
        );
        // list() keeps NULLs: a CASE would add them, so it keeps its FILTER
        assert_eq!(
            filtered_aggregate("list".into(), vec![col(&["b"])], cond.clone()),
            Expr::Aggregate(Box::new(AggCall {
                name: "list".into(),
                args: vec![col(&["b"])],
                distinct: false,
                order_by: vec![],
                filter: Some(cond)
            }))
        );
    }

    #[test]
    fn reads_duckdb2_function_arguments() {
        // DuckDB 2.0 lists a function's arguments as {name, expression} pairs.
        let e: RawExpr = serde_json::from_str(
            r#"{"class":"FUNCTION","type":"FUNCTION","function_name":"sum",
                "arguments":[{"name":"","expression":{"class":"COLUMN_REF","type":"COLUMN_REF","column_names":["f","amount"]}}]}"#,
        )
        .unwrap();
        assert_eq!(
            expr(e).unwrap(),
            Expr::Function { name: "sum".into(), args: vec![col(&["f", "amount"])], is_operator: false }
        );
    }

    #[test]
    fn reads_duckdb2_literals() {
        let l = |kind: &str, text: &str| literal(RawLiteral { kind: kind.into(), text: text.into() });
        assert_eq!(l("INTEGER", "-3").unwrap(), Constant::Integer(-3));
        assert_eq!(l("NUMERIC", "2.50").unwrap(), Constant::Decimal { digits: 250, scale: 2 });
        assert_eq!(l("NUMERIC", "2.5e3").unwrap(), Constant::Double(2500.0));
        assert_eq!(l("STRING", "it's").unwrap(), Constant::Text("it's".into()));
        assert_eq!(l("BOOLEAN", "true").unwrap(), Constant::Bool(true));
        assert_eq!(l("NULL_LITERAL", "").unwrap(), Constant::Null);
        assert!(l("BLOB", "x").is_err());
    }

    #[test]
    fn reads_literals() {
        let v = |ty: &str, value: &str| -> RawValue {
            serde_json::from_str(&format!(r#"{{"type":{ty},"is_null":false,"value":{value}}}"#)).unwrap()
        };
        assert_eq!(constant(v(r#"{"id":"INTEGER"}"#, "-3")).unwrap(), Constant::Integer(-3));
        assert_eq!(
            constant(v(r#"{"id":"DECIMAL","type_info":{"width":2,"scale":1}}"#, "15")).unwrap(),
            Constant::Decimal { digits: 15, scale: 1 }
        );
        assert_eq!(constant(v(r#"{"id":"VARCHAR"}"#, r#""it's""#)).unwrap(), Constant::Text("it's".into()));
        assert!(constant(v(r#"{"id":"BLOB"}"#, r#""x""#)).is_err());
    }
}
