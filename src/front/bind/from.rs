//! The FROM clause flattened into the leaves of one join: tables, DuckDB views expanded into
//! their definitions, and subqueries that select, project and join.

use crate::ast::{CompareOp, Expr, FromItem, Presentation, Select, SelectItem, TableName, TypeName, UnionBranch};
use crate::error::{Error, Result};
use crate::ir::{Leaf, SourceView};

use super::catalog::{Catalog, RelationKind, ResolvedTable, StageQuery, ViewDefinition};
use super::scope::{
    add_derived, add_leaf, bind_columns, bind_error, display_name, eq_ci, expand_star, relation_alias_free, Derived,
    Scope,
};

/// Views expanded inside views deeper than this are refused (DuckDB itself refuses cycles).
const MAX_VIEW_DEPTH: usize = 32;

/// Adds a FROM item to the join of `scope`: its tables as leaves, its subqueries flattened or
/// read as stages, and its join conditions (not bound yet) to `preds`.
pub(super) fn flatten(item: FromItem, catalog: &dyn Catalog, scope: &mut Scope, preds: &mut Vec<Expr>) -> Result<()> {
    match item {
        FromItem::Table { name, alias } => {
            let Some(t) = catalog.table(&name)? else {
                return bind_error(format!("table '{}' does not exist", display_name(&name)));
            };
            if t.id.name.to_ascii_lowercase().starts_with("openivm_") || t.id.schema.eq_ignore_ascii_case("openivm") {
                return Err(Error::Refused(format!(
                    "the extension's own tables as sources ('{}': every refresh writes them)",
                    display_name(&name)
                )));
            }
            if t.kind == RelationKind::View {
                return expand_view(t, name, alias, catalog, scope, preds);
            }
            add_leaf(t, name, alias, scope)
        }
        FromItem::Subquery { select, alias, columns, tree } => {
            relation_alias_free(scope, &alias)?;
            if !flattens(&select) {
                // A subquery that groups or deduplicates is a maintained stage of its own, read
                // like a maintained view (its visible rows, through a feed).
                let staged = match (&tree, columns.is_empty()) {
                    (Some(tree), true) => catalog.stage(&StageQuery { tree: tree.clone(), distinct: false })?,
                    _ => None,
                };
                let Some(stage) = staged else {
                    return Err(Error::Unsupported(
                        "subqueries in FROM that group, filter groups, deduplicate, order or limit".into(),
                    ));
                };
                if !scope.upstream.contains(&stage.id) {
                    scope.upstream.push(stage.id.clone());
                }
                let name = TableName { catalog: None, schema: None, name: alias.clone() };
                return add_leaf(stage, name, Some(alias), scope);
            }
            let derived = flatten_subquery(*select, alias, columns, catalog, scope)?;
            add_derived(scope, derived);
            Ok(())
        }
        FromItem::UnionBranch { branch, alias, columns, types } => {
            relation_alias_free(scope, &alias)?;
            let mut derived = flatten_subquery(branch_subquery(*branch), alias, vec![], catalog, scope)?;
            if derived.columns.len() != columns.len() {
                return bind_error("the branches of a UNION ALL have different numbers of columns".into());
            }
            for ((name, e), ((union_name, union_type), own)) in
                derived.columns.iter_mut().zip(columns.iter().zip(&types))
            {
                *name = union_name.clone();
                if own != union_type {
                    let ty = TypeName { id: union_type.clone(), decimal: None };
                    *e = Expr::Cast { expr: Box::new(e.clone()), ty, try_cast: false };
                }
            }
            add_derived(scope, derived);
            Ok(())
        }
        FromItem::Union { .. } => Err(Error::Unsupported("UNION ALL in this place of a query".into())),
        FromItem::Join { left, right, on, using } => {
            let left_start = scope.leaves.len();
            flatten(*left, catalog, scope, preds)?;
            let right_start = scope.leaves.len();
            flatten(*right, catalog, scope, preds)?;
            if let Some(on) = on {
                preds.push(on);
            }
            if !using.is_empty() && !scope.visible[left_start..].iter().all(|v| *v) {
                return Err(Error::Unsupported("JOIN ... USING with a subquery on one side".into()));
            }
            for col in using {
                let find = |range: std::ops::Range<usize>| -> Result<usize> {
                    let hits: Vec<usize> =
                        range.filter(|&i| scope.leaves[i].columns.iter().any(|c| eq_ci(&c.name, &col))).collect();
                    match hits.as_slice() {
                        [one] => Ok(*one),
                        [] => bind_error(format!("USING column '{col}' is not a column of both sides of the join")),
                        _ => bind_error(format!("USING column '{col}' is ambiguous on one side of the join")),
                    }
                };
                let l = find(left_start..right_start)?;
                let r = find(right_start..scope.leaves.len())?;
                let name_of = |leaf: usize| {
                    scope.leaves[leaf].columns.iter().find(|c| eq_ci(&c.name, &col)).expect("found").name.clone()
                };
                let (lname, rname) = (name_of(l), name_of(r));
                preds.push(Expr::Compare {
                    op: CompareOp::Eq,
                    left: Box::new(Expr::Column(vec![scope.leaves[l].alias.clone(), lname])),
                    right: Box::new(Expr::Column(vec![scope.leaves[r].alias.clone(), rname.clone()])),
                });
                let representative =
                    scope.using.iter().find(|(c, _)| eq_ci(c, &col)).map(|(_, leaf)| *leaf).unwrap_or(l);
                scope.using.retain(|(c, _)| !eq_ci(c, &col));
                scope.using.push((col.clone(), representative));
                scope.star_hidden.push((r, rname));
            }
            Ok(())
        }
    }
}

