//! Trusted RELY foreign keys (placeholder until the declaration module lands).
use crate::db::Sql;
use crate::error::{Error, Result};

pub struct Declared {
    pub child: String,
    pub child_columns: String,
    pub parent: String,
    pub parent_columns: String,
}

pub fn declare(_db: &dyn Sql, _c: &str, _cc: &str, _p: &str, _pc: &str) -> Result<Declared> {
    Err(Error::Internal("not built yet".into()))
}
