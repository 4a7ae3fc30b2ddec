//! Source declarations, trusted promises about how a table is written:
//! - append-only: it only ever receives inserts (deletes and updates only through openivm's
//!   write functions, for a table with a key), so its changes are read past a watermark;
//! - recorded: every write goes through openivm's write functions, which record their deltas;
//!
//! and a user's choice of a source that needs no promise (`openivm_set_source`: diff, or
//! trigger whatever `openivm_default_source` says).
//!
//! Stored in `openivm_constraints_cache` (`constraint_kind` 'APPEND_ONLY', 'RECORDED',
//! 'SOURCE_DIFF' or 'SOURCE_TRIGGER'; a table has at most one) and bound, like a RELY foreign key, to the table's incarnation: dropping,
//! replacing or changing the columns of the table ends it; a rolled-back drop and a reopen keep
//! it (see `rely` for the token mechanism).

use crate::capture::SourceKind;
use crate::db::in_transaction;
use crate::db::{read_all, JsonList, Sql};
use crate::declare::rely_fk;
use crate::error::{Error, Result};
use crate::ir::{ColumnDef, TableId};
use crate::render::capture::Position;
use crate::store::home;
use crate::store::metadata;

use crate::sql::catalog::{FOREIGN_KEYS_OF, FOREIGN_KEYS_TOUCHING, TRIGGER_CANDIDATES};
use crate::sql::facts::APPEND_ONLY_DELETE as DELETE;
use crate::sql::facts::APPEND_ONLY_FIND as FIND;
use crate::sql::facts::APPEND_ONLY_INSERT as INSERT;

/// What a declaration stored, for the caller.
pub struct Declared {
    pub table: String,
    /// The key column, or "rowid".
    pub key: String,
}

/// The column that carries the table's incarnation token for this declaration.
fn token_column(columns: &[ColumnDef], key: Option<&str>) -> Result<String> {
    match key {
        Some(k) => Ok(k.to_string()),
        None => {
            columns.first().map(|c| c.name.clone()).ok_or_else(|| Error::Internal("a table without columns".into()))
        }
    }
}

/// The kinds of source declaration: two promises, and two choices of a source that needs none
/// (`openivm_set_source`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Promise {
    AppendOnly,
    Recorded,
    Diff,
    Trigger,
}

impl Promise {
    fn kind(self) -> &'static str {
        match self {
            Promise::AppendOnly => "APPEND_ONLY",
            Promise::Recorded => "RECORDED",
            Promise::Diff => "SOURCE_DIFF",
            Promise::Trigger => "SOURCE_TRIGGER",
        }
    }

    /// Why a view cannot take the promise.
    fn only_tables(self) -> &'static str {
        match self {
            Promise::AppendOnly => "only tables are declared append-only (declare the tables it reads)",
            Promise::Recorded => "only tables are declared recorded (declare the tables it reads)",
            Promise::Diff | Promise::Trigger => {
                "a change source is chosen for tables (choose it for the tables it reads)"
            }
        }
    }
}

