use super::*;
use crate::ast::{AggCall, CompareOp, Constant, FromItem, SelectItem, TableName, UnionBranch};
use crate::ir::{ColumnDef, Leaf, TableId};
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
    FromItem::Table { name: TableName { catalog: None, schema: None, name: name.into() }, alias: Some(alias.into()) }
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
    let sub = FromItem::Subquery { select: Box::new(inner.clone()), alias: "s".into(), columns: vec![], tree: None };
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
    assert!(q
        .predicates
        .contains(&eq(Expr::Bound { leaf: 1, column: "sid".into() }, Expr::Bound { leaf: 0, column: "sid".into() })));
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
                select: Box::new(outer_with(table("loop_view", "l"), col("l", "x"))),
                sql: "CREATE VIEW loop_view AS ...".into(),
                columns: vec!["x".into()],
                tree: None,
            },
            _ => ViewDefinition::Query {
                select: Box::new(self.1.clone()),
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
    for key in
        [Expr::Constant(Constant::Integer(1)), Expr::Column(vec!["n".into()]), func("upper", vec![col("p", "name")])]
    {
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
        ..Select::plain(items.into_iter().map(|expr| SelectItem { expr, alias: None }).collect(), table("event", "e"))
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
    let err = bind(select(vec![func("getvariable", vec![Expr::Constant(Constant::Text("x".into()))])], vec![]), &cat)
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
