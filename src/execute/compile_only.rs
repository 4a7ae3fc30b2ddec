//! `openivm_compile_with_facts`: the refresh program of a maintained view for an engine that
//! captures its own deltas and vouches for its own facts, rendered and not run.
//!
//! The caller passes the facts as JSON: foreign keys (`fk_relations`), the shape of each table's
//! delta (`delta_shape`: INSERT_ONLY, UNCHANGED or GENERAL; a table not named is GENERAL) and
//! `assume_insert_only` (every delta is insert-only). The live catalog and RELY declarations are
//! not consulted: the facts replace them. A fact FK still counts only when the view's join
//! predicates equate all its columns (`fk_pruning::proven_relations`).
//!
//! The plan follows the reference design: when FK pruning removes an inclusion-exclusion term,
//! the pruned inclusion-exclusion plan (current-state scans, Möbius signs); otherwise the N-term
//! (telescoping) plan, one term per changed leaf i: leaves before i at their new state, leaf i
//! as its delta, leaves after i at their old state. Both skip the terms of unchanged leaves.
//!
//! A set operation (UNION [ALL], INTERSECT [ALL], EXCEPT [ALL]: `ViewQuery::branches`) always
//! takes inclusion-exclusion, as its refresh does: each branch its own 2^n - 1 terms over its own
//! leaves (`plan::plan_spans`), foreign keys proven and pruning within a branch, a table's one
//! `delta_<t>` read by every branch that reads the table, and all terms merged at once.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{json, Value as Json};

