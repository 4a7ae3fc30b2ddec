//! What the database knows: tables, columns, functions. Reads DuckDB's catalog functions with
//! the fixed queries in sql/catalog, and resolves names the way DuckDB does.

use std::cell::OnceCell;

use crate::ast::Expr;
use crate::ast::TableName;
use crate::ast::{FromItem, Select};
use crate::db::{read_all, read_one, typed_row, Sql};
use crate::error::{Error, Result};
use crate::front::bind::{Catalog, FunctionInfo, RelationKind, ResolvedTable, StageQuery, ViewDefinition};
use crate::ir::{ColumnDef, Leaf, TableId};
use crate::render::Storage;
use crate::sql::catalog::DATABASE_TYPE;

use crate::sql::catalog::COLUMNS;
use crate::sql::catalog::DEFAULTS;
use crate::sql::catalog::FUNCTION;
use crate::sql::catalog::MAIN_TABLE_EXISTS;
use crate::sql::catalog::METADATA_TABLE_EXISTS;
use crate::sql::catalog::PLAN_TREE;
use crate::sql::catalog::RELATIONS_NAMED;
use crate::sql::catalog::VIEW_DEFINITION;

/// Whether one of the extension's metadata tables exists yet.
pub fn main_table_exists(db: &dyn Sql, name: &str) -> Result<bool> {
    Ok(MAIN_TABLE_EXISTS.scalar_int(db, [name])? > 0)
}

/// The collated columns a bound plan's first table scan returns: (column name, collation).
fn collations(plan: &serde_json::Value) -> Vec<(String, String)> {
    use serde_json::Value;
    match plan {
        Value::Array(items) => items.iter().map(collations).find(|c| !c.is_empty()).unwrap_or_default(),
        Value::Object(o) if o.get("type").and_then(Value::as_str) == Some("LOGICAL_GET") => {
            let names = o.get("names").and_then(Value::as_array).into_iter().flatten();
            let types = o.get("returned_types").and_then(Value::as_array).into_iter().flatten();
            names
                .zip(types)
                .filter_map(|(n, t)| {
                    let collation = t.get("type_info")?.get("collation")?.as_str().filter(|c| !c.is_empty())?;
                    Some((n.as_str()?.to_string(), collation.to_string()))
                })
                .collect()
        }
        Value::Object(o) => o.values().map(collations).find(|c| !c.is_empty()).unwrap_or_default(),
        _ => vec![],
    }
}

typed_row! {
    /// A row of `catalog/function.sql`: a function's overloads, whether any is an aggregate, any
    /// is CONSISTENT, all are built in (NULL without overloads).
    struct FunctionRow {
        overloads: i64,
        aggregate: Option<bool>,
        consistent: Option<bool>,
        internal: Option<bool>,
    }
}

/// Whether an attached database is a DuckLake catalog.
pub fn is_ducklake(db: &dyn Sql, catalog: &str) -> Result<bool> {
    let rows: Vec<(Option<String>,)> = read_all(&crate::sql::catalog::DATABASE_TYPE.rows(db, [catalog])?)?;
    Ok(rows.into_iter().next().and_then(|(t,)| t).is_some_and(|t| t.eq_ignore_ascii_case("ducklake")))
}

/// Whether the metadata table `name` exists in the attached database `catalog`.
pub fn metadata_table_exists(db: &dyn Sql, catalog: &str, name: &str) -> Result<bool> {
    Ok(METADATA_TABLE_EXISTS.scalar_int(db, [catalog, name])? > 0)
}

/// Splits a possibly qualified, possibly quoted name (`s."My View"`) into its parts.
pub fn split_name(s: &str) -> Result<Vec<String>> {
    let bad = || Error::InvalidArgument(format!("'{s}' is not a valid name"));
    let mut parts = Vec::new();
    let mut chars = s.trim().chars().peekable();
    loop {
        let mut part = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        part.push('"');
                    }
                    Some('"') => break,
                    Some(c) => part.push(c),
                    None => return Err(bad()),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == '.' {
                    break;
                }
                part.push(c);
                chars.next();
            }
            part = part.trim().to_string();
        }
        if part.is_empty() {
            return Err(bad());
        }
        parts.push(part);
        match chars.next() {
            None => break,
            Some('.') => continue,
            Some(_) => return Err(bad()),
        }
    }
    if parts.len() > 3 {
        return Err(bad());
    }
    Ok(parts)
}

