//! Stage 1: DuckDB's parse tree (the JSON of `json_serialize_sql`) -> typed `ast::Select`.
//!
//! The JSON is read with serde into raw node structs that mirror DuckDB's serializer, then
//! converted node by node. Anything outside the supported set becomes `Error::Unsupported` naming
//! the construct, so a user learns exactly what to change.

use serde::Deserialize;
use serde_json::Value;

use crate::ast::{
    AggCall, CompareOp, Compared, Constant, Correlated, CorrelatedCandidate, CorrelatedKind, Expr, FromItem, Select,
    SelectItem, SemiJoin, SubqueryJoin, TableName, TypeName, UnionBranch,
};
use crate::error::{Error, Result};
use crate::front::aggregates::{aggregate_func, contains_aggregate, GROUPING, PRE_AGGREGATED};
use crate::front::rewrite::distinct_on::{distinct_on_as_groups, output_named};
use crate::ir::AggFunc;

#[derive(Deserialize)]
struct RawParse {
    #[serde(default)]
    error: bool,
    #[serde(default)]
    error_type: String,
    #[serde(default)]
    error_message: String,
    #[serde(default)]
    statements: Vec<RawStatement>,
}

#[derive(Deserialize, Default)]
struct RawStatement {
    node: RawNode,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawNode {
    #[serde(rename = "type")]
    kind: String,
    modifiers: Vec<RawModifier>,
    cte_map: RawCteMap,
    select_list: Vec<RawExpr>,
    from_table: Option<RawTableRef>,
    where_clause: Option<RawExpr>,
    group_expressions: Vec<RawExpr>,
    group_sets: Vec<Value>,
    aggregate_handling: String,
    having: Option<RawExpr>,
    sample: Option<Value>,
    qualify: Option<RawExpr>,
    /// SET_OPERATION_NODE: the operation, whether ALL, and the two sides (query nodes).
    setop_type: String,
    setop_all: bool,
    left: Option<Value>,
    right: Option<Value>,
    /// DuckDB 2.0 writes the sides of a set operation here instead (two or more).
    children: Vec<Value>,
}

impl RawNode {
    /// The sides of a set operation node, in order: `left` and `right` (DuckDB 1.5), or
    /// `children` (DuckDB 2.0).
    fn sides(&mut self) -> Result<Vec<Value>> {
        let sides = match (self.left.take(), self.right.take()) {
            (Some(l), Some(r)) => vec![l, r],
            _ => std::mem::take(&mut self.children),
        };
        if sides.len() < 2 {
            return Err(Error::Parse("a set operation without two sides".into()));
        }
        Ok(sides)
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawModifier {
    #[serde(rename = "type")]
    kind: String,
    distinct_on_targets: Vec<Value>,
    orders: Vec<RawOrder>,
    limit: Option<RawExpr>,
    offset: Option<RawExpr>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(default)]
struct RawOrder {
    #[serde(rename = "type")]
    kind: String,
    null_order: String,
    expression: RawExpr,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawCteMap {
    map: Vec<RawCte>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawCte {
    key: String,
    value: RawCteValue,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawCteValue {
    aliases: Vec<String>,
    /// A statement (`RawStatement`), kept as JSON to be handed back to DuckDB for a stage.
    query: Option<Value>,
    /// DuckDB 2.0 writes the query node itself here instead.
    query_node: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawTableRef {
    #[serde(rename = "type")]
    kind: String,
    alias: String,
    sample: Option<Value>,
    table_name: String,
    schema_name: String,
    catalog_name: String,
    column_name_alias: Vec<String>,
    at_clause: Option<Value>,
    /// A statement (`RawStatement`), kept as JSON to be handed back to DuckDB for a stage.
    subquery: Option<Value>,
    left: Option<Box<RawTableRef>>,
    right: Option<Box<RawTableRef>>,
    condition: Option<RawExpr>,
    join_type: String,
    ref_type: String,
    using_columns: Vec<String>,
    /// EXPRESSION_LIST (`VALUES`): the rows' expressions.
    values: Vec<Vec<RawExpr>>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(default)]
struct RawExpr {
    class: String,
    #[serde(rename = "type")]
    kind: String,
    alias: String,
    column_names: Vec<String>,
    function_name: String,
    schema: String,
    catalog: String,
    children: Vec<RawExpr>,
    /// DuckDB 2.0 writes a function's arguments here (with optional names) instead of `children`.
    arguments: Vec<RawArgument>,
    distinct: bool,
    is_operator: bool,
    filter: Option<Box<RawExpr>>,
    order_bys: Option<RawOrders>,
    left: Option<Box<RawExpr>>,
    right: Option<Box<RawExpr>>,
    value: Option<RawValue>,
    /// DuckDB 2.0 writes constants as literal text with a kind instead of a typed `value`.
    literal: Option<RawLiteral>,
    case_checks: Vec<RawCaseCheck>,
    else_expr: Option<Box<RawExpr>>,
    child: Option<Box<RawExpr>>,
    cast_type: Option<RawType>,
    /// DuckDB 2.0 names a cast's type as an expression: `type_name` and parameter `children`.
    type_expr: Option<Box<RawExpr>>,
    type_name: String,
    try_cast: bool,
    input: Option<Box<RawExpr>>,
    lower: Option<Box<RawExpr>>,
    upper: Option<Box<RawExpr>>,
    relation_name: String,
    exclude_list: Vec<Value>,
    replace_list: Value,
    rename_list: Value,
    columns: bool,
    expr: Option<Value>,
    unpacked: bool,
    /// SUBQUERY expressions: the statement, its kind (ANY for IN) and comparison.
    subquery: Option<Value>,
    subquery_type: String,
    comparison_type: String,
}

#[derive(Deserialize, Default, Clone)]
#[serde(default)]
struct RawArgument {
    name: String,
    expression: RawExpr,
}

#[derive(Deserialize, Default, Clone)]
#[serde(default)]
struct RawOrders {
    orders: Vec<RawOrder>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(default)]
struct RawCaseCheck {
    when_expr: RawExpr,
    then_expr: RawExpr,
}

#[derive(Deserialize, Default, Clone)]
#[serde(default)]
struct RawValue {
    #[serde(rename = "type")]
    ty: RawType,
    is_null: bool,
    value: Value,
}

#[derive(Deserialize, Default, Clone)]
#[serde(default)]
struct RawLiteral {
    kind: String,
    text: String,
}

#[derive(Deserialize, Default, Clone)]
#[serde(default)]
struct RawType {
    id: String,
    type_info: Option<Value>,
}

fn eq_ci(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

fn unsupported<T>(what: impl Into<String>) -> Result<T> {
    Err(Error::Unsupported(what.into()))
}

/// DuckDB's error for a statement json_serialize_sql cannot serialize.
const NOT_A_SELECT: &str = "Only SELECT statements can be serialized to json!";

/// Checks that `json_serialize_sql(query)` returned one SELECT statement, of any shape: the
/// query of an insert through openivm, which DuckDB runs as it is (`write::insert`).
pub fn check_one_select(json: &str) -> Result<()> {
    let tree: Value =
        serde_json::from_str(json).map_err(|e| Error::Parse(format!("DuckDB's parse tree could not be read ({e})")))?;
    if tree["error"].as_bool() == Some(true) {
        return Err(parse_error(tree["error_type"].as_str(), tree["error_message"].as_str().unwrap_or_default()));
    }
    match tree["statements"].as_array().map_or(0, Vec::len) {
        1 => Ok(()),
        0 => Err(Error::NotOneSelect("the query is empty".into())),
        n => Err(Error::NotOneSelect(format!("found {n} statements"))),
    }
}

/// The error of a query json_serialize_sql did not serialize. It serializes SELECT statements
/// only, and says so with `NOT_A_SELECT` for any other statement (INSERT, DROP, PRAGMA, ...),
/// also when it is one of several.
fn parse_error(error_type: Option<&str>, message: &str) -> Error {
    if error_type == Some("not implemented") && message == NOT_A_SELECT {
        return Error::NotOneSelect(
            "found a statement other than SELECT, such as INSERT, UPDATE, DELETE, DDL or PRAGMA".into(),
        );
    }
    Error::Parse(message.to_string())
}

/// Parses the JSON that `json_serialize_sql(query)` returned.
pub fn parse_select(json: &str) -> Result<Select> {
    let raw: RawParse =
        serde_json::from_str(json).map_err(|e| Error::Parse(format!("DuckDB's parse tree could not be read ({e})")))?;
    if raw.error {
        return Err(parse_error(Some(&raw.error_type), &raw.error_message));
    }
    let mut statements = raw.statements.into_iter();
    match (statements.next(), statements.len()) {
        (Some(one), 0) => {
            let mut select = select_node(one.node, &[])?;
            // The statement once more as JSON: the tree of a stage built from it.
            let tree: Value = serde_json::from_str(json).map_err(|e| Error::Parse(e.to_string()))?;
            select.by_values = distinct_by_values(&tree["statements"][0], &select)?.map(Box::new);
            Ok(select)
        }
        (None, _) => Err(Error::NotOneSelect("the query is empty".into())),
        (Some(_), rest) => Err(Error::NotOneSelect(format!("found {} statements", rest + 1))),
    }
}

/// The alias of the subquery `distinct_by_values` reads, and its value column.
const DISTINCT_STAGE: &str = "openivm_distinct";
const DISTINCT_VALUE: &str = "distinct_value";

/// The subquery's column of group key `i`, and of pre-aggregated call `j`.
fn distinct_key(i: usize) -> String {
    format!("distinct_key_{i}")
}
fn distinct_pre(j: usize) -> String {
    format!("distinct_pre_{j}")
}

/// COUNT, SUM, AVG, MIN and MAX (DISTINCT x) by per-group value counts: the query `select`
/// (whose statement's tree is `tree`) over a subquery grouped by its keys and `x`, which holds one
/// row per distinct value of each group. Over those rows the aggregates lose their DISTINCT:
/// COUNT(x) over the distinct (keys, x) pairs is COUNT(DISTINCT x), and so for SUM, AVG, MIN and
/// MAX (a group whose every x is NULL keeps its one (keys, NULL) row, so it still exists, with
/// COUNT 0). The subquery groups, so it is a maintained stage, which records its changes for the
/// query (it shows its rows locally): both stay incremental. Plain COUNT, SUM, MIN and MAX calls
/// beside them (`PRE_AGGREGATED`) are computed per (keys, x) row in the subquery and combined over
/// those rows. None unless every DISTINCT call is over one `x` and every other column the query
/// reads outside those calls is a group key; the binder also checks that no other call is an
/// aggregate (`bind::bind`), which only DuckDB's catalog knows.
fn distinct_by_values(tree: &Value, select: &Select) -> Result<Option<Select>> {
    if select.grouping_sets.is_some() || select.group_by_all || tree["node"]["type"] != "SELECT_NODE" {
        return Ok(None);
    }
    let exprs: Vec<&Expr> = select
        .items
        .iter()
        .map(|i| &i.expr)
        .chain(select.presentation.having.iter())
        .chain(select.presentation.order_by.iter().map(|o| &o.key))
        .collect();
    let mut x: Option<Expr> = None;
    let mut other = false;
    for e in &exprs {
        e.visit(&mut |e| {
            if let Expr::Aggregate(a) = e {
                let modelled = matches!(a.name.to_ascii_lowercase().as_str(), "count" | "sum" | "avg" | "min" | "max");
                let simple = a.distinct && a.order_by.is_empty() && a.filter.is_none() && a.args.len() == 1;
                other |= !(modelled && simple && x.get_or_insert_with(|| a.args[0].clone()) == &a.args[0]);
            }
        });
    }
    let (Some(x), false) = (x, other) else { return Ok(None) };
    let Some(x_tree) = expression_tree(&tree["node"], &x) else { return Ok(None) };
    // Plain COUNT, SUM, MIN and MAX calls beside them are aggregated in the subquery first.
    let mut pre: Vec<Expr> = Vec::new();
    for e in &exprs {
        e.visit(&mut |e| {
            if pre_aggregated(e) && !pre.contains(e) {
                pre.push(e.clone());
            }
        });
    }
    let mut pre_trees = Vec::new();
    for call in &pre {
        let Some(t) = expression_tree(&tree["node"], call) else { return Ok(None) };
        pre_trees.push(t);
    }
    let key_trees: Vec<Value> = tree["node"]["group_expressions"].as_array().cloned().unwrap_or_default();
    let keys = &select.group_by;
    if key_trees.len() != keys.len() {
        return Ok(None);
    }
    let column = |name: &str| Expr::Column(vec![DISTINCT_STAGE.to_string(), name.to_string()]);
    // An expression over the subquery's columns, rewritten from the top (a DISTINCT call
    // before the column it reads); Err where it reads a column that is no key.
    fn over(e: Expr, keys: &[Expr], pre: &[Expr], column: &dyn Fn(&str) -> Expr) -> std::result::Result<Expr, ()> {
        if let Some(i) = keys.iter().position(|k| k == &e) {
            return Ok(column(&distinct_key(i)));
        }
        if let Some(j) = pre.iter().position(|p| p == &e) {
            let Expr::Function { name, .. } = e else { return Err(()) };
            let call =
                |name: &str, arg: Expr| Expr::Function { name: name.into(), args: vec![arg], is_operator: false };
            let partial = column(&distinct_pre(j));
            // Counts add up (0 over no rows); sums add up; extremes of extremes.
            return Ok(match name.to_ascii_lowercase().as_str() {
                "count" | "count_star" => {
                    Expr::Coalesce(vec![call("sum", partial), Expr::Constant(Constant::Integer(0))])
                }
                _ => call(&name, partial),
            });
        }
        match e {
            Expr::Aggregate(a) => {
                Ok(Expr::Function { name: a.name, args: vec![column(DISTINCT_VALUE)], is_operator: false })
            }
            Expr::Column(_) | Expr::Star { .. } => Err(()),
            other => other.map_children(&mut |c| over(c, keys, pre, column)),
        }
    }
    let over_values = |e: &Expr| over(e.clone(), keys, &pre, &column).ok();
    let mut items = Vec::new();
    for item in &select.items {
        let Some(expr) = over_values(&item.expr) else { return Ok(None) };
        items.push(SelectItem { expr, alias: item.alias.clone() });
    }
    let mut presentation = select.presentation.clone();
    if let Some(h) = &select.presentation.having {
        let Some(h) = over_values(h) else { return Ok(None) };
        presentation.having = Some(h);
    }
    let aliases: Vec<Option<String>> = items.iter().map(|i| i.alias.clone()).collect();
    for o in presentation.order_by.iter_mut() {
        // A key naming an output, by alias or position, stays as it is.
        if output_named(&aliases, &o.key).is_none() {
            let Some(k) = over_values(&o.key) else { return Ok(None) };
            o.key = k;
        }
    }
    // The subquery: the query's FROM and WHERE, grouped by its keys and x.
    let mut stage = tree.clone();
    let node = &mut stage["node"];
    let mut list: Vec<Value> = key_trees.iter().enumerate().map(|(i, k)| aliased(k, &distinct_key(i))).collect();
    list.push(aliased(&x_tree, DISTINCT_VALUE));
    list.extend(pre_trees.iter().enumerate().map(|(j, t)| aliased(t, &distinct_pre(j))));
    let groups: Vec<Value> = key_trees.iter().chain([&x_tree]).map(|k| aliased(k, "")).collect();
    node["group_sets"] = serde_json::json!([(0..groups.len()).collect::<Vec<_>>()]);
    node["select_list"] = Value::Array(list);
    node["group_expressions"] = Value::Array(groups);
    node["modifiers"] = Value::Array(vec![]);
    node["having"] = Value::Null;
    let inner = select_node(statement(stage.clone())?.node, &[])?;
    let from = FromItem::Subquery {
        select: Box::new(inner),
        alias: DISTINCT_STAGE.to_string(),
        columns: vec![],
        tree: Some(statement_tree(&stage)),
    };
    let group_by = (0..keys.len()).map(|i| column(&distinct_key(i))).collect();
    Ok(Some(Select { group_by, presentation, ..Select::plain(items, from) }))
}

fn pre_aggregated(e: &Expr) -> bool {
    matches!(e, Expr::Function { name, is_operator: false, .. }
        if PRE_AGGREGATED.contains(&name.to_ascii_lowercase().as_str()))
}

/// The tree of an expression under `v` that reads as `want` (the first found: any one reads the
/// same).
fn expression_tree(v: &Value, want: &Expr) -> Option<Value> {
    let reads = || serde_json::from_value::<RawExpr>(v.clone()).ok().and_then(|r| expr(r).ok());
    if v.get("class").is_some() && reads().as_ref() == Some(want) {
        return Some(v.clone());
    }
    match v {
        Value::Object(o) => o.values().find_map(|c| expression_tree(c, want)),
        Value::Array(a) => a.iter().find_map(|c| expression_tree(c, want)),
        _ => None,
    }
}

/// A CTE in scope: its name, its column aliases, its parsed query and its statement's tree.
type Cte = (String, Vec<String>, Select, String);

/// A statement's JSON as a parse tree `json_deserialize_sql` reads back.
fn statement_tree(statement: &Value) -> String {
    serde_json::json!({"error": false, "statements": [statement]}).to_string()
}

/// A statement read from its JSON.
fn statement(v: Value) -> Result<RawStatement> {
    serde_json::from_value(v).map_err(|e| Error::Parse(format!("DuckDB's parse tree could not be read ({e})")))
}

/// A query node (a side of a set operation) read from its JSON.
fn query_node(v: Value) -> Result<RawNode> {
    serde_json::from_value(v).map_err(|e| Error::Parse(format!("DuckDB's parse tree could not be read ({e})")))
}

/// Whether a JSON value is absent or an empty list.
fn empty(v: &Value) -> bool {
    v.is_null() || v.as_array().is_some_and(|a| a.is_empty())
}

/// Splits a WHERE clause into the conjuncts whose subquery is a join with a stage (`x IN
/// (SELECT ...)`, and the correlated forms of `ast::Correlated`) and the rest. Whether an IN
/// subquery is uncorrelated is decided when its stage is bound (a correlated one does not bind
/// on its own).
fn split_semi_joins(w: RawExpr) -> Result<(Option<RawExpr>, Vec<SubqueryJoin>)> {
    let conjuncts = if w.class == "CONJUNCTION" && w.kind == "CONJUNCTION_AND" { w.children } else { vec![w] };
    let mut rest = Vec::new();
    let mut semi = Vec::new();
    for c in conjuncts {
        if let Some(corr) = correlated_conjunct(&c)? {
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
fn correlated_conjunct(c: &RawExpr) -> Result<Option<Correlated>> {
    if c.class == "SUBQUERY" && c.subquery_type == "EXISTS" {
        return match &c.subquery {
            Some(sub) => correlated(sub, CorrelatedKind::Exists),
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
    correlated(&sub, CorrelatedKind::Scalar { x, op })
}

/// The comparison of a parse tree's COMPARISON type name.
fn compare_op(kind: &str) -> Option<CompareOp> {
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

/// A column reference's JSON with an alias.
fn aliased(column: &Value, alias: &str) -> Value {
    let mut c = column.clone();
    c["alias"] = Value::String(alias.to_string());
    c
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

/// A correlated subquery `sub` as a join with a stage, when it is a plain SELECT of tables
/// correlated by an equality of two columns (`ast::Correlated`); None otherwise.
fn correlated(sub: &Value, kind: CorrelatedKind) -> Result<Option<Correlated>> {
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
    let Ok(inner) = statement(sub.clone()).and_then(|st| select_node(st.node, &[])) else {
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

/// The CTEs of a query node in scope for its query: each sees the ones before it and the
/// outer ones (innermost first).
fn with_ctes(cte_map: RawCteMap, outer_ctes: &[Cte]) -> Result<Vec<Cte>> {
    let mut ctes: Vec<Cte> = outer_ctes.to_vec();
    for cte in cte_map.map {
        let query = cte.value.query.or_else(|| cte.value.query_node.map(|node| serde_json::json!({ "node": node })));
        let Some(query) = query else {
            return Err(Error::Parse(format!("the CTE {} has no query", cte.key)));
        };
        let tree = statement_tree(&query);
        let select = select_node(statement(query)?.node, &ctes)?;
        ctes.insert(0, (cte.key, cte.value.aliases, select, tree));
    }
    Ok(ctes)
}

/// The branches of a set operation whose every operation is a UNION, in order (nested unions
/// flattened), and whether its result is deduplicated (the outermost is UNION, not UNION ALL).
/// Deduplicating the whole result makes deduplication inside it irrelevant; under UNION ALL
/// every inner operation must be UNION ALL too.
fn union_branches(mut node: RawNode, ctes: &[Cte], outermost: bool) -> Result<(Vec<UnionBranch>, bool)> {
    match node.setop_type.as_str() {
        "UNION" => {}
        "UNION_BY_NAME" => return unsupported("UNION BY NAME"),
        other => return unsupported(format!("set operations other than UNION ({other})")),
    }
    if !outermost && (!node.modifiers.is_empty() || !node.cte_map.map.is_empty()) {
        return unsupported("ORDER BY, LIMIT or WITH inside a set operation");
    }
    let distinct = !node.setop_all;
    let mut branches = Vec::new();
    for side in node.sides()? {
        let raw = query_node(side.clone())?;
        if raw.kind == "SET_OPERATION_NODE" {
            let (inner, inner_distinct) = union_branches(raw, ctes, false)?;
            if inner_distinct && !distinct {
                return unsupported("UNION (without ALL) inside UNION ALL");
            }
            branches.extend(inner);
        } else {
            branches.push(union_branch(raw, &side, ctes)?);
        }
    }
    Ok((branches, distinct))
}

/// One query of a set operation: its query node parsed, and its JSON kept as a statement.
fn union_branch(raw: RawNode, json: &Value, ctes: &[Cte]) -> Result<UnionBranch> {
    let tree = statement_tree(&serde_json::json!({ "node": json }));
    Ok(UnionBranch { select: select_node(raw, ctes)?, tree, side: 0 })
}

/// The operands of a left-deep chain of one operation (`(a INTERSECT b) INTERSECT c`: a, b, c),
/// and the ALL flag of each operation in it.
fn chain(mut node: RawNode) -> Result<(Vec<Value>, Vec<bool>)> {
    let mut sides = node.sides()?.into_iter();
    let left = sides.next().expect("two sides");
    let same = left["type"] == "SET_OPERATION_NODE"
        && left["setop_type"] == Value::String(node.setop_type.clone())
        && empty(&left["modifiers"]);
    let (mut operands, mut flags) = if same { chain(query_node(left)?)? } else { (vec![left], vec![]) };
    for right in sides {
        operands.push(right);
        flags.push(node.setop_all);
    }
    Ok((operands, flags))
}

/// An operand of INTERSECT / EXCEPT as branches: one query, or a UNION ALL of queries.
fn operand_branches(operand: Value, ctes: &[Cte]) -> Result<Vec<UnionBranch>> {
    let raw = query_node(operand.clone())?;
    if raw.kind != "SET_OPERATION_NODE" {
        return Ok(vec![union_branch(raw, &operand, ctes)?]);
    }
    match union_branches(raw, ctes, false)? {
        (branches, false) => Ok(branches),
        (_, true) => unsupported("a UNION (without ALL) inside INTERSECT or EXCEPT"),
    }
}

/// A top-level set operation as `SELECT * FROM (<the union>)`, with its ORDER BY / LIMIT and
/// (for UNION) DISTINCT applied by the view.
fn set_operation(node: RawNode, outer_ctes: &[Cte]) -> Result<Select> {
    let mut node = node;
    let ctes = with_ctes(std::mem::take(&mut node.cte_map), outer_ctes)?;
    let (mut presentation, on) = modifiers(std::mem::take(&mut node.modifiers))?;
    if !on.is_empty() {
        return unsupported("DISTINCT ON over a set operation");
    }
    let (branches, compared) = match node.setop_type.as_str() {
        "INTERSECT" | "EXCEPT" => {
            let intersect = node.setop_type == "INTERSECT";
            let (operands, flags) = chain(std::mem::take(&mut node))?;
            let all = flags.iter().all(|&a| a);
            if !intersect && flags.iter().any(|&a| a != all) {
                return unsupported("EXCEPT and EXCEPT ALL in one chain");
            }
            let sides = u8::try_from(operands.len()).unwrap_or(u8::MAX);
            if sides > 8 {
                return unsupported("a chain of more than 8 INTERSECT operands");
            }
            let compared = if intersect { Compared::Intersect { all, sides } } else { Compared::Except { all } };
            let mut branches = Vec::new();
            for (n, operand) in operands.into_iter().enumerate() {
                // EXCEPT: every operand after the first is subtracted (side 1)
                let side = if intersect { n as u8 } else { u8::from(n > 0) };
                for mut b in operand_branches(operand, &ctes)? {
                    b.side = side;
                    branches.push(b);
                }
            }
            (branches, Some(compared))
        }
        _ => {
            let (branches, distinct) = union_branches(node, &ctes, true)?;
            presentation.distinct |= distinct;
            (branches, None)
        }
    };
    let items = vec![SelectItem { expr: Expr::Star { relation: None }, alias: None }];
    let from = FromItem::Union { branches, alias: "unnamed_subquery".into(), columns: vec![], compared };
    Ok(Select { presentation, ..Select::plain(items, from) })
}

fn select_node(node: RawNode, outer_ctes: &[Cte]) -> Result<Select> {
    match node.kind.as_str() {
        "SELECT_NODE" => {}
        "SET_OPERATION_NODE" => return set_operation(node, outer_ctes),
        "RECURSIVE_CTE_NODE" => return unsupported("recursive common table expressions (WITH RECURSIVE)"),
        "CTE_NODE" => return unsupported("common table expressions (WITH) of this form"),
        other => return unsupported(format!("query node {other}")),
    }
    let ctes = with_ctes(node.cte_map, outer_ctes)?;
    let ctes = &ctes[..];
    let (mut presentation, distinct_on) = modifiers(node.modifiers)?;
    presentation.having = node.having.map(expr).transpose()?;
    if node.qualify.is_some() {
        return unsupported("QUALIFY");
    }
    if node.sample.is_some() {
        return unsupported("USING SAMPLE");
    }
    let grouping_sets = grouping_sets(&node.group_sets, node.group_expressions.len())?;
    let group_by_all = node.aggregate_handling == "FORCE_AGGREGATES";
    let from = match node.from_table {
        Some(t) => table_ref(t, ctes)?,
        None => return unsupported("a SELECT without FROM"),
    };
    let items = node
        .select_list
        .into_iter()
        .map(|e| {
            let alias = if e.alias.is_empty() { None } else { Some(e.alias.clone()) };
            Ok(SelectItem { expr: expr(e)?, alias })
        })
        .collect::<Result<Vec<_>>>()?;
    let (where_clause, semi_joins) = match node.where_clause {
        Some(w) => split_semi_joins(w)?,
        None => (None, vec![]),
    };
    let select = Select {
        semi_joins,
        where_clause: where_clause.map(expr).transpose()?,
        group_by: node.group_expressions.into_iter().map(expr).collect::<Result<_>>()?,
        group_by_all,
        grouping_sets,
        presentation,
        ..Select::plain(items, from)
    };
    if distinct_on.is_empty() {
        Ok(select)
    } else if select.items.iter().any(|i| matches!(i.expr, Expr::Star { .. })) {
        // The binder expands the * first.
        Ok(Select { distinct_on, ..select })
    } else {
        distinct_on_as_groups(select, distinct_on)
    }
}

/// DuckDB's `group_sets` (each set as positions in the GROUP BY expressions, ROLLUP and CUBE
/// already expanded): None for a plain GROUP BY, whose one set holds every expression.
fn grouping_sets(raw: &[Value], expressions: usize) -> Result<Option<Vec<Vec<usize>>>> {
    let sets = raw
        .iter()
        .map(|set| {
            let mut positions = set
                .as_array()
                .ok_or_else(|| Error::Parse("a grouping set is not a list".into()))?
                .iter()
                .map(|p| p.as_u64().map(|p| p as usize).filter(|&p| p < expressions))
                .collect::<Option<Vec<usize>>>()
                .ok_or_else(|| Error::Parse("a grouping set names no GROUP BY expression".into()))?;
            positions.sort_unstable();
            positions.dedup();
            Ok(positions)
        })
        .collect::<Result<Vec<_>>>()?;
    if sets.len() <= 1 && sets.first().is_none_or(|s| s.len() == expressions) {
        return Ok(None);
    }
    if (1..sets.len()).any(|i| sets[..i].contains(&sets[i])) {
        return unsupported("GROUPING SETS that list a set twice");
    }
    Ok(Some(sets))
}

/// DISTINCT, ORDER BY and LIMIT/OFFSET, in the order DuckDB's parser writes them, and the
/// expressions of a DISTINCT ON (empty for none).
fn modifiers(mods: Vec<RawModifier>) -> Result<(crate::ast::Presentation<Expr>, Vec<Expr>)> {
    let mut p = crate::ast::Presentation::default();
    let mut on = Vec::new();
    let mut stage = 0; // DISTINCT, then ORDER BY, then LIMIT: anything else is a nesting we do not model
    for m in mods {
        let at = match m.kind.as_str() {
            "DISTINCT_MODIFIER" => 1,
            "ORDER_MODIFIER" => 2,
            "LIMIT_MODIFIER" => 3,
            "LIMIT_PERCENT_MODIFIER" => return unsupported("LIMIT ... PERCENT"),
            other => return unsupported(format!("query modifier {other}")),
        };
        if at <= stage {
            return unsupported("query modifiers in this order");
        }
        stage = at;
        match at {
            1 if !m.distinct_on_targets.is_empty() => {
                on = m.distinct_on_targets.into_iter().map(raw_expr).collect::<Result<_>>()?;
            }
            1 => p.distinct = true,
            2 => {
                for o in m.orders {
                    p.order_by.push(order_item(o)?);
                }
            }
            _ => {
                p.limit = m.limit.map(row_count).transpose()?;
                p.offset = m.offset.map(row_count).transpose()?;
            }
        }
    }
    Ok((p, on))
}

/// An expression of the tree, read into the AST.
fn raw_expr(v: Value) -> Result<Expr> {
    expr(serde_json::from_value(v).map_err(|e| Error::Parse(format!("DuckDB's parse tree could not be read ({e})")))?)
}

/// One ORDER BY key (of the query or inside an aggregate) with its direction and NULL order.
fn order_item(o: RawOrder) -> Result<crate::ast::OrderItem<Expr>> {
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
fn row_count(e: RawExpr) -> Result<i64> {
    match expr(e)? {
        Expr::Constant(Constant::Integer(n)) if (0..=i64::MAX as i128).contains(&n) => Ok(n as i64),
        _ => unsupported("LIMIT/OFFSET other than an integer literal"),
    }
}

fn table_ref(t: RawTableRef, ctes: &[Cte]) -> Result<FromItem> {
    if t.sample.is_some() {
        return unsupported("TABLESAMPLE");
    }
    match t.kind.as_str() {
        "BASE_TABLE" => {
            if t.at_clause.is_some() {
                return unsupported("time travel (AT)");
            }
            // A CTE's name (unqualified) means the CTE: a subquery under that name.
            let cte = ctes.iter().find(|(name, _, _, _)| eq_ci(name, &t.table_name));
            if let (Some((name, aliases, select, tree)), true) =
                (cte, t.schema_name.is_empty() && t.catalog_name.is_empty())
            {
                let columns = if t.column_name_alias.is_empty() { aliases.clone() } else { t.column_name_alias };
                let alias = if t.alias.is_empty() { name.clone() } else { t.alias };
                let tree = Some(tree.clone());
                return Ok(FromItem::Subquery { select: Box::new(select.clone()), alias, columns, tree });
            }
            if !t.column_name_alias.is_empty() {
                return unsupported("column aliases on a table (t(a, b))");
            }
            let opt = |s: String| if s.is_empty() { None } else { Some(s) };
            Ok(FromItem::Table {
                name: TableName { catalog: opt(t.catalog_name), schema: opt(t.schema_name), name: t.table_name },
                alias: opt(t.alias),
            })
        }
        "JOIN" => {
            match t.join_type.as_str() {
                "INNER" => {}
                "LEFT" => return unsupported("LEFT JOIN (outer joins)"),
                "RIGHT" => return unsupported("RIGHT JOIN (outer joins)"),
                "OUTER" | "FULL" => return unsupported("FULL OUTER JOIN (outer joins)"),
                "SEMI" => return unsupported("SEMI JOIN"),
                "ANTI" => return unsupported("ANTI JOIN"),
                other => return unsupported(format!("{other} JOIN")),
            }
            match t.ref_type.as_str() {
                "REGULAR" | "CROSS" => {}
                "NATURAL" => return unsupported("NATURAL JOIN (name the join columns with USING)"),
                "ASOF" => return unsupported("ASOF JOIN"),
                "POSITIONAL" => return unsupported("POSITIONAL JOIN"),
                "DEPENDENT" => return unsupported("LATERAL joins"),
                other => return unsupported(format!("{other} join")),
            }
            let (Some(left), Some(right)) = (t.left, t.right) else {
                return Err(Error::Parse("a JOIN without two sides".into()));
            };
            Ok(FromItem::Join {
                left: Box::new(table_ref(*left, ctes)?),
                right: Box::new(table_ref(*right, ctes)?),
                on: t.condition.map(expr).transpose()?,
                using: t.using_columns,
            })
        }
        "SUBQUERY" => {
            let Some(sub) = t.subquery else {
                return Err(Error::Parse("a subquery in FROM without a query".into()));
            };
            let tree = Some(statement_tree(&sub));
            // DuckDB names a subquery without an alias unnamed_subquery.
            let alias = if t.alias.is_empty() { "unnamed_subquery".to_string() } else { t.alias };
            // A plain UNION ALL is distributed into the query; any other set operation (UNION,
            // one with ORDER BY or LIMIT) is a subquery like others: a stage, if it binds.
            let n = &sub["node"];
            if n["type"] == "SET_OPERATION_NODE" && empty(&n["modifiers"]) && empty(&n["cte_map"]["map"]) {
                if let Ok((branches, false)) = union_branches(statement(sub.clone())?.node, ctes, true) {
                    return Ok(FromItem::Union { branches, alias, columns: t.column_name_alias, compared: None });
                }
            }
            let select = select_node(statement(sub)?.node, ctes)?;
            Ok(FromItem::Subquery { select: Box::new(select), alias, columns: t.column_name_alias, tree })
        }
        "TABLE_FUNCTION" => unsupported("table functions as sources"),
        "EXPRESSION_LIST" => unsupported("VALUES lists as sources"),
        "PIVOT" => unsupported("PIVOT/UNPIVOT"),
        "SHOW_REF" => unsupported("SHOW/DESCRIBE as a source"),
        "EMPTY" | "EMPTY_FROM" => unsupported("a SELECT without FROM"),
        other => unsupported(format!("FROM item {other}")),
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

fn expr(mut e: RawExpr) -> Result<Expr> {
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

    #[test]
    fn a_chain_of_one_set_operation_lists_its_operands() {
        let q = |name: &str| serde_json::json!({"type": "SELECT_NODE", "name": name});
        let node = |kind: &str, all: bool, left: Value, right: Value| {
            serde_json::json!({"type": "SET_OPERATION_NODE", "setop_type": kind, "setop_all": all,
                               "modifiers": [], "left": left, "right": right})
        };
        // (a INTERSECT b) INTERSECT ALL c
        let abc = node("INTERSECT", true, node("INTERSECT", false, q("a"), q("b")), q("c"));
        let (operands, flags) = chain(serde_json::from_value(abc).unwrap()).unwrap();
        assert_eq!(operands, vec![q("a"), q("b"), q("c")]);
        assert_eq!(flags, vec![false, true]);
        // a EXCEPT (b INTERSECT c): the right side is one operand; another operation on the
        // left is one too
        let nested = node("EXCEPT", false, node("INTERSECT", false, q("a"), q("b")), q("c"));
        let (operands, flags) = chain(serde_json::from_value(nested).unwrap()).unwrap();
        assert_eq!((operands.len(), flags), (2, vec![false]));
    }

    #[test]
    fn distinct_aggregates_of_one_argument_read_a_subquery_of_per_group_values() {
        // DuckDB 1.5.5's trees of three queries
        let one = parse_select(r#"{"error":false,"statements":[{"node":{"type":"SELECT_NODE","modifiers":[],"cte_map":{"map":[]},"select_list":[{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","query_location":7,"column_names":["g"]},{"class":"FUNCTION","type":"FUNCTION","alias":"d","query_location":10,"function_name":"count","schema":"","children":[{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","query_location":25,"column_names":["x"]}],"filter":null,"order_bys":{"type":"ORDER_MODIFIER","orders":[]},"distinct":true,"is_operator":false,"export_state":false,"catalog":""}],"from_table":{"type":"BASE_TABLE","alias":"","sample":null,"query_location":38,"schema_name":"","table_name":"t","column_name_alias":[],"catalog_name":"","at_clause":null},"where_clause":null,"group_expressions":[{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","query_location":49,"column_names":["g"]}],"group_sets":[[0]],"aggregate_handling":"STANDARD_HANDLING","having":null,"sample":null,"qualify":null},"named_param_map":[]}]}"#).unwrap();
        let v = one.by_values.expect("an alternative over per-group values");
        let stage = |n: &str| col(&[DISTINCT_STAGE, n]);
        assert_eq!(v.group_by, vec![stage("distinct_key_0")]);
        assert_eq!(v.items[0].expr, stage("distinct_key_0"));
        assert_eq!(
            v.items[1].expr,
            Expr::Function { name: "count".into(), args: vec![stage(DISTINCT_VALUE)], is_operator: false }
        );
        assert_eq!(v.items[1].alias.as_deref(), Some("d"));
        let FromItem::Subquery { select, alias, tree, .. } = &v.from else { panic!("a subquery") };
        assert_eq!(alias, DISTINCT_STAGE);
        assert_eq!(select.group_by, vec![col(&["g"]), col(&["x"])]);
        let aliases: Vec<_> = select.items.iter().map(|i| i.alias.clone().unwrap_or_default()).collect();
        assert_eq!(aliases, vec!["distinct_key_0", DISTINCT_VALUE]);
        assert!(tree.as_deref().is_some_and(|t| t.contains("distinct_value")));
        // COUNT(*) beside it: counted per (g, x) row in the subquery, the counts added up
        let mixed = parse_select(r#"{"error":false,"statements":[{"node":{"type":"SELECT_NODE","modifiers":[],"cte_map":{"map":[]},"select_list":[{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","query_location":7,"column_names":["g"]},{"class":"FUNCTION","type":"FUNCTION","alias":"","query_location":10,"function_name":"count","schema":"","children":[{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","query_location":25,"column_names":["x"]}],"filter":null,"order_bys":{"type":"ORDER_MODIFIER","orders":[]},"distinct":true,"is_operator":false,"export_state":false,"catalog":""},{"class":"FUNCTION","type":"FUNCTION","alias":"n","query_location":29,"function_name":"count_star","schema":"","children":[],"filter":null,"order_bys":{"type":"ORDER_MODIFIER","orders":[]},"distinct":false,"is_operator":false,"export_state":false,"catalog":""}],"from_table":{"type":"BASE_TABLE","alias":"","sample":null,"query_location":48,"schema_name":"","table_name":"t","column_name_alias":[],"catalog_name":"","at_clause":null},"where_clause":null,"group_expressions":[{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","query_location":59,"column_names":["g"]}],"group_sets":[[0]],"aggregate_handling":"STANDARD_HANDLING","having":null,"sample":null,"qualify":null},"named_param_map":[]}]}"#).unwrap().by_values.expect("an alternative");
        let sum = Expr::Function { name: "sum".into(), args: vec![stage("distinct_pre_0")], is_operator: false };
        assert_eq!(mixed.items[2].expr, Expr::Coalesce(vec![sum, Expr::Constant(Constant::Integer(0))]));
        let FromItem::Subquery { select, .. } = &mixed.from else { panic!("a subquery") };
        assert_eq!(select.items[2].alias.as_deref(), Some("distinct_pre_0"));
        // two DISTINCT arguments, or a column that is no key: no alternative
        assert!(parse_select(r#"{"error":false,"statements":[{"node":{"type":"SELECT_NODE","modifiers":[],"cte_map":{"map":[]},"select_list":[{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","query_location":7,"column_names":["g"]},{"class":"FUNCTION","type":"FUNCTION","alias":"","query_location":10,"function_name":"count","schema":"","children":[{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","query_location":25,"column_names":["x"]}],"filter":null,"order_bys":{"type":"ORDER_MODIFIER","orders":[]},"distinct":true,"is_operator":false,"export_state":false,"catalog":""},{"class":"FUNCTION","type":"FUNCTION","alias":"","query_location":29,"function_name":"count","schema":"","children":[{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","query_location":44,"column_names":["y"]}],"filter":null,"order_bys":{"type":"ORDER_MODIFIER","orders":[]},"distinct":true,"is_operator":false,"export_state":false,"catalog":""}],"from_table":{"type":"BASE_TABLE","alias":"","sample":null,"query_location":52,"schema_name":"","table_name":"t","column_name_alias":[],"catalog_name":"","at_clause":null},"where_clause":null,"group_expressions":[{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","query_location":63,"column_names":["g"]}],"group_sets":[[0]],"aggregate_handling":"STANDARD_HANDLING","having":null,"sample":null,"qualify":null},"named_param_map":[]}]}"#).unwrap().by_values.is_none());
        assert!(parse_select(r#"{"error":false,"statements":[{"node":{"type":"SELECT_NODE","modifiers":[],"cte_map":{"map":[]},"select_list":[{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","query_location":7,"column_names":["g"]},{"class":"FUNCTION","type":"FUNCTION","alias":"","query_location":10,"function_name":"count","schema":"","children":[{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","query_location":25,"column_names":["x"]}],"filter":null,"order_bys":{"type":"ORDER_MODIFIER","orders":[]},"distinct":true,"is_operator":false,"export_state":false,"catalog":""},{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","query_location":29,"column_names":["y"]}],"from_table":{"type":"BASE_TABLE","alias":"","sample":null,"query_location":36,"schema_name":"","table_name":"t","column_name_alias":[],"catalog_name":"","at_clause":null},"where_clause":null,"group_expressions":[{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","query_location":47,"column_names":["g"]}],"group_sets":[[0]],"aggregate_handling":"STANDARD_HANDLING","having":null,"sample":null,"qualify":null},"named_param_map":[]}]}"#).unwrap().by_values.is_none());
    }

    #[test]
    fn distinct_on_is_the_first_row_of_each_group() {
        let item = |e: Expr, alias: Option<&str>| SelectItem { expr: e, alias: alias.map(str::to_string) };
        let order = |k: Expr, descending: Option<bool>| crate::ast::OrderItem { key: k, descending, nulls_first: None };
        // SELECT DISTINCT ON (g) g, x AS v FROM t ORDER BY g, y DESC
        let select = Select {
            presentation: crate::ast::Presentation {
                order_by: vec![order(col(&["g"]), None), order(col(&["y"]), Some(true))],
                ..Default::default()
            },
            ..Select::plain(
                vec![item(col(&["g"]), None), item(col(&["x"]), Some("v"))],
                FromItem::Table { name: TableName { catalog: None, schema: None, name: "t".into() }, alias: None },
            )
        };
        let g = distinct_on_as_groups(select.clone(), vec![col(&["g"])]).unwrap();
        assert_eq!(g.group_by, vec![col(&["g"])]);
        assert_eq!(g.items[0].expr, col(&["g"]));
        let first = Expr::Aggregate(Box::new(AggCall {
            name: "first".into(),
            args: vec![Expr::Struct(vec![("c1".into(), col(&["x"])), ("o1".into(), col(&["y"]))])],
            distinct: false,
            order_by: vec![order(col(&["g"]), None), order(col(&["y"]), Some(true))],
            filter: None,
        }));
        let field = |n: &str| Expr::Function {
            name: "struct_extract".into(),
            args: vec![first.clone(), Expr::Constant(Constant::Text(n.into()))],
            is_operator: false,
        };
        assert_eq!(g.items[1].expr, field("c1"));
        assert_eq!(g.items[1].alias.as_deref(), Some("v"));
        // the result is sorted by the key and by the chosen row's y
        assert_eq!(g.presentation.order_by[0].key, col(&["g"]));
        assert_eq!(g.presentation.order_by[1].key, field("o1"));
        // over a grouped query, or with *: refused
        let grouped = Select { group_by: vec![col(&["g"])], ..select.clone() };
        assert!(distinct_on_as_groups(grouped, vec![col(&["g"])]).unwrap_err().to_string().contains("grouped"));
        // DISTINCT ON (1) over `42 AS c`: the integer key groups by its position, not by 42
        let int = |n: i128| Expr::Constant(Constant::Integer(n));
        let constant = Select { items: vec![item(col(&["x"]), None), item(int(42), Some("c"))], ..select.clone() };
        let g = distinct_on_as_groups(constant, vec![int(2)]).unwrap();
        assert_eq!(g.group_by, vec![int(2)]);
        assert_eq!(g.items[1].expr, int(42));
        let star = Select { items: vec![item(Expr::Star { relation: None }, None)], ..select };
        assert!(distinct_on_as_groups(star, vec![col(&["g"])]).unwrap_err().to_string().contains("*"));
    }

    #[test]
    fn grouping_sets_as_positions_or_none_for_one_set_of_all() {
        let sets = |v: serde_json::Value| v.as_array().unwrap().clone();
        assert_eq!(grouping_sets(&sets(serde_json::json!([[0, 1]])), 2).unwrap(), None);
        assert_eq!(grouping_sets(&[], 0).unwrap(), None);
        assert_eq!(
            grouping_sets(&sets(serde_json::json!([[], [0], [1, 0]])), 2).unwrap(),
            Some(vec![vec![], vec![0], vec![0, 1]])
        );
        let twice = grouping_sets(&sets(serde_json::json!([[0], [0], []])), 1).unwrap_err();
        assert!(twice.to_string().contains("list a set twice"), "{twice}");
        assert!(grouping_sets(&sets(serde_json::json!([[3]])), 2).is_err());
    }

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

    #[test]
    fn a_comparison_turned_around_keeps_its_meaning() {
        assert_eq!(CompareOp::Lt.flipped(), CompareOp::Gt);
        assert_eq!(CompareOp::GtEq.flipped(), CompareOp::LtEq);
        assert_eq!(CompareOp::Eq.flipped(), CompareOp::Eq);
        assert_eq!(CompareOp::NotEq.flipped(), CompareOp::NotEq);
    }

    #[test]
    fn reads_a_grouped_join() {
        // json_serialize_sql('SELECT p.name, SUM(f.amount) AS total FROM f JOIN p ON f.k = p.k GROUP BY p.name'),
        // trimmed to the fields the parser reads.
        let json = r#"{"error":false,"statements":[{"node":{"type":"SELECT_NODE","modifiers":[],
          "cte_map":{"map":[]},
          "select_list":[{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","column_names":["p","name"]},
            {"class":"FUNCTION","type":"FUNCTION","alias":"total","function_name":"sum","schema":"",
             "children":[{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","column_names":["f","amount"]}],
             "filter":null,"order_bys":{"type":"ORDER_MODIFIER","orders":[]},"distinct":false,"is_operator":false,"catalog":""}],
          "from_table":{"type":"JOIN","alias":"","sample":null,
            "left":{"type":"BASE_TABLE","alias":"","sample":null,"schema_name":"","table_name":"f","column_name_alias":[],"catalog_name":"","at_clause":null},
            "right":{"type":"BASE_TABLE","alias":"","sample":null,"schema_name":"","table_name":"p","column_name_alias":[],"catalog_name":"","at_clause":null},
            "condition":{"class":"COMPARISON","type":"COMPARE_EQUAL","alias":"",
               "left":{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","column_names":["f","k"]},
               "right":{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","column_names":["p","k"]}},
            "join_type":"INNER","ref_type":"REGULAR","using_columns":[]},
          "where_clause":null,
          "group_expressions":[{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","column_names":["p","name"]}],
          "group_sets":[[0]],"aggregate_handling":"STANDARD_HANDLING","having":null,"sample":null,"qualify":null}}]}"#;
        let s = parse_select(json).unwrap();
        assert_eq!(s.items.len(), 2);
        assert_eq!(s.items[1].alias.as_deref(), Some("total"));
        assert_eq!(s.group_by, vec![col(&["p", "name"])]);
        match s.from {
            FromItem::Join { on: Some(Expr::Compare { op: CompareOp::Eq, .. }), .. } => {}
            other => panic!("unexpected FROM {other:?}"),
        }
    }

    #[test]
    fn names_unsupported_constructs() {
        let node = |extra: &str| {
            format!(
                r#"{{"error":false,"statements":[{{"node":{{"type":"SELECT_NODE",{extra}
                "select_list":[{{"class":"COLUMN_REF","type":"COLUMN_REF","column_names":["a"]}}],
                "from_table":{{"type":"BASE_TABLE","table_name":"t"}}}}}}]}}"#
            )
        };
        let err = |extra: &str| parse_select(&node(extra)).unwrap_err().to_string();
        // DISTINCT ON (a) a: one group per a
        let on = r#""modifiers":[{"type":"DISTINCT_MODIFIER","distinct_on_targets":[{"class":"COLUMN_REF","column_names":["a"]}]}],"#;
        let grouped = parse_select(&node(on)).unwrap();
        assert_eq!((grouped.group_by, grouped.presentation.distinct), (vec![col(&["a"])], false));
        assert!(err(r#""modifiers":[{"type":"LIMIT_PERCENT_MODIFIER"}],"#).contains("PERCENT"));
        assert!(err(r#""modifiers":[{"type":"ORDER_MODIFIER"},{"type":"DISTINCT_MODIFIER"}],"#).contains("order"));
        let limit = |n: &str| format!(r#""modifiers":[{{"type":"LIMIT_MODIFIER","limit":{n}}}],"#);
        assert!(err(&limit(r#"{"class":"COLUMN_REF","column_names":["a"]}"#)).contains("integer literal"));
        // DISTINCT, ORDER BY (direction and NULL order as written), LIMIT/OFFSET and HAVING are read
        let json = node(
            r#""modifiers":[{"type":"DISTINCT_MODIFIER","distinct_on_targets":[]},
              {"type":"ORDER_MODIFIER","orders":[{"type":"DESCENDING","null_order":"NULLS FIRST","expression":{"class":"COLUMN_REF","column_names":["a"]}},
                                                  {"type":"ORDER_DEFAULT","null_order":"ORDER_DEFAULT","expression":{"class":"COLUMN_REF","column_names":["b"]}}]},
              {"type":"LIMIT_MODIFIER","limit":{"class":"CONSTANT","value":{"type":{"id":"INTEGER"},"value":3}},
               "offset":{"class":"CONSTANT","value":{"type":{"id":"BIGINT"},"value":1}}}],
              "having":{"class":"CONSTANT","type":"VALUE_CONSTANT","value":{"type":{"id":"BOOLEAN"},"value":true}},"#,
        );
        let p = parse_select(&json).unwrap().presentation;
        assert!(p.distinct);
        assert_eq!(p.order_by.len(), 2);
        assert_eq!((p.order_by[0].descending, p.order_by[0].nulls_first), (Some(true), Some(true)));
        assert_eq!((p.order_by[1].descending, p.order_by[1].nulls_first), (None, None));
        assert_eq!((p.limit, p.offset), (Some(3), Some(1)));
        assert_eq!(p.having, Some(Expr::Constant(Constant::Bool(true))));
        let set_op = r#"{"error":false,"statements":[{"node":{"type":"SET_OPERATION_NODE"}}]}"#;
        assert!(parse_select(set_op).unwrap_err().to_string().contains("set operations"));
    }

    #[test]
    fn refuses_what_is_not_one_select() {
        let not_select = r#"{"error":true,"error_type":"not implemented","error_message":"Only SELECT statements can be serialized to json!"}"#;
        let e = parse_select(not_select).unwrap_err().to_string();
        assert!(
            e.starts_with("openivm: a view's query must be one SELECT statement (found a statement other than SELECT"),
            "{e}"
        );
        let two = r#"{"error":false,"statements":[{"node":{"type":"SELECT_NODE"}},{"node":{"type":"SELECT_NODE"}}]}"#;
        assert_eq!(
            parse_select(two).unwrap_err().to_string(),
            "openivm: a view's query must be one SELECT statement (found 2 statements)"
        );
        let none = r#"{"error":false,"statements":[]}"#;
        assert!(parse_select(none).unwrap_err().to_string().contains("(the query is empty)"));
        let syntax = r#"{"error":true,"error_type":"parser","error_message":"syntax error at end of input"}"#;
        assert_eq!(
            parse_select(syntax).unwrap_err().to_string(),
            "openivm: could not parse the view query: syntax error at end of input"
        );
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

    #[test]
    fn an_inserts_query_is_one_select_of_any_shape() {
        assert!(check_one_select(r#"{"error":false,"statements":[{"node":{"type":"SET_OPERATION_NODE"}}]}"#).is_ok());
        let two = r#"{"error":false,"statements":[{"node":{}},{"node":{}}]}"#;
        assert!(matches!(check_one_select(two), Err(Error::NotOneSelect(m)) if m == "found 2 statements"));
        let other = r#"{"error":true,"error_type":"not implemented","error_message":"Only SELECT statements can be serialized to json!"}"#;
        assert!(matches!(check_one_select(other), Err(Error::NotOneSelect(_))));
        let syntax = r#"{"error":true,"error_type":"parser","error_message":"syntax error at or near \"FORM\""}"#;
        assert!(matches!(check_one_select(syntax), Err(Error::Parse(_))));
    }
}
