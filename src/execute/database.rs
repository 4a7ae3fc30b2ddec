//! Which database a call works in.
//!
//! A maintained view lives in one database together with its stored result, its metadata and its
//! change state, so that a refresh writes that database alone (DuckDB writes one database per
//! transaction) and every process that attaches the file sees the view. Views are kept in the
//! database openivm was loaded into (the *home*) unless their name names another attached DuckDB
//! database (`other.main.v`, or `other.v` when `other` is not a schema of the home database).
//!
//! For a call about a view of another database, the extension's connection makes that database
//! its default (`USE`) for the duration of the call. Every fixed query names the metadata without
//! a database, so it reads and writes the metadata of the database the call works in; and the
//! view's query is bound there, as DuckDB binds the names of a view in the view's own database.

use std::collections::HashMap;

use super::cache::Cache;
use crate::db::Sql;
use crate::error::{Error, Result};
use crate::front::catalog::{database_type, table_name, unsupported_home, view_database, SqlCatalog};
use crate::render::{self, Storage};
use crate::sql::catalog::SCHEMA_EXISTS;

/// The per-instance state of calls: the home database and a cache per database.
#[derive(Default)]
pub struct Session {
    /// The database openivm was loaded into: the connection's default between calls.
    home: Option<String>,
    /// The connection was switched to another database and not switched back yet (a call that
    /// did not return); the next call switches back first.
    switched: bool,
    caches: HashMap<String, Cache>,
    /// The settings the current call's caller set with `SET`.
    caller: crate::store::settings::CallerSettings,
}

impl Session {
    /// The settings the caller of the call about to run set with `SET`.
    pub fn set_caller(&mut self, caller: crate::store::settings::CallerSettings) {
        self.caller = caller;
    }

    /// Forgets the compiled views and settings of every database (after a declaration, a
    /// revocation or a setting changed).
    pub fn invalidate(&mut self) {
        for c in self.caches.values_mut() {
            c.invalidate();
        }
    }

    /// Runs `f` in the database of the view named `view` (`None`: the home database) with that
    /// database's cache and the view's name as it reads within that database.
    pub fn in_database<T>(
        &mut self,
        db: &dyn Sql,
        view: Option<&str>,
        f: impl FnOnce(&dyn Sql, &mut Cache, &str) -> Result<T>,
    ) -> Result<T> {
        let home = self.home(db)?;
        let (target, name) = match view {
            None => (home.clone(), String::new()),
            Some(arg) => locate(db, &home, arg)?,
        };
        let away = !target.eq_ignore_ascii_case(&home);
        let name = match (away, view) {
            (false, Some(arg)) => arg.to_string(),
            _ => name,
        };
        self.run_in(db, &home, &target, &name, f)
    }

    /// Runs `f` in the attached database `database` (`None`: the home database), which must be
    /// one views can live in, with that database's cache: for calls about all the views of a
    /// database (`openivm_refresh_all(database := ...)`).
    pub fn in_named_database<T>(
        &mut self,
        db: &dyn Sql,
        database: Option<&str>,
        f: impl FnOnce(&dyn Sql, &mut Cache, &str) -> Result<T>,
    ) -> Result<T> {
        let home = self.home(db)?;
        let target = match database {
            None => home.clone(),
            Some(d) => match database_type(db, d)? {
                None => return Err(Error::InvalidArgument(format!("database '{d}' is not attached"))),
                Some(t) if Storage::of_type(&t).is_none() => return Err(unsupported_home(d, &t)),
                Some(_) => d.to_string(),
            },
        };
        self.run_in(db, &home, &target, "", f)
    }

    /// Runs `f` with the connection's default database switched to `target` when it is not the
    /// home, and switched back after.
    fn run_in<T>(
        &mut self,
        db: &dyn Sql,
        home: &str,
        target: &str,
        name: &str,
        f: impl FnOnce(&dyn Sql, &mut Cache, &str) -> Result<T>,
    ) -> Result<T> {
        let away = !target.eq_ignore_ascii_case(home);
        if away {
            db.use_database(target)?;
            self.switched = true;
        }
        let cache = self.caches.entry(target.to_lowercase()).or_default();
        cache.caller = self.caller.clone();
        cache.set_declared_in(home);
        let out = f(db, cache, name);
        if !away {
            return out;
        }
        let back = db.use_database(home);
        if back.is_ok() {
            self.switched = false;
        }
        out.and_then(|v| back.map(|()| v))
    }

    /// The home database, the connection switched back to it if a call left it elsewhere.
    fn home(&mut self, db: &dyn Sql) -> Result<String> {
        if let Some(h) = &self.home {
            if self.switched {
                db.use_database(h)?;
                self.switched = false;
            }
            return Ok(h.clone());
        }
        let (h, _) = SqlCatalog::new(db).defaults()?;
        self.home = Some(h.clone());
        Ok(h)
    }
}

/// The database a view name means (checked to be an attached DuckDB database) and the name
/// within it, quoted.
fn locate(db: &dyn Sql, home: &str, arg: &str) -> Result<(String, String)> {
    let name = table_name(arg)?;
    let (is_schema, is_database) = match (&name.catalog, &name.schema) {
        (None, Some(x)) => (SCHEMA_EXISTS.scalar_int(db, [home, x])? > 0, database_type(db, x)?.is_some()),
        _ => (false, false),
    };
    let (target, within) = view_database(&name, home, is_schema, is_database)?;
    if !target.eq_ignore_ascii_case(home) {
        match database_type(db, &target)? {
            None => return Err(Error::InvalidArgument(format!("database '{target}' is not attached ('{arg}')"))),
            Some(t) if Storage::of_type(&t).is_none() => return Err(unsupported_home(&target, &t)),
            Some(_) => {}
        }
    }
    let quoted = match &within.schema {
        Some(s) => format!("{}.{}", render::ident(s), render::ident(&within.name)),
        None => render::ident(&within.name),
    };
    Ok((target, quoted))
}