/// A table name from a user's text argument.
pub fn table_name(s: &str) -> Result<TableName> {
    let mut parts = split_name(s)?;
    let name = parts.pop().ok_or_else(|| Error::InvalidArgument(format!("'{s}' is not a valid name")))?;
    let schema = parts.pop();
    let catalog = parts.pop();
    Ok(TableName { catalog, schema, name })
}

/// The database a view name means and the name within it. `catalog.schema.name` names the
/// database; `x.name` is schema `x` of the home database, or the `main` schema of the attached
/// database `x` (both is ambiguous, as in DuckDB); a one-part name is in the home database.
/// `first_is_schema` / `first_is_database`: whether the first part of a two-part name is a
/// schema of the home database / an attached database.
pub fn view_database(
    name: &TableName,
    home: &str,
    first_is_schema: bool,
    first_is_database: bool,
) -> Result<(String, TableName)> {
    let within = |schema: Option<String>| TableName { catalog: None, schema, name: name.name.clone() };
    match (&name.catalog, &name.schema) {
        (Some(c), schema) if !c.eq_ignore_ascii_case(home) => Ok((c.clone(), within(schema.clone()))),
        (None, Some(x)) if first_is_database && !x.eq_ignore_ascii_case(home) => {
            if first_is_schema {
                return Err(Error::InvalidArgument(format!(
                    "'{x}.{n}' is ambiguous: '{x}' is both a schema and an attached database; write {home}.{x}.{n} or {x}.main.{n}",
                    n = name.name
                )));
            }
            Ok((x.clone(), within(Some("main".into()))))
        }
        (_, schema) => Ok((home.to_string(), within(schema.clone()))),
    }
}

/// The query of a DuckDB view, read from the definition DuckDB writes back for it
/// (`duckdb_views().sql`): `CREATE VIEW <name> [(<aliases>)] AS <query>;`, where the name is
/// `schema.name` outside `main`, each part quoted where needed. The name is read as identifiers
/// and must be the view's own; None when the text has another form.
pub fn view_query_text<'a>(sql: &'a str, schema: &str, name: &str) -> Option<&'a str> {
    let rest = sql.strip_prefix("CREATE VIEW ")?;
    let (first, rest) = identifier(rest)?;
    let (view_schema, view_name, rest) = match rest.strip_prefix('.') {
        Some(r) => {
            let (second, r) = identifier(r)?;
            (first, second, r)
        }
        None => ("main".to_string(), first, rest),
    };
    if view_schema != schema || view_name != name {
        return None;
    }
    let rest = match rest.strip_prefix(" (") {
        Some(mut r) => loop {
            let (_, after) = identifier(r)?;
            if let Some(a) = after.strip_prefix(", ") {
                r = a;
            } else {
                break after.strip_prefix(')')?;
            }
        },
        None => rest,
    };
    let query = rest.strip_prefix(" AS ")?.strip_suffix(';')?;
    (!query.trim().is_empty()).then_some(query)
}

/// One identifier as DuckDB writes it: `"..."` (with `""` for a quote) or a bare word.
fn identifier(s: &str) -> Option<(String, &str)> {
    if let Some(body) = s.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = body.char_indices();
        while let Some((i, c)) = chars.next() {
            if c == '"' {
                if body[i + 1..].starts_with('"') {
                    out.push('"');
                    chars.next();
                } else {
                    return Some((out, &body[i + 1..]));
                }
            } else {
                out.push(c);
            }
        }
        return None;
    }
    let end = s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len());
    (end > 0).then(|| (s[..end].to_string(), &s[end..]))
}

/// Whether a parsed query reads one of openivm's stored results (a maintained view's own query).
fn reads_stored_result(from: &FromItem) -> bool {
    match from {
        FromItem::Table { name, .. } => {
            name.schema.as_deref().is_some_and(|s| s.eq_ignore_ascii_case(crate::store::metadata::SCHEMA))
        }
        FromItem::Subquery { select, .. } => reads_stored_result(&select.from),
        FromItem::Union { branches, .. } => branches.iter().any(|b| reads_stored_result(&b.select.from)),
        FromItem::UnionBranch { branch, .. } => reads_stored_result(&branch.select.from),
        FromItem::Join { left, right, .. } => reads_stored_result(left) || reads_stored_result(right),
    }
}

