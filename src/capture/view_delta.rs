//! A view's delta of one table: the feed's logged batches after the view's cursor and the fresh
//! batch, on the view's columns, taken where they lie when they can be.

use super::batch::{DeltaStats, Fresh};
use super::feed::{Feed, ViewDelta};
use crate::db::{read_all, Sql};
use crate::error::{Error, Result};
use crate::ir::ColumnDef;
use crate::render::capture as sql;
use crate::render::{self, Qualified};

/// A view's delta of one table: the logged batches after its cursor and the fresh batch, on the
/// view's columns. Rows are used as they are, a signed multiset (the terms are linear in each
/// delta: an insert and a delete of one row cancel in the result), except for a `parent`, a
/// table a foreign key of the view may prune, of whose columns the view reads fewer than the
/// feed tracks (`nets_deletes`): its delta with deletes is netted on the view's columns, so that
/// an update of a column the view does not read leaves no delta and keeps it prunable. (On all of
/// the feed's columns netting would only cancel an insert deleted again, which the key check of
/// a pruned parent sees as a key on two rows: its terms run, and the rows cancel.)
pub fn view_delta(
    db: &dyn Sql,
    feed: &Feed,
    fresh: &Fresh,
    columns: &[ColumnDef],
    parent: bool,
    name: &Qualified,
) -> Result<ViewDelta> {
    let nets = nets_deletes(feed, columns, parent);
    let at_head = feed.at_head();
    if at_head && (!nets || fresh.stats.rows == 0 || fresh.stats.deletes == 0) {
        return Ok((fresh.delta.clone(), fresh.stats.clone()));
    }
    if let Some(found) = logged_deltas(db, &[(feed, fresh, nets.then_some(columns))], false)?.0.pop().flatten() {
        return Ok(found);
    }
    let mut parts = Vec::new();
    if !at_head {
        parts.push(sql::log_after(&feed.log(), columns, feed.reader.cursor, feed.seq));
    }
    if let Some(d) = &fresh.delta {
        parts.push(sql::delta_of(d, columns));
    }
    // The union of the parts on the view's columns is the delta already when no part deleted
    // anything (insert-only batches need no netting: equal rows just add up), the common case
    // of append-only tables, when the view need not net, or when netting would change nothing.
    let (raw, _) = DeltaStats::from_row(db.query(&sql::parts_stats(&parts))?.first())?;
    if raw.rows == 0 {
        return Ok((None, raw));
    }
    if raw.deletes == 0 || !nets || !nettable(db, &[(0, sql::union_of(&parts), columns)])?.contains(&0) {
        if at_head {
            return Ok((fresh.delta.clone(), fresh.stats.clone()));
        }
        db.execute(&render::create_temp_table_as(name, &sql::union_of(&parts)))?;
        return Ok((Some(name.clone()), raw));
    }
    let stats = super::batch::netted_delta(db, name, &parts, columns)?;
    Ok(((stats.rows > 0).then(|| name.clone()), stats))
}

/// Which of the deltas (`(i, a SELECT of its rows, the view's columns)`) netting could change
/// (`sql::nettable_groups`), by `i`, from one statement.
fn nettable(db: &dyn Sql, deltas: &[(usize, String, &[ColumnDef])]) -> Result<Vec<usize>> {
    let mut out = Vec::new();
    for (i, changed) in read_all::<(u64, u64)>(&db.query(&sql::nettable_groups(deltas))?)? {
        if changed > 0 {
            out.push(i as usize);
        }
    }
    Ok(out)
}

/// Whether a view nets the deletes of its delta of `feed`'s table (see `view_delta`).
pub fn nets_deletes(feed: &Feed, columns: &[ColumnDef], parent: bool) -> bool {
    parent && feed.columns != columns
}

