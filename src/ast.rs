//! Typed syntax of the view queries openivm supports.
//!
//! `parse` builds these from DuckDB's own parse tree; `bind` resolves the column references in
//! place (`Expr::Column` becomes `Expr::Bound`); `render` is the only code that turns them back
//! into SQL text.

/// A SELECT over inner-joined base tables, optionally grouped.
#[derive(Clone, Debug, PartialEq)]
pub struct Select {
    pub items: Vec<SelectItem>,
    pub from: FromItem,
    pub where_clause: Option<Expr>,
    pub group_by: Vec<Expr>,
    /// `GROUP BY ALL`: grouped by every select item without an aggregate.
    pub group_by_all: bool,
    /// `GROUPING SETS` / `ROLLUP` / `CUBE`: each set as positions in `group_by` (DuckDB's parser
    /// expands ROLLUP and CUBE into their sets); None for a plain GROUP BY (one set of every key).
    pub grouping_sets: Option<Vec<Vec<usize>>>,
    /// What applies to the result as it is read: HAVING, DISTINCT, ORDER BY, LIMIT/OFFSET.
    pub presentation: Presentation<Expr>,
    /// `WHERE ... AND x IN (SELECT ...)`, `EXISTS (...)`, `x < (SELECT avg(..) ...)`:
    /// conjuncts of the WHERE clause with a subquery that is a join with a stage, taken out of
    /// `where_clause` (see `SubqueryJoin`).
    pub semi_joins: Vec<SubqueryJoin>,
    /// The same query over a subquery of per-group value counts, when its aggregates look like
    /// DISTINCT aggregates of one argument (`rewrite::distinct_by_values`); the binder takes it
    /// when the catalog confirms that no other call is an aggregate.
    pub by_values: Option<Box<Select>>,
    /// `DISTINCT ON (...)` of a query whose select list has a `*`: the binder expands the `*`
    /// and reads the query as groups (`rewrite::distinct_on`); empty otherwise (the
    /// parser reads it itself).
    pub distinct_on: Vec<Expr>,
}

impl Select {
    /// `SELECT items FROM from`, with nothing else.
    pub fn plain(items: Vec<SelectItem>, from: FromItem) -> Select {
        Select {
            items,
            from,
            where_clause: None,
            group_by: vec![],
            group_by_all: false,
            grouping_sets: None,
            presentation: Presentation::default(),
            semi_joins: vec![],
            by_values: None,
            distinct_on: vec![],
        }
    }
}

/// A WHERE conjunct whose subquery the binder turns into an inner join with a stage.
#[derive(Clone, Debug, PartialEq)]
pub enum SubqueryJoin {
    In(SemiJoin),
    Correlated(Correlated),
}

/// A WHERE conjunct `expr IN (subquery)`: it keeps the rows whose `expr` equals a value of the
/// subquery, which is the inner join with the subquery's distinct values.
#[derive(Clone, Debug, PartialEq)]
pub struct SemiJoin {
    pub expr: Expr,
    /// DuckDB's parse tree of the subquery as a statement (JSON).
    pub tree: String,
}

/// A WHERE conjunct with a subquery correlated to the outer query by one equality of an inner
/// and an outer column, `inner = outer`, and by nothing else:
/// - `EXISTS (SELECT ... WHERE inner = outer AND rest)` keeps the rows whose `outer` equals an
///   `inner` value of the rows passing `rest`: `outer IN (SELECT inner ... WHERE rest)`.
/// - `x op (SELECT agg ... WHERE inner = outer AND rest)`, with `agg` an expression that is
///   NULL over no rows (SUM, AVG, MIN, MAX under arithmetic; not COUNT): the inner join with
///   `SELECT inner, agg ... WHERE rest GROUP BY inner` on `outer`, keeping `x op agg`. A row
///   whose `outer` has no group compares with NULL and is dropped, as the join drops it.
///
/// - `x op (SELECT agg ...)` not correlated at all, `agg` any expression over aggregates: the
///   subquery has exactly one row, the stage is the subquery itself, joined with every row
///   (a candidate without outer and inner columns).
///
/// SQL resolves a name in the innermost scope first, so which column of the equality is the
/// outer one depends on the inner tables' columns: the parser offers each orientation of each
/// candidate equality and the binder, which knows the tables, takes the one that holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Correlated {
    pub kind: CorrelatedKind,
    /// The subquery's FROM tables with their aliases.
    pub inner_tables: Vec<(TableName, Option<String>)>,
    pub candidates: Vec<CorrelatedCandidate>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum CorrelatedKind {
    Exists,
    /// `x op (subquery)` (a subquery written on the left is turned around).
    Scalar {
        x: Expr,
        op: CompareOp,
    },
}

