//! The SQL surface: one `Spec` per table function, each a thin adapter from arguments to the
//! executor and from its result to rows.

use crate::capture::declare;
use crate::catalog::table_name;
use crate::error::{Error, Result};
use crate::execute::{self, mode::Requested, refresh};
use crate::shell::instance::Instance;
use crate::shell::table_function::{Args, Call, ColumnType as T, Rows, Spec, Value};
use crate::{lookup, rely, settings};

fn create(inst: &Call, args: &Args) -> Result<Rows> {
    let (name, query) = (args.text(0, "view_name")?, args.text(1, "query")?);
    let c = inst.with_session(|db, s| {
        s.in_database(db, Some(name), |db, cache, name| execute::create(db, cache, name, query))
    })?;
    Ok(vec![vec![Value::Text(c.view), Value::Int(c.rows)]])
}

fn options(args: &Args) -> Result<refresh::Options> {
    let mode =
        match args.named_text("mode") {
            None => None,
            Some(m) => Some(Requested::parse(m).ok_or_else(|| {
                Error::InvalidArgument(format!("mode takes 'auto', 'incremental' or 'full', not '{m}'"))
            })?),
        };
    Ok(refresh::Options { fk_pruning: args.flag("fk_pruning"), mode })
}

fn report_row(r: refresh::RefreshReport) -> Vec<Value> {
    vec![
        Value::Text(r.view),
        Value::Int(r.counts.total as i64),
        Value::Int(r.counts.fk_pruned as i64),
        Value::Int(r.counts.empty_skipped as i64),
        Value::Int(r.counts.run as i64),
        Value::Int(r.delta_rows),
        Value::Double(r.duration_ms),
        Value::Text(r.mode.as_str().to_string()),
    ]
}

fn refresh_one(inst: &Call, args: &Args) -> Result<Rows> {
    let name = args.text(0, "view_name")?;
    let opts = options(args)?;
    let r = inst.with_session(|db, s| {
        s.in_database(db, Some(name), |db, cache, name| refresh::refresh(db, cache, name, opts))
    })?;
    Ok(vec![report_row(r)])
}

fn refresh_all(inst: &Call, args: &Args) -> Result<Rows> {
    let opts = options(args)?;
    let reports =
        inst.with_session(|db, s| s.in_database(db, None, |db, cache, _| refresh::refresh_all(db, cache, opts)))?;
    Ok(reports.into_iter().map(report_row).collect())
}

fn drop(inst: &Call, args: &Args) -> Result<Rows> {
    let name = args.text(0, "view_name")?;
    let view = inst
        .with_session(|db, s| s.in_database(db, Some(name), |db, cache, name| execute::drop_view(db, cache, name)))?;
    Ok(vec![vec![Value::Text(view), Value::Bool(true)]])
}

fn explain(inst: &Call, args: &Args) -> Result<Rows> {
    let name = args.text(0, "view_name")?;
    let opts = options(args)?;
    let rows = inst.with_session(|db, s| {
        s.in_database(db, Some(name), |db, cache, name| refresh::explain(db, cache, name, opts))
    })?;
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
                Value::Text(r.mode.as_str().to_string()),
                Value::Text(r.mode_reason),
            ]
        })
        .collect())
}

fn verify(inst: &Call, args: &Args) -> Result<Rows> {
    let name = args.text(0, "view_name")?;
    let repair = args.flag("repair").unwrap_or(false);
    let v = inst.with_session(|db, s| {
        s.in_database(db, Some(name), |db, cache, name| execute::verify::verify(db, cache, name, repair))
    })?;
    Ok(vec![vec![
        Value::Text(v.view),
        Value::Int(v.missing_rows),
        Value::Int(v.extra_rows),
        Value::Bool(v.missing_rows == 0 && v.extra_rows == 0),
        Value::Bool(v.repaired),
    ]])
}