/// `openivm_set_source(table, source)`: 'diff' or 'trigger' for this table whatever
/// `openivm_default_source` says, 'default' to follow it again; 'append_only' and 'recorded' are
/// promises, made with their own declarations. Replaces any earlier declaration of the table.
/// Returns the table and the source chosen.
pub fn set_source(db: &dyn Sql, table_arg: &str, source: &str) -> Result<(String, String)> {
    let choice = source.trim().to_ascii_lowercase();
    let promise = match choice.as_str() {
        "diff" => Some(Promise::Diff),
        "trigger" => Some(Promise::Trigger),
        "default" => None,
        "append_only" | "recorded" => {
            return Err(Error::InvalidArgument(format!(
                "'{choice}' is a promise about how the table is written: make it with openivm_declare_{choice}('{table_arg}')"
            )))
        }
        _ => {
            return Err(Error::InvalidArgument(format!(
                "unknown change source '{source}' (openivm_set_source takes 'trigger', 'diff' or 'default')"
            )))
        }
    };
    let Some(promise) = promise else {
        let (table, _) = rely_fk::resolve_table(db, table_arg, Promise::Diff.only_tables())?;
        for p in [Promise::Diff, Promise::Trigger] {
            revoke(db, table_arg, p)?;
        }
        return Ok((table.dotted(), choice));
    };
    if promise == Promise::Trigger {
        let (table, _) = rely_fk::resolve_table(db, table_arg, promise.only_tables())?;
        let (main, _) = crate::front::catalog::SqlCatalog::new(db).defaults()?;
        if !table.catalog.eq_ignore_ascii_case(&main) || !crate::capture::trigger::supported(db, &table.catalog)? {
            return Err(Error::InvalidArgument(format!(
                "table '{}' cannot be captured by triggers: they need DuckDB 2.0 or later, a writable native database \
                 of storage version v2.0.0 or later (ATTACH ... (STORAGE_VERSION 'v2.0.0') upgrades one), and the \
                 table in the database that holds the views ('{main}')",
                table.dotted()
            )));
        }
        if has_foreign_keys(db, &table)? {
            return Err(Error::InvalidArgument(format!(
                "table '{}' has a FOREIGN KEY, and DuckDB 2.0.1 fails an UPDATE of a large table with a foreign key and \
                 a statement trigger (an internal error), or hands the trigger fewer rows than the UPDATE changed, so \
                 triggers could lose writes: it keeps the diff source (declare it append-only if it only grows)",
                table.dotted()
            )));
        }
    }
    let declared = declare_source(db, table_arg, promise, None)?;
    Ok((declared.table, choice))
}

/// `openivm_declare_append_only(table [, key := column])`.
pub fn declare(db: &dyn Sql, table_arg: &str, key: Option<&str>) -> Result<Declared> {
    declare_source(db, table_arg, Promise::AppendOnly, key)
}

/// `openivm_declare_recorded(table)`.
pub fn declare_recorded(db: &dyn Sql, table_arg: &str) -> Result<Declared> {
    declare_source(db, table_arg, Promise::Recorded, None)
}

/// Stores a source declaration, replacing any earlier one of the table.
fn declare_source(db: &dyn Sql, table_arg: &str, promise: Promise, key: Option<&str>) -> Result<Declared> {
    let (table, columns) = rely_fk::resolve_table(db, table_arg, promise.only_tables())?;
    let key = match key {
        Some(k) => Some(rely_fk::match_columns(&table, &columns, &[k.to_string()])?.remove(0)),
        None => None,
    };
    if let Some(k) = &key {
        let ty = columns.iter().find(|c| &c.name == k).map(|c| c.ty.to_ascii_uppercase()).unwrap_or_default();
        if ty.ends_with(']') || ["STRUCT", "MAP", "UNION", "LIST"].iter().any(|t| ty.starts_with(t)) {
            return Err(Error::InvalidArgument(format!(
                "the key column '{k}' has type {ty}; an ever-increasing key must be of an ordered scalar type"
            )));
        }
    }
    let (main, _) = crate::front::catalog::SqlCatalog::new(db).defaults()?;
    let token_col = token_column(&columns, key.as_deref())?;
    let keys_json = serde_json::to_string(&key.iter().collect::<Vec<_>>()).unwrap_or_else(|_| "[]".into());
    let [here, named] = home::spellings(&main, &table.catalog);
    let publish = |token: &str| -> Result<()> {
        metadata::ensure(db)?;
        DELETE.rows(db, ["", &here, &named, &table.schema, &table.name])?;
        INSERT.run(db, [promise.kind(), &here, &table.schema, &table.name, &keys_json, token])
    };
    if table.catalog == main {
        in_transaction(db, || {
            let token = rely_fk::ensure_token(db, &table, &columns, std::slice::from_ref(&token_col))?;
            publish(&token)
        })?;
    } else {
        let token =
            in_transaction(db, || rely_fk::ensure_token(db, &table, &columns, std::slice::from_ref(&token_col)))?;
        in_transaction(db, || publish(&token))?;
    }
    let key = match promise {
        Promise::AppendOnly => key.unwrap_or_else(|| "rowid".into()),
        _ => String::new(),
    };
    Ok(Declared { table: table.dotted(), key })
}

