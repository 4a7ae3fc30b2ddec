//! A UNION ALL in FROM distributed over its branches: where the branches are, their columns
//! and types, and the view that is the union of the query bound once per branch.

use crate::ast::{Expr, FromItem, UnionBranch};
use crate::error::{Error, Result};
use crate::ir::{Leaf, Shape, SourceView, TableId, ViewQuery};

use super::catalog::Catalog;
use super::from::{branch_subquery, flatten_subquery, flattens};
use super::scope::{bind_error, Scope};

/// The first UNION ALL of a FROM clause that is bound with the query: not inside a subquery
/// that becomes a stage (whose own query distributes it).
pub(super) fn first_union(from: &FromItem) -> Option<&FromItem> {
    match from {
        FromItem::Union { .. } => Some(from),
        FromItem::Subquery { select, .. } if flattens(select) => first_union(&select.from),
        FromItem::Join { left, right, .. } => first_union(left).or_else(|| first_union(right)),
        _ => None,
    }
}

/// Puts `with` where `first_union` finds the union.
pub(super) fn replace_first_union(from: &mut FromItem, with: FromItem) {
    match from {
        FromItem::Union { .. } => *from = with,
        FromItem::Subquery { select, .. } if flattens(select) => replace_first_union(&mut select.from, with),
        FromItem::Join { left, right, .. } => {
            if first_union(left).is_some() {
                replace_first_union(left, with)
            } else {
                replace_first_union(right, with)
            }
        }
        _ => {}
    }
}

/// A union's columns (name, if the query can name it, and DuckDB type) and each branch's own
/// column types.
type UnionColumns = (Vec<(Option<String>, String)>, Vec<Vec<String>>);

/// The union's columns (names: the aliases written after it, else the first branch's; types:
/// DuckDB's unification of the branches') and each branch's own column types.
pub(super) fn union_columns(
    branches: &[UnionBranch],
    aliases: &[String],
    catalog: &dyn Catalog,
) -> Result<UnionColumns> {
    let mut names: Vec<Option<String>> = Vec::new();
    let mut types: Vec<Vec<String>> = Vec::new();
    for (b, branch) in branches.iter().enumerate() {
        let mut scratch = Scope::default();
        let derived =
            flatten_subquery(branch_subquery(branch.clone()), "openivm_branch".into(), vec![], catalog, &mut scratch)?;
        let exprs: Vec<Expr> = derived.columns.iter().map(|(_, e)| e.clone()).collect();
        let typed = catalog.expression_types(&scratch.leaves, &exprs)?;
        if b == 0 {
            names = derived.columns.iter().map(|(n, _)| n.clone()).collect();
        } else if exprs.len() != names.len() {
            return bind_error(format!("the branches of a UNION ALL have {} and {} columns", names.len(), exprs.len()));
        }
        types.push(typed.into_iter().map(|t| t.unwrap_or_else(|| "UNKNOWN".into())).collect());
    }
    if aliases.len() > names.len() {
        return bind_error(format!("a UNION ALL of {} columns has {} column aliases", names.len(), aliases.len()));
    }
    for (n, a) in names.iter_mut().zip(aliases) {
        *n = Some(a.clone());
    }
    let unified = catalog.union_types(&types)?;
    Ok((names.into_iter().zip(unified).collect(), types))
}

/// The view of a union: the branches' leaves one after the other, each branch's own terms, and
/// one stored result, which every branch must give the same columns.
pub(super) fn union_of(parts: Vec<ViewQuery>) -> Result<ViewQuery> {
    let mut branches: Vec<ViewQuery> = Vec::new();
    for q in parts {
        if q.branches.is_empty() {
            branches.push(q);
        } else {
            branches.extend(q.branches);
        }
    }
    let layout = |q: &ViewQuery| {
        let grouping = match &q.shape {
            Shape::Grouped { outputs, sets, keys, .. } => (outputs.clone(), sets.clone(), keys.len()),
            Shape::Bag { .. } => (vec![], None, 0),
        };
        (crate::render::payload_names(q), crate::render::stored_columns(q), grouping, q.presentation.clone())
    };
    let first = layout(&branches[0]);
    if branches[1..].iter().any(|b| layout(b) != first) {
        return Err(Error::Unsupported(
            "a UNION ALL whose branches would store different columns (an aggregate's input is the same expression in one branch and not in another)".into(),
        ));
    }
    let leaves: Vec<Leaf> = branches.iter().flat_map(|b| b.leaves.clone()).collect();
    if leaves.len() > crate::ir::MAX_UNION_LEAVES {
        return Err(Error::Unsupported(format!(
            "a UNION ALL of more than {} tables in all (this one has {})",
            crate::ir::MAX_UNION_LEAVES,
            leaves.len()
        )));
    }
    let mut source_views: Vec<SourceView> = Vec::new();
    let mut upstream: Vec<TableId> = Vec::new();
    for b in &branches {
        source_views.extend(b.source_views.iter().filter(|v| !source_views.contains(v)).cloned().collect::<Vec<_>>());
        upstream.extend(b.upstream.iter().filter(|u| !upstream.contains(u)).cloned().collect::<Vec<_>>());
    }
    Ok(ViewQuery {
        leaves,
        predicates: vec![],
        shape: branches[0].shape.clone(),
        used_columns: branches.iter().flat_map(|b| b.used_columns.clone()).collect(),
        presentation: branches[0].presentation.clone(),
        source_views,
        upstream,
        branches,
        side: None,
        compared: None,
    })
}
