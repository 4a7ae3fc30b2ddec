//! Trusted RELY foreign keys: declared by the user for tables whose catalog carries no
//! FOREIGN KEY, and valid only for the two table incarnations they were declared for.
//!
//! DuckDB offers no DDL hook, so a declaration's validity is checked when it is used, from what
//! DuckDB itself keeps with each table:
//! - an *incarnation token* in the COMMENT of each declared key column (a marker appended to the
//!   user's own comment, which is kept). DuckDB keeps column comments through reopening, a
//!   rolled-back DROP and renames, and loses them with the column on DROP TABLE, CREATE OR
//!   REPLACE, DROP + CREATE, and DROP COLUMN (a re-added column of the same name has none);
//! - the table's column signature (names and types in order), recorded with the token in
//!   `main.openivm_source_generations` of the table's own database: ADD, DROP, RENAME and
//!   retyping of any column change it.
//!
//! A declaration authorizes pruning only while every declared column of both tables still
//! carries its token and the token's signature is the tables' current one.
//!
//! A table of a DuckLake catalog carries nothing: its token is made from what the lake's
//! metadata keeps, its durable DuckLake table id (kept by a rename, new after DROP + CREATE)
//! and its column signature (`lake_token`), so nothing is written into the lake. Its
//! declarations are matched to a view's tables by that id, not by name: a renamed table keeps
//! them.

use crate::ast::TableName;
use crate::db::in_transaction;
use crate::db::{read_all, to_json, typed_row, Sql};
use crate::error::{Error, Result};
use crate::front::bind::RelationKind;
use crate::front::catalog::table_name;
use crate::front::catalog::SqlCatalog;
use crate::ir::{ColumnDef, TableId};
use crate::plan::fk_pruning::{FactSource, ForeignKey};
use crate::render;
use crate::store::home;
use crate::store::metadata;

use crate::sql::facts::COLUMN_COMMENTS;
use crate::sql::facts::GENERATIONS_EXISTS;
use crate::sql::facts::NEW_TOKEN;
use crate::sql::facts::RELY_DELETE as DELETE;
use crate::sql::facts::RELY_INSERT as INSERT;
use crate::sql::facts::RELY_REVOKE as REVOKE;

/// The marker that carries a table's incarnation token inside its comment.
const MARKER: &str = "openivm:incarnation=";

/// What a declaration stored, for the caller.
pub struct Declared {
    pub child: String,
    pub child_columns: String,
    pub parent: String,
    pub parent_columns: String,
}

/// Reads a column list: a JSON array of strings, or names separated by commas (a name may be
/// double-quoted to keep a comma or spaces).
pub fn parse_columns(arg: &str) -> Result<Vec<String>> {
    let trimmed = arg.trim();
    let cols: Vec<String> = if trimmed.starts_with('[') {
        serde_json::from_str::<Vec<String>>(trimmed)
            .map_err(|_| Error::InvalidArgument(format!("column list {arg} is not a JSON array of strings")))?
    } else {
        let mut out = Vec::new();
        let mut cur = String::new();
        let mut quoted = false;
        for c in trimmed.chars() {
            match c {
                '"' => quoted = !quoted,
                ',' if !quoted => out.push(std::mem::take(&mut cur).trim().to_string()),
                c => cur.push(c),
            }
        }
        out.push(cur.trim().to_string());
        out
    };
    if cols.is_empty() || cols.iter().any(|c| c.is_empty()) {
        return Err(Error::InvalidArgument(format!("column list '{arg}' must name at least one column, none empty")));
    }
    Ok(cols)
}

/// The token inside a comment, if any, and the user's part of the comment.
pub fn split_comment(comment: &str) -> (Option<String>, String) {
    match comment.rfind(MARKER) {
        Some(at) => {
            let token = comment[at + MARKER.len()..].trim().to_string();
            (Some(token).filter(|t| !t.is_empty()), comment[..at].trim_end().to_string())
        }
        None => (None, comment.to_string()),
    }
}

fn with_marker(user_comment: &str, token: &str) -> String {
    if user_comment.is_empty() {
        format!("{MARKER}{token}")
    } else {
        format!("{user_comment} {MARKER}{token}")
    }
}

const BETWEEN_TABLES: &str = "RELY foreign keys are declared between tables";

fn signature(columns: &[ColumnDef]) -> Result<String> {
    to_json(columns)
}

