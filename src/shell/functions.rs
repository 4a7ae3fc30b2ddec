//! The SQL surface: one `Spec` per table function, each a thin adapter from arguments to the
//! executor and from its result to rows.

use crate::declare::rely_fk;
use crate::declare::sources;
use crate::error::{Error, Result};
use crate::execute::{self, explain, prepared, refresh};
use crate::execute::{compile_only, lookup, write};
use crate::front::catalog::table_name;
use crate::plan::mode::Requested;
use crate::shell::instance::Instance;
use crate::shell::table_function::{Args, Call, ColumnType as T, Rows, Spec, Value};
use crate::store::settings;

fn create(inst: &Call, args: &Args) -> Result<Rows> {
    let (name, query) = (args.text(0, "view_name")?, args.text(1, "query")?);
    let c = inst.with_session(|db, s| {
        s.in_database(db, Some(name), |db, cache, name| execute::create(db, cache, name, query))
    })?;
    Ok(vec![vec![Value::Text(c.view), Value::Int(c.rows), Value::Text(c.strategy.as_str().to_string())]])
}

fn options(args: &Args) -> Result<prepared::Options> {
    let mode =
        match args.named_text("mode") {
            None => None,
            Some(m) => Some(Requested::parse(m).ok_or_else(|| {
                Error::InvalidArgument(format!("mode takes 'auto', 'incremental' or 'full', not '{m}'"))
            })?),
        };
    Ok(prepared::Options { fk_pruning: args.flag("fk_pruning"), mode, net_batches: false })
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
        r.mode.map_or(Value::Null, |m| Value::Text(m.as_str().to_string())),
        if r.mode.is_some() { Value::Text(r.mode_reason) } else { Value::Null },
        Value::Text(r.schema),
        r.error.map_or(Value::Null, Value::Text),
    ]
}

fn refresh_one(inst: &Call, args: &Args) -> Result<Rows> {
    let name = args.text(0, "view_name")?;
    let opts = options(args)?;
    let upstream = match args.flag("cascade").unwrap_or(true) {
        true => refresh::Upstream::All,
        false => refresh::Upstream::Stages,
    };
    let r = inst.with_session(|db, s| {
        s.in_database(db, Some(name), |db, cache, name| refresh::refresh_cascade(db, cache, name, opts, upstream))
    })?;
    Ok(r.into_iter().map(report_row).collect())
}

fn on_error(args: &Args) -> Result<refresh::OnError> {
    match args.named_text("on_error") {
        None => Ok(refresh::OnError::Fail),
        Some(v) => refresh::OnError::parse(v)
            .ok_or_else(|| Error::InvalidArgument(format!("on_error takes 'fail' or 'skip', not '{v}'"))),
    }
}

fn refresh_all(inst: &Call, args: &Args) -> Result<Rows> {
    let opts = options(args)?;
    let on_error = on_error(args)?;
    let reports = inst.with_session(|db, s| {
        s.in_named_database(db, args.named_text("database"), |db, cache, _| {
            refresh::refresh_all(db, cache, opts, on_error)
        })
    })?;
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
    let (rows, sources) = inst.with_session(|db, s| {
        s.in_database(db, Some(name), |db, cache, name| {
            Ok((explain::explain(db, cache, name, opts)?, explain::sources_of(db, cache, name)?))
        })
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
                Value::Text(sources.clone()),
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
        s.in_database(db, None, |db, _, _| crate::db::in_transaction(db, || settings::set(db, name, value)))
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
        s.in_database(db, None, |db, _, _| rely_fk::declare(db, child, child_cols, parent, parent_cols))
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
        s.in_database(db, None, |db, _, _| rely_fk::revoke(db, child, child_cols, parent, parent_cols))
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
        s.in_database(db, None, |db, _, _| sources::declare(db, table, key))
    })?;
    Ok(vec![vec![Value::Text(d.table), Value::Text(d.key)]])
}

fn revoke_append_only(inst: &Call, args: &Args) -> Result<Rows> {
    let table = args.text(0, "table_name")?;
    let (t, revoked) = inst.with_session(|db, s| {
        s.invalidate();
        s.in_database(db, None, |db, _, _| sources::revoke(db, table, sources::Promise::AppendOnly))
    })?;
    Ok(vec![vec![Value::Text(t), Value::Bool(revoked)]])
}

fn declare_recorded(inst: &Call, args: &Args) -> Result<Rows> {
    let table = args.text(0, "table_name")?;
    let d = inst.with_session(|db, s| {
        s.invalidate();
        s.in_database(db, None, |db, _, _| sources::declare_recorded(db, table))
    })?;
    Ok(vec![vec![Value::Text(d.table)]])
}

fn revoke_recorded(inst: &Call, args: &Args) -> Result<Rows> {
    let table = args.text(0, "table_name")?;
    let (t, revoked) = inst.with_session(|db, s| {
        s.invalidate();
        s.in_database(db, None, |db, _, _| sources::revoke(db, table, sources::Promise::Recorded))
    })?;
    Ok(vec![vec![Value::Text(t), Value::Bool(revoked)]])
}

