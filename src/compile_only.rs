//! `openivm_compile_with_facts`: the refresh program of a maintained view for an engine that
//! captures its own deltas and vouches for its own facts, rendered and not run.
//!
//! The caller passes the facts as JSON: foreign keys (`fk_relations`), the shape of each table's
//! delta (`delta_shape`: INSERT_ONLY, UNCHANGED or GENERAL; a table not named is GENERAL) and
//! `assume_insert_only` (every delta is insert-only). The live catalog and RELY declarations are
//! not consulted: the facts replace them. A fact FK still counts only when the view's join
//! predicates equate all its columns (`facts::proven_relations`).
//!
//! The plan follows the reference design: when FK pruning removes an inclusion-exclusion term,
//! the pruned inclusion-exclusion plan (current-state scans, Möbius signs); otherwise the N-term
//! (telescoping) plan, one term per changed leaf i: leaves before i at their new state, leaf i
//! as its delta, leaves after i at their old state. Both skip the terms of unchanged leaves.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{json, Value as Json};

use crate::catalog::{table_name, SqlCatalog};
use crate::db::Sql;
use crate::error::{Error, Result};
use crate::execute::Cache;
use crate::facts::{self, FactSource, ForeignKey, ProvenRelation};
use crate::ir::{TableId, ViewQuery};
use crate::plan::{self, DeltaShape, Mask, Term, TermStatus};
use crate::render::{self, compile as rc, Dialect, Qualified, Source};

/// What the caller says about one table's delta.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShapeFact {
    /// Only inserted rows.
    InsertOnly,
    /// No rows: its terms are skipped.
    Unchanged,
    /// Anything (the default for a table the facts do not name).
    General,
}

impl ShapeFact {
    fn parse(s: &str) -> Option<ShapeFact> {
        match s.trim().to_ascii_uppercase().as_str() {
            "INSERT_ONLY" => Some(ShapeFact::InsertOnly),
            "UNCHANGED" => Some(ShapeFact::Unchanged),
            "GENERAL" => Some(ShapeFact::General),
            _ => None,
        }
    }

    /// The planner's delta shape: GENERAL may hold inserts and deletes, and `assume_insert_only`
    /// takes the deletes away from every shape.
    pub fn delta_shape(self, assume_insert_only: bool) -> DeltaShape {
        let s = match self {
            ShapeFact::InsertOnly => DeltaShape::INSERTS,
            ShapeFact::Unchanged => DeltaShape::empty(),
            ShapeFact::General => DeltaShape::INSERTS | DeltaShape::DELETES,
        };
        if assume_insert_only {
            s - DeltaShape::DELETES
        } else {
            s
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ShapeFact::InsertOnly => "INSERT_ONLY",
            ShapeFact::Unchanged => "UNCHANGED",
            ShapeFact::General => "GENERAL",
        }
    }
}

#[derive(Deserialize)]
struct RawFacts {
    #[serde(default)]
    fk_relations: Vec<RawFk>,
    #[serde(default)]
    delta_shape: BTreeMap<String, String>,
    #[serde(default)]
    assume_insert_only: bool,
}

#[derive(Deserialize)]
struct RawFk {
    child_table: String,
    child_columns: RawColumns,
    parent_table: String,
    parent_columns: RawColumns,
}

/// A column list: a JSON array of names, or one string of comma-separated names.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawColumns {
    List(Vec<String>),
    Text(String),
}

impl RawColumns {
    fn columns(self) -> Result<Vec<String>> {
        match self {
            RawColumns::Text(t) => crate::rely::parse_columns(&t),
            RawColumns::List(l) if l.is_empty() || l.iter().any(|c| c.trim().is_empty()) => {
                Err(Error::InvalidArgument(
                    "a column list of fk_relations must name at least one column, none empty".into(),
                ))
            }
            RawColumns::List(l) => Ok(l),
        }
    }
}

