use super::*;
use crate::ast::{CompareOp, Constant};

#[test]
fn a_chain_of_one_set_operation_lists_its_operands() {
    let q = |name: &str| serde_json::json!({"type": "SELECT_NODE", "name": name});
    let node = |kind: &str, all: bool, left: Value, right: Value| {
        serde_json::json!({"type": "SET_OPERATION_NODE", "setop_type": kind, "setop_all": all,
                           "modifiers": [], "left": left, "right": right})
    };
    // (a INTERSECT b) INTERSECT ALL c
    let abc = node("INTERSECT", true, node("INTERSECT", false, q("a"), q("b")), q("c"));
    let (operands, flags) = chain(serde_json::from_value(abc).unwrap()).unwrap();
    assert_eq!(operands, vec![q("a"), q("b"), q("c")]);
    assert_eq!(flags, vec![false, true]);
    // a EXCEPT (b INTERSECT c): the right side is one operand; another operation on the
    // left is one too
    let nested = node("EXCEPT", false, node("INTERSECT", false, q("a"), q("b")), q("c"));
    let (operands, flags) = chain(serde_json::from_value(nested).unwrap()).unwrap();
    assert_eq!((operands.len(), flags), (2, vec![false]));
}

#[test]
fn grouping_sets_as_positions_or_none_for_one_set_of_all() {
    let sets = |v: serde_json::Value| v.as_array().unwrap().clone();
    assert_eq!(grouping_sets(&sets(serde_json::json!([[0, 1]])), 2).unwrap(), None);
    assert_eq!(grouping_sets(&[], 0).unwrap(), None);
    assert_eq!(
        grouping_sets(&sets(serde_json::json!([[], [0], [1, 0]])), 2).unwrap(),
        Some(vec![vec![], vec![0], vec![0, 1]])
    );
    let twice = grouping_sets(&sets(serde_json::json!([[0], [0], []])), 1).unwrap_err();
    assert!(twice.to_string().contains("list a set twice"), "{twice}");
    assert!(grouping_sets(&sets(serde_json::json!([[3]])), 2).is_err());
}

fn col(parts: &[&str]) -> Expr {
    Expr::Column(parts.iter().map(|s| s.to_string()).collect())
}

