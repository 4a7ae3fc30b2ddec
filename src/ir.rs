//! The bound form of a view query: what the planner, the renderer and change capture work from.

use serde::{Deserialize, Serialize};

use crate::ast::{AggCall, Compared, Expr, Presentation};

/// A base table's fully qualified identity.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TableId {
    pub catalog: String,
    pub schema: String,
    pub name: String,
}

impl TableId {
    /// `catalog.schema.name` unquoted: how messages and metadata rows name the table.
    pub fn dotted(&self) -> String {
        format!("{}.{}.{}", self.catalog, self.schema, self.name)
    }
}

/// One occurrence of a base table in the join. A table joined twice is two leaves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Leaf {
    pub alias: String,
    pub table: TableId,
    /// All columns of the table, in catalog order, with their DuckDB types.
    pub columns: Vec<ColumnDef>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnDef {
    pub name: String,
    pub ty: String,
    /// The column's collation (`NOCASE`, `NOACCENT.NOCASE`, ...): DuckDB compares, groups and
    /// joins its values under it, so values it calls equal may still be different values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collation: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AggFunc {
    Sum,
    CountStar,
    Count,
    Avg,
    /// MIN and MAX: merged with LEAST/GREATEST while every delta is insert-only; a refresh
    /// whose deltas delete (or update) recomputes the groups its terms touch, since a removed
    /// extremum cannot be taken back from the stored one.
    Min,
    Max,
    /// VAR_SAMP/VAR_POP/STDDEV_SAMP/STDDEV_POP (and `variance`, `stddev`) of an exact input
    /// (`VarianceInput`): the count, sum and sum of squares are kept exactly (HUGEINT) and merged
    /// by addition; the view computes n·Σx² - (Σx)² exactly and divides once in DOUBLE. Other
    /// inputs (DOUBLE, BIGINT, wide DECIMAL) are `Recomputed`.
    Variance {
        population: bool,
        root: bool,
    },
    /// An aggregate without a delta rule (LIST, STRING_AGG, MEDIAN, COUNT(DISTINCT x), ...;
    /// `Aggregate::call` holds it): stored as its finished value per group, and recomputed for
    /// every group a delta touches (strategy `group_recompute`).
    Recomputed,
}

/// An aggregate of the view, with its argument bound to leaves.
#[derive(Clone, Debug, PartialEq)]
pub struct Aggregate {
    pub func: AggFunc,
    pub arg: Option<Expr>,
    /// DuckDB's type of the argument (None where the catalog could not tell): decides how its
    /// signed sum is kept exact (see `SumInput`).
    pub arg_type: Option<String>,
    /// `AggFunc::Recomputed`: the whole call (inputs bound to leaves); None otherwise.
    pub call: Option<AggCall>,
}

impl Aggregate {
    /// How the aggregate is named to users: `LIST()`, `COUNT(DISTINCT)`, `MIN()`.
    pub fn display(&self) -> String {
        let name = match (&self.call, self.func) {
            (Some(c), _) => c.name.to_uppercase(),
            (None, AggFunc::Sum) => "SUM".into(),
            (None, AggFunc::CountStar | AggFunc::Count) => "COUNT".into(),
            (None, AggFunc::Avg) => "AVG".into(),
            (None, AggFunc::Min) => "MIN".into(),
            (None, AggFunc::Max) => "MAX".into(),
            (None, AggFunc::Recomputed) => "?".into(),
            (None, AggFunc::Variance { population, root }) => {
                format!("{}_{}", if root { "STDDEV" } else { "VAR" }, if population { "POP" } else { "SAMP" })
            }
        };
        match &self.call {
            Some(c) if c.distinct => format!("{name}(DISTINCT)"),
            Some(c) if c.filter.is_some() => format!("{name}() FILTER"),
            _ => format!("{name}()"),
        }
    }
}

/// How the argument of a SUM/AVG is summed, by its DuckDB type (DuckDB's own SUM: integers
/// into HUGEINT, DECIMAL(p,s) into DECIMAL(38,s), FLOAT/DOUBLE/UHUGEINT into DOUBLE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SumInput {
    /// BOOLEAN and the integer types up to 64 bits: summed as HUGEINT, which no product with a
    /// weight can overflow.
    Integer,
    /// HUGEINT: summed as HUGEINT; the rows of positive and of negative weight are summed apart
    /// (a deleted minimum value cannot be negated within HUGEINT).
    Hugeint,
    /// DECIMAL: summed as DECIMAL(38,s), whose sum DuckDB lets grow past 38 digits.
    Decimal,
    /// FLOAT, DOUBLE, UHUGEINT: summed as DOUBLE, with +inf, -inf and NaN inputs counted apart.
    Float,
    /// Anything else (or an unknown type): the weighted sum as such.
    Other,
}

