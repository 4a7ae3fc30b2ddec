//! The user macros a view query calls, directly or through other macros and the DuckDB views it
//! reads: DuckDB expands them wherever the query runs, so a macro replaced (CREATE OR REPLACE
//! MACRO) would apply its new definition to new rows only. A view records them with their
//! definitions in its signature, and a refresh finds a replaced one stale.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::db::{read_all, typed_row, Sql};
use crate::error::Result;
use crate::sql::catalog::{PARSE_TREE, USER_MACROS};

typed_row! {
    /// A user macro (one overload) as `duckdb_functions()` defines it (a row of
    /// `sql/catalog/user_macros.sql`).
    #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
    pub struct Macro {
        pub schema: String,
        #[serde(rename = "macro")]
        pub name: String,
        /// 'macro' or 'table_macro'.
        pub kind: String,
        pub parameters: String,
        pub definition: String,
    }
}

impl Macro {
    /// The SQL its definition holds, as a statement DuckDB parses (a scalar macro's expression
    /// selected, a table macro's query).
    fn body(&self) -> String {
        if self.kind == "table_macro" {
            self.definition.clone()
        } else {
            format!("SELECT {}", self.definition)
        }
    }
}

/// Every user macro of the attached databases (one read of `duckdb_functions()`).
pub fn all(db: &dyn Sql) -> Result<Vec<Macro>> {
    read_all(&USER_MACROS.rows(db, [])?)
}

/// The user macros the query (its parse tree, JSON) and the DuckDB views' definitions `sources`
/// call, with those their definitions call in turn: sorted, each once.
pub fn called(db: &dyn Sql, tree: &str, sources: &[&str]) -> Result<Vec<Macro>> {
    let user = all(db)?;
    if user.is_empty() {
        return Ok(vec![]);
    }
    let mut calls = BTreeSet::new();
    function_calls(&serde_json::from_str(tree).unwrap_or(Value::Null), &mut calls);
    for sql in sources {
        parsed_calls(db, sql, &mut calls)?;
    }
    let mut found: BTreeSet<&Macro> = BTreeSet::new();
    loop {
        let new: Vec<&Macro> = user.iter().filter(|m| !found.contains(m) && calls.iter().any(|c| c.names(m))).collect();
        if new.is_empty() {
            return Ok(found.into_iter().cloned().collect());
        }
        for m in new {
            found.insert(m);
            parsed_calls(db, &m.body(), &mut calls)?;
        }
    }
}

/// A function call in a parse tree: its schema as written ('' when not) and its name.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Call {
    schema: String,
    name: String,
}

impl Call {
    /// Whether the call may resolve to `m` (an unqualified name to the macro of any schema).
    fn names(&self, m: &Macro) -> bool {
        self.name.eq_ignore_ascii_case(&m.name)
            && (self.schema.is_empty() || self.schema.eq_ignore_ascii_case(&m.schema))
    }
}

/// The calls of a statement's parse tree (one a macro's body may hold that DuckDB cannot parse
/// on its own adds none).
fn parsed_calls(db: &dyn Sql, sql: &str, calls: &mut BTreeSet<Call>) -> Result<()> {
    if let Some(json) = PARSE_TREE.scalar(db, [sql])? {
        function_calls(&serde_json::from_str(&json).unwrap_or(Value::Null), calls);
    }
    Ok(())
}

/// Every function call of a parse tree: scalar, aggregate and window functions and table
/// functions in FROM all carry a `function_name`.
fn function_calls(v: &Value, calls: &mut BTreeSet<Call>) {
    match v {
        Value::Object(o) => {
            if let Some(Value::String(name)) = o.get("function_name") {
                let schema = o.get("schema").and_then(Value::as_str).unwrap_or_default();
                calls.insert(Call { schema: schema.to_string(), name: name.clone() });
            }
            o.values().for_each(|x| function_calls(x, calls));
        }
        Value::Array(a) => a.iter().for_each(|x| function_calls(x, calls)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_found_anywhere_in_the_tree_with_their_schema() {
        let tree = r#"{"statements":[{"node":{"select_list":[{"class":"FUNCTION","function_name":"dbl","schema":"s",
            "children":[{"class":"FUNCTION","function_name":"abs","schema":""}]}],
            "from_table":{"type":"TABLE_FUNCTION","function":{"function_name":"tm","schema":""}}}}]}"#;
        let mut calls = BTreeSet::new();
        function_calls(&serde_json::from_str(tree).unwrap(), &mut calls);
        let names: Vec<(&str, &str)> = calls.iter().map(|c| (c.schema.as_str(), c.name.as_str())).collect();
        assert_eq!(names, [("", "abs"), ("", "tm"), ("s", "dbl")]);
        let m = |schema: &str| Macro {
            schema: schema.into(),
            name: "DBL".into(),
            kind: "macro".into(),
            parameters: "x".into(),
            definition: "(x * 2)".into(),
        };
        assert!(calls.iter().any(|c| c.names(&m("s"))));
        assert!(!calls.iter().any(|c| c.names(&m("main"))));
    }

    #[test]
    fn a_body_is_a_statement_duckdb_parses() {
        let m = |kind: &str, def: &str| Macro {
            schema: "main".into(),
            name: "m".into(),
            kind: kind.into(),
            parameters: String::new(),
            definition: def.into(),
        };
        assert_eq!(m("macro", "(x * y)").body(), "SELECT (x * y)");
        assert_eq!(m("table_macro", "SELECT a FROM t").body(), "SELECT a FROM t");
    }
}
