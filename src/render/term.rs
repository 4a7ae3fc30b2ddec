//! The SELECT of one delta term (or the combined join of all of them) over its sources: each
//! leaf read as a delta, a current state, an old state, or a state with deleted rows.

use super::dialect::Dialect;
use super::expr::{conjunction, expr, expr_in};
use super::quote::{ident, list, with_comma, Qualified};
use crate::ast::{AggCall, Constant, Expr, TypeName};
use crate::ir::{stored, Aggregate, Identity, Shape, TableId, ViewQuery};
use crate::plan::terms::{Mask, Term};

/// Where one leaf of a term reads from.
#[derive(Clone, Debug)]
pub enum Source {
    Current(TableId),
    /// A SELECT in parentheses: the current state restricted to what a capture saw, or (in a
    /// compile-only program) a table's state before the batch.
    Bounded(String),
    /// A relation the caller provides, by its unqualified name (quoted when rendered).
    Named(String),
    Delta(Qualified),
}

/// The payload a view's terms project, before the weight: (expression, column name).
pub(crate) fn payload(q: &ViewQuery) -> Vec<(Expr, String)> {
    match &q.shape {
        Shape::Grouped { keys, aggregates, .. } => keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.clone(), stored::group(i)))
            .chain(aggregates.iter().enumerate().flat_map(|(j, a)| match (&a.arg, &a.call) {
                // read from the value column of an earlier aggregate of the same argument
                (Some(_), _) if value_slot(aggregates, j) != j => vec![],
                (Some(arg), _) => vec![(arg.clone(), value_col(j))],
                (None, Some(call)) => recomputed_over_payload(j, call).0,
                (None, None) => vec![],
            }))
            .collect(),
        Shape::Bag { outputs, text_identity } => {
            let mut p: Vec<(Expr, String)> =
                outputs.iter().enumerate().map(|(i, o)| (o.clone(), stored::group(i))).collect();
            for (i, o) in outputs.iter().enumerate() {
                let exact = match text_identity[i] {
                    Identity::Equal => continue,
                    Identity::Text => {
                        let text = TypeName { id: "VARCHAR".into(), decimal: None };
                        Expr::Cast { expr: Box::new(o.clone()), ty: text, try_cast: false }
                    }
                    Identity::Bytes => {
                        Expr::Function { name: "encode".into(), args: vec![o.clone()], is_operator: false }
                    }
                };
                p.push((exact, stored::group_text(i)));
            }
            if let Some(side) = q.side {
                p.push((Expr::Constant(Constant::Integer(side.into())), stored::SIDE.to_string()));
            }
            p
        }
    }
}

/// An aggregate without a delta rule, split for the terms: the inputs that read columns, each
/// projected by the terms as `openivm_v<j>_<i>` (equal inputs once), and the call over those
/// payload columns. Inputs without a column (`string_agg`'s separator, `quantile`'s fraction)
/// stay in the call as written, since some aggregates need them constant.
pub(crate) fn recomputed_over_payload(j: usize, call: &AggCall) -> (Vec<(Expr, String)>, AggCall) {
    let mut projected: Vec<(Expr, String)> = Vec::new();
    let over = call.clone().map_inputs(&mut |e: Expr| -> Result<Expr, ()> {
        let mut reads = false;
        e.visit(&mut |x| reads |= matches!(x, Expr::Bound { .. }));
        if !reads {
            return Ok(e);
        }
        let name = match projected.iter().find(|(p, _)| p == &e) {
            Some((_, n)) => n.clone(),
            None => {
                let n = format!("{}_{}", value_col(j), projected.len());
                projected.push((e, n.clone()));
                n
            }
        };
        Ok(Expr::column(&name))
    });
    (projected, over.unwrap_or_else(|()| call.clone()))
}

/// The columns that identify a row of the stored result: group keys (and the text of bag
/// outputs that need it).
pub(crate) fn key_columns(q: &ViewQuery) -> Vec<String> {
    match &q.shape {
        Shape::Grouped { keys, sets, .. } => {
            (0..keys.len()).map(stored::group).chain(sets.as_ref().map(|_| stored::GROUPING_SET.to_string())).collect()
        }
        Shape::Bag { outputs, text_identity } => (0..outputs.len())
            .map(stored::group)
            .chain((0..outputs.len()).filter(|i| text_identity[*i] != Identity::Equal).map(stored::group_text))
            .collect(),
    }
}

pub(crate) fn value_col(j: usize) -> String {
    format!("openivm_v{j}")
}

