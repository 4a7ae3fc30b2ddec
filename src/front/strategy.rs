//! Strategies: how a view is maintained, and the checks a query must pass to be maintained at
//! all when the incremental rules do not cover it.
//!
//! A query the parser and binder model (`parse`, `bind`) is maintained `incremental`. Any other
//! query that DuckDB can run is maintained `full`: its stored result is recomputed whole in the
//! refresh's transaction. A full query is not modelled; it is read generically from DuckDB's
//! parse tree (`scan`) for what decides whether it may be maintained: the functions it calls
//! (no clock, no chance, no session state) and constructs that read outside the database (table
//! functions, samples, parameters); DuckDB's bound plan of it (`plan_facts`) gives the tables it
//! scans (views and CTEs expanded) and the types of its values (none may carry a time zone).
//! Pure: the parse tree, the plan and the catalog facts come from the caller.

use serde_json::Value;

use crate::ast::TableName;
use crate::error::{Error, Result};
use crate::ir::{AggFunc, Aggregate, Shape, ViewQuery};

/// How a maintained view is refreshed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Delta rules throughout.
    Incremental,
    /// The join is maintained by delta terms, but some aggregate has no delta rule: the groups
    /// a delta touches (the keys of the run terms' rows) are recomputed from the current tables.
    GroupRecompute,
    /// The stored result is recomputed whole at every refresh.
    Full,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Incremental => "incremental",
            Strategy::GroupRecompute => "group_recompute",
            Strategy::Full => "full",
        }
    }

    /// The strategy stored in `openivm_views` (NULL, from before strategies existed: incremental).
    pub fn parse(s: Option<&str>) -> Strategy {
        match s {
            Some("full") => Strategy::Full,
            Some("group_recompute") => Strategy::GroupRecompute,
            _ => Strategy::Incremental,
        }
    }
}

/// The strategy of a query the incremental rules model (it bound), and why when it is not
/// `incremental`: `group_recompute` when an aggregate has no delta rule.
pub fn of_bound(q: &ViewQuery) -> (Strategy, String) {
    let recomputed = q.recomputed_aggregates();
    if recomputed.is_empty() {
        return (Strategy::Incremental, String::new());
    }
    (Strategy::GroupRecompute, format!("no delta rule for {}", aggregate_names(&recomputed)))
}

/// `LIST(), COUNT(DISTINCT)`: each distinct name once, in order.
fn aggregate_names(aggs: &[&Aggregate]) -> String {
    let mut names: Vec<String> = Vec::new();
    for a in aggs {
        let n = a.display();
        if !names.contains(&n) {
            names.push(n);
        }
    }
    names.join(", ")
}

/// What a refresh of a view recomputes per touched group and why, or None when its delta rules
/// cover this refresh: every aggregate without a delta rule, and MIN/MAX when a table had rows
/// deleted or updated (`deletes`).
pub fn recomputed_per_group(q: &ViewQuery, deletes: bool) -> Option<String> {
    let mut parts = Vec::new();
    let recomputed = q.recomputed_aggregates();
    if !recomputed.is_empty() {
        parts.push(format!("{} (no delta rule)", aggregate_names(&recomputed)));
    }
    if deletes && q.has_extrema() {
        let extrema: Vec<&Aggregate> = match &q.shape {
            Shape::Grouped { aggregates, .. } => {
                aggregates.iter().filter(|a| matches!(a.func, AggFunc::Min | AggFunc::Max)).collect()
            }
            Shape::Bag { .. } => vec![],
        };
        parts.push(format!(
            "{} (a table had rows deleted or updated: a removed extremum cannot be taken back from the stored one)",
            aggregate_names(&extrema)
        ));
    }
    if deletes && q.has_collated_keys() {
        parts.push(
            "a group key under a collation (a table had rows deleted or updated: the spelling a group shows may have gone)"
                .into(),
        );
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// Table functions that read nothing but their arguments, accepted as sources of a full view.
const PURE_TABLE_FUNCTIONS: &[&str] = &["range", "generate_series", "unnest"];

/// What a generic walk of a query's parse tree found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scan {
    /// Names of every function, operator, aggregate and window function called, lowercased.
    pub functions: Vec<String>,
    /// Every table name referenced (CTE names included: see `ctes`).
    pub tables: Vec<TableName>,
    /// Names the query's WITH clauses define.
    pub ctes: Vec<String>,
    /// Constructs no strategy maintains, in the order found.
    pub refused: Vec<String>,
    /// The outermost query orders its result (the stored result keeps the order).
    pub ordered: bool,
}

impl Scan {
    /// The referenced tables that are not names of the query's own CTEs.
    pub fn base_tables(&self) -> Vec<TableName> {
        let mut out: Vec<TableName> = Vec::new();
        for t in &self.tables {
            let cte =
                t.schema.is_none() && t.catalog.is_none() && self.ctes.iter().any(|c| c.eq_ignore_ascii_case(&t.name));
            if !cte && !out.contains(t) {
                out.push(t.clone());
            }
        }
        out
    }
}

fn text<'a>(o: &'a serde_json::Map<String, Value>, key: &str) -> &'a str {
    o.get(key).and_then(Value::as_str).unwrap_or("")
}

