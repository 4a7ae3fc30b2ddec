//! Stage 3: what is known about the leaves of a view that lets the planner drop terms.
//!
//! A foreign key R(c1..ck) -> S(p1..pk) between two leaves of the join is *proven* when the
//! view's inner-join predicates equate every Ri.ci with S.pi. If S's delta since the last
//! refresh is insert-only, every term that reads S as a delta sums to zero: old rows of R can
//! only reference keys S had before, and the parts with ΔR cancel between the term with and
//! without R's bit. So S's bit goes into the FK skip mask. A delta that also deletes keys (and
//! inserts none of them again) is pruned the same way, with S read as its new rows plus its
//! deleted ones (`FkPruning`).

use serde::{Deserialize, Serialize};

use crate::ast::{CompareOp, Expr};
use crate::ir::{Leaf, TableId, ViewQuery};
use crate::plan::terms::{DeltaShape, Mask};

/// Where a foreign-key fact comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FactSource {
    /// A FOREIGN KEY constraint in DuckDB's catalog (enforced by DuckDB).
    Catalog,
    /// A trusted RELY foreign key declared with openivm_declare_rely_fk.
    Rely,
    /// A foreign key the caller of openivm_compile_with_facts vouches for.
    Facts,
}

impl FactSource {
    pub fn as_str(self) -> &'static str {
        match self {
            FactSource::Catalog => "catalog",
            FactSource::Rely => "rely",
            FactSource::Facts => "facts",
        }
    }
}

/// A foreign key between two tables, as the catalog or a declaration states it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForeignKey {
    pub child: TableId,
    pub child_columns: Vec<String>,
    pub parent: TableId,
    pub parent_columns: Vec<String>,
    pub source: FactSource,
}

/// A foreign key proven between two leaves of one view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProvenRelation {
    pub child_leaf: usize,
    pub parent_leaf: usize,
    pub fk: ForeignKey,
}

/// The width of an integer type and whether it is signed; None for other types.
fn integer_width(ty: &str) -> Option<(u32, bool)> {
    Some(match ty.trim().to_ascii_uppercase().as_str() {
        "TINYINT" => (8, true),
        "SMALLINT" => (16, true),
        "INTEGER" => (32, true),
        "BIGINT" => (64, true),
        "HUGEINT" => (128, true),
        "UTINYINT" => (8, false),
        "USMALLINT" => (16, false),
        "UINTEGER" => (32, false),
        "UBIGINT" => (64, false),
        "UHUGEINT" => (128, false),
        _ => return None,
    })
}

/// Whether a cast from `from` to `to` keeps every value distinct (an integer into a type that
/// holds all its values): an equality through it is the equality of the values themselves.
fn lossless_cast(from: &str, to: &str) -> bool {
    from.eq_ignore_ascii_case(to)
        || match (integer_width(from), integer_width(to)) {
            (Some((f, fs)), Some((t, ts))) => (fs == ts && t >= f) || (!fs && ts && t > f),
            _ => false,
        }
}

/// The column an expression is: a bound column, or one under a lossless cast (a UNION ALL
/// branch's column cast to the union's type).
pub fn bound_column<'a>(e: &'a Expr, leaves: &[Leaf]) -> Option<(usize, &'a str)> {
    match e {
        Expr::Bound { leaf, column } => Some((*leaf, column)),
        Expr::Cast { expr, ty, try_cast: false } => {
            let (leaf, column) = bound_column(expr, leaves)?;
            let from = &leaves.get(leaf)?.columns.iter().find(|c| c.name.eq_ignore_ascii_case(column))?.ty;
            lossless_cast(from, &ty.sql()).then_some((leaf, column))
        }
        _ => None,
    }
}

fn equates(p: &Expr, leaves: &[Leaf], a: (usize, &str), b: (usize, &str)) -> bool {
    let is = |e: &Expr, (leaf, col): (usize, &str)| {
        bound_column(e, leaves).is_some_and(|(l, c)| l == leaf && c.eq_ignore_ascii_case(col))
    };
    match p {
        Expr::Compare { op: CompareOp::Eq, left, right } => {
            (is(left, a) && is(right, b)) || (is(left, b) && is(right, a))
        }
        _ => false,
    }
}

