//! A round of refreshes (`openivm_refresh_all`): feeds captured once for all their views, the
//! batches and verdicts shared, cursor moves written together at its end.

use std::collections::{HashMap, HashSet};

use super::cache::Cache;
pub use super::report::RefreshReport;
use crate::capture::{self, feeds, Fresh, SourceKind};
use crate::db::Sql;
use crate::error::Result;
use crate::front::strategy::Strategy;
use crate::plan::mode::{self};

/// A refresh of several views in one transaction (`openivm_refresh_all`). The first view over a
/// feed captures it; the later ones read that batch straight from its temp table instead of a
/// round trip through the change log. At the end, a batch is logged only for views of the feed
/// that did not reach it (none, when every view was refreshed), and the temp tables are dropped.
#[derive(Default)]
pub struct Round {
    pub(crate) captured: HashSet<i64>,
    /// Feed id -> the batch committed by the round (non-empty, not logged), its sequence number
    /// and the feed's catalog.
    pub(crate) batches: HashMap<i64, (Fresh, i64, String)>,
    /// The refreshes' history rows and refreshed marks, written at the end.
    pub(crate) refreshed: super::history::Refreshed,
    /// Diff feeds read by several of the round's views, decided once for all of them
    /// (`mode::skip_shared_capture`): why they recompute instead of capturing, or None.
    pub(crate) shared: HashMap<i64, Option<String>>,
    /// Feed id -> how long the round's diff capture of it took (ms).
    pub(crate) diff_ms: HashMap<i64, f64>,
    /// The views' cursor moves, written together at the end: (view schema, view name, move).
    /// A later view of the round reads the earlier ones' cursors as they were, which only makes
    /// it trim a shared log less.
    pub(crate) cursor_moves: Vec<(String, String, feeds::CursorMove)>,
    /// Feeds with logged batches after a view's refresh, trimmed at the end: (catalog, id).
    pub(crate) to_trim: HashSet<(String, i64)>,
    /// Every cursor and feed, as read since the last view that wrote anything (None: read them
    /// again).
    pub(crate) feed_rows: Option<feeds::FeedRows>,
}

impl Round {
    /// Decides, for each diff feed that several of `views` read, whether the round captures it
    /// (see `mode::skip_shared_capture`).
    pub(crate) fn decide_shared(
        db: &dyn Sql,
        cache: &mut Cache,
        views: &[ViewAt],
        at: &mut Option<ViewAt>,
    ) -> Result<HashMap<i64, Option<String>>> {
        let mut times: HashMap<(String, String), mode::Reader> = HashMap::new();
        let mut catalog = None;
        for view in views {
            *at = Some(view.clone());
            let name = &view.to_string();
            if cache.strategy(db, name)? == Strategy::Full {
                continue;
            }
            let (_, c, _) = cache.compiled(db, name)?;
            let apply = match (c.times.incremental_ms, c.times.incremental_capture_ms) {
                (Some(total), Some(capture)) => Some((total - capture).max(0.0)),
                _ => None,
            };
            let reader = mode::Reader { full: c.times.full_ms, apply };
            catalog.get_or_insert_with(|| c.view.at.catalog.clone());
            times.insert((c.view.at.schema.clone(), c.view.at.name.clone()), reader);
        }
        *at = None;
        let Some(catalog) = catalog else { return Ok(HashMap::new()) };
        let mut out = HashMap::new();
        for (feed, readers) in feeds::with_readers(db, &catalog)? {
            if !matches!(feed.kind, SourceKind::Diff) || readers.len() < 2 {
                continue;
            }
            let readers: Vec<mode::Reader> = readers.iter().filter_map(|r| times.get(r)).copied().collect();
            // Only a diff this process measured in a round decides: until then the round diffs
            // (and measures it). A stand-in (a reader's last incremental refresh, or its
            // snapshot's start) once made a noisy machine stop tracking 50 views at once, for good.
            let capture = cache.diff_capture(feed.id);
            // A diff feed keeps no row count: the appended-row count it last saw stands for the size.
            let rows = feed.size_seen.max(feed.row_count).max(0) as u64;
            out.insert(feed.id, mode::skip_shared_capture(capture, &readers, rows));
        }
        Ok(out)
    }

    /// The round's verdict for a view over these diff feeds: Some(why) to recompute, Some(None)
    /// to capture, None where some feed was not decided by the round (the view's own rule).
    pub(crate) fn verdict(&self, diff_feeds: &[i64]) -> Option<Option<String>> {
        let verdicts: Vec<&Option<String>> = diff_feeds.iter().filter_map(|id| self.shared.get(id)).collect();
        if let Some(why) = verdicts.iter().find_map(|v| v.as_ref()) {
            return Some(Some(why.clone()));
        }
        (verdicts.len() == diff_feeds.len()).then_some(None)
    }

    /// Writes the refreshes' history and marks, logs each batch for the views that have not
    /// applied it, then drops the round's tables.
    pub(crate) fn close(self, db: &dyn Sql) -> Result<()> {
        if !self.cursor_moves.is_empty() {
            let moves: Vec<crate::render::capture::CursorMoveRow> = self
                .cursor_moves
                .iter()
                .map(|(schema, view, m)| crate::render::capture::CursorMoveRow {
                    schema,
                    view,
                    feed: m.feed,
                    from: m.from,
                    to: m.to,
                    watermark: m.watermark.as_deref(),
                })
                .collect();
            db.execute(&crate::render::capture::cursors_advance_all(&moves))?;
        }
        for (catalog, id) in &self.to_trim {
            feeds::trim_by_id(db, catalog, *id)?;
        }
        self.refreshed.flush(db)?;
        for (id, (fresh, seq, catalog)) in &self.batches {
            feeds::log_for_laggards(db, catalog, *id, fresh, *seq)?;
        }
        for (fresh, _, _) in self.batches.values() {
            capture::discard(db, fresh)?;
        }
        Ok(())
    }
}

/// A maintained view by schema and name (displayed quoted, as `cache` takes names).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ViewAt {
    pub(crate) schema: String,
    pub(crate) name: String,
}

impl std::fmt::Display for ViewAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", crate::render::ident(&self.schema), crate::render::ident(&self.name))
    }
}
