//! The test tables and the view over them: the tables' columns, the joins between leaves, and
//! the view bound by `bind::bind` against the test catalog, its predicates read back as equalities.

use crate::ast::{CompareOp, Expr, Select, SelectItem};
use crate::front::bind::bind;
use crate::front::bind::tests::{col, eq, join as join_on, table, TestCatalog};
use crate::ir::{TableId, ViewQuery};
use crate::plan::fk_pruning::{self, FactSource};

use super::zset::Equality;

/// The columns of every test table, in catalog order: a key, a value, three references.
pub(super) const COLUMNS: [&str; 5] = ["k", "v", "r0", "r1", "r2"];
pub(super) const KEY: usize = 0;
pub(super) const VALUE: usize = 1;

pub(super) fn reference(slot: usize) -> usize {
    2 + slot
}

/// A join of the view: `child`'s column r<slot> equals `parent`'s key, with a foreign key
/// declared between their tables when `fk` is set.
#[derive(Clone, Debug)]
pub(super) struct Edge {
    pub(super) child: usize,
    pub(super) slot: usize,
    pub(super) parent: usize,
    pub(super) fk: Option<FactSource>,
}

pub(super) fn table_id(t: usize) -> TableId {
    TableId { catalog: "memory".into(), schema: "main".into(), name: format!("t{t}") }
}

pub(super) fn alias(leaf: usize) -> String {
    format!("a{leaf}")
}

pub(super) fn column_index(q: &ViewQuery, leaf: usize, name: &str) -> usize {
    let names: Vec<&str> = q.leaves[leaf].columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, COLUMNS, "the test tables' columns");
    COLUMNS.iter().position(|c| c.eq_ignore_ascii_case(name)).unwrap_or_else(|| panic!("no column {name}"))
}

/// The view over the leaves: each leaf's key and value, the edges as its join conditions (the
/// first edge to a leaf in its ON, the others in the WHERE clause), bound by `bind::bind`.
pub(super) fn bind_view(leaf_table: &[usize], edges: &[Edge]) -> ViewQuery {
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
pub(super) fn equalities(q: &ViewQuery) -> Vec<Equality> {
    q.predicates
        .iter()
        .map(|p| match p {
            Expr::Compare { op: CompareOp::Eq, left, right } => {
                let side = |e: &Expr| {
                    let (leaf, c) = fk_pruning::bound_column(e, &q.leaves).expect("a column");
                    (leaf, column_index(q, leaf, c))
                };
                (side(left), side(right))
            }
            other => panic!("not an equality of columns: {other:?}"),
        })
        .collect()
}
