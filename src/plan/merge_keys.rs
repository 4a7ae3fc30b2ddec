//! Which group keys the merge of a grouped view's delta has to match on.
//!
//! A view like TPC-H Q10 groups by a customer's key and by attributes of that customer
//! (`GROUP BY c_custkey, c_name, c_address, ...`, plus `n_name` of the customer's nation). The
//! key determines the rest, so the stored row of a group is found by the key alone: the merge
//! joins the stored result on one BIGINT instead of seven columns, long strings among them
//! (about a third of Q10's merge at SF1).
//!
//! The rule. Take a leaf `L` whose table has a unique key `K` (the referenced columns of a
//! foreign key, from the catalog or a RELY declaration), every column of `K` equal, through the
//! view's equality predicates, to a group key. Grow the set `D` of leaves determined by `L`: a
//! leaf `P` joins `D` when every column of a unique key of `P` is equal to a column of a leaf
//! already in `D` (one row of `D` meets at most one row of `P`). If every group key is a column
//! of a leaf in `D`, then in any one state of the tables a value of the keys that cover `K`
//! determines the whole group, so the stored rows are unique on them. An equality predicate also
//! keeps those keys from being NULL.
//!
//! Across a refresh the stored rows come from the old state and the delta's groups from both,
//! so the dependency must hold over the two at once: it does when no leaf of `D` deleted
//! anything (a row of `D` that changed would give one key two sets of attributes). The refresh
//! checks that with the delta statistics it has (`MergeKeys::usable`) and otherwise matches on
//! every key.

use crate::ast::{CompareOp, Expr};
use crate::ir::{Leaf, Shape, ViewQuery};
use crate::plan::fk_pruning::ForeignKey;

/// The group keys a merge may match on, and the leaves whose rows they determine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergeKeys {
    /// Positions of the group keys to match on (a strict subset of the keys).
    pub matched: Vec<usize>,
    /// Bit `i` set: leaf `i`'s rows are determined by the matched keys.
    pub determined: u32,
}

impl MergeKeys {
    /// Whether the narrowed match is exact for a refresh whose leaf `i` deleted rows when
    /// `deletes(i)`: no determined leaf may have deleted anything.
    pub fn usable(&self, deletes: impl Fn(usize) -> bool) -> bool {
        (0..32).filter(|i| self.determined & (1 << i) != 0).all(|i| !deletes(i))
    }
}

/// A column of a leaf, by name as the catalog spells it (compared case-insensitively).
type Column = (usize, String);

/// The smallest set of group keys that determines the others (see the module comment), or None
/// when every key is needed. Only for a plain GROUP BY of a join (no grouping sets, no set
/// operation).
pub fn merge_keys(q: &ViewQuery, fks: &[ForeignKey]) -> Option<MergeKeys> {
    let Shape::Grouped { keys, sets: None, .. } = &q.shape else { return None };
    if keys.len() < 2 || !q.branches.is_empty() || q.compared.is_some() || q.leaves.len() > 32 {
        return None;
    }
    let classes = Classes::of(q);
    let key_columns: Vec<Option<Column>> = keys.iter().map(|k| column_of(k, &q.leaves)).collect();
    let unique = unique_keys(q, fks);
    let mut best: Option<MergeKeys> = None;
    for (leaf, key) in &unique {
        // Each column of the key must be a group key (through an equality), which also keeps it
        // from being NULL in any row of the view.
        let mut matched = Vec::new();
        for c in key {
            let col = (*leaf, c.clone());
            if !classes.joined(&col) {
                matched.clear();
                break;
            }
            match key_columns.iter().position(|k| k.as_ref().is_some_and(|k| classes.same(k, &col))) {
                Some(i) if !matched.contains(&i) => matched.push(i),
                Some(_) => {}
                None => {
                    matched.clear();
                    break;
                }
            }
        }
        if matched.is_empty() || matched.len() >= keys.len() {
            continue;
        }
        let determined = determined_leaves(*leaf, &unique, &classes);
        let all_determined = key_columns
            .iter()
            .all(|k| k.as_ref().is_some_and(|k| classes.members(k).iter().any(|(l, _)| determined & (1 << l) != 0)));
        if all_determined && best.as_ref().is_none_or(|b| matched.len() < b.matched.len()) {
            matched.sort_unstable();
            best = Some(MergeKeys { matched, determined });
        }
    }
    best
}

