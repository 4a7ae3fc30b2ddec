//! The metadata tables of a database that holds views (`sql/metadata.sql`) and their internal
//! schema.

use crate::db::Sql;
use crate::error::Result;
use crate::sql::METADATA;
use crate::store::settings;

/// The internal schema of the database holding the metadata.
pub const SCHEMA: &str = "openivm";

/// Creates the metadata tables if this database has none yet.
pub fn ensure(db: &dyn Sql) -> Result<()> {
    METADATA.run(db, [])?;
    settings::ensure(db)
}