/// The foreign keys that hold between leaves of `q`: the tables match, the two leaves differ,
/// the key is not self-referencing, and a top-level equality predicate joins each FK column to
/// its referenced column.
pub fn proven_relations(q: &ViewQuery, fks: &[ForeignKey]) -> Vec<ProvenRelation> {
    if !q.branches.is_empty() {
        // A union's branches are joins of their own: each proves relations among its leaves.
        return q
            .spans()
            .iter()
            .zip(&q.branches)
            .flat_map(|(&(first, _), b)| {
                proven_relations(b, fks).into_iter().map(move |r| ProvenRelation {
                    child_leaf: r.child_leaf + first,
                    parent_leaf: r.parent_leaf + first,
                    fk: r.fk,
                })
            })
            .collect();
    }
    let mut out = Vec::new();
    for fk in fks {
        if fk.child == fk.parent || fk.child_columns.is_empty() || fk.child_columns.len() != fk.parent_columns.len() {
            continue;
        }
        for (ci, child) in q.leaves.iter().enumerate() {
            for (pi, parent) in q.leaves.iter().enumerate() {
                if ci == pi || child.table != fk.child || parent.table != fk.parent {
                    continue;
                }
                let all_joined = fk
                    .child_columns
                    .iter()
                    .zip(&fk.parent_columns)
                    .all(|(cc, pc)| q.predicates.iter().any(|p| equates(p, &q.leaves, (ci, cc), (pi, pc))));
                if all_joined
                    && !out.iter().any(|r: &ProvenRelation| r.child_leaf == ci && r.parent_leaf == pi && r.fk == *fk)
                {
                    out.push(ProvenRelation { child_leaf: ci, parent_leaf: pi, fk: fk.clone() });
                }
            }
        }
    }
    out
}

/// The order of the leaves: every referenced (parent) leaf of a proven relation before the
/// leaves that reference it, otherwise the leaves' own order (Kahn's algorithm, taking the
/// lowest ready index first; leaves on a cycle of relations follow in index order).
pub fn leaf_order(n: usize, relations: &[ProvenRelation]) -> Vec<usize> {
    let edges: Vec<(usize, usize)> = relations
        .iter()
        .filter(|r| r.parent_leaf != r.child_leaf && r.parent_leaf < n && r.child_leaf < n)
        .map(|r| (r.parent_leaf, r.child_leaf))
        .collect();
    let mut placed = vec![false; n];
    let mut order = Vec::with_capacity(n);
    while order.len() < n {
        // A leaf is ready when every parent of it is placed.
        let ready = (0..n).find(|&j| !placed[j] && edges.iter().all(|&(p, c)| c != j || placed[p]));
        let next = ready.unwrap_or_else(|| (0..n).find(|&j| !placed[j]).unwrap_or(0));
        placed[next] = true;
        order.push(next);
    }
    order
}

/// What must hold of a parent's delta that deletes rows before a relation may prune it (see
/// `FkPruning`): no key of the delta is on two rows, and, for a declared key DuckDB does not
/// enforce, no current row of the child references a deleted key (a delete that breaks the
/// RELY promise is seen there, and the terms are kept). `render::capture::key_checks` counts
/// the rows that break them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyCheck {
    pub leaf: usize,
    pub columns: Vec<String>,
    /// For a declared key: the child leaf and its referencing columns.
    pub child: Option<(usize, Vec<String>)>,
}

impl KeyCheck {
    fn of(r: &ProvenRelation) -> KeyCheck {
        KeyCheck {
            leaf: r.parent_leaf,
            columns: r.fk.parent_columns.clone(),
            child: (r.fk.source != FactSource::Catalog).then(|| (r.child_leaf, r.fk.child_columns.clone())),
        }
    }
}

/// The checks `fk_pruning` needs: one per relation to a leaf whose delta deletes.
pub fn key_checks(relations: &[ProvenRelation], shapes: &[DeltaShape]) -> Vec<KeyCheck> {
    let mut out: Vec<KeyCheck> = Vec::new();
    for r in relations {
        let deletes = shapes.get(r.parent_leaf).is_some_and(|s| s.contains(DeltaShape::DELETES));
        let check = KeyCheck::of(r);
        if deletes && !out.contains(&check) {
            out.push(check);
        }
    }
    out
}

