//! Shared change state: one feed per base table, a cursor per view. A feed tracks the columns
//! any of its views reads (widened when a view that reads more is created).
//!
//! A feed numbers its captured batches (`seq`). A view's cursor is the last batch it applied.
//! A batch is written to the feed's change log (`openivm.log_<id>`) only when some other view
//! has not applied it yet, and the log keeps only batches some cursor has not passed: a single
//! view over a table never writes its deltas anywhere but a temp table. The one exception is
//! the feed's open batch: writes through openivm record their rows in the log as batch `seq +
//! 1`, which every reader of the log leaves out (it reads up to `seq`) until a capture makes
//! them part of that batch where they are.

use super::batch::{Fresh, SourceKind};
use super::batch_facts::BatchFacts;
use super::{append_only, diff, trigger};
use crate::db::{read_all, tagged, typed_row, FromRow, Row, Sql};
use crate::error::{Error, Result};
use crate::ir::{ColumnDef, TableId};
use crate::render::capture as sql;
use crate::render::{self, Qualified};
use crate::store::feed_state::FeedState;
use crate::store::home;

use crate::sql::capture::CURSORS;
use crate::sql::capture::CURSORS_AND_FEEDS;
use crate::sql::capture::CURSORS_DELETE;
use crate::sql::capture::CURSORS_STALE;
use crate::sql::capture::CURSOR_SET;
use crate::sql::capture::FEEDS_OF_VIEW;
use crate::sql::capture::FEED_DELETE;
use crate::sql::capture::FEED_FIND;
use crate::sql::capture::FEED_INSERT;
use crate::sql::capture::FEED_MIN_CURSOR;
use crate::sql::capture::FEED_NEXT_ID;
use crate::sql::capture::FEED_SET_COLUMNS;
use crate::sql::capture::LEGACY_PENDING;

pub use super::feed::{Feed, Reader, ViewDelta, ViewName};
pub use crate::store::metadata::SCHEMA;

/// Every view's cursor.
fn cursors(db: &dyn Sql) -> Result<Vec<Cursor>> {
    read_all(&CURSORS.rows(db, [])?)
}

/// How many views have a cursor into feed `id`.
fn consumers(cursors: &[Cursor], id: i64) -> i64 {
    cursors.iter().filter(|c| c.feed == id).count() as i64
}

typed_row! {
    /// A view's cursor into a feed, as stored (the columns of `cursors.sql`).
    #[derive(Clone)]
    struct Cursor {
        schema: String,
        view: String,
        feed: i64,
        seq: i64,
        watermark: Option<String>,
    }
}

/// The feeds a view reads, with its cursors and the number of views sharing each.
pub fn of_view(db: &dyn Sql, catalog: &str, schema: &str, view: &str) -> Result<Vec<Feed>> {
    Ok(of_view_and_readers(db, catalog, schema, view, false)?.0)
}

/// The feeds a view reads (`of_view`), and, with `readers`, the feeds on the view itself: those
/// of the views that read it (from the same two reads).
pub fn of_view_and_readers(
    db: &dyn Sql,
    catalog: &str,
    schema: &str,
    view: &str,
    readers: bool,
) -> Result<(Vec<Feed>, Vec<Feed>)> {
    if readers {
        let rows = FeedRows::read(db, catalog)?;
        return Ok(split_for_view(&rows.cursors, rows.feeds, catalog, schema, view, readers));
    }
    let cursors = cursors(db)?;
    if !cursors.iter().any(|c| c.schema == schema && c.view == view) {
        return Ok((vec![], vec![]));
    }
    let feeds = all_feeds(db, catalog, &cursors)?;
    Ok(split_for_view(&cursors, feeds, catalog, schema, view, readers))
}

/// Every cursor and feed as one read found them, kept by a round of refreshes for as long as
/// none of its views wrote anything (a round with nothing to do reads them once).
pub struct FeedRows {
    catalog: String,
    cursors: Vec<Cursor>,
    feeds: Vec<Feed>,
}

impl FeedRows {
    /// Every cursor and every feed (with its number of views), from one statement.
    pub fn read(db: &dyn Sql, catalog: &str) -> Result<FeedRows> {
        FeedRows::from_rows(catalog, &CURSORS_AND_FEEDS.rows(db, [])?)
    }