impl SumInput {
    pub fn of(arg_type: Option<&str>) -> SumInput {
        let Some(t) = arg_type else {
            return SumInput::Other;
        };
        let t = t.trim().to_ascii_uppercase();
        match t.as_str() {
            "BOOLEAN" | "TINYINT" | "SMALLINT" | "INTEGER" | "BIGINT" | "UTINYINT" | "USMALLINT" | "UINTEGER"
            | "UBIGINT" => SumInput::Integer,
            "HUGEINT" => SumInput::Hugeint,
            "FLOAT" | "REAL" | "DOUBLE" | "UHUGEINT" => SumInput::Float,
            _ if t.starts_with("DECIMAL") => SumInput::Decimal,
            _ => SumInput::Other,
        }
    }
}

/// The variance family by name: (population, square root), or None for another aggregate.
pub fn variance_kind(name: &str) -> Option<(bool, bool)> {
    match name.to_ascii_lowercase().as_str() {
        "var_samp" | "variance" => Some((false, false)),
        "var_pop" => Some((true, false)),
        "stddev_samp" | "stddev" => Some((false, true)),
        "stddev_pop" => Some((true, true)),
        _ => None,
    }
}

/// How a variance's input is kept exact: its values as integers (a DECIMAL by its unscaled
/// value, `scale` digits) whose squares and their sums fit HUGEINT for any realistic group
/// (|x| < 2^32, so n·Σx² < 2^127 for up to 2^31 rows, which the view checks). Wider inputs
/// (BIGINT, DECIMAL beyond 9 digits) could overflow the sum of squares, and floating inputs
/// would lose the exactness the rule relies on: None (recomputed per group).
pub fn variance_input(arg_type: Option<&str>) -> Option<u8> {
    let t = arg_type?.trim().to_ascii_uppercase();
    match t.as_str() {
        "BOOLEAN" | "TINYINT" | "SMALLINT" | "INTEGER" | "UTINYINT" | "USMALLINT" | "UINTEGER" => Some(0),
        _ => {
            let inner = t.strip_prefix("DECIMAL(")?.strip_suffix(')')?;
            let (w, s) = inner.split_once(',')?;
            let (w, s): (u8, u8) = (w.trim().parse().ok()?, s.trim().parse().ok()?);
            (w <= 9).then_some(s)
        }
    }
}

/// What the stored result holds per row, beyond the hidden row count.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// GROUP BY (possibly with no keys: one global row). `outputs` are the select items written
    /// over stored columns: `openivm_g<i>` for group key i, `openivm_a<j>` for aggregate j.
    /// `sets`: GROUPING SETS / ROLLUP / CUBE (None: one set of every key).
    Grouped { keys: Vec<Expr>, aggregates: Vec<Aggregate>, outputs: Vec<Expr>, sets: Option<GroupingSets> },
    /// No aggregates: every distinct output row is stored once with its number of copies.
    /// `text_identity[i]` says how output i's stored rows are told apart where DuckDB's
    /// equality on its type is coarser than the value (set from the output types).
    Bag { outputs: Vec<Expr>, text_identity: Vec<Identity> },
}

/// How the stored rows of a bag output are told apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Identity {
    /// By DuckDB's equality, which tells every value apart.
    Equal,
    /// Also by the value's text: INTERVAL '1 month' = '30 days', DOUBLE 0.0 = -0.0.
    Text,
    /// Also by the string's bytes: a collated string ('a' = 'A' under NOCASE), whose text keeps
    /// the collation.
    Bytes,
}

/// The grouping sets of a grouped view (`GROUP BY GROUPING SETS / ROLLUP / CUBE`), each as the
/// positions of the keys it groups by, all distinct. Every input row counts once in every set,
/// with the keys outside the set NULL there; the stored result tells the sets' groups apart by
/// `openivm_gset`, the set's grouping id: DuckDB's `GROUPING_ID` over all keys, in which bit
/// `n-1-i` is set when key `i` is left out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupingSets {
    pub sets: Vec<Vec<usize>>,
    /// The number of keys.
    pub keys: usize,
}

impl GroupingSets {
    /// Grouping ids fit a BIGINT, one bit per key.
    pub const MAX_KEYS: usize = 62;

