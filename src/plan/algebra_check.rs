//! The algebra tested on data (issue 36, item 2).
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
//! 1. inclusion-exclusion (`plan::plan_terms`, `plan::row_weight`) without foreign keys;
//! 2. inclusion-exclusion with foreign-key pruning (`facts::proven_relations`,
//!    `facts::fk_skip_bits` and `facts::fk_pruning` with `FkPruning::with_deleted`), and with
//!    the parents the terms read as their delta's rows (`facts::coverage_checks`,
//!    `facts::reads_delta_rows`);
//! 3. the N-term rule (`telescope::leaf_order`, `states`, `terms`, `pruning_relation`) in a
//!    random order without pruning and in its own order with pruning;
//! 4. the combined join of `render::combined_terms`, with and without pruning, in total and
//!    mask by mask against the terms.
//!
//! Some rules live only in rendered SQL: the combined join's weight, a term's weight, the reads
//! of a parent with its deleted rows or as its delta's rows. The evaluator applies them as the
//! code documents them, and `combined_sql_states_the_rule` and `term_sql_states_the_reads` check
//! that the rendered SQL states the same. The key checks a refresh runs in SQL
//! (`render::capture::key_checks`) are evaluated on the data (`Case::key_check_passes`,
//! `Case::covers`), as that SQL counts them.

use std::collections::{BTreeMap, BTreeSet};

use crate::ast::{Expr, Select, SelectItem};
use crate::front::bind::bind;
use crate::front::bind::tests::{col, eq, join as join_on, table, TestCatalog};
use crate::ir::{TableId, ViewQuery};
use crate::plan::fk_pruning::{self as facts, FactSource, FkPruning, ForeignKey, KeyCheck, ProvenRelation};
use crate::plan::nterm::{self as telescope, LeafState};
use crate::plan::terms::{self as plan, DeltaShape, Mask, Term, TermStatus};

/// Random cases per property.
const CASES: u64 = 1000;

// ---------------------------------------------------------------------------------------------
// Z-sets

type Row = Vec<i64>;
/// A relation as a Z-set: each row with its weight, no row of weight 0.
type ZSet = BTreeMap<Row, i64>;

/// SQL's NULL: equal to nothing, itself included.
const NULL: i64 = i64::MIN;

fn zset(rows: impl IntoIterator<Item = (Row, i64)>) -> ZSet {
    let mut z = ZSet::new();
    for (row, w) in rows {
        *z.entry(row).or_default() += w;
    }
    z.retain(|_, w| *w != 0);
    z
}

fn plus(a: &ZSet, b: &ZSet) -> ZSet {
    zset(a.iter().chain(b).map(|(r, &w)| (r.clone(), w)))
}

fn negate(a: &ZSet) -> ZSet {
    a.iter().map(|(r, &w)| (r.clone(), -w)).collect()
}

fn minus(a: &ZSet, b: &ZSet) -> ZSet {
    plus(a, &negate(b))
}

fn sum<'a>(parts: impl IntoIterator<Item = &'a ZSet>) -> ZSet {
    parts.into_iter().fold(ZSet::new(), |acc, z| plus(&acc, z))
}

/// One row as a join reads it from a leaf: its values, its weight (copies of the row in a state,
/// or a delta row's multiplicity +1/-1) and whether it is a delta row.
#[derive(Clone, Debug)]
struct Read {
    row: Row,
    w: i64,
    delta: bool,
}

/// A state's rows, each with its copies.
fn state(z: &ZSet) -> Vec<Read> {
    z.iter().map(|(row, &w)| Read { row: row.clone(), w, delta: false }).collect()
}

/// A delta's physical rows, each with its multiplicity.
fn delta_reads(d: &[(Row, i64)]) -> Vec<Read> {
    d.iter().map(|(row, m)| Read { row: row.clone(), w: *m, delta: true }).collect()
}

/// `(leaf, column)` = `(leaf, column)`.
type Equality = ((usize, usize), (usize, usize));

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
fn join(inputs: &[Vec<Read>], eqs: &[Equality], weight: &dyn Fn(&[&Read]) -> i64) -> ZSet {
    let mut out = Vec::new();
    join_each(inputs, eqs, &mut |row, reads| out.push((row, weight(reads))));
    zset(out)
}

/// The copies of a combination of state rows: the product of their weights.
fn copies(reads: &[&Read]) -> i64 {
    reads.iter().filter(|r| !r.delta).map(|r| r.w).product()
}