    /// The cursors (kind 2) and feeds (kind 3) among rows laid out as `cursors_and_feeds.sql`'s
    /// (a read may carry other kinds of rows: `sql::REFRESH_READS`).
    pub fn from_rows(catalog: &str, rows: &[Row]) -> Result<FeedRows> {
        let (mut cursors, mut feeds) = (Vec::new(), Vec::new());
        for r in rows {
            match tagged(r)? {
                (2, r) => cursors.push(Cursor::from_row(&r)?),
                (3, r) => feeds.push(Feed::from_row(catalog, &r)?),
                _ => {}
            }
        }
        for f in &mut feeds {
            f.reader.consumers = consumers(&cursors, f.id);
        }
        Ok(FeedRows { catalog: catalog.to_string(), cursors, feeds })
    }

    /// Whether these rows are of the feeds in `catalog`.
    pub fn of(&self, catalog: &str) -> bool {
        self.catalog == catalog
    }

    /// `of_view_and_readers` (with readers) from these rows.
    pub fn view_and_readers(&self, schema: &str, view: &str) -> (Vec<Feed>, Vec<Feed>) {
        split_for_view(&self.cursors, self.feeds.clone(), &self.catalog, schema, view, true)
    }
}

/// The feeds a view has cursors into (with its cursors and the others' oldest), and with
/// `readers` the feeds on the view itself.
fn split_for_view(
    cursors: &[Cursor],
    feeds: Vec<Feed>,
    catalog: &str,
    schema: &str,
    view: &str,
    readers: bool,
) -> (Vec<Feed>, Vec<Feed>) {
    let mine: Vec<&Cursor> = cursors.iter().filter(|c| c.schema == schema && c.view == view).collect();
    let (mut out, mut on_view) = (Vec::new(), Vec::new());
    for mut f in feeds {
        if let Some(c) = mine.iter().find(|c| c.feed == f.id) {
            f.reader.cursor = c.seq;
            f.reader.watermark = c.watermark.clone().filter(|w| !w.is_empty());
            f.reader.others_min = cursors
                .iter()
                // a view that recomputes at its next refresh (-1) needs no logged batch
                .filter(|c| c.feed == f.id && c.seq >= 0 && !(c.schema == schema && c.view == view))
                .map(|c| c.seq)
                .min();
            out.push(f);
        } else if readers
            && f.table.catalog.eq_ignore_ascii_case(catalog)
            && f.table.schema.eq_ignore_ascii_case(schema)
            && f.table.name.eq_ignore_ascii_case(view)
        {
            on_view.push(f);
        }
    }
    (out, on_view)
}

/// Every feed, with the views that have a cursor into it (schema, name).
pub fn with_readers(db: &dyn Sql, catalog: &str) -> Result<Vec<(Feed, Vec<ViewName>)>> {
    let cursors = cursors(db)?;
    let feeds = all_feeds(db, catalog, &cursors)?;
    Ok(feeds
        .into_iter()
        .map(|f| {
            let readers =
                cursors.iter().filter(|c| c.feed == f.id).map(|c| (c.schema.clone(), c.view.clone())).collect();
            (f, readers)
        })
        .collect())
}

/// Every feed as stored, with its number of views counted from `cursors`.
fn all_feeds(db: &dyn Sql, catalog: &str, cursors: &[Cursor]) -> Result<Vec<Feed>> {
    FEEDS_OF_VIEW
        .rows(db, [])?
        .iter()
        .map(|r| {
            let mut f = Feed::from_row(catalog, r)?;
            f.reader.consumers = consumers(cursors, f.id);
            Ok(f)
        })
        .collect()
}

/// The feed of `table`, if a view reads it (`catalog`: the database holding the metadata).
pub fn of_table(db: &dyn Sql, catalog: &str, table: &TableId) -> Result<Option<Feed>> {
    let [here, named] = home::spellings(catalog, &table.catalog);
    let found = FEED_FIND.rows(db, [&here, &named, &table.schema, &table.name])?;
    found.first().map(|r| Feed::from_row(catalog, r)).transpose()
}

/// The feed with this id, as stored now.
fn by_id(db: &dyn Sql, catalog: &str, id: i64) -> Result<Option<Feed>> {
    for r in FEEDS_OF_VIEW.rows(db, [])? {
        let f = Feed::from_row(catalog, &r)?;
        if f.id == id {
            return Ok(Some(f));
        }
    }
    Ok(None)
}