fn set(inst: &Call, args: &Args) -> Result<Rows> {
    let (name, value) = (args.text(0, "name")?, args.text(1, "value")?);
    let stored = inst.with_session(|db, s| {
        s.invalidate();
        s.in_database(db, None, |db, _, _| execute::in_transaction(db, || settings::set(db, name, value)))
    })?;
    Ok(vec![vec![Value::Text(name.to_ascii_lowercase()), Value::Text(stored)]])
}

fn declare_rely_fk(inst: &Call, args: &Args) -> Result<Rows> {
    let child = args.text(0, "child_table")?;
    let child_cols = args.text(1, "child_columns")?;
    let parent = args.text(2, "parent_table")?;
    let parent_cols = args.text(3, "parent_columns")?;
    let d = inst.with_session(|db, s| {
        s.invalidate();
        s.in_database(db, None, |db, _, _| rely::declare(db, child, child_cols, parent, parent_cols))
    })?;
    Ok(vec![vec![
        Value::Text(d.child),
        Value::Text(d.child_columns),
        Value::Text(d.parent),
        Value::Text(d.parent_columns),
    ]])
}

fn revoke_rely_fk(inst: &Call, args: &Args) -> Result<Rows> {
    let child = args.text(0, "child_table")?;
    let child_cols = args.text(1, "child_columns")?;
    let parent = args.text(2, "parent_table")?;
    let parent_cols = args.text(3, "parent_columns")?;
    let (d, revoked) = inst.with_session(|db, s| {
        s.invalidate();
        s.in_database(db, None, |db, _, _| rely::revoke(db, child, child_cols, parent, parent_cols))
    })?;
    Ok(vec![vec![
        Value::Text(d.child),
        Value::Text(d.child_columns),
        Value::Text(d.parent),
        Value::Text(d.parent_columns),
        Value::Bool(revoked),
    ]])
}

fn declare_append_only(inst: &Call, args: &Args) -> Result<Rows> {
    let table = args.text(0, "table_name")?;
    let key = args.named_text("key");
    let d = inst.with_session(|db, s| {
        s.invalidate();
        s.in_database(db, None, |db, _, _| declare::declare(db, table, key))
    })?;
    Ok(vec![vec![Value::Text(d.table), Value::Text(d.key)]])
}

fn revoke_append_only(inst: &Call, args: &Args) -> Result<Rows> {
    let table = args.text(0, "table_name")?;
    let (t, revoked) = inst.with_session(|db, s| {
        s.invalidate();
        s.in_database(db, None, |db, _, _| declare::revoke(db, table))
    })?;
    Ok(vec![vec![Value::Text(t), Value::Bool(revoked)]])
}

// ---- Checks at bind (see `Spec::validate`): arguments that are wrong whatever the data. ----

fn view_name(args: &Args) -> Result<&str> {
    let name = args.text(0, "view_name")?;
    if name.trim().is_empty() {
        return Err(Error::InvalidArgument("view_name must not be empty".into()));
    }
    Ok(name)
}

