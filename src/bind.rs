//! Stage 2: `ast::Select` + catalog -> `ir::ViewQuery`.
//!
//! Flattens the inner joins into leaves and predicates, resolves every column to a leaf,
//! expands `*`, checks functions (aggregates must be SUM/COUNT/AVG, scalars deterministic) and
//! rewrites the select list over the stored columns of the result.

use crate::ast::{CompareOp, Expr, FromItem, Select, TableName};
use crate::error::{Error, Result};
use crate::ir::{stored, AggFunc, Aggregate, ColumnDef, Leaf, Shape, TableId, ViewQuery};

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
    pub deterministic: bool,
    /// Every overload is one of DuckDB's own (not a macro or function a user created, which
    /// may be replaced): what is known about it holds for the database's lifetime.
    pub builtin: bool,
}

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
}

struct Scope {
    leaves: Vec<Leaf>,
    /// USING columns: (column name, the leaf whose column an unqualified reference means).
    using: Vec<(String, usize)>,
    /// Columns hidden from `*` because USING merged them into a left-hand column.
    star_hidden: Vec<(usize, String)>,
}

fn eq_ci(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

fn bind_error<T>(msg: String) -> Result<T> {
    Err(Error::Bind(msg))
}

pub fn bind(select: Select, catalog: &dyn Catalog) -> Result<ViewQuery> {
    let mut scope = Scope { leaves: vec![], using: vec![], star_hidden: vec![] };
    let mut raw_predicates = Vec::new();
    flatten(select.from, catalog, &mut scope, &mut raw_predicates)?;
    if scope.leaves.len() > MAX_LEAVES {
        return Err(Error::Unsupported(format!(
            "joins of more than {MAX_LEAVES} tables (this one has {})",
            scope.leaves.len()
        )));
    }
    let mut predicates = Vec::new();
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

    let has_aggregate = items.iter().any(|(e, _)| contains_aggregate(e));
    let item_exprs: Vec<Expr> = items.iter().map(|(e, _)| e.clone()).collect();
    let mut shape = if has_aggregate || !select.group_by.is_empty() {
        let mut keys = Vec::new();
        for g in select.group_by {
            keys.push(bind_group_key(g, &items, &scope, catalog)?);
        }
        let mut aggregates = Vec::new();
        let outputs =
            items.into_iter().map(|(e, _)| over_stored(e, &keys, &mut aggregates)).collect::<Result<Vec<_>>>()?;
        Shape::Grouped { keys, aggregates, outputs }
    } else {
        let outputs: Vec<Expr> = items.into_iter().map(|(e, _)| e).collect();
        Shape::Bag { text_identity: vec![false; outputs.len()], outputs }
    };

    type_and_check(&scope.leaves, &predicates, &mut shape, &item_exprs, catalog)?;

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
    Ok(ViewQuery { leaves: scope.leaves, predicates, shape, used_columns })
}

/// An aggregate call of a select item (`SUM(x)`, `count(*)`), not an expression over one.
fn is_aggregate_call(e: &Expr) -> bool {
    matches!(e, Expr::Function { name, is_operator: false, .. } if aggregate_func(name).is_some())
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
    let mut roots: Vec<Expr> = predicates.to_vec();
    match &*shape {
        Shape::Grouped { keys, aggregates, .. } => {
            roots.extend(keys.iter().cloned());
            roots.extend(aggregates.iter().filter_map(|a| a.arg.clone()));
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
    let mut nodes: Vec<Expr> = Vec::new();
    for r in &roots {
        r.visit(&mut |x| {
            if !nodes.contains(x) {
                nodes.push(x.clone());
            }
        });
    }
    let types = catalog.expression_types(leaves, &nodes)?;
    let type_of = |e: &Expr| nodes.iter().position(|n| n == e).and_then(|i| types.get(i)?.as_deref());
    for r in &roots {
        crate::session::check_time_zone(r, &type_of)?;
    }
    if let Shape::Grouped { aggregates, .. } = shape {
        for a in aggregates.iter_mut() {
            a.arg_type = a.arg.as_ref().and_then(&type_of).map(str::to_string);
        }
    }
    Ok(())
}

fn flatten(item: FromItem, catalog: &dyn Catalog, scope: &mut Scope, preds: &mut Vec<Expr>) -> Result<()> {
    match item {
        FromItem::Table { name, alias } => {
            let Some(t) = catalog.table(&name)? else {
                return bind_error(format!("table '{}' does not exist", display_name(&name)));
            };
            if t.id.name.to_ascii_lowercase().starts_with("openivm_") || t.id.schema.eq_ignore_ascii_case("openivm") {
                return Err(Error::Unsupported(format!(
                    "the extension's own tables as sources ('{}': every refresh writes them)",
                    display_name(&name)
                )));
            }
            if t.kind == RelationKind::View {
                return Err(Error::Unsupported(format!(
                    "views as sources ('{}' is a view; name its base tables instead)",
                    display_name(&name)
                )));
            }
            let alias = alias.unwrap_or_else(|| name.name.clone());
            if scope.leaves.iter().any(|l| eq_ci(&l.alias, &alias)) {
                return bind_error(format!(
                    "the name '{alias}' is used for two tables of the join; give them different aliases"
                ));
            }
            scope.leaves.push(Leaf { alias, table: t.id, columns: t.columns });
            Ok(())
        }
        FromItem::Join { left, right, on, using } => {
            let left_start = scope.leaves.len();
            flatten(*left, catalog, scope, preds)?;
            let right_start = scope.leaves.len();
            flatten(*right, catalog, scope, preds)?;
            if let Some(on) = on {
                preds.push(on);
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
    match parts {
        [name] => {
            if let Some((_, leaf)) = scope.using.iter().find(|(c, _)| eq_ci(c, name)) {
                return Ok(column_of(*leaf, name));
            }
            let hits: Vec<Expr> = (0..scope.leaves.len()).filter_map(|i| column_of(i, name)).collect();
            match hits.len() {
                0 => Ok(None),
                1 => Ok(hits.into_iter().next()),
                _ => bind_error(format!("column '{name}' is ambiguous; qualify it with a table alias")),
            }
        }
        [table, name] => {
            let Some(leaf) = scope.leaves.iter().position(|l| eq_ci(&l.alias, table)) else {
                return bind_error(format!("no table named '{table}' in the FROM clause"));
            };
            match column_of(leaf, name) {
                Some(e) => Ok(Some(e)),
                None => bind_error(format!("table '{table}' has no column '{name}'")),
            }
        }
        [qualifier, table, name] => {
            // schema.table.column or catalog.table.column, for a leaf without an alias
            let leaf = scope.leaves.iter().position(|l| {
                eq_ci(&l.alias, table) && (eq_ci(&l.table.schema, qualifier) || eq_ci(&l.table.catalog, qualifier))
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
                check_function(&name, false, allow_aggregates, catalog)?;
                Ok(Expr::Function { name, args: vec![], is_operator: false })
            }
            None => bind_error(format!("column '{}' does not exist in the tables of the query", parts.join("."))),
        },
        Expr::Star { .. } => Err(Error::Unsupported("* inside an expression".into())),
        Expr::Function { name, args, is_operator } => {
            check_function(&name, is_operator, allow_aggregates, catalog)?;
            Ok(Expr::Function { name, args, is_operator })
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

/// The aggregate a function name denotes, if it is one of the supported ones.
pub fn aggregate_func(name: &str) -> Option<AggFunc> {
    match name.to_ascii_lowercase().as_str() {
        "sum" => Some(AggFunc::Sum),
        "count_star" => Some(AggFunc::CountStar),
        "count" => Some(AggFunc::Count),
        "avg" | "mean" => Some(AggFunc::Avg),
        _ => None,
    }
}

fn check_function(name: &str, is_operator: bool, allow_aggregates: bool, catalog: &dyn Catalog) -> Result<()> {
    if is_operator {
        return Ok(());
    }
    if aggregate_func(name).is_some() {
        return if allow_aggregates {
            Ok(())
        } else {
            Err(Error::Unsupported(format!("aggregate {}() outside the select list", name.to_uppercase())))
        };
    }
    crate::session::check_function(name)?;
    if crate::session::CLOCK_FUNCTIONS.iter().any(|f| f.eq_ignore_ascii_case(name)) {
        return Err(Error::Unsupported(format!("the non-deterministic function {name}()")));
    }
    match catalog.function(name)? {
        None => bind_error(format!("function '{name}' does not exist")),
        Some(f) if f.aggregate => Err(Error::Unsupported(format!(
            "the aggregate function {}() (supported: SUM, COUNT(*), COUNT(expr), AVG)",
            name.to_uppercase()
        ))),
        Some(f) if !f.deterministic => Err(Error::Unsupported(format!("the non-deterministic function {name}()"))),
        Some(_) => Ok(()),
    }
}

fn contains_aggregate(e: &Expr) -> bool {
    let mut found = false;
    e.visit(&mut |x| {
        if let Expr::Function { name, is_operator: false, .. } = x {
            found |= aggregate_func(name).is_some();
        }
    });
    found
}

fn expand_star(scope: &Scope, relation: Option<&str>) -> Result<Vec<(Expr, Option<String>)>> {
    let leaves: Vec<usize> = match relation {
        None => (0..scope.leaves.len()).collect(),
        Some(r) => match scope.leaves.iter().position(|l| eq_ci(&l.alias, r)) {
            Some(i) => vec![i],
            None => return bind_error(format!("no table named '{r}' in the FROM clause")),
        },
    };
    let mut out = Vec::new();
    for i in leaves {
        for c in &scope.leaves[i].columns {
            if relation.is_none() && scope.star_hidden.iter().any(|(l, n)| *l == i && n == &c.name) {
                continue;
            }
            out.push((Expr::Bound { leaf: i, column: c.name.clone() }, None));
        }
    }
    Ok(out)
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
fn over_stored(e: Expr, keys: &[Expr], aggregates: &mut Vec<Aggregate>) -> Result<Expr> {
    if let Some(i) = keys.iter().position(|k| k == &e) {
        return Ok(Expr::column(&stored::group(i)));
    }
    match e {
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
            let agg = Aggregate { func, arg, arg_type: None };
            let j = match aggregates.iter().position(|a| a == &agg) {
                Some(j) => j,
                None => {
                    aggregates.push(agg);
                    aggregates.len() - 1
                }
            };
            Ok(Expr::column(&stored::agg(j)))
        }
        Expr::Bound { leaf: _, column } => bind_error(format!(
            "column '{column}' must appear in the GROUP BY clause or be used in an aggregate function"
        )),
        other => other.map_children(&mut |c| over_stored(c, keys, aggregates)),
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
                columns: cols.iter().map(|(n, t)| ColumnDef { name: n.to_string(), ty: t.to_string() }).collect(),
            }))
        }
        fn function(&self, name: &str) -> Result<Option<FunctionInfo>> {
            Ok(match name {
                "upper" | "lower" => Some(FunctionInfo { aggregate: false, deterministic: true, builtin: true }),
                "random" => Some(FunctionInfo { aggregate: false, deterministic: false, builtin: true }),
                "min" | "max" => Some(FunctionInfo { aggregate: true, deterministic: true, builtin: true }),
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
            items: vec![
                SelectItem { expr: col("p", "name"), alias: None },
                SelectItem { expr: func("sum", vec![col("f", "amount")]), alias: Some("total".into()) },
            ],
            from: join(
                join(table("fact", "f"), table("product", "p"), eq(col("f", "pid"), col("p", "pid"))),
                table("store", "s"),
                eq(col("f", "sid"), col("s", "sid")),
            ),
            where_clause: None,
            group_by: vec![col("p", "name")],
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
            Shape::Grouped { keys, aggregates, outputs } => {
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
        s.items.push(SelectItem { expr: func("max", vec![col("f", "amount")]), alias: None });
        assert!(bind(s, &cat).unwrap_err().to_string().contains("MAX"));
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
                    columns: cols.iter().map(|(n, t)| ColumnDef { name: n.to_string(), ty: t.to_string() }).collect(),
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
            items: items.into_iter().map(|expr| SelectItem { expr, alias: None }).collect(),
            from: table("event", "e"),
            where_clause: None,
            group_by,
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
    }

    #[test]
    fn using_and_star() {
        let cat = TestCatalog::star();
        let s = Select {
            items: vec![SelectItem { expr: Expr::Star { relation: None }, alias: None }],
            from: FromItem::Join {
                left: Box::new(table("fact", "f")),
                right: Box::new(table("product", "p")),
                on: None,
                using: vec!["pid".into()],
            },
            where_clause: None,
            group_by: vec![],
        };
        let q = bind(s, &cat).unwrap();
        let Shape::Bag { outputs, .. } = q.shape else { panic!() };
        // fact's 4 columns, then product's name (its pid is merged by USING).
        assert_eq!(outputs.len(), 5);
        assert_eq!(outputs[4], Expr::Bound { leaf: 1, column: "name".into() });
        assert_eq!(q.predicates.len(), 1);
    }
}