/// An inclusion-exclusion term (or an N-term term: its delta leaf's mask, sign 1) over `inputs`:
/// the leaves of the mask read as deltas, each joined row weighted by `plan::row_weight` of the
/// term's sign and its delta rows' multiplicities, times the copies of its state rows.
fn term_rows(term: Term, inputs: &[Vec<Read>], eqs: &[Equality]) -> ZSet {
    for (i, input) in inputs.iter().enumerate() {
        let as_delta = term.mask & (1 << i) != 0;
        assert!(input.iter().all(|r| r.delta == as_delta), "leaf {i} of mask {:b} read wrongly", term.mask);
    }
    join(inputs, eqs, &|reads| {
        let ms: Vec<i32> = reads.iter().filter(|r| r.delta).map(|r| r.w as i32).collect();
        i64::from(plan::row_weight(term.sign, &ms)) * copies(reads)
    })
}

/// The combined join's weight rule, as `render::combined_terms` renders it in SQL (the rule lives
/// only in that SQL string; `combined_sql_states_the_rule` checks the rendered SQL states these
/// numbers): a leaf with a delta reads its current rows tagged 0 with factor `CURRENT_FACTOR`
/// and its delta rows tagged 1 with factor `DELTA_FACTOR` · multiplicity; a joined row belongs to
/// the mask of the leaves whose delta rows it joined and weighs `OUTER` · Π factor.
const CURRENT_FACTOR: i64 = 1;
const DELTA_FACTOR: i64 = -1;
const OUTER: i64 = -1;

/// The combined join: one join over every leaf's current rows, plus its delta rows where `with_delta`
/// says so, the rows of mask 0 and of masks touching `fk_skip` left out; its rows by mask.
fn combined_rows(
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

// ---------------------------------------------------------------------------------------------
// Random cases

/// A tiny deterministic random generator (xorshift64).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03);
        for _ in 0..4 {
            r.next();
        }
        r
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
}

/// The columns of every test table, in catalog order: a key, a value, three references.
const COLUMNS: [&str; 5] = ["k", "v", "r0", "r1", "r2"];
const KEY: usize = 0;
const VALUE: usize = 1;

fn reference(slot: usize) -> usize {
    2 + slot
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Topology {
    /// a0 - a1 - a2 - a3
    Chain,
    /// a0 joined to each other leaf
    Star,
    /// a star whose leaves a1 and a2 are one table
    SelfJoin,
    /// a0 and a1 reference each other; a2, a3 chained on
    Mutual,
}

/// A join of the view: `child`'s column r<slot> equals `parent`'s key, with a foreign key
/// declared between their tables when `fk` is set.
#[derive(Clone, Debug)]
struct Edge {
    child: usize,
    slot: usize,
    parent: usize,
    fk: Option<FactSource>,
}

/// What a table's batch does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Batch {
    Unchanged,
    InsertOnly,
    DeleteOnly,
    /// inserts, deletes and updates
    Mixed,
    /// a child that follows its parents: deletes the rows that reference a deleted key, inserts
    /// rows that reference inserted keys
    Follow,
}

impl Batch {
    fn deletes(self) -> bool {
        matches!(self, Batch::DeleteOnly | Batch::Mixed | Batch::Follow)
    }
}

/// Which keys a row's declared references are set to once every table's keys are known.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Point {
    Keep,
    AnyKey,
    InsertedKey,
}

/// A declared foreign key between tables: (child table, its column, parent table), on the key.
type TableFk = (usize, usize, usize);

struct Case {
    seed: u64,
    topology: Topology,
    leaf_table: Vec<usize>,
    edges: Vec<Edge>,
    batches: Vec<Batch>,
    q: ViewQuery,
    fks: Vec<ForeignKey>,
    eqs: Vec<Equality>,
    /// Per table: its state before and after the batch, and its delta as physical rows.
    old: Vec<ZSet>,
    new: Vec<ZSet>,
    delta: Vec<Vec<(Row, i64)>>,
    /// Join(new) - Join(old).
    want: ZSet,
}

fn table_id(t: usize) -> TableId {
    TableId { catalog: "memory".into(), schema: "main".into(), name: format!("t{t}") }
}

fn alias(leaf: usize) -> String {
    format!("a{leaf}")
}

/// NULL or a small value.
fn small(rng: &mut Rng) -> i64 {
    if rng.chance(6) {
        NULL
    } else {
        1 + rng.below(3) as i64
    }
}