/// The view named by the first argument must be a maintained view.
fn known_view(inst: &Instance, args: &Args) -> Result<()> {
    let name = view_name(args)?;
    if inst
        .with_session(|db, s| s.in_database(db, Some(name), |db, cache, name| lookup::view_exists(db, cache, name)))?
    {
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
        return Err(Error::NotOneSelect("the query is empty".into()));
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

fn valid_table(_: &Instance, args: &Args) -> Result<()> {
    table_name(args.text(0, "table_name")?).map(|_| ())
}

fn valid_mode(_: &Instance, args: &Args) -> Result<()> {
    options(args).map(|_| ())
}

fn known_view_and_mode(inst: &Instance, args: &Args) -> Result<()> {
    valid_mode(inst, args)?;
    known_view(inst, args)
}

const REFRESH_COLUMNS: &[(&str, T)] = &[
    ("view_name", T::Varchar),
    ("terms_total", T::Integer),
    ("terms_fk_pruned", T::Integer),
    ("terms_empty_skipped", T::Integer),
    ("terms_run", T::Integer),
    ("delta_rows", T::BigInt),
    ("duration_ms", T::Double),
    ("mode", T::Varchar),
];

const FK_COLUMNS: &[(&str, T)] = &[
    ("child_table", T::Varchar),
    ("child_columns", T::Varchar),
    ("parent_table", T::Varchar),
    ("parent_columns", T::Varchar),
];

const FK_PARAMS: &[&str] = &["child_table", "child_columns", "parent_table", "parent_columns"];

pub static SPECS: &[Spec] = &[
    Spec {
        name: "openivm_create",
        params: &["view_name", "query"],
        named_flags: &[],
        named_text: &[],
        columns: &[("view_name", T::Varchar), ("rows", T::BigInt)],
        run: create,
        validate: Some(valid_new_view),
    },
    Spec {
        name: "refresh",
        params: &["view_name"],
        named_flags: &["fk_pruning"],
        named_text: &["mode"],
        columns: REFRESH_COLUMNS,
        run: refresh_one,
        validate: Some(known_view_and_mode),
    },
    Spec {
        name: "openivm_refresh",
        params: &["view_name"],
        named_flags: &["fk_pruning"],
        named_text: &["mode"],
        columns: REFRESH_COLUMNS,
        run: refresh_one,
        validate: Some(known_view_and_mode),
    },
    Spec {
        name: "openivm_refresh_all",
        params: &[],
        named_flags: &["fk_pruning"],
        named_text: &["mode"],
        columns: REFRESH_COLUMNS,
        run: refresh_all,
        validate: Some(valid_mode),
    },
    Spec {
        name: "openivm_drop",
        params: &["view_name"],
        named_flags: &[],
        named_text: &[],
        columns: &[("view_name", T::Varchar), ("dropped", T::Boolean)],
        run: drop,
        validate: Some(known_view),
    },
    Spec {
        name: "openivm_explain",
        params: &["view_name"],
        named_flags: &["fk_pruning"],
        named_text: &["mode"],
        columns: &[
            ("term", T::Integer),
            ("delta_leaves", T::Varchar),
            ("sign", T::Integer),
            ("status", T::Varchar),
            ("reason", T::Varchar),
            ("sql", T::Varchar),
            ("mode", T::Varchar),
            ("mode_reason", T::Varchar),
        ],
        run: explain,
        validate: Some(known_view_and_mode),
    },
    Spec {
        name: "openivm_verify",
        params: &["view_name"],
        named_flags: &["repair"],
        named_text: &[],
        columns: &[
            ("view_name", T::Varchar),
            ("missing_rows", T::BigInt),
            ("extra_rows", T::BigInt),
            ("ok", T::Boolean),
            ("repaired", T::Boolean),
        ],
        run: verify,
        validate: Some(known_view),
    },
    Spec {
        name: "openivm_set",
        params: &["name", "value"],
        named_flags: &[],
        named_text: &[],
        columns: &[("name", T::Varchar), ("value", T::Varchar)],
        run: set,
        validate: Some(valid_setting),
    },
    Spec {
        name: "openivm_declare_rely_fk",
        params: FK_PARAMS,
        named_flags: &[],
        named_text: &[],
        columns: FK_COLUMNS,
        run: declare_rely_fk,
        validate: Some(valid_rely),
    },
    Spec {
        name: "openivm_revoke_rely_fk",
        params: FK_PARAMS,
        named_flags: &[],
        named_text: &[],
        columns: &[
            ("child_table", T::Varchar),
            ("child_columns", T::Varchar),
            ("parent_table", T::Varchar),
            ("parent_columns", T::Varchar),
            ("revoked", T::Boolean),
        ],
        run: revoke_rely_fk,
        validate: Some(valid_rely),
    },
    Spec {
        name: "openivm_declare_append_only",
        params: &["table_name"],
        named_flags: &[],
        named_text: &["key"],
        columns: &[("table_name", T::Varchar), ("key", T::Varchar)],
        run: declare_append_only,
        validate: Some(valid_table),
    },
    Spec {
        name: "openivm_revoke_append_only",
        params: &["table_name"],
        named_flags: &[],
        named_text: &[],
        columns: &[("table_name", T::Varchar), ("revoked", T::Boolean)],
        run: revoke_append_only,
        validate: Some(valid_table),
    },
];
