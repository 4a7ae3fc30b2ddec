//! Read-only lookups that the shell runs at bind time, before any work starts, so that a wrong
//! argument fails as a binder error (which leaves the caller's open transaction usable) rather
//! than as an error of the running statement (which aborts it).

use crate::db::Sql;
use crate::error::{Error, Result};
use crate::execute::cache::Cache;
use crate::front::catalog::{main_table_exists, table_name, SqlCatalog};
use crate::sql::views::FIND as VIEW_FIND;

/// Whether `arg` names a maintained view, resolved as the executor resolves it: in the database
/// the call works in (see `execute::database`), in the given or the default schema.
pub fn view_exists(db: &dyn Sql, cache: &mut Cache, arg: &str) -> Result<bool> {
    if cache.knows(db, arg)? {
        return Ok(true);
    }
    let name = table_name(arg)?;
    let (default_catalog, default_schema) = SqlCatalog::new(db).defaults()?;
    if let Some(c) = &name.catalog {
        if !c.eq_ignore_ascii_case(&default_catalog) {
            return Err(Error::InvalidArgument(format!(
                "'{arg}' names another database than the one this call works in ('{default_catalog}')"
            )));
        }
    }
    if !main_table_exists(db, "openivm_views")? {
        return Ok(false);
    }
    let schema = name.schema.unwrap_or(default_schema);
    Ok(!VIEW_FIND.rows(db, [&schema, &name.name])?.is_empty())
}