/// The table `arg` names, with its columns; `only_tables` says why a view is refused.
pub(crate) fn resolve_table(db: &dyn Sql, arg: &str, only_tables: &str) -> Result<(TableId, Vec<ColumnDef>)> {
    let name: TableName = table_name(arg)?;
    let cat = SqlCatalog::new(db);
    match cat.find(&name)? {
        Some(c) if c.kind == RelationKind::Table => {
            let id = TableId { catalog: c.catalog, schema: c.schema, name: c.name };
            let cols = cat.columns(&id)?;
            Ok((id, cols))
        }
        Some(_) => Err(Error::InvalidArgument(format!("'{arg}' is a view; {only_tables}"))),
        None => Err(Error::Bind(format!("table '{arg}' does not exist"))),
    }
}

pub(crate) fn match_columns(table: &TableId, columns: &[ColumnDef], wanted: &[String]) -> Result<Vec<String>> {
    wanted
        .iter()
        .map(|w| {
            columns.iter().find(|c| c.name.eq_ignore_ascii_case(w)).map(|c| c.name.clone()).ok_or_else(|| {
                Error::Bind(format!("table '{}.{}.{}' has no column '{w}'", table.catalog, table.schema, table.name))
            })
        })
        .collect()
}

pub(crate) fn column_comments(db: &dyn Sql, t: &TableId) -> Result<Vec<(String, String)>> {
    read_all(&COLUMN_COMMENTS.rows(db, [&t.catalog, &t.schema, &t.name])?)
}

/// Whether `token` is a live incarnation of the table: recorded with its current columns.
fn token_matches_columns(db: &dyn Sql, t: &TableId, columns: &[ColumnDef], token: &str) -> Result<bool> {
    if GENERATIONS_EXISTS.scalar_int(db, [&t.catalog])? == 0 {
        return Ok(false);
    }
    let rows: Vec<(Option<String>,)> =
        read_all(&db.query_with(&render::find_generation(&t.catalog), &[&t.schema, &t.name, token])?)?;
    let wanted = signature(columns)?;
    Ok(rows.iter().any(|(found,)| found.as_deref() == Some(wanted.as_str())))
}

/// The prefix of the tokens of DuckLake tables.
const LAKE: &str = "ducklake:";

/// The token of a DuckLake table's current incarnation: `ducklake:<table id>:<columns>` (None:
/// the table is not in a DuckLake catalog).
fn lake_token(db: &dyn Sql, t: &TableId, columns: &[ColumnDef]) -> Result<Option<String>> {
    if !crate::front::catalog::is_ducklake(db, &t.catalog)? {
        return Ok(None);
    }
    let id = crate::capture::ducklake::table_id(db, t)?
        .ok_or_else(|| Error::Bind(format!("DuckLake table '{}' is not in its lake's metadata", t.dotted())))?;
    Ok(Some(lake_token_of(id, columns)?))
}

fn lake_token_of(id: i64, columns: &[ColumnDef]) -> Result<String> {
    Ok(format!("{LAKE}{id}:{}", signature(columns)?))
}

/// The DuckLake table id a lake token names.
fn lake_token_id(token: &str) -> Option<i64> {
    token.strip_prefix(LAKE)?.split_once(':')?.0.parse().ok()
}

/// The token that every one of `keys` carries in `comments`, if they agree and it is live.
pub(crate) fn current_token(
    db: &dyn Sql,
    t: &TableId,
    columns: &[ColumnDef],
    comments: &[(String, String)],
    keys: &[String],
) -> Result<Option<String>> {
    if let Some(token) = lake_token(db, t, columns)? {
        return Ok(Some(token));
    }
    let mut token: Option<String> = None;
    for key in keys {
        let Some((_, comment)) = comments.iter().find(|(c, _)| c == key) else {
            return Ok(None);
        };
        let (Some(found), _) = split_comment(comment) else {
            return Ok(None);
        };
        if token.as_ref().is_some_and(|t| t != &found) {
            return Ok(None);
        }
        token = Some(found);
    }
    match token {
        Some(tok) if token_matches_columns(db, t, columns, &tok)? => Ok(Some(tok)),
        _ => Ok(None),
    }
}