/// A relation found in the catalog.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub catalog: String,
    pub schema: String,
    pub name: String,
    pub kind: RelationKind,
}

/// Picks the relation a name means, following DuckDB: one part is looked up in the default
/// catalog and schema; two parts are `schema.name` in the default catalog or `catalog.name` in
/// that catalog's `main` schema (both matching is an error asking for three parts); three parts
/// are `catalog.schema.name`. Comparison ignores case, as DuckDB's does for identifiers.
pub fn resolve(
    name: &TableName,
    candidates: &[Candidate],
    default_catalog: &str,
    default_schema: &str,
) -> Result<Option<Candidate>> {
    let is = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
    let find = |cat: &str, sch: &str| candidates.iter().find(|c| is(&c.catalog, cat) && is(&c.schema, sch)).cloned();
    match (&name.catalog, &name.schema) {
        (Some(cat), Some(sch)) => Ok(find(cat, sch)),
        (None, Some(x)) => {
            let as_schema = find(default_catalog, x);
            let as_catalog = find(x, "main");
            match (as_schema, as_catalog) {
                (Some(a), Some(b)) if a != b => Err(Error::Bind(format!(
                    "'{x}.{n}' is ambiguous: '{x}' is both a schema and an attached database; write {d}.{x}.{n} or {x}.main.{n}",
                    n = name.name,
                    d = default_catalog
                ))),
                (a, b) => Ok(a.or(b)),
            }
        }
        (Some(cat), None) => Ok(find(cat, "main")),
        (None, None) => Ok(find(default_catalog, default_schema)),
    }
}

/// Makes a maintained stage for a query text (None: it would not be maintained incrementally).
pub type StageMaker<'a> = &'a dyn Fn(&str) -> Result<Option<TableId>>;

/// The catalog as seen through the extension's connection.
pub struct SqlCatalog<'a> {
    db: &'a dyn Sql,
    defaults: OnceCell<(String, String)>,
    /// Set while a view is created: missing stages are made (else only existing ones are found).
    stage_maker: Option<StageMaker<'a>>,
}

impl<'a> SqlCatalog<'a> {
    pub fn new(db: &'a dyn Sql) -> SqlCatalog<'a> {
        SqlCatalog { db, defaults: OnceCell::new(), stage_maker: None }
    }

    /// A catalog that makes the stages a query needs (while the view is created).
    pub fn making_stages(db: &'a dyn Sql, maker: StageMaker<'a>) -> SqlCatalog<'a> {
        SqlCatalog { db, defaults: OnceCell::new(), stage_maker: Some(maker) }
    }

    /// The default catalog and schema of the extension's connection (read once per call).
    pub fn defaults(&self) -> Result<(String, String)> {
        if let Some(d) = self.defaults.get() {
            return Ok(d.clone());
        }
        let d: (String, String) = read_one(&DEFAULTS.rows(self.db, [])?, DEFAULTS.text)?;
        Ok(self.defaults.get_or_init(|| d).clone())
    }

    pub fn columns(&self, id: &TableId) -> Result<Vec<ColumnDef>> {
        let rows: Vec<(String, String)> = read_all(&COLUMNS.rows(self.db, [&id.catalog, &id.schema, &id.name])?)?;
        let mut columns: Vec<ColumnDef> =
            rows.into_iter().map(|(name, ty)| ColumnDef { name, ty, collation: None }).collect();
        if columns.iter().any(|c| c.ty.eq_ignore_ascii_case("VARCHAR")) {
            // DuckDB's catalog functions name a collated column's type VARCHAR; its bound plan
            // keeps the collation.
            let scan = format!("SELECT * FROM {}", crate::render::table(id));
            let plan = PLAN_TREE.scalar(self.db, [&scan])?.unwrap_or_default();
            let plan: serde_json::Value = serde_json::from_str(&plan).map_err(|e| Error::Internal(e.to_string()))?;
            for (name, collation) in collations(&plan) {
                if let Some(c) = columns.iter_mut().find(|c| c.name == name) {
                    c.collation = Some(collation);
                }
            }
        }
        Ok(columns)
    }