/// A foreign key as the facts state it, by the caller's names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FactFk {
    pub child_table: String,
    pub child_columns: Vec<String>,
    pub parent_table: String,
    pub parent_columns: Vec<String>,
}

/// The facts argument, parsed (its tables not yet resolved against a view).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Facts {
    pub fks: Vec<FactFk>,
    pub shapes: Vec<(String, ShapeFact)>,
    pub assume_insert_only: bool,
}

const FACTS_FORM: &str = "{\"fk_relations\": [{\"child_table\", \"child_columns\", \"parent_table\", \
                          \"parent_columns\"}], \"delta_shape\": {\"<table>\": \"INSERT_ONLY\" | \"UNCHANGED\" | \
                          \"GENERAL\"}, \"assume_insert_only\": true | false}";

/// Parses the facts JSON. Unknown fields are ignored; malformed JSON, a wrong type, an unknown
/// shape or column lists of different lengths are errors.
pub fn parse_facts(text: &str) -> Result<Facts> {
    let bad = |e: String| Error::InvalidArgument(format!("facts is not a JSON document of the form {FACTS_FORM}: {e}"));
    let value: Json = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
    if !value.is_object() {
        return Err(bad("the document is not a JSON object".into()));
    }
    let raw: RawFacts = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
    let mut fks = Vec::new();
    for f in raw.fk_relations {
        let (child_columns, parent_columns) = (f.child_columns.columns()?, f.parent_columns.columns()?);
        if child_columns.len() != parent_columns.len() {
            return Err(Error::InvalidArgument(format!(
                "the fk_relation {} -> {} lists {} child and {} parent columns; a foreign key pairs them one to one",
                f.child_table,
                f.parent_table,
                child_columns.len(),
                parent_columns.len()
            )));
        }
        fks.push(FactFk { child_table: f.child_table, child_columns, parent_table: f.parent_table, parent_columns });
    }
    let mut shapes = Vec::new();
    for (table, shape) in raw.delta_shape {
        let s = ShapeFact::parse(&shape).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "delta_shape of '{table}' is '{shape}'; it takes INSERT_ONLY, UNCHANGED or GENERAL"
            ))
        })?;
        shapes.push((table, s));
    }
    Ok(Facts { fks, shapes, assume_insert_only: raw.assume_insert_only })
}

/// The dialect argument (absent: DuckDB).
pub fn parse_dialect(arg: Option<&str>) -> Result<Dialect> {
    match arg {
        None => Ok(Dialect::DuckDb),
        Some(s) => Dialect::parse(s)
            .ok_or_else(|| Error::InvalidArgument(format!("dialect takes 'duckdb' or 'spark', not '{s}'"))),
    }
}

/// The table of the view that `name` means: its last part is the table's name, a middle part
/// its schema (or, for two parts, its schema or its database), a first of three its database;
/// case is ignored. None when no table of the view matches; several matching is an error.
pub fn resolve_table(tables: &[TableId], name: &str) -> Result<Option<TableId>> {
    let n = table_name(name)?;
    let is = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
    let matching: Vec<&TableId> = tables
        .iter()
        .filter(|t| is(&t.name, &n.name))
        .filter(|t| match (&n.catalog, &n.schema) {
            (Some(c), Some(s)) => is(&t.catalog, c) && is(&t.schema, s),
            (None, Some(x)) => is(&t.schema, x) || (is(&t.catalog, x) && is(&t.schema, "main")),
            _ => true,
        })
        .collect();
    let list = || tables.iter().map(qualified).collect::<Vec<_>>().join(", ");
    match matching.as_slice() {
        [one] => Ok(Some((*one).clone())),
        [] => Ok(None),
        _ => Err(Error::InvalidArgument(format!(
            "the facts name the table '{name}', which matches several tables of the view ({}); qualify it",
            list()
        ))),
    }
}

fn qualified(t: &TableId) -> String {
    format!("{}.{}.{}", t.catalog, t.schema, t.name)
}

