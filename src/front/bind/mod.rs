//! Stage 2: `ast::Select` + catalog -> `ir::ViewQuery`.
//!
//! Flattens the inner joins into leaves and predicates, resolves every column to a leaf,
//! expands `*`, checks functions (aggregates must be SUM/COUNT/AVG, scalars deterministic) and
//! rewrites the select list over the stored columns of the result. By job: `scope` (names and
//! functions), `from` (the FROM clause), `semi_joins` (WHERE subqueries), `union` (a UNION ALL
//! distributed), `groups` (GROUP BY and the stored result) and `types` (checks by type).

mod catalog;
mod from;
mod groups;
mod scope;
mod semi_joins;
#[cfg(test)]
pub mod tests;
mod types;
mod union;

use crate::ast::{Expr, FromItem, OrderItem, Presentation, Select, SelectItem};
use crate::error::{Error, Result};
use crate::front::aggregates::{contains_aggregate, PRE_AGGREGATED};
use crate::ir::{AggFunc, Aggregate, GroupingSets, OrderKey, Shape, ViewQuery};

pub use catalog::{Catalog, FunctionInfo, RelationKind, ResolvedTable, StageQuery, ViewDefinition};
use from::{flatten, unique_aliases};
use groups::{bind_group_key, calls_grouping, over_stored};
use scope::{bind_columns, bind_error, eq_ci, expand_star, Relation, Scope};
use semi_joins::semi_join_leaves;
use types::type_and_check;
use union::{first_union, replace_first_union, union_columns, union_of};

/// Joins above this many leaves are refused: the term count is 2^N - 1.
pub const MAX_LEAVES: usize = 16;

/// Binds a view query. A UNION ALL in FROM (a top-level UNION [ALL] is one, read as `SELECT *
/// FROM` it) is distributed over its branches: the query is bound once per branch, with the
/// union standing for that branch's rows, and the view is the union of those queries, each with
/// its own leaves and terms (`ViewQuery::branches`). That is exact because joins, filters,
/// projections and grouped sums and counts of a bag union are the union (per group, the sum) of
/// the same over each branch; the stored result and its merge are the one query's.
pub fn bind(mut select: Select, catalog: &dyn Catalog) -> Result<ViewQuery> {
    if !select.distinct_on.is_empty() {
        let on = std::mem::take(&mut select.distinct_on);
        let items = expanded_items(&select, catalog)?;
        return bind(
            crate::front::rewrite::distinct_on::distinct_on_as_groups(Select { items, ..select }, on)?,
            catalog,
        );
    }
    if let Some(by_values) = select.by_values.take() {
        if !calls_other_aggregates(&select, catalog)? {
            return bind(*by_values, catalog);
        }
    }
    let Some(FromItem::Union { branches, alias, columns: aliases, compared }) = first_union(&select.from) else {
        return bind_one(select, catalog);
    };
    let (branches, alias, compared) = (branches.clone(), alias.clone(), *compared);
    let (columns, types) = union_columns(&branches, aliases, catalog)?;
    let mut parts = Vec::new();
    for (branch, types) in branches.into_iter().zip(types) {
        let side = branch.side;
        let mut one = select.clone();
        let stand_in =
            FromItem::UnionBranch { branch: Box::new(branch), alias: alias.clone(), columns: columns.clone(), types };
        replace_first_union(&mut one.from, stand_in);
        let mut part = bind(one, catalog)?;
        if compared.is_some() {
            part.side = Some(side);
            part.branches.iter_mut().for_each(|b| b.side = Some(side));
        }
        parts.push(part);
    }
    let mut q = union_of(parts)?;
    q.compared = compared;
    Ok(q)
}

/// The select list with each `*` written out as the columns it stands for, by the names the
/// query sees them under (`alias.column`), from a scratch bind of the FROM clause.
fn expanded_items(select: &Select, catalog: &dyn Catalog) -> Result<Vec<SelectItem>> {
    let mut scratch = Scope::default();
    flatten(select.from.clone(), catalog, &mut scratch, &mut Vec::new())?;
    let mut items = Vec::new();
    for item in &select.items {
        let Expr::Star { relation } = &item.expr else {
            items.push(item.clone());
            continue;
        };
        for (rel, name, _) in scratch.star_columns(relation.as_deref())? {
            let Some(name) = name else {
                return Err(Error::Unsupported("DISTINCT ON with * over a column without a name".into()));
            };
            let alias = match rel {
                Relation::Leaf(i) => &scratch.leaves[i].alias,
                Relation::Derived(d) => &scratch.derived[d].alias,
            };
            items.push(SelectItem { expr: Expr::Column(vec![alias.clone(), name.clone()]), alias: Some(name) });
        }
    }
    Ok(items)
}