/// Group attributes looked up for new groups only (TPC-H Q10 again). Where the matched keys
/// determine leaves that only give group attributes, a refresh in which those leaves did not
/// change leaves them out of its terms: the terms group the delta by the matched keys, read
/// from the column of a kept leaf that the view's join equates with them, and the stored
/// result supplies the attributes of the groups it has. Only the groups it does not have are
/// looked up in the left-out leaves, so those are read for a handful of keys instead of whole
/// (Q10 at SF1 decoded every string of `customer` on every refresh: 8 of its 10 ms).
///
/// Why it is exact, with `D` the left-out leaves, unchanged in the refresh. Every predicate that
/// reads `D` and a kept leaf is one equality between a column of a kept leaf and a column of `D`
/// equal to a matched key, so whether a row of the kept leaves joins `D`, and with which
/// attributes, depends on its key alone; a key meets at most one row of `D` (unique keys, as for
/// `MergeKeys`). A stored group's key met its row of `D` in the old state, which is the current
/// one: its delta rows are exactly the kept rows with that key. A key not stored becomes a group
/// only if the lookup finds its row of `D` (with the predicates among `D`); a key that meets
/// none (a NULL, a dangling reference) is dropped, as the join drops it.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupLookup {
    /// Bit `i` set: leaf `i` is left out of the terms (the leaves the matched keys determine).
    pub dropped: u32,
    /// One per matched key, in key order.
    pub links: Vec<Link>,
}

/// How a matched group key is read without the left-out leaves.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    /// The key's position among the group keys.
    pub position: usize,
    /// The column of a left-out leaf the key equals (the lookup's side of the equality).
    pub looked_up: Expr,
    /// The column of a kept leaf it equals, which the terms group by instead.
    pub substitute: Expr,
}

/// The leaves an expression reads, as a mask.
pub fn leaves_read(e: &Expr) -> u32 {
    let mut mask = 0u32;
    e.visit(&mut |x| {
        if let Expr::Bound { leaf, .. } = x {
            mask |= 1u32.checked_shl(*leaf as u32).unwrap_or(0);
        }
    });
    mask
}

/// The lookup of `m`'s determined leaves (see `GroupLookup`), or None where the view reads them
/// for more than group attributes: in an aggregate, in a predicate other than the one equality
/// per matched key, or in every leaf.
pub fn group_lookup(q: &ViewQuery, m: &MergeKeys) -> Option<GroupLookup> {
    let Shape::Grouped { keys, aggregates, sets: None, .. } = &q.shape else { return None };
    let dropped = m.determined;
    let all = if q.leaves.len() >= 32 { u32::MAX } else { (1u32 << q.leaves.len()) - 1 };
    if dropped & all == all || !q.branches.is_empty() || q.compared.is_some() {
        return None;
    }
    let reads_dropped = |e: &Expr| leaves_read(e) & dropped != 0;
    if aggregates.iter().any(|a| a.call.is_some() || a.arg.as_ref().is_some_and(reads_dropped)) {
        return None;
    }
    // Every other group key is an attribute of the left-out leaves.
    if keys.iter().enumerate().any(|(i, k)| !m.matched.contains(&i) && leaves_read(k) & !dropped != 0) {
        return None;
    }
    let classes = Classes::of(q);
    let class_of = |c: &Column| classes.classes.iter().position(|k| k.contains(c));
    let mut links = Vec::new();
    for &position in &m.matched {
        let key = column_of(&keys[position], &q.leaves)?;
        if !matches!(keys[position], Expr::Bound { .. }) {
            return None; // a cast key would need the cast on its substitute
        }
        let class = class_of(&key)?;
        let mut found = None;
        for p in &q.predicates {
            let Some((a, b, ea, eb)) = equated_columns(p, &q.leaves) else { continue };
            if class_of(&a) != Some(class) || (dropped & (1 << a.0) != 0) == (dropped & (1 << b.0) != 0) {
                continue;
            }
            let (looked_up, substitute) = if dropped & (1 << a.0) != 0 { (ea, eb) } else { (eb, ea) };
            if found.is_some() {
                return None; // two kept columns equal to one key: their equality would be lost
            }
            found = Some(Link { position, looked_up: looked_up.clone(), substitute: substitute.clone() });
        }
        let link = found?;
        // The stored key keeps the type of the view's column; its substitute must have it too.
        if type_of(&link.substitute, &q.leaves)? != type_of(&keys[position], &q.leaves)? {
            return None;
        }
        links.push(link);
    }
    // Every predicate across the two sides is one of the links.
    let crossing = q.predicates.iter().filter(|p| {
        let read = leaves_read(p);
        read & dropped != 0 && read & !dropped != 0
    });
    if crossing.count() != links.len() {
        return None;
    }
    Some(GroupLookup { dropped, links })
}