/// A DuckDB view in FROM is its definition as a subquery in FROM named like the view (by its
/// alias, else its name) with the view's column names: a select-project-join view is flattened
/// into the join (FK pruning applies to its tables), anything else is what such a subquery is.
fn expand_view(
    t: ResolvedTable,
    name: TableName,
    alias: Option<String>,
    catalog: &dyn Catalog,
    scope: &mut Scope,
    preds: &mut Vec<Expr>,
) -> Result<()> {
    let shown = display_name(&name);
    match catalog.view(&t.id)? {
        None => {
            Err(Error::Unsupported(format!("views as sources ('{shown}' is a view; name its base tables instead)")))
        }
        Some(ViewDefinition::Maintained { columns }) => {
            if !scope.upstream.contains(&t.id) {
                scope.upstream.push(t.id.clone());
            }
            let table = ResolvedTable { id: t.id, kind: RelationKind::Table, columns };
            add_leaf(table, name, alias, scope)
        }
        Some(ViewDefinition::Query { select, sql, columns, tree }) => {
            if scope.depth >= MAX_VIEW_DEPTH {
                return Err(Error::Unsupported(format!("views nested more than {MAX_VIEW_DEPTH} deep ('{shown}')")));
            }
            let view = SourceView { view: t.id, sql };
            if !scope.views.contains(&view) {
                scope.views.push(view);
            }
            let alias = alias.unwrap_or(name.name);
            flatten(FromItem::Subquery { select, alias, columns, tree }, catalog, scope, preds)
        }
    }
}

/// Whether a subquery in FROM can be flattened into the join (it selects, projects and joins).
pub(super) fn flattens(select: &Select) -> bool {
    select.group_by.is_empty()
        && !select.group_by_all
        && select.presentation == Presentation::default()
        && select.semi_joins.is_empty()
        // INTERSECT / EXCEPT do not distribute over a join: such a subquery is a stage
        && !matches!(select.from, FromItem::Union { compared: Some(_), .. })
}