/// `openivm_revoke_append_only(table)` / `openivm_revoke_recorded(table)`: whether a
/// declaration of that kind was removed.
pub fn revoke(db: &dyn Sql, table_arg: &str, promise: Promise) -> Result<(String, bool)> {
    let (table, _) = rely_fk::resolve_table(db, table_arg, promise.only_tables())?;
    if !crate::front::catalog::main_table_exists(db, "openivm_constraints_cache")? {
        return Ok((table.dotted(), false));
    }
    let (main, _) = crate::front::catalog::SqlCatalog::new(db).defaults()?;
    let [here, named] = home::spellings(&main, &table.catalog);
    let gone = in_transaction(db, || DELETE.rows(db, [promise.kind(), &here, &named, &table.schema, &table.name]))?;
    Ok((table.dotted(), !gone.is_empty()))
}

/// Why a table has its change source (`openivm_explain`'s `sources`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceWhy {
    /// A promise (append-only, recorded) or a choice (`openivm_set_source`) made for the table.
    Declared,
    /// `openivm_default_source`, taken as it is.
    Default,
    /// The table is in a DuckLake catalog: its own change feed.
    DuckLake,
    /// A maintained view, read through its own change.
    MaintainedView,
    /// Triggers were asked for (by a choice or the default) and the table cannot take them.
    NoTriggers(String),
}

impl SourceWhy {
    pub fn text(&self) -> &str {
        match self {
            SourceWhy::Declared => "declared",
            SourceWhy::Default => "the default",
            SourceWhy::DuckLake => "DuckLake's change feed",
            SourceWhy::MaintainedView => "a maintained view",
            SourceWhy::NoTriggers(why) => why,
        }
    }
}

const FOREIGN_KEY: &str = "a FOREIGN KEY touches the table: DuckDB 2.0.1 can lose an UPDATE's rows in its triggers";

/// The source of each of `tables`, and why: DuckLake's change feed for a table of a DuckLake
/// catalog (not for a view kept there); otherwise append-only or recorded where a declaration is
/// still valid for the table's current incarnation; otherwise a chosen or the default source,
/// the diff where triggers cannot be had. `columns[k]` are all columns of table k; `main` is the
/// database holding the metadata.
pub fn sources(
    db: &dyn Sql,
    main: &str,
    tables: &[TableId],
    columns: &[Vec<ColumnDef>],
    default: &str,
) -> Result<Vec<(SourceKind, SourceWhy)>> {
    let declared = declared_sources(db, main, tables, columns)?;
    // A table of the database holding the views, without a declaration, is captured by triggers
    // where that database allows them (their body writes the log, which lives there).
    let wants_triggers = default == "trigger"
        && declared.iter().any(Option::is_none)
        && tables.iter().any(|t| t.catalog.eq_ignore_ascii_case(main));
    let unsupported = if wants_triggers { crate::capture::trigger::unsupported_why(db, main)? } else { None };
    // Only base tables carry triggers. DuckDB 2.0.1 runs an UPDATE of a table with an UPDATE
    // trigger as a delete and an insert, which a FOREIGN KEY referencing the table refuses: such
    // tables keep the diff unless a user chooses triggers for them (`openivm_set_source`).
    let capturable: Vec<(String, String)> =
        if wants_triggers && unsupported.is_none() { read_all(&TRIGGER_CANDIDATES.rows(db, [main])?)? } else { vec![] };
    let by_default = |t: &TableId| -> Result<(SourceKind, SourceWhy)> {
        if default != "trigger" {
            return Ok((SourceKind::Diff, SourceWhy::Default));
        }
        if !t.catalog.eq_ignore_ascii_case(main) {
            let why = format!("triggers are installed only on tables of the views' database ('{main}')");
            return Ok((SourceKind::Diff, SourceWhy::NoTriggers(why)));
        }
        if let Some(why) = &unsupported {
            return Ok((SourceKind::Diff, SourceWhy::NoTriggers(why.clone())));
        }
        if capturable.iter().any(|(s, n)| s.eq_ignore_ascii_case(&t.schema) && n.eq_ignore_ascii_case(&t.name)) {
            return Ok((SourceKind::Trigger, SourceWhy::Default));
        }
        let touched = FOREIGN_KEYS_TOUCHING.scalar_int(db, [&t.catalog, &t.schema, &t.name, &t.name])? > 0;
        let why = if touched { FOREIGN_KEY } else { "not a base table" };
        Ok((SourceKind::Diff, SourceWhy::NoTriggers(why.into())))
    };
    let mut out: Vec<(SourceKind, SourceWhy)> = declared
        .into_iter()
        .zip(tables)
        .map(|(d, t)| {
            Ok(match d {
                // A trigger choice made before openivm kept tables with foreign keys off triggers
                // (the default's candidates have none).
                Some(SourceKind::Trigger) if has_foreign_keys(db, t)? => {
                    (SourceKind::Diff, SourceWhy::NoTriggers(FOREIGN_KEY.into()))
                }
                Some(kind) => (kind, SourceWhy::Declared),
                None => by_default(t)?,
            })
        })
        .collect::<Result<_>>()?;
    let mut lakes: Vec<(String, bool)> = Vec::new();
    for (k, t) in tables.iter().enumerate() {
        let is_lake = match lakes.iter().find(|(c, _)| c == &t.catalog) {
            Some((_, l)) => *l,
            None => {
                let l = crate::front::catalog::is_ducklake(db, &t.catalog)?;
                lakes.push((t.catalog.clone(), l));
                l
            }
        };
        // A relation of the lake without a DuckLake table id is a view: a maintained view kept
        // in the lake, read through its own change (`execute::view::chain_sources`).
        if is_lake {
            if let Some(id) = crate::capture::ducklake::table_id(db, t)? {
                out[k] = (SourceKind::DuckLake(id), SourceWhy::DuckLake);
            }
        }
    }
    Ok(out)
}

