//! The metadata writes of a refresh: feed rows, cursor moves, history rows and views marked
//! refreshed, each for many feeds or views in one statement.

use crate::render::{list, literal};
use crate::store::feed_state::FeedState;

fn opt_literal(v: Option<&str>) -> String {
    v.filter(|v| !v.is_empty()).map_or_else(|| "NULL".to_string(), literal)
}

/// Feed rows written in one statement: every feed a refresh changed, or one (`Feed::save`).
/// A statement costs about a millisecond; literals here cost less than parameters unnested
/// from JSON.
pub fn feeds_update(rows: &[(i64, FeedState)]) -> String {
    let set = |column: &str, value: &dyn Fn(&FeedState) -> String| {
        format!("{column} = {}", by_feed(rows.iter().map(|(id, r)| (*id, value(r)))))
    };
    let assignments = [
        set("source", &|r| literal(&r.source)),
        set("key_column", &|r| opt_literal(r.key_column.as_deref())),
        set("watermark", &|r| opt_literal(r.watermark.as_deref())),
        set("row_count", &|r| r.row_count.to_string()),
        set("size_seen", &|r| r.size_seen.to_string()),
        set("seq", &|r| r.seq.to_string()),
        set("log_rows", &|r| r.log_rows.to_string()),
        set("pending_rows", &|r| r.pending_rows.to_string()),
        set("batch_rows", &|r| r.batch_rows.to_string()),
        set("batch_deletes", &|r| r.batch_deletes.to_string()),
        set("batch_facts", &|r| opt_literal(r.batch_facts.as_deref())),
    ];
    format!(
        "UPDATE openivm.feeds SET {} WHERE feed_id IN ({})",
        assignments.join(", "),
        list(rows, ", ", |(id, _)| id.to_string())
    )
}

/// `CASE feed_id WHEN <id> THEN <value> ... END`: the value of a column per feed in an UPDATE of
/// several feeds' rows. DuckDB plans and runs it in about two thirds of the time of a join with a
/// `VALUES` list, and such updates are in every refresh.
fn by_feed(values: impl IntoIterator<Item = (i64, String)>) -> String {
    format!("CASE feed_id {} END", list(values, " ", |(id, v)| format!("WHEN {id} THEN {v}")))
}

/// History rows of several refreshes in one INSERT: each as the 15 parameters of
/// `sql/capture/history_insert.sql` (view, schema, microseconds before the writing transaction,
/// mode, reason, term counts, delta rows, capture / apply / total / setup ms, sources), typed as
/// there.
pub fn history_rows(rows: &[[String; 15]]) -> String {
    let values = list(rows, ", ", |r| format!("({})", list(r.iter(), ", ", |v| literal(v))));
    format!(
        "INSERT INTO openivm_refresh_history (view_name, view_schema, started_at, mode, reason, terms_total, \
         terms_fk_pruned, terms_empty_skipped, terms_run, delta_rows, capture_ms, apply_ms, total_ms, setup_ms, sources) \
         SELECT v0, v1, CAST(now() AS TIMESTAMP) - to_microseconds(CAST(v2 AS BIGINT)), \
         v3, v4, CAST(v5 AS INTEGER), CAST(v6 AS INTEGER), CAST(v7 AS INTEGER), CAST(v8 AS INTEGER), CAST(v9 AS BIGINT), \
         CAST(v10 AS DOUBLE), CAST(v11 AS DOUBLE), CAST(v12 AS DOUBLE), CAST(v13 AS DOUBLE), v14 \
         FROM (VALUES {values}) v(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14)"
    )
}

/// Marks views (schema, name) refreshed once more, as `sql/views/mark_refreshed.sql` does one.
pub fn views_refreshed(views: &[(&str, &str)]) -> String {
    let values = list(views, ", ", |(s, n)| format!("({}, {})", literal(s), literal(n)));
    format!(
        "UPDATE openivm_views SET refreshed_at = now()::TIMESTAMP, refresh_count = refresh_count + 1 \
         FROM (VALUES {values}) v(s, n) WHERE openivm_views.view_schema = v.s AND openivm_views.view_name = v.n"
    )
}

/// Moves a view's cursors: (feed id, seq, the feed's watermark then).
pub fn cursors_advance(schema: &str, view: &str, moves: &[(i64, i64, Option<String>)]) -> String {
    let seqs = by_feed(moves.iter().map(|(id, seq, _)| (*id, seq.to_string())));
    let watermarks = by_feed(
        moves.iter().map(|(id, _, w)| (*id, w.as_deref().map_or("CAST(NULL AS VARCHAR)".to_string(), literal))),
    );
    format!(
        "UPDATE openivm.cursors SET seq = {seqs}, watermark = {watermarks} WHERE view_schema = {} AND view_name = {} \
         AND feed_id IN ({})",
        literal(schema),
        literal(view),
        list(moves, ", ", |(id, _, _)| id.to_string())
    )
}