/// Gives the declared key columns a token valid for the table's current incarnation and
/// columns: a live token the table already carries on some column, or a new one recorded in its
/// database's generations table.
pub(crate) fn ensure_token(db: &dyn Sql, t: &TableId, columns: &[ColumnDef], keys: &[String]) -> Result<String> {
    if let Some(token) = lake_token(db, t, columns)? {
        return Ok(token);
    }
    let comments = column_comments(db, t)?;
    if let Some(token) = current_token(db, t, columns, &comments, keys)? {
        return Ok(token);
    }
    let mut live = None;
    for (_, comment) in &comments {
        if let (Some(tok), _) = split_comment(comment) {
            if token_matches_columns(db, t, columns, &tok)? {
                live = Some(tok);
                break;
            }
        }
    }
    let token = match live {
        Some(tok) => tok,
        None => {
            let tok = NEW_TOKEN
                .scalar(db, [])?
                .filter(|t| !t.is_empty())
                .ok_or_else(|| Error::Internal("DuckDB returned no incarnation token".into()))?;
            db.execute(&render::create_generations(&t.catalog))?;
            db.execute_with(&render::insert_generation(&t.catalog), &[&t.schema, &t.name, &tok, &signature(columns)?])?;
            tok
        }
    };
    for key in keys {
        let comment = comments.iter().find(|(c, _)| c == key).map(|(_, c)| c.as_str()).unwrap_or("");
        let (existing, user_comment) = split_comment(comment);
        if existing.as_deref() != Some(token.as_str()) {
            db.execute(&render::comment_on_column(t, key, &with_marker(&user_comment, &token)))?;
        }
    }
    Ok(token)
}

/// `openivm_declare_rely_fk`: validates, then stores a trusted foreign key.
///
/// When both tables live in the database that holds the extension's metadata, tokens and
/// declaration commit in one transaction. Otherwise (DuckDB writes one database per
/// transaction) each source database's tokens commit first, then the declaration; a failure in
/// between leaves an unused token, which authorizes nothing without a declaration.
pub fn declare(db: &dyn Sql, child: &str, child_cols: &str, parent: &str, parent_cols: &str) -> Result<Declared> {
    let (child_id, child_all) = resolve_table(db, child, BETWEEN_TABLES)?;
    let (parent_id, parent_all) = resolve_table(db, parent, BETWEEN_TABLES)?;
    let cc = match_columns(&child_id, &child_all, &parse_columns(child_cols)?)?;
    let pc = match_columns(&parent_id, &parent_all, &parse_columns(parent_cols)?)?;
    if cc.len() != pc.len() {
        return Err(Error::InvalidArgument(format!(
            "the child lists {} columns and the parent {}; a foreign key pairs them one to one",
            cc.len(),
            pc.len()
        )));
    }
    let (main, _) = SqlCatalog::new(db).defaults()?;
    let endpoints = [(&child_id, &child_all, &cc), (&parent_id, &parent_all, &pc)];
    let publish = |tokens: &[String]| -> Result<()> {
        metadata::ensure(db)?;
        let (ccj, pcj) = (to_json(&cc)?, to_json(&pc)?);
        DELETE.run(db, declaration_key(&main, &child_id, &ccj, &parent_id, &pcj).params())?;
        let [child_token, parent_token] = tokens else {
            return Err(Error::Internal(format!("expected two incarnation tokens, got {}", tokens.len())));
        };
        let (child, parent) = (home::stored_table(&main, &child_id), home::stored_table(&main, &parent_id));
        INSERT.run(
            db,
            [
                &child.catalog,
                &child.schema,
                &child.name,
                &ccj,
                &parent.catalog,
                &parent.schema,
                &parent.name,
                &pcj,
                child_token,
                parent_token,
            ],
        )
    };
    if endpoints.iter().all(|(t, _, _)| t.catalog == main) {
        in_transaction(db, || {
            let tokens = endpoints.iter().map(|(t, c, k)| ensure_token(db, t, c, k)).collect::<Result<Vec<_>>>()?;
            publish(&tokens)
        })?;
    } else {
        let mut tokens = Vec::new();
        for (t, c, k) in endpoints {
            tokens.push(in_transaction(db, || ensure_token(db, t, c, k))?);
        }
        in_transaction(db, || publish(&tokens))?;
    }
    Ok(Declared {
        child: child_id.dotted(),
        child_columns: cc.join(","),
        parent: parent_id.dotted(),
        parent_columns: pc.join(","),
    })
}

/// What identifies a declaration in `openivm_constraints_cache`: per endpoint both catalog
/// spellings a row may use (see `home`), schema, table and column list.
struct DeclarationKey {
    child: ([String; 2], TableId, String),
    parent: ([String; 2], TableId, String),
}

impl DeclarationKey {
    /// The parameters of `rely_delete.sql` and `rely_revoke.sql`.
    fn params(&self) -> [&str; 10] {
        let ((cs, c, cc), (ps, p, pc)) = (&self.child, &self.parent);
        [&cs[0], &cs[1], &c.schema, &c.name, cc, &ps[0], &ps[1], &p.schema, &p.name, pc]
    }
}