/// The deltas that need no table of their own, for several tables of one view at once: where
/// nothing fresh was captured and the view lags, the logged batches after its cursor, read by one
/// statistics query over all the logs. None where `view_delta` must build the delta; Some((None,
/// ..)) where the view has nothing to apply; the log itself where it holds exactly the view's
/// batches, without deletes, for a table whose deletes the view need not net, or with rows that
/// netting on the view's columns would not change (each part's third field: the view's columns
/// where it nets the table's deletes, see `view_delta`) (no copy: the log is read, never dropped,
/// as a delta outside the temp catalog is only borrowed, see `owned`).
///
/// With `speculate`, a log that is the whole delta but for netting is taken as it is, without
/// asking whether netting would change it, and its position is returned among the second
/// vector's: the caller nets it only where that matters, when the key check of the parent fails
/// (a key check that passes proves netting changes nothing: no key is on two rows, and the
/// view's columns include the key). That saves a statement in the common case (RF2's deletes).
pub fn logged_deltas(
    db: &dyn Sql,
    parts: &[(&Feed, &Fresh, Option<&[ColumnDef]>)],
    speculate: bool,
) -> Result<(Vec<Option<ViewDelta>>, Vec<usize>)> {
    let lags = |f: &Feed, fr: &Fresh| fr.delta.is_none() && !f.at_head();
    let mut out: Vec<Option<ViewDelta>> = vec![None; parts.len()];
    // Logs that are whole deltas but for netting: (i, their rows as a delta).
    let mut to_net: Vec<(usize, DeltaStats)> = Vec::new();
    let mut found = |i: usize, f: &Feed, after: DeltaStats, whole: u64, nets: Option<&[ColumnDef]>| {
        out[i] = f.delta_in_log(after.clone(), whole, nets.is_some());
        if out[i].is_none() && after.rows == whole && nets.is_some() {
            to_net.push((i, after));
        }
    };
    // A view one batch behind a log holding just that batch knows the counts without reading.
    let mut logs: Vec<(usize, Qualified, i64, i64)> = Vec::new();
    for (i, (f, _, nets)) in parts.iter().enumerate().filter(|(_, (f, fr, _))| lags(f, fr)) {
        match f.known_log_counts() {
            Some((after, whole)) => found(i, f, after, whole, *nets),
            None => logs.push((i, f.log(), f.reader.cursor, f.seq)),
        }
    }
    if !logs.is_empty() {
        for (i, rows, deletes, whole) in read_all::<(u64, u64, u64, u64)>(&db.query(&sql::logs_stats(&logs))?)? {
            let after = DeltaStats { rows, deletes };
            let Some((f, _, nets)) = parts.get(i as usize) else {
                return Err(Error::Internal("a log statistics row names no table".into()));
            };
            found(i as usize, f, after, whole, *nets);
        }
    }
    if speculate {
        let unnetted = to_net.iter().map(|(i, _)| *i).collect();
        for (i, after) in to_net {
            out[i] = Some((Some(parts[i].0.log()), after));
        }
        return Ok((out, unnetted));
    }
    // Netting on the view's columns changes nothing in a log none of whose rows repeats another
    // or is more than one copy: the log is the delta then too (one statement for all of them).
    if !to_net.is_empty() {
        let deltas: Vec<(usize, String, &[ColumnDef])> = to_net
            .iter()
            .filter_map(|(i, _)| {
                let (f, _, cols) = parts.get(*i)?;
                let cols = (*cols)?;
                Some((*i, sql::log_after(&f.log(), cols, f.reader.cursor, f.seq), cols))
            })
            .collect();
        let changed = nettable(db, &deltas)?;
        for (i, after) in to_net {
            if !changed.contains(&i) {
                out[i] = Some((Some(parts[i].0.log()), after));
            }
        }
    }
    Ok((out, vec![]))
}

/// Whether a view's delta is its own temp table, to drop after the refresh (a delta that is the
/// feed's log, see `view_delta`, is only borrowed).
pub fn owned(delta: &Qualified) -> bool {
    delta.catalog == "temp"
}
