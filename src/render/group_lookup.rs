//! The SQL of a refresh that leaves attribute-only leaves out of its terms and looks their
//! attributes up for new groups only (see `merge_keys::GroupLookup` for the rule and why it is
//! exact).

use super::{aggregate_rows_by, aliases, expr_in, from_leaves, key_columns, list, payload, term_select_over};
use super::{Dialect, Qualified, Source, Weights};
use crate::ast::Expr;
use crate::ir::{stored, Shape, ViewQuery};
use crate::plan::merge_keys::{leaves_read, GroupLookup};
use crate::plan::terms::Term;

/// One inclusion-exclusion term without the left-out leaves: their sources are not read, the
/// predicates that read them are not applied (the links and the predicates among them), and the
/// matched keys are read from their substitutes; the other group keys are not projected.
pub fn reduced_term(q: &ViewQuery, term: Term, sources: &[Source], g: &GroupLookup) -> String {
    debug_assert!(term.mask & g.dropped == 0, "a left-out leaf has no delta in the refreshes that leave it out");
    let keys = key_columns(q).len();
    let payload: Vec<(Expr, String)> = payload(q)
        .into_iter()
        .enumerate()
        .filter_map(|(i, (e, name))| match g.links.iter().find(|l| l.position == i) {
            Some(link) => Some((link.substitute.clone(), name)),
            None => (i >= keys).then_some((e, name)),
        })
        .collect();
    term_select_over(Dialect::DuckDb, q, term, sources, g.dropped, &payload)
}

/// The view delta of reduced terms' rows (`rows_sql`) with every group key, ready for the
/// merge: aggregated by the matched keys, each group marked by whether `data` stores it; the
/// other keys of a group it does not store are looked up in the left-out leaves (`sources`, per
/// leaf; those of kept leaves are not read), and such a group whose key meets no row there is
/// dropped. The groups `data` stores keep NULL attributes, which the merge does not write.
pub fn looked_up_delta(q: &ViewQuery, data: &Qualified, rows_sql: &str, sources: &[Source], g: &GroupLookup) -> String {
    let d = Dialect::DuckDb;
    let aliases = aliases(q);
    let Shape::Grouped { keys, .. } = &q.shape else { return String::new() };
    let matched: Vec<String> = g.links.iter().map(|l| stored::group(l.position)).collect();
    let delta = aggregate_rows_by(d, q, rows_sql, Weights::Signed, &matched);
    let same_keys = |a: &str, b: &str| {
        list(&matched, " AND ", |k| d.not_distinct(&format!("{a}.{}", d.ident(k)), &format!("{b}.{}", d.ident(k))))
    };
    let stored_flag = format!(
        "EXISTS (SELECT 1 FROM {} AS openivm_s WHERE {}) AS openivm_stored",
        data.sql(),
        same_keys("openivm_s", "openivm_dk0")
    );
    // The lookup: the left-out leaves with the predicates among them, for the new keys.
    let from = from_leaves(d, sources, &aliases, |i| g.dropped & (1 << i) != 0);
    let mut predicates: Vec<String> =
        q.predicates.iter().filter(|p| leaves_read(p) & !g.dropped == 0).map(|p| expr_in(d, p, &aliases)).collect();
    predicates.extend(g.links.iter().map(|l| {
        format!("{} = openivm_new.{}", expr_in(d, &l.looked_up, &aliases), d.ident(&stored::group(l.position)))
    }));
    let looked: Vec<String> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let e = g.links.iter().find(|l| l.position == i).map_or(k, |l| &l.looked_up);
            format!("{} AS {}", expr_in(d, e, &aliases), d.ident(&stored::group(i)))
        })
        .collect();
    let new_keys = format!(
        "(SELECT {} FROM openivm_dk WHERE NOT openivm_stored AND {} > 0) AS openivm_new",
        list(&matched, ", ", |k| d.ident(k)),
        d.ident(stored::COUNT)
    );
    let (stored_keys, state) = super::stored_columns(q);
    let mut out: Vec<String> = stored_keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let side = if g.links.iter().any(|l| l.position == i) { "openivm_dk" } else { "openivm_found" };
            format!("{side}.{}", d.ident(k))
        })
        .collect();
    out.push(format!("openivm_dk.{}", d.ident(stored::COUNT)));
    out.extend(state.iter().map(|s| format!("openivm_dk.{}", d.ident(&s.column))));
    let first = d.ident(&matched[0]);
    debug_assert_eq!(stored_keys, key_columns(q));
    format!(
        "WITH openivm_dk AS (SELECT openivm_dk0.*, {stored_flag} FROM ({delta}) AS openivm_dk0), \
         openivm_found AS (SELECT {looked} FROM {from}, {new_keys} WHERE {preds}) \
         SELECT {out} FROM openivm_dk LEFT JOIN openivm_found ON {on} \
         WHERE openivm_dk.openivm_stored OR openivm_found.{first} IS NOT NULL",
        looked = looked.join(", "),
        preds = predicates.join(" AND "),
        out = out.join(", "),
        on = same_keys("openivm_dk", "openivm_found"),
    )
}