    /// The grouping id of `set`.
    pub fn id(&self, set: &[usize]) -> i64 {
        (0..self.keys).filter(|i| !set.contains(i)).map(|i| 1i64 << (self.keys - 1 - i)).sum()
    }

    /// The id of the empty set (every key left out) if it is one of the sets: like a global
    /// aggregate's one row, its row exists over no input at all, so it stays at count 0.
    pub fn empty_set_id(&self) -> Option<i64> {
        self.sets.iter().any(|s| s.is_empty()).then(|| self.id(&[]))
    }

    /// `GROUPING(k_1, ..., k_m)` of the rows of the set with grouping id `id`: bit `m-1-j` set
    /// when key `k_j` is left out (DuckDB's and the SQL standard's order).
    pub fn grouping(&self, id: i64, args: &[usize]) -> i64 {
        let left_out = |k: usize| (id >> (self.keys - 1 - k)) & 1;
        args.iter().enumerate().map(|(j, &k)| left_out(k) << (args.len() - 1 - j)).sum()
    }
}

/// The bound view query: leaves, their inner-join and filter predicates, and the shape.
#[derive(Clone, Debug, PartialEq)]
pub struct ViewQuery {
    pub leaves: Vec<Leaf>,
    /// Conjuncts of all ON conditions and the WHERE clause, over bound columns.
    pub predicates: Vec<Expr>,
    pub shape: Shape,
    /// For each leaf, the columns of its table the view reads (catalog spelling, table order).
    pub used_columns: Vec<Vec<String>>,
    /// HAVING (over stored columns), DISTINCT, ORDER BY, LIMIT/OFFSET: applied by the view.
    pub presentation: Presentation<OrderKey>,
    /// The DuckDB views the query reads, expanded into their definitions: a replaced or dropped
    /// one makes the compiled view stale.
    pub source_views: Vec<SourceView>,
    /// The maintained views the query reads as leaves (their visible rows, through a feed like a
    /// table's): `refresh` brings them up to date first.
    pub upstream: Vec<TableId>,
    /// A UNION ALL: the query bound once per branch (see `bind::bind`), each over its own
    /// leaves (numbered from 0 within the branch); `leaves` and `used_columns` are theirs one
    /// after the other, `shape` and `presentation` the first branch's, which every branch
    /// stores alike, and `predicates` is empty. Empty for a query without a union.
    pub branches: Vec<ViewQuery>,
    /// A branch of an INTERSECT / EXCEPT: its operand (0 left, 1 right), projected by its
    /// terms as `openivm_side`.
    pub side: Option<u8>,
    /// An INTERSECT / EXCEPT of the branches: the stored result counts each row's copies per
    /// side (`openivm_c0`, `openivm_c1`) and the view shows what the operation keeps.
    pub compared: Option<Compared>,
}

/// A union's leaves in all: each branch's terms are masks over its own leaves, placed at the
/// branch's offset in one 32-bit mask.
pub const MAX_UNION_LEAVES: usize = 30;

/// A DuckDB view expanded into the view query, with the text of its definition then.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceView {
    pub view: TableId,
    pub sql: String,
}

/// An ORDER BY key of the user-facing view.
#[derive(Clone, Debug, PartialEq)]
pub enum OrderKey {
    /// Output column i (by position or alias).
    Output(usize),
    /// An expression over the stored columns (`openivm_g<i>`, `openivm_a<j>`).
    Stored(Expr),
}

impl ViewQuery {
    /// The branches' leaves: (first leaf, number of leaves) of each; one span of every leaf for
    /// a query without a union.
    pub fn spans(&self) -> Vec<(usize, usize)> {
        if self.branches.is_empty() {
            return vec![(0, self.leaves.len())];
        }
        let mut at = 0;
        self.branches
            .iter()
            .map(|b| {
                let span = (at, b.leaves.len());
                at += b.leaves.len();
                span
            })
            .collect()
    }

    /// The view's inclusion-exclusion terms: 2^n - 1 per branch of n leaves.
    pub fn term_count(&self) -> usize {
        self.spans().iter().map(|(_, n)| (1usize << n) - 1).sum()
    }

    /// Whether every row the view shows is one input row's values as they are: no grouping, no
    /// DISTINCT, no INTERSECT / EXCEPT, in any branch. Otherwise a collated output shows one of
    /// the spellings its collation calls equal, DuckDB's arbitrary choice, which a recompute may
    /// make differently.
    pub fn keeps_spellings(&self) -> bool {
        let one =
            |q: &ViewQuery| matches!(q.shape, Shape::Bag { .. }) && !q.presentation.distinct && q.compared.is_none();
        one(self) && self.branches.iter().all(one)
    }

