//! Unit tests of the rendered SQL.

use super::aggregate::*;
use super::expr::*;
use super::merge::*;
use super::quote::*;
use super::term::*;
use super::visible::*;
use super::{Dialect, Storage};
use crate::ast::{AggCall, CompareOp, Constant, Expr, TypeName};
use crate::front::bind::bind;
use crate::front::bind::tests::{star_select, TestCatalog};
use crate::ir::{Shape, SumInput, ViewQuery};
use crate::plan::terms::Term;

#[test]
fn quotes_identifiers_and_literals() {
    assert_eq!(ident("a\"b"), "\"a\"\"b\"");
    assert_eq!(literal("it's"), "'it''s'");
    assert_eq!(constant(&Constant::Decimal { digits: 15, scale: 1 }), "1.5");
    assert_eq!(constant(&Constant::Decimal { digits: -5, scale: 2 }), "(-0.05)");
    assert_eq!(constant(&Constant::Double(2500.0)), "2.5e3");
    assert_eq!(constant(&Constant::Integer(-3)), "(-3)");
}

#[test]
fn extrema_take_positive_rows_and_merge_with_least_greatest() {
    let mut s = star_select();
    s.items[1].expr = Expr::Function {
        name: "min".into(),
        args: vec![Expr::Column(vec!["f".into(), "amount".into()])],
        is_operator: false,
    };
    s.items.push(crate::ast::SelectItem {
        expr: Expr::Function {
            name: "max".into(),
            args: vec![Expr::Column(vec!["f".into(), "amount".into()])],
            is_operator: false,
        },
        alias: None,
    });
    let q = bind(s, &TestCatalog::star()).unwrap();
    assert!(q.has_extrema());
    let agg = aggregate_weighted(&q, "SELECT 1");
    assert!(agg.contains(r#"MIN(CASE WHEN "openivm_weight" > 0 THEN "openivm_v0" END) AS "openivm_a0_ext""#), "{agg}");
    assert!(
        // MIN and MAX of one argument read one value column
        agg.contains(r#"MAX(CASE WHEN "openivm_weight" > 0 THEN "openivm_v0" END) AS "openivm_a1_ext""#),
        "{agg}"
    );
    let (_, state) = stored_columns(&q);
    assert_eq!(state[0], Summed { column: "openivm_a0_ext".into(), rule: MergeRule::Least });
    assert_eq!(state[1], Summed { column: "openivm_a1_ext".into(), rule: MergeRule::Greatest });
    let merge = apply_view_delta(Storage::DuckDb, &q, &Qualified::temp("d".into()), "SELECT 1", None).join("; ");
    assert!(
        merge.contains(r#""openivm_a0_ext" = LEAST(openivm_t."openivm_a0_ext", openivm_d."openivm_a0_ext")"#),
        "{merge}"
    );
}

#[test]
fn recomputed_aggregates_project_their_inputs_and_recompute_touched_groups() {
    let mut s = star_select();
    let amount = || Expr::Column(vec!["f".into(), "amount".into()]);
    // string_agg(DISTINCT f.amount, ',' ORDER BY f.amount DESC) FILTER (WHERE f.amount > 1)
    let call = AggCall {
        name: "string_agg".into(),
        args: vec![amount(), Expr::Constant(Constant::Text(",".into()))],
        distinct: true,
        order_by: vec![crate::ast::OrderItem { key: amount(), descending: Some(true), nulls_first: None }],
        filter: Some(Expr::Compare {
            op: CompareOp::Gt,
            left: Box::new(amount()),
            right: Box::new(Expr::Constant(Constant::Integer(1))),
        }),
    };
    s.items[1].expr = Expr::Aggregate(Box::new(call));
    let q = bind(s, &TestCatalog::star()).unwrap();
    // the column input is projected once (and the filter), the separator stays a constant
    let sources: Vec<Source> = q.leaves.iter().map(|l| Source::Current(l.table.clone())).collect();
    let term = term_select(&q, Term { mask: 0, sign: 1 }, &sources);
    assert!(term.contains(r#""f"."amount" AS "openivm_v0_0", ("f"."amount" > 1) AS "openivm_v0_1", (1)"#), "{term}");
    let fill = aggregate_fill(&q, "SELECT 1");
    assert!(
        fill.contains(
            r#"string_agg(DISTINCT "openivm_v0_0", ',' ORDER BY "openivm_v0_0" DESC) FILTER (WHERE "openivm_v0_1") AS "openivm_a0_val""#
        ),
        "{fill}"
    );
    // never merged; the view reads the finished value
    assert!(stored_columns(&q).1.is_empty());
    let data = Qualified { catalog: "db".into(), schema: "openivm".into(), name: "data_main_v".into() };
    let view = visible_view(
        &q,
        &data,
        &[
            OutputColumn { name: "name".into(), ty: "VARCHAR".into(), collation: None },
            OutputColumn { name: "s".into(), ty: "VARCHAR".into(), collation: None },
        ],
        &[],
        None,
    );
    assert!(view.contains(r#""openivm_a0_val" AS "openivm_a0""#), "{view}");
    // the touched groups: distinct keys, deleted and recomputed NULL-safely
    let keys = Qualified::temp("k".into());
    assert_eq!(touched_keys(&q, "SELECT 1"), r#"SELECT DISTINCT "openivm_g0" FROM (SELECT 1) AS openivm_rows"#);
    assert_eq!(
        delete_groups(&q, &data, &keys),
        r#"DELETE FROM "db"."openivm"."data_main_v" AS openivm_t WHERE EXISTS (SELECT 1 FROM "temp"."main"."k" AS openivm_k WHERE openivm_t."openivm_g0" IS NOT DISTINCT FROM openivm_k."openivm_g0")"#
    );
    assert!(rows_of_groups(&q, "SELECT 1", &keys).ends_with(
        r#"SEMI JOIN "temp"."main"."k" AS openivm_k ON openivm_r."openivm_g0" IS NOT DISTINCT FROM openivm_k."openivm_g0""#
    ));
}

#[test]
fn variances_keep_exact_sums_of_squares_and_divide_once() {
    // VAR_SAMP: NULL below 2 inputs; n·q - s² exact in HUGEINT up to 2^31 rows, then DOUBLE
    let v = exact_variance("s", "q", "n", false, 0);
    assert_eq!(
        v,
        "(CASE WHEN n <= 1 THEN NULL WHEN n <= 2147483647 THEN CAST(CAST(n AS HUGEINT) * q - s * s AS DOUBLE) / \
         (CAST(n AS DOUBLE) * CAST(n - 1 AS DOUBLE)) ELSE (CAST(q AS DOUBLE) - CAST(s AS DOUBLE) * CAST(s AS DOUBLE) \
         / CAST(n AS DOUBLE)) / CAST(n - 1 AS DOUBLE) END)"
    );
    // VAR_POP of a DECIMAL(9,2): 0 for one input, unscaled by 10^4
    let v = exact_variance("s", "q", "n", true, 2);
    assert!(v.starts_with("(CASE WHEN n <= 0 THEN NULL") && v.ends_with(" END) / 1e4"), "{v}");
    assert_eq!(variance_integer(Dialect::DuckDb, "x", Some("DECIMAL(9,2)")), "CAST(x * 100 AS HUGEINT)");
    assert_eq!(variance_integer(Dialect::DuckDb, "x", Some("INTEGER")), "CAST(x AS HUGEINT)");
}

#[test]
fn renders_each_construct() {
    let a = vec!["t".to_string()];
    let c = || Box::new(Expr::Bound { leaf: 0, column: "x".into() });
    let k = |i| Box::new(Expr::Constant(Constant::Integer(i)));
    let cases: Vec<(Expr, &str)> = vec![
        (Expr::Compare { op: CompareOp::GtEq, left: c(), right: k(1) }, r#"("t"."x" >= 1)"#),
        (Expr::Between { expr: c(), low: k(1), high: k(2) }, r#"("t"."x" BETWEEN 1 AND 2)"#),
        (Expr::InList { expr: c(), list: vec![*k(1), *k(2)], negated: true }, r#"("t"."x" NOT IN (1, 2))"#),
        (Expr::IsNull { expr: c(), negated: false }, r#"("t"."x" IS NULL)"#),
        (Expr::Not(Box::new(Expr::Or(vec![*c(), *k(0)]))), r#"(NOT ("t"."x" OR 0))"#),
        (
            Expr::Function {
                name: "~~".into(),
                args: vec![*c(), Expr::Constant(Constant::Text("a%".into()))],
                is_operator: true,
            },
            r#"("t"."x" LIKE 'a%')"#,
        ),
        (Expr::Function { name: "+".into(), args: vec![*c(), *k(1)], is_operator: true }, r#"("t"."x" + 1)"#),
        (Expr::Function { name: "upper".into(), args: vec![*c()], is_operator: false }, r#"upper("t"."x")"#),
        (
            Expr::Case { checks: vec![(*c(), *k(1))], otherwise: Box::new(Expr::Constant(Constant::Null)) },
            r#"CASE WHEN "t"."x" THEN 1 ELSE NULL END"#,
        ),
        (
            Expr::Cast { expr: c(), ty: TypeName { id: "DECIMAL".into(), decimal: Some((10, 2)) }, try_cast: false },
            r#"CAST("t"."x" AS DECIMAL(10,2))"#,
        ),
        (Expr::Coalesce(vec![*c(), *k(0)]), r#"COALESCE("t"."x", 0)"#),
        (Expr::Compare { op: CompareOp::DistinctFrom, left: c(), right: k(1) }, r#"("t"."x" IS DISTINCT FROM 1)"#),
        (Expr::IsNull { expr: c(), negated: true }, r#"("t"."x" IS NOT NULL)"#),
        (Expr::And(vec![*c(), *k(1)]), r#"("t"."x" AND 1)"#),
        (
            Expr::Function {
                name: "!~~*".into(),
                args: vec![*c(), Expr::Constant(Constant::Text("A%".into()))],
                is_operator: true,
            },
            r#"("t"."x" NOT ILIKE 'A%')"#,
        ),
        (Expr::Function { name: "-".into(), args: vec![*c()], is_operator: true }, r#"(- "t"."x")"#),
        (
            Expr::Cast { expr: c(), ty: TypeName { id: "INTEGER".into(), decimal: None }, try_cast: true },
            r#"TRY_CAST("t"."x" AS INTEGER)"#,
        ),
        (Expr::Function { name: "count_star".into(), args: vec![], is_operator: false }, "count(*)"),
        (Expr::Function { name: "My Func".into(), args: vec![*c()], is_operator: false }, r#""My Func"("t"."x")"#),
        (
            Expr::Function { name: "position".into(), args: vec![*c(), *k(1)], is_operator: false },
            r#""position"("t"."x", 1)"#,
        ),
        (Expr::Constant(Constant::Bool(false)), "FALSE"),
        (Expr::Constant(Constant::Null), "NULL"),
        (Expr::Constant(Constant::Double(-0.5)), "(-5e-1)"),
        (Expr::Column(vec!["openivm_g0".into()]), r#""openivm_g0""#),
        (Expr::Struct(vec![("a b".into(), *k(1)), ("c".into(), *c())]), r#"struct_pack("a b" := 1, "c" := "t"."x")"#),
        (
            Expr::Function { name: "list_value".into(), args: vec![*k(1), *c()], is_operator: false },
            r#"list_value(1, "t"."x")"#,
        ),
        (
            Expr::Function {
                name: "like_escape".into(),
                args: vec![
                    *c(),
                    Expr::Constant(Constant::Text("a!%".into())),
                    Expr::Constant(Constant::Text("!".into())),
                ],
                is_operator: false,
            },
            r#"like_escape("t"."x", 'a!%', '!')"#,
        ),
    ];
    for (e, want) in cases {
        assert_eq!(expr(&e, &a), want);
    }
}

#[test]
fn reads_decimal_scales() {
    assert_eq!(decimal_scale("DECIMAL(38,2)"), Some(2));
    assert_eq!(decimal_scale("DECIMAL(18, 0)"), Some(0));
    assert_eq!(decimal_scale("HUGEINT"), None);
    assert_eq!(SumKind::of("DECIMAL(38,4)"), SumKind::Decimal(4));
    assert_eq!(SumKind::of("HUGEINT"), SumKind::Integer);
    assert_eq!(SumKind::of("DOUBLE"), SumKind::Float);
}

#[test]
fn renders_a_term_with_its_weight() {
    let q = bind(star_select(), &TestCatalog::star()).unwrap();
    let delta = Qualified::temp("openivm_delta_product".into());
    let sources = vec![
        Source::Current(q.leaves[0].table.clone()),
        Source::Delta(delta),
        Source::Current(q.leaves[2].table.clone()),
    ];
    let sql = term_select(&q, Term { mask: 0b010, sign: 1 }, &sources);
    assert_eq!(
        sql,
        "SELECT \"p\".\"name\" AS \"openivm_g0\", \"f\".\"amount\" AS \"openivm_v0\", \
         (1 * \"p\".\"openivm_multiplicity\") AS \"openivm_weight\" \
         FROM \"memory\".\"main\".\"fact\" AS \"f\", \"temp\".\"main\".\"openivm_delta_product\" AS \"p\", \
         \"memory\".\"main\".\"store\" AS \"s\" \
         WHERE (\"f\".\"pid\" = \"p\".\"pid\") AND (\"f\".\"sid\" = \"s\".\"sid\")"
    );
}

#[test]
fn aggregates_weighted_rows_into_stored_state() {
    let q = bind(star_select(), &TestCatalog::star()).unwrap();
    assert_eq!(
        aggregate_weighted(&q, "TERMS"),
        "SELECT \"openivm_g0\", CAST(COALESCE(SUM(\"openivm_weight\"), 0) AS BIGINT) AS \"openivm_count\", \
         SUM(\"openivm_v0\" * \"openivm_weight\") AS \"openivm_a0_sum\", \
         CAST(COALESCE(SUM(CASE WHEN \"openivm_v0\" IS NOT NULL THEN \"openivm_weight\" ELSE 0 END), 0) AS BIGINT) AS \"openivm_a0_nn\" \
         FROM (TERMS) AS openivm_rows GROUP BY 1"
    );
}

#[test]
fn fills_stored_state_with_duckdbs_own_aggregates() {
    let tail = " FROM (ROWS) AS openivm_rows GROUP BY 1";
    let head = "SELECT \"openivm_g0\", COUNT(*) AS \"openivm_count\", ";
    let nn = "COUNT(\"openivm_v0\") AS \"openivm_a0_nn\"";
    assert_eq!(
        aggregate_fill(&typed_sum("DECIMAL(38,2)"), "ROWS"),
        format!("{head}SUM(\"openivm_v0\") AS \"openivm_a0_sum\", {nn}{tail}")
    );
    assert_eq!(
        aggregate_fill(&typed_sum("HUGEINT"), "ROWS"),
        format!(
            "{head}SUM(\"openivm_v0\") AS \"openivm_a0_sum\", CAST(NULL AS HUGEINT) AS \"openivm_a0_sub\", {nn}{tail}"
        )
    );
    let d = "CAST(\"openivm_v0\" AS DOUBLE)";
    // A plain SUM first: exact wherever it comes out finite (checked by `nonfinite_sums`).
    assert_eq!(
        aggregate_fill(&typed_sum("DOUBLE"), "ROWS"),
        format!(
            "{head}SUM({d}) AS \"openivm_a0_sum\", CAST(0 AS BIGINT) AS \"openivm_a0_pinf\", \
             CAST(0 AS BIGINT) AS \"openivm_a0_ninf\", CAST(0 AS BIGINT) AS \"openivm_a0_nan\", {nn}{tail}"
        )
    );
    let data = Qualified { catalog: "db".into(), schema: "openivm".into(), name: "data_v".into() };
    assert_eq!(
        nonfinite_sums(&typed_sum("DOUBLE"), &data).as_deref(),
        Some("SELECT count(*) FROM \"db\".\"openivm\".\"data_v\" WHERE NOT isfinite(\"openivm_a0_sum\")")
    );
    assert_eq!(nonfinite_sums(&typed_sum("DECIMAL(38,2)"), &data), None);
    assert_eq!(
        aggregate_fill_exact(&typed_sum("DOUBLE"), "ROWS"),
        format!(
            "{head}SUM(CASE WHEN isfinite({d}) THEN {d} END) AS \"openivm_a0_sum\", \
             COUNT(*) FILTER (WHERE {d} = CAST('inf' AS DOUBLE)) AS \"openivm_a0_pinf\", \
             COUNT(*) FILTER (WHERE {d} = CAST('-inf' AS DOUBLE)) AS \"openivm_a0_ninf\", \
             COUNT(*) FILTER (WHERE isnan({d})) AS \"openivm_a0_nan\", {nn}{tail}"
        )
    );
}

/// The star view with its one SUM typed as DuckDB would type its argument.
fn typed_sum(ty: &str) -> ViewQuery {
    let mut q = bind(star_select(), &TestCatalog::star()).unwrap();
    if let Shape::Grouped { aggregates, .. } = &mut q.shape {
        aggregates[0].arg_type = Some(ty.to_string());
    }
    q
}

#[test]
fn grouping_sets_aggregate_per_set_and_keep_the_empty_sets_row() {
    let mut q = typed_sum("INTEGER");
    if let Shape::Grouped { keys, sets, .. } = &mut q.shape {
        keys.push(keys[0].clone());
        *sets = Some(crate::ir::GroupingSets { sets: vec![vec![0, 1], vec![1], vec![]], keys: 2 });
    }
    let sql = aggregate_weighted(&q, "TERMS");
    assert!(
        sql.starts_with(
            "SELECT \"openivm_g0\", \"openivm_g1\", GROUPING_ID(\"openivm_g0\", \"openivm_g1\") AS \"openivm_gset\", "
        ),
        "{sql}"
    );
    assert!(
        sql.ends_with(
            " FROM (TERMS) AS openivm_rows GROUP BY GROUPING SETS ((\"openivm_g0\", \"openivm_g1\"), (\"openivm_g1\"), ())"
        ),
        "{sql}"
    );
    let data = Qualified { catalog: "db".into(), schema: "openivm".into(), name: "data_v".into() };
    let merge = apply_view_delta(Storage::DuckDb, &q, &data, "DELTA", None).join("; ");
    // the set id is a key; the empty set (both keys left out: id 3) is never deleted
    assert!(merge.contains("openivm_d.\"openivm_gset\""), "{merge}");
    assert!(
        merge.contains(
            "WHEN MATCHED AND openivm_t.\"openivm_count\" + openivm_d.\"openivm_count\" = 0 AND openivm_t.\"openivm_gset\" <> 3 THEN DELETE"
        ),
        "{merge}"
    );
}

#[test]
fn keeps_each_sum_exact_by_its_argument_type() {
    let (v, w) = ("\"openivm_v0\"", "\"openivm_weight\"");
    let nn =
        format!("CAST(COALESCE(SUM(CASE WHEN {v} IS NOT NULL THEN {w} ELSE 0 END), 0) AS BIGINT) AS \"openivm_a0_nn\"");
    let head = format!("SELECT \"openivm_g0\", CAST(COALESCE(SUM({w}), 0) AS BIGINT) AS \"openivm_count\", ");
    let tail = " FROM (TERMS) AS openivm_rows GROUP BY 1";
    // integers: widened before the product, so INT_MIN * -1 cannot overflow
    assert_eq!(
        aggregate_weighted(&typed_sum("INTEGER"), "TERMS"),
        format!("{head}SUM(CAST({v} AS HUGEINT) * {w}) AS \"openivm_a0_sum\", {nn}{tail}")
    );
    // HUGEINT: rows of positive and negative weight apart, never a negated value
    assert_eq!(
        aggregate_weighted(&typed_sum("HUGEINT"), "TERMS"),
        format!(
            "{head}SUM(CASE WHEN {w} > 0 THEN {v} * {w} END) AS \"openivm_a0_sum\", \
             SUM(CASE WHEN {w} < 0 THEN {v} * (-{w}) END) AS \"openivm_a0_sub\", {nn}{tail}"
        )
    );
    // DOUBLE: finite inputs summed, +inf / -inf / NaN counted
    let d = format!("CAST({v} AS DOUBLE)");
    assert_eq!(
        aggregate_weighted(&typed_sum("DOUBLE"), "TERMS"),
        format!(
            "{head}SUM(CASE WHEN isfinite({d}) THEN {d} * {w} END) AS \"openivm_a0_sum\", \
             CAST(COALESCE(SUM(CASE WHEN {d} = CAST('inf' AS DOUBLE) THEN {w} ELSE 0 END), 0) AS BIGINT) AS \"openivm_a0_pinf\", \
             CAST(COALESCE(SUM(CASE WHEN {d} = CAST('-inf' AS DOUBLE) THEN {w} ELSE 0 END), 0) AS BIGINT) AS \"openivm_a0_ninf\", \
             CAST(COALESCE(SUM(CASE WHEN isnan({d}) THEN {w} ELSE 0 END), 0) AS BIGINT) AS \"openivm_a0_nan\", {nn}{tail}"
        )
    );
    assert_eq!(
        aggregate_weighted(&typed_sum("DECIMAL(38,2)"), "TERMS"),
        format!("{head}SUM({v} * {w}) AS \"openivm_a0_sum\", {nn}{tail}")
    );

    // the merge: DECIMAL sums past 38 digits through list_sum, HUGEINT sums subtract first
    let data = Qualified { catalog: "db".into(), schema: "main".into(), name: "d".into() };
    let merge = apply_view_delta(Storage::DuckDb, &typed_sum("DECIMAL(38,2)"), &data, "DELTA", None).join("; ");
    assert!(
        merge.contains("\"openivm_a0_sum\" = list_sum([openivm_t.\"openivm_a0_sum\", openivm_d.\"openivm_a0_sum\"])")
    );
    let merge = apply_view_delta(Storage::DuckDb, &typed_sum("HUGEINT"), &data, "DELTA", None).join("; ");
    assert!(merge.contains(
        "\"openivm_a0_sum\" = (COALESCE(openivm_t.\"openivm_a0_sum\", 0) - COALESCE(openivm_d.\"openivm_a0_sub\", 0)) \
         + COALESCE(openivm_d.\"openivm_a0_sum\", 0)"
    ));
    // a new group subtracts its rows of negative weight too (TRY: matched rows compute it as well)
    assert!(merge.contains(
        "VALUES (openivm_d.\"openivm_g0\", openivm_d.\"openivm_count\", CASE WHEN openivm_d.\"openivm_a0_sub\" IS NULL \
         THEN openivm_d.\"openivm_a0_sum\" ELSE TRY(COALESCE(openivm_d.\"openivm_a0_sum\", 0) - openivm_d.\"openivm_a0_sub\") END, "
    ));
    let merge = apply_view_delta(Storage::DuckDb, &typed_sum("DOUBLE"), &data, "DELTA", None).join("; ");
    for c in ["pinf", "ninf", "nan"] {
        assert!(merge.contains(&format!(
            "\"openivm_a0_{c}\" = COALESCE(openivm_t.\"openivm_a0_{c}\", 0) + COALESCE(openivm_d.\"openivm_a0_{c}\", 0)"
        )));
    }

    // the visible view finalizes a DOUBLE sum as DuckDB's addition would
    let outputs = vec![
        OutputColumn { name: "name".into(), ty: "VARCHAR".into(), collation: None },
        OutputColumn { name: "total".into(), ty: "DOUBLE".into(), collation: None },
    ];
    let view = visible_view(&typed_sum("DOUBLE"), &data, &outputs, &[SumKind::Float], None);
    assert!(view.contains(
        "CASE WHEN \"openivm_a0_nn\" = 0 THEN NULL ELSE (CASE WHEN \"openivm_a0_nan\" > 0 THEN CAST('nan' AS DOUBLE) \
         WHEN \"openivm_a0_pinf\" > 0 AND \"openivm_a0_ninf\" > 0 THEN CAST('inf' AS DOUBLE) + CAST('-inf' AS DOUBLE) \
         WHEN \"openivm_a0_pinf\" > 0 THEN COALESCE(\"openivm_a0_sum\", 0) + CAST('inf' AS DOUBLE) \
         WHEN \"openivm_a0_ninf\" > 0 THEN COALESCE(\"openivm_a0_sum\", 0) + CAST('-inf' AS DOUBLE) \
         ELSE \"openivm_a0_sum\" END) END AS \"openivm_a0\""
    ), "{view}");
    assert_eq!(SumInput::of(Some("UBIGINT")), SumInput::Integer);
    assert_eq!(SumInput::of(Some("UHUGEINT")), SumInput::Float);
    assert_eq!(SumInput::of(Some("DECIMAL(18,4)")), SumInput::Decimal);
    assert_eq!(SumInput::of(Some("INTERVAL")), SumInput::Other);
    assert_eq!(SumInput::of(None), SumInput::Other);
}

#[test]
fn finalizes_aggregates_in_the_visible_view() {
    let q = bind(star_select(), &TestCatalog::star()).unwrap();
    let data = Qualified { catalog: "db".into(), schema: "openivm".into(), name: "data_main_v".into() };
    let outputs = vec![
        OutputColumn { name: "name".into(), ty: "VARCHAR".into(), collation: None },
        OutputColumn { name: "total".into(), ty: "HUGEINT".into(), collation: None },
    ];
    assert_eq!(
        visible_view(&q, &data, &outputs, &[SumKind::Integer], None),
        "SELECT CAST(\"openivm_g0\" AS VARCHAR) AS \"name\", CAST(\"openivm_a0\" AS HUGEINT) AS \"total\" \
         FROM (SELECT \"openivm_g0\", CASE WHEN \"openivm_a0_nn\" = 0 THEN NULL ELSE \"openivm_a0_sum\" END AS \"openivm_a0\" \
         FROM \"openivm\".\"data_main_v\") AS openivm_r"
    );
    // The values are tested on data (test/sql/aggregates/avg.test); here the shape: a guard for
    // sums beyond 38 digits, one division below 2^53, and the sum's magnitude above.
    let unscaled = "(CAST(trunc(s) AS HUGEINT) * 100 + CAST((s - trunc(s)) * 100 AS HUGEINT))";
    let avg = exact_average("s", "n", SumKind::Decimal(2), AvgRule::Exact);
    assert!(avg.starts_with(&format!(
        "CASE WHEN n = 0 THEN NULL WHEN abs(CAST(s AS DOUBLE)) >= 1e36 THEN CAST(s AS DOUBLE) / n \
         WHEN {unscaled} BETWEEN -9007199254740991 AND 9007199254740991 \
         OR {unscaled} = -170141183460469231731687303715884105728 THEN CAST({unscaled} AS DOUBLE) / CAST((CAST(n AS HUGEINT) * 100) AS DOUBLE) ELSE sign({unscaled}) * "
    )));
    assert!(!avg.contains(&format!("CAST({unscaled} //")));
    // a DECIMAL(38,0) sum, which may hold 39 digits, is never multiplied
    assert!(exact_average("s", "n", SumKind::Decimal(0), AvgRule::Exact)
        .starts_with("CASE WHEN n = 0 THEN NULL WHEN CAST(s AS HUGEINT) BETWEEN"));
    // DuckDB 2 divides the sum cast to DOUBLE, whatever its type
    for kind in [SumKind::Decimal(2), SumKind::Integer, SumKind::Float] {
        assert_eq!(
            exact_average("s", "n", kind, AvgRule::DoubleSum),
            "CASE WHEN n = 0 THEN NULL ELSE CAST(s AS DOUBLE) / n END"
        );
    }
}

/// The merge of a delta keyed by `k` with one summed column `s` into `target`.
fn keyed_merge(target: &Qualified, delete_at_zero: bool, kept_set: Option<i64>, storage: Storage) -> Vec<String> {
    counted_merge(&CountedMerge {
        target,
        source: "SELECT 1",
        keys: &["k".into()],
        matched: None,
        target_count: "openivm_count",
        source_count: "openivm_count",
        summed: &[Summed::added("s".into())],
        delete_at_zero,
        kept_set,
        storage,
    })
}

#[test]
fn merge_handles_null_keys_and_zero_counts() {
    let target = Qualified { catalog: "db".into(), schema: "main".into(), name: "d".into() };
    let sql = keyed_merge(&target, true, None, Storage::DuckDb).join("; ");
    assert!(
        sql.contains("\"openivm_t\".\"k\" IS NOT DISTINCT FROM \"openivm_d\".\"k\"")
            || sql.contains("openivm_t.\"k\" IS NOT DISTINCT FROM openivm_d.\"k\"")
    );
    assert!(sql.contains("THEN DELETE"));
    assert!(sql.contains("WHEN NOT MATCHED AND openivm_d.\"openivm_count\" > 0"));
}

#[test]
fn a_ducklake_target_merges_then_deletes_the_rows_at_zero() {
    let target = Qualified { catalog: "lake".into(), schema: "openivm".into(), name: "d".into() };
    let merge = |delete_at_zero, kept_set| keyed_merge(&target, delete_at_zero, kept_set, Storage::DuckLake);
    // DuckLake's MERGE takes one UPDATE/DELETE action: the update, then a DELETE
    let two = merge(true, None);
    assert_eq!(two.len(), 2, "{two:?}");
    assert!(!two[0].contains("THEN DELETE") && two[0].contains("THEN UPDATE SET"), "{}", two[0]);
    assert_eq!(two[1], "DELETE FROM \"lake\".\"openivm\".\"d\" AS openivm_t WHERE openivm_t.\"openivm_count\" = 0");
    // the empty grouping set's row stays at count 0
    assert!(merge(true, Some(3))[1].ends_with(" = 0 AND openivm_t.\"openivm_gset\" <> 3"));
    // a global aggregate's one row is never deleted
    assert_eq!(merge(false, None).len(), 1);
}
