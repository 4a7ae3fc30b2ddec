//! A view's cursors into the feeds of its tables: taken when the view is created, and again
//! when a full refresh restarts its change capture.

use std::time::Instant;

use super::history::elapsed_ms;
use super::view::chain_sources;
use crate::capture::{self, feeds};
use crate::db::Sql;
use crate::error::{Error, Result};
use crate::ir::{ColumnDef, ViewQuery};
use crate::plan::mode;
use crate::render::Qualified;
use crate::store::settings;

/// Attaches a view to the feeds of its tables (starting feeds no view reads yet), with its
/// cursors at each feed's newest batch after bringing shared feeds up to date. Returns the ms
/// spent starting trigger feeds (their installation and snapshot: one-time work).
pub(crate) fn attach(db: &dyn Sql, q: &ViewQuery, at: &Qualified, catalog: &str, source: &str) -> Result<f64> {
    let tables = q.tables();
    let all_columns: Vec<Vec<ColumnDef>> = tables
        .iter()
        .map(|t| q.leaves.iter().find(|l| &l.table == t).map(|l| l.columns.clone()).unwrap_or_default())
        .collect();
    let mut sourced = crate::declare::sources::sources(db, catalog, &tables, &all_columns, source)?;
    chain_sources(db, catalog, q, &tables, &mut sourced)?;
    let kinds: Vec<capture::SourceKind> = sourced.into_iter().map(|(kind, _)| kind).collect();
    let sizes: Vec<i64> = super::cache::table_states(db, &tables)?.iter().map(|s| s.2).collect();
    // The database's refresh mode, read at most once, and only for a feed that may need it.
    let mut refresh_mode: Option<mode::Requested> = None;
    let mut setup_ms = 0.0;
    for (k, t) in tables.iter().enumerate() {
        let started = Instant::now();
        let columns = q.table_columns(t);
        let mut feed = feeds::find_or_start(db, catalog, t, &columns, &kinds[k], sizes[k])?;
        let setup = capture::trigger::installing(&feed);
        if let Some(skip) = capture::skip_diff(&feed, &kinds[k], &columns) {
            let skips = mode::start_by_recomputing(sizes[k], || match refresh_mode {
                Some(m) => Ok(m),
                None => {
                    let m = mode::Requested::parse(&settings::refresh_mode(db)?).unwrap_or(mode::Requested::Auto);
                    Ok(*refresh_mode.insert(m))
                }
            })?;
            if skips {
                match skip {
                    capture::SkipDiff::Join => feeds::join_to_recompute(db, &mut feed, &at.schema, &at.name)?,
                    capture::SkipDiff::Restart => {
                        feeds::widen_by_restarting(db, &mut feed, &columns, &all_columns[k], &at.schema, &at.name)?
                    }
                }
                continue;
            }
        }
        let fresh = if feed.reader.consumers > 0 && !capture::unchanged_now(db, &feed, sizes[k])? {
            match capture::capture(db, &feed, &format!("attach_{k}"), sizes[k]) {
                Ok(fresh) => fresh,
                // The attaching view is computed in full anyway: a broken promise restarts the
                // feed from the table as it is, and its other views recompute once.
                Err(Error::BrokenPromise(_)) => {
                    feeds::rebuild(db, &mut feed, &kinds[k], &at.schema, &at.name)?;
                    feed.unchanged()
                }
                Err(e) => return Err(e),
            }
        } else {
            feed.unchanged()
        };
        feed.reader.cursor = feed.seq;
        feeds::commit(db, &mut feed, &fresh, feeds::Committer::Attaching { schema: &at.schema, view: &at.name })?;
        feeds::widen(db, &mut feed, &columns, &all_columns[k])?;
        if feed.kind != kinds[k] {
            feeds::switch_source(db, &mut feed, &kinds[k])?;
        }
        capture::discard(db, &fresh)?;
        // Started here, or switched to triggers here (installing them).
        if setup || capture::trigger::installing(&feed) {
            setup_ms += elapsed_ms(started);
        }
    }
    Ok(setup_ms)
}
