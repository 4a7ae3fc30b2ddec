//! Stage 1: DuckDB's parse tree (the JSON of `json_serialize_sql`) -> typed `ast::Select`.
//!
//! The JSON is read with serde into raw node structs that mirror DuckDB's serializer (`raw`),
//! then converted node by node (statements here, expressions in `expr`). Anything outside the
//! supported set becomes `Error::Unsupported` naming the construct, so a user learns exactly what
//! to change. The rules that rewrite a query into one the binder maintains are in `rewrite`.

pub(crate) mod expr;
pub(crate) mod raw;
#[cfg(test)]
mod tests;

use serde_json::Value;

use crate::ast::{Compared, Expr, FromItem, Select, SelectItem, TableName, UnionBranch};
use crate::error::{Error, Result};
use crate::front::rewrite::distinct_by_values::distinct_by_values;
use crate::front::rewrite::distinct_on::distinct_on_as_groups;
use crate::front::rewrite::semi_joins::split_semi_joins;
use expr::{expr, order_item, raw_expr, row_count, unsupported};
use raw::{empty, query_node, statement, statement_tree, RawCteMap, RawModifier, RawNode, RawParse, RawTableRef};

fn eq_ci(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
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
            select.by_values = distinct_by_values(&tree["statements"][0], &select).map(Box::new);
            Ok(select)
        }
        (None, _) => Err(Error::NotOneSelect("the query is empty".into())),
        (Some(_), rest) => Err(Error::NotOneSelect(format!("found {} statements", rest + 1))),
    }
}

/// A CTE in scope: its name, its column aliases, its parsed query and its statement's tree.
type Cte = (String, Vec<String>, Select, String);

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
        // The rule reads a subquery's statement with this parser (as a query of its own).
        Some(w) => split_semi_joins(w, &|sub| select_node(statement(sub.clone())?.node, &[]))?,
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