    pub fn kind(&self) -> &'static str {
        match &self.shape {
            Shape::Grouped { keys, .. } if keys.is_empty() => "aggregate",
            Shape::Grouped { .. } => "grouped_aggregate",
            Shape::Bag { .. } => "bag",
        }
    }

    /// Whether the rows the view shows change only where its stored rows change: each stored row
    /// (a group, or a distinct row with its copies) shows its own rows whatever the others hold,
    /// so the change of what the view shows is what its changed stored rows showed before and
    /// show after. Not with LIMIT/OFFSET (a row enters or leaves the top when another changes),
    /// DISTINCT over groups (two groups may show the same row), or DISTINCT, INTERSECT or EXCEPT
    /// over rows kept apart by their text or bytes (0.0 and -0.0, 'a' and 'A' under NOCASE, are
    /// two stored rows but one value, whose copies follow from both).
    pub fn shows_rows_locally(&self) -> bool {
        let p = &self.presentation;
        if p.limit.is_some() || p.offset.is_some() {
            return false;
        }
        match &self.shape {
            Shape::Grouped { .. } => !p.distinct,
            Shape::Bag { text_identity, .. } => {
                !((p.distinct || self.compared.is_some()) && text_identity.iter().any(|&t| t != Identity::Equal))
            }
        }
    }

    /// Whether a refresh can recompute the groups its delta touches one by one: not with
    /// grouping sets, where an input row counts in a group of every set.
    pub fn groups_recomputable(&self) -> bool {
        !matches!(&self.shape, Shape::Grouped { sets: Some(_), .. })
    }

    /// Whether an aggregate of the view is a MIN or MAX (see `AggFunc::Min`).
    pub fn has_extrema(&self) -> bool {
        matches!(&self.shape, Shape::Grouped { aggregates, .. }
            if aggregates.iter().any(|a| matches!(a.func, AggFunc::Min | AggFunc::Max)))
    }

    /// The aggregates without a delta rule (`AggFunc::Recomputed`): the view's strategy is
    /// `group_recompute` when there is one.
    pub fn recomputed_aggregates(&self) -> Vec<&Aggregate> {
        match &self.shape {
            Shape::Grouped { aggregates, .. } => aggregates.iter().filter(|a| a.func == AggFunc::Recomputed).collect(),
            Shape::Bag { .. } => vec![],
        }
    }

    pub fn aggregate_count(&self) -> usize {
        match &self.shape {
            Shape::Grouped { aggregates, .. } => aggregates.len(),
            Shape::Bag { .. } => 0,
        }
    }

    /// Marks the bag outputs whose DuckDB type (from `types`, in output order: the type and its
    /// collation) needs grouping by text or bytes as well.
    pub fn set_output_types(&mut self, types: &[(String, Option<String>)], needs_text: &dyn Fn(&str) -> bool) {
        if let Shape::Bag { outputs, text_identity } = &mut self.shape {
            *text_identity = (0..outputs.len())
                .map(|i| match types.get(i) {
                    Some((_, Some(_))) => Identity::Bytes,
                    Some((t, None)) if needs_text(t) => Identity::Text,
                    _ => Identity::Equal,
                })
                .collect();
        }
        for b in &mut self.branches {
            b.set_output_types(types, needs_text);
        }
    }

    /// Whether a group key reads a collated column: DuckDB shows a group of spellings equal
    /// under the collation ('a', 'A' under NOCASE) by one of its rows' spellings, which a delete
    /// can take away from the stored group.
    pub fn has_collated_keys(&self) -> bool {
        let Shape::Grouped { keys, .. } = &self.shape else { return false };
        let collated = |leaf: usize, column: &str| {
            self.leaves
                .get(leaf)
                .is_some_and(|l| l.columns.iter().any(|c| c.name.eq_ignore_ascii_case(column) && c.collation.is_some()))
        };
        keys.iter().any(|k| {
            let mut found = false;
            k.visit(&mut |e| {
                if let Expr::Bound { leaf, column } = e {
                    found |= collated(*leaf, column);
                }
            });
            found
        })
    }

    /// Whether a leaf's table has a collated column (whose outputs DuckDB may type collated).
    pub fn reads_collated(&self) -> bool {
        self.leaves.iter().any(|l| l.columns.iter().any(|c| c.collation.is_some()))
    }

    /// Distinct base tables the view reads, in first-appearance order.
    pub fn tables(&self) -> Vec<TableId> {
        let mut out: Vec<TableId> = Vec::new();
        for leaf in &self.leaves {
            if !out.contains(&leaf.table) {
                out.push(leaf.table.clone());
            }
        }
        out
    }

    /// The columns of `table` that any leaf over it reads, in the table's column order.
    pub fn table_columns(&self, table: &TableId) -> Vec<ColumnDef> {
        let used: Vec<&String> = self
            .leaves
            .iter()
            .zip(&self.used_columns)
            .filter(|(l, _)| &l.table == table)
            .flat_map(|(_, cols)| cols.iter())
            .collect();
        let Some(leaf) = self.leaves.iter().find(|l| &l.table == table) else {
            return vec![];
        };
        leaf.columns.iter().filter(|c| used.contains(&&c.name)).cloned().collect()
    }
}