/// A view's cursor move, as `cursors_advance_all` writes it.
pub struct CursorMoveRow<'a> {
    pub schema: &'a str,
    pub view: &'a str,
    pub feed: i64,
    /// The cursor's seq before the move: a cursor another statement moved since keeps its value.
    pub from: i64,
    pub to: i64,
    /// The feed's watermark then.
    pub watermark: Option<&'a str>,
}

/// Moves the cursors of several views at once. A cursor that another statement moved since
/// (a rebuilt feed marks the other views' cursors -1) keeps that value.
pub fn cursors_advance_all(moves: &[CursorMoveRow]) -> String {
    let values = list(moves, ", ", |m| {
        format!(
            "({}, {}, {}, {}, {}, {})",
            literal(m.schema),
            literal(m.view),
            m.feed,
            m.from,
            m.to,
            m.watermark.map_or("CAST(NULL AS VARCHAR)".to_string(), literal)
        )
    });
    format!(
        "UPDATE openivm.cursors SET seq = v.seq, watermark = v.watermark FROM (VALUES {values}) \
         v(view_schema, view_name, feed_id, moved_from, seq, watermark) \
         WHERE openivm.cursors.view_schema = v.view_schema AND openivm.cursors.view_name = v.view_name \
         AND openivm.cursors.feed_id = v.feed_id AND openivm.cursors.seq = v.moved_from"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_the_cursors_of_several_views_only_from_where_they_were() {
        let row = |view, feed, from, to, watermark| CursorMoveRow { schema: "main", view, feed, from, to, watermark };
        let sql = cursors_advance_all(&[row("a", 1, 4, 5, Some("10")), row("b'x", 2, -1, 3, None)]);
        assert_eq!(
            sql,
            "UPDATE openivm.cursors SET seq = v.seq, watermark = v.watermark FROM (VALUES ('main', 'a', 1, 4, 5, '10'), \
             ('main', 'b''x', 2, -1, 3, CAST(NULL AS VARCHAR))) v(view_schema, view_name, feed_id, moved_from, seq, \
             watermark) WHERE openivm.cursors.view_schema = v.view_schema AND openivm.cursors.view_name = \
             v.view_name AND openivm.cursors.feed_id = v.feed_id AND openivm.cursors.seq = v.moved_from"
        );
    }

    #[test]
    fn a_refresh_writes_its_feed_rows_and_cursor_moves_as_literals() {
        let row = FeedState {
            source: "append_only".into(),
            key_column: None,
            watermark: Some("it's 9".into()),
            row_count: 10,
            size_seen: 12,
            seq: 4,
            log_rows: 0,
            pending_rows: 0,
            batch_rows: 7,
            batch_deletes: 1,
            batch_facts: Some(r#"{"seq":4}"#.into()),
        };
        let sql = feeds_update(&[(3, row)]);
        assert_eq!(
            sql,
            "UPDATE openivm.feeds SET source = CASE feed_id WHEN 3 THEN 'append_only' END, key_column = CASE feed_id \
             WHEN 3 THEN NULL END, watermark = CASE feed_id WHEN 3 THEN 'it''s 9' END, row_count = CASE feed_id WHEN 3 \
             THEN 10 END, size_seen = CASE feed_id WHEN 3 THEN 12 END, seq = CASE feed_id WHEN 3 THEN 4 END, log_rows = \
             CASE feed_id WHEN 3 THEN 0 END, pending_rows = CASE feed_id WHEN 3 THEN 0 END, batch_rows = CASE feed_id \
             WHEN 3 THEN 7 END, batch_deletes = CASE feed_id WHEN 3 THEN 1 END, batch_facts = CASE feed_id WHEN 3 THEN \
             '{\"seq\":4}' END WHERE feed_id IN (3)"
        );
        let moves = cursors_advance("main", "o'v", &[(1, 5, None), (2, 7, Some("12".into()))]);
        assert_eq!(
            moves,
            "UPDATE openivm.cursors SET seq = CASE feed_id WHEN 1 THEN 5 WHEN 2 THEN 7 END, watermark = CASE feed_id \
             WHEN 1 THEN CAST(NULL AS VARCHAR) WHEN 2 THEN '12' END WHERE view_schema = 'main' AND view_name = 'o''v' \
             AND feed_id IN (1, 2)"
        );
    }
}