use crate::db::Sql;
use crate::error::{Error, Result};
use crate::execute::Cache;
use crate::front::catalog::{table_name, SqlCatalog};
use crate::ir::{TableId, ViewQuery};
use crate::plan::fk_pruning::{self, FactSource, ForeignKey, ProvenRelation};
use crate::plan::planner;
use crate::plan::terms::{self as plan, DeltaShape, Mask, Term, TermStatus};
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
            RawColumns::Text(t) => crate::declare::rely_fk::parse_columns(&t),
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
    let list = || tables.iter().map(TableId::dotted).collect::<Vec<_>>().join(", ");
    match matching.as_slice() {
        [one] => Ok(Some((*one).clone())),
        [] => Ok(None),
        _ => Err(Error::InvalidArgument(format!(
            "the facts name the table '{name}', which matches several tables of the view ({}); qualify it",
            list()
        ))),
    }
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
    let tables = q.tables();
    let mut unused = Vec::new();
    let mut find = |name: &str, fact: &str| -> Result<Option<TableId>> {
        if let Some(t) = resolve_table(&tables, name)? {
            return Ok(Some(t));
        }
        if !exists(name)? {
            return Err(Error::InvalidArgument(format!(
                "the facts name the table '{name}', which does not exist (the view reads {})",
                tables.iter().map(TableId::dotted).collect::<Vec<_>>().join(", ")
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
                        t.dotted()
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

pub use crate::plan::nterm::LeafState;
pub use crate::plan::planner::Rule;

/// The branch (index into `spans`) that leaf `i` belongs to.
pub fn leaf_branch(spans: &[(usize, usize)], i: usize) -> usize {
    plan::branch_of(spans, 1 << i).unwrap_or(0)
}

/// The term counts of each branch of `spans` in an inclusion-exclusion plan.
pub fn branch_counts(spans: &[(usize, usize)], ie: &[(Term, TermStatus)]) -> Vec<plan::TermCounts> {
    (0..spans.len())
        .map(|b| {
            let mine: Vec<(Term, TermStatus)> =
                ie.iter().filter(|(t, _)| plan::branch_of(spans, t.mask) == Some(b)).copied().collect();
            plan::count_terms(&mine)
        })
        .collect()
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
    /// The N-term rule's leaf order and its terms in that order (`plan::planner`).
    pub order: Vec<usize>,
    pub nterm: Vec<(usize, TermStatus)>,
    /// The group keys the MERGE matches on when they determine the others and no leaf they
    /// determine may delete (`merge_keys`); None: every key.
    pub merge_keys: Option<Vec<usize>>,
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
    let proven = fk_pruning::proven_relations(q, &r.fks);
    let rejected =
        r.fks.iter().filter(|fk| !proven.iter().any(|p| &p.fk == *fk)).map(|fk| (fk.clone(), rejection(fk))).collect();
    let fk_bits = fk_pruning::fk_skip_bits(&proven, &shapes);
    let spans = q.spans();
    // The caller's engine reads its tables' states before the batch (`old_state`), so the
    // N-term rule is open to it, as to a refresh of an all-DuckLake view.
    let program = planner::plan(&planner::Facts {
        spans: &spans,
        shapes: &shapes,
        relations: &proven,
        fk_skip: fk_bits,
        old_states: true,
    });
    let aliases: Vec<String> = q.leaves.iter().map(|l| l.alias.clone()).collect();
    let reason = program.reason(&aliases).unwrap_or_default();
    let merge_keys = crate::plan::merge_keys::merge_keys(q, &r.fks)
        .filter(|m| m.usable(|leaf| !insert_only[leaf]))
        .map(|m| m.matched);
    Decision {
        merge_keys,
        rule: program.rule,
        reason,
        leaf_table,
        leaf_shape,
        insert_only,
        empty_bits,
        fk_bits,
        proven,
        rejected,
        unused: r.unused.clone(),
        ie: program.inclusion_exclusion,
        order: program.order,
        nterm: program.nterm,
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
                let sources: Vec<Source> = crate::plan::nterm::states(&dec.order, i)
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
    rc::apply_terms(d, q, data, &terms, dec.merge_keys.as_deref())
        .into_iter()
        .enumerate()
        .map(|(i, sql)| Statement { order: i as i64 + 1, kind: "merge", sql })
        .collect()
}

fn fk_json(fk: &ForeignKey) -> Json {
    json!({
        "child_table": fk.child.dotted(),
        "child_columns": fk.child_columns,
        "parent_table": fk.parent.dotted(),
        "parent_columns": fk.parent_columns,
    })
}

fn delta_leaves(q: &ViewQuery, mask: Mask) -> Vec<String> {
    plan::leaves_of(mask).map(|i| q.leaves[i].alias.clone()).collect()
}

/// For a set operation, what the 'facts' row says of each branch: its leaves, its operand of an
/// INTERSECT / EXCEPT, and its terms' counts.
fn branches_json(q: &ViewQuery, dec: &Decision) -> Vec<Json> {
    let spans = q.spans();
    q.branches
        .iter()
        .zip(&spans)
        .zip(branch_counts(&spans, &dec.ie))
        .enumerate()
        .map(|(b, ((branch, &(first, n)), c))| {
            let mut j = json!({
                "branch": b,
                "leaves": (first..first + n).map(|i| q.leaves[i].alias.clone()).collect::<Vec<_>>(),
                "terms": c.total,
                "terms_run": c.run,
                "terms_fk_pruned": c.fk_pruned,
                "terms_empty_skipped": c.empty_skipped,
            });
            if let Some(side) = branch.side {
                j["side"] = json!(side);
            }
            j
        })
        .collect()
}

/// The 'facts' row: what the program was built from. For a set operation, leaves, proven FK
/// relations and terms carry their `branch`, and `branches` sums up each branch.
pub fn facts_document(d: Dialect, q: &ViewQuery, data: &Qualified, dec: &Decision) -> Json {
    let tables = q.tables();
    let deltas = rc::delta_relations(&tables);
    let spans = q.spans();
    let set_operation = !q.branches.is_empty();
    let with_branch = |mut j: Json, leaf: usize| {
        if set_operation {
            j["branch"] = json!(leaf_branch(&spans, leaf));
        }
        j
    };
    let leaves: Vec<Json> = q
        .leaves
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let j = json!({
                "leaf": i,
                "alias": l.alias,
                "table": l.table.dotted(),
                "delta_shape": dec.leaf_shape[i].as_str(),
                "insert_only": dec.insert_only[i],
                "delta_relation": deltas[dec.leaf_table[i]],
            });
            with_branch(j, i)
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
            with_branch(j, p.parent_leaf)
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
            let one = |t: &Term, s: &TermStatus| {
                let j = json!({"mask": t.mask, "delta_leaves": delta_leaves(q, t.mask), "sign": t.sign, "status": s.as_str()});
                with_branch(j, t.mask.trailing_zeros() as usize)
            };
            (
                dec.ie.iter().filter(|(_, s)| *s == TermStatus::Run).map(|(t, s)| one(t, s)).collect(),
                dec.ie.iter().filter(|(_, s)| *s != TermStatus::Run).map(|(t, s)| one(t, s)).collect(),
            )
        }
        Rule::NTerm => {
            let one = |i: usize, s: &TermStatus| {
                let states: Vec<&str> = crate::plan::nterm::states(&dec.order, i)
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
    let mut doc = json!({
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
        "merge_keys": merge_key_names(q, dec),
    });
    if set_operation {
        doc["branches"] = json!(branches_json(q, dec));
    }
    doc
}

/// The stored key columns the program's MERGE matches on (empty without a MERGE of groups).
fn merge_key_names(q: &ViewQuery, dec: &Decision) -> Vec<String> {
    render::matched_keys(&render::stored_columns(q).0, dec.merge_keys.as_deref())
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
    use crate::ast::{Compared, Constant, Expr, FromItem, SelectItem, UnionBranch};
    use crate::front::bind::bind;
    use crate::front::bind::tests::{col, eq, join, star_select, table, TestCatalog};

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
        assert_eq!(dec.rule, Rule::InclusionExclusion);
        assert!(dec.reason.starts_with("a set operation: inclusion-exclusion per branch"), "{}", dec.reason);
        assert!(dec.nterm.is_empty());
        let masks: Vec<(Mask, i32)> = dec.ie.iter().map(|(t, _)| (t.mask, t.sign)).collect();
        assert_eq!(masks, vec![(0b001, 1), (0b010, 1), (0b011, -1), (0b100, 1)]);
        assert!(dec.ie.iter().all(|(_, s)| *s == TermStatus::Run));
        // The FK fact -> product, product insert-only: branch 0 proves it and prunes its terms
        // with Δp (0b010, 0b011); branch 1 has no fact leaf, so its Δp term runs.
        let fk = r#"{"fk_relations": [{"child_table": "fact", "child_columns": "pid", "parent_table": "product",
                     "parent_columns": "pid"}], "delta_shape": {"product": "INSERT_ONLY"}}"#;
        let dec = decide(&q, &resolved(&q, fk));
        assert_eq!(dec.proven.len(), 1);
        assert_eq!((dec.proven[0].child_leaf, dec.proven[0].parent_leaf), (0, 1));
        assert_eq!(dec.fk_bits, 0b010);
        let statuses: Vec<TermStatus> = dec.ie.iter().map(|(_, s)| *s).collect();
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
            .map(|(n, (ty, collation))| OutputColumn {
                name: n.to_string(),
                ty: ty.clone(),
                collation: collation.clone(),
            })
            .collect();
        let sql = crate::render::visible_rows(&q, "stored", &outputs, &[]);
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
        assert!(sql.contains(
            "UNION ALL SELECT `p`.`pid` AS `openivm_g0`, `p`.`name` AS `openivm_g1`, (1 * `p`.`openivm_multiplicity`) \
             AS `openivm_weight` FROM `delta_product` AS `p` WHERE TRUE"
        ), "{sql}");
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
        // assume_insert_only makes every leaf insert-only, so a proven FK prunes: the store's 4
        // inclusion-exclusion terms (3 of 7 run), and its N-term term with the store placed
        // first (2 of 3 run), so the N-term plan is still the smaller one.
        let dec = decide(
            &star(),
            &facts(
                r#"{"assume_insert_only": true, "fk_relations": [{"child_table": "fact", "child_columns": "sid", "parent_table": "store", "parent_columns": "sid"}]}"#,
            ),
        );
        assert_eq!((dec.rule, dec.fk_bits, dec.order.clone()), (Rule::NTerm, 0b100, vec![1, 2, 0]));
        assert_eq!(dec.nterm, vec![(1, TermStatus::Run), (2, TermStatus::FkPruned), (0, TermStatus::Run)]);
        // Both dimensions referenced and insert-only: inclusion-exclusion runs the fact's term
        // alone, as the N-term plan does; the tie keeps inclusion-exclusion.
        let dec = decide(
            &star(),
            &facts(
                r#"{"assume_insert_only": true, "fk_relations": [{"child_table": "fact", "child_columns": "sid", "parent_table": "store", "parent_columns": "sid"}, {"child_table": "fact", "child_columns": "pid", "parent_table": "product", "parent_columns": "pid"}]}"#,
            ),
        );
        assert_eq!((dec.rule, plan::count_terms(&dec.ie).run), (Rule::InclusionExclusion, 1));
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
        let none = decide(
            &q,
            &facts(r#"{"delta_shape": {"fact": "UNCHANGED", "product": "UNCHANGED", "store": "UNCHANGED"}}"#),
        );
        assert!(program(Dialect::DuckDb, &q, &data, &none).is_empty());
        let doc = facts_document(Dialect::Spark, &q, &data, &none);
        // No term runs in either rule: the tie keeps inclusion-exclusion, all 7 terms skipped.
        assert_eq!(doc["rule"], "inclusion_exclusion");
        assert_eq!(doc["terms_pruned"].as_array().unwrap().len(), 7);
    }
}