/// The aggregate whose value column aggregate `j` reads: the first one with the same argument.
/// `SUM(x)` and `AVG(x)` then aggregate one column with textually equal expressions, which
/// DuckDB computes once (on the 20M star this halves the aggregation of a fill).
pub(crate) fn value_slot(aggregates: &[Aggregate], j: usize) -> usize {
    (0..j).find(|&i| aggregates[i].arg.is_some() && aggregates[i].arg == aggregates[j].arg).unwrap_or(j)
}

pub(crate) const WEIGHT: &str = "openivm_weight";

pub const MULTIPLICITY: &str = "openivm_multiplicity";

pub(crate) fn aliases(q: &ViewQuery) -> Vec<String> {
    q.leaves.iter().map(|l| l.alias.clone()).collect()
}

/// One inclusion-exclusion term: the view's join with the leaves of `term.mask` read from their
/// deltas, projecting the payload and the row weight sign · Π multiplicity.
pub fn term_select(q: &ViewQuery, term: Term, sources: &[Source]) -> String {
    term_select_in(Dialect::DuckDb, q, term, sources)
}

/// The names of the payload columns a view's terms project, in order (each branch of a union
/// must project the same).
pub fn payload_names(q: &ViewQuery) -> Vec<String> {
    payload(q).into_iter().map(|(_, n)| n).collect()
}

/// `term_select` in dialect `d`. For a union (`ViewQuery::branches`) the term is its branch's,
/// over that branch's slice of `sources`; the mask 0 (the current join) is every branch's, one
/// after the other.
pub fn term_select_in(d: Dialect, q: &ViewQuery, term: Term, sources: &[Source]) -> String {
    if !q.branches.is_empty() {
        let spans = q.spans();
        let one = |b: usize| {
            let (first, n) = spans[b];
            let local = Term { mask: term.mask >> first, sign: term.sign };
            term_select_in(d, &q.branches[b], local, &sources[first..first + n])
        };
        return match crate::plan::terms::branch_of(&spans, term.mask) {
            Some(b) => one(b),
            None => (0..spans.len()).map(one).collect::<Vec<_>>().join(" UNION ALL "),
        };
    }
    term_select_over(d, q, term, sources, 0, &payload(q))
}

/// A term of a view without branches over its leaves not in `left_out` (a mask; 0 for all):
/// their sources, the predicates that read only them, `payload` and the row weight.
pub(crate) fn term_select_over(
    d: Dialect,
    q: &ViewQuery,
    term: Term,
    sources: &[Source],
    left_out: u32,
    payload: &[(Expr, String)],
) -> String {
    let aliases = aliases(q);
    let mut weight = vec![term.sign.to_string()];
    for (i, a) in aliases.iter().enumerate() {
        if term.mask & (1 << i) != 0 {
            weight.push(format!("{}.{}", d.ident(a), d.ident(MULTIPLICITY)));
        }
    }
    let from = from_leaves(d, sources, &aliases, |i| left_out & (1 << i) == 0);
    let mut cols: Vec<String> =
        payload.iter().map(|(e, n)| format!("{} AS {}", expr_in(d, e, &aliases), d.ident(n))).collect();
    cols.push(format!("({}) AS {}", weight.join(" * "), d.ident(WEIGHT)));
    let kept: Vec<Expr>;
    let predicates = if left_out == 0 {
        &q.predicates
    } else {
        kept =
            q.predicates.iter().filter(|p| crate::plan::merge_keys::leaves_read(p) & left_out == 0).cloned().collect();
        &kept
    };
    format!("SELECT {} FROM {} WHERE {}", cols.join(", "), from, conjunction(d, predicates, &aliases))
}

/// The FROM list of the leaves `keep` keeps: each leaf's source under its alias.
pub(crate) fn from_leaves(d: Dialect, sources: &[Source], aliases: &[String], keep: impl Fn(usize) -> bool) -> String {
    list(sources.iter().zip(aliases).enumerate().filter(|(i, _)| keep(*i)), ", ", |(_, (s, a))| {
        format!("{} AS {}", relation(d, s), d.ident(a))
    })
}

/// The relation a source stands for, as a FROM item without its alias.
pub fn relation_sql(s: &Source) -> String {
    relation(Dialect::DuckDb, s)
}

pub(crate) fn relation(d: Dialect, s: &Source) -> String {
    match s {
        Source::Current(t) => d.table(t),
        Source::Bounded(sql) => sql.clone(),
        Source::Named(name) => d.ident(name),
        Source::Delta(delta) => delta.sql_in(d),
    }
}