    pub fn find(&self, name: &TableName) -> Result<Option<Candidate>> {
        let (cat, sch) = self.defaults()?;
        self.find_from(name, &cat, &sch)
    }

    /// Like `find`, with another default catalog and schema (as inside a view).
    fn find_from(&self, name: &TableName, catalog: &str, schema: &str) -> Result<Option<Candidate>> {
        let rows: Vec<(String, String, String, String)> =
            read_all(&RELATIONS_NAMED.rows(self.db, [&name.name, &name.name])?)?;
        let candidates: Vec<Candidate> = rows
            .into_iter()
            .map(|(catalog, schema, name, kind)| Candidate {
                catalog,
                schema,
                name,
                kind: if kind == "view" { RelationKind::View } else { RelationKind::Table },
            })
            .collect();
        resolve(name, &candidates, catalog, schema)
    }

    /// Names the tables of a view's query as DuckDB binds them: in the view's catalog and schema
    /// first, then as the connection would.
    fn qualify_in(&self, from: &mut FromItem, id: &TableId) -> Result<()> {
        match from {
            FromItem::Table { name, .. } => {
                if name.catalog.is_none() {
                    if let Some(c) = self.find_from(name, &id.catalog, &id.schema)? {
                        *name = TableName { catalog: Some(c.catalog), schema: Some(c.schema), name: c.name };
                    }
                }
                Ok(())
            }
            FromItem::Subquery { select, .. } => self.qualify_in(&mut select.from, id),
            FromItem::Union { branches, .. } => {
                branches.iter_mut().try_for_each(|b| self.qualify_in(&mut b.select.from, id))
            }
            FromItem::UnionBranch { branch, .. } => self.qualify_in(&mut branch.select.from, id),
            FromItem::Join { left, right, .. } => {
                self.qualify_in(left, id)?;
                self.qualify_in(right, id)
            }
        }
    }
}