/// Names of the hidden columns of the stored result.
pub mod stored {
    pub const COUNT: &str = "openivm_count";
    pub fn group(i: usize) -> String {
        format!("openivm_g{i}")
    }
    pub fn agg(j: usize) -> String {
        format!("openivm_a{j}")
    }
    pub fn agg_sum(j: usize) -> String {
        format!("openivm_a{j}_sum")
    }
    /// MIN/MAX: the extremum of the inputs (NULL when none is non-NULL).
    pub fn agg_extremum(j: usize) -> String {
        format!("openivm_a{j}_ext")
    }
    /// An aggregate without a delta rule: its finished value.
    pub fn agg_value(j: usize) -> String {
        format!("openivm_a{j}_val")
    }
    /// A variance: the exact sum of the squares of its inputs.
    pub fn agg_squares(j: usize) -> String {
        format!("openivm_a{j}_sq")
    }
    pub fn agg_nonnull(j: usize) -> String {
        format!("openivm_a{j}_nn")
    }
    /// HUGEINT sums: in a view delta, the sum of the rows of negative weight (subtracted from
    /// the stored sum before the rest is added).
    pub fn agg_subtracted(j: usize) -> String {
        format!("openivm_a{j}_sub")
    }
    /// Floating sums: signed counts of +inf, -inf and NaN inputs (the sum holds finite inputs only).
    pub fn agg_pos_inf(j: usize) -> String {
        format!("openivm_a{j}_pinf")
    }
    pub fn agg_neg_inf(j: usize) -> String {
        format!("openivm_a{j}_ninf")
    }
    pub fn agg_nan(j: usize) -> String {
        format!("openivm_a{j}_nan")
    }
    /// Grouping sets: the grouping id of the row's set (see `GroupingSets`).
    pub const GROUPING_SET: &str = "openivm_gset";
    /// INTERSECT / EXCEPT: the operand a term row comes from (0 or 1).
    pub const SIDE: &str = "openivm_side";
    /// INTERSECT / EXCEPT: a stored row's copies on side `s`.
    pub fn side_count(s: u8) -> String {
        format!("openivm_c{s}")
    }
    pub fn group_text(i: usize) -> String {
        format!("openivm_t{i}")
    }
}

#[cfg(test)]
mod tests {
    use super::GroupingSets;

    #[test]
    fn grouping_ids_and_grouping_values_by_hand() {
        // ROLLUP(a, b, c): sets (a, b, c), (a, b), (a), ()
        let g = GroupingSets { sets: vec![vec![0, 1, 2], vec![0, 1], vec![0], vec![]], keys: 3 };
        // bit 2 is a, bit 1 b, bit 0 c; a left-out key sets its bit
        assert_eq!(g.sets.iter().map(|s| g.id(s)).collect::<Vec<_>>(), vec![0b000, 0b001, 0b011, 0b111]);
        assert_eq!(g.empty_set_id(), Some(7));
        // GROUPING(c, a) in set (a): c left out (bit 1 of a two-argument result), a not
        assert_eq!(g.grouping(0b011, &[2, 0]), 0b10);
        // GROUPING(a, b, c) is the grouping id itself
        assert_eq!(g.grouping(0b011, &[0, 1, 2]), 0b011);
        assert_eq!(g.grouping(0b111, &[1]), 1);
        assert_eq!(g.grouping(0b000, &[1]), 0);
        // no empty set: nothing stays at count 0
        let two = GroupingSets { sets: vec![vec![0], vec![1]], keys: 2 };
        assert_eq!((two.id(&[0]), two.id(&[1]), two.empty_set_id()), (0b01, 0b10, None));
    }
}
