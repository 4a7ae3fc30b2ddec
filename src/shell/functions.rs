//! The SQL surface: one `Spec` per table function, each a thin adapter from arguments to the
//! executor and from its result to rows.

use crate::capture::SnapshotSource;
use crate::catalog::table_name;
use crate::error::{Error, Result};
use crate::execute;
use crate::shell::instance::Instance;
use crate::shell::table_function::{Args, Call, ColumnType as T, Rows, Spec, Value};
use crate::{lookup, rely, settings};

/// The change source for native DuckDB tables.
const SOURCE: SnapshotSource = SnapshotSource;

fn create(inst: &Call, args: &Args) -> Result<Rows> {
    let (name, query) = (args.text(0, "view_name")?, args.text(1, "query")?);
    let c = inst.with_connection(|db| execute::create(db, &SOURCE, name, query))?;
    Ok(vec![vec![Value::Text(c.view), Value::Int(c.rows)]])
}

fn refresh(inst: &Call, args: &Args) -> Result<Rows> {
    let name = args.text(0, "view_name")?;
    let r = inst.with_connection(|db| execute::refresh(db, &SOURCE, name, args.flag("fk_pruning")))?;
    Ok(vec![vec![
        Value::Text(r.view),
        Value::Int(r.counts.total as i64),
        Value::Int(r.counts.fk_pruned as i64),
        Value::Int(r.counts.empty_skipped as i64),
        Value::Int(r.counts.run as i64),
        Value::Int(r.delta_rows),
        Value::Double(r.duration_ms),
    ]])
}

fn drop(inst: &Call, args: &Args) -> Result<Rows> {
    let name = args.text(0, "view_name")?;
    let view = inst.with_connection(|db| execute::drop_view(db, &SOURCE, name))?;
    Ok(vec![vec![Value::Text(view), Value::Bool(true)]])
}

fn explain(inst: &Call, args: &Args) -> Result<Rows> {
    let name = args.text(0, "view_name")?;
    let rows = inst.with_connection(|db| execute::explain(db, &SOURCE, name, args.flag("fk_pruning")))?;
    Ok(rows
        .into_iter()
        .map(|r| {
            vec![
                Value::Int(r.mask as i64),
                Value::Text(r.delta_leaves),
                Value::Int(r.sign as i64),
                Value::Text(r.status.as_str().to_string()),
                Value::Text(r.reason),
                Value::Text(r.sql),
            ]
        })
        .collect())
}

fn set(inst: &Call, args: &Args) -> Result<Rows> {
    let (name, value) = (args.text(0, "name")?, args.text(1, "value")?);
    let stored = inst.with_connection(|db| execute::in_transaction(db, || settings::set(db, name, value)))?;
    Ok(vec![vec![Value::Text(name.to_ascii_lowercase()), Value::Text(stored)]])
}

fn declare_rely_fk(inst: &Call, args: &Args) -> Result<Rows> {
    let child = args.text(0, "child_table")?;
    let child_cols = args.text(1, "child_columns")?;
    let parent = args.text(2, "parent_table")?;
    let parent_cols = args.text(3, "parent_columns")?;
    let d = inst.with_connection(|db| rely::declare(db, child, child_cols, parent, parent_cols))?;
    Ok(vec![vec![
        Value::Text(d.child),
        Value::Text(d.child_columns),
        Value::Text(d.parent),
        Value::Text(d.parent_columns),
    ]])
}

// ---- Checks at bind (see `Spec::validate`): arguments that are wrong whatever the data. ----

fn view_name<'a>(args: &'a Args) -> Result<&'a str> {
    let name = args.text(0, "view_name")?;
    if name.trim().is_empty() {
        return Err(Error::InvalidArgument("view_name must not be empty".into()));
    }
    Ok(name)
}

