//! Z-sets: a relation as rows with weights, the reads a join takes from its leaves, the join
//! itself, a term's rows and the combined join's rows by mask.

use std::collections::BTreeMap;

use crate::plan::terms::{self, Mask, Term};

pub(super) type Row = Vec<i64>;
/// A relation as a Z-set: each row with its weight, no row of weight 0.
pub(super) type ZSet = BTreeMap<Row, i64>;

/// SQL's NULL: equal to nothing, itself included.
pub(super) const NULL: i64 = i64::MIN;

pub(super) fn zset(rows: impl IntoIterator<Item = (Row, i64)>) -> ZSet {
    let mut z = ZSet::new();
    for (row, w) in rows {
        *z.entry(row).or_default() += w;
    }
    z.retain(|_, w| *w != 0);
    z
}

pub(super) fn plus(a: &ZSet, b: &ZSet) -> ZSet {
    zset(a.iter().chain(b).map(|(r, &w)| (r.clone(), w)))
}

fn negate(a: &ZSet) -> ZSet {
    a.iter().map(|(r, &w)| (r.clone(), -w)).collect()
}

pub(super) fn minus(a: &ZSet, b: &ZSet) -> ZSet {
    plus(a, &negate(b))
}

pub(super) fn sum<'a>(parts: impl IntoIterator<Item = &'a ZSet>) -> ZSet {
    parts.into_iter().fold(ZSet::new(), |acc, z| plus(&acc, z))
}

/// One row as a join reads it from a leaf: its values, its weight (copies of the row in a state,
/// or a delta row's multiplicity +1/-1) and whether it is a delta row.
#[derive(Clone, Debug)]
pub(super) struct Read {
    row: Row,
    w: i64,
    delta: bool,
}

/// A state's rows, each with its copies.
pub(super) fn state(z: &ZSet) -> Vec<Read> {
    z.iter().map(|(row, &w)| Read { row: row.clone(), w, delta: false }).collect()
}

/// A delta's physical rows, each with its multiplicity.
pub(super) fn delta_reads(d: &[(Row, i64)]) -> Vec<Read> {
    d.iter().map(|(row, m)| Read { row: row.clone(), w: *m, delta: true }).collect()
}

/// `(leaf, column)` = `(leaf, column)`.
pub(super) type Equality = ((usize, usize), (usize, usize));

/// Every combination of one read per leaf on which all equalities hold (NULL equals nothing):
/// `f` gets the joined row (the leaves' rows one after the other) and the reads.
fn join_each(inputs: &[Vec<Read>], eqs: &[Equality], f: &mut dyn FnMut(Row, &[&Read])) {
    fn go<'a>(inputs: &'a [Vec<Read>], eqs: &[Equality], picked: &mut Vec<&'a Read>, f: &mut dyn FnMut(Row, &[&Read])) {
        let i = picked.len();
        if i == inputs.len() {
            f(picked.iter().flat_map(|r| r.row.iter().copied()).collect(), picked);
            return;
        }
        for r in &inputs[i] {
            picked.push(r);
            let holds = eqs.iter().filter(|((a, _), (b, _))| *a.max(b) == i).all(|&((a, ca), (b, cb))| {
                let (x, y) = (picked[a].row[ca], picked[b].row[cb]);
                x != NULL && x == y
            });
            if holds {
                go(inputs, eqs, picked, f);
            }
            picked.pop();
        }
    }
    go(inputs, eqs, &mut Vec::new(), f);
}

/// The join of the inputs as a Z-set, each combination weighted by `weight`.
pub(super) fn join(inputs: &[Vec<Read>], eqs: &[Equality], weight: &dyn Fn(&[&Read]) -> i64) -> ZSet {
    let mut out = Vec::new();
    join_each(inputs, eqs, &mut |row, reads| out.push((row, weight(reads))));
    zset(out)
}

/// The copies of a combination of state rows: the product of their weights.
pub(super) fn copies(reads: &[&Read]) -> i64 {
    reads.iter().filter(|r| !r.delta).map(|r| r.w).product()
}

/// An inclusion-exclusion term (or an N-term term: its delta leaf's mask, sign 1) over `inputs`:
/// the leaves of the mask read as deltas, each joined row weighted by `terms::row_weight` of the
/// term's sign and its delta rows' multiplicities, times the copies of its state rows.
pub(super) fn term_rows(term: Term, inputs: &[Vec<Read>], eqs: &[Equality]) -> ZSet {
    for (i, input) in inputs.iter().enumerate() {
        let as_delta = term.mask & (1 << i) != 0;
        assert!(input.iter().all(|r| r.delta == as_delta), "leaf {i} of mask {:b} read wrongly", term.mask);
    }
    join(inputs, eqs, &|reads| {
        let ms: Vec<i32> = reads.iter().filter(|r| r.delta).map(|r| r.w as i32).collect();
        i64::from(terms::row_weight(term.sign, &ms)) * copies(reads)
    })
}

/// The combined join's weight rule, as `render::combined_terms` renders it in SQL (the rule lives
/// only in that SQL string; `combined_sql_states_the_rule` checks the rendered SQL states these
/// numbers): a leaf with a delta reads its current rows tagged 0 with factor `CURRENT_FACTOR`
/// and its delta rows tagged 1 with factor `DELTA_FACTOR` · multiplicity; a joined row belongs to
/// the mask of the leaves whose delta rows it joined and weighs `OUTER` · Π factor.
pub(super) const CURRENT_FACTOR: i64 = 1;
pub(super) const DELTA_FACTOR: i64 = -1;
pub(super) const OUTER: i64 = -1;

/// The combined join: one join over every leaf's current rows, plus its delta rows where `with_delta`
/// says so, the rows of mask 0 and of masks touching `fk_skip` left out; its rows by mask.
pub(super) fn combined_rows(
    current: &[Vec<Read>],
    deltas: &[Option<Vec<Read>>],
    fk_skip: Mask,
    eqs: &[Equality],
) -> BTreeMap<Mask, ZSet> {
    let inputs: Vec<Vec<Read>> =
        current.iter().zip(deltas).map(|(c, d)| c.iter().chain(d.iter().flatten()).cloned().collect()).collect();
    let mut by_mask: BTreeMap<Mask, Vec<(Row, i64)>> = BTreeMap::new();
    join_each(&inputs, eqs, &mut |row, reads| {
        let mask = reads.iter().enumerate().filter(|(_, r)| r.delta).fold(0, |m, (i, _)| m | (1 << i));
        if mask == 0 || mask & fk_skip != 0 {
            return;
        }
        let factor: i64 = reads.iter().map(|r| if r.delta { DELTA_FACTOR * r.w } else { CURRENT_FACTOR }).product();
        by_mask.entry(mask).or_default().push((row, OUTER * factor * copies(reads)));
    });
    by_mask.into_iter().map(|(m, rows)| (m, zset(rows))).collect()
}
