//! Stage 4: the delta program of a refresh, as inclusion-exclusion terms over leaf bitmasks.
//!
//! For a join of N leaves, Δ(L1 ⋈ … ⋈ LN) with current-state (post-batch) scans is the sum over
//! every non-empty leaf mask M of (-1)^(|M|-1) · (⋈ of ΔLi for i in M, Li_current otherwise).
//! Each term's rows carry the weight sign(M) · Π multiplicity(ΔLi): the Möbius sign corrects
//! the double counting that current-state scans cause, the product is the Z-set weight of the
//! joined delta rows. Terms are dropped by two integer tests against skip masks: a leaf whose
//! delta is empty makes every term using it empty, and (see `fk_pruning`) an insert-only primary-key
//! leaf referenced by a foreign key makes every term using it sum to zero.

use serde::Serialize;

/// A set of leaves: bit i stands for leaf i.
pub type Mask = u32;

/// One inclusion-exclusion term: read the leaves in `mask` as deltas, the others as current state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Term {
    pub mask: Mask,
    pub sign: i32,
}

/// The Möbius sign of a term: +1 for an odd number of delta leaves, -1 for an even number.
pub fn mobius_sign(mask: Mask) -> i32 {
    if mask.count_ones() % 2 == 1 {
        1
    } else {
        -1
    }
}

/// All 2^n - 1 terms of an n-leaf join, in increasing mask order.
pub fn all_terms(n: usize) -> Vec<Term> {
    assert!((1..=16).contains(&n), "joins have 1 to 16 leaves");
    (1..(1u32 << n)).map(|mask| Term { mask, sign: mobius_sign(mask) }).collect()
}

/// The weight of one joined row of a term: the sign times the product of the multiplicities of
/// its delta rows (each +1 or -1).
pub fn row_weight(sign: i32, multiplicities: &[i32]) -> i32 {
    multiplicities.iter().product::<i32>() * sign
}

/// The leaves in `mask`, in index order.
pub fn leaves_of(mask: Mask) -> impl Iterator<Item = usize> {
    (0..32).filter(move |i| mask & (1 << i) != 0)
}

bitflags::bitflags! {
    /// What a leaf's delta holds: rows of multiplicity +1 (inserts and the new halves of
    /// updates) and rows of multiplicity -1 (deletes and the old halves). No flag: no change.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DeltaShape: u8 {
        const INSERTS = 1;
        const DELETES = 1 << 1;
    }
}

impl DeltaShape {
    /// The shape of a delta of `rows` rows of which `deletes` have multiplicity -1.
    pub fn of(rows: u64, deletes: u64) -> DeltaShape {
        let mut s = DeltaShape::empty();
        s.set(DeltaShape::INSERTS, rows > deletes);
        s.set(DeltaShape::DELETES, deletes > 0);
        s
    }

    /// No deletes (an empty delta included): the premise of foreign-key pruning.
    pub fn insert_only(self) -> bool {
        !self.contains(DeltaShape::DELETES)
    }
}

/// Leaves whose delta has no rows: every term reading one of them as a delta is empty.
pub fn empty_delta_bits(shapes: &[DeltaShape]) -> Mask {
    shapes.iter().enumerate().filter(|(_, s)| s.is_empty()).fold(0, |m, (i, _)| m | (1 << i))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum TermStatus {
    /// The term is built and run.
    Run,
    /// A leaf of the mask has an empty delta, so the term has no rows.
    EmptySkipped,
    /// A leaf of the mask is an insert-only key side of a foreign key: the term sums to zero.
    FkPruned,
}

impl TermStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TermStatus::Run => "run",
            TermStatus::EmptySkipped => "empty_skipped",
            TermStatus::FkPruned => "fk_pruned",
        }
    }
}

/// Decides a term by two integer tests. An empty delta is the more basic reason, so it wins:
/// `fk_pruned` counts only the terms that foreign keys saved beyond empty-delta skipping.
pub fn classify(term: Term, empty_bits: Mask, fk_skip_bits: Mask) -> TermStatus {
    if term.mask & empty_bits != 0 {
        TermStatus::EmptySkipped
    } else if term.mask & fk_skip_bits != 0 {
        TermStatus::FkPruned
    } else {
        TermStatus::Run
    }
}