/// The feed of `table`, created (with its first state taken now, tracking `columns`) if no view
/// reads the table yet. The columns must be in table order. An existing feed may track other
/// columns: see `widen`.
pub fn find_or_start(
    db: &dyn Sql,
    catalog: &str,
    table: &TableId,
    columns: &[ColumnDef],
    kind: &SourceKind,
    size_now: i64,
) -> Result<Feed> {
    let key = super::batch::columns_key(columns);
    let [here, named] = home::spellings(catalog, &table.catalog);
    let found = FEED_FIND.rows(db, [&here, &named, &table.schema, &table.name])?;
    if let Some(r) = found.first() {
        let mut f = Feed::from_row(catalog, r)?;
        f.reader.consumers = cursors(db)?.iter().filter(|c| c.feed == f.id).count() as i64;
        return Ok(f);
    }
    let id = FEED_NEXT_ID.scalar_int(db, [])?;
    let mut feed = Feed {
        id,
        catalog: catalog.to_string(),
        table: table.clone(),
        columns: columns.to_vec(),
        kind: kind.clone(),
        watermark: None,
        row_count: 0,
        size_seen: size_now,
        seq: 0,
        log_rows: 0,
        pending_rows: 0,
        batch_rows: -1,
        batch_deletes: -1,
        batch_facts: None,
        reader: Reader::default(),
    };
    start_state(db, &mut feed)?;
    FEED_INSERT.run(
        db,
        [
            &id.to_string(),
            &home::stored(catalog, &table.catalog),
            &table.schema,
            &table.name,
            &key,
            feed.kind.as_str(),
            &feed.kind.key_column(),
            feed.watermark.as_deref().unwrap_or(""),
            &feed.row_count.to_string(),
            &feed.size_seen.to_string(),
        ],
    )?;
    db.execute(&sql::create_log(&feed.log(), &feed.table, &feed.columns))?;
    if feed.kind == SourceKind::Trigger {
        trigger::install(db, &feed)?;
    }
    Ok(feed)
}

/// Takes the source's first state: the table as it is in this transaction counts as seen. (The
/// trigger source keeps a diff's snapshot until its first capture: see `trigger`; its triggers
/// are installed once the log exists.)
fn start_state(db: &dyn Sql, feed: &mut Feed) -> Result<()> {
    match &feed.kind {
        SourceKind::Diff => diff::start(db, feed),
        SourceKind::Trigger => {
            feed.watermark = Some(trigger::INSTALLING.to_string());
            diff::start(db, feed)
        }
        SourceKind::Recorded => {
            feed.row_count = db.scalar_int(&sql::count_all(&feed.table), &[])?;
            Ok(())
        }
        SourceKind::AppendOnly(pos) => {
            let (watermark, count) = append_only::baseline(db, &feed.table, pos)?;
            feed.watermark = watermark;
            feed.row_count = count;
            Ok(())
        }
        SourceKind::DuckLake(_) => {
            feed.watermark = super::ducklake::baseline(db, &feed.table)?;
            Ok(())
        }
    }
}

/// Makes a feed track `columns` as well (`table_columns`: all columns of the table, in order),
/// once its last batch is recorded: the diff snapshot is rebuilt from the table as it is now,
/// and the change log gains the columns (NULL in logged batches, which only views that do not
/// read them still have to apply).
pub fn widen(db: &dyn Sql, feed: &mut Feed, columns: &[ColumnDef], table_columns: &[ColumnDef]) -> Result<()> {
    if !add_columns(db, feed, columns, table_columns)? {
        return Ok(());
    }
    if keeps_snapshot(feed) {
        db.execute(&render::drop_table(&feed.snapshot()))?;
        diff::start(db, feed)?;
    }
    if feed.kind == SourceKind::Trigger {
        trigger::install(db, feed)?;
    }
    FEED_SET_COLUMNS.run(db, [&super::batch::columns_key(&feed.columns), &feed.id.to_string()])
}

/// Makes a shared diff feed track `columns` as well without first diffing the table to record
/// its last batch (`capture::SkipDiff::Restart`): the feed starts again from the table as it is
/// now, with the wider columns, its log emptied, and every other view of it recomputes at its
/// next refresh (cursor -1), while view `schema.view`, filled from the same state in the same
/// transaction, joins at the feed's head.
pub fn widen_by_restarting(
    db: &dyn Sql,
    feed: &mut Feed,
    columns: &[ColumnDef],
    table_columns: &[ColumnDef],
    schema: &str,
    view: &str,
) -> Result<()> {
    add_columns(db, feed, columns, table_columns)?;
    let kind = feed.kind.clone();
    rebuild(db, feed, &kind, schema, view)?;
    FEED_SET_COLUMNS.run(db, [&super::batch::columns_key(&feed.columns), &feed.id.to_string()])?;
    add_cursor(db, feed, schema, view, feed.seq)
}

