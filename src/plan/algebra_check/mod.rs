//! The algebra tested on data.
//!
//! A small in-memory Z-set evaluator (a row is a `Vec<i64>`, a relation maps rows to weights),
//! and property tests that run the planner's delta programs on random data and compare them with
//! the delta computed directly, Join(new) - Join(old), exactly, as Z-sets.
//!
//! A case is a join of 2 to 4 leaves (a chain, a star, a star with one table joined twice, or
//! two leaves that reference each other, with more chained on), bound by `bind::bind` against a
//! test catalog, each join an equality of a reference column with the other leaf's key column,
//! most of them with a declared foreign key (catalog, RELY or facts). The old tables are random
//! and small and satisfy the declared keys (a referenced key column is unique and not NULL, a
//! reference is NULL or a key of the parent), and so do the new ones; each table's batch is
//! none, inserts only, deletes only, or inserts, deletes and updates, with parents that may
//! delete keys no child references and children that follow their parents' deletes; some
//! deltas also carry a row inserted and deleted again (not netted). A delta is read as physical
//! rows of multiplicity +1 or -1, as `openivm_multiplicity` holds them.
//!
//! Properties, `CASES` cases each (seeds 0..CASES; a failure prints the seed, the tables, the
//! program's terms and the difference):
//! 1. inclusion-exclusion (`plan::terms`: `plan_terms`, `row_weight`) without foreign keys;
//! 2. inclusion-exclusion with foreign-key pruning (`plan::fk_pruning`: `proven_relations`,
//!    `fk_skip_bits`, `fk_pruning` with `FkPruning::with_deleted`), and with the parents the
//!    terms read as their delta's rows (`fk_pruning::coverage_checks`, `reads_delta_rows`);
//! 3. the N-term rule (`fk_pruning::leaf_order`; `plan::nterm`: `states`, `terms`,
//!    `pruning_relation`) in a random order without pruning and in its own order with pruning;
//! 4. the combined join of `render::combined_terms`, with and without pruning, in total and
//!    mask by mask against the terms.
//!
//! Some rules live only in rendered SQL: the combined join's weight, a term's weight, the reads
//! of a parent with its deleted rows or as its delta's rows. The evaluator applies them as the
//! code documents them, and `combined_sql_states_the_rule` and `term_sql_states_the_reads` check
//! that the rendered SQL states the same. The key checks a refresh runs in SQL
//! (`render::capture::key_checks`) are evaluated on the data (`Case::key_check_passes`,
//! `Case::covers`), as that SQL counts them.
//!
//! The files: `zset` (Z-sets, reads, joins, a term's rows, the combined join's rows), `view` (the
//! test tables and the view bound over them), `case` (the random cases), `show` (a failing case
//! written out), `programs` (the delta programs evaluated on a case); the properties are here.

mod case;
mod programs;
mod show;
mod view;
mod zset;

use std::collections::BTreeMap;

use crate::plan::fk_pruning::{self, FkPruning};
use crate::plan::nterm::{self, LeafState};
use crate::plan::terms::{self, Mask, Term, TermStatus};

use case::{relation_pairs, Case, Rng};
use programs::{combined, combined_labeled, inclusion_exclusion, labeled, n_term, StateRead};
use show::{mask_label, show};
use view::{alias, COLUMNS};
use zset::{
    copies, delta_reads, join, minus, plus, state, sum, term_rows, zset, ZSet, CURRENT_FACTOR, DELTA_FACTOR, NULL,
    OUTER,
};

/// Random cases per property.
const CASES: u64 = 1000;

fn cases() -> impl Iterator<Item = Case> {
    (0..CASES).map(Case::generate)
}

/// Counts of what the cases exercised, so that no property passes by never meeting its subject.
#[derive(Debug, Default)]
struct Seen {
    cases: usize,
    nonzero_delta: usize,
    pruned: usize,
    pruned_with_deleted: usize,
    read_as_delta_rows: usize,
    n_term_pruned: usize,
}

