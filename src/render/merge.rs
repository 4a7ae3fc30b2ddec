//! The stored result's columns, and the MERGE of a counted delta into it (or the delete and
//! refill of the groups a delta touches).

use super::dialect::{Dialect, Storage};
use super::quote::{ident, list, Qualified};
use super::term::key_columns;
use crate::ir::{stored, AggFunc, Shape, SumInput, ViewQuery};

/// How a merge combines a stored column with its delta.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MergeRule {
    /// `stored + delta` (NULL counts as 0).
    Add,
    /// `list_sum([stored, delta])`: a DECIMAL(38,s) sum, which DuckDB's SUM lets grow past 38
    /// digits (up to HUGEINT's range) where `+` fails with an overflow.
    Unbounded,
    /// `(stored - delta.<column>) + delta`: the named delta column is subtracted first.
    SubtractFirst(String),
    /// `LEAST(stored, delta)` / `GREATEST(stored, delta)` (NULL counts as no value): MIN/MAX
    /// under insert-only deltas.
    Least,
    Greatest,
}

/// A column a merge adds up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summed {
    pub column: String,
    pub rule: MergeRule,
}

impl Summed {
    pub fn added(column: String) -> Summed {
        Summed { column, rule: MergeRule::Add }
    }
}

/// The names of the stored result's columns: keys, and the aggregate state with how a delta is
/// merged into each.
pub fn stored_columns(q: &ViewQuery) -> (Vec<String>, Vec<Summed>) {
    let keys = key_columns(q);
    let mut state = Vec::new();
    if let Some(compared) = q.compared {
        state.extend((0..compared.sides()).map(|side| Summed::added(stored::side_count(side))));
    }
    if let Shape::Grouped { aggregates, .. } = &q.shape {
        for (j, a) in aggregates.iter().enumerate() {
            match a.func {
                // Never merged: a view with such an aggregate recomputes the groups a delta touches.
                AggFunc::CountStar | AggFunc::Recomputed => {}
                AggFunc::Count => state.push(Summed::added(stored::agg_nonnull(j))),
                AggFunc::Variance { .. } => {
                    state.push(Summed::added(stored::agg_sum(j)));
                    state.push(Summed::added(stored::agg_squares(j)));
                    state.push(Summed::added(stored::agg_nonnull(j)));
                }
                AggFunc::Min => state.push(Summed { column: stored::agg_extremum(j), rule: MergeRule::Least }),
                AggFunc::Max => state.push(Summed { column: stored::agg_extremum(j), rule: MergeRule::Greatest }),
                AggFunc::Sum | AggFunc::Avg => {
                    let sum = stored::agg_sum(j);
                    match SumInput::of(a.arg_type.as_deref()) {
                        SumInput::Hugeint => state
                            .push(Summed { column: sum, rule: MergeRule::SubtractFirst(stored::agg_subtracted(j)) }),
                        SumInput::Decimal => state.push(Summed { column: sum, rule: MergeRule::Unbounded }),
                        SumInput::Float => {
                            state.push(Summed::added(sum));
                            state.push(Summed::added(stored::agg_pos_inf(j)));
                            state.push(Summed::added(stored::agg_neg_inf(j)));
                            state.push(Summed::added(stored::agg_nan(j)));
                        }
                        SumInput::Integer | SumInput::Other => state.push(Summed::added(sum)),
                    }
                    state.push(Summed::added(stored::agg_nonnull(j)));
                }
            }
        }
    }
    (keys, state)
}

/// How a MERGE of a counted delta into a counted table is set up.
pub struct CountedMerge<'a> {
    pub target: &'a Qualified,
    pub source: &'a str,
    /// Key columns, matched with IS NOT DISTINCT FROM (NULL keys are keys too).
    pub keys: &'a [String],
    /// The keys the match needs when fewer than all (`merge_keys`: they determine the others).
    pub matched: Option<&'a [String]>,
    pub target_count: &'a str,
    pub source_count: &'a str,
    /// Further columns that are added up (see `MergeRule`).
    pub summed: &'a [Summed],
    /// Whether a row whose count reaches 0 disappears (false for the one row of a global aggregate).
    pub delete_at_zero: bool,
    /// A row of this grouping set (`openivm_gset`) stays at count 0: the empty set's one row,
    /// which exists over no input, as a global aggregate's does.
    pub kept_set: Option<i64>,
    /// Where the target lives: a DuckLake target takes the MERGE without its DELETE action and a
    /// DELETE of the rows at count 0 after it.
    pub storage: Storage,
}