/// The view named by the first argument must be a maintained view.
fn known_view(inst: &Instance, args: &Args) -> Result<()> {
    let name = view_name(args)?;
    if inst.with_connection(|db| lookup::view_exists(db, name))? {
        Ok(())
    } else {
        Err(Error::UnknownView(name.to_string()))
    }
}

/// The new view's name must be a valid, unreserved name.
fn valid_new_view(_: &Instance, args: &Args) -> Result<()> {
    let name = table_name(view_name(args)?)?;
    if name.name.to_ascii_lowercase().starts_with("openivm_") {
        return Err(Error::InvalidArgument(format!("names starting with openivm_ are reserved ('{}')", name.name)));
    }
    if args.text(1, "query")?.trim().is_empty() {
        return Err(Error::Parse("the query is empty".into()));
    }
    Ok(())
}

fn valid_setting(_: &Instance, args: &Args) -> Result<()> {
    settings::check(args.text(0, "name")?, args.text(1, "value")?).map(|_| ())
}

fn valid_rely(_: &Instance, args: &Args) -> Result<()> {
    table_name(args.text(0, "child_table")?)?;
    table_name(args.text(2, "parent_table")?)?;
    let child = rely::parse_columns(args.text(1, "child_columns")?)?;
    let parent = rely::parse_columns(args.text(3, "parent_columns")?)?;
    if child.len() != parent.len() {
        return Err(Error::InvalidArgument(format!(
            "the child lists {} columns and the parent {}; a foreign key pairs them one to one",
            child.len(),
            parent.len()
        )));
    }
    Ok(())
}

const REFRESH_COLUMNS: &[(&str, T)] = &[
    ("view_name", T::Varchar),
    ("terms_total", T::Integer),
    ("terms_fk_pruned", T::Integer),
    ("terms_empty_skipped", T::Integer),
    ("terms_run", T::Integer),
    ("delta_rows", T::BigInt),
    ("duration_ms", T::Double),
];

pub static SPECS: &[Spec] = &[
    Spec {
        name: "openivm_create",
        params: &["view_name", "query"],
        named_flags: &[],
        columns: &[("view_name", T::Varchar), ("rows", T::BigInt)],
        run: create,
        validate: Some(valid_new_view),
    },
    Spec {
        name: "refresh",
        params: &["view_name"],
        named_flags: &["fk_pruning"],
        columns: REFRESH_COLUMNS,
        run: refresh,
        validate: Some(known_view),
    },
    Spec {
        name: "openivm_refresh",
        params: &["view_name"],
        named_flags: &["fk_pruning"],
        columns: REFRESH_COLUMNS,
        run: refresh,
        validate: Some(known_view),
    },
    Spec {
        name: "openivm_drop",
        params: &["view_name"],
        named_flags: &[],
        columns: &[("view_name", T::Varchar), ("dropped", T::Boolean)],
        run: drop,
        validate: Some(known_view),
    },
    Spec {
        name: "openivm_explain",
        params: &["view_name"],
        named_flags: &["fk_pruning"],
        columns: &[
            ("term", T::Integer),
            ("delta_leaves", T::Varchar),
            ("sign", T::Integer),
            ("status", T::Varchar),
            ("reason", T::Varchar),
            ("sql", T::Varchar),
        ],
        run: explain,
        validate: Some(known_view),
    },
    Spec {
        name: "openivm_set",
        params: &["name", "value"],
        named_flags: &[],
        columns: &[("name", T::Varchar), ("value", T::Varchar)],
        run: set,
        validate: Some(valid_setting),
    },
    Spec {
        name: "openivm_declare_rely_fk",
        params: &["child_table", "child_columns", "parent_table", "parent_columns"],
        named_flags: &[],
        columns: &[
            ("child_table", T::Varchar),
            ("child_columns", T::Varchar),
            ("parent_table", T::Varchar),
            ("parent_columns", T::Varchar),
        ],
        run: declare_rely_fk,
        validate: Some(valid_rely),
    },
];
