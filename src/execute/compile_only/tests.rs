use super::*;
use crate::ast::{Compared, Constant, Expr, FromItem, SelectItem, UnionBranch};
use crate::front::bind::bind;
use crate::front::bind::tests::{col, eq, join, star_select, table, TestCatalog};
use crate::plan::terms::{self as plan, Mask};
use serde_json::json;

fn star() -> ViewQuery {
    bind(star_select(), &TestCatalog::star()).unwrap()
}

fn facts(text: &str) -> Resolved {
    resolve(&star(), &parse_facts(text).unwrap(), &|n| Ok(n == "elsewhere")).unwrap()
}

/// `SELECT <items> FROM <from> [WHERE <filter>]`, a branch of a set operation on `side`.
fn branch(items: &[(Expr, &str)], from: FromItem, filter: Option<Expr>, side: u8) -> UnionBranch {
    let mut select = star_select();
    select.items = items.iter().map(|(e, a)| SelectItem { expr: e.clone(), alias: Some(a.to_string()) }).collect();
    select.from = from;
    select.where_clause = filter;
    select.group_by = vec![];
    UnionBranch { select, tree: String::new(), side }
}

/// `SELECT u.k, u.n FROM (<branches>) u`: a top-level set operation.
fn set_operation(branches: Vec<UnionBranch>, compared: Option<Compared>) -> ViewQuery {
    let mut s = star_select();
    s.items = ["k", "n"].iter().map(|c| SelectItem { expr: col("u", c), alias: None }).collect();
    s.from = FromItem::Union { branches, alias: "u".into(), columns: vec![], compared };
    s.group_by = vec![];
    bind(s, &TestCatalog::star()).unwrap()
}

/// `SELECT f.pid AS k, p.name AS n FROM fact f JOIN product p ON f.pid = p.pid UNION ALL
/// SELECT p.pid, p.name FROM product p`: a 2-leaf join (leaves 0, 1) and a 1-leaf branch (2).
fn join_union_dimension() -> ViewQuery {
    let joined = join(table("fact", "f"), table("product", "p"), eq(col("f", "pid"), col("p", "pid")));
    set_operation(
        vec![
            branch(&[(col("f", "pid"), "k"), (col("p", "name"), "n")], joined, None, 0),
            branch(&[(col("p", "pid"), "k"), (col("p", "name"), "n")], table("product", "p"), None, 0),
        ],
        None,
    )
}

/// `SELECT id AS k, sid AS n FROM fact f WHERE f.pid = 1 <op> SELECT id, pid FROM fact f
/// WHERE f.sid = 1`: one table in both branches.
fn fact_twice(compared: Option<Compared>) -> ViewQuery {
    let is_1 = |c: &str| Some(eq(col("f", c), Expr::Constant(Constant::Integer(1))));
    set_operation(
        vec![
            branch(&[(col("f", "id"), "k"), (col("f", "sid"), "n")], table("fact", "f"), is_1("pid"), 0),
            branch(&[(col("f", "id"), "k"), (col("f", "pid"), "n")], table("fact", "f"), is_1("sid"), 1),
        ],
        compared,
    )
}

fn resolved(q: &ViewQuery, text: &str) -> Resolved {
    resolve(q, &parse_facts(text).unwrap(), &|_| Ok(false)).unwrap()
}

fn data() -> Qualified {
    Qualified { catalog: "memory".into(), schema: "main".into(), name: "openivm_data_v".into() }
}

#[test]
fn a_set_operation_always_takes_inclusion_exclusion() {
    // branches of 2 and 1 leaves: leaves 0, 1 in branch 0, leaf 2 in branch 1
    let spans = [(0, 2), (2, 1)];
    assert_eq!((0..3).map(|i| leaf_branch(&spans, i)).collect::<Vec<_>>(), vec![0, 0, 1]);
    let c = branch_counts(&spans, &plan::plan_spans(&spans, 0b100, 0b010));
    assert_eq!((c[0].total, c[0].run, c[0].fk_pruned), (3, 1, 2));
    assert_eq!((c[1].total, c[1].empty_skipped), (1, 1));
}

