//! The random cases: a join of 2 to 4 leaves over small tables that satisfy their declared
//! keys, each table's batch and delta, and what a refresh would check on the data (its key
//! checks, coverage and pruning).

use std::collections::{BTreeMap, BTreeSet};

use crate::ir::ViewQuery;
use crate::plan::fk_pruning::{self, FactSource, FkPruning, ForeignKey, KeyCheck, ProvenRelation};
use crate::plan::terms::DeltaShape;

use super::show::{show, show_rows};
use super::view::{alias, bind_view, column_index, equalities, reference, table_id, Edge, COLUMNS, KEY, VALUE};
use super::zset::{copies, delta_reads, join, minus, plus, state, zset, Equality, Read, Row, ZSet, NULL};

/// A tiny deterministic random generator (xorshift64).
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Rng {
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

    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
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

pub(super) struct Case {
    pub(super) seed: u64,
    topology: Topology,
    leaf_table: Vec<usize>,
    edges: Vec<Edge>,
    batches: Vec<Batch>,
    pub(super) q: ViewQuery,
    pub(super) fks: Vec<ForeignKey>,
    pub(super) eqs: Vec<Equality>,
    /// Per table: its state before and after the batch, and its delta as physical rows.
    old: Vec<ZSet>,
    new: Vec<ZSet>,
    delta: Vec<Vec<(Row, i64)>>,
    /// Join(new) - Join(old).
    pub(super) want: ZSet,
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
    pub(super) fn generate(seed: u64) -> Case {
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

    pub(super) fn n(&self) -> usize {
        self.leaf_table.len()
    }

    pub(super) fn old_of(&self, leaf: usize) -> Vec<Read> {
        state(&self.old[self.leaf_table[leaf]])
    }

    pub(super) fn new_of(&self, leaf: usize) -> Vec<Read> {
        state(&self.new[self.leaf_table[leaf]])
    }

    pub(super) fn delta_of(&self, leaf: usize) -> Vec<Read> {
        delta_reads(&self.delta[self.leaf_table[leaf]])
    }

    /// The leaf's new rows plus its delta's deleted rows, each read once
    /// (`render::with_deleted_rows`).
    pub(super) fn with_deleted_of(&self, leaf: usize) -> Vec<Read> {
        let deleted = self.delta[self.leaf_table[leaf]].iter().filter(|(_, m)| *m < 0).map(|(row, _)| (row.clone(), 1));
        state(&plus(&self.new[self.leaf_table[leaf]], &zset(deleted)))
    }

    /// The delta's rows, each read once, as a state (`render::delta_rows_as_state`).
    pub(super) fn delta_rows_of(&self, leaf: usize) -> Vec<Read> {
        state(&zset(self.delta[self.leaf_table[leaf]].iter().map(|(row, _)| (row.clone(), 1))))
    }

    /// Each leaf's delta shape, from its delta's rows and deleted rows (`DeltaStats::shape`).
    pub(super) fn shapes(&self) -> Vec<DeltaShape> {
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
    pub(super) fn key_check_passes(&self, k: &KeyCheck) -> bool {
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
    pub(super) fn covers(&self, r: &ProvenRelation) -> bool {
        let refs: Vec<usize> = r.fk.child_columns.iter().map(|c| self.column(r.child_leaf, c)).collect();
        let keys: Vec<usize> = r.fk.parent_columns.iter().map(|c| self.column(r.parent_leaf, c)).collect();
        let parent = &self.delta[self.leaf_table[r.parent_leaf]];
        self.delta[self.leaf_table[r.child_leaf]].iter().all(|(c, _)| {
            refs.iter().any(|&rc| c[rc] == NULL)
                || parent.iter().any(|(p, _)| refs.iter().zip(&keys).all(|(&rc, &pc)| c[rc] == p[pc]))
        })
    }

    /// The pruning a refresh decides (`fk_pruning::fk_pruning`), with the key checks it runs
    /// (`fk_pruning::key_checks`) evaluated on the data.
    pub(super) fn runtime_pruning(&self, relations: &[ProvenRelation]) -> FkPruning {
        let shapes = self.shapes();
        let checks = fk_pruning::key_checks(relations, &shapes);
        fk_pruning::fk_pruning(relations, &shapes, |k| checks.contains(k) && self.key_check_passes(k))
    }

    pub(super) fn describe(&self) -> String {
        let mut s = format!("seed {}: {:?} of {} leaves:", self.seed, self.topology, self.n());
        for (i, t) in self.leaf_table.iter().enumerate() {
            s += &format!(" {}=t{t}", alias(i));
        }
        s += "\njoins:";
        for e in &self.edges {
            let fk = e.fk.map_or("no foreign key".to_string(), |f| format!("foreign key [{}]", f.as_str()));
            s += &format!(" {}.r{} = {}.k ({fk});", alias(e.child), e.slot, alias(e.parent));
        }
        s += &format!("\nproven relations: {:?}", relation_pairs(&fk_pruning::proven_relations(&self.q, &self.fks)));
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

pub(super) fn relation_pairs(relations: &[ProvenRelation]) -> Vec<String> {
    relations.iter().map(|r| format!("{} -> {}", alias(r.child_leaf), alias(r.parent_leaf))).collect()
}