/// One reading of the correlation: `outer` (a column of the outer query), `inner` (a column of
/// the subquery's tables), the stage's query with the equality taken out (its select list
/// `inner` for EXISTS, `inner, agg` grouped by `inner` for a scalar), and every column the rest
/// of the subquery names (each must be the subquery's own for the reading to hold).
#[derive(Clone, Debug, PartialEq)]
pub struct CorrelatedCandidate {
    pub outer: Vec<String>,
    pub inner: Vec<String>,
    pub tree: String,
    pub rest_columns: Vec<Vec<String>>,
}

/// The parts of a query that filter, deduplicate, order and cut its result. The stored result
/// keeps every group and row; the user-facing view applies these. `E` is the expression type:
/// as written (`Expr`) or bound (`ir::OrderKey` for the order keys).
#[derive(Clone, Debug, PartialEq)]
pub struct Presentation<E> {
    pub having: Option<Expr>,
    pub distinct: bool,
    pub order_by: Vec<OrderItem<E>>,
    pub limit: Option<i64>,
    pub offset: Option<i64>,
}

impl<E> Default for Presentation<E> {
    fn default() -> Self {
        Presentation { having: None, distinct: false, order_by: vec![], limit: None, offset: None }
    }
}

/// One ORDER BY key with its direction and NULL order as written (None: DuckDB's default).
#[derive(Clone, Debug, PartialEq)]
pub struct OrderItem<E> {
    pub key: E,
    pub descending: Option<bool>,
    pub nulls_first: Option<bool>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SelectItem {
    pub expr: Expr,
    pub alias: Option<String>,
}

/// A table name as written: up to three parts.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TableName {
    pub catalog: Option<String>,
    pub schema: Option<String>,
    pub name: String,
}

#[derive(Clone, Debug, PartialEq)]
pub enum FromItem {
    Table {
        name: TableName,
        alias: Option<String>,
    },
    /// A subquery in FROM, or a reference to a (non-recursive) CTE, which is one: its query,
    /// its alias, and the column aliases written after it (`AS x(a, b)`).
    Subquery {
        select: Box<Select>,
        alias: String,
        columns: Vec<String>,
        /// DuckDB's parse tree of the subquery as a statement (JSON), where one is at hand: a
        /// subquery that cannot be flattened becomes a maintained stage of this query.
        tree: Option<String>,
    },
    /// `(<select> UNION ALL <select> ...)` in FROM (or a top-level set operation, read as
    /// `SELECT * FROM` it): the binder distributes the query over its branches, since a join
    /// distributes over a bag union (see `bind::bind`).
    Union {
        branches: Vec<UnionBranch>,
        alias: String,
        /// Column aliases written after it (`AS u(a, b)`); otherwise the first branch names them.
        columns: Vec<String>,
        /// A top-level INTERSECT or EXCEPT: the branches of its left operand are side 0, those
        /// of its right side 1, and the view shows each row by its two counts.
        compared: Option<Compared>,
    },
    /// One branch of a `Union`, standing for it in one of the queries it is distributed into:
    /// the branch's rows under the union's column names, each cast to the union's type where
    /// the branch's differs.
    UnionBranch {
        branch: Box<UnionBranch>,
        alias: String,
        /// The union's columns: names (None: one the query cannot name) and DuckDB types.
        columns: Vec<(Option<String>, String)>,
        /// The branch's own column types, in order.
        types: Vec<String>,
    },
    /// An inner join (`JOIN ... ON`, `JOIN ... USING`, or a comma / CROSS JOIN when both are empty).
    Join {
        left: Box<FromItem>,
        right: Box<FromItem>,
        on: Option<Expr>,
        using: Vec<String>,
    },
}

/// A branch of a UNION ALL: its query, and DuckDB's parse tree of it as a statement (a branch
/// that groups becomes a stage, like a subquery in FROM).
#[derive(Clone, Debug, PartialEq)]
pub struct UnionBranch {
    pub select: Select,
    pub tree: String,
    /// The operand of an INTERSECT / EXCEPT it belongs to: 0 (left) or 1 (right).
    pub side: u8,
}

/// `INTERSECT [ALL]` / `EXCEPT [ALL]` of operands (each a query or a UNION ALL of queries):
/// a row's copies follow from its number of copies on each side, c0, c1, ...
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compared {
    /// A chain of `sides` operands (`a INTERSECT b INTERSECT c`). ALL: min(c0, c1, ...) copies;
    /// otherwise one where every count is positive (a chain with one INTERSECT without ALL
    /// deduplicates the whole result, so it is read so).
    Intersect { all: bool, sides: u8 },
    /// Two sides: the first operand, and every operand subtracted from it (`(a EXCEPT b) EXCEPT
    /// c` is `a EXCEPT (b UNION ALL c)`, with or without ALL). ALL: max(c0 - c1, 0) copies;
    /// otherwise one where c0 is positive and c1 is 0.
    Except { all: bool },
}

