//! `openivm_verify`: compares a view's stored result with a recompute of its query, for the
//! changes no capture can see (an UPDATE in place on a table declared append-only), and repairs
//! it on request by a full refresh.

use super::cache::Cache;
use super::mode::Requested;
use super::refresh::{self, Options};
use crate::db::{Cells, Sql};
use crate::error::{Error, Result};
use crate::render;

pub struct Verified {
    pub view: String,
    /// Rows of the recompute the view lacks, and rows of the view the recompute lacks.
    pub missing_rows: i64,
    pub extra_rows: i64,
    pub repaired: bool,
}

pub fn verify(db: &dyn Sql, cache: &mut Cache, name: &str, repair: bool) -> Result<Verified> {
    let (_, c, _) = cache.compiled(db, name)?;
    let rows = db.query(&render::verify_counts(&c.view.at, &c.view.query))?;
    let r = rows.first().ok_or_else(|| Error::Internal("the comparison returned no row".into()))?;
    let (missing_rows, extra_rows) = (r.int(0)?, r.int(1)?);
    let repaired = repair && (missing_rows > 0 || extra_rows > 0);
    if repaired {
        refresh::refresh(db, cache, name, Options { fk_pruning: None, mode: Some(Requested::Full) })?;
    }
    Ok(Verified { view: c.view.at.name.clone(), missing_rows, extra_rows, repaired })
}