/// NULL or one of `keys` (NULL when there is none).
fn reference_to(rng: &mut Rng, keys: &[i64]) -> i64 {
    if keys.is_empty() || rng.chance(10) {
        NULL
    } else {
        rng.pick(keys)
    }
}

/// A key in 1..=`top` not in `taken`.
fn fresh_key(rng: &mut Rng, taken: &[i64], top: i64) -> Option<i64> {
    let free: Vec<i64> = (1..=top).filter(|k| !taken.contains(k)).collect();
    (!free.is_empty()).then(|| rng.pick(&free))
}

fn keys_of(rows: &[Row]) -> Vec<i64> {
    rows.iter().map(|r| r[KEY]).collect()
}

fn bag(rows: &[Row]) -> ZSet {
    zset(rows.iter().map(|r| (r.clone(), 1)))
}

/// Whether the rows satisfy the declared keys: a referenced key unique and not NULL, a reference
/// NULL or a key of its parent.
fn satisfies(tables: &[Vec<Row>], keyed: &[bool], fks: &[TableFk]) -> bool {
    let unique = (0..tables.len()).filter(|&t| keyed[t]).all(|t| {
        let keys = keys_of(&tables[t]);
        keys.iter().collect::<BTreeSet<_>>().len() == keys.len() && !keys.contains(&NULL)
    });
    unique
        && fks.iter().all(|&(c, col, p)| {
            let keys = keys_of(&tables[p]);
            tables[c].iter().all(|r| r[col] == NULL || keys.contains(&r[col]))
        })
}

impl Case {
    fn generate(seed: u64) -> Case {
        let mut rng = Rng::new(seed);
        loop {
            if let Some(case) = Case::try_generate(seed, &mut rng) {
                return case;
            }
        }
    }