/// Panics with the case, the program's terms and the difference unless the terms sum to
/// Join(new) - Join(old).
fn expect_delta(case: &Case, program: &str, terms: &[(String, ZSet)]) {
    let got = sum(terms.iter().map(|(_, z)| z));
    if got != case.want {
        let listed: Vec<String> = terms.iter().map(|(what, z)| format!("  {what}: {}", show(z))).collect();
        panic!(
            "{program}: the program's delta is not Join(new) - Join(old)\n{}\nterms:\n{}\nprogram - direct = {}",
            case.describe(),
            listed.join("\n"),
            show(&minus(&got, &case.want))
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The properties

#[test]
fn the_evaluator_by_hand() {
    // R(k, v) ⋈ S(k, v) on R.k = S.k; R = {1, 2}, S = {1} then S += {2}.
    let r = zset([(vec![1, 10], 1), (vec![2, 20], 1)]);
    let (s_old, s_new) = (zset([(vec![1, 7], 1)]), zset([(vec![1, 7], 1), (vec![2, 8], 1)]));
    let eqs = [((0, 0), (1, 0))];
    let view = |s: &ZSet| join(&[state(&r), state(s)], &eqs, &copies);
    let want = minus(&view(&s_new), &view(&s_old));
    assert_eq!(want, zset([(vec![2, 20, 2, 8], 1)]));
    // the term of S's delta, and NULL joins nothing
    let ds = delta_reads(&[(vec![2, 8], 1), (vec![NULL, 9], -1)]);
    assert_eq!(term_rows(Term { mask: 0b10, sign: 1 }, &[state(&r), ds], &eqs), want);
    assert!(join(&[state(&zset([(vec![NULL, 1], 1)])), state(&zset([(vec![NULL, 2], 1)]))], &eqs, &copies).is_empty());
    // copies multiply, weights cancel
    assert_eq!(plus(&zset([(vec![1], 2)]), &zset([(vec![1], -2)])), ZSet::new());
    assert_eq!(
        join(&[state(&zset([(vec![1], 2)])), state(&zset([(vec![1], 3)]))], &eqs, &copies),
        zset([(vec![1, 1], 6)])
    );
}

#[test]
fn inclusion_exclusion_equals_the_change_of_the_join() {
    let mut seen = Seen::default();
    for case in cases() {
        let shapes = case.shapes();
        let plan = terms::plan_terms(case.n(), terms::empty_delta_bits(&shapes), 0);
        let terms = inclusion_exclusion(&case, &plan, &|_, _| StateRead::New);
        expect_delta(&case, "inclusion-exclusion", &labeled(case.n(), terms));
        seen.cases += 1;
        seen.nonzero_delta += usize::from(!case.want.is_empty());
    }
    eprintln!("inclusion-exclusion: {seen:?}");
    assert!(seen.nonzero_delta * 5 > seen.cases * 2, "{seen:?}");
}

#[test]
fn fk_pruned_inclusion_exclusion_equals_the_change_of_the_join() {
    let mut seen = Seen::default();
    for case in cases() {
        let shapes = case.shapes();
        let relations = fk_pruning::proven_relations(&case.q, &case.fks);
        assert_eq!(relations.len(), case.fks.len(), "every declared key is proven\n{}", case.describe());
        let empty = terms::empty_delta_bits(&shapes);
        // compile-only: insert-only parents pruned, no key checks
        let skip = fk_pruning::fk_skip_bits(&relations, &shapes);
        let plan = terms::plan_terms(case.n(), empty, skip);
        let terms = labeled(case.n(), inclusion_exclusion(&case, &plan, &|_, _| StateRead::New));
        expect_delta(
            &case,
            &format!("inclusion-exclusion, compile-only FK skip {}", mask_label(case.n(), skip)),
            &terms,
        );
        // a refresh: deleting parents pruned too where their key checks pass, read with their
        // deleted rows
        let pruning = case.runtime_pruning(&relations);
        assert_eq!(pruning.skip & skip, skip, "a refresh prunes at least what compile-only prunes");
        let plan = terms::plan_terms(case.n(), empty, pruning.skip);
        let read = |_: Term, i: usize| {
            if pruning.with_deleted & (1 << i) != 0 {
                StateRead::WithDeleted
            } else {
                StateRead::New
            }
        };
        let terms = labeled(case.n(), inclusion_exclusion(&case, &plan, &read));
        let what = format!(
            "inclusion-exclusion, FK pruning skip {} with_deleted {}",
            mask_label(case.n(), pruning.skip),
            mask_label(case.n(), pruning.with_deleted)
        );
        expect_delta(&case, &what, &terms);
        seen.cases += 1;
        seen.pruned += usize::from(plan.iter().any(|(_, s)| *s == TermStatus::FkPruned));
        seen.pruned_with_deleted += usize::from(pruning.with_deleted != 0);
    }
    eprintln!("FK pruning: {seen:?}");
    assert!(seen.pruned * 4 > seen.cases && seen.pruned_with_deleted * 10 > seen.cases, "{seen:?}");
}

#[test]
fn a_parent_read_as_its_delta_rows_keeps_the_change_of_the_join() {
    let mut seen = Seen::default();
    for case in cases() {
        let shapes = case.shapes();
        let relations = fk_pruning::proven_relations(&case.q, &case.fks);
        let pruning = case.runtime_pruning(&relations);
        let covered: Vec<usize> = fk_pruning::coverage_checks(&relations, &shapes)
            .into_iter()
            .filter(|&i| case.covers(&relations[i]))
            .collect();
        let plan = terms::plan_terms(case.n(), terms::empty_delta_bits(&shapes), pruning.skip);
        let mut delta_rows = false;
        let read = |term: Term, i: usize| {
            if fk_pruning::reads_delta_rows(&relations, &covered, pruning.with_deleted, term.mask, i).is_some() {
                StateRead::DeltaRows
            } else if pruning.with_deleted & (1 << i) != 0 {
                StateRead::WithDeleted
            } else {
                StateRead::New
            }
        };
        for &(t, s) in &plan {
            delta_rows |= s == TermStatus::Run && (0..case.n()).any(|i| read(t, i) == StateRead::DeltaRows);
        }
        let terms = labeled(case.n(), inclusion_exclusion(&case, &plan, &read));
        let covered_pairs: Vec<String> = covered.iter().map(|&i| relation_pairs(&relations[i..=i]).concat()).collect();
        expect_delta(
            &case,
            &format!("inclusion-exclusion, parents read as delta rows, covered {covered_pairs:?}"),
            &terms,
        );
        seen.cases += 1;
        seen.read_as_delta_rows += usize::from(delta_rows);
    }
    eprintln!("parent delta reads: {seen:?}");
    assert!(seen.read_as_delta_rows * 20 > seen.cases, "{seen:?}");
}

#[test]
fn the_n_term_rule_telescopes_in_any_order() {
    let mut seen = Seen::default();
    for case in cases() {
        // a random order of the leaves, no pruning
        let mut rng = Rng::new(case.seed ^ 0x5EED);
        let mut order: Vec<usize> = (0..case.n()).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let terms = nterm::terms(&order, &case.shapes(), &[]);
        expect_delta(&case, "N-term rule, no pruning", &n_term(&case, &order, &terms));
        seen.cases += 1;
    }
    eprintln!("N-term, any order: {seen:?}");
}

#[test]
fn the_fk_pruned_n_term_rule_equals_the_change_of_the_join() {
    let mut seen = Seen::default();
    let mut not_old = Vec::new();
    for case in cases() {
        let shapes = case.shapes();
        let relations = fk_pruning::proven_relations(&case.q, &case.fks);
        let order = fk_pruning::leaf_order(case.n(), &relations);
        let terms = nterm::terms(&order, &shapes, &relations);
        expect_delta(&case, "N-term rule with FK pruning", &n_term(&case, &order, &terms));
        for &(leaf, status) in &terms {
            if status == TermStatus::FkPruned {
                // the term is empty since its delta leaf joins a child at its old state
                let r = nterm::pruning_relation(&order, leaf, &shapes, &relations).expect("a pruning relation");
                if nterm::states(&order, leaf)[r.child_leaf] != LeafState::Old {
                    not_old.push(case.seed);
                }
            }
        }
        seen.cases += 1;
        seen.n_term_pruned += usize::from(terms.iter().any(|(_, s)| *s == TermStatus::FkPruned));
    }
    eprintln!("N-term, FK pruning: {seen:?}");
    assert!(seen.n_term_pruned * 4 > seen.cases, "{seen:?}");
    assert!(not_old.is_empty(), "pruned terms whose child is not read old, seeds {not_old:?}");
}

#[test]
fn the_combined_join_equals_the_change_of_the_join() {
    let mut seen = Seen::default();
    for case in cases() {
        let shapes = case.shapes();
        let empty = terms::empty_delta_bits(&shapes);
        // without foreign keys: every mask with deltas
        let plan = terms::plan_terms(case.n(), empty, 0);
        let rows = combined(&case, &plan, &FkPruning::default());
        expect_delta(&case, "combined join, no pruning", &combined_labeled(case.n(), &rows));
        // a refresh's pruning: masks touching skipped leaves filtered, with-deleted leaves read so
        let relations = fk_pruning::proven_relations(&case.q, &case.fks);
        let pruning = case.runtime_pruning(&relations);
        let plan = terms::plan_terms(case.n(), empty, pruning.skip);
        let what = format!(
            "combined join, FK pruning skip {} with_deleted {}",
            mask_label(case.n(), pruning.skip),
            mask_label(case.n(), pruning.with_deleted)
        );
        let rows = combined(&case, &plan, &pruning);
        expect_delta(&case, &what, &combined_labeled(case.n(), &rows));
        // and mask by mask, the rows of that mask's term
        let read = |_: Term, i: usize| {
            if pruning.with_deleted & (1 << i) != 0 {
                StateRead::WithDeleted
            } else {
                StateRead::New
            }
        };
        let by_term: BTreeMap<Mask, ZSet> = inclusion_exclusion(&case, &plan, &read)
            .into_iter()
            .filter(|(_, z)| !z.is_empty())
            .map(|(t, z)| (t.mask, z))
            .collect();
        let rows: BTreeMap<Mask, ZSet> = rows.into_iter().filter(|(_, z)| !z.is_empty()).collect();
        assert_eq!(rows, by_term, "the combined join's rows by mask against the terms'\n{}", case.describe());
        seen.cases += 1;
        seen.pruned += usize::from(pruning.skip != 0);
    }
    eprintln!("combined join: {seen:?}");
}

/// The combined join's weight rule lives in the SQL `render::combined_terms` writes: the numbers
/// `combined_rows` evaluates are the ones that SQL states.
#[test]
fn combined_sql_states_the_rule() {
    use crate::render::{self, CombinedLeaf, Qualified, Source};
    for case in cases().take(40) {
        // at least leaf 0 with a delta
        let skip: Mask = (case.seed as u32 % ((1 << case.n()) - 1)) & !1;
        let leaves: Vec<CombinedLeaf> = (0..case.n())
            .map(|i| CombinedLeaf {
                current: Source::Named(format!("current{i}")),
                delta: (skip & (1 << i) == 0).then(|| Qualified::temp(format!("delta{i}"))),
                columns: COLUMNS.iter().map(|c| c.to_string()).collect(),
            })
            .collect();
        let sql = render::combined_terms(&case.q, &leaves, skip);
        let m = render::ident(render::MULTIPLICITY);
        let delta_factor = match DELTA_FACTOR {
            -1 => format!("-{m}"),
            1 => m.clone(),
            f => format!("{f} * {m}"),
        };
        let with_delta = (0..case.n()).filter(|i| skip & (1 << i) == 0).count();
        for part in [
            format!("0 AS openivm_in_delta, {CURRENT_FACTOR} AS openivm_factor FROM"),
            format!("1, {delta_factor} FROM"),
            format!("({OUTER} * "),
            "<> 0 AND (".to_string(),
            format!(" & {skip}) = 0"),
        ] {
            assert!(sql.contains(&part), "the combined join's SQL does not state `{part}`:\n{sql}");
        }
        assert_eq!(sql.matches(&format!("{CURRENT_FACTOR} AS openivm_factor FROM")).count(), with_delta, "{sql}");
    }
}

/// The other reads live in SQL too: a term's weight (`render::term_select`), a parent with its
/// deleted rows (`render::with_deleted_rows`) and a parent as its delta's rows
/// (`render::delta_rows_as_state`). The SQL states what the evaluator reads: the sign times each
/// delta leaf's multiplicity, the current rows plus the delta's rows of multiplicity < 0, every
/// delta row.
#[test]
fn term_sql_states_the_reads() {
    use crate::render::{self, Qualified, Source};
    let m = render::ident(render::MULTIPLICITY);
    for case in cases().take(40) {
        let n = case.n();
        let sources: Vec<Source> = (0..n).map(|i| Source::Named(format!("leaf{i}"))).collect();
        for term in terms::all_terms(n) {
            let sql = render::term_select(&case.q, term, &sources);
            let weight: Vec<String> = std::iter::once(term.sign.to_string())
                .chain(terms::leaves_of(term.mask).map(|i| format!("{}.{m}", render::ident(&alias(i)))))
                .collect();
            let weight = format!("({}) AS {}", weight.join(" * "), render::ident("openivm_weight"));
            assert!(sql.contains(&weight), "the term's SQL does not state `{weight}`:\n{sql}");
        }
    }
    let (current, delta) = (Source::Named("current".into()), Qualified::temp("delta".into()));
    let columns: Vec<String> = COLUMNS.iter().map(|c| c.to_string()).collect();
    let cols = columns.iter().map(|c| render::ident(c)).collect::<Vec<_>>().join(", ");
    let Source::Bounded(with_deleted) = render::with_deleted_rows(&current, &delta, &columns) else { panic!() };
    let want = format!(
        "(SELECT {cols} FROM {} UNION ALL SELECT {cols} FROM {} WHERE {m} < 0)",
        render::relation_sql(&current),
        delta.sql()
    );
    assert_eq!(with_deleted, want);
    let Source::Bounded(delta_rows) = render::delta_rows_as_state(&delta, &columns) else { panic!() };
    assert_eq!(delta_rows, format!("(SELECT {cols} FROM {})", delta.sql()));
}
