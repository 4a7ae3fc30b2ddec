//! The relations of a FROM clause as the query sees them (`Scope`), and the binding of names
//! and functions against them.

use crate::ast::{AggCall, CompareOp, Expr, TableName};
use crate::error::{Error, Result};
use crate::front::aggregates::{aggregate_func, GROUPING};
use crate::ir::{Leaf, SourceView, TableId};

use super::catalog::{Catalog, ResolvedTable};

#[derive(Default)]
pub(super) struct Scope {
    pub(super) leaves: Vec<Leaf>,
    /// Per leaf: whether the query sees it by its alias (false for the tables inside a
    /// flattened subquery, which the query sees through the subquery's columns only).
    pub(super) visible: Vec<bool>,
    /// USING columns: (column name, the leaf whose column an unqualified reference means).
    pub(super) using: Vec<(String, usize)>,
    /// Columns hidden from `*` because USING merged them into a left-hand column.
    pub(super) star_hidden: Vec<(usize, String)>,
    /// Flattened subqueries in FROM: their aliases and named columns, bound to the leaves.
    pub(super) derived: Vec<Derived>,
    /// The FROM clause's relations in order (for `*`).
    pub(super) relations: Vec<Relation>,
    /// The flattened subqueries' predicates, bound.
    pub(super) bound_predicates: Vec<Expr>,
    /// DuckDB views expanded into their definitions (outermost first, each once).
    pub(super) views: Vec<SourceView>,
    /// How many subqueries (and views) this scope is nested in.
    pub(super) depth: usize,
    /// Maintained views read as leaves (each once).
    pub(super) upstream: Vec<TableId>,
}

/// A subquery in FROM flattened into the join: what its columns stand for.
pub(super) struct Derived {
    pub(super) alias: String,
    /// (column name, expression over the leaves); None names a column the query cannot name.
    pub(super) columns: Vec<(Option<String>, Expr)>,
}

#[derive(Clone, Copy)]
pub(super) enum Relation {
    Leaf(usize),
    Derived(usize),
}

impl Scope {
    /// The columns a `*` (or `alias.*`) stands for, in order: the relation each comes from, its
    /// name (None for a subquery's column the query cannot name) and its expression. An
    /// unqualified `*` leaves out the columns a USING join hides.
    pub(super) fn star_columns(&self, relation: Option<&str>) -> Result<Vec<(Relation, Option<String>, Expr)>> {
        let relations = match relation {
            None => self.relations.clone(),
            Some(r) => match (self.derived.iter().position(|d| eq_ci(&d.alias, r)), self.visible_leaf(r)) {
                (Some(d), _) => vec![Relation::Derived(d)],
                (None, Some(i)) => vec![Relation::Leaf(i)],
                (None, None) => return bind_error(format!("no table named '{r}' in the FROM clause")),
            },
        };
        let mut out = Vec::new();
        for rel in relations {
            match rel {
                Relation::Leaf(i) => {
                    for c in &self.leaves[i].columns {
                        if relation.is_none() && self.star_hidden.iter().any(|(l, n)| *l == i && n == &c.name) {
                            continue;
                        }
                        out.push((rel, Some(c.name.clone()), Expr::Bound { leaf: i, column: c.name.clone() }));
                    }
                }
                Relation::Derived(d) => {
                    for (name, e) in &self.derived[d].columns {
                        out.push((rel, name.clone(), e.clone()));
                    }
                }
            }
        }
        Ok(out)
    }

    pub(super) fn alias_taken(&self, alias: &str) -> bool {
        self.leaves.iter().zip(&self.visible).any(|(l, v)| *v && eq_ci(&l.alias, alias))
            || self.derived.iter().any(|d| eq_ci(&d.alias, alias))
    }

    pub(super) fn visible_leaf(&self, alias: &str) -> Option<usize> {
        (0..self.leaves.len()).find(|&i| self.visible[i] && eq_ci(&self.leaves[i].alias, alias))
    }
}