    fn try_generate(seed: u64, rng: &mut Rng) -> Option<Case> {
        use Topology::*;
        let n = 2 + rng.below(3) as usize;
        let topology = rng.pick(if n >= 3 { &[Chain, Star, SelfJoin, Mutual][..] } else { &[Chain, Star, Mutual][..] });
        let leaf_table: Vec<usize> = (0..n).map(|i| if topology == SelfJoin && i >= 2 { i - 1 } else { i }).collect();
        let n_tables = leaf_table.iter().max().unwrap() + 1;
        // (a, b, whether a is the child for certain)
        let pairs: Vec<(usize, usize, bool)> = match topology {
            Chain => (1..n).map(|j| (j - 1, j, false)).collect(),
            Star | SelfJoin => (1..n).map(|j| (0, j, false)).collect(),
            Mutual => [(0, 1, true), (1, 0, true)].into_iter().chain((2..n).map(|j| (j - 1, j, false))).collect(),
        };
        let mut slots = vec![0; n_tables];
        let edges: Vec<Edge> = pairs
            .into_iter()
            .map(|(a, b, fixed)| {
                let (child, parent) = if fixed || rng.chance(50) { (a, b) } else { (b, a) };
                let slot = slots[leaf_table[child]];
                slots[leaf_table[child]] += 1;
                let fk = rng.chance(80).then(|| rng.pick(&[FactSource::Catalog, FactSource::Rely, FactSource::Facts]));
                Edge { child, slot, parent, fk }
            })
            .collect();
        let table_fks: Vec<TableFk> = edges
            .iter()
            .filter(|e| e.fk.is_some())
            .map(|e| (leaf_table[e.child], reference(e.slot), leaf_table[e.parent]))
            .collect();
        let keyed: Vec<bool> = (0..n_tables).map(|t| table_fks.iter().any(|&(_, _, p)| p == t)).collect();

        // The old state: keys and values first, then the references (a cycle of keys has no
        // table to start with).
        let mut old: Vec<Vec<Row>> = (0..n_tables)
            .map(|t| {
                let mut rows: Vec<Row> = Vec::new();
                for _ in 0..1 + rng.below(5) {
                    let k = if keyed[t] { fresh_key(rng, &keys_of(&rows), 6)? } else { small(rng) };
                    rows.push(vec![k, rng.below(3) as i64, small(rng), small(rng), small(rng)]);
                }
                Some(rows)
            })
            .collect::<Option<_>>()?;
        for &(c, col, p) in &table_fks {
            let keys = keys_of(&old[p]);
            for row in &mut old[c] {
                row[col] = reference_to(rng, &keys);
            }
        }

        // The batch.
        let batches: Vec<Batch> = (0..n_tables)
            .map(|_| {
                use Batch::*;
                rng.pick(&[Unchanged, InsertOnly, InsertOnly, DeleteOnly, DeleteOnly, Mixed, Mixed, Follow, Follow])
            })
            .collect();
        // Parents delete only keys no child references (the case of FK pruning with deletes),
        // or also keys whose children follow (deleted or pointed elsewhere).
        let spare_referenced = rng.chance(35);
        let protected: Vec<Vec<i64>> = (0..n_tables)
            .map(|t| {
                table_fks
                    .iter()
                    .filter(|&&(c, _, p)| p == t && (spare_referenced || !batches[c].deletes()))
                    .flat_map(|&(c, col, _)| old[c].iter().map(move |r| r[col]))
                    .collect()
            })
            .collect();
        let mut new = old.clone();
        // rows whose declared references are set once every table's keys are known
        let mut to_point: Vec<Vec<Point>> = Vec::new();
        for t in 0..n_tables {
            let (mut rows, mut point) = (Vec::new(), Vec::new());
            for row in std::mem::take(&mut new[t]) {
                let deletable = !(keyed[t] && protected[t].contains(&row[KEY]));
                if matches!(batches[t], Batch::DeleteOnly | Batch::Mixed) && deletable && rng.chance(35) {
                    continue;
                }
                let mut row = row;
                let mut repoint = Point::Keep;
                if batches[t] == Batch::Mixed && rng.chance(30) {
                    // an update: a new value, maybe a new key (not for a referenced key), new references
                    row[VALUE] = rng.below(3) as i64;
                    if !keyed[t] && rng.chance(30) {
                        row[KEY] = small(rng);
                    }
                    for s in 0..3 {
                        if rng.chance(30) {
                            row[reference(s)] = small(rng);
                        }
                    }
                    if rng.chance(30) {
                        repoint = Point::AnyKey;
                    }
                }
                rows.push(row);
                point.push(repoint);
            }
            let inserts = match batches[t] {
                Batch::InsertOnly => 1 + rng.below(3),
                Batch::Mixed => rng.below(4),
                Batch::Follow => rng.below(3),
                _ => 0,
            };
            let point_to = if batches[t] == Batch::Follow { Point::InsertedKey } else { Point::AnyKey };
            for _ in 0..inserts {
                let k = if keyed[t] { fresh_key(rng, &keys_of(&rows), 8)? } else { small(rng) };
                rows.push(vec![k, rng.below(3) as i64, small(rng), small(rng), small(rng)]);
                point.push(point_to);
            }
            new[t] = rows;
            to_point.push(point);
        }
        for &(c, col, p) in &table_fks {
            let keys = keys_of(&new[p]);
            let inserted: Vec<i64> = keys.iter().copied().filter(|k| !keys_of(&old[p]).contains(k)).collect();
            for (row, point) in new[c].iter_mut().zip(&to_point[c]) {
                match point {
                    Point::Keep => {}
                    Point::AnyKey => row[col] = reference_to(rng, &keys),
                    Point::InsertedKey => row[col] = reference_to(rng, &inserted),
                }
            }
        }
        // Children follow their parents' deleted keys, until nothing dangles; a child whose
        // batch may not delete makes the case be drawn again.
        loop {
            let mut deleted = false;
            for &(c, col, p) in &table_fks {
                let keys = keys_of(&new[p]);
                let mut i = 0;
                while i < new[c].len() {
                    let r = new[c][i][col];
                    if r == NULL || keys.contains(&r) {
                        i += 1;
                    } else if batches[c] == Batch::Mixed && rng.chance(50) {
                        new[c][i][col] = reference_to(rng, &keys);
                    } else if batches[c].deletes() {
                        new[c].remove(i);
                        deleted = true;
                    } else {
                        return None;
                    }
                }
            }
            if !deleted {
                break;
            }
        }
        assert!(
            satisfies(&old, &keyed, &table_fks) && satisfies(&new, &keyed, &table_fks),
            "seed {seed}: the generator broke a key"
        );

        let (old, new): (Vec<ZSet>, Vec<ZSet>) =
            (old.iter().map(|r| bag(r)).collect(), new.iter().map(|r| bag(r)).collect());
        let delta: Vec<Vec<(Row, i64)>> = (0..n_tables)
            .map(|t| {
                let mut rows: Vec<(Row, i64)> = minus(&new[t], &old[t])
                    .into_iter()
                    .flat_map(|(row, w)| std::iter::repeat_n((row, w.signum()), w.unsigned_abs() as usize))
                    .collect();
                if rng.chance(10) {
                    // a row inserted and deleted again in the batch, not netted away
                    let row = vec![1 + rng.below(8) as i64, rng.below(3) as i64, small(rng), small(rng), small(rng)];
                    rows.push((row.clone(), 1));
                    rows.push((row, -1));
                }
                rows
            })
            .collect();

        let q = bind_view(&leaf_table, &edges);
        let fks: Vec<ForeignKey> = edges
            .iter()
            .filter_map(|e| {
                Some(ForeignKey {
                    child: table_id(leaf_table[e.child]),
                    child_columns: vec![COLUMNS[reference(e.slot)].into()],
                    parent: table_id(leaf_table[e.parent]),
                    parent_columns: vec![COLUMNS[KEY].into()],
                    source: e.fk?,
                })
            })
            .collect();
        let eqs = equalities(&q);
        assert_eq!(eqs.len(), edges.len(), "seed {seed}: one predicate per join");
        let mut case =
            Case { seed, topology, leaf_table, edges, batches, q, fks, eqs, old, new, delta, want: ZSet::new() };
        let (new_states, old_states): (Vec<_>, Vec<_>) = (0..n).map(|i| (case.new_of(i), case.old_of(i))).unzip();
        case.want = minus(&join(&new_states, &case.eqs, &copies), &join(&old_states, &case.eqs, &copies));
        Some(case)
    }