/// MERGE of signed counts: rows present in both are added up (and deleted at count 0), new rows
/// with a positive count are inserted. One statement, or two for a DuckLake target.
pub fn counted_merge(m: &CountedMerge) -> Vec<String> {
    counted_merge_in(Dialect::DuckDb, m)
}

/// `counted_merge` in dialect `dl`.
pub fn counted_merge_in(dl: Dialect, m: &CountedMerge) -> Vec<String> {
    let (t, d) = ("openivm_t", "openivm_d");
    let matched = m.matched.unwrap_or(m.keys);
    let on = if matched.is_empty() {
        "TRUE".to_string()
    } else {
        list(matched, " AND ", |k| {
            let k = dl.ident(k);
            dl.not_distinct(&format!("{t}.{k}"), &format!("{d}.{k}"))
        })
    };
    let (tc, sc) = (dl.ident(m.target_count), dl.ident(m.source_count));
    let mut set = vec![format!("{tc} = {t}.{tc} + {d}.{sc}")];
    set.extend(m.summed.iter().map(|s| {
        let c = dl.ident(&s.column);
        match &s.rule {
            MergeRule::Add => format!("{c} = COALESCE({t}.{c}, 0) + COALESCE({d}.{c}, 0)"),
            MergeRule::Unbounded => format!("{c} = {}", dl.unbounded_add(&format!("{t}.{c}"), &format!("{d}.{c}"))),
            // LEAST/GREATEST skip NULLs in DuckDB and in Spark SQL alike.
            MergeRule::Least => format!("{c} = LEAST({t}.{c}, {d}.{c})"),
            MergeRule::Greatest => format!("{c} = GREATEST({t}.{c}, {d}.{c})"),
            MergeRule::SubtractFirst(sub) => {
                format!(
                    "{c} = (COALESCE({t}.{c}, 0) - COALESCE({d}.{sub}, 0)) + COALESCE({d}.{c}, 0)",
                    sub = dl.ident(sub)
                )
            }
        }
    }));
    let mut insert_cols: Vec<String> = m.keys.iter().map(|k| dl.ident(k)).collect();
    insert_cols.push(tc.clone());
    insert_cols.extend(m.summed.iter().map(|s| dl.ident(&s.column)));
    let mut insert_vals: Vec<String> = m.keys.iter().map(|k| format!("{d}.{}", dl.ident(k))).collect();
    insert_vals.push(format!("{d}.{sc}"));
    // A new row's sum is the delta's own. Under SubtractFirst a new row can have rows of
    // negative weight too (a term with two delta leaves subtracts what two one-leaf terms
    // counted twice), so it is the positive part minus the negative one. DuckDB evaluates the
    // INSERT values for matched rows too, where that difference may overflow: TRY makes it NULL
    // there (a new row's own sum is a real group's sum, which fits).
    insert_vals.extend(m.summed.iter().map(|s| {
        let c = format!("{d}.{}", dl.ident(&s.column));
        match &s.rule {
            MergeRule::SubtractFirst(sub) => {
                let sub = format!("{d}.{}", dl.ident(sub));
                format!(
                    "CASE WHEN {sub} IS NULL THEN {c} ELSE {} END",
                    dl.try_subtract(&format!("COALESCE({c}, 0)"), &sub)
                )
            }
            _ => c,
        }
    }));
    let kept = match m.kept_set {
        Some(id) => format!(" AND {t}.{} <> {id}", dl.ident(stored::GROUPING_SET)),
        None => String::new(),
    };
    let split = m.storage == Storage::DuckLake;
    let delete = if m.delete_at_zero && !split {
        format!("WHEN MATCHED AND {t}.{tc} + {d}.{sc} = 0{kept} THEN DELETE ")
    } else {
        String::new()
    };
    let target = m.target.sql_in(dl);
    let merge = format!(
        "MERGE INTO {target} AS {t} USING ({source}) AS {d} ON {on} {delete}WHEN MATCHED THEN UPDATE SET {set} \
         WHEN NOT MATCHED AND {d}.{sc} > 0 THEN INSERT ({ic}) VALUES ({iv})",
        source = m.source,
        set = set.join(", "),
        ic = insert_cols.join(", "),
        iv = insert_vals.join(", "),
    );
    if !(split && m.delete_at_zero) {
        return vec![merge];
    }
    // Rows are only ever at count 0 for the moment between the two statements (the kept set's
    // row and a global aggregate's excepted), so the DELETE needs no key of the delta.
    vec![merge, format!("DELETE FROM {target} AS {t} WHERE {t}.{tc} = 0{kept}")]
}

