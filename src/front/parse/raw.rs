//! The nodes of DuckDB's parse tree (the JSON of `json_serialize_sql`) as serde structs that
//! mirror its serializer, and helpers for the JSON of statements handed back to DuckDB.

use serde::Deserialize;
use serde_json::Value;

use crate::error::{Error, Result};

#[derive(Deserialize)]
pub(crate) struct RawParse {
    #[serde(default)]
    pub(crate) error: bool,
    #[serde(default)]
    pub(crate) error_type: String,
    #[serde(default)]
    pub(crate) error_message: String,
    #[serde(default)]
    pub(crate) statements: Vec<RawStatement>,
}

#[derive(Deserialize, Default)]
pub(crate) struct RawStatement {
    pub(crate) node: RawNode,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct RawNode {
    #[serde(rename = "type")]
    pub(crate) kind: String,
    pub(crate) modifiers: Vec<RawModifier>,
    pub(crate) cte_map: RawCteMap,
    pub(crate) select_list: Vec<RawExpr>,
    pub(crate) from_table: Option<RawTableRef>,
    pub(crate) where_clause: Option<RawExpr>,
    pub(crate) group_expressions: Vec<RawExpr>,
    pub(crate) group_sets: Vec<Value>,
    pub(crate) aggregate_handling: String,
    pub(crate) having: Option<RawExpr>,
    pub(crate) sample: Option<Value>,
    pub(crate) qualify: Option<RawExpr>,
    /// SET_OPERATION_NODE: the operation, whether ALL, and the two sides (query nodes).
    pub(crate) setop_type: String,
    pub(crate) setop_all: bool,
    pub(crate) left: Option<Value>,
    pub(crate) right: Option<Value>,
    /// DuckDB 2.0 writes the sides of a set operation here instead (two or more).
    pub(crate) children: Vec<Value>,
}

impl RawNode {
    /// The sides of a set operation node, in order: `left` and `right` (DuckDB 1.5), or
    /// `children` (DuckDB 2.0).
    pub(crate) fn sides(&mut self) -> Result<Vec<Value>> {
        let sides = match (self.left.take(), self.right.take()) {
            (Some(l), Some(r)) => vec![l, r],
            _ => std::mem::take(&mut self.children),
        };
        if sides.len() < 2 {
            return Err(Error::Parse("a set operation without two sides".into()));
        }
        Ok(sides)
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct RawModifier {
    #[serde(rename = "type")]
    pub(crate) kind: String,
    pub(crate) distinct_on_targets: Vec<Value>,
    pub(crate) orders: Vec<RawOrder>,
    pub(crate) limit: Option<RawExpr>,
    pub(crate) offset: Option<RawExpr>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(default)]
pub(crate) struct RawOrder {
    #[serde(rename = "type")]
    pub(crate) kind: String,
    pub(crate) null_order: String,
    pub(crate) expression: RawExpr,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct RawCteMap {
    pub(crate) map: Vec<RawCte>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct RawCte {
    pub(crate) key: String,
    pub(crate) value: RawCteValue,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct RawCteValue {
    pub(crate) aliases: Vec<String>,
    /// A statement (`RawStatement`), kept as JSON to be handed back to DuckDB for a stage.
    pub(crate) query: Option<Value>,
    /// DuckDB 2.0 writes the query node itself here instead.
    pub(crate) query_node: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct RawTableRef {
    #[serde(rename = "type")]
    pub(crate) kind: String,
    pub(crate) alias: String,
    pub(crate) sample: Option<Value>,
    pub(crate) table_name: String,
    pub(crate) schema_name: String,
    pub(crate) catalog_name: String,
    pub(crate) column_name_alias: Vec<String>,
    pub(crate) at_clause: Option<Value>,
    /// A statement (`RawStatement`), kept as JSON to be handed back to DuckDB for a stage.
    pub(crate) subquery: Option<Value>,
    pub(crate) left: Option<Box<RawTableRef>>,
    pub(crate) right: Option<Box<RawTableRef>>,
    pub(crate) condition: Option<RawExpr>,
    pub(crate) join_type: String,
    pub(crate) ref_type: String,
    pub(crate) using_columns: Vec<String>,
    /// EXPRESSION_LIST (`VALUES`): the rows' expressions.
    pub(crate) values: Vec<Vec<RawExpr>>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(default)]
pub(crate) struct RawExpr {
    pub(crate) class: String,
    #[serde(rename = "type")]
    pub(crate) kind: String,
    pub(crate) alias: String,
    pub(crate) column_names: Vec<String>,
    pub(crate) function_name: String,
    pub(crate) schema: String,
    pub(crate) catalog: String,
    pub(crate) children: Vec<RawExpr>,
    /// DuckDB 2.0 writes a function's arguments here (with optional names) instead of `children`.
    pub(crate) arguments: Vec<RawArgument>,
    pub(crate) distinct: bool,
    pub(crate) is_operator: bool,
    pub(crate) filter: Option<Box<RawExpr>>,
    pub(crate) order_bys: Option<RawOrders>,
    pub(crate) left: Option<Box<RawExpr>>,
    pub(crate) right: Option<Box<RawExpr>>,
    pub(crate) value: Option<RawValue>,
    /// DuckDB 2.0 writes constants as literal text with a kind instead of a typed `value`.
    pub(crate) literal: Option<RawLiteral>,
    pub(crate) case_checks: Vec<RawCaseCheck>,
    pub(crate) else_expr: Option<Box<RawExpr>>,
    pub(crate) child: Option<Box<RawExpr>>,
    pub(crate) cast_type: Option<RawType>,
    /// DuckDB 2.0 names a cast's type as an expression: `type_name` and parameter `children`.
    pub(crate) type_expr: Option<Box<RawExpr>>,
    pub(crate) type_name: String,
    pub(crate) try_cast: bool,
    pub(crate) input: Option<Box<RawExpr>>,
    pub(crate) lower: Option<Box<RawExpr>>,
    pub(crate) upper: Option<Box<RawExpr>>,
    pub(crate) relation_name: String,
    pub(crate) exclude_list: Vec<Value>,
    pub(crate) replace_list: Value,
    pub(crate) rename_list: Value,
    pub(crate) columns: bool,
    pub(crate) expr: Option<Value>,
    pub(crate) unpacked: bool,
    /// SUBQUERY expressions: the statement, its kind (ANY for IN) and comparison.
    pub(crate) subquery: Option<Value>,
    pub(crate) subquery_type: String,
    pub(crate) comparison_type: String,
}

#[derive(Deserialize, Default, Clone)]
#[serde(default)]
pub(crate) struct RawArgument {
    pub(crate) name: String,
    pub(crate) expression: RawExpr,
}

#[derive(Deserialize, Default, Clone)]
#[serde(default)]
pub(crate) struct RawOrders {
    pub(crate) orders: Vec<RawOrder>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(default)]
pub(crate) struct RawCaseCheck {
    pub(crate) when_expr: RawExpr,
    pub(crate) then_expr: RawExpr,
}

#[derive(Deserialize, Default, Clone)]
#[serde(default)]
pub(crate) struct RawValue {
    #[serde(rename = "type")]
    pub(crate) ty: RawType,
    pub(crate) is_null: bool,
    pub(crate) value: Value,
}

#[derive(Deserialize, Default, Clone)]
#[serde(default)]
pub(crate) struct RawLiteral {
    pub(crate) kind: String,
    pub(crate) text: String,
}

#[derive(Deserialize, Default, Clone)]
#[serde(default)]
pub(crate) struct RawType {
    pub(crate) id: String,
    pub(crate) type_info: Option<Value>,
}

/// A statement's JSON as a parse tree `json_deserialize_sql` reads back.
pub(crate) fn statement_tree(statement: &Value) -> String {
    serde_json::json!({"error": false, "statements": [statement]}).to_string()
}

/// A statement read from its JSON.
pub(crate) fn statement(v: Value) -> Result<RawStatement> {
    serde_json::from_value(v).map_err(|e| Error::Parse(format!("DuckDB's parse tree could not be read ({e})")))
}

/// A query node (a side of a set operation) read from its JSON.
pub(crate) fn query_node(v: Value) -> Result<RawNode> {
    serde_json::from_value(v).map_err(|e| Error::Parse(format!("DuckDB's parse tree could not be read ({e})")))
}

/// Whether a JSON value is absent or an empty list.
pub(crate) fn empty(v: &Value) -> bool {
    v.is_null() || v.as_array().is_some_and(|a| a.is_empty())
}

/// An expression's JSON with an alias.
pub(crate) fn aliased(column: &Value, alias: &str) -> Value {
    let mut c = column.clone();
    c["alias"] = Value::String(alias.to_string());
    c
}