/// The two bound columns a plain equality predicate compares, with their expressions.
fn equated_columns<'a>(p: &'a Expr, leaves: &[Leaf]) -> Option<(Column, Column, &'a Expr, &'a Expr)> {
    let Expr::Compare { op: CompareOp::Eq, left, right } = p else { return None };
    if !matches!(**left, Expr::Bound { .. }) || !matches!(**right, Expr::Bound { .. }) {
        return None;
    }
    Some((column_of(left, leaves)?, column_of(right, leaves)?, left, right))
}

/// The type of a bound column.
fn type_of(e: &Expr, leaves: &[Leaf]) -> Option<String> {
    let Expr::Bound { leaf, column } = e else { return None };
    leaves.get(*leaf)?.columns.iter().find(|c| c.name.eq_ignore_ascii_case(column)).map(|c| c.ty.to_uppercase())
}

/// The leaves whose rows one row of `leaf` determines: `leaf`, then every leaf with a unique key
/// whose columns all equal columns of leaves already determined.
fn determined_leaves(leaf: usize, unique: &[(usize, Vec<String>)], classes: &Classes) -> u32 {
    let mut d = 1u32 << leaf;
    loop {
        let before = d;
        for (p, key) in unique {
            if d & (1 << p) != 0 {
                continue;
            }
            let met = key
                .iter()
                .all(|c| classes.members(&(*p, c.clone())).iter().any(|(l, _)| *l != *p && d & (1 << l) != 0));
            if met {
                d |= 1 << p;
            }
        }
        if d == before {
            return d;
        }
    }
}

/// Unique keys of the view's leaves: the referenced columns of every foreign key whose parent is
/// the leaf's table.
fn unique_keys(q: &ViewQuery, fks: &[ForeignKey]) -> Vec<(usize, Vec<String>)> {
    let mut out: Vec<(usize, Vec<String>)> = Vec::new();
    for fk in fks.iter().filter(|fk| !fk.parent_columns.is_empty()) {
        for (i, _) in q.leaves.iter().enumerate().filter(|(_, l)| l.table == fk.parent) {
            let key: Vec<String> = fk.parent_columns.iter().map(|c| c.to_lowercase()).collect();
            if !out.iter().any(|(l, k)| *l == i && *k == key) {
                out.push((i, key));
            }
        }
    }
    out
}

/// A bound column (through lossless casts, which are one-to-one).
fn column_of(e: &Expr, leaves: &[Leaf]) -> Option<Column> {
    crate::plan::fk_pruning::bound_column(e, leaves).map(|(l, c)| (l, c.to_lowercase()))
}

/// Classes of columns made equal by the view's top-level equality predicates.
struct Classes {
    classes: Vec<Vec<Column>>,
}

impl Classes {
    fn of(q: &ViewQuery) -> Classes {
        let mut classes: Vec<Vec<Column>> = Vec::new();
        for p in &q.predicates {
            let Expr::Compare { op: CompareOp::Eq, left, right } = p else { continue };
            let (Some(a), Some(b)) = (column_of(left, &q.leaves), column_of(right, &q.leaves)) else { continue };
            let ia = classes.iter().position(|c| c.contains(&a));
            let ib = classes.iter().position(|c| c.contains(&b));
            match (ia, ib) {
                (Some(x), Some(y)) if x == y => {}
                (Some(x), Some(y)) => {
                    let merged = classes.remove(x.max(y));
                    classes[x.min(y)].extend(merged);
                }
                (Some(x), None) => classes[x].push(b),
                (None, Some(y)) => classes[y].push(a),
                (None, None) => classes.push(vec![a, b]),
            }
        }
        Classes { classes }
    }

    /// The columns equal to `c` (itself included).
    fn members(&self, c: &Column) -> Vec<Column> {
        self.classes.iter().find(|k| k.contains(c)).cloned().unwrap_or_else(|| vec![c.clone()])
    }

    fn same(&self, a: &Column, b: &Column) -> bool {
        a == b || self.classes.iter().any(|k| k.contains(a) && k.contains(b))
    }