fn declaration_key(
    main: &str,
    child: &TableId,
    child_cols: &str,
    parent: &TableId,
    parent_cols: &str,
) -> DeclarationKey {
    DeclarationKey {
        child: (home::spellings(main, &child.catalog), child.clone(), child_cols.to_string()),
        parent: (home::spellings(main, &parent.catalog), parent.clone(), parent_cols.to_string()),
    }
}

/// `openivm_revoke_rely_fk`: removes a declaration; whether there was one.
pub fn revoke(
    db: &dyn Sql,
    child: &str,
    child_cols: &str,
    parent: &str,
    parent_cols: &str,
) -> Result<(Declared, bool)> {
    let (child_id, child_all) = resolve_table(db, child, BETWEEN_TABLES)?;
    let (parent_id, parent_all) = resolve_table(db, parent, BETWEEN_TABLES)?;
    let cc = match_columns(&child_id, &child_all, &parse_columns(child_cols)?)?;
    let pc = match_columns(&parent_id, &parent_all, &parse_columns(parent_cols)?)?;
    let gone = if crate::front::catalog::main_table_exists(db, "openivm_constraints_cache")? {
        let (main, _) = SqlCatalog::new(db).defaults()?;
        // Declarations are found by their endpoints as they are now: a DuckLake endpoint by its
        // table id, so a declaration made before a rename is revoked by the new name.
        let lake_ids = lake_table_ids(db, &[child_id.clone(), parent_id.clone()])?;
        in_transaction(db, || {
            let mut gone = false;
            for r in declarations_in(db, &main)? {
                let (named_child, named_parent) = r.endpoints(&main);
                let child = live_endpoint(&lake_ids, named_child.clone(), &r.child_token);
                let parent = live_endpoint(&lake_ids, named_parent.clone(), &r.parent_token);
                if child == child_id && parent == parent_id && r.child_columns()? == cc && r.parent_columns()? == pc {
                    let key = declaration_key(&main, &named_child, &r.child_columns, &named_parent, &r.parent_columns);
                    gone |= !REVOKE.rows(db, key.params())?.is_empty();
                }
            }
            Ok(gone)
        })?
    } else {
        false
    };
    let declared = Declared {
        child: child_id.dotted(),
        child_columns: cc.join(","),
        parent: parent_id.dotted(),
        parent_columns: pc.join(","),
    };
    Ok((declared, gone))
}

typed_row! {
    /// A declaration as `render::rely_declarations` reads it: its endpoints by the names they
    /// were declared with, their columns as stored (JSON lists) and their tokens ('' = none).
    struct StoredDeclaration {
        child_catalog: String,
        child_schema: String,
        child_table: String,
        child_columns: String,
        parent_catalog: String,
        parent_schema: String,
        parent_table: String,
        parent_columns: String,
        child_token: String,
        parent_token: String,
    }
}

impl StoredDeclaration {
    /// The endpoints by the names they were declared with, in the metadata of `main`.
    fn endpoints(&self, main: &str) -> (TableId, TableId) {
        let named = |catalog: &str, schema: &str, name: &str| {
            home::live_table(main, TableId { catalog: catalog.into(), schema: schema.into(), name: name.into() })
        };
        (
            named(&self.child_catalog, &self.child_schema, &self.child_table),
            named(&self.parent_catalog, &self.parent_schema, &self.parent_table),
        )
    }

    fn child_columns(&self) -> Result<Vec<String>> {
        json_list(&self.child_columns)
    }

    fn parent_columns(&self) -> Result<Vec<String>> {
        json_list(&self.parent_columns)
    }
}

fn json_list(text: &str) -> Result<Vec<String>> {
    serde_json::from_str(text)
        .map_err(|_| Error::Internal(format!("a declaration's columns '{text}' are not a JSON array of strings")))
}

/// The declarations kept in the metadata of the database `catalog` (none before its first
/// declaration).
fn declarations_in(db: &dyn Sql, catalog: &str) -> Result<Vec<StoredDeclaration>> {
    if !crate::front::catalog::metadata_table_exists(db, catalog, "openivm_constraints_cache")? {
        return Ok(vec![]);
    }
    read_all(&db.query_with(&render::rely_declarations(catalog), &[])?)
}