/// Whether the select list, HAVING or ORDER BY calls an aggregate function other than the
/// DISTINCT calls the parser read (`Expr::Aggregate`) and the plain ones it aggregates first
/// (`aggregates::PRE_AGGREGATED`): a function DuckDB's catalog knows as an aggregate, or does not
/// know at all.
fn calls_other_aggregates(select: &Select, catalog: &dyn Catalog) -> Result<bool> {
    let mut names = Vec::new();
    let exprs = select
        .items
        .iter()
        .map(|i| &i.expr)
        .chain(select.presentation.having.iter())
        .chain(select.presentation.order_by.iter().map(|o| &o.key));
    for e in exprs {
        e.visit(&mut |e| {
            if let Expr::Function { name, is_operator: false, .. } = e {
                if !PRE_AGGREGATED.contains(&name.to_ascii_lowercase().as_str()) {
                    names.push(name.clone());
                }
            }
        });
    }
    for name in names {
        if catalog.function(&name)?.is_none_or(|f| f.aggregate) {
            return Ok(true);
        }
    }
    Ok(false)
}

fn bind_one(select: Select, catalog: &dyn Catalog) -> Result<ViewQuery> {
    let mut scope = Scope::default();
    let mut raw_predicates = Vec::new();
    flatten(select.from, catalog, &mut scope, &mut raw_predicates)?;
    let semi_predicates = semi_join_leaves(select.semi_joins, catalog, &mut scope)?;
    if scope.leaves.len() > MAX_LEAVES {
        return Err(Error::Unsupported(format!(
            "joins of more than {MAX_LEAVES} tables (this one has {})",
            scope.leaves.len()
        )));
    }
    let mut predicates = std::mem::take(&mut scope.bound_predicates);
    predicates.extend(semi_predicates);
    for p in raw_predicates.into_iter().chain(select.where_clause) {
        let bound = bind_columns(p, &scope, catalog, false)?;
        predicates.extend(bound.conjuncts());
    }

    // Select list, with stars expanded.
    let mut items = Vec::new();
    for item in select.items {
        match item.expr {
            Expr::Star { relation } => items.extend(expand_star(&scope, relation.as_deref())?),
            e => items.push((bind_columns(e, &scope, catalog, true)?, item.alias)),
        }
    }

    let written = select.presentation;
    let having = written.having.map(|h| bind_columns(h, &scope, catalog, true)).transpose()?;
    // ORDER BY keys: an output (by position or alias), else an expression over the input.
    let mut order_exprs: Vec<(usize, Expr)> = Vec::new();
    let mut order_by: Vec<OrderItem<OrderKey>> = Vec::new();
    for (n, o) in written.order_by.into_iter().enumerate() {
        let key = match output_named(&o.key, &items)? {
            Some(i) => OrderKey::Output(i),
            None => {
                order_exprs.push((n, bind_columns(o.key, &scope, catalog, true)?));
                OrderKey::Stored(Expr::Constant(crate::ast::Constant::Null))
            }
        };
        order_by.push(OrderItem { key, descending: o.descending, nulls_first: o.nulls_first });
    }

    let has_aggregate = items.iter().any(|(e, _)| contains_aggregate(e))
        || having.is_some()
        || order_exprs.iter().any(|(_, e)| contains_aggregate(e));
    let mut item_exprs: Vec<Expr> = items.iter().map(|(e, _)| e.clone()).collect();
    item_exprs.extend(having.iter().cloned());
    item_exprs.extend(order_exprs.iter().map(|(_, e)| e.clone()));
    let mut having_stored = None;
    let mut shape = if has_aggregate || !select.group_by.is_empty() || select.group_by_all {
        let mut keys = Vec::new();
        for g in select.group_by {
            keys.push(bind_group_key(g, &items, &scope, catalog)?);
        }
        if select.group_by_all {
            for (e, _) in &items {
                if !contains_aggregate(e) && !keys.contains(e) {
                    keys.push(e.clone());
                }
            }
        }
        let sets = match select.grouping_sets {
            Some(_) if keys.len() > GroupingSets::MAX_KEYS => {
                return Err(Error::Unsupported(format!("GROUPING SETS over more than {} keys", GroupingSets::MAX_KEYS)))
            }
            Some(sets) => Some(GroupingSets { sets, keys: keys.len() }),
            None => None,
        };
        let mut aggregates = Vec::new();
        let stored = |e: Expr, aggregates: &mut Vec<Aggregate>| over_stored(e, &keys, sets.as_ref(), aggregates);
        let outputs = items.into_iter().map(|(e, _)| stored(e, &mut aggregates)).collect::<Result<Vec<_>>>()?;
        having_stored = having.map(|h| stored(h, &mut aggregates)).transpose()?;
        for (n, e) in order_exprs {
            order_by[n].key = OrderKey::Stored(stored(e, &mut aggregates)?);
        }
        Shape::Grouped { keys, aggregates, outputs, sets }
    } else {
        let outputs: Vec<Expr> = items.into_iter().map(|(e, _)| e).collect();
        if outputs.iter().any(calls_grouping) {
            return bind_error("GROUPING() in a query without GROUP BY".into());
        }
        for (n, e) in order_exprs {
            // Without GROUP BY the stored result holds the outputs only: a key must be one.
            match outputs.iter().position(|o| o == &e) {
                Some(i) => order_by[n].key = OrderKey::Output(i),
                None => {
                    return Err(Error::Unsupported(
                        "ORDER BY an expression that is not an output column (in a query without GROUP BY)".into(),
                    ))
                }
            }
        }
        Shape::Bag { text_identity: vec![crate::ir::Identity::Equal; outputs.len()], outputs }
    };
    let presentation = Presentation {
        having: having_stored,
        distinct: written.distinct,
        order_by,
        limit: written.limit,
        offset: written.offset,
    };

    unique_aliases(&mut scope.leaves, &scope.visible);
    type_and_check(&scope.leaves, &predicates, &mut shape, &item_exprs, catalog)?;
    // A row counts in a group of every set, so a group cannot be recomputed alone.
    if let Shape::Grouped { sets: Some(_), aggregates, .. } = &shape {
        if let Some(a) = aggregates.iter().find(|a| a.func == AggFunc::Recomputed) {
            return Err(Error::Unsupported(format!("{} with GROUPING SETS, ROLLUP or CUBE", a.display())));
        }
    }

    let mut used_columns = vec![Vec::<String>::new(); scope.leaves.len()];
    let mut note = |e: &Expr| {
        e.visit(&mut |x| {
            if let Expr::Bound { leaf, column } = x {
                if !used_columns[*leaf].contains(column) {
                    used_columns[*leaf].push(column.clone());
                }
            }
        })
    };
    predicates.iter().for_each(&mut note);
    match &shape {
        Shape::Grouped { keys, aggregates, .. } => {
            keys.iter().for_each(&mut note);
            aggregates.iter().filter_map(|a| a.arg.as_ref()).for_each(&mut note);
            aggregates.iter().filter_map(|a| a.call.as_ref()).flat_map(|c| c.inputs()).for_each(&mut note);
        }
        Shape::Bag { outputs, .. } => outputs.iter().for_each(&mut note),
    }
    for (leaf, cols) in scope.leaves.iter().zip(&used_columns) {
        if let Some(c) = cols.iter().find(|c| c.to_ascii_lowercase().starts_with("openivm_")) {
            return Err(Error::Unsupported(format!(
                "reading the column '{}.{c}': column names starting with openivm_ are reserved for the extension's bookkeeping",
                leaf.alias
            )));
        }
    }
    for (leaf, cols) in scope.leaves.iter().zip(used_columns.iter_mut()) {
        let order: Vec<&String> = leaf.columns.iter().map(|c| &c.name).collect();
        cols.sort_by_key(|c| order.iter().position(|o| *o == c));
    }
    Ok(ViewQuery {
        leaves: scope.leaves,
        predicates,
        shape,
        used_columns,
        presentation,
        source_views: scope.views,
        upstream: scope.upstream,
        branches: vec![],
        side: None,
        compared: None,
    })
}

/// The output an ORDER BY key names: `ORDER BY 2`, or the alias of a select item
/// (`ORDER BY revenue`), as DuckDB resolves them before input columns.
fn output_named(key: &Expr, items: &[(Expr, Option<String>)]) -> Result<Option<usize>> {
    match key {
        Expr::Constant(crate::ast::Constant::Integer(n)) => {
            match usize::try_from(*n).ok().and_then(|n| n.checked_sub(1)).filter(|&i| i < items.len()) {
                Some(i) => Ok(Some(i)),
                None => bind_error(format!("ORDER BY position {n} is not in the select list")),
            }
        }
        Expr::Column(parts) if parts.len() == 1 => {
            Ok(items.iter().position(|(_, a)| a.as_deref().is_some_and(|a| eq_ci(a, &parts[0]))))
        }
        _ => Ok(None),
    }
}