    fn n(&self) -> usize {
        self.leaf_table.len()
    }

    fn old_of(&self, leaf: usize) -> Vec<Read> {
        state(&self.old[self.leaf_table[leaf]])
    }

    fn new_of(&self, leaf: usize) -> Vec<Read> {
        state(&self.new[self.leaf_table[leaf]])
    }

    fn delta_of(&self, leaf: usize) -> Vec<Read> {
        delta_reads(&self.delta[self.leaf_table[leaf]])
    }

    /// The leaf's new rows plus its delta's deleted rows, each read once
    /// (`render::with_deleted_rows`).
    fn with_deleted_of(&self, leaf: usize) -> Vec<Read> {
        let deleted = self.delta[self.leaf_table[leaf]].iter().filter(|(_, m)| *m < 0).map(|(row, _)| (row.clone(), 1));
        state(&plus(&self.new[self.leaf_table[leaf]], &zset(deleted)))
    }

    /// The delta's rows, each read once, as a state (`render::delta_rows_as_state`).
    fn delta_rows_of(&self, leaf: usize) -> Vec<Read> {
        state(&zset(self.delta[self.leaf_table[leaf]].iter().map(|(row, _)| (row.clone(), 1))))
    }

    /// Each leaf's delta shape, from its delta's rows and deleted rows (`DeltaStats::shape`).
    fn shapes(&self) -> Vec<DeltaShape> {
        self.leaf_table
            .iter()
            .map(|&t| {
                let d = &self.delta[t];
                DeltaShape::of(d.len() as u64, d.iter().filter(|(_, m)| *m < 0).count() as u64)
            })
            .collect()
    }

    fn column(&self, leaf: usize, name: &str) -> usize {
        column_index(&self.q, leaf, name)
    }

    /// A key check as `render::capture::key_checks` counts it: no key of the parent's delta on
    /// two rows (GROUP BY groups NULLs) or on a row of multiplicity other than ±1, and for a
    /// declared key no row of the child's current state references a deleted key.
    fn key_check_passes(&self, k: &KeyCheck) -> bool {
        let cols: Vec<usize> = k.columns.iter().map(|c| self.column(k.leaf, c)).collect();
        let key = |row: &Row| cols.iter().map(|&c| row[c]).collect::<Vec<i64>>();
        let d = &self.delta[self.leaf_table[k.leaf]];
        let mut count: BTreeMap<Vec<i64>, usize> = BTreeMap::new();
        for (row, _) in d {
            *count.entry(key(row)).or_default() += 1;
        }
        let unique = count.values().all(|&c| c == 1) && d.iter().all(|(_, m)| m.abs() == 1);
        let referencing = k.child.as_ref().is_some_and(|(child, refs)| {
            let refs: Vec<usize> = refs.iter().map(|c| self.column(*child, c)).collect();
            self.new[self.leaf_table[*child]].keys().any(|c| {
                d.iter()
                    .any(|(p, m)| *m < 0 && refs.iter().zip(&cols).all(|(&rc, &pc)| c[rc] != NULL && c[rc] == p[pc]))
            })
        });
        unique && !referencing
    }