pub(super) fn eq_ci(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

pub(super) fn bind_error<T>(msg: String) -> Result<T> {
    Err(Error::Bind(msg))
}

pub(super) fn eq(left: Expr, right: Expr) -> Expr {
    Expr::Compare { op: CompareOp::Eq, left: Box::new(left), right: Box::new(right) }
}

/// Fails when another relation of the join already has the name a subquery takes.
pub(super) fn relation_alias_free(scope: &Scope, alias: &str) -> Result<()> {
    if scope.alias_taken(alias) {
        return bind_error(format!(
            "the name '{alias}' is used for two relations of the join; give them different aliases"
        ));
    }
    Ok(())
}

/// A flattened subquery as a relation of the join (after the ones before it, for `*`).
pub(super) fn add_derived(scope: &mut Scope, derived: Derived) {
    scope.relations.push(Relation::Derived(scope.derived.len()));
    scope.derived.push(derived);
}

/// A table (or a maintained view) as a leaf of the join, seen by its alias.
pub(super) fn add_leaf(t: ResolvedTable, name: TableName, alias: Option<String>, scope: &mut Scope) -> Result<()> {
    let alias = alias.unwrap_or_else(|| name.name.clone());
    if scope.alias_taken(&alias) {
        return bind_error(format!(
            "the name '{alias}' is used for two tables of the join; give them different aliases"
        ));
    }
    scope.relations.push(Relation::Leaf(scope.leaves.len()));
    scope.leaves.push(Leaf { alias, table: t.id, columns: t.columns });
    scope.visible.push(true);
    Ok(())
}

pub(super) fn display_name(n: &TableName) -> String {
    [n.catalog.as_deref(), n.schema.as_deref(), Some(n.name.as_str())]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(".")
}

pub(super) fn resolve_column(parts: &[String], scope: &Scope) -> Result<Option<Expr>> {
    let column_of = |leaf: usize, name: &str| {
        scope.leaves[leaf]
            .columns
            .iter()
            .find(|c| eq_ci(&c.name, name))
            .map(|c| Expr::Bound { leaf, column: c.name.clone() })
    };
    let derived_column = |d: &Derived, name: &str| -> Result<Option<Expr>> {
        let hits: Vec<&Expr> =
            d.columns.iter().filter(|(n, _)| n.as_deref().is_some_and(|n| eq_ci(n, name))).map(|(_, e)| e).collect();
        match hits.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some((*one).clone())),
            _ => bind_error(format!("column '{name}' of the subquery '{}' is ambiguous", d.alias)),
        }
    };
    match parts {
        [name] => {
            if let Some((_, leaf)) = scope.using.iter().find(|(c, _)| eq_ci(c, name)) {
                return Ok(column_of(*leaf, name));
            }
            let mut hits: Vec<Expr> =
                (0..scope.leaves.len()).filter(|&i| scope.visible[i]).filter_map(|i| column_of(i, name)).collect();
            for d in &scope.derived {
                hits.extend(derived_column(d, name)?);
            }
            match hits.len() {
                0 => Ok(None),
                1 => Ok(hits.into_iter().next()),
                _ => bind_error(format!("column '{name}' is ambiguous; qualify it with a table alias")),
            }
        }
        [table, name] => {
            if let Some(d) = scope.derived.iter().find(|d| eq_ci(&d.alias, table)) {
                return match derived_column(d, name)? {
                    Some(e) => Ok(Some(e)),
                    None => bind_error(format!("subquery '{table}' has no column '{name}'")),
                };
            }
            let Some(leaf) = scope.visible_leaf(table) else {
                return bind_error(format!("no table named '{table}' in the FROM clause"));
            };
            match column_of(leaf, name) {
                Some(e) => Ok(Some(e)),
                None => bind_error(format!("table '{table}' has no column '{name}'")),
            }
        }
        [qualifier, table, name] => {
            // schema.table.column or catalog.table.column, for a leaf without an alias
            let leaf = (0..scope.leaves.len()).find(|&i| {
                let l = &scope.leaves[i];
                scope.visible[i]
                    && eq_ci(&l.alias, table)
                    && (eq_ci(&l.table.schema, qualifier) || eq_ci(&l.table.catalog, qualifier))
            });
            match leaf.and_then(|leaf| column_of(leaf, name)) {
                Some(e) => Ok(Some(e)),
                None => bind_error(format!("no column {qualifier}.{table}.{name} in the FROM clause")),
            }
        }
        _ => Err(Error::Unsupported(format!("the column reference {}", parts.join(".")))),
    }
}

