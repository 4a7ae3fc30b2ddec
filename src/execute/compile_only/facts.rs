//! The facts a caller passes, parsed and resolved against the view's tables.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value as Json;

use crate::error::{Error, Result};
use crate::front::catalog::table_name;
use crate::ir::{TableId, ViewQuery};
use crate::plan::fk_pruning::{FactSource, ForeignKey};
use crate::plan::terms::DeltaShape;
use crate::render::Dialect;

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
