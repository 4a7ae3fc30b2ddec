//! Stage 3: what is known about the leaves of a view that lets the planner drop terms.
//!
//! A foreign key R(c1..ck) -> S(p1..pk) between two leaves of the join is *proven* when the
//! view's inner-join predicates equate every Ri.ci with S.pi. If S's delta since the last
//! refresh is insert-only, every term that reads S as a delta sums to zero: old rows of R can
//! only reference keys S had before, and the parts with ΔR cancel between the term with and
//! without R's bit. So S's bit goes into the FK skip mask.

use serde::{Deserialize, Serialize};

use crate::ast::{CompareOp, Expr};
use crate::ir::{Leaf, TableId, ViewQuery};
use crate::plan::{DeltaShape, Mask};

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
fn column_of<'a>(e: &'a Expr, leaves: &[Leaf]) -> Option<(usize, &'a str)> {
    match e {
        Expr::Bound { leaf, column } => Some((*leaf, column)),
        Expr::Cast { expr, ty, try_cast: false } => {
            let (leaf, column) = column_of(expr, leaves)?;
            let from = &leaves.get(leaf)?.columns.iter().find(|c| c.name.eq_ignore_ascii_case(column))?.ty;
            lossless_cast(from, &crate::render::type_name(ty)).then_some((leaf, column))
        }
        _ => None,
    }
}

fn equates(p: &Expr, leaves: &[Leaf], a: (usize, &str), b: (usize, &str)) -> bool {
    let is = |e: &Expr, (leaf, col): (usize, &str)| {
        column_of(e, leaves).is_some_and(|(l, c)| l == leaf && c.eq_ignore_ascii_case(col))
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

/// The FK skip mask: the parent leaves of proven relations whose delta is insert-only.
pub fn fk_skip_bits(relations: &[ProvenRelation], shapes: &[DeltaShape]) -> Mask {
    relations
        .iter()
        .filter(|r| shapes.get(r.parent_leaf).is_some_and(|s| s.insert_only()))
        .fold(0, |m, r| m | (1 << r.parent_leaf))
}

/// The relations that justify skipping a leaf, for explain's reasons.
pub fn reasons_for(relations: &[ProvenRelation], leaf: usize) -> Vec<&ProvenRelation> {
    relations.iter().filter(|r| r.parent_leaf == leaf).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bind::bind;
    use crate::bind::tests::{star_select, TestCatalog};

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
                    *left = Box::new(Expr::Cast { expr: left.clone(), ty: ty.clone(), try_cast: false });
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
}