fn set_source(inst: &Call, args: &Args) -> Result<Rows> {
    let (table, source) = (args.text(0, "table_name")?, args.text(1, "source")?);
    let (t, chosen) = inst.with_session(|db, s| {
        s.invalidate();
        s.in_database(db, None, |db, _, _| sources::set_source(db, table, source))
    })?;
    Ok(vec![vec![Value::Text(t), Value::Text(chosen)]])
}

fn written_row(w: write::Written) -> Rows {
    vec![vec![Value::Text(w.table), Value::Int(w.rows)]]
}

fn insert(inst: &Call, args: &Args) -> Result<Rows> {
    let (table, query) = (args.text(0, "table_name")?, args.text(1, "query")?);
    Ok(written_row(
        inst.with_session(|db, s| s.in_database(db, None, |db, cache, _| write::insert(db, cache, table, query)))?,
    ))
}

fn delete(inst: &Call, args: &Args) -> Result<Rows> {
    let table = args.text(0, "table_name")?;
    let predicate = args.opt_text(1);
    Ok(written_row(
        inst.with_session(|db, s| s.in_database(db, None, |db, cache, _| write::delete(db, cache, table, predicate)))?,
    ))
}

fn update(inst: &Call, args: &Args) -> Result<Rows> {
    let (table, assignments) = (args.text(0, "table_name")?, args.text(1, "assignments")?);
    let predicate = args.opt_text(2);
    Ok(written_row(inst.with_session(|db, s| {
        s.in_database(db, None, |db, cache, _| write::update(db, cache, table, assignments, predicate))
    })?))
}