    /// Whether an equality predicate compares `c` (so no row of the view has it NULL).
    fn joined(&self, c: &Column) -> bool {
        self.classes.iter().any(|k| k.contains(c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::{Select, SelectItem};
    use crate::front::bind::bind;
    use crate::front::bind::tests::{col, eq, join, star_select, table, TestCatalog};
    use crate::ir::TableId;
    use crate::plan::fk_pruning::FactSource;

    fn fk(child: &str, cc: &str, parent: &str, pc: &str) -> ForeignKey {
        let id = |n: &str| TableId { catalog: "memory".into(), schema: "main".into(), name: n.into() };
        ForeignKey {
            child: id(child),
            child_columns: vec![cc.into()],
            parent: id(parent),
            parent_columns: vec![pc.into()],
            source: FactSource::Catalog,
        }
    }

    /// The star (fact f, product p, store s) grouped by `keys`.
    fn grouped(keys: Vec<Expr>) -> ViewQuery {
        let mut s: Select = star_select();
        s.items = keys.iter().map(|k| SelectItem { expr: k.clone(), alias: None }).collect();
        s.items.push(star_select().items[1].clone());
        s.group_by = keys;
        bind(s, &TestCatalog::star()).unwrap()
    }

    fn star_fks() -> Vec<ForeignKey> {
        vec![fk("fact", "pid", "product", "pid"), fk("fact", "sid", "store", "sid")]
    }

    #[test]
    fn a_parent_key_determines_its_attributes() {
        // GROUP BY p.pid, p.name: product's key determines its name; leaves f = 0, p = 1, s = 2.
        let q = grouped(vec![col("p", "pid"), col("p", "name")]);
        assert_eq!(merge_keys(&q, &star_fks()), Some(MergeKeys { matched: vec![0], determined: 0b010 }));
        // The key written as the fact's column (equal to it by the join) works the same.
        let q = grouped(vec![col("p", "name"), col("f", "pid")]);
        assert_eq!(merge_keys(&q, &star_fks()).map(|m| m.matched), Some(vec![1]));
    }

    #[test]
    fn attributes_of_another_leaf_need_a_key_path() {
        // p.pid determines nothing about the store: both keys are needed.
        let q = grouped(vec![col("p", "pid"), col("s", "city")]);
        assert_eq!(merge_keys(&q, &star_fks()), None);
        // Without the foreign key nothing says pid is unique in product.
        let q = grouped(vec![col("p", "pid"), col("p", "name")]);
        assert_eq!(merge_keys(&q, &[fk("fact", "sid", "store", "sid")]), None);
    }

    #[test]
    fn a_chain_of_keys_determines_the_leaves_behind_it() {
        // fact f -> product p -> store s (p.sid references s.sid): GROUP BY p.pid, p.name, s.city
        // matches on p.pid alone, and a deleting store keeps it from being used.
        let mut cat = TestCatalog::star();
        cat.tables.insert("product".into(), vec![("pid", "INTEGER"), ("name", "VARCHAR"), ("sid", "INTEGER")]);
        let mut s = star_select();
        s.from = join(
            join(table("fact", "f"), table("product", "p"), eq(col("f", "pid"), col("p", "pid"))),
            table("store", "s"),
            eq(col("p", "sid"), col("s", "sid")),
        );
        let keys = vec![col("p", "pid"), col("p", "name"), col("s", "city")];
        s.items = keys.iter().map(|k| SelectItem { expr: k.clone(), alias: None }).collect();
        s.items.push(star_select().items[1].clone());
        s.group_by = keys;
        let q = bind(s, &cat).unwrap();
        let fks = vec![fk("fact", "pid", "product", "pid"), fk("product", "sid", "store", "sid")];
        let m = merge_keys(&q, &fks).unwrap();
        assert_eq!(m, MergeKeys { matched: vec![0], determined: 0b110 });
        assert!(m.usable(|leaf| leaf == 0), "the fact deleting is fine");
        assert!(!m.usable(|leaf| leaf == 2), "a store that deleted (or updated) is not");
    }

    #[test]
    fn attribute_leaves_are_looked_up_when_one_equality_links_them() {
        // GROUP BY p.pid, p.name over fact f (0), product p (1), store s (2): the terms read the
        // fact's pid instead of the product's and leave the product out.
        let q = grouped(vec![col("p", "pid"), col("p", "name")]);
        let m = merge_keys(&q, &star_fks()).unwrap();
        let g = group_lookup(&q, &m).expect("a lookup");
        assert_eq!(g.dropped, 0b010);
        assert_eq!(g.links.len(), 1);
        assert_eq!(g.links[0].position, 0);
        assert_eq!(g.links[0].substitute, Expr::Bound { leaf: 0, column: "pid".into() });
        assert_eq!(g.links[0].looked_up, Expr::Bound { leaf: 1, column: "pid".into() });
        // The key written as the fact's column: it is its own substitute.
        let q = grouped(vec![col("p", "name"), col("f", "pid")]);
        let m = merge_keys(&q, &star_fks()).unwrap();
        let g = group_lookup(&q, &m).expect("a lookup");
        assert_eq!(
            (g.links[0].position, g.links[0].substitute.clone()),
            (1, Expr::Bound { leaf: 0, column: "pid".into() })
        );
    }

    #[test]
    fn one_key_is_already_the_narrowest() {
        let q = grouped(vec![col("p", "pid")]);
        assert_eq!(merge_keys(&q, &star_fks()), None);
    }
}
