//! Stage 2: `ast::Select` + catalog -> `ir::ViewQuery`.
//!
//! Flattens the inner joins into leaves and predicates, resolves every column to a leaf,
//! expands `*`, checks functions (aggregates must be SUM/COUNT/AVG, scalars deterministic) and
//! rewrites the select list over the stored columns of the result.

use std::collections::HashMap;

use crate::ast::{
    AggCall, CompareOp, Constant, Correlated, CorrelatedCandidate, CorrelatedKind, Expr, FromItem, OrderItem,
    Presentation, Select, SelectItem, SubqueryJoin, TableName, TypeName, UnionBranch,
};
use crate::error::{Error, Result};
use crate::front::aggregates::{aggregate_func, contains_aggregate, GROUPING, PRE_AGGREGATED};
use crate::ir::{
    stored, AggFunc, Aggregate, ColumnDef, GroupingSets, Leaf, OrderKey, Shape, SourceView, TableId, ViewQuery,
};

/// Joins above this many leaves are refused: the term count is 2^N - 1.
pub const MAX_LEAVES: usize = 16;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RelationKind {
    Table,
    View,
}

#[derive(Clone, Debug)]
pub struct ResolvedTable {
    pub id: TableId,
    pub kind: RelationKind,
    pub columns: Vec<ColumnDef>,
}

#[derive(Clone, Copy, Debug)]
pub struct FunctionInfo {
    pub aggregate: bool,
    /// Some overload is CONSISTENT: the name alone refuses only a function none of whose
    /// overloads is (which overload a call binds is checked on DuckDB's bound plan,
    /// `strategy::check_bound_calls`, where the view is created).
    pub deterministic: bool,
    /// Every overload is one of DuckDB's own (not a macro or function a user created, which
    /// may be replaced): what is known about it holds for the database's lifetime.
    pub builtin: bool,
}

/// A DuckDB view's definition, as the binder expands it into a subquery in FROM.
#[derive(Clone, Debug)]
pub enum ViewDefinition {
    /// A view openivm maintains, with its columns: read as a leaf of the join, whose changes
    /// are those of the rows the view shows (see `capture`), so that chained views stay exact
    /// whatever its presentation (HAVING, ORDER BY/LIMIT).
    Maintained { columns: Vec<ColumnDef> },
    /// Its query (table names resolved as DuckDB resolves them inside the view), the text of its
    /// definition (so that a replacement is noticed), its column names and its query's parse
    /// tree (a stage's query where the view cannot be flattened).
    Query { select: Select, sql: String, columns: Vec<String>, tree: Option<String> },
}

/// A query a maintained stage stores: DuckDB's parse tree of a subquery (JSON), or of an IN
/// subquery whose distinct values are stored (`distinct`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StageQuery {
    pub tree: String,
    pub distinct: bool,
}

/// Views expanded inside views deeper than this are refused (DuckDB itself refuses cycles).
const MAX_VIEW_DEPTH: usize = 32;

/// What the binder needs to know about the database.
pub trait Catalog {
    /// Resolves a table name as DuckDB would on the extension's connection; None if not found.
    fn table(&self, name: &TableName) -> Result<Option<ResolvedTable>>;
    /// Looks up a function by name; None if DuckDB has no function of that name.
    fn function(&self, name: &str) -> Result<Option<FunctionInfo>>;
    /// DuckDB's types of expressions over the leaves of a join (columns bound to `leaves`), in
    /// order: row-level expressions, or only aggregates. None where the catalog cannot tell.
    fn expression_types(&self, leaves: &[Leaf], exprs: &[Expr]) -> Result<Vec<Option<String>>> {
        let _ = leaves;
        Ok(vec![None; exprs.len()])
    }
    /// The hidden maintained view (a stage) that stores `query`, made if the catalog may make
    /// one; None where there is none (the subquery then has no incremental rule).
    fn stage(&self, query: &StageQuery) -> Result<Option<ResolvedTable>> {
        let _ = query;
        Ok(None)
    }
    /// The definition of the DuckDB view `id`; None where the catalog cannot expand views.
    fn view(&self, id: &TableId) -> Result<Option<ViewDefinition>> {
        let _ = id;
        Ok(None)
    }
    /// The column types of a UNION ALL of branches of these column types, as DuckDB unifies
    /// them (a catalog that cannot ask DuckDB accepts only branches of equal types).
    fn union_types(&self, branches: &[Vec<String>]) -> Result<Vec<String>> {
        match branches.split_first() {
            Some((first, rest)) if rest.iter().all(|b| b == first) => Ok(first.clone()),
            _ => Err(Error::Unsupported("UNION ALL of branches of different column types".into())),
        }
    }
}

#[derive(Default)]
struct Scope {
    leaves: Vec<Leaf>,
    /// Per leaf: whether the query sees it by its alias (false for the tables inside a
    /// flattened subquery, which the query sees through the subquery's columns only).
    visible: Vec<bool>,
    /// USING columns: (column name, the leaf whose column an unqualified reference means).
    using: Vec<(String, usize)>,
    /// Columns hidden from `*` because USING merged them into a left-hand column.
    star_hidden: Vec<(usize, String)>,
    /// Flattened subqueries in FROM: their aliases and named columns, bound to the leaves.
    derived: Vec<Derived>,
    /// The FROM clause's relations in order (for `*`).
    relations: Vec<Relation>,
    /// The flattened subqueries' predicates, bound.
    bound_predicates: Vec<Expr>,
    /// DuckDB views expanded into their definitions (outermost first, each once).
    views: Vec<SourceView>,
    /// How many subqueries (and views) this scope is nested in.
    depth: usize,
    /// Maintained views read as leaves (each once).
    upstream: Vec<TableId>,
}

/// A subquery in FROM flattened into the join: what its columns stand for.
struct Derived {
    alias: String,
    /// (column name, expression over the leaves); None names a column the query cannot name.
    columns: Vec<(Option<String>, Expr)>,
}

#[derive(Clone, Copy)]
enum Relation {
    Leaf(usize),
    Derived(usize),
}