/// The facts bound to one view: foreign keys between its tables (columns in the catalog's
/// spelling), and the delta shape of each of its tables (in `ViewQuery::tables` order).
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    pub fks: Vec<ForeignKey>,
    pub shapes: Vec<ShapeFact>,
    pub assume_insert_only: bool,
    /// Facts about tables that exist but that the view does not read: not used, reported.
    pub unused: Vec<(String, String)>,
}

/// Binds the facts to the view's tables and columns. A fact about a table the view does not
/// read is set aside (reported in the facts row) when `exists` finds the table, and an error
/// when it does not: a misspelt name must not silently drop a fact. A column the table lacks is
/// an error.
pub fn resolve(q: &ViewQuery, f: &Facts, exists: &dyn Fn(&str) -> Result<bool>) -> Result<Resolved> {
    if !q.branches.is_empty() {
        return Err(Error::Unsupported(
            "a view over a UNION ALL in openivm_compile_with_facts (its program would be one per branch)".into(),
        ));
    }
    let tables = q.tables();
    let mut unused = Vec::new();
    let mut find = |name: &str, fact: &str| -> Result<Option<TableId>> {
        if let Some(t) = resolve_table(&tables, name)? {
            return Ok(Some(t));
        }
        if !exists(name)? {
            return Err(Error::InvalidArgument(format!(
                "the facts name the table '{name}', which does not exist (the view reads {})",
                tables.iter().map(qualified).collect::<Vec<_>>().join(", ")
            )));
        }
        unused.push((fact.to_string(), format!("the view does not read the table '{name}'")));
        Ok(None)
    };
    let columns_of = |t: &TableId, cols: &[String]| -> Result<Vec<String>> {
        let leaf =
            q.leaves.iter().find(|l| &l.table == t).ok_or_else(|| Error::Internal("a table without leaf".into()))?;
        cols.iter()
            .map(|c| {
                leaf.columns.iter().find(|d| d.name.eq_ignore_ascii_case(c)).map(|d| d.name.clone()).ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "the facts name the column '{c}', which {} does not have",
                        qualified(t)
                    ))
                })
            })
            .collect()
    };
    let mut fks = Vec::new();
    for fk in &f.fks {
        let fact = format!(
            "fk_relation {}({}) -> {}({})",
            fk.child_table,
            fk.child_columns.join(","),
            fk.parent_table,
            fk.parent_columns.join(",")
        );
        let child = find(&fk.child_table, &fact)?;
        let parent = find(&fk.parent_table, &fact)?;
        let (Some(child), Some(parent)) = (child, parent) else {
            continue;
        };
        fks.push(ForeignKey {
            child_columns: columns_of(&child, &fk.child_columns)?,
            parent_columns: columns_of(&parent, &fk.parent_columns)?,
            child,
            parent,
            source: FactSource::Facts,
        });
    }
    let mut shapes = vec![ShapeFact::General; tables.len()];
    for (name, shape) in &f.shapes {
        let Some(t) = find(name, &format!("delta_shape of {name}"))? else {
            continue;
        };
        if let Some(k) = tables.iter().position(|x| x == &t) {
            shapes[k] = *shape;
        }
    }
    Ok(Resolved { fks, shapes, assume_insert_only: f.assume_insert_only, unused })
}

/// The delta rules a program can use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    InclusionExclusion,
    NTerm,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::InclusionExclusion => "inclusion_exclusion",
            Rule::NTerm => "n_term",
        }
    }
}

pub use crate::telescope::LeafState;

/// The leaf states of N-term term `i` of an `n`-leaf join: ΔV = Σ_i L1' ⋈ … ⋈ L(i-1)' ⋈ ΔLi ⋈
/// L(i+1) ⋈ … ⋈ Ln (primes: new states). It telescopes: term i is V at (L1'..Li', L(i+1)..Ln)
/// minus V at (L1'..L(i-1)', Li..Ln), so the sum is V' - V. Each joined row's weight is the
/// multiplicity of its delta row. (`telescope::states` in the leaves' own order.)
pub fn nterm_states(n: usize, i: usize) -> Vec<LeafState> {
    crate::telescope::states(&(0..n).collect::<Vec<_>>(), i)
}

