//! `COUNT/SUM/AVG/MIN/MAX(DISTINCT x)` over a subquery of per-group distinct values, which is a
//! maintained stage: the aggregates lose their DISTINCT and both queries stay incremental.
//!
//! The subquery is a stage DuckDB reads back as a statement, so its tree is built from the
//! query's own JSON (`json_deserialize_sql` reads nothing else); its typed query is built from the
//! query's typed AST.

use serde_json::Value;

use crate::ast::{Constant, Expr, FromItem, Select, SelectItem};
use crate::front::aggregates::PRE_AGGREGATED;
use crate::front::parse::expr::expr;
use crate::front::parse::raw::{aliased, statement_tree, RawExpr};
use crate::front::rewrite::distinct_on::output_named;

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
pub fn distinct_by_values(tree: &Value, select: &Select) -> Option<Select> {
    if select.grouping_sets.is_some() || select.group_by_all || tree["node"]["type"] != "SELECT_NODE" {
        return None;
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
    let (Some(x), false) = (x, other) else { return None };
    let x_tree = expression_tree(&tree["node"], &x)?;
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
        let t = expression_tree(&tree["node"], call)?;
        pre_trees.push(t);
    }
    let key_trees: Vec<Value> = tree["node"]["group_expressions"].as_array().cloned().unwrap_or_default();
    let keys = &select.group_by;
    if key_trees.len() != keys.len() {
        return None;
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
        let expr = over_values(&item.expr)?;
        items.push(SelectItem { expr, alias: item.alias.clone() });
    }
    let mut presentation = select.presentation.clone();
    if let Some(h) = &select.presentation.having {
        let h = over_values(h)?;
        presentation.having = Some(h);
    }
    let aliases: Vec<Option<String>> = items.iter().map(|i| i.alias.clone()).collect();
    for o in presentation.order_by.iter_mut() {
        // A key naming an output, by alias or position, stays as it is.
        if output_named(&aliases, &o.key).is_none() {
            let k = over_values(&o.key)?;
            o.key = k;
        }
    }
    // The subquery: the query's FROM and WHERE, grouped by its keys and x.
    let mut inner_items: Vec<SelectItem> =
        keys.iter().enumerate().map(|(i, k)| SelectItem { expr: k.clone(), alias: Some(distinct_key(i)) }).collect();
    inner_items.push(SelectItem { expr: x.clone(), alias: Some(DISTINCT_VALUE.to_string()) });
    inner_items
        .extend(pre.iter().enumerate().map(|(j, p)| SelectItem { expr: p.clone(), alias: Some(distinct_pre(j)) }));
    let inner = Select {
        where_clause: select.where_clause.clone(),
        semi_joins: select.semi_joins.clone(),
        group_by: keys.iter().chain([&x]).cloned().collect(),
        ..Select::plain(inner_items, select.from.clone())
    };
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
    let from = FromItem::Subquery {
        select: Box::new(inner),
        alias: DISTINCT_STAGE.to_string(),
        columns: vec![],
        tree: Some(statement_tree(&stage)),
    };
    let group_by = (0..keys.len()).map(|i| column(&distinct_key(i))).collect();
    Some(Select { group_by, presentation, ..Select::plain(items, from) })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::parse::parse_select;

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

    fn col(parts: &[&str]) -> Expr {
        Expr::Column(parts.iter().map(|s| s.to_string()).collect())
    }
}