fn opt(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

/// Whether a DuckDB type id carries a time zone (TIMESTAMP WITH TIME ZONE, TIME WITH TIME ZONE).
pub fn is_time_zone_type(id: &str) -> bool {
    let n = id.to_ascii_uppercase();
    n.contains("WITH TIME ZONE")
        || n.starts_with("TIMESTAMP_TZ")
        || n == "TIME_TZ"
        || n.starts_with("TIMESTAMPTZ")
        || n == "TIMETZ"
}

/// Walks the parse tree of one statement (the `node` of `json_serialize_sql`'s statement).
pub fn scan(node: &Value) -> Scan {
    let mut s = Scan::default();
    if let Some(mods) = node.get("modifiers").and_then(Value::as_array) {
        s.ordered = mods.iter().any(|m| m.get("type").and_then(Value::as_str) == Some("ORDER_MODIFIER"));
    }
    walk(node, &mut s);
    s
}

/// Why a query with parameters is refused.
pub const PARAMETERS: &str = "prepared-statement parameters ($1, ? or $name): a maintained view's query runs at every \
                              refresh without parameters; write the value into the query";

/// The refusal of a query whose parse tree (JSON) has a parameter anywhere.
pub fn refused_parameters(tree: Option<&str>) -> Option<Error> {
    let tree: Value = serde_json::from_str(tree?).ok()?;
    scan(&tree).refused.iter().any(|r| r == PARAMETERS).then(|| Error::Refused(PARAMETERS.into()))
}

fn walk(v: &Value, s: &mut Scan) {
    match v {
        Value::Array(items) => items.iter().for_each(|i| walk(i, s)),
        Value::Object(o) => {
            visit_object(o, s);
            o.values().for_each(|child| walk(child, s));
        }
        _ => {}
    }
}

fn visit_object(o: &serde_json::Map<String, Value>, s: &mut Scan) {
    match text(o, "class") {
        "FUNCTION" | "WINDOW" => {
            let name = text(o, "function_name").to_ascii_lowercase();
            if !name.is_empty() && !s.functions.contains(&name) {
                s.functions.push(name);
            }
        }
        "PARAMETER" => s.refused.push(PARAMETERS.into()),
        _ => {}
    }
    match text(o, "type") {
        "BASE_TABLE" => {
            if o.get("at_clause").is_some_and(|a| !a.is_null()) {
                s.refused.push("time travel (AT)".into());
            }
            s.tables.push(TableName {
                catalog: opt(text(o, "catalog_name")),
                schema: opt(text(o, "schema_name")),
                name: text(o, "table_name").to_string(),
            });
        }
        "TABLE_FUNCTION" => {
            let f = o.get("function").and_then(|f| f.get("function_name")).and_then(Value::as_str).unwrap_or("");
            if !PURE_TABLE_FUNCTIONS.iter().any(|p| p.eq_ignore_ascii_case(f)) {
                s.refused.push(format!("the table function {f}() as a source (openivm sees changes of tables only)"));
            }
        }
        "SHOW_REF" => s.refused.push("SHOW/DESCRIBE as a source".into()),
        _ => {}
    }
    if o.get("sample").is_some_and(|x| !x.is_null()) {
        s.refused.push("USING SAMPLE / TABLESAMPLE (a random subset)".into());
    }
    if let Some(map) = o.get("cte_map").and_then(|m| m.get("map")).and_then(Value::as_array) {
        for entry in map {
            if let Some(k) = entry.get("key").and_then(Value::as_str) {
                s.ctes.push(k.to_string());
            }
        }
    }
}

/// What the checks of a full query need to know about one function name.
pub struct FunctionFacts {
    /// DuckDB lists it with some CONSISTENT overload (which overload a call uses is checked on
    /// the bound plan, `check_bound_calls`).
    pub deterministic: bool,
}

/// Refuses a query that no strategy can maintain exactly: functions of the session, the clock
/// or chance, and the constructs `scan` refused. `function` looks a name up in DuckDB's catalog
/// (None: not a catalog function, such as a window function or an operator DuckDB binds itself).
pub fn check_full(scan: &Scan, function: &mut dyn FnMut(&str) -> Result<Option<FunctionFacts>>) -> Result<()> {
    if let Some(r) = scan.refused.first() {
        return Err(Error::Refused(r.clone()));
    }
    for name in &scan.functions {
        crate::front::session::check_function(name)?;
        if crate::front::session::CLOCK_FUNCTIONS.iter().any(|f| f.eq_ignore_ascii_case(name)) {
            return Err(Error::Refused(format!("the non-deterministic function {name}()")));
        }
        if let Some(f) = function(name)? {
            if !f.deterministic {
                return Err(Error::Refused(format!("the non-deterministic function {name}()")));
            }
        }
    }
    Ok(())
}

/// What DuckDB's bound plan of a full query (`json_serialize_plan`) says: the tables it scans
/// (views and CTEs expanded) and the first type with a time zone any of its values has.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlanFacts {
    pub tables: Vec<crate::ir::TableId>,
    pub time_zone_type: Option<String>,
    /// The scalar and aggregate functions it calls, each as the overload DuckDB bound.
    pub calls: Vec<BoundCall>,
}