impl Scope {
    /// The columns a `*` (or `alias.*`) stands for, in order: the relation each comes from, its
    /// name (None for a subquery's column the query cannot name) and its expression. An
    /// unqualified `*` leaves out the columns a USING join hides.
    fn star_columns(&self, relation: Option<&str>) -> Result<Vec<(Relation, Option<String>, Expr)>> {
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

    fn alias_taken(&self, alias: &str) -> bool {
        self.leaves.iter().zip(&self.visible).any(|(l, v)| *v && eq_ci(&l.alias, alias))
            || self.derived.iter().any(|d| eq_ci(&d.alias, alias))
    }

    fn visible_leaf(&self, alias: &str) -> Option<usize> {
        (0..self.leaves.len()).find(|&i| self.visible[i] && eq_ci(&self.leaves[i].alias, alias))
    }
}

fn eq_ci(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

fn bind_error<T>(msg: String) -> Result<T> {
    Err(Error::Bind(msg))
}

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

/// The first UNION ALL of a FROM clause that is bound with the query: not inside a subquery
/// that becomes a stage (whose own query distributes it).
fn first_union(from: &FromItem) -> Option<&FromItem> {
    match from {
        FromItem::Union { .. } => Some(from),
        FromItem::Subquery { select, .. } if flattens(select) => first_union(&select.from),
        FromItem::Join { left, right, .. } => first_union(left).or_else(|| first_union(right)),
        _ => None,
    }
}

/// Puts `with` where `first_union` finds the union.
fn replace_first_union(from: &mut FromItem, with: FromItem) {
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

/// A UNION ALL branch as the query reads it: all its columns, through a subquery (flattened, or
/// a stage when the branch groups).
fn branch_subquery(branch: UnionBranch) -> Select {
    let from = FromItem::Subquery {
        select: Box::new(branch.select),
        alias: "openivm_branch".into(),
        columns: vec![],
        tree: Some(branch.tree),
    };
    Select::plain(vec![SelectItem { expr: Expr::Star { relation: None }, alias: None }], from)
}

/// A union's columns (name, if the query can name it, and DuckDB type) and each branch's own
/// column types.
type UnionColumns = (Vec<(Option<String>, String)>, Vec<Vec<String>>);

/// The union's columns (names: the aliases written after it, else the first branch's; types:
/// DuckDB's unification of the branches') and each branch's own column types.
fn union_columns(branches: &[UnionBranch], aliases: &[String], catalog: &dyn Catalog) -> Result<UnionColumns> {
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
fn union_of(parts: Vec<ViewQuery>) -> Result<ViewQuery> {
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

/// An aggregate call of a select item (`SUM(x)`, `count(*)`), not an expression over one.
fn is_aggregate_call(e: &Expr) -> bool {
    matches!(e, Expr::Function { name, is_operator: false, .. } if aggregate_func(name).is_some())
        || matches!(e, Expr::Aggregate(_))
}

/// Asks DuckDB for the types of every expression of the query, then refuses what depends on
/// the session's TimeZone (`session::check_time_zone`) and records the types of the aggregates'
/// arguments (they decide how each sum is kept exact). Expressions over aggregates are typed
/// with each aggregate replaced by a NULL of the aggregate's type.
fn type_and_check(
    leaves: &[Leaf],
    predicates: &[Expr],
    shape: &mut Shape,
    items: &[Expr],
    catalog: &dyn Catalog,
) -> Result<()> {
    // GROUPING() reads the grouping set, not the leaves: typed as the BIGINT it gives.
    let items: Vec<Expr> = items.iter().map(|e| typed_grouping(e.clone())).collect();
    let mut roots: Vec<Expr> = predicates.to_vec();
    match &*shape {
        Shape::Grouped { keys, aggregates, .. } => {
            roots.extend(keys.iter().cloned());
            roots.extend(aggregates.iter().filter_map(|a| a.arg.clone()));
            roots.extend(aggregates.iter().filter_map(|a| a.call.as_ref()).flat_map(|c| c.inputs()).cloned());
        }
        Shape::Bag { outputs, .. } => roots.extend(outputs.iter().cloned()),
    }
    if matches!(shape, Shape::Grouped { .. }) {
        let over_aggregates: Vec<&Expr> =
            items.iter().filter(|e| contains_aggregate(e) && !is_aggregate_call(e)).collect();
        let mut calls: Vec<Expr> = Vec::new();
        for e in &over_aggregates {
            e.visit(&mut |x| {
                if is_aggregate_call(x) && !calls.contains(x) {
                    calls.push(x.clone());
                }
            });
        }
        let call_types = catalog.expression_types(leaves, &calls)?;
        for e in over_aggregates {
            let typed = e.clone().rewrite(&mut |x| -> Result<Expr> {
                if !is_aggregate_call(&x) {
                    return Ok(x);
                }
                let null = Expr::Constant(crate::ast::Constant::Null);
                Ok(match calls.iter().position(|c| c == &x).and_then(|i| call_types.get(i).cloned().flatten()) {
                    Some(ty) => Expr::Cast {
                        expr: Box::new(null),
                        ty: crate::ast::TypeName { id: ty, decimal: None },
                        try_cast: false,
                    },
                    None => null,
                })
            })?;
            roots.push(typed);
        }
        roots.extend(items.iter().filter(|e| !contains_aggregate(e)).cloned());
    }
    // Each distinct node once, found again by its printed form (comparing every node with every
    // other was quadratic: a write's `k IN (<thousands of keys>)` spent most of its time there).
    let mut nodes: Vec<Expr> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for r in &roots {
        r.visit(&mut |x| {
            index.entry(format!("{x:?}")).or_insert_with(|| {
                nodes.push(x.clone());
                nodes.len() - 1
            });
        });
    }
    let types = catalog.expression_types(leaves, &nodes)?;
    let type_of = |e: &Expr| index.get(&format!("{e:?}")).and_then(|&i| types.get(i)?.as_deref());
    for r in &roots {
        crate::front::session::check_time_zone(r, &type_of)?;
    }
    if let Shape::Grouped { aggregates, .. } = shape {
        for a in aggregates.iter_mut() {
            a.arg_type = a.arg.as_ref().and_then(&type_of).map(str::to_string);
            if let Some(call) = &a.call {
                crate::front::session::check_recomputed_aggregate(&call.name, &call.inputs(), &type_of)?;
                exact_variance(a, &type_of);
            }
        }
    }
    Ok(())
}

/// A plain VAR_*/STDDEV_* call over an exact input (`ir::variance_input`) gets the incremental
/// rule (`AggFunc::Variance`); any other stays recomputed per group.
fn exact_variance<'t>(a: &mut Aggregate, type_of: &dyn Fn(&Expr) -> Option<&'t str>) {
    let Some(call) = &a.call else { return };
    let Some((population, root)) = crate::ir::variance_kind(&call.name) else { return };
    let plain = !call.distinct && call.order_by.is_empty() && call.filter.is_none() && call.args.len() == 1;
    if !plain || crate::ir::variance_input(type_of(&call.args[0])).is_none() {
        return;
    }
    a.arg_type = type_of(&call.args[0]).map(str::to_string);
    a.arg = Some(call.args[0].clone());
    a.func = AggFunc::Variance { population, root };
    a.call = None;
}

fn flatten(item: FromItem, catalog: &dyn Catalog, scope: &mut Scope, preds: &mut Vec<Expr>) -> Result<()> {
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

/// Fails when another relation of the join already has the name a subquery takes.
fn relation_alias_free(scope: &Scope, alias: &str) -> Result<()> {
    if scope.alias_taken(alias) {
        return bind_error(format!(
            "the name '{alias}' is used for two relations of the join; give them different aliases"
        ));
    }
    Ok(())
}

/// A flattened subquery as a relation of the join (after the ones before it, for `*`).
fn add_derived(scope: &mut Scope, derived: Derived) {
    scope.relations.push(Relation::Derived(scope.derived.len()));
    scope.derived.push(derived);
}

/// A table (or a maintained view) as a leaf of the join, seen by its alias.
fn add_leaf(t: ResolvedTable, name: TableName, alias: Option<String>, scope: &mut Scope) -> Result<()> {
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

fn display_name(n: &TableName) -> String {
    [n.catalog.as_deref(), n.schema.as_deref(), Some(n.name.as_str())]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(".")
}

fn resolve_column(parts: &[String], scope: &Scope) -> Result<Option<Expr>> {
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
fn bind_columns(e: Expr, scope: &Scope, catalog: &dyn Catalog, allow_aggregates: bool) -> Result<Expr> {
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

fn expand_star(scope: &Scope, relation: Option<&str>) -> Result<Vec<(Expr, Option<String>)>> {
    Ok(scope
        .star_columns(relation)?
        .into_iter()
        .map(|(rel, name, e)| (e, if matches!(rel, Relation::Derived(_)) { name } else { None }))
        .collect())
}

/// Flattens a select-project-join subquery in FROM into the outer join: its tables become
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
            flatten(FromItem::Subquery { select: Box::new(select), alias, columns, tree }, catalog, scope, preds)
        }
    }
}

/// leaves (seen by the outer query only through the subquery's columns), its conditions
/// predicates of the outer query, its select list the columns of the relation `alias`. Inner
/// joins over bags commute with selections and projections, so the flattened join has the
/// same rows. A subquery that groups, aggregates, deduplicates, orders or limits is not
/// flattened (`Unsupported`).
/// Whether a subquery in FROM can be flattened into the join (it selects, projects and joins).
fn flattens(select: &Select) -> bool {
    select.group_by.is_empty()
        && !select.group_by_all
        && select.presentation == Presentation::default()
        && select.semi_joins.is_empty()
        // INTERSECT / EXCEPT do not distribute over a join: such a subquery is a stage
        && !matches!(select.from, FromItem::Union { compared: Some(_), .. })
}

/// WHERE conjuncts with subqueries as inner joins with stages (`ast::SubqueryJoin`). `x IN
/// (subquery)`: a stage holding the subquery's distinct values; a row passes IN exactly when its
/// `x` equals one of them (NULLs never do), and joins with exactly that one. A correlated
/// subquery (`ast::Correlated`): EXISTS the same way on its outer column, a scalar aggregate a
/// stage grouped by the inner column. The stages' leaves are invisible to the query's names.
fn semi_join_leaves(semi: Vec<SubqueryJoin>, catalog: &dyn Catalog, scope: &mut Scope) -> Result<Vec<Expr>> {
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

fn eq(left: Expr, right: Expr) -> Expr {
    Expr::Compare { op: CompareOp::Eq, left: Box::new(left), right: Box::new(right) }
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

fn flatten_subquery(
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
fn unique_aliases(leaves: &mut [Leaf], visible: &[bool]) {
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

/// A GROUP BY item: a position (`GROUP BY 1`), a column, or a select-list alias.
fn bind_group_key(g: Expr, items: &[(Expr, Option<String>)], scope: &Scope, catalog: &dyn Catalog) -> Result<Expr> {
    if let Expr::Constant(crate::ast::Constant::Integer(n)) = g {
        return match usize::try_from(n).ok().and_then(|n| n.checked_sub(1)).and_then(|i| items.get(i)) {
            Some((e, _)) if !contains_aggregate(e) => Ok(e.clone()),
            Some(_) => Err(Error::Unsupported("GROUP BY a position that holds an aggregate".into())),
            None => bind_error(format!("GROUP BY position {n} is not in the select list")),
        };
    }
    if let Expr::Column(parts) = &g {
        if parts.len() == 1 && resolve_column(parts, scope)?.is_none() {
            if let Some((e, _)) = items.iter().find(|(_, a)| a.as_deref().is_some_and(|a| eq_ci(a, &parts[0]))) {
                return Ok(e.clone());
            }
        }
    }
    let bound = bind_columns(g, scope, catalog, false)?;
    Ok(bound)
}

/// Rewrites a select item of a grouped query over the stored columns: group keys become
/// `openivm_g<i>`, aggregates `openivm_a<j>` (recorded in `aggregates`).
fn over_stored(e: Expr, keys: &[Expr], sets: Option<&GroupingSets>, aggregates: &mut Vec<Aggregate>) -> Result<Expr> {
    if let Some(i) = keys.iter().position(|k| k == &e) {
        return Ok(Expr::column(&stored::group(i)));
    }
    match e {
        Expr::Function { name, args, is_operator: false } if name == GROUPING => {
            let positions = args
                .iter()
                .map(|a| keys.iter().position(|k| k == a))
                .collect::<Option<Vec<usize>>>()
                .ok_or_else(|| Error::Bind("the arguments of GROUPING() must be GROUP BY keys".into()))?;
            Ok(grouping_over_stored(sets, &positions))
        }
        Expr::Function { name, mut args, is_operator: false } if aggregate_func(&name).is_some() => {
            let func = aggregate_func(&name).expect("checked");
            if args.iter().any(contains_aggregate) {
                return Err(Error::Unsupported("nested aggregates".into()));
            }
            let arg = match (func, args.len()) {
                (AggFunc::CountStar, 0) => None,
                (AggFunc::Count, 0) => None,
                (_, 1) => Some(args.remove(0)),
                _ => {
                    return Err(Error::Unsupported(format!("{}() with {} arguments", name.to_uppercase(), args.len())))
                }
            };
            let func = if func == AggFunc::Count && arg.is_none() { AggFunc::CountStar } else { func };
            Ok(Expr::column(&stored::agg(add_aggregate(
                aggregates,
                Aggregate { func, arg, arg_type: None, call: None },
            ))))
        }
        Expr::Aggregate(call) => {
            if call.inputs().into_iter().any(contains_aggregate) {
                return Err(Error::Unsupported("nested aggregates".into()));
            }
            // MIN/MAX(DISTINCT x) is MIN/MAX(x), which has a delta rule.
            let extremum = matches!(aggregate_func(&call.name), Some(AggFunc::Min | AggFunc::Max));
            if extremum && call.order_by.is_empty() && call.filter.is_none() && call.args.len() == 1 {
                let plain = Expr::Function { name: call.name, args: call.args, is_operator: false };
                return over_stored(plain, keys, sets, aggregates);
            }
            let agg = Aggregate { func: AggFunc::Recomputed, arg: None, arg_type: None, call: Some(*call) };
            Ok(Expr::column(&stored::agg(add_aggregate(aggregates, agg))))
        }
        Expr::Bound { leaf: _, column } => bind_error(format!(
            "column '{column}' must appear in the GROUP BY clause or be used in an aggregate function"
        )),
        other => other.map_children(&mut |c| over_stored(c, keys, sets, aggregates)),
    }
}

/// `GROUPING(k_1, ...)` over the stored result: a constant per grouping set, chosen by the
/// stored set id (0 without grouping sets: every key is in the one set).
fn grouping_over_stored(sets: Option<&GroupingSets>, positions: &[usize]) -> Expr {
    let Some(g) = sets else {
        return Expr::Constant(Constant::Integer(0));
    };
    let checks = g
        .sets
        .iter()
        .map(|set| {
            let id = g.id(set);
            let is_set = eq(Expr::column(stored::GROUPING_SET), Expr::Constant(Constant::Integer(id.into())));
            (is_set, Expr::Constant(Constant::Integer(g.grouping(id, positions).into())))
        })
        .collect();
    Expr::Case { checks, otherwise: Box::new(Expr::Constant(Constant::Null)) }
}

/// `e` with each GROUPING() call replaced by a BIGINT NULL, for asking DuckDB its types.
fn typed_grouping(e: Expr) -> Expr {
    e.rewrite(&mut |x| -> std::result::Result<Expr, std::convert::Infallible> {
        Ok(match x {
            Expr::Function { name, is_operator: false, .. } if name == GROUPING => Expr::Cast {
                expr: Box::new(Expr::Constant(Constant::Null)),
                ty: TypeName { id: "BIGINT".into(), decimal: None },
                try_cast: false,
            },
            other => other,
        })
    })
    .unwrap_or_else(|never| match never {})
}

/// Whether `e` calls GROUPING().
fn calls_grouping(e: &Expr) -> bool {
    let mut found = false;
    e.visit(&mut |x| found |= matches!(x, Expr::Function { name, is_operator: false, .. } if name == GROUPING));
    found
}

/// The index of `agg` among the view's aggregates, added if it is new (equal calls share one).
fn add_aggregate(aggregates: &mut Vec<Aggregate>, agg: Aggregate) -> usize {
    match aggregates.iter().position(|a| a == &agg) {
        Some(j) => j,
        None => {
            aggregates.push(agg);
            aggregates.len() - 1
        }
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use crate::ast::{Constant, FromItem, SelectItem};
    use std::collections::HashMap;

    /// An in-memory catalog for the pure tests.
    pub struct TestCatalog {
        pub tables: HashMap<String, Vec<(&'static str, &'static str)>>,
    }

    impl TestCatalog {
        pub fn star() -> TestCatalog {
            let mut tables = HashMap::new();
            tables.insert(
                "fact".to_string(),
                vec![("id", "INTEGER"), ("pid", "INTEGER"), ("sid", "INTEGER"), ("amount", "INTEGER")],
            );
            tables.insert("product".to_string(), vec![("pid", "INTEGER"), ("name", "VARCHAR")]);
            tables.insert("store".to_string(), vec![("sid", "INTEGER"), ("city", "VARCHAR")]);
            TestCatalog { tables }
        }
    }

    impl Catalog for TestCatalog {
        fn table(&self, name: &TableName) -> Result<Option<ResolvedTable>> {
            Ok(self.tables.get(&name.name).map(|cols| ResolvedTable {
                id: TableId { catalog: "memory".into(), schema: "main".into(), name: name.name.clone() },
                kind: RelationKind::Table,
                columns: cols
                    .iter()
                    .map(|(n, t)| ColumnDef { name: n.to_string(), ty: t.to_string(), collation: None })
                    .collect(),
            }))
        }
        fn function(&self, name: &str) -> Result<Option<FunctionInfo>> {
            Ok(match name {
                "upper" | "lower" => Some(FunctionInfo { aggregate: false, deterministic: true, builtin: true }),
                "random" => Some(FunctionInfo { aggregate: false, deterministic: false, builtin: true }),
                "median" | "string_agg" | "stddev" | "var_pop" | "list" => {
                    Some(FunctionInfo { aggregate: true, deterministic: true, builtin: true })
                }
                _ => None,
            })
        }
    }

    pub fn table(name: &str, alias: &str) -> FromItem {
        FromItem::Table {
            name: TableName { catalog: None, schema: None, name: name.into() },
            alias: Some(alias.into()),
        }
    }

    pub fn col(a: &str, c: &str) -> Expr {
        Expr::Column(vec![a.into(), c.into()])
    }

    pub fn eq(l: Expr, r: Expr) -> Expr {
        Expr::Compare { op: CompareOp::Eq, left: Box::new(l), right: Box::new(r) }
    }

    pub fn join(l: FromItem, r: FromItem, on: Expr) -> FromItem {
        FromItem::Join { left: Box::new(l), right: Box::new(r), on: Some(on), using: vec![] }
    }

    fn func(name: &str, args: Vec<Expr>) -> Expr {
        Expr::Function { name: name.into(), args, is_operator: false }
    }

    pub fn star_select() -> Select {
        // SELECT p.name, SUM(f.amount) FROM fact f JOIN product p ON f.pid = p.pid
        //   JOIN store s ON f.sid = s.sid GROUP BY p.name
        Select {
            group_by: vec![col("p", "name")],
            ..Select::plain(
                vec![
                    SelectItem { expr: col("p", "name"), alias: None },
                    SelectItem { expr: func("sum", vec![col("f", "amount")]), alias: Some("total".into()) },
                ],
                join(
                    join(table("fact", "f"), table("product", "p"), eq(col("f", "pid"), col("p", "pid"))),
                    table("store", "s"),
                    eq(col("f", "sid"), col("s", "sid")),
                ),
            )
        }
    }

    #[test]
    fn binds_a_star_join() {
        let q = bind(star_select(), &TestCatalog::star()).unwrap();
        assert_eq!(q.leaves.iter().map(|l| l.alias.as_str()).collect::<Vec<_>>(), vec!["f", "p", "s"]);
        assert_eq!(q.predicates.len(), 2);
        assert_eq!(q.used_columns[0], vec!["pid", "sid", "amount"]);
        assert_eq!(q.used_columns[2], vec!["sid"]);
        match q.shape {
            Shape::Grouped { keys, aggregates, outputs, sets: None } => {
                assert_eq!(keys, vec![Expr::Bound { leaf: 1, column: "name".into() }]);
                assert_eq!(aggregates.len(), 1);
                assert_eq!(aggregates[0].func, AggFunc::Sum);
                assert_eq!(outputs, vec![Expr::column("openivm_g0"), Expr::column("openivm_a0")]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn refuses_what_it_cannot_maintain() {
        let cat = TestCatalog::star();
        let mut s = star_select();
        // an aggregate without a delta rule is kept whole, to be recomputed per group
        s.items.push(SelectItem { expr: func("median", vec![col("f", "amount")]), alias: None });
        let q = bind(s, &cat).unwrap();
        let Shape::Grouped { aggregates, outputs, .. } = &q.shape else { panic!() };
        assert_eq!(aggregates[1].func, AggFunc::Recomputed);
        assert_eq!(
            aggregates[1].call,
            Some(AggCall::plain("median".into(), vec![Expr::Bound { leaf: 0, column: "amount".into() }]))
        );
        assert_eq!(outputs[2], Expr::column("openivm_a1"));
        assert_eq!(q.recomputed_aggregates().len(), 1);
        // but not outside the select list, nor nested
        let mut s = star_select();
        s.where_clause = Some(eq(func("median", vec![col("f", "amount")]), Expr::Constant(Constant::Integer(1))));
        assert!(bind(s, &cat).unwrap_err().to_string().contains("MEDIAN() outside the select list"));
        let mut s = star_select();
        s.items.push(SelectItem { expr: func("median", vec![func("sum", vec![col("f", "amount")])]), alias: None });
        assert!(bind(s, &cat).unwrap_err().to_string().contains("nested aggregates"));
        // MIN(DISTINCT x) is MIN(x)
        let mut s = star_select();
        let distinct_min = AggCall { distinct: true, ..AggCall::plain("min".into(), vec![col("f", "amount")]) };
        s.items.push(SelectItem { expr: Expr::Aggregate(Box::new(distinct_min)), alias: None });
        let q = bind(s, &cat).unwrap();
        assert!(q.has_extrema() && q.recomputed_aggregates().is_empty());
        let mut s = star_select();
        s.where_clause = Some(eq(func("random", vec![]), Expr::Constant(Constant::Integer(1))));
        assert!(bind(s, &cat).unwrap_err().to_string().contains("non-deterministic function random"));
        let mut s = star_select();
        s.from = table("nope", "n");
        assert!(bind(s, &cat).unwrap_err().to_string().contains("'nope' does not exist"));
        let mut s = star_select();
        s.items.push(SelectItem { expr: col("f", "id"), alias: None });
        assert!(bind(s, &cat).unwrap_err().to_string().contains("GROUP BY"));
    }

    #[test]
    fn order_keys_and_having_bind_to_outputs_or_stored_columns() {
        use crate::ast::OrderItem;
        let cat = TestCatalog::star();
        let item = |key: Expr| OrderItem { key, descending: Some(true), nulls_first: None };
        let mut s = star_select();
        s.presentation.order_by = vec![
            item(Expr::column("total")),                // an alias: output 1
            item(Expr::Constant(Constant::Integer(1))), // a position: output 0
            item(func("count_star", vec![])),           // an aggregate that is no output
        ];
        s.presentation.having = Some(eq(func("sum", vec![col("f", "amount")]), Expr::Constant(Constant::Integer(3))));
        s.presentation.limit = Some(5);
        let q = bind(s, &cat).unwrap();
        let keys: Vec<&OrderKey> = q.presentation.order_by.iter().map(|o| &o.key).collect();
        assert_eq!(keys[0], &OrderKey::Output(1));
        assert_eq!(keys[1], &OrderKey::Output(0));
        assert_eq!(keys[2], &OrderKey::Stored(Expr::column("openivm_a1")));
        // HAVING's SUM is the select list's (openivm_a0); count(*) was added as aggregate 1
        assert_eq!(q.presentation.having, Some(eq(Expr::column("openivm_a0"), Expr::Constant(Constant::Integer(3)))));
        assert_eq!(q.aggregate_count(), 2);
        assert_eq!(q.presentation.limit, Some(5));

        // without GROUP BY, an order key must be an output
        let mut s = star_select();
        s.items.truncate(1);
        s.group_by.clear();
        s.presentation.order_by = vec![item(col("p", "name"))];
        let q = bind(s.clone(), &cat).unwrap();
        assert_eq!(q.presentation.order_by[0].key, OrderKey::Output(0));
        s.presentation.order_by = vec![item(col("f", "amount"))];
        assert!(bind(s, &cat).unwrap_err().to_string().contains("not an output column"));
    }

    #[test]
    fn distributes_a_union_all_over_its_branches() {
        // SELECT p.name, SUM(u.v) FROM (SELECT pid, amount AS v FROM fact UNION ALL
        //   SELECT pid, id FROM fact WHERE sid = 1) u JOIN product p ON u.pid = p.pid GROUP BY p.name
        let branch = |v: &str, filter: Option<Expr>| UnionBranch {
            select: Select {
                where_clause: filter,
                ..Select::plain(
                    vec![
                        SelectItem { expr: Expr::Column(vec!["pid".into()]), alias: None },
                        SelectItem { expr: Expr::Column(vec![v.into()]), alias: Some("v".into()) },
                    ],
                    table("fact", "fact"),
                )
            },
            tree: String::new(),
            side: 0,
        };
        let sid_is_1 = eq(Expr::Column(vec!["sid".into()]), Expr::Constant(Constant::Integer(1)));
        let union = FromItem::Union {
            branches: vec![branch("amount", None), branch("id", Some(sid_is_1))],
            alias: "u".into(),
            columns: vec![],
            compared: None,
        };
        let mut s = star_select();
        s.items[1].expr = func("sum", vec![col("u", "v")]);
        s.from = join(union, table("product", "p"), eq(col("u", "pid"), col("p", "pid")));
        let q = bind(s, &TestCatalog::star()).unwrap();
        assert_eq!(q.branches.len(), 2);
        assert_eq!(q.spans(), vec![(0, 2), (2, 2)]);
        assert_eq!(q.term_count(), 6);
        assert_eq!(
            q.leaves.iter().map(|l| l.table.name.as_str()).collect::<Vec<_>>(),
            ["fact", "product", "fact", "product"]
        );
        // each branch: its own leaves (numbered from 0), the outer join and its own filter
        assert_eq!(q.branches[0].predicates.len(), 1);
        assert_eq!(q.branches[1].predicates.len(), 2);
        let arg = |b: &ViewQuery| match &b.shape {
            Shape::Grouped { aggregates, .. } => aggregates[0].arg.clone(),
            Shape::Bag { .. } => None,
        };
        assert_eq!(arg(&q.branches[0]), Some(Expr::Bound { leaf: 0, column: "amount".into() }));
        assert_eq!(arg(&q.branches[1]), Some(Expr::Bound { leaf: 0, column: "id".into() }));
        assert!(q.predicates.is_empty());
        assert_eq!(q.used_columns.len(), 4);
    }

    #[test]
    fn flattens_a_select_project_join_subquery() {
        // SELECT s.n, SUM(s.amt) FROM store st JOIN (SELECT p.name AS n, f.sid, f.amount AS amt
        //   FROM fact f JOIN product p ON f.pid = p.pid WHERE f.amount > 0) s ON s.sid = st.sid GROUP BY s.n
        let cat = TestCatalog::star();
        let inner = Select {
            where_clause: Some(Expr::Compare {
                op: CompareOp::Gt,
                left: Box::new(col("f", "amount")),
                right: Box::new(Expr::Constant(Constant::Integer(0))),
            }),
            ..Select::plain(
                vec![
                    SelectItem { expr: col("p", "name"), alias: Some("n".into()) },
                    SelectItem { expr: col("f", "sid"), alias: None },
                    SelectItem { expr: col("f", "amount"), alias: Some("amt".into()) },
                ],
                join(table("fact", "f"), table("product", "p"), eq(col("f", "pid"), col("p", "pid"))),
            )
        };
        let sub =
            FromItem::Subquery { select: Box::new(inner.clone()), alias: "s".into(), columns: vec![], tree: None };
        let outer = Select {
            group_by: vec![col("s", "n")],
            ..Select::plain(
                vec![
                    SelectItem { expr: col("s", "n"), alias: None },
                    SelectItem { expr: func("sum", vec![col("s", "amt")]), alias: None },
                ],
                join(table("store", "f"), sub, eq(col("s", "sid"), col("f", "sid"))),
            )
        };
        let q = bind(outer, &cat).unwrap();
        // the outer leaf keeps its alias; the inner fact (also aliased f) is renamed
        let aliases: Vec<&str> = q.leaves.iter().map(|l| l.alias.as_str()).collect();
        assert_eq!(aliases, vec!["f", "f_2", "p"]);
        // the inner join and filter, then the outer join over the subquery's column
        assert_eq!(q.predicates.len(), 3);
        assert!(q.predicates.contains(&eq(
            Expr::Bound { leaf: 1, column: "sid".into() },
            Expr::Bound { leaf: 0, column: "sid".into() }
        )));
        let Shape::Grouped { keys, aggregates, .. } = &q.shape else { panic!() };
        assert_eq!(keys, &vec![Expr::Bound { leaf: 2, column: "name".into() }]);
        assert_eq!(aggregates[0].arg, Some(Expr::Bound { leaf: 1, column: "amount".into() }));
        // the inner tables are not visible by their aliases
        let mut hidden = outer_with(sub_of(inner.clone()), col("p", "name"));
        assert!(bind(hidden.clone(), &cat).unwrap_err().to_string().contains("no table named 'p'"));
        // a subquery that groups is not flattened
        let mut grouped = inner;
        grouped.group_by = vec![col("p", "name")];
        hidden.from = sub_of(grouped);
        hidden.items[0].expr = col("s", "n");
        assert!(matches!(bind(hidden, &cat), Err(Error::Unsupported(_))));
    }

    /// The star catalog with DuckDB views: `big_sales` (select-project over fact), `shown`
    /// (a maintained view) and `loop_view` (a view over itself).
    struct ViewCatalog(TestCatalog, Select);

    impl Catalog for ViewCatalog {
        fn table(&self, name: &TableName) -> Result<Option<ResolvedTable>> {
            if ["big_sales", "shown", "loop_view"].contains(&name.name.as_str()) {
                return Ok(Some(ResolvedTable {
                    id: TableId { catalog: "memory".into(), schema: "main".into(), name: name.name.clone() },
                    kind: RelationKind::View,
                    columns: vec![],
                }));
            }
            self.0.table(name)
        }
        fn function(&self, name: &str) -> Result<Option<FunctionInfo>> {
            self.0.function(name)
        }
        fn view(&self, id: &TableId) -> Result<Option<ViewDefinition>> {
            Ok(Some(match id.name.as_str() {
                "shown" => ViewDefinition::Maintained {
                    columns: vec![ColumnDef { name: "x".into(), ty: "BIGINT".into(), collation: None }],
                },
                "loop_view" => ViewDefinition::Query {
                    select: outer_with(table("loop_view", "l"), col("l", "x")),
                    sql: "CREATE VIEW loop_view AS ...".into(),
                    columns: vec!["x".into()],
                    tree: None,
                },
                _ => ViewDefinition::Query {
                    select: self.1.clone(),
                    sql: "CREATE VIEW big_sales AS ...".into(),
                    columns: vec!["product".into(), "amt".into()],
                    tree: None,
                },
            }))
        }
    }

    #[test]
    fn expands_duckdb_views_into_their_definitions() {
        // big_sales: SELECT f.pid, f.amount FROM fact f WHERE f.amount > 0, columns (product, amt)
        let mut def = outer_with(table("fact", "f"), col("f", "pid"));
        def.items.push(SelectItem { expr: col("f", "amount"), alias: None });
        def.where_clause = Some(Expr::Compare {
            op: CompareOp::Gt,
            left: Box::new(col("f", "amount")),
            right: Box::new(Expr::Constant(Constant::Integer(0))),
        });
        let cat = ViewCatalog(TestCatalog::star(), def);
        // SELECT p.name, SUM(b.amt) FROM big_sales b JOIN product p ON b.product = p.pid GROUP BY p.name
        let mut q = outer_with(
            join(table("big_sales", "b"), table("product", "p"), eq(col("b", "product"), col("p", "pid"))),
            col("p", "name"),
        );
        q.items.push(SelectItem { expr: func("sum", vec![col("b", "amt")]), alias: None });
        q.group_by = vec![col("p", "name")];
        let bound = bind(q, &cat).unwrap();
        let tables: Vec<&str> = bound.leaves.iter().map(|l| l.table.name.as_str()).collect();
        assert_eq!(tables, vec!["fact", "product"]);
        assert_eq!(bound.predicates.len(), 2);
        assert_eq!(bound.source_views.len(), 1);
        assert_eq!(bound.source_views[0].view.name, "big_sales");
        // the view's columns are named by the view, not by its query
        let by_query = outer_with(table("big_sales", "b"), col("b", "amount"));
        assert!(matches!(bind(by_query, &cat), Err(Error::Bind(_))));
        // a maintained view is a leaf of its own (not expanded), a cycle is refused
        let chained = bind(outer_with(table("shown", "s"), col("s", "x")), &cat).unwrap();
        assert_eq!(chained.leaves[0].table.name, "shown");
        assert_eq!(chained.upstream, vec![chained.leaves[0].table.clone()]);
        assert!(chained.source_views.is_empty());
        let err = bind(outer_with(table("loop_view", "v"), col("v", "x")), &cat).unwrap_err().to_string();
        assert!(err.contains("nested more than"), "{err}");
    }

    fn sub_of(select: Select) -> FromItem {
        FromItem::Subquery { select: Box::new(select), alias: "s".into(), columns: vec![], tree: None }
    }

    fn outer_with(from: FromItem, item: Expr) -> Select {
        Select::plain(vec![SelectItem { expr: item, alias: None }], from)
    }

    #[test]
    fn group_by_position_alias_and_expression_keys() {
        let cat = TestCatalog::star();
        let upper = func("upper", vec![col("p", "name")]);
        for key in [
            Expr::Constant(Constant::Integer(1)),
            Expr::Column(vec!["n".into()]),
            func("upper", vec![col("p", "name")]),
        ] {
            let mut s = star_select();
            s.items[0] = SelectItem { expr: upper.clone(), alias: Some("n".into()) };
            s.group_by = vec![key];
            let q = bind(s, &cat).unwrap();
            let Shape::Grouped { keys, outputs, .. } = q.shape else { panic!() };
            assert_eq!(keys.len(), 1);
            assert!(matches!(&keys[0], Expr::Function { name, .. } if name == "upper"));
            assert_eq!(outputs[0], Expr::column("openivm_g0"));
        }
        let mut s = star_select();
        s.group_by = vec![Expr::Constant(Constant::Integer(2))];
        assert!(bind(s, &cat).unwrap_err().to_string().contains("aggregate"));
    }

    /// The star catalog plus a table with a TIMESTAMPTZ column, typing columns and casts.
    struct TypedCatalog(TestCatalog);

    impl Catalog for TypedCatalog {
        fn table(&self, name: &TableName) -> Result<Option<ResolvedTable>> {
            if name.name == "event" {
                let cols = [("at", "TIMESTAMP WITH TIME ZONE"), ("amount", "DOUBLE")];
                return Ok(Some(ResolvedTable {
                    id: TableId { catalog: "memory".into(), schema: "main".into(), name: "event".into() },
                    kind: RelationKind::Table,
                    columns: cols
                        .iter()
                        .map(|(n, t)| ColumnDef { name: n.to_string(), ty: t.to_string(), collation: None })
                        .collect(),
                }));
            }
            self.0.table(name)
        }
        fn function(&self, name: &str) -> Result<Option<FunctionInfo>> {
            self.0.function(name)
        }
        fn expression_types(&self, leaves: &[Leaf], exprs: &[Expr]) -> Result<Vec<Option<String>>> {
            Ok(exprs
                .iter()
                .map(|e| match e {
                    Expr::Bound { leaf, column } => {
                        leaves[*leaf].columns.iter().find(|c| &c.name == column).map(|c| c.ty.clone())
                    }
                    Expr::Cast { ty, .. } => Some(ty.id.clone()),
                    Expr::Function { name, .. } if name == "sum" => Some("DOUBLE".into()),
                    _ => None,
                })
                .collect())
        }
    }

    #[test]
    fn types_aggregate_arguments_and_refuses_time_zone_conversions() {
        let cat = TypedCatalog(TestCatalog::star());
        let at = || col("e", "at");
        let select = |items: Vec<Expr>, group_by: Vec<Expr>| Select {
            group_by,
            ..Select::plain(
                items.into_iter().map(|expr| SelectItem { expr, alias: None }).collect(),
                table("event", "e"),
            )
        };
        let q = bind(select(vec![at(), func("sum", vec![col("e", "amount")])], vec![at()]), &cat).unwrap();
        let Shape::Grouped { aggregates, .. } = q.shape else { panic!() };
        assert_eq!(aggregates[0].arg_type.as_deref(), Some("DOUBLE"));

        let to_text = Expr::Cast {
            expr: Box::new(at()),
            ty: crate::ast::TypeName { id: "VARCHAR".into(), decimal: None },
            try_cast: false,
        };
        let err = bind(select(vec![to_text], vec![]), &cat).unwrap_err().to_string();
        assert!(err.contains("a cast of a TIMESTAMP WITH TIME ZONE value to VARCHAR"), "{err}");
        // over an aggregate: typed with the aggregate replaced by a NULL of its type
        let over_sum = Expr::Cast {
            expr: Box::new(func("sum", vec![col("e", "amount")])),
            ty: crate::ast::TypeName { id: "TIMESTAMP WITH TIME ZONE".into(), decimal: None },
            try_cast: false,
        };
        let err = bind(select(vec![over_sum], vec![]), &cat).unwrap_err().to_string();
        assert!(err.contains("a cast of a DOUBLE value to TIMESTAMP WITH TIME ZONE"), "{err}");
        let err =
            bind(select(vec![func("getvariable", vec![Expr::Constant(Constant::Text("x".into()))])], vec![]), &cat)
                .unwrap_err()
                .to_string();
        assert!(err.contains("getvariable() (depends on the caller's session"), "{err}");
        // an aggregate without a delta rule over TIMESTAMPTZ: only if it compares or collects
        assert!(bind(select(vec![func("list", vec![at()])], vec![]), &cat).is_ok());
        let sep = Expr::Constant(Constant::Text(",".into()));
        let err = bind(select(vec![func("string_agg", vec![at(), sep])], vec![]), &cat).unwrap_err().to_string();
        assert!(err.contains("string_agg() over a TIMESTAMP WITH TIME ZONE value"), "{err}");
    }

    #[test]
    fn variances_of_exact_inputs_are_incremental_others_recomputed() {
        let cat = TypedCatalog(TestCatalog::star());
        // fact.amount is an INTEGER: count, sum and sum of squares
        let mut s = star_select();
        s.items[1].expr = func("stddev", vec![col("f", "amount")]);
        s.items.push(SelectItem { expr: func("var_pop", vec![col("f", "amount")]), alias: None });
        let q = bind(s, &cat).unwrap();
        let Shape::Grouped { aggregates, .. } = &q.shape else { panic!() };
        assert_eq!(aggregates[0].func, AggFunc::Variance { population: false, root: true });
        assert_eq!(aggregates[1].func, AggFunc::Variance { population: true, root: false });
        assert_eq!(aggregates[0].arg, Some(Expr::Bound { leaf: 0, column: "amount".into() }));
        assert!(q.recomputed_aggregates().is_empty());
        // a DOUBLE input is recomputed per group
        let s = outer_with(table("event", "e"), func("stddev", vec![col("e", "amount")]));
        let q = bind(s, &cat).unwrap();
        assert_eq!(q.recomputed_aggregates().len(), 1);
        // which inputs are exact, and a DECIMAL's scale
        assert_eq!(crate::ir::variance_input(Some("INTEGER")), Some(0));
        assert_eq!(crate::ir::variance_input(Some("DECIMAL(9,2)")), Some(2));
        assert_eq!(crate::ir::variance_input(Some("DECIMAL(18,2)")), None);
        assert_eq!(crate::ir::variance_input(Some("BIGINT")), None);
        assert_eq!(crate::ir::variance_input(Some("DOUBLE")), None);
        assert_eq!(crate::ir::variance_kind("STDDEV_POP"), Some((true, true)));
        assert_eq!(crate::ir::variance_kind("median"), None);
    }

    #[test]
    fn using_and_star() {
        let cat = TestCatalog::star();
        let using = FromItem::Join {
            left: Box::new(table("fact", "f")),
            right: Box::new(table("product", "p")),
            on: None,
            using: vec!["pid".into()],
        };
        let s = outer_with(using, Expr::Star { relation: None });
        let q = bind(s, &cat).unwrap();
        let Shape::Bag { outputs, .. } = q.shape else { panic!() };
        // fact's 4 columns, then product's name (its pid is merged by USING).
        assert_eq!(outputs.len(), 5);
        assert_eq!(outputs[4], Expr::Bound { leaf: 1, column: "name".into() });
        assert_eq!(q.predicates.len(), 1);
    }
}
