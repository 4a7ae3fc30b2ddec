//! Widening a stored result's sums when one outgrew its 64-bit column.
//!
//! A stored result keeps its integer and decimal sums in 64 bits while they fit
//! (`render::stored_table`). A value that does not fit fails the statement storing it with
//! DuckDB's conversion error (`SqlErrorKind::Conversion`), so nothing wrong is ever stored: the refresh
//! that met it rolls back, the view's sums are widened to 128 bits in a transaction of their own,
//! and the refresh runs again from the start, as after any failed refresh.

use super::cache::Cache;
use crate::db::{in_transaction, Sql};
use crate::error::{Error, Result, SqlErrorKind};
use crate::front::catalog::SqlCatalog;
use crate::front::strategy::Strategy;
use crate::render::stored_table;

/// Widens the narrowed sums of view `name`'s stored result; whether it had any (false: the
/// conversion error was not one of a stored sum, and is reported as it is). DuckDB's error does
/// not say which value failed, so a conversion error of the query itself also widens a view that
/// still has narrow sums; the call then fails again with the same error.
pub fn sums(db: &dyn Sql, cache: &mut Cache, name: &str) -> Result<bool> {
    if cache.strategy(db, name)? == Strategy::Full {
        return Ok(false);
    }
    let (_, c, _) = cache.compiled(db, name)?;
    in_transaction(db, || {
        let columns = SqlCatalog::new(db).columns(&c.view.data.table_id())?;
        let Some(wide) = stored_table::widened(&c.q, &columns) else {
            return Ok(false);
        };
        db.execute_all(&stored_table::rebuild(c.storage, &c.view.data, &wide))?;
        Ok(true)
    })
}

/// Runs `call` once more after each conversion error that widening the sums of the view it names
/// answers (each widening leaves fewer narrow sums, so this ends). `call` returns its error with
/// the view it was refreshing when it failed (None: no view's sums are in question).
pub fn retrying<T>(
    db: &dyn Sql,
    cache: &mut Cache,
    call: impl FnMut(&mut Cache) -> std::result::Result<T, (Error, Option<String>)>,
) -> Result<T> {
    retrying_at(db, cache, call).map_err(|(e, _)| e)
}

/// `retrying`, whose error keeps the view it names (`V` displays as the view's name).
pub fn retrying_at<T, V: std::fmt::Display>(
    db: &dyn Sql,
    cache: &mut Cache,
    mut call: impl FnMut(&mut Cache) -> std::result::Result<T, (Error, Option<V>)>,
) -> std::result::Result<T, (Error, Option<V>)> {
    loop {
        match call(cache) {
            Ok(v) => return Ok(v),
            Err((e @ Error::Sql { kind: SqlErrorKind::Conversion, .. }, Some(view))) => {
                match sums(db, cache, &view.to_string()) {
                    Ok(true) => {}
                    Ok(false) => return Err((e, Some(view))),
                    Err(e) => return Err((e, Some(view))),
                }
            }
            Err(failed) => return Err(failed),
        }
    }
}