#[test]
fn reads_a_grouped_join() {
    // json_serialize_sql('SELECT p.name, SUM(f.amount) AS total FROM f JOIN p ON f.k = p.k GROUP BY p.name'),
    // trimmed to the fields the parser reads.
    let json = r#"{"error":false,"statements":[{"node":{"type":"SELECT_NODE","modifiers":[],
      "cte_map":{"map":[]},
      "select_list":[{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","column_names":["p","name"]},
        {"class":"FUNCTION","type":"FUNCTION","alias":"total","function_name":"sum","schema":"",
         "children":[{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","column_names":["f","amount"]}],
         "filter":null,"order_bys":{"type":"ORDER_MODIFIER","orders":[]},"distinct":false,"is_operator":false,"catalog":""}],
      "from_table":{"type":"JOIN","alias":"","sample":null,
        "left":{"type":"BASE_TABLE","alias":"","sample":null,"schema_name":"","table_name":"f","column_name_alias":[],"catalog_name":"","at_clause":null},
        "right":{"type":"BASE_TABLE","alias":"","sample":null,"schema_name":"","table_name":"p","column_name_alias":[],"catalog_name":"","at_clause":null},
        "condition":{"class":"COMPARISON","type":"COMPARE_EQUAL","alias":"",
           "left":{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","column_names":["f","k"]},
           "right":{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","column_names":["p","k"]}},
        "join_type":"INNER","ref_type":"REGULAR","using_columns":[]},
      "where_clause":null,
      "group_expressions":[{"class":"COLUMN_REF","type":"COLUMN_REF","alias":"","column_names":["p","name"]}],
      "group_sets":[[0]],"aggregate_handling":"STANDARD_HANDLING","having":null,"sample":null,"qualify":null}}]}"#;
    let s = parse_select(json).unwrap();
    assert_eq!(s.items.len(), 2);
    assert_eq!(s.items[1].alias.as_deref(), Some("total"));
    assert_eq!(s.group_by, vec![col(&["p", "name"])]);
    match s.from {
        FromItem::Join { on: Some(Expr::Compare { op: CompareOp::Eq, .. }), .. } => {}
        other => panic!("unexpected FROM {other:?}"),
    }
}

#[test]
fn names_unsupported_constructs() {
    let node = |extra: &str| {
        format!(
            r#"{{"error":false,"statements":[{{"node":{{"type":"SELECT_NODE",{extra}
            "select_list":[{{"class":"COLUMN_REF","type":"COLUMN_REF","column_names":["a"]}}],
            "from_table":{{"type":"BASE_TABLE","table_name":"t"}}}}}}]}}"#
        )
    };
    let err = |extra: &str| parse_select(&node(extra)).unwrap_err().to_string();
    // DISTINCT ON (a) a: one group per a
    let on = r#""modifiers":[{"type":"DISTINCT_MODIFIER","distinct_on_targets":[{"class":"COLUMN_REF","column_names":["a"]}]}],"#;
    let grouped = parse_select(&node(on)).unwrap();
    assert_eq!((grouped.group_by, grouped.presentation.distinct), (vec![col(&["a"])], false));
    assert!(err(r#""modifiers":[{"type":"LIMIT_PERCENT_MODIFIER"}],"#).contains("PERCENT"));
    assert!(err(r#""modifiers":[{"type":"ORDER_MODIFIER"},{"type":"DISTINCT_MODIFIER"}],"#).contains("order"));
    let limit = |n: &str| format!(r#""modifiers":[{{"type":"LIMIT_MODIFIER","limit":{n}}}],"#);
    assert!(err(&limit(r#"{"class":"COLUMN_REF","column_names":["a"]}"#)).contains("integer literal"));
    // DISTINCT, ORDER BY (direction and NULL order as written), LIMIT/OFFSET and HAVING are read
    let json = node(
        r#""modifiers":[{"type":"DISTINCT_MODIFIER","distinct_on_targets":[]},
          {"type":"ORDER_MODIFIER","orders":[{"type":"DESCENDING","null_order":"NULLS FIRST","expression":{"class":"COLUMN_REF","column_names":["a"]}},
                                              {"type":"ORDER_DEFAULT","null_order":"ORDER_DEFAULT","expression":{"class":"COLUMN_REF","column_names":["b"]}}]},
          {"type":"LIMIT_MODIFIER","limit":{"class":"CONSTANT","value":{"type":{"id":"INTEGER"},"value":3}},
           "offset":{"class":"CONSTANT","value":{"type":{"id":"BIGINT"},"value":1}}}],
          "having":{"class":"CONSTANT","type":"VALUE_CONSTANT","value":{"type":{"id":"BOOLEAN"},"value":true}},"#,
    );
    let p = parse_select(&json).unwrap().presentation;
    assert!(p.distinct);
    assert_eq!(p.order_by.len(), 2);
    assert_eq!((p.order_by[0].descending, p.order_by[0].nulls_first), (Some(true), Some(true)));
    assert_eq!((p.order_by[1].descending, p.order_by[1].nulls_first), (None, None));
    assert_eq!((p.limit, p.offset), (Some(3), Some(1)));
    assert_eq!(p.having, Some(Expr::Constant(Constant::Bool(true))));
    let set_op = r#"{"error":false,"statements":[{"node":{"type":"SET_OPERATION_NODE"}}]}"#;
    assert!(parse_select(set_op).unwrap_err().to_string().contains("set operations"));
}

#[test]
fn refuses_what_is_not_one_select() {
    let not_select = r#"{"error":true,"error_type":"not implemented","error_message":"Only SELECT statements can be serialized to json!"}"#;
    let e = parse_select(not_select).unwrap_err().to_string();
    assert!(
        e.starts_with("openivm: a view's query must be one SELECT statement (found a statement other than SELECT"),
        "{e}"
    );
    let two = r#"{"error":false,"statements":[{"node":{"type":"SELECT_NODE"}},{"node":{"type":"SELECT_NODE"}}]}"#;
    assert_eq!(
        parse_select(two).unwrap_err().to_string(),
        "openivm: a view's query must be one SELECT statement (found 2 statements)"
    );
    let none = r#"{"error":false,"statements":[]}"#;
    assert!(parse_select(none).unwrap_err().to_string().contains("(the query is empty)"));
    let syntax = r#"{"error":true,"error_type":"parser","error_message":"syntax error at end of input"}"#;
    assert_eq!(
        parse_select(syntax).unwrap_err().to_string(),
        "openivm: could not parse the view query: syntax error at end of input"
    );
}

#[test]
fn an_inserts_query_is_one_select_of_any_shape() {
    assert!(check_one_select(r#"{"error":false,"statements":[{"node":{"type":"SET_OPERATION_NODE"}}]}"#).is_ok());
    let two = r#"{"error":false,"statements":[{"node":{}},{"node":{}}]}"#;
    assert!(matches!(check_one_select(two), Err(Error::NotOneSelect(m)) if m == "found 2 statements"));
    let other = r#"{"error":true,"error_type":"not implemented","error_message":"Only SELECT statements can be serialized to json!"}"#;
    assert!(matches!(check_one_select(other), Err(Error::NotOneSelect(_))));
    let syntax = r#"{"error":true,"error_type":"parser","error_message":"syntax error at or near \"FORM\""}"#;
    assert!(matches!(check_one_select(syntax), Err(Error::Parse(_))));
}