#[test]
fn a_union_has_three_plus_one_terms_and_prunes_within_its_branch() {
    let q = join_union_dimension();
    assert_eq!(q.spans(), vec![(0, 2), (2, 1)]);
    // Nothing known: all 3 + 1 terms run, inclusion-exclusion all the same.
    let dec = decide(&q, &resolved(&q, "{}"));
    assert_eq!(dec.program.rule, Rule::InclusionExclusion);
    assert!(dec.program.why.starts_with("a set operation: inclusion-exclusion per branch"), "{}", dec.program.why);
    assert!(dec.program.nterm.is_empty());
    let masks: Vec<(Mask, i32)> = dec.program.inclusion_exclusion.iter().map(|(t, _)| (t.mask, t.sign)).collect();
    assert_eq!(masks, vec![(0b001, 1), (0b010, 1), (0b011, -1), (0b100, 1)]);
    assert!(dec.program.inclusion_exclusion.iter().all(|(_, s)| *s == TermStatus::Run));
    // The FK fact -> product, product insert-only: branch 0 proves it and prunes its terms
    // with Δp (0b010, 0b011); branch 1 has no fact leaf, so its Δp term runs.
    let fk = r#"{"fk_relations": [{"child_table": "fact", "child_columns": "pid", "parent_table": "product",
                 "parent_columns": "pid"}], "delta_shape": {"product": "INSERT_ONLY"}}"#;
    let dec = decide(&q, &resolved(&q, fk));
    assert_eq!(dec.proven.len(), 1);
    assert_eq!((dec.proven[0].child_leaf, dec.proven[0].parent_leaf), (0, 1));
    assert_eq!(dec.fk_bits, 0b010);
    let statuses: Vec<TermStatus> = dec.program.inclusion_exclusion.iter().map(|(_, s)| *s).collect();
    assert_eq!(statuses, vec![TermStatus::Run, TermStatus::FkPruned, TermStatus::FkPruned, TermStatus::Run]);
    let doc = facts_document(Dialect::DuckDb, &q, &data(), &dec);
    assert_eq!(doc["rule"], "inclusion_exclusion");
    let kept: Vec<(u64, u64)> = doc["terms_kept"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["mask"].as_u64().unwrap(), t["branch"].as_u64().unwrap()))
        .collect();
    assert_eq!(kept, vec![(0b001, 0), (0b100, 1)]);
    assert_eq!(doc["terms_pruned"][0]["branch"], 0);
    assert_eq!(doc["leaves"][2]["branch"], 1);
    assert_eq!(doc["leaves"][2]["delta_relation"], "delta_product");
    assert_eq!(doc["fk_relations"]["proven"][0]["branch"], 0);
    assert_eq!(doc["branches"][0]["terms_fk_pruned"], 2);
    assert_eq!(doc["branches"][1]["leaves"], json!(["p"]));
    assert!(doc["branches"][1].get("side").is_none());
    // A single join's row has no branch fields.
    let single = facts_document(Dialect::DuckDb, &star(), &data(), &decide(&star(), &facts("{}")));
    assert!(single.get("branches").is_none() && single["leaves"][0].get("branch").is_none());
}