/// Whether the table has a FOREIGN KEY (is its child side): such tables are never captured by
/// triggers (`set_source`), since DuckDB 2.0.1 may hand an UPDATE trigger fewer rows than the
/// statement changed there.
fn has_foreign_keys(db: &dyn Sql, t: &TableId) -> Result<bool> {
    Ok(FOREIGN_KEYS_OF.scalar_int(db, [&t.catalog, &t.schema, &t.name])? > 0)
}

fn declared_sources(
    db: &dyn Sql,
    main: &str,
    tables: &[TableId],
    columns: &[Vec<ColumnDef>],
) -> Result<Vec<Option<SourceKind>>> {
    let mut out = vec![None; tables.len()];
    if tables.is_empty() || !crate::front::catalog::main_table_exists(db, "openivm_constraints_cache")? {
        return Ok(out);
    }
    let rows: Vec<(String, String, String, JsonList, String, String)> = read_all(&FIND.rows(db, [])?)?;
    for (catalog, schema, name, JsonList(keys), token, kind) in rows {
        let id = home::live_table(main, TableId { catalog, schema, name });
        let Some(k) = tables.iter().position(|t| t == &id) else { continue };
        let cols = &columns[k];
        let token_col = token_column(cols, keys.first().map(|s| s.as_str()))?;
        let comments = rely_fk::column_comments(db, &id)?;
        let live = rely_fk::current_token(db, &id, cols, &comments, &[token_col])?;
        if token.is_empty() || live.as_deref() != Some(token.as_str()) {
            continue;
        }
        out[k] = Some(match keys.first() {
            None if kind == Promise::Recorded.kind() => SourceKind::Recorded,
            None if kind == Promise::Diff.kind() => SourceKind::Diff,
            None if kind == Promise::Trigger.kind() => SourceKind::Trigger,
            None => SourceKind::AppendOnly(Position::RowId),
            Some(key) => match cols.iter().find(|c| &c.name == key) {
                Some(c) => SourceKind::AppendOnly(Position::Key(c.clone())),
                None => continue,
            },
        });
    }
    Ok(out)
}