/// Applies a view delta (the aggregated union of the run terms) to the stored result.
/// `matched`: the positions of the group keys that determine the others in this refresh
/// (`merge_keys::MergeKeys`), to match on alone; None matches on every key.
pub fn apply_view_delta(
    storage: Storage,
    q: &ViewQuery,
    data: &Qualified,
    delta_sql: &str,
    matched: Option<&[usize]>,
) -> Vec<String> {
    apply_view_delta_in(Dialect::DuckDb, storage, q, data, delta_sql, matched)
}

/// `apply_view_delta` in dialect `d`.
pub fn apply_view_delta_in(
    d: Dialect,
    storage: Storage,
    q: &ViewQuery,
    data: &Qualified,
    delta_sql: &str,
    matched: Option<&[usize]>,
) -> Vec<String> {
    let (keys, state) = stored_columns(q);
    let matched = matched_keys(&keys, matched);
    let global = matches!(&q.shape, Shape::Grouped { keys, .. } if keys.is_empty());
    let empty_set = match &q.shape {
        Shape::Grouped { sets: Some(g), .. } => g.empty_set_id(),
        _ => None,
    };
    counted_merge_in(
        d,
        &CountedMerge {
            target: data,
            source: delta_sql,
            keys: &keys,
            matched: Some(&matched),
            target_count: stored::COUNT,
            source_count: stored::COUNT,
            summed: &state,
            delete_at_zero: !global,
            kept_set: empty_set,
            storage,
        },
    )
}

/// The stored key columns a merge matches on: those at the positions `matched` (the group keys
/// that determine the others, `merge_keys`), or every key (None, or no position among them).
pub fn matched_keys(keys: &[String], matched: Option<&[usize]>) -> Vec<String> {
    let chosen: Vec<String> = matched.unwrap_or_default().iter().filter_map(|&i| keys.get(i).cloned()).collect();
    if chosen.is_empty() {
        keys.to_vec()
    } else {
        chosen
    }
}

/// The distinct group keys of payload rows (`openivm_g<i>`): the groups the run terms of a
/// refresh touch.
pub fn touched_keys(q: &ViewQuery, rows_sql: &str) -> String {
    let keys = list(key_columns(q), ", ", |k| ident(&k));
    format!("SELECT DISTINCT {keys} FROM ({rows_sql}) AS openivm_rows")
}

/// `a.k = b.k AND ...` over the key columns, NULL-safe (a NULL key is a group too).
pub(crate) fn keys_match(q: &ViewQuery, a: &str, b: &str) -> String {
    let d = Dialect::DuckDb;
    let on =
        list(key_columns(q), " AND ", |k| d.not_distinct(&format!("{a}.{}", ident(&k)), &format!("{b}.{}", ident(&k))));
    if on.is_empty() {
        "TRUE".into()
    } else {
        on
    }
}

/// Deletes the stored groups whose keys are in the table `keys` (from `touched_keys`).
pub fn delete_groups(q: &ViewQuery, data: &Qualified, keys: &Qualified) -> String {
    format!(
        "DELETE FROM {} AS openivm_t WHERE EXISTS (SELECT 1 FROM {} AS openivm_k WHERE {})",
        data.sql(),
        keys.sql(),
        keys_match(q, "openivm_t", "openivm_k")
    )
}

/// The stored rows of the groups whose keys are in the table `keys` (NULL-safe), as a
/// parenthesized SELECT; every row of a view without keys (one global group).
pub fn stored_of_groups(q: &ViewQuery, data: &Qualified, keys: &Qualified) -> String {
    if key_columns(q).is_empty() {
        return format!("(SELECT * FROM {})", data.sql());
    }
    format!(
        "(SELECT * FROM {} AS openivm_t WHERE EXISTS (SELECT 1 FROM {} AS openivm_k WHERE {}))",
        data.sql(),
        keys.sql(),
        keys_match(q, "openivm_t", "openivm_k")
    )
}

/// Payload rows restricted to the groups whose keys are in the table `keys`: a semi-join on the
/// key tuple, NULL-safe.
pub fn rows_of_groups(q: &ViewQuery, rows_sql: &str, keys: &Qualified) -> String {
    format!(
        "SELECT openivm_r.* FROM ({rows_sql}) AS openivm_r SEMI JOIN {} AS openivm_k ON {}",
        keys.sql(),
        keys_match(q, "openivm_r", "openivm_k")
    )
}