/// The terms of a refresh, each with its status.
pub fn plan_terms(n_leaves: usize, empty_bits: Mask, fk_skip_bits: Mask) -> Vec<(Term, TermStatus)> {
    plan_spans(&[(0, n_leaves)], empty_bits, fk_skip_bits)
}

/// The terms of a union of joins (`spans`: each branch's first leaf and number of leaves): each
/// branch's own 2^n - 1 terms over its own leaves, shifted to the branch's bits; no term mixes
/// branches, since the delta of a bag union is the union of its branches' deltas. A shift keeps
/// the number of delta leaves, so the Möbius sign is the branch's own.
pub fn union_terms(spans: &[(usize, usize)]) -> Vec<Term> {
    spans
        .iter()
        .flat_map(|&(first, n)| all_terms(n).into_iter().map(move |t| Term { mask: t.mask << first, sign: t.sign }))
        .collect()
}

/// `plan_terms` for a union of joins (see `union_terms`).
pub fn plan_spans(spans: &[(usize, usize)], empty_bits: Mask, fk_skip_bits: Mask) -> Vec<(Term, TermStatus)> {
    union_terms(spans).into_iter().map(|t| (t, classify(t, empty_bits, fk_skip_bits))).collect()
}

/// The branch (index into `spans`) whose leaves a term's mask reads; None for the mask 0 (no
/// delta leaf: every branch's current join).
pub fn branch_of(spans: &[(usize, usize)], mask: Mask) -> Option<usize> {
    let first = (mask != 0).then(|| mask.trailing_zeros() as usize)?;
    spans.iter().position(|&(at, n)| (at..at + n).contains(&first))
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TermCounts {
    pub total: usize,
    pub run: usize,
    pub empty_skipped: usize,
    pub fk_pruned: usize,
}

/// The counts of a plan's terms by status, for either rule (a term is a mask or a leaf).
pub fn count_terms<T>(plan: &[(T, TermStatus)]) -> TermCounts {
    let mut c = TermCounts { total: plan.len(), ..TermCounts::default() };
    for (_, s) in plan {
        match s {
            TermStatus::Run => c.run += 1,
            TermStatus::EmptySkipped => c.empty_skipped += 1,
            TermStatus::FkPruned => c.fk_pruned += 1,
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_union_has_each_branchs_terms_and_no_mixed_one() {
        // branches of 2 and 1 leaves: leaves 0, 1 and leaf 2
        let terms = union_terms(&[(0, 2), (2, 1)]);
        let masks: Vec<(Mask, i32)> = terms.iter().map(|t| (t.mask, t.sign)).collect();
        assert_eq!(masks, vec![(0b001, 1), (0b010, 1), (0b011, -1), (0b100, 1)]);
        assert_eq!(branch_of(&[(0, 2), (2, 1)], 0b011), Some(0));
        assert_eq!(branch_of(&[(0, 2), (2, 1)], 0b100), Some(1));
        assert_eq!(branch_of(&[(0, 2), (2, 1)], 0), None);
        // leaf 2's empty delta skips its branch's term only; leaf 0 pruned by a foreign key
        let plan = plan_spans(&[(0, 2), (2, 1)], 0b100, 0b001);
        let statuses: Vec<TermStatus> = plan.iter().map(|(_, s)| *s).collect();
        assert_eq!(
            statuses,
            vec![TermStatus::FkPruned, TermStatus::Run, TermStatus::FkPruned, TermStatus::EmptySkipped]
        );
        assert_eq!(plan_terms(3, 0, 0).len(), 7);
    }

    #[test]
    fn two_leaf_table() {
        // R ⋈ S, bit 0 = R, bit 1 = S:
        // 01: ΔR ⋈ S  (+1)   10: R ⋈ ΔS  (+1)   11: ΔR ⋈ ΔS  (-1)
        let t = all_terms(2);
        assert_eq!(t, vec![Term { mask: 0b01, sign: 1 }, Term { mask: 0b10, sign: 1 }, Term { mask: 0b11, sign: -1 }]);
    }

    #[test]
    fn three_leaf_table() {
        // F ⋈ D1 ⋈ D2: singletons +1, pairs -1, the triple +1.
        let signs: Vec<(Mask, i32)> = all_terms(3).iter().map(|t| (t.mask, t.sign)).collect();
        assert_eq!(signs, vec![(0b001, 1), (0b010, 1), (0b011, -1), (0b100, 1), (0b101, -1), (0b110, -1), (0b111, 1)]);
        assert_eq!(all_terms(5).len(), 31);
        assert_eq!(all_terms(16).len(), 65535);
    }

    #[test]
    fn signs_telescope_for_a_hand_worked_join() {
        // R = {1}, S = {1}; batch: insert 2 into R and 2 into S. Old join {(1,1)}, new join
        // {(1,1),(2,2)}: the delta is one row (2,2) with weight +1. With current-state scans:
        // 01: ΔR{2} ⋈ S{1,2} = (2,2) · +1;  10: R{1,2} ⋈ ΔS{2} = (2,2) · +1;  11: ΔR ⋈ ΔS = (2,2) · -1.
        let total: i32 = [row_weight(1, &[1]), row_weight(1, &[1]), row_weight(-1, &[1, 1])].iter().sum();
        assert_eq!(total, 1);
        // Deleting 2 from both again: the current states are R = S = {1}, so ΔR{2:-1} ⋈ S{1}
        // and R{1} ⋈ ΔS{2:-1} are empty, and only 11 contributes: (2,2) with -1 · (-1)(-1) = -1.
        assert_eq!(row_weight(-1, &[-1, -1]), -1);
    }

    #[test]
    fn combined_join_weight_equals_the_term_weight() {
        // render::combined_terms gives each joined row the weight -Π factor, where a current row
        // has factor 1 and a delta row factor -multiplicity. For every mask and multiplicities
        // this must equal sign(mask) · Π multiplicity.
        for mask in 1u32..8 {
            for ms in [[1, 1, 1], [-1, 1, -1], [-1, -1, -1], [1, -1, 1]] {
                let delta_ms: Vec<i32> = leaves_of(mask).map(|i| ms[i]).collect();
                let combined = -(0..3).map(|i| if mask & (1 << i) != 0 { -ms[i] } else { 1 }).product::<i32>();
                assert_eq!(combined, row_weight(mobius_sign(mask), &delta_ms), "mask {mask:03b} {ms:?}");
            }
        }
    }

    #[test]
    fn skip_bits_are_one_test_per_term() {
        // Star F(0) + D1(1) + D2(2); D2's delta is empty, D1 is insert-only and FK-referenced.
        let (changed, none) = (DeltaShape::INSERTS | DeltaShape::DELETES, DeltaShape::empty());
        let empty = empty_delta_bits(&[changed, DeltaShape::INSERTS, none]);
        assert_eq!(empty, 0b100);
        let plan = plan_terms(3, empty, 0b010);
        let status: Vec<&str> = plan.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(
            status,
            vec!["run", "fk_pruned", "fk_pruned", "empty_skipped", "empty_skipped", "empty_skipped", "empty_skipped"]
        );
        let c = count_terms(&plan);
        assert_eq!((c.total, c.run, c.fk_pruned, c.empty_skipped), (7, 1, 2, 4));
        assert_eq!(leaves_of(0b101).collect::<Vec<_>>(), vec![0, 2]);
    }

    #[test]
    fn a_delta_has_a_shape() {
        assert_eq!(DeltaShape::of(0, 0), DeltaShape::empty());
        assert_eq!(DeltaShape::of(4, 0), DeltaShape::INSERTS);
        assert_eq!(DeltaShape::of(3, 3), DeltaShape::DELETES);
        // an update: one old row out, one new row in
        assert_eq!(DeltaShape::of(2, 1), DeltaShape::INSERTS | DeltaShape::DELETES);
        assert!(DeltaShape::of(4, 0).insert_only() && DeltaShape::of(0, 0).insert_only());
        assert!(!DeltaShape::of(2, 1).insert_only() && !DeltaShape::of(3, 3).insert_only());
    }
}