/// A function call of a bound plan: the function's name and the parameter types of the overload
/// DuckDB picked, spelled as `duckdb_functions()` lists them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundCall {
    pub name: String,
    pub params: Vec<String>,
}

/// One overload as `duckdb_functions()` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overload {
    pub name: String,
    pub params: Vec<String>,
    /// Its stability is CONSISTENT.
    pub consistent: bool,
    /// A parameter or the result has a type with a time zone: such an overload reads the
    /// session's TimeZone (DuckDB 2 lists those as CONSISTENT_WITHIN_QUERY), which the time zone
    /// rules decide on (`session::check_time_zone`, `check_time_zones`).
    pub time_zone: bool,
}

/// Refuses a call whose bound overload DuckDB does not list as CONSISTENT, other than the
/// overloads over time zones. A call no overload's types match exactly (a generic one) is
/// judged by every overload of its name and arity.
pub fn check_bound_calls(calls: &[BoundCall], overloads: &[Overload]) -> Result<()> {
    for call in calls {
        // DuckDB's planner guards a scalar subquery with error(), VOLATILE only so that it is
        // never folded: it raises, it makes no value.
        if call.name.eq_ignore_ascii_case("error") {
            continue;
        }
        let of_name = || overloads.iter().filter(|o| o.name.eq_ignore_ascii_case(&call.name));
        let exact: Vec<&Overload> = of_name().filter(|o| o.params == call.params).collect();
        let candidates =
            if exact.is_empty() { of_name().filter(|o| o.params.len() == call.params.len()).collect() } else { exact };
        if candidates.iter().any(|o| !o.consistent && !o.time_zone) {
            return Err(Error::Refused(format!("the non-deterministic function {}()", call.name)));
        }
    }
    Ok(())
}

/// How `duckdb_functions()` spells a type of a serialized plan (the parameter types of an
/// overload name no width, scale or fields).
fn listed_type(t: &Value) -> String {
    let id = t.get("id").and_then(Value::as_str).unwrap_or("");
    let child = t.get("type_info").and_then(|i| i.get("child_type"));
    match (id, child) {
        ("LIST", Some(c)) => format!("{}[]", listed_type(c)),
        _ => id.to_string(),
    }
}