/// Adds the columns of `columns` the feed does not track to it and to its log (in table order,
/// `table_columns`); whether there were any. The source's state is the caller's to rebuild.
fn add_columns(db: &dyn Sql, feed: &mut Feed, columns: &[ColumnDef], table_columns: &[ColumnDef]) -> Result<bool> {
    let added: Vec<ColumnDef> = columns.iter().filter(|c| !feed.columns.contains(c)).cloned().collect();
    if added.is_empty() {
        return Ok(false);
    }
    feed.columns = table_columns.iter().filter(|c| feed.columns.contains(c) || added.contains(c)).cloned().collect();
    // The open batch is empty here (the feed's last batch was captured, or the feed restarts):
    // the widened log's new columns are NULL only in batches captured before.
    if feed.pending_rows != 0 {
        return Err(Error::Internal("a feed widened with writes recorded and not captured".into()));
    }
    // A trigger's body names the log: it goes while the log is replaced, and comes back with
    // the wider columns (`widen`, `rebuild`).
    if feed.kind == SourceKind::Trigger {
        trigger::uninstall(db, feed)?;
    }
    db.execute_all(&sql::widened_log(&feed.log(), &added))?;
    Ok(true)
}

/// Switches a feed to another source once its last batch is recorded: the table as it is now
/// becomes the new source's first state (a declaration made or revoked since the last capture).
pub fn switch_source(db: &dyn Sql, feed: &mut Feed, kind: &SourceKind) -> Result<()> {
    restart(db, feed, kind)?;
    feed.save(db)
}

/// Drops the feed's source state and takes `kind`'s first state from the table as it is now.
fn restart(db: &dyn Sql, feed: &mut Feed, kind: &SourceKind) -> Result<()> {
    if keeps_snapshot(feed) {
        db.execute(&render::drop_table(&feed.snapshot()))?;
    }
    if feed.kind == SourceKind::Trigger {
        trigger::uninstall(db, feed)?;
    }
    clear_pending(db, feed)?;
    feed.kind = kind.clone();
    feed.watermark = None;
    feed.row_count = 0;
    start_state(db, feed)?;
    if feed.kind == SourceKind::Trigger {
        trigger::install(db, feed)?;
    }
    Ok(())
}

/// Whether the feed keeps a counted snapshot of its table: a diff feed, and a trigger feed
/// before its first capture.
fn keeps_snapshot(feed: &Feed) -> bool {
    match feed.kind {
        SourceKind::Diff => true,
        SourceKind::Trigger => trigger::installing(feed),
        _ => false,
    }
}

/// Rebuilds a feed from the table as it is now, under `kind`, when its batches cannot be
/// captured (a broken append-only promise, repaired by a full refresh). Its log is emptied, and
/// every other view of the feed is marked to recompute at its next refresh (cursor -1).
pub fn rebuild(db: &dyn Sql, feed: &mut Feed, kind: &SourceKind, schema: &str, view: &str) -> Result<()> {
    restart(db, feed, kind)?;
    feed.seq += 1;
    db.execute(&render::delete_all(&feed.log()))?;
    feed.log_rows = 0;
    feed.save(db)?;
    feed.reader.others_min = feed.reader.others_min.map(|_| -1);
    CURSORS_STALE.run(db, [&feed.id.to_string(), schema, view])
}

/// The cursor moves and feed rows of a refresh's commits, written together at its end: one
/// statement for all of the view's cursors and one for all of its feeds (each statement costs
/// about a millisecond, and a 4-table view moved 4 cursors and saved 4 feeds; with logs shared
/// by other views, each feed also read the oldest cursor).
#[derive(Default)]
pub struct Bookkeeping {
    cursors: Vec<CursorMove>,
    feeds: Vec<i64>,
}

/// A view's cursor moving from `from` to `to` (with the feed's watermark then).
#[derive(Clone, Debug)]
pub struct CursorMove {
    pub feed: i64,
    pub from: i64,
    pub to: i64,
    pub watermark: Option<String>,
}

impl Bookkeeping {
    /// Saves this feed's row too (a feed on the refreshed view, whose pending batch it wrote).
    pub fn save(&mut self, feed: i64) {
        self.feeds.push(feed);
    }