impl Catalog for SqlCatalog<'_> {
    fn table(&self, name: &TableName) -> Result<Option<ResolvedTable>> {
        let Some(c) = self.find(name)? else {
            return Ok(None);
        };
        let id = TableId { catalog: c.catalog, schema: c.schema, name: c.name };
        let columns = if c.kind == RelationKind::Table { self.columns(&id)? } else { vec![] };
        Ok(Some(ResolvedTable { id, kind: c.kind, columns }))
    }

    fn stage(&self, query: &StageQuery) -> Result<Option<ResolvedTable>> {
        let Some(sql) = crate::sql::catalog::DESERIALIZE.scalar(self.db, [&query.tree])? else {
            return Ok(None);
        };
        let sql = if query.distinct { crate::render::distinct_stage(&sql) } else { sql };
        let (catalog, _) = self.defaults()?;
        let known = if main_table_exists(self.db, "openivm_views")? {
            read_all::<(String,)>(&crate::sql::views::STAGE_FIND.rows(self.db, [&sql])?)?
                .into_iter()
                .next()
                .map(|(n,)| n)
        } else {
            None
        };
        let found = match known {
            Some(name) => Some(TableId { catalog, schema: crate::store::metadata::SCHEMA.into(), name }),
            None => match self.stage_maker {
                Some(make) => make(&sql)?,
                None => None,
            },
        };
        let Some(id) = found else {
            return Ok(None);
        };
        let columns = self.columns(&id)?;
        Ok(Some(ResolvedTable { id, kind: RelationKind::Table, columns }))
    }

    fn view(&self, id: &TableId) -> Result<Option<ViewDefinition>> {
        let Some(sql) = VIEW_DEFINITION.scalar(self.db, [&id.catalog, &id.schema, &id.name])? else {
            return Ok(None);
        };
        // A view of this database's metadata is maintained, whatever its query's form (it
        // reads openivm's stored result, in forms a view query may not use).
        if id.catalog == self.defaults()?.0
            && main_table_exists(self.db, "openivm_views")?
            && !crate::sql::views::FIND.rows(self.db, [&id.schema, &id.name])?.is_empty()
        {
            return Ok(Some(ViewDefinition::Maintained { columns: self.columns(id)? }));
        }
        let unreadable = |why: &str| {
            Error::Unsupported(format!(
                "a view whose definition openivm cannot read ('{}.{}': {why})",
                id.schema, id.name
            ))
        };
        let text = view_query_text(&sql, &id.schema, &id.name).ok_or_else(|| unreadable("an unexpected form"))?;
        let json = crate::sql::catalog::PARSE_TREE
            .scalar(self.db, [text])?
            .ok_or_else(|| unreadable("DuckDB returned no parse tree"))?;
        let mut select: Select = match crate::front::parse::parse_select(&json) {
            Ok(s) => s,
            Err(Error::Parse(why)) => return Err(unreadable(&why)),
            Err(e) => return Err(e),
        };
        if reads_stored_result(&select.from) {
            return Ok(Some(ViewDefinition::Maintained { columns: self.columns(id)? }));
        }
        self.qualify_in(&mut select.from, id)?;
        let columns = self.columns(id)?.into_iter().map(|c| c.name).collect();
        Ok(Some(ViewDefinition::Query { select: Box::new(select), sql, columns, tree: Some(json) }))
    }

    fn function(&self, name: &str) -> Result<Option<FunctionInfo>> {
        let Some(r) = read_all::<FunctionRow>(&FUNCTION.rows(self.db, [name])?)?.into_iter().next() else {
            return Ok(None);
        };
        if r.overloads == 0 {
            return Ok(None);
        }
        Ok(Some(FunctionInfo {
            aggregate: r.aggregate == Some(true),
            deterministic: r.consistent != Some(false),
            builtin: r.internal == Some(true),
        }))
    }

    fn expression_types(&self, leaves: &[Leaf], exprs: &[Expr]) -> Result<Vec<Option<String>>> {
        if exprs.is_empty() {
            return Ok(vec![]);
        }
        let rows = self.db.query(&crate::render::describe_expressions(leaves, exprs))?;
        if rows.len() != exprs.len() {
            return Err(Error::Internal(format!(
                "typing {} expressions of the view query gave {} types",
                exprs.len(),
                rows.len()
            )));
        }
        Ok(read_all::<(String, String)>(&rows)?.into_iter().map(|(_, ty)| Some(ty)).collect())
    }

    fn union_types(&self, branches: &[Vec<String>]) -> Result<Vec<String>> {
        let width = branches.first().map_or(0, Vec::len);
        if width == 0 {
            return Ok(vec![]);
        }
        let rows = self.db.query(&crate::render::describe(&crate::render::typed_union(branches)))?;
        if rows.len() != width {
            return Err(Error::Internal(format!("typing a union of {width} columns gave {} types", rows.len())));
        }
        Ok(read_all::<(String, String)>(&rows)?.into_iter().map(|(_, ty)| ty).collect())
    }
}

/// The kind of the attached database `catalog`, which keeps views (refused when views cannot
/// live there).
pub fn storage_of(db: &dyn Sql, catalog: &str) -> Result<Storage> {
    match database_type(db, catalog)? {
        None => Ok(Storage::DuckDb),
        Some(t) => Storage::of_type(&t).ok_or_else(|| unsupported_home(catalog, &t)),
    }
}

pub(crate) fn unsupported_home(catalog: &str, ty: &str) -> Error {
    Error::InvalidArgument(format!(
        "maintained views are kept in DuckDB or DuckLake databases; '{catalog}' is a {ty} database"
    ))
}