fn compile_with_facts(inst: &Call, args: &Args) -> Result<Rows> {
    let (name, facts) = (args.text(0, "view_name")?, args.text(1, "facts")?);
    let dialect = args.named_text("dialect");
    let program = inst.with_session(|db, s| {
        s.in_database(db, Some(name), |db, cache, name| compile_only::compile(db, cache, name, facts, dialect))
    })?;
    Ok(program
        .into_iter()
        .map(|s| vec![Value::Int(s.order), Value::Text(s.kind.to_string()), Value::Text(s.sql)])
        .collect())
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

/// The view exists, and the facts and the dialect are well-formed and name only its tables.
fn valid_compile(inst: &Instance, args: &Args) -> Result<()> {
    known_view(inst, args)?;
    let (name, facts) = (args.text(0, "view_name")?, args.text(1, "facts")?);
    let dialect = args.named_text("dialect");
    inst.with_session(|db, s| {
        s.in_database(db, Some(name), |db, _, name| compile_only::validate(db, name, facts, dialect))
    })
}

fn valid_setting(_: &Instance, args: &Args) -> Result<()> {
    settings::check(args.text(0, "name")?, args.text(1, "value")?).map(|_| ())
}

fn valid_rely(_: &Instance, args: &Args) -> Result<()> {
    table_name(args.text(0, "child_table")?)?;
    table_name(args.text(2, "parent_table")?)?;
    let child = rely_fk::parse_columns(args.text(1, "child_columns")?)?;
    let parent = rely_fk::parse_columns(args.text(3, "parent_columns")?)?;
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

/// A write's table name and fragments: well-formed and not empty (DuckDB parses and binds the
/// fragments when the write runs).
fn valid_write(_: &Instance, args: &Args) -> Result<()> {
    table_name(args.text(0, "table_name")?)?;
    for i in 1..args.positional.len() {
        if args.opt_text(i).is_some_and(|f| f.trim().is_empty()) {
            return Err(Error::InvalidArgument(
                "an empty fragment (a NULL predicate writes every row; the query and the assignments are required)"
                    .into(),
            ));
        }
    }
    Ok(())
}

fn valid_mode(_: &Instance, args: &Args) -> Result<()> {
    options(args).map(|_| ())
}

fn valid_refresh_all(inst: &Instance, args: &Args) -> Result<()> {
    valid_mode(inst, args)?;
    on_error(args).map(|_| ())
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
    ("mode_reason", T::Varchar),
    ("view_schema", T::Varchar),
    ("error", T::Varchar),
];

const FK_COLUMNS: &[(&str, T)] = &[
    ("child_table", T::Varchar),
    ("child_columns", T::Varchar),
    ("parent_table", T::Varchar),
    ("parent_columns", T::Varchar),
];

const WRITE_COLUMNS: &[(&str, T)] = &[("table_name", T::Varchar), ("rows", T::BigInt)];

const FK_PARAMS: &[&str] = &["child_table", "child_columns", "parent_table", "parent_columns"];

pub static SPECS: &[Spec] = &[
    Spec {
        name: "openivm_create",
        params: &["view_name", "query"],
        nullable: &[],
        named_flags: &[],
        named_text: &[],
        columns: &[("view_name", T::Varchar), ("rows", T::BigInt), ("strategy", T::Varchar)],
        run: create,
        validate: Some(valid_new_view),
    },
    Spec {
        name: "refresh",
        params: &["view_name"],
        nullable: &[],
        named_flags: &["fk_pruning", "cascade"],
        named_text: &["mode"],
        columns: REFRESH_COLUMNS,
        run: refresh_one,
        validate: Some(known_view_and_mode),
    },
    Spec {
        name: "openivm_refresh",
        params: &["view_name"],
        nullable: &[],
        named_flags: &["fk_pruning", "cascade"],
        named_text: &["mode"],
        columns: REFRESH_COLUMNS,
        run: refresh_one,
        validate: Some(known_view_and_mode),
    },
    Spec {
        name: "openivm_refresh_all",
        params: &[],
        nullable: &[],
        named_flags: &["fk_pruning"],
        named_text: &["mode", "database", "on_error"],
        columns: REFRESH_COLUMNS,
        run: refresh_all,
        validate: Some(valid_refresh_all),
    },
    Spec {
        name: "openivm_drop",
        params: &["view_name"],
        nullable: &[],
        named_flags: &[],
        named_text: &[],
        columns: &[("view_name", T::Varchar), ("dropped", T::Boolean)],
        run: drop,
        validate: Some(known_view),
    },
    Spec {
        name: "openivm_explain",
        params: &["view_name"],
        nullable: &[],
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
            ("sources", T::Varchar),
        ],
        run: explain,
        validate: Some(known_view_and_mode),
    },
    Spec {
        name: "openivm_compile_with_facts",
        params: &["view_name", "facts"],
        nullable: &[],
        named_flags: &[],
        named_text: &["dialect"],
        columns: &[("stmt_order", T::Integer), ("stmt_kind", T::Varchar), ("sql", T::Varchar)],
        run: compile_with_facts,
        validate: Some(valid_compile),
    },
    Spec {
        name: "openivm_verify",
        params: &["view_name"],
        nullable: &[],
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
        nullable: &[],
        named_flags: &[],
        named_text: &[],
        columns: &[("name", T::Varchar), ("value", T::Varchar)],
        run: set,
        validate: Some(valid_setting),
    },
    Spec {
        name: "openivm_declare_rely_fk",
        params: FK_PARAMS,
        nullable: &[],
        named_flags: &[],
        named_text: &[],
        columns: FK_COLUMNS,
        run: declare_rely_fk,
        validate: Some(valid_rely),
    },
    Spec {
        name: "openivm_revoke_rely_fk",
        params: FK_PARAMS,
        nullable: &[],
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
        nullable: &[],
        named_flags: &[],
        named_text: &["key"],
        columns: &[("table_name", T::Varchar), ("key", T::Varchar)],
        run: declare_append_only,
        validate: Some(valid_table),
    },
    Spec {
        name: "openivm_revoke_append_only",
        params: &["table_name"],
        nullable: &[],
        named_flags: &[],
        named_text: &[],
        columns: &[("table_name", T::Varchar), ("revoked", T::Boolean)],
        run: revoke_append_only,
        validate: Some(valid_table),
    },
    Spec {
        name: "openivm_declare_recorded",
        params: &["table_name"],
        nullable: &[],
        named_flags: &[],
        named_text: &[],
        columns: &[("table_name", T::Varchar)],
        run: declare_recorded,
        validate: Some(valid_table),
    },
    Spec {
        name: "openivm_revoke_recorded",
        params: &["table_name"],
        nullable: &[],
        named_flags: &[],
        named_text: &[],
        columns: &[("table_name", T::Varchar), ("revoked", T::Boolean)],
        run: revoke_recorded,
        validate: Some(valid_table),
    },
    Spec {
        name: "openivm_set_source",
        params: &["table_name", "source"],
        nullable: &[],
        named_flags: &[],
        named_text: &[],
        columns: &[("table_name", T::Varchar), ("source", T::Varchar)],
        run: set_source,
        validate: Some(valid_table),
    },
    Spec {
        name: "openivm_insert",
        params: &["table_name", "query"],
        nullable: &[],
        named_flags: &[],
        named_text: &[],
        columns: WRITE_COLUMNS,
        run: insert,
        validate: Some(valid_write),
    },
    Spec {
        name: "openivm_delete",
        params: &["table_name", "predicate"],
        nullable: &["predicate"],
        named_flags: &[],
        named_text: &[],
        columns: WRITE_COLUMNS,
        run: delete,
        validate: Some(valid_write),
    },
    Spec {
        name: "openivm_update",
        params: &["table_name", "assignments", "predicate"],
        nullable: &["predicate"],
        named_flags: &[],
        named_text: &[],
        columns: WRITE_COLUMNS,
        run: update,
        validate: Some(valid_write),
    },
];