    /// A coverage count as `render::capture::key_checks` counts it: every row of the child's
    /// delta whose references are all non-NULL references a key of the parent's delta.
    fn covers(&self, r: &ProvenRelation) -> bool {
        let refs: Vec<usize> = r.fk.child_columns.iter().map(|c| self.column(r.child_leaf, c)).collect();
        let keys: Vec<usize> = r.fk.parent_columns.iter().map(|c| self.column(r.parent_leaf, c)).collect();
        let parent = &self.delta[self.leaf_table[r.parent_leaf]];
        self.delta[self.leaf_table[r.child_leaf]].iter().all(|(c, _)| {
            refs.iter().any(|&rc| c[rc] == NULL)
                || parent.iter().any(|(p, _)| refs.iter().zip(&keys).all(|(&rc, &pc)| c[rc] == p[pc]))
        })
    }

    /// The pruning a refresh decides (`facts::fk_pruning`), with the key checks it runs
    /// (`facts::key_checks`) evaluated on the data.
    fn runtime_pruning(&self, relations: &[ProvenRelation]) -> FkPruning {
        let shapes = self.shapes();
        let checks = facts::key_checks(relations, &shapes);
        facts::fk_pruning(relations, &shapes, |k| checks.contains(k) && self.key_check_passes(k))
    }

    fn describe(&self) -> String {
        let mut s = format!("seed {}: {:?} of {} leaves:", self.seed, self.topology, self.n());
        for (i, t) in self.leaf_table.iter().enumerate() {
            s += &format!(" {}=t{t}", alias(i));
        }
        s += "\njoins:";
        for e in &self.edges {
            let fk = e.fk.map_or("no foreign key".to_string(), |f| format!("foreign key [{}]", f.as_str()));
            s += &format!(" {}.r{} = {}.k ({fk});", alias(e.child), e.slot, alias(e.parent));
        }
        s += &format!("\nproven relations: {:?}", relation_pairs(&facts::proven_relations(&self.q, &self.fks)));
        s += &format!("\nshapes: {:?}\nrows are (k, v, r0, r1, r2)", self.shapes());
        for t in 0..self.old.len() {
            s += &format!(
                "\nt{t} [{:?}]\n  old {}\n  new {}\n  delta {}",
                self.batches[t],
                show(&self.old[t]),
                show(&self.new[t]),
                show_rows(&self.delta[t])
            );
        }
        s + &format!("\nJoin(new) - Join(old) = {}", show(&self.want))
    }
}

fn relation_pairs(relations: &[ProvenRelation]) -> Vec<String> {
    relations.iter().map(|r| format!("{} -> {}", alias(r.child_leaf), alias(r.parent_leaf))).collect()
}

fn column_index(q: &ViewQuery, leaf: usize, name: &str) -> usize {
    let names: Vec<&str> = q.leaves[leaf].columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, COLUMNS, "the test tables' columns");
    COLUMNS.iter().position(|c| c.eq_ignore_ascii_case(name)).unwrap_or_else(|| panic!("no column {name}"))
}

/// The view over the leaves: each leaf's key and value, the edges as its join conditions (the
/// first edge to a leaf in its ON, the others in the WHERE clause), bound by `bind::bind`.
fn bind_view(leaf_table: &[usize], edges: &[Edge]) -> ViewQuery {
    let mut catalog = TestCatalog::star();
    let columns: Vec<(&'static str, &'static str)> = COLUMNS.iter().map(|&c| (c, "INTEGER")).collect();
    for t in leaf_table {
        catalog.tables.insert(format!("t{t}"), columns.clone());
    }
    let condition =
        |e: &Edge| eq(col(&alias(e.child), COLUMNS[reference(e.slot)]), col(&alias(e.parent), COLUMNS[KEY]));
    let mut from = table(&format!("t{}", leaf_table[0]), &alias(0));
    let mut rest = Vec::new();
    for (j, &t) in leaf_table.iter().enumerate().skip(1) {
        let mut to_j = edges.iter().filter(|e| e.child.max(e.parent) == j).map(condition);
        let on = to_j.next().expect("every leaf is joined");
        rest.extend(to_j);
        from = join_on(from, table(&format!("t{t}"), &alias(j)), on);
    }
    let items: Vec<SelectItem> = (0..leaf_table.len())
        .flat_map(|i| {
            ["k", "v"].map(|c| SelectItem { expr: col(&alias(i), c), alias: Some(format!("{}_{c}", alias(i))) })
        })
        .collect();
    let mut select = Select::plain(items, from);
    select.where_clause = (!rest.is_empty()).then_some(Expr::And(rest));
    bind(select, &catalog).expect("the test view binds")
}