    /// Writes the cursor moves and saves the feeds named, with their state in `feeds` (the
    /// state after everything the refresh did to them).
    pub fn flush<'a>(
        &self,
        db: &dyn Sql,
        schema: &str,
        view: &str,
        feeds: impl Iterator<Item = &'a Feed>,
    ) -> Result<()> {
        if !self.cursors.is_empty() {
            let moves: Vec<(i64, i64, Option<String>)> =
                self.cursors.iter().map(|m| (m.feed, m.to, m.watermark.clone())).collect();
            db.execute(&sql::cursors_advance(schema, view, &moves))?;
        }
        self.flush_feeds(db, feeds)
    }

    /// Saves the feeds named only, handing the cursor moves to the caller (a round of refreshes
    /// writes all of its views' moves in one statement at its end).
    pub fn flush_feeds<'a>(&self, db: &dyn Sql, feeds: impl Iterator<Item = &'a Feed>) -> Result<()> {
        let rows: Vec<(i64, FeedState)> = feeds.filter(|f| self.feeds.contains(&f.id)).map(Feed::state).collect();
        if !rows.is_empty() {
            db.execute(&sql::feeds_update(&rows))?;
        }
        Ok(())
    }

    /// The cursor moves, taken out (see `flush_feeds`).
    pub fn take_cursor_moves(&mut self) -> Vec<CursorMove> {
        std::mem::take(&mut self.cursors)
    }
}

/// Who records a batch in its feed.
pub enum Committer<'a> {
    /// A view attaching to the feed: not yet one of its consumers; its cursor is added here.
    Attaching { schema: &'a str, view: &'a str },
    /// A refreshing view, one of the feed's consumers: its cursor move and the feed's row are
    /// left to `book`; `handoff` says how the feed's other views get the batch.
    Refreshing { book: &'a mut Bookkeeping, handoff: Handoff },
}

/// How the other views of a feed get a batch one view captured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handoff {
    /// From the feed's log, where it is appended when they still need it.
    Log,
    /// From a round of refreshes, which hands it to its later views directly and logs it at
    /// its end for those that did not take it (`log_for_laggards`).
    Round,
}

/// Records a fresh batch in its feed and moves the committing view's cursor to it (see
/// `Committer`). The log is trimmed here, only when this view held the oldest cursor
/// (`Reader::others_min`).
pub fn commit(db: &dyn Sql, feed: &mut Feed, fresh: &Fresh, committer: Committer) -> Result<()> {
    let others = match &committer {
        Committer::Attaching { .. } => feed.reader.consumers,
        Committer::Refreshing { handoff: Handoff::Log, .. } => feed.reader.consumers - 1,
        Committer::Refreshing { handoff: Handoff::Round, .. } => 0,
    };
    // A log that held no batch before this one has nothing to trim below it.
    let nothing_older = feed.log_rows == 0;
    // The row count too: a restart after rows were inserted below a key watermark (a broken
    // promise) can keep the watermark and the appended-row count, and must still record it.
    let changed = feed.moved_by(fresh);
    let mut appended = false;
    if changed {
        let mut advanced = false;
        if let Some(d) = fresh.delta.as_ref().filter(|_| fresh.stats.rows > 0) {
            feed.seq += 1;
            advanced = true;
            // The rows from the open batch are this batch in the log already; the others are
            // appended when other views need the batch (the log then holds all of it).
            feed.log_rows += fresh.logged as i64;
            if others > 0 {
                append_rest(db, feed, d, fresh, feed.seq)?;
                feed.logged(&fresh.stats);
                // The log holds the whole batch: what this refresh's checks found holds for it.
                feed.batch_facts = fresh.facts.clone().map(|f| BatchFacts { seq: feed.seq, ..f });
            } else if fresh.unstamped {
                // Read where they lie by the only view that needs them.
                db.execute(&render::trigger::drop_unstamped(&feed.log()))?;
            } else if fresh.logged > 0 {
                // The log holds part of the batch: its counts are not the batch's.
                feed.batch_rows = -1;
                feed.batch_deletes = -1;
            }
            appended = others > 0 || fresh.logged > 0;
        }
        if matches!(feed.kind, SourceKind::Diff) {
            diff::advance(db, feed, fresh)?;
        } else if keeps_snapshot(feed) && fresh.watermark.is_none() {
            // The trigger source's first capture diffed the table: the log is trusted from now.
            db.execute(&render::drop_table(&feed.snapshot()))?;
        }
        if fresh.took_pending {
            if advanced {
                feed.pending_rows = 0;
            } else {
                clear_pending(db, feed)?;
            }
        }
        feed.watermark = fresh.watermark.clone();
        feed.row_count = fresh.row_count;
        feed.size_seen = fresh.size_seen;
    }
    match committer {
        Committer::Refreshing { book, .. } => {
            // The log holds the batches after the oldest cursor; this view's move trims it only
            // when this view held the oldest one (the last view of the feed to apply a batch).
            let held = feed.reader.others_min.map_or(feed.reader.cursor, |m| m.min(feed.reader.cursor));
            if feed.reader.cursor != feed.seq {
                book.cursors.push(CursorMove {
                    feed: feed.id,
                    from: feed.reader.cursor,
                    to: feed.seq,
                    watermark: feed.watermark.clone(),
                });
            }
            feed.reader.cursor = feed.seq;
            let oldest = feed.reader.others_min.map_or(feed.seq, |m| m.min(feed.seq));
            let trimmed = feed.log_rows > 0
                && !(nothing_older && oldest < feed.seq)
                && trims_now(feed.log_rows, oldest > held, appended)
                && trim_to(db, feed, oldest)?;
            if changed || trimmed {
                book.feeds.push(feed.id);
            }
        }
        Committer::Attaching { schema, view } => {
            add_cursor(db, feed, schema, view, feed.seq)?;
            feed.reader.cursor = feed.seq;
            // One write of the feed's row, after the log is trimmed.
            if trim(db, feed)? || changed {
                feed.save(db)?;
            }
        }
    }
    Ok(())
}