/// The N-term terms of an `n`-leaf join: term i runs unless leaf i's delta is empty.
pub fn nterm_terms(n: usize, empty_bits: Mask) -> Vec<(usize, TermStatus)> {
    (0..n).map(|i| (i, if empty_bits & (1 << i) != 0 { TermStatus::EmptySkipped } else { TermStatus::Run })).collect()
}

/// The reference design's choice: the FK-pruned inclusion-exclusion plan when pruning removes
/// a term, else the N-term plan (fewer terms: at most n against 2^n - 1).
pub fn choose_rule(ie: &[(Term, TermStatus)]) -> Rule {
    if ie.iter().any(|(_, s)| *s == TermStatus::FkPruned) {
        Rule::InclusionExclusion
    } else {
        Rule::NTerm
    }
}

/// Everything the program is built from, and reported in its 'facts' row.
#[derive(Clone, Debug)]
pub struct Decision {
    pub rule: Rule,
    pub reason: String,
    /// Per leaf: its table's index in `ViewQuery::tables`, its shape, whether it is insert-only.
    pub leaf_table: Vec<usize>,
    pub leaf_shape: Vec<ShapeFact>,
    pub insert_only: Vec<bool>,
    pub empty_bits: Mask,
    pub fk_bits: Mask,
    pub proven: Vec<ProvenRelation>,
    /// Fact FKs that no pair of leaves proves, with why.
    pub rejected: Vec<(ForeignKey, String)>,
    /// Facts about tables the view does not read, with why.
    pub unused: Vec<(String, String)>,
    /// The inclusion-exclusion plan (always computed, for the report).
    pub ie: Vec<(Term, TermStatus)>,
    pub nterm: Vec<(usize, TermStatus)>,
}

/// Why no pair of leaves proves `fk`.
fn rejection(fk: &ForeignKey) -> String {
    if fk.child == fk.parent {
        "self-referencing: the child and parent are the same table".into()
    } else {
        let pairs: Vec<String> =
            fk.child_columns.iter().zip(&fk.parent_columns).map(|(c, p)| format!("{c} = {p}")).collect();
        format!("the view's inner-join predicates do not equate every column pair ({})", pairs.join(", "))
    }
}

/// Decides the plan from the resolved facts.
pub fn decide(q: &ViewQuery, r: &Resolved) -> Decision {
    let tables = q.tables();
    let leaf_table: Vec<usize> =
        q.leaves.iter().map(|l| tables.iter().position(|t| t == &l.table).unwrap_or(0)).collect();
    let leaf_shape: Vec<ShapeFact> =
        leaf_table.iter().map(|&k| r.shapes.get(k).copied().unwrap_or(ShapeFact::General)).collect();
    let shapes: Vec<DeltaShape> = leaf_shape.iter().map(|s| s.delta_shape(r.assume_insert_only)).collect();
    let insert_only: Vec<bool> = shapes.iter().map(|s| s.insert_only()).collect();
    let empty_bits = plan::empty_delta_bits(&shapes);
    let proven = facts::proven_relations(q, &r.fks);
    let rejected =
        r.fks.iter().filter(|fk| !proven.iter().any(|p| &p.fk == *fk)).map(|fk| (fk.clone(), rejection(fk))).collect();
    let fk_bits = facts::fk_skip_bits(&proven, &shapes);
    let n = q.leaves.len();
    let ie = plan::plan_terms(n, empty_bits, fk_bits);
    let nterm = nterm_terms(n, empty_bits);
    let rule = choose_rule(&ie);
    let counts = plan::count_terms(&ie);
    let n_run = nterm.iter().filter(|(_, s)| *s == TermStatus::Run).count();
    let reason = match rule {
        Rule::InclusionExclusion => format!(
            "foreign keys prune {} of the {} inclusion-exclusion terms: the pruned plan runs {} term(s)",
            counts.fk_pruned, counts.total, counts.run
        ),
        Rule::NTerm => format!(
            "no inclusion-exclusion term is pruned by a foreign key: the N-term plan runs {n_run} of {n} term(s) \
             instead of {} of {}",
            counts.run, counts.total
        ),
    };
    Decision {
        rule,
        reason,
        leaf_table,
        leaf_shape,
        insert_only,
        empty_bits,
        fk_bits,
        proven,
        rejected,
        unused: r.unused.clone(),
        ie,
        nterm,
    }
}