/// The RELY foreign keys between tables of `tables` that are still valid for the tables'
/// current incarnations, from the metadata of each database of `metadata` (the view's own and
/// the one openivm was loaded into, where `openivm_declare_rely_fk` stores them). A declaration
/// names tables: each row is read with its own metadata's database as the home (src/home.rs),
/// so it is matched to the view's tables by what it names wherever the view is kept.
pub fn valid_declarations(db: &dyn Sql, metadata: &[&str], tables: &[TableId]) -> Result<Vec<ForeignKey>> {
    let cat = SqlCatalog::new(db);
    let still = |t: &TableId, keys: &[String], token: &str| -> Result<bool> {
        let cols = cat.columns(t)?;
        Ok(!cols.is_empty() && current_token(db, t, &cols, &column_comments(db, t)?, keys)?.as_deref() == Some(token))
    };
    // The view's DuckLake tables by table id: their declarations follow them through renames.
    let lake_ids = lake_table_ids(db, tables)?;
    let mut out: Vec<ForeignKey> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    let mut rows = Vec::new();
    for m in metadata {
        if !seen.iter().any(|s| s.eq_ignore_ascii_case(m)) {
            seen.push(m);
            rows.extend(declarations_in(db, m)?.into_iter().map(|r| (*m, r)));
        }
    }
    for (main, r) in rows {
        let (child, parent) = r.endpoints(main);
        let (child_token, parent_token) = (r.child_token.clone(), r.parent_token.clone());
        let (child, parent) =
            (live_endpoint(&lake_ids, child, &child_token), live_endpoint(&lake_ids, parent, &parent_token));
        if !tables.contains(&child) || !tables.contains(&parent) {
            continue;
        }
        let (child_columns, parent_columns) = (r.child_columns()?, r.parent_columns()?);
        let known = out.iter().any(|f| {
            f.child == child
                && f.parent == parent
                && f.child_columns == child_columns
                && f.parent_columns == parent_columns
        });
        if !known && still(&child, &child_columns, &child_token)? && still(&parent, &parent_columns, &parent_token)? {
            out.push(ForeignKey { child, child_columns, parent, parent_columns, source: FactSource::Rely });
        }
    }
    Ok(out)
}

/// The DuckLake tables among `tables`, by their DuckLake table ids.
fn lake_table_ids(db: &dyn Sql, tables: &[TableId]) -> Result<Vec<(i64, TableId)>> {
    let mut ids = Vec::new();
    for t in tables {
        if crate::front::catalog::is_ducklake(db, &t.catalog)? {
            if let Some(id) = crate::capture::ducklake::table_id(db, t)? {
                ids.push((id, t.clone()));
            }
        }
    }
    Ok(ids)
}

/// Where a declared endpoint is now: the DuckLake table its token names by id (through
/// renames), else the table it was declared with.
fn live_endpoint(lake_ids: &[(i64, TableId)], named: TableId, token: &str) -> TableId {
    match lake_token_id(token).and_then(|id| lake_ids.iter().find(|(i, _)| *i == id)) {
        Some((_, t)) => t.clone(),
        None => named,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_column_lists() {
        assert_eq!(parse_columns("a, b").unwrap(), vec!["a", "b"]);
        assert_eq!(parse_columns(r#"["a","B c"]"#).unwrap(), vec!["a", "B c"]);
        assert_eq!(parse_columns(r#""x,y", z"#).unwrap(), vec!["x,y", "z"]);
        assert!(parse_columns("").is_err());
        assert!(parse_columns("a,,b").is_err());
        assert!(parse_columns("[]").is_err());
        assert!(parse_columns("[1]").is_err());
    }

    #[test]
    fn lake_tokens_name_the_table_id_and_columns() {
        let cols = vec![ColumnDef { name: "k".into(), ty: "INTEGER".into(), collation: None }];
        let t = lake_token_of(42, &cols).unwrap();
        assert_eq!(lake_token_id(&t), Some(42));
        assert_ne!(t, lake_token_of(43, &cols).unwrap());
        let more = vec![cols[0].clone(), ColumnDef { name: "x".into(), ty: "VARCHAR".into(), collation: None }];
        assert_ne!(t, lake_token_of(42, &more).unwrap());
        assert_eq!(lake_token_id("a1b2c3"), None);
    }

    #[test]
    fn keeps_the_users_comment() {
        assert_eq!(split_comment("sales facts"), (None, "sales facts".to_string()));
        let c = with_marker("sales facts", "abc");
        assert_eq!(split_comment(&c), (Some("abc".to_string()), "sales facts".to_string()));
        assert_eq!(split_comment(&with_marker("", "t1")), (Some("t1".to_string()), String::new()));
    }
}