/// Which leaves foreign keys prune, and how the surviving terms read them.
///
/// A parent leaf P of a proven relation C -> P is pruned (every term reading ΔP is dropped) when
/// its delta is insert-only, or when it deletes and no key of P appears twice in the delta (no
/// key both deleted and inserted). The surviving terms then read P as P_new + D, its new rows and
/// its deleted ones (`with_deleted`): V(P_new) = V(P_new + D) since no row of C_new references a
/// deleted key, and V(P_old) = V(P_new + D - I) = V(P_new + D) since no row of C_old references
/// an inserted key; so the delta is the inclusion-exclusion of the other leaves with P held at
/// P_new + D in both states. For an insert-only P, D is empty and P is read as it is.
///
/// Leaves are pruned one after the other in `leaf_order` (parents first), and a
/// relation counts only when its child comes later: the child must still be read at its old
/// state when its parent is pruned. On a cycle of declared keys this drops the relation that
/// closes the cycle; pruning both leaves of A -> B -> A would drop terms that do not cancel.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FkPruning {
    /// Leaves whose delta terms are dropped.
    pub skip: Mask,
    /// Skipped leaves the surviving terms read with their deleted rows added.
    pub with_deleted: Mask,
    /// The relations (positions in the list given) that pruned a leaf.
    pub used: Vec<usize>,
}

impl FkPruning {
    /// The relations that pruned `leaf`, for explain's reasons: not one that closes a cycle, or
    /// whose key check failed while another relation to the same leaf passed.
    pub fn reasons<'a>(&self, relations: &'a [ProvenRelation], leaf: usize) -> Vec<&'a ProvenRelation> {
        self.used.iter().filter_map(|&i| relations.get(i)).filter(|r| r.parent_leaf == leaf).collect()
    }
}

/// The pruning of a refresh; `passed` says whether a `KeyCheck` passed.
pub fn fk_pruning(
    relations: &[ProvenRelation],
    shapes: &[DeltaShape],
    passed: impl Fn(&KeyCheck) -> bool,
) -> FkPruning {
    let order = leaf_order(shapes.len(), relations);
    let pos = |leaf: usize| order.iter().position(|&o| o == leaf);
    let mut out = FkPruning::default();
    for (i, r) in relations.iter().enumerate() {
        let Some(shape) = shapes.get(r.parent_leaf) else { continue };
        if pos(r.child_leaf) <= pos(r.parent_leaf) {
            continue;
        }
        let deletes = shape.contains(DeltaShape::DELETES);
        if deletes && !passed(&KeyCheck::of(r)) {
            continue;
        }
        out.skip |= 1 << r.parent_leaf;
        out.used.push(i);
        if deletes {
            out.with_deleted |= 1 << r.parent_leaf;
        }
    }
    out
}

/// The relations whose coverage is counted with the key checks (positions in `relations`): a
/// child with a delta and a parent whose delta deletes. When every key the child's delta
/// references is in the parent's delta, and the parent is pruned with its deleted rows, the terms
/// that read the child's delta read the parent as its delta's rows alone (`reads_delta_rows`).
pub fn coverage_checks(relations: &[ProvenRelation], shapes: &[DeltaShape]) -> Vec<usize> {
    let has = |leaf: usize, bit: DeltaShape| shapes.get(leaf).is_some_and(|s| s.contains(bit));
    relations
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            has(r.parent_leaf, DeltaShape::DELETES) && shapes.get(r.child_leaf).is_some_and(|s| !s.is_empty())
        })
        .map(|(i, _)| i)
        .collect()
}

/// Whether a term (`mask`: the leaves it reads as deltas) may read `leaf` at its state as the
/// rows of its delta alone. The leaf must be a parent the terms read as P_new + D
/// (`FkPruning::with_deleted`), joined to a child the term reads as a delta by a relation in
/// `covered` (positions in `relations`): every key the child's delta references is a key of the
/// parent's delta. The term then keeps only the parent's rows on keys of its delta, and those
/// rows of P_new + D are the delta's own: the inserted ones (in P_new) and the deleted ones (D),
/// since a key is on at most one row of P_old and of P_new and the delta of a parent pruned with
/// its deletes has no key on two rows (its key check), so no row both inserted and deleted. A
/// term over a random scatter of deleted keys thus joins no scan of the parent, whose zonemaps
/// could not skip anything. Returns the relation that allows it.
pub fn reads_delta_rows<'a>(
    relations: &'a [ProvenRelation],
    covered: &[usize],
    with_deleted: Mask,
    mask: Mask,
    leaf: usize,
) -> Option<&'a ProvenRelation> {
    let bit = |l: usize| 1u32.checked_shl(l as u32).unwrap_or(0);
    if mask & bit(leaf) != 0 || with_deleted & bit(leaf) == 0 {
        return None;
    }
    covered.iter().filter_map(|&i| relations.get(i)).find(|r| r.parent_leaf == leaf && mask & bit(r.child_leaf) != 0)
}