/// One statement of the program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    pub order: i64,
    pub kind: &'static str,
    pub sql: String,
}

/// The weighted SELECTs of the terms the decision runs.
pub fn term_selects(d: Dialect, q: &ViewQuery, dec: &Decision, deltas: &[String]) -> Vec<String> {
    let tables = q.tables();
    let delta = |i: usize| Source::Named(deltas[dec.leaf_table[i]].clone());
    let new = |i: usize| Source::Current(q.leaves[i].table.clone());
    match dec.rule {
        Rule::InclusionExclusion => dec
            .ie
            .iter()
            .filter(|(_, s)| *s == TermStatus::Run)
            .map(|(t, _)| {
                let sources: Vec<Source> =
                    (0..q.leaves.len()).map(|i| if t.mask & (1 << i) != 0 { delta(i) } else { new(i) }).collect();
                render::term_select_in(d, q, *t, &sources)
            })
            .collect(),
        Rule::NTerm => dec
            .nterm
            .iter()
            .filter(|(_, s)| *s == TermStatus::Run)
            .map(|&(i, _)| {
                let sources: Vec<Source> = nterm_states(q.leaves.len(), i)
                    .into_iter()
                    .enumerate()
                    .map(|(j, state)| match state {
                        LeafState::New => new(j),
                        LeafState::Delta => delta(j),
                        LeafState::Old => {
                            let k = dec.leaf_table[j];
                            let cols = render::column_list(&q.table_columns(&tables[k]));
                            Source::Bounded(rc::old_state(d, &tables[k], &cols, &deltas[k]))
                        }
                    })
                    .collect();
                render::term_select_in(d, q, Term { mask: 1 << i, sign: 1 }, &sources)
            })
            .collect(),
    }
}

/// The program's statements: one MERGE of the run terms into the stored result (none when no
/// term runs).
pub fn program(d: Dialect, q: &ViewQuery, data: &Qualified, dec: &Decision) -> Vec<Statement> {
    let deltas = rc::delta_relations(&q.tables());
    let terms = term_selects(d, q, dec, &deltas);
    if terms.is_empty() {
        return vec![];
    }
    rc::apply_terms(d, q, data, &terms)
        .into_iter()
        .enumerate()
        .map(|(i, sql)| Statement { order: i as i64 + 1, kind: "merge", sql })
        .collect()
}

fn fk_json(fk: &ForeignKey) -> Json {
    json!({
        "child_table": qualified(&fk.child),
        "child_columns": fk.child_columns,
        "parent_table": qualified(&fk.parent),
        "parent_columns": fk.parent_columns,
    })
}

fn delta_leaves(q: &ViewQuery, mask: Mask) -> Vec<String> {
    plan::leaves_of(mask).map(|i| q.leaves[i].alias.clone()).collect()
}