/// Flattens a select-project-join subquery in FROM into the outer join: its tables become
/// leaves (seen by the outer query only through the subquery's columns), its conditions
/// predicates of the outer query, its select list the columns of the relation `alias`. Inner
/// joins over bags commute with selections and projections, so the flattened join has the
/// same rows. A subquery that groups, aggregates, deduplicates, orders or limits is not
/// flattened (`Unsupported`).
pub(super) fn flatten_subquery(
    select: Select,
    alias: String,
    column_aliases: Vec<String>,
    catalog: &dyn Catalog,
    outer: &mut Scope,
) -> Result<Derived> {
    if !flattens(&select) {
        return Err(Error::Unsupported(
            "subqueries in FROM that group, filter groups, deduplicate, order or limit".into(),
        ));
    }
    let mut inner = Scope { depth: outer.depth + 1, ..Scope::default() };
    let mut raw = Vec::new();
    flatten(select.from, catalog, &mut inner, &mut raw)?;
    let mut preds = std::mem::take(&mut inner.bound_predicates);
    for p in raw.into_iter().chain(select.where_clause) {
        preds.extend(bind_columns(p, &inner, catalog, false)?.conjuncts());
    }
    let mut columns: Vec<(Option<String>, Expr)> = Vec::new();
    for item in select.items {
        match item.expr {
            Expr::Star { relation } => {
                columns.extend(expand_star(&inner, relation.as_deref())?.into_iter().map(|(e, n)| (n, e)))
            }
            e => {
                let bound = bind_columns(e.clone(), &inner, catalog, false)?;
                // DuckDB names an unaliased column reference after the column.
                let name = item.alias.clone().or(match (&e, &bound) {
                    (Expr::Column(parts), _) => parts.last().cloned(),
                    (_, Expr::Bound { column, .. }) => Some(column.clone()),
                    _ => None,
                });
                columns.push((name, bound));
            }
        }
    }
    for (n, (name, e)) in columns.iter_mut().enumerate() {
        if name.is_none() {
            if let Expr::Bound { column, .. } = e {
                *name = Some(column.clone());
            }
        }
        if let Some(a) = column_aliases.get(n) {
            *name = Some(a.clone());
        }
    }
    if column_aliases.len() > columns.len() {
        return bind_error(format!(
            "the subquery '{alias}' has {} columns but {} column aliases",
            columns.len(),
            column_aliases.len()
        ));
    }
    // Re-number the inner leaves after the outer ones.
    let offset = outer.leaves.len();
    let shift = |e: Expr| shift_leaves(e, offset);
    outer.bound_predicates.extend(preds.into_iter().map(shift));
    outer.leaves.extend(inner.leaves);
    outer.visible.extend(inner.visible.iter().map(|_| false));
    for v in inner.views {
        if !outer.views.contains(&v) {
            outer.views.push(v);
        }
    }
    for u in inner.upstream {
        if !outer.upstream.contains(&u) {
            outer.upstream.push(u);
        }
    }
    Ok(Derived { alias, columns: columns.into_iter().map(|(n, e)| (n, shift(e))).collect() })
}

/// A UNION ALL branch as the query reads it: all its columns, through a subquery (flattened, or
/// a stage when the branch groups).
pub(super) fn branch_subquery(branch: UnionBranch) -> Select {
    let from = FromItem::Subquery {
        select: Box::new(branch.select),
        alias: "openivm_branch".into(),
        columns: vec![],
        tree: Some(branch.tree),
    };
    Select::plain(vec![SelectItem { expr: Expr::Star { relation: None }, alias: None }], from)
}

/// `e` with every leaf index moved up by `offset`.
fn shift_leaves(e: Expr, offset: usize) -> Expr {
    let shifted = e.rewrite(&mut |x| -> std::result::Result<Expr, std::convert::Infallible> {
        Ok(match x {
            Expr::Bound { leaf, column } => Expr::Bound { leaf: leaf + offset, column },
            other => other,
        })
    });
    match shifted {
        Ok(e) => e,
        Err(never) => match never {},
    }
}

/// Gives the leaves the query cannot see by name (inside flattened subqueries) aliases that no
/// other leaf has: the renderer names every leaf by its alias.
pub(super) fn unique_aliases(leaves: &mut [Leaf], visible: &[bool]) {
    for i in 0..leaves.len() {
        if visible[i] {
            continue;
        }
        let base = leaves[i].alias.clone();
        let mut candidate = base.clone();
        let mut n = 1;
        while leaves.iter().enumerate().any(|(j, l)| j != i && eq_ci(&l.alias, &candidate)) {
            n += 1;
            candidate = format!("{base}_{n}");
        }
        leaves[i].alias = candidate;
    }
}