/// Batches every view has applied stay in the log up to this many rows in all, until the next
/// capture that appends to it deletes them (`trims_now`).
pub const LOG_KEEP_ROWS: i64 = 100_000;

/// Whether a refresh's commit deletes the log's batches every view has applied: when its move
/// applied the oldest of them (`advanced`, the view held the oldest cursor) and they are more
/// than `LOG_KEEP_ROWS` rows, or when it appends a batch to the log (it then writes the log and
/// the feed's row anyway). So the last view to apply a small batch writes neither the log nor
/// the feed (a statement per table and one for the feeds, about 3 ms for a 4-table view), and
/// the log holds at most the last small batch beyond what some view still needs.
fn trims_now(log_rows: i64, advanced: bool, appended: bool) -> bool {
    appended || (advanced && log_rows > LOG_KEEP_ROWS)
}

/// Gives view `schema.view` a cursor of -1 into `feed`: it recomputes at its first refresh,
/// which moves the cursor to the feed's newest batch (`capture::skip_diff`).
pub fn join_to_recompute(db: &dyn Sql, feed: &mut Feed, schema: &str, view: &str) -> Result<()> {
    add_cursor(db, feed, schema, view, -1)
}

/// Gives view `schema.view`, which has no cursor into `feed` yet, one at batch `seq`, with the
/// feed's watermark (none at -1: such a view recomputes and reads no batch).
fn add_cursor(db: &dyn Sql, feed: &mut Feed, schema: &str, view: &str, seq: i64) -> Result<()> {
    let watermark = if seq < 0 { "" } else { feed.watermark.as_deref().unwrap_or("") };
    CURSOR_SET.run(db, [schema, view, &feed.id.to_string(), &seq.to_string(), watermark])?;
    feed.reader.consumers += 1;
    feed.reader.cursor = seq;
    Ok(())
}

/// Appends the rows of a fresh batch `seq` that are not in the log yet (those from the open
/// batch are, and the caller counted them) to the log; a batch of unstamped rows, read where
/// they lie, is stamped.
fn append_rest(db: &dyn Sql, feed: &mut Feed, delta: &Qualified, fresh: &Fresh, seq: i64) -> Result<()> {
    if fresh.unstamped {
        db.execute(&render::trigger::stamp(&feed.log(), seq))?;
    } else if fresh.stats.rows > fresh.logged {
        db.execute(&sql::append_log(&feed.log(), delta, &feed.columns, seq, fresh.logged > 0))?;
    }
    feed.log_rows += fresh.stats.rows as i64 - fresh.logged as i64;
    Ok(())
}

/// Forgets the open batch (of a feed that restarts from its table as it is, or taken in by a
/// capture that found nothing in it).
fn clear_pending(db: &dyn Sql, feed: &mut Feed) -> Result<()> {
    if feed.pending_rows > 0 {
        db.execute(&sql::drop_open_batch(&feed.log(), feed.seq))?;
        feed.pending_rows = 0;
    }
    Ok(())
}

/// Appends batch `seq` of feed `id` (committed without logging by a round of refreshes) to the
/// log if some view of the feed has not applied it.
pub fn log_for_laggards(db: &dyn Sql, catalog: &str, id: i64, fresh: &Fresh, seq: i64) -> Result<()> {
    let Some(delta) = &fresh.delta else {
        return Ok(());
    };
    let oldest = oldest_cursor(db, id)?;
    if oldest < 0 || oldest >= seq {
        return Ok(());
    }
    let Some(mut feed) = by_id(db, catalog, id)? else {
        return Ok(());
    };
    append_rest(db, &mut feed, delta, fresh, seq)?;
    if seq == feed.seq {
        feed.logged(&fresh.stats);
    }
    feed.save(db)
}