/// A leaf's current state with the rows its delta deleted added back (multiplicity -1 read
/// as one row): how the terms read a parent that foreign keys pruned although it deleted keys
/// (see `fk_pruning::FkPruning`). `columns` are the delta's, the columns the view reads.
pub fn with_deleted_rows(current: &Source, delta: &Qualified, columns: &[String]) -> Source {
    let cols = list(columns, ", ", |c| ident(c));
    Source::Bounded(format!(
        "(SELECT {cols} FROM {} UNION ALL SELECT {cols} FROM {} WHERE {} < 0)",
        relation_sql(current),
        delta.sql(),
        ident(MULTIPLICITY)
    ))
}

/// A parent's state in a term that joins it only on keys of its delta, as the delta's rows
/// alone, each read as one row (see `fk_pruning::reads_delta_rows`). `columns` are the delta's.
pub fn delta_rows_as_state(delta: &Qualified, columns: &[String]) -> Source {
    Source::Bounded(format!("(SELECT {} FROM {})", list(columns, ", ", |c| ident(c)), delta.sql()))
}

/// A leaf of a combined evaluation: its current state, its delta if some run term reads it,
/// and the columns the view reads from the table (the delta's columns).
#[derive(Clone, Debug)]
pub struct CombinedLeaf {
    pub current: Source,
    pub delta: Option<Qualified>,
    pub columns: Vec<String>,
}

/// All run terms in one join. Each leaf with a delta reads the union of its current rows
/// (tagged 0, factor 1) and its delta rows (tagged 1, factor -multiplicity). Every joined row
/// then belongs to exactly one term: the mask of the leaves whose delta rows it joined. Its
/// weight -Π factor equals sign(mask) · Π multiplicity, since each delta leaf contributes one
/// factor -1 and (-1)^(k-1) = -(-1)^k. Rows of mask 0 (the current join itself) and of masks
/// that touch an FK-skipped leaf are filtered out; empty deltas contribute no rows at all. The
/// result is the union of the same terms `term_select` renders one by one, at the cost of one
/// join over the current state instead of one join per term.
pub fn combined_terms(q: &ViewQuery, leaves: &[CombinedLeaf], fk_skip: Mask) -> String {
    if !q.branches.is_empty() {
        // Each branch with a delta its own combined join (a branch without one has no term).
        let parts: Vec<String> = q
            .spans()
            .iter()
            .zip(&q.branches)
            .filter(|((first, n), _)| leaves[*first..first + n].iter().any(|l| l.delta.is_some()))
            .map(|(&(first, n), b)| combined_terms(b, &leaves[first..first + n], fk_skip >> first))
            .collect();
        return parts.join(" UNION ALL ");
    }
    let aliases = aliases(q);
    let (tag, factor) = ("openivm_in_delta", "openivm_factor");
    let mut from = Vec::new();
    let mut mask_terms = Vec::new();
    let mut factors = Vec::new();
    for (i, (leaf, a)) in leaves.iter().zip(&aliases).enumerate() {
        match &leaf.delta {
            None => from.push(format!("{} AS {}", relation_sql(&leaf.current), ident(a))),
            Some(delta) => {
                let cols = with_comma(&leaf.columns.iter().map(|c| ident(c)).collect::<Vec<_>>());
                from.push(format!(
                    "(SELECT {cols}0 AS {tag}, 1 AS {factor} FROM {base} UNION ALL \
                     SELECT {cols}1, -{m} FROM {delta}) AS {alias}",
                    base = relation_sql(&leaf.current),
                    m = ident(MULTIPLICITY),
                    delta = delta.sql(),
                    alias = ident(a)
                ));
                mask_terms.push(format!("{}.{tag} * {}", ident(a), 1u32 << i));
                factors.push(format!("{}.{factor}", ident(a)));
            }
        }
    }
    let mask = format!("({})", mask_terms.join(" + "));
    let mut cols: Vec<String> =
        payload(q).iter().map(|(e, n)| format!("{} AS {}", expr(e, &aliases), ident(n))).collect();
    cols.push(format!("(-1 * {}) AS {}", factors.join(" * "), ident(WEIGHT)));
    format!(
        "SELECT {} FROM {} WHERE {} AND {mask} <> 0 AND ({mask} & {fk_skip}) = 0",
        cols.join(", "),
        from.join(", "),
        conjunction(Dialect::DuckDb, &q.predicates, &aliases)
    )
}

/// The rows of a term as the view's full query would read them: all leaves current, weight 1.
pub fn full_select(q: &ViewQuery) -> String {
    let sources: Vec<Source> = q.leaves.iter().map(|l| Source::Current(l.table.clone())).collect();
    let all = Term { mask: 0, sign: 1 };
    term_select(q, all, &sources)
}