/// The 'facts' row: what the program was built from.
pub fn facts_document(d: Dialect, q: &ViewQuery, data: &Qualified, dec: &Decision) -> Json {
    let tables = q.tables();
    let deltas = rc::delta_relations(&tables);
    let leaves: Vec<Json> = q
        .leaves
        .iter()
        .enumerate()
        .map(|(i, l)| {
            json!({
                "leaf": i,
                "alias": l.alias,
                "table": qualified(&l.table),
                "delta_shape": dec.leaf_shape[i].as_str(),
                "insert_only": dec.insert_only[i],
                "delta_relation": deltas[dec.leaf_table[i]],
            })
        })
        .collect();
    let proven: Vec<Json> = dec
        .proven
        .iter()
        .map(|p| {
            let mut j = fk_json(&p.fk);
            j["child_leaf"] = json!(q.leaves[p.child_leaf].alias);
            j["parent_leaf"] = json!(q.leaves[p.parent_leaf].alias);
            j["prunes"] = json!(dec.insert_only[p.parent_leaf]);
            j
        })
        .collect();
    let rejected: Vec<Json> = dec
        .rejected
        .iter()
        .map(|(fk, why)| {
            let mut j = fk_json(fk);
            j["reason"] = json!(why);
            j
        })
        .collect();
    let unused: Vec<Json> = dec.unused.iter().map(|(fact, why)| json!({"fact": fact, "reason": why})).collect();
    let (kept, pruned): (Vec<Json>, Vec<Json>) = match dec.rule {
        Rule::InclusionExclusion => {
            let one = |t: &Term, s: &TermStatus| json!({"mask": t.mask, "delta_leaves": delta_leaves(q, t.mask), "sign": t.sign, "status": s.as_str()});
            (
                dec.ie.iter().filter(|(_, s)| *s == TermStatus::Run).map(|(t, s)| one(t, s)).collect(),
                dec.ie.iter().filter(|(_, s)| *s != TermStatus::Run).map(|(t, s)| one(t, s)).collect(),
            )
        }
        Rule::NTerm => {
            let one = |i: usize, s: &TermStatus| {
                let states: Vec<&str> = nterm_states(q.leaves.len(), i)
                    .iter()
                    .map(|s| match s {
                        LeafState::New => "new",
                        LeafState::Delta => "delta",
                        LeafState::Old => "old",
                    })
                    .collect();
                json!({"delta_leaf": q.leaves[i].alias, "leaf_states": states, "status": s.as_str()})
            };
            (
                dec.nterm.iter().filter(|(_, s)| *s == TermStatus::Run).map(|(i, s)| one(*i, s)).collect(),
                dec.nterm.iter().filter(|(_, s)| *s != TermStatus::Run).map(|(i, s)| one(*i, s)).collect(),
            )
        }
    };
    json!({
        "dialect": d.as_str(),
        "rule": dec.rule.as_str(),
        "rule_reason": dec.reason,
        "stored_result": data.sql_in(d),
        "leaves": leaves,
        "fk_relations": {"proven": proven, "rejected": rejected},
        "unused_facts": unused,
        "skip_bits": {"empty_delta": dec.empty_bits, "fk": dec.fk_bits},
        "terms_kept": kept,
        "terms_pruned": pruned,
        "inclusion_exclusion_terms": plan::count_terms(&dec.ie).total,
    })
}

/// Whether `name` resolves to a table or view in DuckDB's catalog.
fn table_exists(db: &dyn Sql, name: &str) -> Result<bool> {
    Ok(SqlCatalog::new(db).find(&table_name(name)?)?.is_some())
}

/// Checks the arguments at bind: dialect and facts parse, the view exists and compiles, and the
/// facts name only its tables and their columns.
pub fn validate(db: &dyn Sql, name: &str, facts: &str, dialect: Option<&str>) -> Result<()> {
    parse_dialect(dialect)?;
    let f = parse_facts(facts)?;
    let (_, c, _) = Cache::default().compiled(db, name)?;
    resolve(&c.q, &f, &|n| table_exists(db, n)).map(|_| ())
}