/// Deletes the logged batches of feed `id` that every view has seen, and saves the feed (a round
/// of refreshes, whose views moved their cursors together at its end).
pub fn trim_by_id(db: &dyn Sql, catalog: &str, id: i64) -> Result<()> {
    if let Some(mut feed) = by_id(db, catalog, id)? {
        if trim(db, &mut feed)? {
            feed.save(db)?;
        }
    }
    Ok(())
}

/// Deletes the logged batches every view has seen; whether the log's row count changed (the
/// caller saves the feed).
fn trim(db: &dyn Sql, feed: &mut Feed) -> Result<bool> {
    if feed.log_rows == 0 {
        return Ok(false);
    }
    let min = oldest_cursor(db, feed.id)?;
    if min < 0 {
        return Ok(false);
    }
    trim_to(db, feed, min)
}

/// The oldest cursor of feed `id` at or past 0 (-1: none; a view at -1 needs no logged batch).
fn oldest_cursor(db: &dyn Sql, id: i64) -> Result<i64> {
    FEED_MIN_CURSOR.scalar_int(db, [&id.to_string()])
}

/// Before a capture whose batch may be the open batch alone (`capture::in_place_hint`): deletes
/// the logged batches every view of the feed has applied, and saves the feed, so that the log
/// may hold nothing but the open batch and the capture take it where it lies. The
/// capture's commit would delete them anyway (it trims when it logs a batch); saving the feed
/// here keeps its row count of the log right if the refresh fails after this transaction.
pub fn trim_applied(db: &dyn Sql, feed: &mut Feed) -> Result<()> {
    // Up to the oldest cursor as the metadata has it, not as this view's read of it says.
    if trim(db, feed)? {
        feed.save(db)?;
    }
    Ok(())
}

/// Deletes the logged batches up to `seq`; whether any was deleted.
fn trim_to(db: &dyn Sql, feed: &mut Feed, seq: i64) -> Result<bool> {
    // DELETE's result is the number of rows it deleted.
    let deleted = db.scalar_int(&sql::trim_log(&feed.log(), seq), &[])?;
    feed.log_rows -= deleted;
    Ok(deleted != 0)
}

/// Moves the open batches earlier versions kept in tables of their own (`openivm.pending_<id>`)
/// into their feeds' logs, as the batch after the newest, and drops those tables (`catalog`: the
/// database holding the metadata). Whether there was any.
pub fn upgrade_legacy_pending(db: &dyn Sql, catalog: &str) -> Result<bool> {
    let tables: Vec<(String,)> = read_all(&LEGACY_PENDING.rows(db, [catalog])?)?;
    let any = !tables.is_empty();
    for (name,) in tables {
        let id = name.strip_prefix("pending_").and_then(|n| n.parse::<i64>().ok());
        if let Some(mut feed) = id.map(|id| by_id(db, catalog, id)).transpose()?.flatten() {
            if feed.pending_rows > 0 {
                let moved = sql::move_legacy_pending(&feed.legacy_pending(), &feed.open_batch(), &feed.columns);
                feed.pending_rows = db.scalar_int(&moved, &[])?;
                feed.save(db)?;
            }
        }
        db.execute(&render::drop_table(&Qualified { catalog: catalog.to_string(), schema: SCHEMA.into(), name }))?;
    }
    Ok(any)
}