/// The view's predicates as equalities of columns.
fn equalities(q: &ViewQuery) -> Vec<Equality> {
    q.predicates
        .iter()
        .map(|p| match p {
            Expr::Compare { op: crate::ast::CompareOp::Eq, left, right } => {
                let side = |e: &Expr| {
                    let (leaf, c) = facts::bound_column(e, &q.leaves).expect("a column");
                    (leaf, column_index(q, leaf, c))
                };
                (side(left), side(right))
            }
            other => panic!("not an equality of columns: {other:?}"),
        })
        .collect()
}

fn show_value(v: i64) -> String {
    if v == NULL {
        "null".into()
    } else {
        v.to_string()
    }
}

/// A row of one table, or a joined row as the leaves' rows one after the other.
fn show_row(row: &Row) -> String {
    row.chunks(COLUMNS.len())
        .map(|c| format!("({})", c.iter().map(|&v| show_value(v)).collect::<Vec<_>>().join(",")))
        .collect::<Vec<_>>()
        .join("")
}

fn show(z: &ZSet) -> String {
    let rows: Vec<String> = z.iter().map(|(r, w)| format!("{}:{w:+}", show_row(r))).collect();
    format!("{{{}}}", rows.join(" "))
}

fn show_rows(rows: &[(Row, i64)]) -> String {
    let rows: Vec<String> = rows.iter().map(|(r, m)| format!("{}:{m:+}", show_row(r))).collect();
    format!("[{}]", rows.join(" "))
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

fn mask_label(n: usize, mask: Mask) -> String {
    (0..n).rev().map(|i| if mask & (1 << i) != 0 { '1' } else { '0' }).collect()
}

fn cases() -> impl Iterator<Item = Case> {
    (0..CASES).map(Case::generate)
}

// ---------------------------------------------------------------------------------------------
// The programs

/// How a term reads a leaf it does not read as a delta.
#[derive(Clone, Copy, PartialEq, Eq)]
enum StateRead {
    New,
    /// new rows plus the delta's deleted rows
    WithDeleted,
    /// the delta's rows alone
    DeltaRows,
}

/// An inclusion-exclusion plan's run terms over the case, each with its rows: each leaf of a
/// term's mask read as its delta, the others as `read(term, leaf)` says. Asserts that every
/// skipped term is empty.
fn inclusion_exclusion(
    case: &Case,
    plan: &[(Term, TermStatus)],
    read: &dyn Fn(Term, usize) -> StateRead,
) -> Vec<(Term, ZSet)> {
    let n = case.n();
    let inputs = |term: Term| -> Vec<Vec<Read>> {
        (0..n)
            .map(|i| match (term.mask & (1 << i) != 0, read(term, i)) {
                (true, _) => case.delta_of(i),
                (false, StateRead::New) => case.new_of(i),
                (false, StateRead::WithDeleted) => case.with_deleted_of(i),
                (false, StateRead::DeltaRows) => case.delta_rows_of(i),
            })
            .collect()
    };
    let mut out = Vec::new();
    for &(term, status) in plan {
        match status {
            TermStatus::Run => out.push((term, term_rows(term, &inputs(term), &case.eqs))),
            TermStatus::EmptySkipped => {
                let rows = term_rows(term, &inputs(term), &case.eqs);
                let mask = mask_label(n, term.mask);
                assert!(rows.is_empty(), "the skipped term {mask} is not empty: {}\n{}", show(&rows), case.describe());
            }
            TermStatus::FkPruned => {}
        }
    }
    out
}

/// Inclusion-exclusion terms with their masks and signs written out.
fn labeled(n: usize, terms: Vec<(Term, ZSet)>) -> Vec<(String, ZSet)> {
    terms.into_iter().map(|(t, z)| (format!("mask {} sign {:+}", mask_label(n, t.mask), t.sign), z)).collect()
}

/// The N-term rule's run terms in `order`: each term's leaves at `telescope::states`.
fn n_term(case: &Case, order: &[usize], terms: &[(usize, TermStatus)]) -> Vec<(String, ZSet)> {
    terms
        .iter()
        .filter(|(_, s)| *s == TermStatus::Run)
        .map(|&(leaf, _)| {
            let states = telescope::states(order, leaf);
            let inputs: Vec<Vec<Read>> = states
                .iter()
                .enumerate()
                .map(|(j, s)| match s {
                    LeafState::New => case.new_of(j),
                    LeafState::Delta => case.delta_of(j),
                    LeafState::Old => case.old_of(j),
                })
                .collect();
            let label = format!("term of {} in order {order:?}: {states:?}", alias(leaf));
            (label, term_rows(Term { mask: 1 << leaf, sign: 1 }, &inputs, &case.eqs))
        })
        .collect()
}

/// The combined join of a plan's run terms, as a refresh builds it (`run_rows`): each leaf's
/// current state (with its deleted rows for a leaf in `with_deleted`), its delta where a run
/// term reads it. Its rows by mask.
fn combined(case: &Case, plan: &[(Term, TermStatus)], pruning: &FkPruning) -> BTreeMap<Mask, ZSet> {
    let with_delta = plan.iter().filter(|(_, s)| *s == TermStatus::Run).fold(0, |m, (t, _)| m | t.mask);
    let n = case.n();
    let current: Vec<Vec<Read>> = (0..n)
        .map(|i| if pruning.with_deleted & (1 << i) != 0 { case.with_deleted_of(i) } else { case.new_of(i) })
        .collect();
    let deltas: Vec<Option<Vec<Read>>> =
        (0..n).map(|i| (with_delta & (1 << i) != 0).then(|| case.delta_of(i))).collect();
    combined_rows(&current, &deltas, pruning.skip, &case.eqs)
}

fn combined_labeled(n: usize, rows: &BTreeMap<Mask, ZSet>) -> Vec<(String, ZSet)> {
    rows.iter().map(|(&mask, z)| (format!("combined rows of mask {}", mask_label(n, mask)), z.clone())).collect()
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
        let plan = plan::plan_terms(case.n(), plan::empty_delta_bits(&shapes), 0);
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
        let relations = facts::proven_relations(&case.q, &case.fks);
        assert_eq!(relations.len(), case.fks.len(), "every declared key is proven\n{}", case.describe());
        let empty = plan::empty_delta_bits(&shapes);
        // compile-only: insert-only parents pruned, no key checks
        let skip = facts::fk_skip_bits(&relations, &shapes);
        let plan = plan::plan_terms(case.n(), empty, skip);
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
        let plan = plan::plan_terms(case.n(), empty, pruning.skip);
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
        let relations = facts::proven_relations(&case.q, &case.fks);
        let pruning = case.runtime_pruning(&relations);
        let covered: Vec<usize> =
            facts::coverage_checks(&relations, &shapes).into_iter().filter(|&i| case.covers(&relations[i])).collect();
        let plan = plan::plan_terms(case.n(), plan::empty_delta_bits(&shapes), pruning.skip);
        let mut delta_rows = false;
        let read = |term: Term, i: usize| {
            if facts::reads_delta_rows(&relations, &covered, pruning.with_deleted, term.mask, i).is_some() {
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
        let terms = telescope::terms(&order, &case.shapes(), &[]);
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
        let relations = facts::proven_relations(&case.q, &case.fks);
        let order = facts::leaf_order(case.n(), &relations);
        let terms = telescope::terms(&order, &shapes, &relations);
        expect_delta(&case, "N-term rule with FK pruning", &n_term(&case, &order, &terms));
        for &(leaf, status) in &terms {
            if status == TermStatus::FkPruned {
                // the term is empty since its delta leaf joins a child at its old state
                let r = telescope::pruning_relation(&order, leaf, &shapes, &relations).expect("a pruning relation");
                if telescope::states(&order, leaf)[r.child_leaf] != LeafState::Old {
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
        let empty = plan::empty_delta_bits(&shapes);
        // without foreign keys: every mask with deltas
        let plan = plan::plan_terms(case.n(), empty, 0);
        let rows = combined(&case, &plan, &FkPruning::default());
        expect_delta(&case, "combined join, no pruning", &combined_labeled(case.n(), &rows));
        // a refresh's pruning: masks touching skipped leaves filtered, with-deleted leaves read so
        let relations = facts::proven_relations(&case.q, &case.fks);
        let pruning = case.runtime_pruning(&relations);
        let plan = plan::plan_terms(case.n(), empty, pruning.skip);
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
        for term in plan::all_terms(n) {
            let sql = render::term_select(&case.q, term, &sources);
            let weight: Vec<String> = std::iter::once(term.sign.to_string())
                .chain(plan::leaves_of(term.mask).map(|i| format!("{}.{m}", render::ident(&alias(i)))))
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