pub(crate) fn database_type(db: &dyn Sql, name: &str) -> Result<Option<String>> {
    Ok(DATABASE_TYPE.rows(db, [name])?.into_iter().next().and_then(|r| r.into_iter().next().flatten()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(catalog: Option<&str>, schema: Option<&str>, name: &str) -> TableName {
        TableName { catalog: catalog.map(Into::into), schema: schema.map(Into::into), name: name.into() }
    }

    #[test]
    fn a_view_name_picks_its_database() {
        let at = |t: &TableName, schema, database| view_database(t, "shop", schema, database).unwrap();
        assert_eq!(at(&n(None, None, "v"), false, false), ("shop".into(), n(None, None, "v")));
        assert_eq!(at(&n(None, Some("s"), "v"), true, false), ("shop".into(), n(None, Some("s"), "v")));
        assert_eq!(at(&n(None, Some("other"), "v"), false, true), ("other".into(), n(None, Some("main"), "v")));
        assert_eq!(at(&n(Some("other"), Some("s"), "v"), false, false), ("other".into(), n(None, Some("s"), "v")));
        // the home database named explicitly is the home database
        assert_eq!(at(&n(Some("SHOP"), Some("s"), "v"), false, false), ("shop".into(), n(None, Some("s"), "v")));
        assert!(view_database(&n(None, Some("x"), "v"), "shop", true, true).is_err());
    }

    fn cand(c: &str, s: &str) -> Candidate {
        Candidate { catalog: c.into(), schema: s.into(), name: "fact".into(), kind: RelationKind::Table }
    }

    fn name(parts: &[&str]) -> TableName {
        let mut p: Vec<Option<String>> = parts.iter().map(|s| Some(s.to_string())).collect();
        while p.len() < 3 {
            p.insert(0, None);
        }
        TableName { catalog: p[0].clone(), schema: p[1].clone(), name: p[2].clone().unwrap() }
    }

    #[test]
    fn resolves_like_duckdb() {
        let all = vec![cand("memory", "main"), cand("memory", "data"), cand("data", "main"), cand("other", "main")];
        let r = |parts: &[&str]| resolve(&name(parts), &all, "memory", "main");
        assert_eq!(r(&["fact"]).unwrap(), Some(cand("memory", "main")));
        assert_eq!(r(&["other", "fact"]).unwrap(), Some(cand("other", "main")));
        assert_eq!(r(&["OTHER", "fact"]).unwrap(), Some(cand("other", "main")));
        assert_eq!(r(&["data", "main", "fact"]).unwrap(), Some(cand("data", "main")));
        assert_eq!(r(&["memory", "data", "fact"]).unwrap(), Some(cand("memory", "data")));
        let err = r(&["data", "fact"]).unwrap_err().to_string();
        assert!(err.contains("ambiguous"), "{err}");
        assert_eq!(r(&["nowhere", "fact"]).unwrap(), None);
    }

    #[test]
    fn reads_the_query_of_a_view_definition() {
        let q = |sql, schema, name| view_query_text(sql, schema, name);
        assert_eq!(
            q("CREATE VIEW v1 AS SELECT a FROM t WHERE (a > 1);", "main", "v1"),
            Some("SELECT a FROM t WHERE (a > 1)")
        );
        assert_eq!(
            q("CREATE VIEW s.\"My V\" (x, \"y \"\"y\") AS SELECT a, b FROM t;", "s", "My V"),
            Some("SELECT a, b FROM t")
        );
        assert_eq!(
            q("CREATE VIEW v3 AS WITH q AS (SELECT 1)SELECT * FROM q;", "main", "v3"),
            Some("WITH q AS (SELECT 1)SELECT * FROM q")
        );
        // another name, schema or form: not read
        assert_eq!(q("CREATE VIEW v1 AS SELECT 1;", "main", "v2"), None);
        assert_eq!(q("CREATE VIEW v1 AS SELECT 1;", "s", "v1"), None);
        assert_eq!(q("CREATE VIEW v1 AS SELECT 1", "main", "v1"), None);
        assert_eq!(q("CREATE MACRO v1 AS 1;", "main", "v1"), None);
        assert_eq!(q("CREATE VIEW \"v1 AS SELECT 1;", "main", "v1"), None);
    }

    #[test]
    fn splits_names() {
        assert_eq!(split_name("v").unwrap(), vec!["v"]);
        assert_eq!(split_name("s.v").unwrap(), vec!["s", "v"]);
        assert_eq!(split_name("\"My.View\"").unwrap(), vec!["My.View"]);
        assert_eq!(split_name("db.\"a\"\"b\".t").unwrap(), vec!["db", "a\"b", "t"]);
        assert!(split_name("").is_err());
        assert!(split_name("a..b").is_err());
        assert!(split_name("a.b.c.d").is_err());
    }
}