/// How DuckDB finishes the `averages` AVGs of a view's aggregation, read from its optimized
/// physical plan (`EXPLAIN (FORMAT JSON)`): DuckDB 2's optimizer turns some into `CAST(SUM(x) AS
/// DOUBLE) / COUNT` and runs the others as its AVG aggregate, which rounds differently in the
/// last bit, by criteria openivm cannot follow from the query alone (an explicit `JOIN ... ON`
/// and a join written in WHERE differ). The first aggregation from the plan's root is the
/// view's: when all of its AVGs are left, `Exact`; when none is and it sums, `DoubleSum`; when
/// only some are (which ones the plan does not say), None.
pub fn avg_finish_of_plan(plan: &Value, averages: usize) -> Option<crate::render::AvgRule> {
    if averages == 0 {
        return None;
    }
    let mut level: Vec<&Value> = match plan {
        Value::Array(roots) => roots.iter().collect(),
        other => vec![other],
    };
    while !level.is_empty() {
        for node in &level {
            let name = node.get("name").and_then(Value::as_str).unwrap_or_default();
            if !matches!(name, "HASH_GROUP_BY" | "PERFECT_HASH_GROUP_BY" | "UNGROUPED_AGGREGATE" | "SIMPLE_AGGREGATE") {
                continue;
            }
            let listed: Vec<&str> = match node.get("extra_info").and_then(|e| e.get("Aggregates")) {
                Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
                Some(Value::String(s)) => vec![s.as_str()],
                _ => vec![],
            };
            let count = |f: &str| listed.iter().filter(|a| a.starts_with(f)).count();
            // (a sum DuckDB knows cannot overflow is listed as `sum_no_overflow`)
            return match (count("avg("), count("sum")) {
                (n, _) if n == averages => Some(crate::render::AvgRule::Exact),
                (0, sums) if sums > 0 => Some(crate::render::AvgRule::DoubleSum),
                _ => None,
            };
        }
        level = level.iter().filter_map(|n| n.get("children").and_then(Value::as_array)).flatten().collect();
    }
    None
}

/// Reads the scanned tables and the types of a bound plan.
pub fn plan_facts(plan: &Value) -> PlanFacts {
    let mut f = PlanFacts::default();
    plan_walk(plan, &mut f);
    f
}

fn plan_walk(v: &Value, f: &mut PlanFacts) {
    match v {
        Value::Array(items) => items.iter().for_each(|i| plan_walk(i, f)),
        Value::Object(o) => {
            if text(o, "type") == "LOGICAL_GET" {
                if let Some(d) = o.get("function_data").and_then(Value::as_object) {
                    let (c, s, t) = (text(d, "catalog"), text(d, "schema"), text(d, "table"));
                    let id = crate::ir::TableId { catalog: c.into(), schema: s.into(), name: t.into() };
                    if !t.is_empty() && !f.tables.contains(&id) {
                        f.tables.push(id);
                    }
                }
            }
            if matches!(text(o, "expression_class"), "BOUND_FUNCTION" | "BOUND_AGGREGATE") {
                // DuckDB 1.5 names the function in `name`, 2.0 in `qname.path`.
                let path = o.get("qname").and_then(|q| q.get("path")).and_then(Value::as_array);
                let name = path.and_then(|p| p.last()).and_then(Value::as_str).unwrap_or(text(o, "name"));
                let params = o
                    .get("arguments")
                    .and_then(Value::as_array)
                    .map_or(vec![], |a| a.iter().map(listed_type).collect());
                let call = BoundCall { name: name.to_string(), params };
                if !name.is_empty() && !f.calls.contains(&call) {
                    f.calls.push(call);
                }
            }
            if f.time_zone_type.is_none() {
                if let Some(id) = o.get("id").and_then(Value::as_str).filter(|id| is_time_zone_type(id)) {
                    f.time_zone_type = Some(id.to_string());
                }
            }
            o.values().for_each(|child| plan_walk(child, f));
        }
        _ => {}
    }
}

/// Refuses a full query whose values have a type with a time zone: converting them depends on
/// the session's TimeZone, and without incremental rules openivm does not check how the query
/// uses them (an incrementally maintained query is checked expression by expression).
pub fn check_time_zones(facts: &PlanFacts) -> Result<()> {
    match &facts.time_zone_type {
        Some(t) => Err(Error::Refused(format!(
            "a value of type {t} in a query maintained by recomputing (openivm checks the use of TimeZone-dependent \
             values only in incrementally maintained queries)"
        ))),
        None => Ok(()),
    }
}