/// The FK skip mask when only insert-only deltas may be pruned (no key checks: compile-only).
pub fn fk_skip_bits(relations: &[ProvenRelation], shapes: &[DeltaShape]) -> Mask {
    fk_pruning(relations, shapes, |_| false).skip
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::bind::bind;
    use crate::front::bind::tests::{star_select, TestCatalog};

    #[test]
    fn equalities_through_lossless_casts_prove_foreign_keys() {
        assert!(lossless_cast("INTEGER", "BIGINT") && lossless_cast("UINTEGER", "BIGINT"));
        assert!(lossless_cast("SMALLINT", "integer") && lossless_cast("VARCHAR", "VARCHAR"));
        assert!(!lossless_cast("BIGINT", "INTEGER") && !lossless_cast("INTEGER", "UBIGINT"));
        assert!(!lossless_cast("UBIGINT", "BIGINT") && !lossless_cast("DOUBLE", "BIGINT"));
        let mut q = bind(star_select(), &TestCatalog::star()).unwrap();
        let ty = crate::ast::TypeName { id: "BIGINT".into(), decimal: None };
        // f.pid = p.pid written as CAST(f.pid AS BIGINT) = p.pid, f.pid an INTEGER
        for p in &mut q.predicates {
            if let Expr::Compare { left, .. } = p {
                if matches!(left.as_ref(), Expr::Bound { leaf: 0, column } if column == "pid") {
                    **left = Expr::Cast { expr: left.clone(), ty: ty.clone(), try_cast: false };
                }
            }
        }
        for c in q.leaves[0].columns.iter_mut().filter(|c| c.name == "pid") {
            c.ty = "INTEGER".into();
        }
        assert_eq!(proven_relations(&q, &[fk("fact", &["pid"], "product", &["pid"])]).len(), 1);
        for c in q.leaves[0].columns.iter_mut().filter(|c| c.name == "pid") {
            c.ty = "HUGEINT".into();
        }
        assert!(proven_relations(&q, &[fk("fact", &["pid"], "product", &["pid"])]).is_empty());
    }

    fn id(n: &str) -> TableId {
        TableId { catalog: "memory".into(), schema: "main".into(), name: n.into() }
    }

    fn fk(child: &str, cc: &[&str], parent: &str, pc: &[&str]) -> ForeignKey {
        ForeignKey {
            child: id(child),
            child_columns: cc.iter().map(|s| s.to_string()).collect(),
            parent: id(parent),
            parent_columns: pc.iter().map(|s| s.to_string()).collect(),
            source: FactSource::Catalog,
        }
    }

    #[test]
    fn star_dimensions_are_proven_and_skipped_when_insert_only() {
        let q = bind(star_select(), &TestCatalog::star()).unwrap();
        let fks = vec![fk("fact", &["pid"], "product", &["pid"]), fk("fact", &["sid"], "store", &["sid"])];
        let rel = proven_relations(&q, &fks);
        assert_eq!(rel.len(), 2);
        // leaves: f = 0, p = 1, s = 2. Both dimensions insert-only: skip bits 110.
        let (inserts, deletes) = (DeltaShape::INSERTS, DeltaShape::INSERTS | DeltaShape::DELETES);
        assert_eq!(fk_skip_bits(&rel, &[deletes, inserts, inserts]), 0b110);
        // A dimension with a delete is not skipped.
        assert_eq!(fk_skip_bits(&rel, &[inserts, deletes, inserts]), 0b100);
    }

    #[test]
    fn not_proven_on_other_columns_or_partial_keys_or_self_reference() {
        let q = bind(star_select(), &TestCatalog::star()).unwrap();
        // Joined on other columns.
        assert!(proven_relations(&q, &[fk("fact", &["id"], "product", &["pid"])]).is_empty());
        // Composite key of which the join equates only a part.
        assert!(proven_relations(&q, &[fk("fact", &["pid", "sid"], "product", &["pid", "name"])]).is_empty());
        // Self-reference.
        assert!(proven_relations(&q, &[fk("fact", &["pid"], "fact", &["id"])]).is_empty());
        // A key of another table with the same columns.
        let mut other = fk("fact", &["pid"], "product", &["pid"]);
        other.parent.catalog = "elsewhere".into();
        assert!(proven_relations(&q, &[other]).is_empty());
    }

    fn rel(child: usize, parent: usize) -> ProvenRelation {
        ProvenRelation { child_leaf: child, parent_leaf: parent, fk: fk("c", &["k"], "p", &["k"]) }
    }

    #[test]
    fn a_deleting_parent_is_pruned_when_its_keys_are_disjoint() {
        // star f(0) -> d1(1), f(0) -> d2(2); d1 deletes and inserts, d2 only inserts
        let rels = [rel(0, 1), rel(0, 2)];
        let (ins, both) = (DeltaShape::INSERTS, DeltaShape::INSERTS | DeltaShape::DELETES);
        let shapes = [both, both, ins];
        assert_eq!(key_checks(&rels, &shapes), vec![KeyCheck { leaf: 1, columns: vec!["k".into()], child: None }]);
        // a declared key also checks that no row of the child references a deleted key
        let mut declared = rels.clone();
        declared[0].fk.source = FactSource::Rely;
        let checks = key_checks(&declared, &shapes);
        assert_eq!(checks[0].child, Some((0, vec!["k".into()])));
        // d1's check passes: both pruned, d1 read with its deleted rows
        assert_eq!(
            fk_pruning(&rels, &shapes, |_| true),
            FkPruning { skip: 0b110, with_deleted: 0b010, used: vec![0, 1] }
        );
        // a key of d1 deleted and inserted again (an update): d1 keeps its terms, and only the
        // relation to d2 is a reason
        let kept = fk_pruning(&rels, &shapes, |_| false);
        assert_eq!(kept, FkPruning { skip: 0b100, with_deleted: 0, used: vec![1] });
        assert!(kept.reasons(&rels, 1).is_empty());
        assert_eq!(kept.reasons(&rels, 2), vec![&rels[1]]);
        assert_eq!(fk_skip_bits(&rels, &shapes), 0b100);
        // a delete-only parent
        assert_eq!(fk_pruning(&rels, &[both, DeltaShape::DELETES, ins], |_| true).with_deleted, 0b010);
        // two children of one deleting parent: a(0) -> p(2) by a catalog key, b(1) -> p(2) by a
        // RELY key whose reference check failed. p is pruned by the first; only it is a reason.
        let mut two = [rel(0, 2), rel(1, 2)];
        two[1].fk.source = FactSource::Rely;
        let pruned = fk_pruning(&two, &[ins, ins, both], |k| k.child.is_none());
        assert_eq!((pruned.skip, pruned.with_deleted), (0b100, 0b100));
        assert_eq!(pruned.reasons(&two, 2), vec![&two[0]]);
    }

    #[test]
    fn a_parent_is_read_as_its_delta_rows_where_a_covered_child_delta_joins_it() {
        // lineitem(0) -> orders(1) -> customer(2); lineitem and orders insert and delete (new
        // orders with their lines, old orders deleted with theirs), customer unchanged.
        let rels = [rel(0, 1), rel(1, 2)];
        let both = DeltaShape::INSERTS | DeltaShape::DELETES;
        let shapes = [both, both, DeltaShape::empty()];
        // only orders deletes: only lineitem -> orders is counted
        assert_eq!(coverage_checks(&rels, &shapes), vec![0]);
        // a child without a delta is not counted: with customer deleting too, orders -> customer is
        assert_eq!(coverage_checks(&rels, &[DeltaShape::empty(), both, both]), vec![1]);
        let with_deleted = 0b010;
        // the term of lineitem's delta reads orders as its delta rows when lineitem's delta is covered
        assert_eq!(reads_delta_rows(&rels, &[0], with_deleted, 0b001, 1), Some(&rels[0]));
        // not when it is not covered, nor in a term that reads orders' own delta, nor for
        // customer (no relation counted), nor for a parent read at its plain state
        assert!(reads_delta_rows(&rels, &[], with_deleted, 0b001, 1).is_none());
        assert!(reads_delta_rows(&rels, &[0], with_deleted, 0b011, 1).is_none());
        assert!(reads_delta_rows(&rels, &[0], with_deleted, 0b001, 2).is_none());
        assert!(reads_delta_rows(&rels, &[0], 0, 0b001, 1).is_none());
        // a term without lineitem's delta (customer's) reads orders whole
        assert!(reads_delta_rows(&rels, &[0], with_deleted, 0b100, 1).is_none());
    }

    #[test]
    fn a_chain_prunes_every_parent_and_a_cycle_only_one() {
        // lineitem(0) -> orders(1) -> customer(2): orders and customer both pruned
        let ins = DeltaShape::INSERTS;
        assert_eq!(fk_skip_bits(&[rel(0, 1), rel(1, 2)], &[ins, ins, ins]), 0b110);
        // a(0) -> b(1) and b(1) -> a(0), as two RELY declarations may say: inserting a new a
        // and the b it references (which references it back) changes the join, so at most one
        // of the two may be pruned.
        let cycle_rels = [rel(0, 1), rel(1, 0)];
        let cycle = fk_pruning(&cycle_rels, &[ins, ins], |_| false);
        assert_eq!(cycle.skip.count_ones(), 1);
        // the relation that closes the cycle is no reason for the leaf pruned
        let pruned = cycle.skip.trailing_zeros() as usize;
        assert_eq!(cycle.reasons(&cycle_rels, pruned).len(), 1);
        assert_eq!(cycle.used.len(), 1);
    }

    /// A Z-set of joined (child value, parent value) rows.
    type Bag = std::collections::BTreeMap<(i32, char), i32>;

    /// C(fk, x) ⋈ P(k, y) on fk = k, over weighted rows.
    fn join(c: &[((i32, i32), i32)], p: &[((i32, char), i32)]) -> Bag {
        let mut out = Bag::new();
        for &((fk, x), wc) in c {
            for &((k, y), wp) in p {
                if fk == k {
                    *out.entry((x, y)).or_default() += wc * wp;
                }
            }
        }
        out.retain(|_, w| *w != 0);
        out
    }

    #[test]
    fn the_pruned_delta_equals_the_change_of_the_join_by_hand() {
        // P(k, y) and C(fk, x) with C.fk -> P.k, valid before and after the batch.
        let p_old = [((1, 'a'), 1), ((2, 'b'), 1), ((3, 'c'), 1)];
        let c_old = [((1, 10), 1), ((2, 20), 1), ((3, 30), 1)];
        // The batch: delete key 2 of P with its child row, insert key 4 with a child, add a
        // child of key 1, delete the child of key 3 (key 3 stays).
        let p_new = [((1, 'a'), 1), ((3, 'c'), 1), ((4, 'd'), 1)];
        let c_new = [((1, 10), 1), ((4, 40), 1), ((1, 50), 1)];
        let dp = [((2, 'b'), -1), ((4, 'd'), 1)];
        let dc = [((4, 40), 1), ((1, 50), 1), ((2, 20), -1), ((3, 30), -1)];
        let mut want = join(&c_new, &p_new);
        for (row, w) in join(&c_old, &p_old) {
            *want.entry(row).or_default() -= w;
        }
        want.retain(|_, w| *w != 0);
        // (x, y): +(40, d) +(50, a) -(20, b) -(30, c)
        assert_eq!(want, Bag::from([((20, 'b'), -1), ((30, 'c'), -1), ((40, 'd'), 1), ((50, 'a'), 1)]));
        // The one surviving term: ΔC ⋈ (P_new + the deleted rows of ΔP, each read once).
        let deleted = dp.iter().filter(|(_, w)| *w < 0).map(|&(row, _)| (row, 1));
        let p_star: Vec<((i32, char), i32)> = p_new.iter().copied().chain(deleted).collect();
        assert_eq!(join(&dc, &p_star), want);
        // Reading P as P_new alone loses the deleted parent's row.
        assert_ne!(join(&dc, &p_new), want);
        // The dropped terms ΔP ⋈ C_new and -ΔP ⋈ ΔC do not cancel: they sum to ΔP ⋈ C_old,
        // which is what the deleted rows added to P bring, ΔC ⋈ D = -(20, b).
        let mut dropped = join(&c_new, &dp);
        for (row, w) in join(&dc, &dp) {
            *dropped.entry(row).or_default() -= w;
        }
        dropped.retain(|_, w| *w != 0);
        assert_eq!(dropped, join(&dc, &[((2, 'b'), 1)]));
        assert_eq!(dropped, Bag::from([((20, 'b'), -1)]));
    }
}
