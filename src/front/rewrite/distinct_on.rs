//! `SELECT DISTINCT ON (keys) ... ORDER BY ...` as a grouped query: one group per ON key, the
//! other outputs read from the group's first row in the ORDER BY.

use crate::ast::{AggCall, Constant, Expr, Select, SelectItem};
use crate::error::{Error, Result};
use crate::front::aggregates::contains_aggregate;

/// `SELECT DISTINCT ON (e, ...) items ... ORDER BY o, ...` as the grouped query it is: one group
/// per distinct `e`, whose row is the first of the group in the ORDER BY's order, read as
/// `first(struct ORDER BY o, ...)` of a struct holding the items (and the order keys, which the
/// result is sorted by) taken from that one row. Items that are ON expressions are the group's
/// keys. `first` has no delta rule, so the view recomputes the groups a refresh touches. Rows
/// tied in the order give one of them, as DuckDB's DISTINCT ON does (the choice may differ from
/// a recompute's). Refused over a grouped query and with `*` (which the binder expands first).
pub fn distinct_on_as_groups(select: Select, on: Vec<Expr>) -> Result<Select> {
    let grouped = !select.group_by.is_empty() || select.group_by_all || select.presentation.having.is_some();
    if grouped || select.items.iter().any(|i| contains_aggregate(&i.expr)) {
        return Err(Error::Unsupported("DISTINCT ON over a grouped query".into()));
    }
    if select.items.iter().any(|i| matches!(i.expr, Expr::Star { .. })) {
        return Err(Error::Unsupported("DISTINCT ON with * (list the columns)".into()));
    }
    // ON targets and ORDER BY keys naming an output (by alias or 1-based position) are that
    // item's expression.
    let aliases: Vec<Option<String>> = select.items.iter().map(|i| i.alias.clone()).collect();
    let item_of = |e: &Expr| -> Result<Option<Expr>> {
        match output_named(&aliases, e) {
            Some(i) => select
                .items
                .get(i)
                .map(|i| Some(i.expr.clone()))
                .ok_or_else(|| Error::Parse("a position past the select list".into())),
            None => Ok(None),
        }
    };
    let on: Vec<Expr> = on.into_iter().map(|e| Ok(item_of(&e)?.unwrap_or(e))).collect::<Result<_>>()?;
    // An order key the result is sorted by, read from the chosen row (not an output or an ON
    // target; a constant orders nothing).
    let from_row = |k: &Expr| output_named(&aliases, k).is_none() && !on.contains(k) && !matches!(k, Expr::Constant(_));
    let mut row_order = Vec::new();
    for o in &select.presentation.order_by {
        let key = item_of(&o.key)?.unwrap_or_else(|| o.key.clone());
        // A constant orders nothing (and DuckDB refuses one inside an aggregate's ORDER BY).
        if !matches!(key, Expr::Constant(_)) {
            row_order.push(crate::ast::OrderItem { key, descending: o.descending, nulls_first: o.nulls_first });
        }
    }
    let mut fields: Vec<(String, Expr)> = Vec::new();
    for (j, item) in select.items.iter().enumerate() {
        if !on.contains(&item.expr) {
            fields.push((format!("c{j}"), item.expr.clone()));
        }
    }
    for (j, o) in select.presentation.order_by.iter().enumerate() {
        if from_row(&o.key) {
            fields.push((format!("o{j}"), o.key.clone()));
        }
    }
    let first = Expr::Aggregate(Box::new(AggCall {
        name: "first".into(),
        args: vec![Expr::Struct(fields)],
        distinct: false,
        order_by: row_order,
        filter: None,
    }));
    let field = |name: String| Expr::Function {
        name: "struct_extract".into(),
        args: vec![first.clone(), Expr::Constant(Constant::Text(name))],
        is_operator: false,
    };
    let item_exprs: Vec<Expr> = select.items.iter().map(|i| i.expr.clone()).collect();
    let items = select
        .items
        .into_iter()
        .enumerate()
        .map(|(j, item)| {
            let expr = if on.contains(&item.expr) { item.expr } else { field(format!("c{j}")) };
            SelectItem { expr, alias: item.alias }
        })
        .collect();
    let mut presentation = select.presentation;
    for (j, o) in presentation.order_by.iter_mut().enumerate() {
        if from_row(&o.key) {
            o.key = field(format!("o{j}"));
        }
    }
    // An integer literal in GROUP BY is a position: a target that is an integer item (`DISTINCT
    // ON (1)` over `42 AS c`) groups by that item's position, whose expression the item keeps.
    let group_by = on
        .into_iter()
        .map(|e| match e {
            Expr::Constant(Constant::Integer(_)) => match item_exprs.iter().position(|k| k == &e) {
                Some(i) => Expr::Constant(Constant::Integer(i as i128 + 1)),
                None => e,
            },
            e => e,
        })
        .collect();
    Ok(Select { items, group_by, presentation, ..select })
}

/// The select item an ORDER BY key or DISTINCT ON target names: by alias (a one-part column
/// name) or by 1-based position (an integer literal).
pub(crate) fn output_named(aliases: &[Option<String>], k: &Expr) -> Option<usize> {
    match k {
        Expr::Column(parts) if parts.len() == 1 => {
            aliases.iter().position(|a| a.as_deref().is_some_and(|a| a.eq_ignore_ascii_case(&parts[0])))
        }
        Expr::Constant(Constant::Integer(n)) => usize::try_from(*n).ok().filter(|&n| n >= 1).map(|n| n - 1),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::{FromItem, TableName};

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

    fn col(parts: &[&str]) -> Expr {
        Expr::Column(parts.iter().map(|s| s.to_string()).collect())
    }
}
