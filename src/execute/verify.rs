//! `openivm_verify`: compares a view's stored result with a recompute of its query, for the
//! changes no capture can see (an UPDATE in place on a table declared append-only), and repairs
//! it on request by a full refresh.

use super::cache::Cache;
use super::prepared::Options;
use super::refresh;
use crate::db::{read_one, Sql};
use crate::error::Result;
use crate::plan::mode::Requested;
use crate::render;

pub struct Verified {
    pub view: String,
    /// Rows of the recompute the view lacks, and rows of the view the recompute lacks.
    pub missing_rows: i64,
    pub extra_rows: i64,
    pub repaired: bool,
}

pub fn verify(db: &dyn Sql, cache: &mut Cache, name: &str, repair: bool) -> Result<Verified> {
    // Collated columns are compared by their bytes where the view's spellings are determined:
    // each row it shows is an input row as it is, read from tables, not from a hidden stage that
    // deduplicated it first. A grouped, DISTINCT or UNION view shows one of the spellings the
    // collation calls equal, an arbitrary choice a recompute may make differently ('b' and
    // 'B' under NOCASE): it is compared under the collation, as its query compares.
    let (view, by_bytes) = if cache.strategy(db, name)? == crate::front::strategy::Strategy::Full {
        (super::full::record(db, cache, name)?, false)
    } else {
        let c = cache.compiled(db, name)?.1;
        let staged = |q: &crate::ir::ViewQuery| q.upstream.iter().any(|t| t.schema == crate::store::metadata::SCHEMA);
        let by_bytes = c.q.keeps_spellings() && !staged(&c.q) && !c.q.branches.iter().any(staged);
        (c.view, by_bytes)
    };
    // The recompute is materialized first: the user's query is run as it was written (a
    // trailing semicolon and all), never spliced into another statement.
    let recompute = render::Qualified::temp("openivm_verify_recompute".into());
    db.execute(&render::drop_table(&recompute))?;
    db.execute(&render::create_temp_table_as(&recompute, &view.query))?;
    let rows = crate::front::catalog::SqlCatalog::new(db)
        .columns(&recompute.table_id())
        .and_then(|columns| db.query(&render::verify_counts(&view.at, &recompute, &columns, by_bytes)));
    db.execute(&render::drop_table(&recompute))?;
    let (missing_rows, extra_rows): (i64, i64) = read_one(&rows?, "the comparison of a view with its recompute")?;
    let repaired = repair && (missing_rows > 0 || extra_rows > 0);
    if repaired {
        refresh::refresh(db, cache, name, Options { mode: Some(Requested::Full), ..Options::default() })?;
    }
    Ok(Verified { view: view.at.name.clone(), missing_rows, extra_rows, repaired })
}