impl Compared {
    /// The number of sides counted.
    pub fn sides(self) -> u8 {
        match self {
            Compared::Intersect { sides, .. } => sides,
            Compared::Except { .. } => 2,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareOp {
    Eq,
    NotEq,
    Lt,
    Gt,
    LtEq,
    GtEq,
    DistinctFrom,
    NotDistinctFrom,
}

impl CompareOp {
    /// The operator with its operands swapped: `a < b` is `b > a`.
    pub fn flipped(self) -> CompareOp {
        match self {
            CompareOp::Lt => CompareOp::Gt,
            CompareOp::Gt => CompareOp::Lt,
            CompareOp::LtEq => CompareOp::GtEq,
            CompareOp::GtEq => CompareOp::LtEq,
            other => other,
        }
    }
}

/// A literal of the parse tree.
#[derive(Clone, Debug, PartialEq)]
pub enum Constant {
    Null,
    Bool(bool),
    /// An integer literal, kept as its decimal digits (INTEGER, BIGINT or HUGEINT in DuckDB).
    Integer(i128),
    Double(f64),
    /// `digits` scaled by 10^-scale, as DuckDB's DECIMAL literals are.
    Decimal {
        digits: i128,
        scale: u8,
    },
    Text(String),
}

/// A type named in a cast: DuckDB's type id plus DECIMAL's width and scale.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeName {
    pub id: String,
    pub decimal: Option<(u8, u8)>,
}

impl TypeName {
    /// The type as DuckDB spells it in SQL and in `duckdb_columns()`.
    pub fn sql(&self) -> String {
        match self.decimal {
            Some((w, s)) => format!("DECIMAL({w},{s})"),
            None => self.id.clone(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A column as written (`name`, `alias.name`); only before binding.
    Column(Vec<String>),
    /// A column of leaf `leaf` of the join (after binding).
    Bound {
        leaf: usize,
        column: String,
    },
    /// `*` or `alias.*`; expanded by the binder.
    Star {
        relation: Option<String>,
    },
    Constant(Constant),
    /// A function call; operators (`+`, `||`, `~~`) have `is_operator` set.
    Function {
        name: String,
        args: Vec<Expr>,
        is_operator: bool,
    },
    Compare {
        op: CompareOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Not(Box<Expr>),
    IsNull {
        expr: Box<Expr>,
        negated: bool,
    },
    InList {
        expr: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
    },
    Between {
        expr: Box<Expr>,
        low: Box<Expr>,
        high: Box<Expr>,
    },
    Coalesce(Vec<Expr>),
    Case {
        checks: Vec<(Expr, Expr)>,
        otherwise: Box<Expr>,
    },
    Cast {
        expr: Box<Expr>,
        ty: TypeName,
        try_cast: bool,
    },
    /// A struct literal `{'a': 1}` / `struct_pack(a := 1)`: field names with their values.
    Struct(Vec<(String, Expr)>),
    /// An aggregate call with DISTINCT, an ORDER BY or a FILTER (written so by the parser), or
    /// an aggregate without a delta rule (`list`, `string_agg`, ...; made so by the binder).
    /// Plain SUM/COUNT/AVG/MIN/MAX stay `Function`.
    Aggregate(Box<AggCall>),
}

/// An aggregate call with its modifiers, as written.
#[derive(Clone, Debug, PartialEq)]
pub struct AggCall {
    pub name: String,
    pub args: Vec<Expr>,
    pub distinct: bool,
    pub order_by: Vec<OrderItem<Expr>>,
    pub filter: Option<Expr>,
}

impl AggCall {
    /// A call without modifiers.
    pub fn plain(name: String, args: Vec<Expr>) -> AggCall {
        AggCall { name, args, distinct: false, order_by: vec![], filter: None }
    }

    /// Every expression the call reads: its arguments, its order keys and its filter.
    pub fn inputs(&self) -> Vec<&Expr> {
        self.args.iter().chain(self.order_by.iter().map(|o| &o.key)).chain(self.filter.iter()).collect()
    }

    /// Rebuilds every input with `f`, keeping the call's shape.
    pub fn map_inputs<E>(self, f: &mut impl FnMut(Expr) -> Result<Expr, E>) -> Result<AggCall, E> {
        let AggCall { name, args, distinct, order_by, filter } = self;
        Ok(AggCall {
            name,
            args: args.into_iter().map(&mut *f).collect::<Result<_, E>>()?,
            distinct,
            order_by: order_by
                .into_iter()
                .map(|o| Ok(OrderItem { key: f(o.key)?, descending: o.descending, nulls_first: o.nulls_first }))
                .collect::<Result<_, E>>()?,
            filter: filter.map(&mut *f).transpose()?,
        })
    }
}

impl Expr {
    /// Calls `f` on every sub-expression, depth first, parents before children.
    pub fn visit(&self, f: &mut impl FnMut(&Expr)) {
        f(self);
        for child in self.children() {
            child.visit(f);
        }
    }

    pub fn children(&self) -> Vec<&Expr> {
        match self {
            Expr::Column(_) | Expr::Bound { .. } | Expr::Star { .. } | Expr::Constant(_) => vec![],
            Expr::Function { args, .. } => args.iter().collect(),
            Expr::Compare { left, right, .. } => vec![left, right],
            Expr::And(v) | Expr::Or(v) | Expr::Coalesce(v) => v.iter().collect(),
            Expr::Not(e) | Expr::IsNull { expr: e, .. } | Expr::Cast { expr: e, .. } => vec![e],
            Expr::InList { expr, list, .. } => std::iter::once(&**expr).chain(list.iter()).collect(),
            Expr::Between { expr, low, high } => vec![expr, low, high],
            Expr::Case { checks, otherwise } => {
                checks.iter().flat_map(|(w, t)| [w, t]).chain(std::iter::once(&**otherwise)).collect()
            }
            Expr::Struct(fields) => fields.iter().map(|(_, v)| v).collect(),
            Expr::Aggregate(call) => call.inputs(),
        }
    }

    /// Rebuilds the direct children with `f`, keeping this node.
    pub fn map_children<E>(self, f: &mut impl FnMut(Expr) -> Result<Expr, E>) -> Result<Expr, E> {
        fn all<E>(v: Vec<Expr>, f: &mut impl FnMut(Expr) -> Result<Expr, E>) -> Result<Vec<Expr>, E> {
            v.into_iter().map(f).collect()
        }
        #[allow(clippy::boxed_local)] // takes the child's box apart to rebuild it
        fn one<E>(e: Box<Expr>, f: &mut impl FnMut(Expr) -> Result<Expr, E>) -> Result<Box<Expr>, E> {
            f(*e).map(Box::new)
        }
        Ok(match self {
            e @ (Expr::Column(_) | Expr::Bound { .. } | Expr::Star { .. } | Expr::Constant(_)) => e,
            Expr::Function { name, args, is_operator } => Expr::Function { name, args: all(args, f)?, is_operator },
            Expr::Compare { op, left, right } => Expr::Compare { op, left: one(left, f)?, right: one(right, f)? },
            Expr::And(v) => Expr::And(all(v, f)?),
            Expr::Or(v) => Expr::Or(all(v, f)?),
            Expr::Coalesce(v) => Expr::Coalesce(all(v, f)?),
            Expr::Not(e) => Expr::Not(one(e, f)?),
            Expr::IsNull { expr, negated } => Expr::IsNull { expr: one(expr, f)?, negated },
            Expr::Cast { expr, ty, try_cast } => Expr::Cast { expr: one(expr, f)?, ty, try_cast },
            Expr::InList { expr, list, negated } => Expr::InList { expr: one(expr, f)?, list: all(list, f)?, negated },
            Expr::Between { expr, low, high } => {
                Expr::Between { expr: one(expr, f)?, low: one(low, f)?, high: one(high, f)? }
            }
            Expr::Case { checks, otherwise } => Expr::Case {
                checks: checks.into_iter().map(|(w, t)| Ok((f(w)?, f(t)?))).collect::<Result<_, E>>()?,
                otherwise: one(otherwise, f)?,
            },
            Expr::Struct(fields) => {
                Expr::Struct(fields.into_iter().map(|(n, v)| Ok((n, f(v)?))).collect::<Result<_, E>>()?)
            }
            Expr::Aggregate(call) => Expr::Aggregate(Box::new(call.map_inputs(f)?)),
        })
    }

    /// Rebuilds the expression bottom-up: `f` sees each node after its children were rebuilt.
    pub fn rewrite<E>(self, f: &mut impl FnMut(Expr) -> Result<Expr, E>) -> Result<Expr, E> {
        let node = self.map_children(&mut |c: Expr| c.rewrite(f))?;
        f(node)
    }

    /// The conjuncts of a predicate (`a AND b AND c` -> [a, b, c]).
    pub fn conjuncts(self) -> Vec<Expr> {
        match self {
            Expr::And(v) => v.into_iter().flat_map(Expr::conjuncts).collect(),
            e => vec![e],
        }
    }

    pub fn column(name: &str) -> Expr {
        Expr::Column(vec![name.to_string()])
    }
}
