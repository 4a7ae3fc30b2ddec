//! WHERE conjuncts with a subquery (`ast::SubqueryJoin`) as inner joins with stages: the
//! stage's leaf and the predicates that join it.

use crate::ast::{Correlated, CorrelatedCandidate, CorrelatedKind, Expr, SubqueryJoin};
use crate::error::{Error, Result};
use crate::ir::Leaf;

use super::catalog::{Catalog, ResolvedTable, StageQuery};
use super::scope::{bind_columns, bind_error, eq, Scope};

/// WHERE conjuncts with subqueries as inner joins with stages (`ast::SubqueryJoin`). `x IN
/// (subquery)`: a stage holding the subquery's distinct values; a row passes IN exactly when its
/// `x` equals one of them (NULLs never do), and joins with exactly that one. A correlated
/// subquery (`ast::Correlated`): EXISTS the same way on its outer column, a scalar aggregate a
/// stage grouped by the inner column. The stages' leaves are invisible to the query's names.
pub(super) fn semi_join_leaves(semi: Vec<SubqueryJoin>, catalog: &dyn Catalog, scope: &mut Scope) -> Result<Vec<Expr>> {
    let mut preds = Vec::new();
    for s in semi {
        // (the column the stage's first column must equal, the stage's query, its kind): an IN
        // subquery joins like an EXISTS on its expression
        let (x, tree, kind) = match s {
            SubqueryJoin::In(s) => (Some(bind_columns(s.expr, scope, catalog, false)?), s.tree, CorrelatedKind::Exists),
            SubqueryJoin::Correlated(c) => {
                let Some((reading, outer)) = correlated_reading(&c, catalog, scope)? else {
                    return Err(Error::Unsupported(
                        "correlated subqueries other than EXISTS or a comparison with a SUM/AVG/MIN/MAX subquery, \
                         correlated by one equality of columns"
                            .into(),
                    ));
                };
                (outer, reading.tree.clone(), c.kind)
            }
        };
        let distinct = kind == CorrelatedKind::Exists;
        let Some(stage) = catalog.stage(&StageQuery { tree, distinct })? else {
            return Err(Error::Unsupported("subqueries".into()));
        };
        let leaf = scope.leaves.len();
        let key = |stage: &ResolvedTable, i: usize| Expr::Bound { leaf, column: stage.columns[i].name.clone() };
        match (&kind, x, stage.columns.len()) {
            (CorrelatedKind::Exists, Some(x), 1) => preds.push(eq(x, key(&stage, 0))),
            (CorrelatedKind::Scalar { x: compared, op }, outer, n) if n == 1 + usize::from(outer.is_some()) => {
                let compared = bind_columns(compared.clone(), scope, catalog, false)?;
                if let Some(outer) = outer {
                    preds.push(eq(outer, key(&stage, 0)));
                }
                preds.push(Expr::Compare { op: *op, left: Box::new(compared), right: Box::new(key(&stage, n - 1)) });
            }
            (CorrelatedKind::Exists, ..) => return bind_error("an IN subquery must return one column".into()),
            _ => return bind_error("a scalar subquery must return one column".into()),
        }
        if !scope.upstream.contains(&stage.id) {
            scope.upstream.push(stage.id.clone());
        }
        scope.leaves.push(Leaf { alias: format!("in_subquery_{leaf}"), table: stage.id, columns: stage.columns });
        scope.visible.push(false);
    }
    Ok(preds)
}

/// The reading of a correlated subquery that holds, with its outer column bound: the one whose
/// inner column and other columns are the subquery's tables' own and whose outer column is not
/// (SQL resolves a name in the innermost scope first) but is the outer query's. None when no
/// reading holds (the subquery is correlated otherwise). The reading of an uncorrelated scalar
/// (no outer column) holds when every column it names is the subquery's own.
fn correlated_reading<'a>(
    c: &'a Correlated,
    catalog: &dyn Catalog,
    scope: &Scope,
) -> Result<Option<(&'a CorrelatedCandidate, Option<Expr>)>> {
    let mut tables: Vec<(String, Vec<String>)> = Vec::new();
    for (name, alias) in &c.inner_tables {
        let Some(t) = catalog.table(name)? else {
            return Ok(None);
        };
        let label = alias.clone().unwrap_or_else(|| name.name.clone());
        tables.push((label, t.columns.into_iter().map(|c| c.name).collect()));
    }
    let has = |cols: &[String], col: &str| cols.iter().any(|c| c.eq_ignore_ascii_case(col));
    let inside = |parts: &[String]| match parts {
        [col] => tables.iter().any(|(_, cols)| has(cols, col)),
        [rel, col] => tables.iter().any(|(label, cols)| label.eq_ignore_ascii_case(rel) && has(cols, col)),
        _ => false,
    };
    for reading in &c.candidates {
        if !reading.rest_columns.iter().all(|p| inside(p)) {
            continue;
        }
        if reading.outer.is_empty() {
            return Ok(Some((reading, None)));
        }
        if !inside(&reading.inner) || inside(&reading.outer) {
            continue;
        }
        if let Ok(outer) = bind_columns(Expr::Column(reading.outer.clone()), scope, catalog, false) {
            return Ok(Some((reading, Some(outer))));
        }
    }
    Ok(None)
}