#[test]
fn a_union_renders_each_branch_over_the_one_delta_of_its_tables() {
    let q = join_union_dimension();
    let dec = decide(&q, &resolved(&q, "{}"));
    let terms = term_selects(Dialect::DuckDb, &q, &dec, &rc::delta_relations(&q.tables()));
    assert_eq!(terms.len(), 4);
    // Δp of branch 0 and of branch 1: the same relation.
    assert!(terms[1].contains("FROM \"memory\".\"main\".\"fact\" AS \"f\", \"delta_product\" AS \"p\""));
    assert!(terms[3].contains("FROM \"delta_product\" AS \"p\""), "{}", terms[3]);
    assert!(!terms[3].contains("\"f\""));
    // One table in both branches: one delta relation, read by each branch's term.
    let q = fact_twice(None);
    assert_eq!(rc::delta_relations(&q.tables()), vec!["delta_fact"]);
    let dec = decide(&q, &resolved(&q, "{}"));
    let terms = term_selects(Dialect::DuckDb, &q, &dec, &rc::delta_relations(&q.tables()));
    assert_eq!(terms.len(), 2);
    assert!(terms.iter().all(|t| t.contains("FROM \"delta_fact\" AS \"f\"")));
    assert!(terms[0].contains("\"pid\" = 1") && terms[1].contains("\"sid\" = 1"));
    // An UNCHANGED fact leaves nothing to run in either branch.
    let none = decide(&q, &resolved(&q, r#"{"delta_shape": {"fact": "UNCHANGED"}}"#));
    assert!(program(Dialect::DuckDb, &q, &data(), &none).is_empty());
}

#[test]
fn an_except_all_tags_each_branch_with_its_side_in_both_dialects() {
    let q = fact_twice(Some(Compared::Except { all: true }));
    let dec = decide(&q, &resolved(&q, r#"{"assume_insert_only": true}"#));
    let p = program(Dialect::DuckDb, &q, &data(), &dec);
    assert_eq!(p.len(), 1);
    assert!(p[0].sql.contains("0 AS \"openivm_side\"") && p[0].sql.contains("1 AS \"openivm_side\""));
    assert!(p[0].sql.contains("\"openivm_c1\""));
    let s = program(Dialect::Spark, &q, &data(), &dec);
    assert!(s[0].sql.starts_with("MERGE INTO `memory`.`main`.`openivm_data_v` AS openivm_t"), "{}", s[0].sql);
    assert!(s[0].sql.contains("FROM `delta_fact` AS `f`"));
    assert!(s[0].sql.contains("1 AS `openivm_side`") && s[0].sql.contains(" UNION ALL "));
    assert!(!s[0].sql.contains('"'));
    let doc = facts_document(Dialect::Spark, &q, &data(), &dec);
    assert_eq!(doc["branches"][1]["side"], 1);
    assert_eq!(doc["dialect"], "spark");
}

#[test]
fn a_collated_except_counts_a_values_spellings_together_and_its_rows_are_not_local() {
    use crate::render::OutputColumn;
    let mut q = fact_twice(Some(Compared::Except { all: true }));
    assert!(q.shows_rows_locally());
    let types = [("INTEGER".to_string(), None), ("VARCHAR".to_string(), Some("NOCASE".to_string()))];
    q.set_output_types(&types, &|_| false);
    // 'a' and 'A' are two stored rows: one's copies depend on the other's counts.
    assert!(!q.shows_rows_locally());
    let outputs: Vec<OutputColumn> = ["k", "n"]
        .iter()
        .zip(&types)
        .map(|(n, (ty, collation))| OutputColumn { name: n.to_string(), ty: ty.clone(), collation: collation.clone() })
        .collect();
    let sql = crate::render::visible_rows(&q, "stored", &outputs, &[], None);
    assert!(sql.contains("sum(\"openivm_c1\") OVER openivm_w AS openivm_total1"), "{sql}");
    assert!(sql.contains("WINDOW openivm_w AS (PARTITION BY \"openivm_g0\", \"openivm_g1\")"), "{sql}");
}

#[test]
fn a_union_renders_in_spark() {
    let q = join_union_dimension();
    let dec = decide(&q, &resolved(&q, r#"{"delta_shape": {"fact": "UNCHANGED"}}"#));
    let s = program(Dialect::Spark, &q, &data(), &dec);
    assert_eq!(s.len(), 1);
    let sql = &s[0].sql;
    assert!(
        sql.contains(
            "SELECT `f`.`pid` AS `openivm_g0`, `p`.`name` AS `openivm_g1`, (1 * `p`.`openivm_multiplicity`) AS \
         `openivm_weight` FROM `memory`.`main`.`fact` AS `f`, `delta_product` AS `p` WHERE (`f`.`pid` = `p`.`pid`)"
        ),
        "{sql}"
    );
    assert!(
        sql.contains(
            "UNION ALL SELECT `p`.`pid` AS `openivm_g0`, `p`.`name` AS `openivm_g1`, (1 * `p`.`openivm_multiplicity`) \
         AS `openivm_weight` FROM `delta_product` AS `p` WHERE TRUE"
        ),
        "{sql}"
    );
    assert!(sql.contains("openivm_t.`openivm_g0` <=> openivm_d.`openivm_g0`"));
    assert!(!sql.contains('"'));
}

#[test]
fn parses_facts_and_ignores_unknown_fields() {
    let f = parse_facts(
        r#"{"fk_relations": [{"child_table": "fact", "child_columns": ["pid"], "parent_table": "product",
            "parent_columns": "pid"}], "delta_shape": {"store": "unchanged"}, "extra": 1}"#,
    )
    .unwrap();
    assert_eq!(f.fks.len(), 1);
    assert_eq!(f.fks[0].parent_columns, vec!["pid"]);
    assert_eq!(f.shapes, vec![("store".to_string(), ShapeFact::Unchanged)]);
    assert!(!f.assume_insert_only);
    assert_eq!(parse_facts("{}").unwrap().fks, vec![]);
}

#[test]
fn refuses_malformed_facts() {
    for bad in [
        "{",
        "[]",
        r#"{"delta_shape": {"fact": "SOMETIMES"}}"#,
        r#"{"assume_insert_only": "yes"}"#,
        r#"{"fk_relations": [{"child_table": "fact"}]}"#,
        r#"{"fk_relations": [{"child_table": "fact", "child_columns": ["pid", "sid"], "parent_table": "product", "parent_columns": ["pid"]}]}"#,
        r#"{"fk_relations": [{"child_table": "fact", "child_columns": [], "parent_table": "product", "parent_columns": []}]}"#,
    ] {
        assert!(matches!(parse_facts(bad), Err(Error::InvalidArgument(_))), "{bad}");
    }
    assert!(parse_dialect(Some("oracle")).is_err());
    assert_eq!(parse_dialect(None).unwrap(), Dialect::DuckDb);
}

#[test]
fn resolves_names_against_the_view_tables_only() {
    let q = star();
    let tables = q.tables();
    assert_eq!(resolve_table(&tables, "FACT").unwrap().unwrap().name, "fact");
    assert_eq!(resolve_table(&tables, "main.fact").unwrap().unwrap().name, "fact");
    assert_eq!(resolve_table(&tables, "memory.main.fact").unwrap().unwrap().name, "fact");
    assert_eq!(resolve_table(&tables, "other.fact").unwrap(), None);
    assert_eq!(resolve_table(&tables, "nowhere").unwrap(), None);
    // A table that exists elsewhere is set aside; one that does not exist is an error.
    let r = facts(r#"{"delta_shape": {"elsewhere": "UNCHANGED"}}"#);
    assert_eq!(r.unused.len(), 1);
    assert_eq!(r.shapes, vec![ShapeFact::General; 3]);
    let missing = parse_facts(r#"{"delta_shape": {"nowhere": "UNCHANGED"}}"#).unwrap();
    assert!(resolve(&q, &missing, &|_| Ok(false)).is_err());
    let unknown_column = parse_facts(
        r#"{"fk_relations": [{"child_table": "fact", "child_columns": "nope", "parent_table": "product", "parent_columns": "pid"}]}"#,
    )
    .unwrap();
    assert!(resolve(&q, &unknown_column, &|_| Ok(true)).is_err());
}

#[test]
fn the_reference_star_prunes_six_of_seven_terms() {
    // F(0) ⋈ D1(1) ⋈ D2(2), both FKs given, both dimensions insert-only: 1 term of 7.
    let r = facts(
        r#"{"fk_relations": [
            {"child_table": "fact", "child_columns": "pid", "parent_table": "product", "parent_columns": "pid"},
            {"child_table": "fact", "child_columns": "sid", "parent_table": "store", "parent_columns": "sid"}],
           "delta_shape": {"product": "INSERT_ONLY", "store": "INSERT_ONLY"}}"#,
    );
    let dec = decide(&star(), &r);
    assert_eq!(dec.program.rule, Rule::InclusionExclusion);
    assert_eq!(dec.fk_bits, 0b110);
    let c = plan::count_terms(&dec.program.inclusion_exclusion);
    assert_eq!((c.total, c.run, c.fk_pruned), (7, 1, 6));
    assert_eq!(dec.program.inclusion_exclusion.iter().find(|(_, s)| *s == TermStatus::Run).unwrap().0.mask, 0b001);
}

#[test]
fn without_pruning_the_n_term_plan_is_chosen() {
    // GENERAL deltas everywhere: nothing pruned, so N-term (3 terms instead of 7).
    let dec = decide(
        &star(),
        &facts(
            r#"{"fk_relations": [{"child_table": "fact", "child_columns": "pid", "parent_table": "product", "parent_columns": "pid"}]}"#,
        ),
    );
    assert_eq!(dec.program.rule, Rule::NTerm);
    assert_eq!(dec.proven.len(), 1);
    assert_eq!(dec.program.nterm.iter().filter(|(_, s)| *s == TermStatus::Run).count(), 3);
    // An unchanged store skips its term in both plans.
    let dec = decide(&star(), &facts(r#"{"delta_shape": {"store": "UNCHANGED"}}"#));
    assert_eq!(dec.empty_bits, 0b100);
    assert_eq!(dec.program.nterm, vec![(0, TermStatus::Run), (1, TermStatus::Run), (2, TermStatus::EmptySkipped)]);
    // assume_insert_only makes every leaf insert-only, so a proven FK prunes: the store's 4
    // inclusion-exclusion terms (3 of 7 run), and its N-term term with the store placed
    // first (2 of 3 run), so the N-term plan is still the smaller one.
    let dec = decide(
        &star(),
        &facts(
            r#"{"assume_insert_only": true, "fk_relations": [{"child_table": "fact", "child_columns": "sid", "parent_table": "store", "parent_columns": "sid"}]}"#,
        ),
    );
    assert_eq!((dec.program.rule, dec.fk_bits, dec.program.order.clone()), (Rule::NTerm, 0b100, vec![1, 2, 0]));
    assert_eq!(dec.program.nterm, vec![(1, TermStatus::Run), (2, TermStatus::FkPruned), (0, TermStatus::Run)]);
    // Both dimensions referenced and insert-only: inclusion-exclusion runs the fact's term
    // alone, as the N-term plan does; the tie keeps inclusion-exclusion.
    let dec = decide(
        &star(),
        &facts(
            r#"{"assume_insert_only": true, "fk_relations": [{"child_table": "fact", "child_columns": "sid", "parent_table": "store", "parent_columns": "sid"}, {"child_table": "fact", "child_columns": "pid", "parent_table": "product", "parent_columns": "pid"}]}"#,
        ),
    );
    assert_eq!(
        (dec.program.rule, plan::count_terms(&dec.program.inclusion_exclusion).run),
        (Rule::InclusionExclusion, 1)
    );
}

#[test]
fn a_fact_fk_the_join_does_not_prove_is_rejected_with_why() {
    let dec = decide(
        &star(),
        &facts(
            r#"{"assume_insert_only": true, "fk_relations": [
            {"child_table": "fact", "child_columns": "id", "parent_table": "product", "parent_columns": "pid"},
            {"child_table": "fact", "child_columns": "pid", "parent_table": "fact", "parent_columns": "id"}]}"#,
        ),
    );
    assert!(dec.proven.is_empty());
    assert_eq!(dec.rejected.len(), 2);
    assert!(dec.rejected[0].1.contains("do not equate"));
    assert!(dec.rejected[1].1.starts_with("self-referencing"));
    assert_eq!(dec.program.rule, Rule::NTerm);
}

#[test]
fn n_term_states_telescope() {
    let states = |i| crate::plan::nterm::states(&[0, 1, 2], i);
    assert_eq!(states(0), vec![LeafState::Delta, LeafState::Old, LeafState::Old]);
    assert_eq!(states(1), vec![LeafState::New, LeafState::Delta, LeafState::Old]);
    assert_eq!(states(2), vec![LeafState::New, LeafState::New, LeafState::Delta]);
    // Hand-worked: R = {1}, S = {1}; insert 2 into both. Term 0: ΔR{2} ⋈ S_old{1} = ∅;
    // term 1: R_new{1,2} ⋈ ΔS{2} = (2,2) · +1. Sum: +1 row (2,2), the true delta, with no
    // Möbius correction (IE needs three terms for the same).
    let join = |r: &[i32], s: &[i32]| r.iter().filter(|x| s.contains(x)).count();
    assert_eq!(join(&[2], &[1]) + join(&[1, 2], &[2]), 1);
}

#[test]
fn renders_both_rules_in_both_dialects() {
    let q = star();
    let data = Qualified { catalog: "memory".into(), schema: "main".into(), name: "openivm_data_v".into() };
    let dec = decide(&q, &facts(r#"{"delta_shape": {"store": "UNCHANGED"}}"#));
    let p = program(Dialect::DuckDb, &q, &data, &dec);
    assert_eq!(p.len(), 1);
    assert!(p[0].sql.starts_with("MERGE INTO \"memory\".\"main\".\"openivm_data_v\""), "{}", p[0].sql);
    assert!(p[0].sql.contains("\"delta_fact\" AS \"f\""));
    assert!(p[0].sql.contains("EXCEPT ALL SELECT"));
    let s = program(Dialect::Spark, &q, &data, &dec);
    assert!(s[0].sql.starts_with("MERGE INTO `memory`.`main`.`openivm_data_v` AS openivm_t"), "{}", s[0].sql);
    assert!(s[0].sql.contains("openivm_t.`openivm_g0` <=> openivm_d.`openivm_g0`"));
    assert!(!s[0].sql.contains('"'));
    // Nothing changes: no statement.
    let none =
        decide(&q, &facts(r#"{"delta_shape": {"fact": "UNCHANGED", "product": "UNCHANGED", "store": "UNCHANGED"}}"#));
    assert!(program(Dialect::DuckDb, &q, &data, &none).is_empty());
    let doc = facts_document(Dialect::Spark, &q, &data, &none);
    // No term runs in either rule: the tie keeps inclusion-exclusion, all 7 terms skipped.
    assert_eq!(doc["rule"], "inclusion_exclusion");
    assert_eq!(doc["terms_pruned"].as_array().unwrap().len(), 7);
}