/// Detaches a view from its feeds, and drops every feed no view reads any more.
pub fn detach_view(db: &dyn Sql, catalog: &str, schema: &str, view: &str) -> Result<()> {
    let feeds = of_view(db, catalog, schema, view)?;
    CURSORS_DELETE.run(db, [schema, view])?;
    for mut f in feeds {
        f.reader.consumers -= 1;
        if f.reader.consumers <= 0 {
            if f.kind == SourceKind::Trigger {
                trigger::uninstall(db, &f)?;
            }
            db.execute(&render::drop_table(&f.snapshot()))?;
            db.execute(&render::drop_table(&f.log()))?;
            db.execute(&render::drop_table(&f.legacy_pending()))?;
            FEED_DELETE.run(db, [&f.id.to_string()])?;
        } else if trim(db, &mut f)? {
            f.save(db)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::batch::DeltaStats;

    fn feed(seq: i64, cursor: i64, log_rows: i64, batch: (i64, i64)) -> Feed {
        Feed {
            id: 3,
            catalog: "db".into(),
            table: TableId { catalog: "db".into(), schema: "main".into(), name: "t".into() },
            columns: vec![],
            kind: SourceKind::Diff,
            watermark: None,
            row_count: 0,
            size_seen: 0,
            seq,
            log_rows,
            pending_rows: 0,
            batch_rows: batch.0,
            batch_deletes: batch.1,
            batch_facts: None,
            reader: Reader { cursor, consumers: 2, ..Reader::default() },
        }
    }

    #[test]
    fn facts_serve_only_the_batch_they_are_about() {
        let mut f = feed(5, 4, 10, (10, 2));
        let mut facts = BatchFacts::new(5);
        facts.note_unique(&["k".to_string()], true);
        f.batch_facts = Some(facts.clone());
        assert_eq!(f.facts(), Some(&facts));
        // A later batch (a capture, a rebuild) has none of them.
        f.seq = 6;
        assert_eq!(f.facts(), None);
        // Logging a batch forgets them, and writes none to the feed's row.
        f.seq = 5;
        f.logged(&DeltaStats { rows: 3, deletes: 0 });
        assert_eq!(f.facts(), None);
        assert_eq!(f.state().1.batch_facts, None);
    }

    #[test]
    fn a_view_one_batch_behind_a_log_of_just_that_batch_knows_its_delta() {
        // Batch 5 of 40 rows, none deleted, is all the log holds; the view is at 4.
        let f = feed(5, 4, 40, (40, 0));
        let (after, whole) = f.known_log_counts().unwrap();
        assert_eq!((after.rows, after.deletes, whole), (40, 0, 40));
        let (delta, stats) = f.delta_in_log(after, whole, true).unwrap();
        assert_eq!(delta.unwrap().name, "log_3");
        assert_eq!((stats.rows, stats.deletes), (40, 0));
        // The same batch with deletes: known counts, and the log is the delta too, unless the
        // view nets this table's deletes (a parent it may prune).
        let f = feed(5, 4, 40, (40, 3));
        let (after, whole) = f.known_log_counts().unwrap();
        let (delta, stats) = f.delta_in_log(after.clone(), whole, false).unwrap();
        assert_eq!((delta.unwrap().name, stats.rows, stats.deletes), ("log_3".to_string(), 40, 3));
        assert!(f.delta_in_log(after, whole, true).is_none());
        // The log holds an earlier batch too, the view is two behind, the batch is not known,
        // the view recomputes (-1): the log is counted.
        assert!(feed(5, 4, 55, (40, 0)).known_log_counts().is_none());
        assert!(feed(5, 3, 40, (40, 0)).known_log_counts().is_none());
        assert!(feed(5, 4, 40, (-1, -1)).known_log_counts().is_none());
        assert!(feed(5, -1, 40, (40, 0)).known_log_counts().is_none());
    }

    #[test]
    fn a_log_is_the_delta_when_all_of_it_is_after_the_cursor_and_its_deletes_need_no_netting() {
        let f = feed(5, 3, 70, (40, 0));
        let stats = |rows, deletes| DeltaStats { rows, deletes };
        assert_eq!(f.delta_in_log(stats(0, 0), 70, true).map(|d| d.0.is_none()), Some(true));
        assert_eq!(f.delta_in_log(stats(70, 0), 70, true).and_then(|d| d.0).map(|q| q.name), Some("log_3".to_string()));
        assert!(f.delta_in_log(stats(40, 0), 70, false).is_none());
        assert_eq!(f.delta_in_log(stats(70, 2), 70, false).map(|d| d.1.deletes), Some(2));
        assert!(f.delta_in_log(stats(70, 2), 70, true).is_none());
    }

    #[test]
    fn the_last_reader_of_a_small_batch_leaves_it_to_the_next_append() {
        // The view held the oldest cursor and applied a 2,000-row batch: the log keeps it.
        assert!(!trims_now(2_000, true, false));
        // A batch above LOG_KEEP_ROWS goes at once.
        assert!(trims_now(LOG_KEEP_ROWS + 1, true, false));
        assert!(!trims_now(LOG_KEEP_ROWS, true, false));
        // Another view still needs the oldest batch: nothing to delete, whatever its size.
        assert!(!trims_now(LOG_KEEP_ROWS * 10, false, false));
        // A capture appending to the log deletes what every view has applied.
        assert!(trims_now(10, false, true));
    }
}