/// Whether an error of the incremental compile means "no incremental rule" (the query may
/// still be maintained by recomputing), rather than a refusal or a mistake in the query.
pub fn falls_back(e: &Error) -> bool {
    matches!(e, Error::Unsupported(_) | Error::Bind(_))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_how_duckdb_finishes_averages_from_its_optimized_plan() {
        use crate::render::AvgRule;
        // trimmed from EXPLAIN (FORMAT JSON) on DuckDB 2.0.1
        let plan = |aggregates: &str| {
            node(&format!(
                r##"[{{"name":"PROJECTION","extra_info":{{}},"children":[{{"name":"HASH_GROUP_BY",
                "extra_info":{{"Groups":"#0","Aggregates":{aggregates}}},"children":[{{"name":"SEQ_SCAN",
                "extra_info":{{}},"children":[]}}]}}]}}]"##
            ))
        };
        // a join written in WHERE: the AVG aggregate runs
        assert_eq!(avg_finish_of_plan(&plan(r##"["sum(#1)","count_star()","avg(#2)"]"##), 1), Some(AvgRule::Exact));
        // JOIN ... ON: AVG(x) became SUM(x), divided by the COUNT(*) above the aggregation
        assert_eq!(avg_finish_of_plan(&plan(r##"["sum(#1)","count_star()","sum(#2)"]"##), 1), Some(AvgRule::DoubleSum));
        let small = plan(r##"["sum_no_overflow(#1)","count_star()"]"##);
        assert_eq!(avg_finish_of_plan(&small, 1), Some(AvgRule::DoubleSum));
        // one of two left: which one, the plan does not say
        assert_eq!(avg_finish_of_plan(&plan(r##"["avg(#1)","sum(#2)","count_star()"]"##), 2), None);
        // no average, or no aggregation in the plan
        assert_eq!(avg_finish_of_plan(&plan(r##"["sum(#1)"]"##), 0), None);
        assert_eq!(avg_finish_of_plan(&node(r#"[{"name":"SEQ_SCAN","extra_info":{},"children":[]}]"#), 1), None);
        // an ungrouped aggregation names one aggregate as a string
        let one = node(r##"[{"name":"UNGROUPED_AGGREGATE","extra_info":{"Aggregates":"avg(#0)"},"children":[]}]"##);
        assert_eq!(avg_finish_of_plan(&one, 1), Some(AvgRule::Exact));
    }

    fn node(sql_json: &str) -> Value {
        serde_json::from_str(sql_json).unwrap()
    }

    #[test]
    fn scans_functions_tables_and_ctes() {
        // trimmed from json_serialize_sql('WITH r AS (SELECT sum(a) s FROM t) SELECT * FROM r, u ORDER BY 1')
        let n = node(
            r#"{"type":"SELECT_NODE","modifiers":[{"type":"ORDER_MODIFIER","orders":[]}],
            "cte_map":{"map":[{"key":"r","value":{"query":{"node":{"type":"SELECT_NODE","modifiers":[],
               "select_list":[{"class":"FUNCTION","type":"FUNCTION","function_name":"sum","children":[]}],
               "from_table":{"type":"BASE_TABLE","table_name":"t","schema_name":"","catalog_name":"","sample":null,"at_clause":null}}}}}]},
            "from_table":{"type":"JOIN","left":{"type":"BASE_TABLE","table_name":"r","schema_name":"","catalog_name":""},
                          "right":{"type":"BASE_TABLE","table_name":"u","schema_name":"s","catalog_name":""}}}"#,
        );
        let s = scan(&n);
        assert!(s.ordered);
        assert_eq!(s.functions, vec!["sum"]);
        assert_eq!(s.ctes, vec!["r"]);
        let names: Vec<String> = s.base_tables().iter().map(|t| t.name.clone()).collect();
        assert_eq!(names, vec!["t", "u"]);
        assert!(s.refused.is_empty());
    }

    #[test]
    fn refuses_what_no_strategy_maintains() {
        let mut lookup = |name: &str| -> Result<Option<FunctionFacts>> {
            Ok(match name {
                "random" => Some(FunctionFacts { deterministic: false }),
                "sum" => Some(FunctionFacts { deterministic: true }),
                _ => None,
            })
        };
        let with = |f: &[&str]| Scan { functions: f.iter().map(|s| s.to_string()).collect(), ..Default::default() };
        assert!(check_full(&with(&["sum", "row_number"]), &mut lookup).is_ok());
        let e = check_full(&with(&["sum", "random"]), &mut lookup).unwrap_err().to_string();
        assert_eq!(e, "openivm: refused as a maintained view: the non-deterministic function random()");
        let e = check_full(&with(&["getvariable"]), &mut lookup).unwrap_err().to_string();
        assert!(e.contains("getvariable() (depends on the caller's session"), "{e}");
        let tf = scan(&node(
            r#"{"type":"SELECT_NODE","from_table":{"type":"TABLE_FUNCTION","function":{"class":"FUNCTION","function_name":"read_csv"}}}"#,
        ));
        assert!(check_full(&tf, &mut lookup).unwrap_err().to_string().contains("read_csv() as a source"));
        let range = scan(&node(
            r#"{"type":"SELECT_NODE","from_table":{"type":"TABLE_FUNCTION","function":{"class":"FUNCTION","function_name":"range"}}}"#,
        ));
        assert!(check_full(&range, &mut lookup).is_ok());
    }

    #[test]
    fn reads_tables_and_time_zones_of_a_plan() {
        // trimmed from json_serialize_plan('SELECT sum(a) FROM v') over a view v on t
        let plan = node(
            r#"{"plans":[{"type":"LOGICAL_AGGREGATE_AND_GROUP_BY","children":[{"type":"LOGICAL_GET","children":[],
               "returned_types":[{"id":"INTEGER","type_info":null}],"name":"seq_scan",
               "function_data":{"catalog":"memory","schema":"main","table":"t"}}],
               "expressions":[{"return_type":{"id":"HUGEINT"}}]}]}"#,
        );
        let f = plan_facts(&plan);
        assert_eq!(f.tables.len(), 1);
        assert_eq!(f.tables[0].name, "t");
        assert!(check_time_zones(&f).is_ok());
        let tz = node(r#"{"expressions":[{"return_type":{"id":"TIMESTAMP WITH TIME ZONE"}}]}"#);
        let e = check_time_zones(&plan_facts(&tz)).unwrap_err().to_string();
        assert!(e.contains("a value of type TIMESTAMP WITH TIME ZONE"), "{e}");
    }

    #[test]
    fn judges_the_bound_overload() {
        let o = |params: &[&str], consistent: bool, time_zone: bool| Overload {
            name: "-".into(),
            params: params.iter().map(|p| p.to_string()).collect(),
            consistent,
            time_zone,
        };
        let call =
            |params: &[&str]| BoundCall { name: "-".into(), params: params.iter().map(|p| p.to_string()).collect() };
        let minus =
            [o(&["INTEGER", "INTEGER"], true, false), o(&["TIMESTAMP WITH TIME ZONE", "INTERVAL"], false, true)];
        assert!(check_bound_calls(&[call(&["INTEGER", "INTEGER"])], &minus).is_ok());
        // Over time zones: left to the time zone rules.
        assert!(check_bound_calls(&[call(&["TIMESTAMP WITH TIME ZONE", "INTERVAL"])], &minus).is_ok());
        let volatile = [o(&["INTEGER", "INTEGER"], true, false), o(&["DOUBLE", "DOUBLE"], false, false)];
        assert!(check_bound_calls(&[call(&["INTEGER", "INTEGER"])], &volatile).is_ok());
        let e = check_bound_calls(&[call(&["DOUBLE", "DOUBLE"])], &volatile).unwrap_err().to_string();
        assert!(e.contains("the non-deterministic function -()"), "{e}");
        // No exact match: every overload of that arity decides.
        assert!(check_bound_calls(&[call(&["ANY", "ANY"])], &volatile).is_err());
        // 2.0 names the function in qname.path, 1.5 in name; a LIST parameter as T[].
        let plan = node(
            r#"{"expressions":[{"expression_class":"BOUND_FUNCTION","qname":{"path":["system","main","len"]},
               "arguments":[{"id":"LIST","type_info":{"child_type":{"id":"VARCHAR"}}}]},
               {"expression_class":"BOUND_AGGREGATE","name":"sum","arguments":[{"id":"DECIMAL","type_info":{"width":9}}]}]}"#,
        );
        let calls = plan_facts(&plan).calls;
        assert_eq!(calls[0], BoundCall { name: "len".into(), params: vec!["VARCHAR[]".into()] });
        assert_eq!(calls[1], BoundCall { name: "sum".into(), params: vec!["DECIMAL".into()] });
    }

    #[test]
    fn strategy_names() {
        for s in [Strategy::Incremental, Strategy::GroupRecompute, Strategy::Full] {
            assert_eq!(Strategy::parse(Some(s.as_str())), s);
        }
        assert_eq!(Strategy::parse(None), Strategy::Incremental);
        assert!(falls_back(&Error::Unsupported("x".into())));
        assert!(!falls_back(&Error::Refused("x".into())));
    }
}