/// Binds every column reference of `e` and checks its functions.
pub(super) fn bind_columns(e: Expr, scope: &Scope, catalog: &dyn Catalog, allow_aggregates: bool) -> Result<Expr> {
    e.rewrite(&mut |node| match node {
        Expr::Column(parts) => match resolve_column(&parts, scope)? {
            Some(b) => Ok(b),
            // DuckDB reads a bare name that is no column, such as current_date, as a call of the
            // function of that name.
            None if parts.len() == 1 && catalog.function(special_function(&parts[0]))?.is_some() => {
                let name = special_function(&parts[0]).to_string();
                if check_function(&name, false, allow_aggregates, catalog)? && aggregate_func(&name).is_none() {
                    return Ok(Expr::Aggregate(Box::new(AggCall::plain(name, vec![]))));
                }
                Ok(Expr::Function { name, args: vec![], is_operator: false })
            }
            None => bind_error(format!("column '{}' does not exist in the tables of the query", parts.join("."))),
        },
        Expr::Star { .. } => Err(Error::Unsupported("* inside an expression".into())),
        Expr::Function { name, args, is_operator } => {
            // An aggregate without a delta rule becomes an `Aggregate` call (recomputed per group).
            if check_function(&name, is_operator, allow_aggregates, catalog)? && aggregate_func(&name).is_none() {
                return Ok(Expr::Aggregate(Box::new(AggCall::plain(name, args))));
            }
            Ok(Expr::Function { name, args, is_operator })
        }
        Expr::Aggregate(call) => {
            if !check_function(&call.name, false, allow_aggregates, catalog)? {
                return Err(Error::Unsupported(format!(
                    "DISTINCT, ORDER BY or FILTER on {}(), which is not an aggregate",
                    call.name
                )));
            }
            Ok(Expr::Aggregate(call))
        }
        other => Ok(other),
    })
}

/// The function a bare SQL keyword such as `current_timestamp` stands for.
fn special_function(name: &str) -> &str {
    match name.to_ascii_lowercase().as_str() {
        "current_timestamp" => "get_current_timestamp",
        "current_time" => "get_current_time",
        "localtime" => "current_localtime",
        "localtimestamp" => "current_localtimestamp",
        _ => name,
    }
}

/// Checks a call of `name`: Ok(true) for an aggregate (allowed only where aggregates are),
/// Ok(false) for a scalar function or an operator; refuses what is not deterministic or depends
/// on the session.
fn check_function(name: &str, is_operator: bool, allow_aggregates: bool, catalog: &dyn Catalog) -> Result<bool> {
    if is_operator {
        return Ok(false);
    }
    let outside = || Err(Error::Unsupported(format!("aggregate {}() outside the select list", name.to_uppercase())));
    if aggregate_func(name).is_some() {
        return if allow_aggregates { Ok(true) } else { outside() };
    }
    if name == GROUPING {
        // Not an aggregate, but like one it reads the groups: where aggregates are.
        return if allow_aggregates { Ok(false) } else { outside() };
    }
    crate::front::session::check_function(name)?;
    if crate::front::session::CLOCK_FUNCTIONS.iter().any(|f| f.eq_ignore_ascii_case(name)) {
        return Err(Error::Refused(format!("the non-deterministic function {name}()")));
    }
    match catalog.function(name)? {
        None => bind_error(format!("function '{name}' does not exist")),
        Some(f) if !f.deterministic => Err(Error::Refused(format!("the non-deterministic function {name}()"))),
        Some(f) if f.aggregate && !allow_aggregates => outside(),
        Some(f) => Ok(f.aggregate),
    }
}

pub(super) fn expand_star(scope: &Scope, relation: Option<&str>) -> Result<Vec<(Expr, Option<String>)>> {
    Ok(scope
        .star_columns(relation)?
        .into_iter()
        .map(|(rel, name, e)| (e, if matches!(rel, Relation::Derived(_)) { name } else { None }))
        .collect())
}