/// The program of view `name` under the given facts, and its 'facts' row last.
pub fn compile(
    db: &dyn Sql,
    cache: &mut Cache,
    name: &str,
    facts: &str,
    dialect: Option<&str>,
) -> Result<Vec<Statement>> {
    let d = parse_dialect(dialect)?;
    let f = parse_facts(facts)?;
    let (_, c, _) = cache.compiled(db, name)?;
    let r = resolve(&c.q, &f, &|n| table_exists(db, n))?;
    // A program merges a delta: aggregates without a delta rule have none.
    if let Some(a) = c.q.recomputed_aggregates().first() {
        return Err(Error::InvalidArgument(format!(
            "'{name}' has {}, which has no delta rule (the view recomputes the groups a change touches); a \
             compiled program covers views whose aggregates all merge deltas",
            a.display()
        )));
    }
    // MIN/MAX merge only insert-only deltas; a refresh with deletes recomputes instead.
    if c.q.has_extrema() && r.shapes.iter().any(|s| s.delta_shape(r.assume_insert_only).contains(DeltaShape::DELETES)) {
        return Err(Error::InvalidArgument(format!(
            "'{name}' has MIN/MAX, which merge insert-only deltas only; declare every table's delta_shape \
             INSERT_ONLY or UNCHANGED (or assume_insert_only), or recompute the view after deletes"
        )));
    }
    let dec = decide(&c.q, &r);
    let mut out = program(d, &c.q, &c.view.data, &dec);
    let doc = facts_document(d, &c.q, &c.view.data, &dec);
    out.push(Statement { order: out.len() as i64 + 1, kind: "facts", sql: doc.to_string() });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bind::bind;
    use crate::bind::tests::{star_select, TestCatalog};

    fn star() -> ViewQuery {
        bind(star_select(), &TestCatalog::star()).unwrap()
    }

    fn facts(text: &str) -> Resolved {
        resolve(&star(), &parse_facts(text).unwrap(), &|n| Ok(n == "elsewhere")).unwrap()
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
        assert_eq!(dec.rule, Rule::InclusionExclusion);
        assert_eq!(dec.fk_bits, 0b110);
        let c = plan::count_terms(&dec.ie);
        assert_eq!((c.total, c.run, c.fk_pruned), (7, 1, 6));
        assert_eq!(dec.ie.iter().find(|(_, s)| *s == TermStatus::Run).unwrap().0.mask, 0b001);
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
        assert_eq!(dec.rule, Rule::NTerm);
        assert_eq!(dec.proven.len(), 1);
        assert_eq!(dec.nterm.iter().filter(|(_, s)| *s == TermStatus::Run).count(), 3);
        // An unchanged store skips its term in both plans.
        let dec = decide(&star(), &facts(r#"{"delta_shape": {"store": "UNCHANGED"}}"#));
        assert_eq!(dec.empty_bits, 0b100);
        assert_eq!(dec.nterm, vec![(0, TermStatus::Run), (1, TermStatus::Run), (2, TermStatus::EmptySkipped)]);
        // assume_insert_only makes every leaf insert-only, so a proven FK prunes.
        let dec = decide(
            &star(),
            &facts(
                r#"{"assume_insert_only": true, "fk_relations": [{"child_table": "fact", "child_columns": "sid", "parent_table": "store", "parent_columns": "sid"}]}"#,
            ),
        );
        assert_eq!((dec.rule, dec.fk_bits), (Rule::InclusionExclusion, 0b100));
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
        assert_eq!(dec.rule, Rule::NTerm);
    }

    #[test]
    fn n_term_states_telescope() {
        assert_eq!(nterm_states(3, 0), vec![LeafState::Delta, LeafState::Old, LeafState::Old]);
        assert_eq!(nterm_states(3, 1), vec![LeafState::New, LeafState::Delta, LeafState::Old]);
        assert_eq!(nterm_states(3, 2), vec![LeafState::New, LeafState::New, LeafState::Delta]);
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
        let none = decide(
            &q,
            &facts(r#"{"delta_shape": {"fact": "UNCHANGED", "product": "UNCHANGED", "store": "UNCHANGED"}}"#),
        );
        assert!(program(Dialect::DuckDb, &q, &data, &none).is_empty());
        let doc = facts_document(Dialect::Spark, &q, &data, &none);
        assert_eq!(doc["rule"], "n_term");
        assert_eq!(doc["terms_pruned"].as_array().unwrap().len(), 3);
    }
}
