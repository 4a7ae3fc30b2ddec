//! Stage 5: the only producer of SQL text. Every identifier is quoted here and every literal
//! escaped here; no other module builds SQL from strings.

use crate::ast::{AggCall, CompareOp, Compared, Constant, Expr, TypeName};
use crate::ir::{stored, AggFunc, Aggregate, ColumnDef, Identity, Leaf, OrderKey, Shape, SumInput, TableId, ViewQuery};
use crate::plan::terms::{Mask, Term};

pub mod capture;
pub mod compile;
pub mod dialect;
pub mod ducklake;
pub mod group_lookup;
pub mod stored_table;
pub mod trigger;
pub mod write;

pub use dialect::{Dialect, Storage};

/// A quoted identifier (DuckDB's quoting).
pub fn ident(s: &str) -> String {
    Dialect::DuckDb.ident(s)
}

/// Makes `catalog` the connection's default database.
pub fn use_database(catalog: &str) -> String {
    // With its schema: `USE x` means the schema x of the current database when one exists.
    format!("USE {}.main", ident(catalog))
}

/// A string literal.
pub fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// `LOAD` of the extension file at `path`.
pub fn load_extension(path: &str) -> String {
    format!("LOAD {}", literal(path))
}

pub fn table(id: &TableId) -> String {
    format!("{}.{}.{}", ident(&id.catalog), ident(&id.schema), ident(&id.name))
}

/// A name in the schema of a view: `"catalog"."schema"."name"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Qualified {
    pub catalog: String,
    pub schema: String,
    pub name: String,
}

impl Qualified {
    pub fn sql(&self) -> String {
        self.sql_in(Dialect::DuckDb)
    }
    pub fn sql_in(&self, d: Dialect) -> String {
        format!("{}.{}.{}", d.ident(&self.catalog), d.ident(&self.schema), d.ident(&self.name))
    }
    /// `"schema"."name"`: how a view's body names a table of its own database, so that the view
    /// keeps working when the database is renamed, copied or attached under another name
    /// (DuckDB binds a view's names in the view's database).
    pub fn in_own_database(&self) -> String {
        format!("{}.{}", ident(&self.schema), ident(&self.name))
    }
    pub fn sibling(&self, name: String) -> Qualified {
        Qualified { catalog: self.catalog.clone(), schema: self.schema.clone(), name }
    }
    pub fn temp(name: String) -> Qualified {
        Qualified { catalog: "temp".into(), schema: "main".into(), name }
    }
    pub fn table_id(&self) -> TableId {
        TableId { catalog: self.catalog.clone(), schema: self.schema.clone(), name: self.name.clone() }
    }
}

pub(crate) fn list<T>(items: impl IntoIterator<Item = T>, sep: &str, f: impl FnMut(T) -> String) -> String {
    items.into_iter().map(f).collect::<Vec<_>>().join(sep)
}

fn constant(c: &Constant) -> String {
    match c {
        Constant::Null => "NULL".into(),
        Constant::Bool(b) => if *b { "TRUE" } else { "FALSE" }.into(),
        Constant::Integer(i) if *i < 0 => format!("({i})"),
        Constant::Integer(i) => i.to_string(),
        Constant::Double(d) if d.is_finite() => {
            let s = format!("{d:e}");
            if *d < 0.0 {
                format!("({s})")
            } else {
                s
            }
        }
        Constant::Double(d) => format!("CAST({} AS DOUBLE)", literal(&d.to_string())),
        Constant::Decimal { digits, scale } => {
            let neg = *digits < 0;
            let mut s = digits.unsigned_abs().to_string();
            let scale = *scale as usize;
            if scale > 0 {
                while s.len() <= scale {
                    s.insert(0, '0');
                }
                s.insert(s.len() - scale, '.');
            }
            if neg {
                format!("(-{s})")
            } else {
                s
            }
        }
        Constant::Text(s) => literal(s),
    }
}

fn compare_op(op: CompareOp) -> &'static str {
    match op {
        CompareOp::Eq => "=",
        CompareOp::NotEq => "<>",
        CompareOp::Lt => "<",
        CompareOp::Gt => ">",
        CompareOp::LtEq => "<=",
        CompareOp::GtEq => ">=",
        CompareOp::DistinctFrom => "IS DISTINCT FROM",
        CompareOp::NotDistinctFrom => "IS NOT DISTINCT FROM",
    }
}

/// Renders an expression; bound columns use the alias of their leaf.
pub fn expr(e: &Expr, aliases: &[String]) -> String {
    expr_in(Dialect::DuckDb, e, aliases)
}

/// `expr` in dialect `d` (its quoting; function names stay DuckDB's).
pub fn expr_in(d: Dialect, e: &Expr, aliases: &[String]) -> String {
    let r = |x: &Expr| expr_in(d, x, aliases);
    match e {
        Expr::Column(parts) => list(parts, ".", |p| d.ident(p)),
        Expr::Bound { leaf, column } => format!("{}.{}", d.ident(&aliases[*leaf]), d.ident(column)),
        Expr::Star { relation: None } => "*".into(),
        Expr::Star { relation: Some(r) } => format!("{}.*", d.ident(r)),
        Expr::Constant(c) => constant(c),
        Expr::Function { name, args, is_operator: true } => {
            let keyword = match name.as_str() {
                "~~" => Some("LIKE"),
                "!~~" => Some("NOT LIKE"),
                "~~*" => Some("ILIKE"),
                "!~~*" => Some("NOT ILIKE"),
                "~~~" => Some("GLOB"),
                _ => None,
            };
            match (args.as_slice(), keyword) {
                ([a], _) => format!("({} {})", name, r(a)),
                ([a, b], Some(k)) => format!("({} {} {})", r(a), k, r(b)),
                ([a, b], None) => format!("({} {} {})", r(a), name, r(b)),
                _ => format!("{}({})", d.ident(name), list(args, ", ", r)),
            }
        }
        Expr::Function { name, args, .. } if name == "count_star" && args.is_empty() => "count(*)".into(),
        Expr::Function { name, args, .. } => {
            format!("{}({})", function_name(d, name), list(args, ", ", r))
        }
        Expr::Compare { op, left, right } => {
            format!("({} {} {})", r(left), compare_op(*op), r(right))
        }
        Expr::And(v) if v.is_empty() => "TRUE".into(),
        Expr::And(v) => format!("({})", list(v, " AND ", r)),
        Expr::Or(v) if v.is_empty() => "FALSE".into(),
        Expr::Or(v) => format!("({})", list(v, " OR ", r)),
        Expr::Not(x) => format!("(NOT {})", r(x)),
        Expr::IsNull { expr: x, negated } => {
            format!("({} IS {}NULL)", r(x), if *negated { "NOT " } else { "" })
        }
        Expr::InList { expr: x, list: l, negated } => {
            format!("({} {}IN ({}))", r(x), if *negated { "NOT " } else { "" }, list(l, ", ", r))
        }
        Expr::Between { expr: x, low, high } => {
            format!("({} BETWEEN {} AND {})", r(x), r(low), r(high))
        }
        Expr::Coalesce(v) => format!("COALESCE({})", list(v, ", ", r)),
        Expr::Case { checks, otherwise } => format!(
            "CASE {} ELSE {} END",
            list(checks, " ", |(w, t)| format!("WHEN {} THEN {}", r(w), r(t))),
            r(otherwise)
        ),
        Expr::Cast { expr: x, ty, try_cast } => {
            format!("{}({} AS {})", if *try_cast { "TRY_CAST" } else { "CAST" }, r(x), ty.sql())
        }
        Expr::Struct(fields) => {
            format!("struct_pack({})", list(fields, ", ", |(n, v)| format!("{} := {}", d.ident(n), r(v))))
        }
        Expr::Aggregate(call) => aggregate_call(d, call, aliases),
    }
}

/// An aggregate call with its modifiers: `name(DISTINCT a, b ORDER BY k DESC) FILTER (WHERE c)`.
fn aggregate_call(d: Dialect, call: &AggCall, aliases: &[String]) -> String {
    let r = |x: &Expr| expr_in(d, x, aliases);
    let mut inside = if call.name == "count_star" && call.args.is_empty() {
        "*".to_string()
    } else {
        format!("{}{}", if call.distinct { "DISTINCT " } else { "" }, list(&call.args, ", ", r))
    };
    if !call.order_by.is_empty() {
        inside.push_str(&format!(
            " ORDER BY {}",
            list(&call.order_by, ", ", |o| format!("{}{}", r(&o.key), order_suffix(o.descending, o.nulls_first)))
        ));
    }
    let name = if call.name == "count_star" { "count".to_string() } else { function_name(d, &call.name) };
    let filter = call.filter.as_ref().map(|f| format!(" FILTER (WHERE {})", r(f))).unwrap_or_default();
    format!("{name}({inside}){filter}")
}

/// ` ASC`/` DESC` and ` NULLS FIRST`/` NULLS LAST` as written (nothing for DuckDB's defaults).
fn order_suffix(descending: Option<bool>, nulls_first: Option<bool>) -> String {
    let dir = match descending {
        None => "",
        Some(false) => " ASC",
        Some(true) => " DESC",
    };
    let nulls = match nulls_first {
        None => "",
        Some(true) => " NULLS FIRST",
        Some(false) => " NULLS LAST",
    };
    format!("{dir}{nulls}")
}

/// Function names that DuckDB's grammar reads as keywords when unquoted (`position(a IN b)`).
const KEYWORD_FUNCTIONS: &[&str] = &["position"];

/// Function names are identifiers; plain lower-case ones stay unquoted for readability.
fn function_name(d: Dialect, name: &str) -> String {
    if !name.is_empty()
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !KEYWORD_FUNCTIONS.contains(&name)
    {
        name.to_string()
    } else {
        d.ident(name)
    }
}

fn conjunction(d: Dialect, preds: &[Expr], aliases: &[String]) -> String {
    if preds.is_empty() {
        "TRUE".into()
    } else {
        list(preds, " AND ", |p| expr_in(d, p, aliases))
    }
}

/// Where one leaf of a term reads from.
#[derive(Clone, Debug)]
pub enum Source {
    Current(TableId),
    /// A SELECT in parentheses: the current state restricted to what a capture saw, or (in a
    /// compile-only program) a table's state before the batch.
    Bounded(String),
    /// A relation the caller provides, by its unqualified name (quoted when rendered).
    Named(String),
    Delta(Qualified),
}

/// The payload a view's terms project, before the weight: (expression, column name).
fn payload(q: &ViewQuery) -> Vec<(Expr, String)> {
    match &q.shape {
        Shape::Grouped { keys, aggregates, .. } => keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.clone(), stored::group(i)))
            .chain(aggregates.iter().enumerate().flat_map(|(j, a)| match (&a.arg, &a.call) {
                // read from the value column of an earlier aggregate of the same argument
                (Some(_), _) if value_slot(aggregates, j) != j => vec![],
                (Some(arg), _) => vec![(arg.clone(), value_col(j))],
                (None, Some(call)) => recomputed_over_payload(j, call).0,
                (None, None) => vec![],
            }))
            .collect(),
        Shape::Bag { outputs, text_identity } => {
            let mut p: Vec<(Expr, String)> =
                outputs.iter().enumerate().map(|(i, o)| (o.clone(), stored::group(i))).collect();
            for (i, o) in outputs.iter().enumerate() {
                let exact = match text_identity[i] {
                    Identity::Equal => continue,
                    Identity::Text => {
                        let text = TypeName { id: "VARCHAR".into(), decimal: None };
                        Expr::Cast { expr: Box::new(o.clone()), ty: text, try_cast: false }
                    }
                    Identity::Bytes => {
                        Expr::Function { name: "encode".into(), args: vec![o.clone()], is_operator: false }
                    }
                };
                p.push((exact, stored::group_text(i)));
            }
            if let Some(side) = q.side {
                p.push((Expr::Constant(Constant::Integer(side.into())), stored::SIDE.to_string()));
            }
            p
        }
    }
}

/// An aggregate without a delta rule, split for the terms: the inputs that read columns, each
/// projected by the terms as `openivm_v<j>_<i>` (equal inputs once), and the call over those
/// payload columns. Inputs without a column (`string_agg`'s separator, `quantile`'s fraction)
/// stay in the call as written, since some aggregates need them constant.
fn recomputed_over_payload(j: usize, call: &AggCall) -> (Vec<(Expr, String)>, AggCall) {
    let mut projected: Vec<(Expr, String)> = Vec::new();
    let over = call.clone().map_inputs(&mut |e: Expr| -> Result<Expr, ()> {
        let mut reads = false;
        e.visit(&mut |x| reads |= matches!(x, Expr::Bound { .. }));
        if !reads {
            return Ok(e);
        }
        let name = match projected.iter().find(|(p, _)| p == &e) {
            Some((_, n)) => n.clone(),
            None => {
                let n = format!("{}_{}", value_col(j), projected.len());
                projected.push((e, n.clone()));
                n
            }
        };
        Ok(Expr::column(&name))
    });
    (projected, over.unwrap_or_else(|()| call.clone()))
}

/// The columns that identify a row of the stored result: group keys (and the text of bag
/// outputs that need it).
fn key_columns(q: &ViewQuery) -> Vec<String> {
    match &q.shape {
        Shape::Grouped { keys, sets, .. } => {
            (0..keys.len()).map(stored::group).chain(sets.as_ref().map(|_| stored::GROUPING_SET.to_string())).collect()
        }
        Shape::Bag { outputs, text_identity } => (0..outputs.len())
            .map(stored::group)
            .chain((0..outputs.len()).filter(|i| text_identity[*i] != Identity::Equal).map(stored::group_text))
            .collect(),
    }
}

fn value_col(j: usize) -> String {
    format!("openivm_v{j}")
}

/// The aggregate whose value column aggregate `j` reads: the first one with the same argument.
/// `SUM(x)` and `AVG(x)` then aggregate one column with textually equal expressions, which
/// DuckDB computes once (on the 20M star this halves the aggregation of a fill).
fn value_slot(aggregates: &[Aggregate], j: usize) -> usize {
    (0..j).find(|&i| aggregates[i].arg.is_some() && aggregates[i].arg == aggregates[j].arg).unwrap_or(j)
}

const WEIGHT: &str = "openivm_weight";
pub const MULTIPLICITY: &str = "openivm_multiplicity";

fn aliases(q: &ViewQuery) -> Vec<String> {
    q.leaves.iter().map(|l| l.alias.clone()).collect()
}

/// One inclusion-exclusion term: the view's join with the leaves of `term.mask` read from their
/// deltas, projecting the payload and the row weight sign · Π multiplicity.
pub fn term_select(q: &ViewQuery, term: Term, sources: &[Source]) -> String {
    term_select_in(Dialect::DuckDb, q, term, sources)
}

/// The names of the payload columns a view's terms project, in order (each branch of a union
/// must project the same).
pub fn payload_names(q: &ViewQuery) -> Vec<String> {
    payload(q).into_iter().map(|(_, n)| n).collect()
}

/// `term_select` in dialect `d`. For a union (`ViewQuery::branches`) the term is its branch's,
/// over that branch's slice of `sources`; the mask 0 (the current join) is every branch's, one
/// after the other.
pub fn term_select_in(d: Dialect, q: &ViewQuery, term: Term, sources: &[Source]) -> String {
    if !q.branches.is_empty() {
        let spans = q.spans();
        let one = |b: usize| {
            let (first, n) = spans[b];
            let local = Term { mask: term.mask >> first, sign: term.sign };
            term_select_in(d, &q.branches[b], local, &sources[first..first + n])
        };
        return match crate::plan::terms::branch_of(&spans, term.mask) {
            Some(b) => one(b),
            None => (0..spans.len()).map(one).collect::<Vec<_>>().join(" UNION ALL "),
        };
    }
    term_select_over(d, q, term, sources, 0, &payload(q))
}

/// A term of a view without branches over its leaves not in `left_out` (a mask; 0 for all):
/// their sources, the predicates that read only them, `payload` and the row weight.
fn term_select_over(
    d: Dialect,
    q: &ViewQuery,
    term: Term,
    sources: &[Source],
    left_out: u32,
    payload: &[(Expr, String)],
) -> String {
    let aliases = aliases(q);
    let mut weight = vec![term.sign.to_string()];
    for (i, a) in aliases.iter().enumerate() {
        if term.mask & (1 << i) != 0 {
            weight.push(format!("{}.{}", d.ident(a), d.ident(MULTIPLICITY)));
        }
    }
    let from = from_leaves(d, sources, &aliases, |i| left_out & (1 << i) == 0);
    let mut cols: Vec<String> =
        payload.iter().map(|(e, n)| format!("{} AS {}", expr_in(d, e, &aliases), d.ident(n))).collect();
    cols.push(format!("({}) AS {}", weight.join(" * "), d.ident(WEIGHT)));
    let kept: Vec<Expr>;
    let predicates = if left_out == 0 {
        &q.predicates
    } else {
        kept =
            q.predicates.iter().filter(|p| crate::plan::merge_keys::leaves_read(p) & left_out == 0).cloned().collect();
        &kept
    };
    format!("SELECT {} FROM {} WHERE {}", cols.join(", "), from, conjunction(d, predicates, &aliases))
}

/// The FROM list of the leaves `keep` keeps: each leaf's source under its alias.
fn from_leaves(d: Dialect, sources: &[Source], aliases: &[String], keep: impl Fn(usize) -> bool) -> String {
    list(sources.iter().zip(aliases).enumerate().filter(|(i, _)| keep(*i)), ", ", |(_, (s, a))| {
        format!("{} AS {}", relation(d, s), d.ident(a))
    })
}

/// The relation a source stands for, as a FROM item without its alias.
pub fn relation_sql(s: &Source) -> String {
    relation(Dialect::DuckDb, s)
}

fn relation(d: Dialect, s: &Source) -> String {
    match s {
        Source::Current(t) => d.table(t),
        Source::Bounded(sql) => sql.clone(),
        Source::Named(name) => d.ident(name),
        Source::Delta(delta) => delta.sql_in(d),
    }
}

/// A leaf's current state with the rows its delta deleted added back (multiplicity -1 read
/// as one row): how the terms read a parent that foreign keys pruned although it deleted keys
/// (see `fk_pruning::FkPruning`). `columns` are the delta's, the columns the view reads.
pub fn with_deleted_rows(current: &Source, delta: &Qualified, columns: &[String]) -> Source {
    let cols = list(columns, ", ", |c| ident(c));
    Source::Bounded(format!(
        "(SELECT {cols} FROM {} UNION ALL SELECT {cols} FROM {} WHERE {} < 0)",
        relation_sql(current),
        delta.sql(),
        ident(MULTIPLICITY)
    ))
}

/// A parent's state in a term that joins it only on keys of its delta, as the delta's rows
/// alone, each read as one row (see `fk_pruning::reads_delta_rows`). `columns` are the delta's.
pub fn delta_rows_as_state(delta: &Qualified, columns: &[String]) -> Source {
    Source::Bounded(format!("(SELECT {} FROM {})", list(columns, ", ", |c| ident(c)), delta.sql()))
}

/// A leaf of a combined evaluation: its current state, its delta if some run term reads it,
/// and the columns the view reads from the table (the delta's columns).
#[derive(Clone, Debug)]
pub struct CombinedLeaf {
    pub current: Source,
    pub delta: Option<Qualified>,
    pub columns: Vec<String>,
}

/// All run terms in one join. Each leaf with a delta reads the union of its current rows
/// (tagged 0, factor 1) and its delta rows (tagged 1, factor -multiplicity). Every joined row
/// then belongs to exactly one term: the mask of the leaves whose delta rows it joined. Its
/// weight -Π factor equals sign(mask) · Π multiplicity, since each delta leaf contributes one
/// factor -1 and (-1)^(k-1) = -(-1)^k. Rows of mask 0 (the current join itself) and of masks
/// that touch an FK-skipped leaf are filtered out; empty deltas contribute no rows at all. The
/// result is the union of the same terms `term_select` renders one by one, at the cost of one
/// join over the current state instead of one join per term.
pub fn combined_terms(q: &ViewQuery, leaves: &[CombinedLeaf], fk_skip: Mask) -> String {
    if !q.branches.is_empty() {
        // Each branch with a delta its own combined join (a branch without one has no term).
        let parts: Vec<String> = q
            .spans()
            .iter()
            .zip(&q.branches)
            .filter(|((first, n), _)| leaves[*first..first + n].iter().any(|l| l.delta.is_some()))
            .map(|(&(first, n), b)| combined_terms(b, &leaves[first..first + n], fk_skip >> first))
            .collect();
        return parts.join(" UNION ALL ");
    }
    let aliases = aliases(q);
    let (tag, factor) = ("openivm_in_delta", "openivm_factor");
    let mut from = Vec::new();
    let mut mask_terms = Vec::new();
    let mut factors = Vec::new();
    for (i, (leaf, a)) in leaves.iter().zip(&aliases).enumerate() {
        match &leaf.delta {
            None => from.push(format!("{} AS {}", relation_sql(&leaf.current), ident(a))),
            Some(delta) => {
                let cols = with_comma(&leaf.columns.iter().map(|c| ident(c)).collect::<Vec<_>>());
                from.push(format!(
                    "(SELECT {cols}0 AS {tag}, 1 AS {factor} FROM {base} UNION ALL \
                     SELECT {cols}1, -{m} FROM {delta}) AS {alias}",
                    base = relation_sql(&leaf.current),
                    m = ident(MULTIPLICITY),
                    delta = delta.sql(),
                    alias = ident(a)
                ));
                mask_terms.push(format!("{}.{tag} * {}", ident(a), 1u32 << i));
                factors.push(format!("{}.{factor}", ident(a)));
            }
        }
    }
    let mask = format!("({})", mask_terms.join(" + "));
    let mut cols: Vec<String> =
        payload(q).iter().map(|(e, n)| format!("{} AS {}", expr(e, &aliases), ident(n))).collect();
    cols.push(format!("(-1 * {}) AS {}", factors.join(" * "), ident(WEIGHT)));
    format!(
        "SELECT {} FROM {} WHERE {} AND {mask} <> 0 AND ({mask} & {fk_skip}) = 0",
        cols.join(", "),
        from.join(", "),
        conjunction(Dialect::DuckDb, &q.predicates, &aliases)
    )
}

/// The rows of a term as the view's full query would read them: all leaves current, weight 1.
pub fn full_select(q: &ViewQuery) -> String {
    let sources: Vec<Source> = q.leaves.iter().map(|l| Source::Current(l.table.clone())).collect();
    let all = Term { mask: 0, sign: 1 };
    term_select(q, all, &sources)
}

/// Aggregates weighted payload rows into the stored columns of the result (counts, sums and
/// non-null counts as signed sums of weights). Used for both the initial fill (over
/// `full_select`) and every refresh (over the union of the terms).
///
/// A sum is kept exactly as DuckDB's SUM computes it, by the type of its argument (`SumInput`):
/// integers are widened to HUGEINT before the product with the weight (a deleted INT_MIN times
/// -1 would overflow its own type); HUGEINT rows of positive and of negative weight are summed
/// apart (`openivm_a<j>_sub`, subtracted by the merge first, since the delta of deleting
/// HUGEINT's minimum is not a HUGEINT); DOUBLE sums hold the finite inputs only, with signed
/// counts of +inf, -inf and NaN inputs beside them (a sum that once saw an infinity or a NaN
/// would otherwise stay non-finite after the row is deleted).
///
/// Counts (of rows, of non-NULL inputs, of infinities) are stored as BIGINT, as DuckDB's COUNT
/// is: SUM of integer weights would make them HUGEINT, and a stored, bit-packed 128-bit column
/// costs about 1.3 µs per value to scan on DuckDB 1.5.5 (50 ms for 38,000 groups, against 1 ms
/// as BIGINT), which every merge pays for the whole stored result.
pub fn aggregate_weighted(q: &ViewQuery, rows_sql: &str) -> String {
    aggregate_weighted_in(Dialect::DuckDb, q, rows_sql)
}

/// `aggregate_weighted` in dialect `d`.
pub fn aggregate_weighted_in(d: Dialect, q: &ViewQuery, rows_sql: &str) -> String {
    aggregate_rows(d, q, rows_sql, Weights::Signed)
}

/// The stored columns of `aggregate_weighted` for rows that all have weight 1 (the initial fill
/// and a recompute): DuckDB's own COUNT and SUM, without a product per row (5M rows, a SUM of
/// an INTEGER and of a DECIMAL: 0.39 s against 1.6 s weighted). The stored result is created
/// with `aggregate_weighted`'s types; an INSERT casts these to them.
///
/// A DOUBLE sum is taken as a plain SUM with no infinities or NaNs counted: a sum that comes out
/// finite saw only finite inputs (an infinity or a NaN never cancels back to a finite value), so
/// for it this is the exact state. Where `nonfinite_sums` finds a sum that did not come out
/// finite, the fill is redone with `aggregate_fill_exact`. The split into finite sum and
/// counts costs a CASE and three filtered counts per row: 2.8x a plain recompute on the 2M star.
pub fn aggregate_fill(q: &ViewQuery, rows_sql: &str) -> String {
    aggregate_rows(Dialect::DuckDb, q, rows_sql, Weights::Unit)
}

/// `aggregate_fill` with every DOUBLE sum split into its finite part and counts of +inf, -inf
/// and NaN inputs.
pub fn aggregate_fill_exact(q: &ViewQuery, rows_sql: &str) -> String {
    aggregate_rows(Dialect::DuckDb, q, rows_sql, Weights::UnitSplit)
}

/// A count of the stored rows of `data` whose DOUBLE sums a fast fill left non-finite, or None
/// when the view keeps no DOUBLE sum (then `aggregate_fill` is exact as it is).
pub fn nonfinite_sums(q: &ViewQuery, data: &Qualified) -> Option<String> {
    let Shape::Grouped { aggregates, .. } = &q.shape else { return None };
    let sums: Vec<String> = aggregates
        .iter()
        .enumerate()
        .filter(|(_, a)| {
            matches!(a.func, AggFunc::Sum | AggFunc::Avg) && SumInput::of(a.arg_type.as_deref()) == SumInput::Float
        })
        .map(|(j, _)| format!("NOT isfinite({})", ident(&stored::agg_sum(j))))
        .collect();
    (!sums.is_empty()).then(|| format!("SELECT count(*) FROM {} WHERE {}", data.sql(), sums.join(" OR ")))
}

/// What the rows being aggregated weigh.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Weights {
    /// Each row's signed weight is its `openivm_weight` column.
    Signed,
    /// Every row weighs 1: counts are COUNTs, sums plain SUMs (DOUBLE sums unsplit).
    Unit,
    /// Every row weighs 1, and DOUBLE sums are split as under `Signed`.
    UnitSplit,
}

fn aggregate_rows(d: Dialect, q: &ViewQuery, rows_sql: &str, weights: Weights) -> String {
    aggregate_rows_by(d, q, rows_sql, weights, &key_columns(q))
}

/// `aggregate_rows` grouped by the key columns `keys` of the rows (all of the view's, or the
/// matched ones of a `group_lookup`).
fn aggregate_rows_by(d: Dialect, q: &ViewQuery, rows_sql: &str, weights: Weights, keys: &[String]) -> String {
    let w = d.ident(WEIGHT);
    let unit = weights != Weights::Signed;
    // x times the row's weight, and the signed number of rows where cond holds
    let weighted = |x: &str| if unit { x.to_string() } else { format!("{x} * {w}") };
    let count_where = |cond: &str| {
        if unit {
            format!("COUNT(*) FILTER (WHERE {cond})")
        } else {
            format!("CAST(COALESCE(SUM(CASE WHEN {cond} THEN {w} ELSE 0 END), 0) AS BIGINT)")
        }
    };
    let mut cols = Vec::new();
    let sets = match &q.shape {
        Shape::Grouped { sets: Some(sets), .. } => Some(sets),
        _ => None,
    };
    match sets {
        // The key columns of the rows, and the set id DuckDB computes per grouping set.
        Some(g) => {
            let grouped = list(0..g.keys, ", ", |i| d.ident(&stored::group(i)));
            cols.push(grouped.clone());
            cols.push(format!("GROUPING_ID({grouped}) AS {}", d.ident(stored::GROUPING_SET)));
        }
        None => cols.extend(keys.iter().map(|k| d.ident(k))),
    }
    let count = if unit { "COUNT(*)".to_string() } else { format!("CAST(COALESCE(SUM({w}), 0) AS BIGINT)") };
    cols.push(format!("{count} AS {}", d.ident(stored::COUNT)));
    if let Some(compared) = q.compared {
        for side in 0..compared.sides() {
            let on_side = format!("{} = {side}", d.ident(stored::SIDE));
            cols.push(format!("{} AS {}", count_where(&on_side), d.ident(&stored::side_count(side))));
        }
    }
    if let Shape::Grouped { aggregates, .. } = &q.shape {
        for (j, a) in aggregates.iter().enumerate() {
            let v = d.ident(&value_col(value_slot(aggregates, j)));
            let count_of = |cond: String, col: String| format!("{} AS {}", count_where(&cond), d.ident(&col));
            let nonnull = if unit {
                format!("COUNT({v}) AS {}", d.ident(&stored::agg_nonnull(j)))
            } else {
                count_of(format!("{v} IS NOT NULL"), stored::agg_nonnull(j))
            };
            let sum_col = d.ident(&stored::agg_sum(j));
            match a.func {
                AggFunc::CountStar => {}
                // Recomputed per group: only ever aggregated over rows of weight 1 (a fill or the
                // recompute of touched groups); weighted rows give it its type only.
                AggFunc::Recomputed => {
                    if let Some(call) = &a.call {
                        let over = recomputed_over_payload(j, call).1;
                        cols.push(format!(
                            "{} AS {}",
                            expr_in(d, &Expr::Aggregate(Box::new(over)), &[]),
                            d.ident(&stored::agg_value(j))
                        ));
                    }
                }
                AggFunc::Count => cols.push(nonnull),
                AggFunc::Variance { .. } => {
                    let x = variance_integer(d, &v, a.arg_type.as_deref());
                    cols.push(format!("SUM({}) AS {sum_col}", weighted(&x)));
                    cols.push(format!(
                        "SUM({}) AS {}",
                        weighted(&format!("{x} * {x}")),
                        d.ident(&stored::agg_squares(j))
                    ));
                    cols.push(nonnull);
                }
                // Rows of positive weight: in an insert-only refresh every row of a negative
                // term is also a row of a positive one (the extremum is idempotent).
                AggFunc::Min | AggFunc::Max => {
                    let f = if a.func == AggFunc::Min { "MIN" } else { "MAX" };
                    let arg = if unit { v.clone() } else { format!("CASE WHEN {w} > 0 THEN {v} END") };
                    cols.push(format!("{f}({arg}) AS {}", d.ident(&stored::agg_extremum(j))));
                }
                AggFunc::Sum | AggFunc::Avg => {
                    let boolean = a.arg_type.as_deref().is_some_and(|t| t.eq_ignore_ascii_case("BOOLEAN"));
                    match SumInput::of(a.arg_type.as_deref()) {
                        // DuckDB's own SUM of an integer is exact (and HUGEINT) already.
                        SumInput::Integer if unit && !boolean => cols.push(format!("SUM({v}) AS {sum_col}")),
                        SumInput::Integer => cols.push(format!(
                            "SUM({}) AS {sum_col}",
                            weighted(&format!("CAST({v} AS {})", d.wide_integer()))
                        )),
                        SumInput::Hugeint if unit => {
                            cols.push(format!("SUM({v}) AS {sum_col}"));
                            cols.push(format!("CAST(NULL AS HUGEINT) AS {}", d.ident(&stored::agg_subtracted(j))));
                        }
                        SumInput::Hugeint => {
                            cols.push(format!("SUM(CASE WHEN {w} > 0 THEN {v} * {w} END) AS {sum_col}"));
                            cols.push(format!(
                                "SUM(CASE WHEN {w} < 0 THEN {v} * (-{w}) END) AS {}",
                                d.ident(&stored::agg_subtracted(j))
                            ));
                        }
                        SumInput::Float if weights == Weights::Unit => {
                            cols.push(format!("SUM(CAST({v} AS DOUBLE)) AS {sum_col}"));
                            for col in [stored::agg_pos_inf(j), stored::agg_neg_inf(j), stored::agg_nan(j)] {
                                cols.push(format!("CAST(0 AS BIGINT) AS {}", d.ident(&col)));
                            }
                        }
                        SumInput::Float => {
                            let x = format!("CAST({v} AS DOUBLE)");
                            cols.push(format!(
                                "SUM(CASE WHEN {} THEN {} END) AS {sum_col}",
                                d.is_finite(&x),
                                weighted(&x)
                            ));
                            cols.push(count_of(format!("{x} = CAST('inf' AS DOUBLE)"), stored::agg_pos_inf(j)));
                            cols.push(count_of(format!("{x} = CAST('-inf' AS DOUBLE)"), stored::agg_neg_inf(j)));
                            cols.push(count_of(format!("isnan({x})"), stored::agg_nan(j)));
                        }
                        SumInput::Decimal | SumInput::Other => cols.push(format!("SUM({}) AS {sum_col}", weighted(&v))),
                    }
                    cols.push(nonnull);
                }
            }
        }
    }
    let group_by = match sets {
        Some(g) => format!(
            " GROUP BY GROUPING SETS ({})",
            list(&g.sets, ", ", |set| format!("({})", list(set, ", ", |&i| d.ident(&stored::group(i)))))
        ),
        None if keys.is_empty() => String::new(),
        None => format!(" GROUP BY {}", list(1..=keys.len(), ", ", |i| i.to_string())),
    };
    format!("SELECT {} FROM ({}) AS openivm_rows{}", cols.join(", "), rows_sql, group_by)
}

/// How a merge combines a stored column with its delta.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MergeRule {
    /// `stored + delta` (NULL counts as 0).
    Add,
    /// `list_sum([stored, delta])`: a DECIMAL(38,s) sum, which DuckDB's SUM lets grow past 38
    /// digits (up to HUGEINT's range) where `+` fails with an overflow.
    Unbounded,
    /// `(stored - delta.<column>) + delta`: the named delta column is subtracted first.
    SubtractFirst(String),
    /// `LEAST(stored, delta)` / `GREATEST(stored, delta)` (NULL counts as no value): MIN/MAX
    /// under insert-only deltas.
    Least,
    Greatest,
}

/// A column a merge adds up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summed {
    pub column: String,
    pub rule: MergeRule,
}

impl Summed {
    pub fn added(column: String) -> Summed {
        Summed { column, rule: MergeRule::Add }
    }
}

/// The names of the stored result's columns: keys, and the aggregate state with how a delta is
/// merged into each.
pub fn stored_columns(q: &ViewQuery) -> (Vec<String>, Vec<Summed>) {
    let keys = key_columns(q);
    let mut state = Vec::new();
    if let Some(compared) = q.compared {
        state.extend((0..compared.sides()).map(|side| Summed::added(stored::side_count(side))));
    }
    if let Shape::Grouped { aggregates, .. } = &q.shape {
        for (j, a) in aggregates.iter().enumerate() {
            match a.func {
                // Never merged: a view with such an aggregate recomputes the groups a delta touches.
                AggFunc::CountStar | AggFunc::Recomputed => {}
                AggFunc::Count => state.push(Summed::added(stored::agg_nonnull(j))),
                AggFunc::Variance { .. } => {
                    state.push(Summed::added(stored::agg_sum(j)));
                    state.push(Summed::added(stored::agg_squares(j)));
                    state.push(Summed::added(stored::agg_nonnull(j)));
                }
                AggFunc::Min => state.push(Summed { column: stored::agg_extremum(j), rule: MergeRule::Least }),
                AggFunc::Max => state.push(Summed { column: stored::agg_extremum(j), rule: MergeRule::Greatest }),
                AggFunc::Sum | AggFunc::Avg => {
                    let sum = stored::agg_sum(j);
                    match SumInput::of(a.arg_type.as_deref()) {
                        SumInput::Hugeint => state
                            .push(Summed { column: sum, rule: MergeRule::SubtractFirst(stored::agg_subtracted(j)) }),
                        SumInput::Decimal => state.push(Summed { column: sum, rule: MergeRule::Unbounded }),
                        SumInput::Float => {
                            state.push(Summed::added(sum));
                            state.push(Summed::added(stored::agg_pos_inf(j)));
                            state.push(Summed::added(stored::agg_neg_inf(j)));
                            state.push(Summed::added(stored::agg_nan(j)));
                        }
                        SumInput::Integer | SumInput::Other => state.push(Summed::added(sum)),
                    }
                    state.push(Summed::added(stored::agg_nonnull(j)));
                }
            }
        }
    }
    (keys, state)
}

/// How a MERGE of a counted delta into a counted table is set up.
pub struct CountedMerge<'a> {
    pub target: &'a Qualified,
    pub source: &'a str,
    /// Key columns, matched with IS NOT DISTINCT FROM (NULL keys are keys too).
    pub keys: &'a [String],
    /// The keys the match needs when fewer than all (`merge_keys`: they determine the others).
    pub matched: Option<&'a [String]>,
    pub target_count: &'a str,
    pub source_count: &'a str,
    /// Further columns that are added up (see `MergeRule`).
    pub summed: &'a [Summed],
    /// Whether a row whose count reaches 0 disappears (false for the one row of a global aggregate).
    pub delete_at_zero: bool,
    /// A row of this grouping set (`openivm_gset`) stays at count 0: the empty set's one row,
    /// which exists over no input, as a global aggregate's does.
    pub kept_set: Option<i64>,
    /// Where the target lives: a DuckLake target takes the MERGE without its DELETE action and a
    /// DELETE of the rows at count 0 after it.
    pub storage: Storage,
}

/// MERGE of signed counts: rows present in both are added up (and deleted at count 0), new rows
/// with a positive count are inserted. One statement, or two for a DuckLake target.
pub fn counted_merge(m: &CountedMerge) -> Vec<String> {
    counted_merge_in(Dialect::DuckDb, m)
}

/// `counted_merge` in dialect `dl`.
pub fn counted_merge_in(dl: Dialect, m: &CountedMerge) -> Vec<String> {
    let (t, d) = ("openivm_t", "openivm_d");
    let matched = m.matched.unwrap_or(m.keys);
    let on = if matched.is_empty() {
        "TRUE".to_string()
    } else {
        list(matched, " AND ", |k| {
            let k = dl.ident(k);
            dl.not_distinct(&format!("{t}.{k}"), &format!("{d}.{k}"))
        })
    };
    let (tc, sc) = (dl.ident(m.target_count), dl.ident(m.source_count));
    let mut set = vec![format!("{tc} = {t}.{tc} + {d}.{sc}")];
    set.extend(m.summed.iter().map(|s| {
        let c = dl.ident(&s.column);
        match &s.rule {
            MergeRule::Add => format!("{c} = COALESCE({t}.{c}, 0) + COALESCE({d}.{c}, 0)"),
            MergeRule::Unbounded => format!("{c} = {}", dl.unbounded_add(&format!("{t}.{c}"), &format!("{d}.{c}"))),
            // LEAST/GREATEST skip NULLs in DuckDB and in Spark SQL alike.
            MergeRule::Least => format!("{c} = LEAST({t}.{c}, {d}.{c})"),
            MergeRule::Greatest => format!("{c} = GREATEST({t}.{c}, {d}.{c})"),
            MergeRule::SubtractFirst(sub) => {
                format!(
                    "{c} = (COALESCE({t}.{c}, 0) - COALESCE({d}.{sub}, 0)) + COALESCE({d}.{c}, 0)",
                    sub = dl.ident(sub)
                )
            }
        }
    }));
    let mut insert_cols: Vec<String> = m.keys.iter().map(|k| dl.ident(k)).collect();
    insert_cols.push(tc.clone());
    insert_cols.extend(m.summed.iter().map(|s| dl.ident(&s.column)));
    let mut insert_vals: Vec<String> = m.keys.iter().map(|k| format!("{d}.{}", dl.ident(k))).collect();
    insert_vals.push(format!("{d}.{sc}"));
    // A new row's sum is the delta's own. Under SubtractFirst a new row can have rows of
    // negative weight too (a term with two delta leaves subtracts what two one-leaf terms
    // counted twice), so it is the positive part minus the negative one. DuckDB evaluates the
    // INSERT values for matched rows too, where that difference may overflow: TRY makes it NULL
    // there (a new row's own sum is a real group's sum, which fits).
    insert_vals.extend(m.summed.iter().map(|s| {
        let c = format!("{d}.{}", dl.ident(&s.column));
        match &s.rule {
            MergeRule::SubtractFirst(sub) => {
                let sub = format!("{d}.{}", dl.ident(sub));
                format!(
                    "CASE WHEN {sub} IS NULL THEN {c} ELSE {} END",
                    dl.try_subtract(&format!("COALESCE({c}, 0)"), &sub)
                )
            }
            _ => c,
        }
    }));
    let kept = match m.kept_set {
        Some(id) => format!(" AND {t}.{} <> {id}", dl.ident(stored::GROUPING_SET)),
        None => String::new(),
    };
    let split = m.storage == Storage::DuckLake;
    let delete = if m.delete_at_zero && !split {
        format!("WHEN MATCHED AND {t}.{tc} + {d}.{sc} = 0{kept} THEN DELETE ")
    } else {
        String::new()
    };
    let target = m.target.sql_in(dl);
    let merge = format!(
        "MERGE INTO {target} AS {t} USING ({source}) AS {d} ON {on} {delete}WHEN MATCHED THEN UPDATE SET {set} \
         WHEN NOT MATCHED AND {d}.{sc} > 0 THEN INSERT ({ic}) VALUES ({iv})",
        source = m.source,
        set = set.join(", "),
        ic = insert_cols.join(", "),
        iv = insert_vals.join(", "),
    );
    if !(split && m.delete_at_zero) {
        return vec![merge];
    }
    // Rows are only ever at count 0 for the moment between the two statements (the kept set's
    // row and a global aggregate's excepted), so the DELETE needs no key of the delta.
    vec![merge, format!("DELETE FROM {target} AS {t} WHERE {t}.{tc} = 0{kept}")]
}

/// Applies a view delta (the aggregated union of the run terms) to the stored result.
/// `matched`: the positions of the group keys that determine the others in this refresh
/// (`merge_keys::MergeKeys`), to match on alone; None matches on every key.
pub fn apply_view_delta(
    storage: Storage,
    q: &ViewQuery,
    data: &Qualified,
    delta_sql: &str,
    matched: Option<&[usize]>,
) -> Vec<String> {
    apply_view_delta_in(Dialect::DuckDb, storage, q, data, delta_sql, matched)
}

/// `apply_view_delta` in dialect `d`.
pub fn apply_view_delta_in(
    d: Dialect,
    storage: Storage,
    q: &ViewQuery,
    data: &Qualified,
    delta_sql: &str,
    matched: Option<&[usize]>,
) -> Vec<String> {
    let (keys, state) = stored_columns(q);
    let matched = matched_keys(&keys, matched);
    let global = matches!(&q.shape, Shape::Grouped { keys, .. } if keys.is_empty());
    let empty_set = match &q.shape {
        Shape::Grouped { sets: Some(g), .. } => g.empty_set_id(),
        _ => None,
    };
    counted_merge_in(
        d,
        &CountedMerge {
            target: data,
            source: delta_sql,
            keys: &keys,
            matched: Some(&matched),
            target_count: stored::COUNT,
            source_count: stored::COUNT,
            summed: &state,
            delete_at_zero: !global,
            kept_set: empty_set,
            storage,
        },
    )
}

/// The stored key columns a merge matches on: those at the positions `matched` (the group keys
/// that determine the others, `merge_keys`), or every key (None, or no position among them).
pub fn matched_keys(keys: &[String], matched: Option<&[usize]>) -> Vec<String> {
    let chosen: Vec<String> = matched.unwrap_or_default().iter().filter_map(|&i| keys.get(i).cloned()).collect();
    if chosen.is_empty() {
        keys.to_vec()
    } else {
        chosen
    }
}

/// The distinct group keys of payload rows (`openivm_g<i>`): the groups the run terms of a
/// refresh touch.
pub fn touched_keys(q: &ViewQuery, rows_sql: &str) -> String {
    let keys = list(key_columns(q), ", ", |k| ident(&k));
    format!("SELECT DISTINCT {keys} FROM ({rows_sql}) AS openivm_rows")
}

/// `a.k = b.k AND ...` over the key columns, NULL-safe (a NULL key is a group too).
fn keys_match(q: &ViewQuery, a: &str, b: &str) -> String {
    let d = Dialect::DuckDb;
    let on =
        list(key_columns(q), " AND ", |k| d.not_distinct(&format!("{a}.{}", ident(&k)), &format!("{b}.{}", ident(&k))));
    if on.is_empty() {
        "TRUE".into()
    } else {
        on
    }
}

/// Deletes the stored groups whose keys are in the table `keys` (from `touched_keys`).
pub fn delete_groups(q: &ViewQuery, data: &Qualified, keys: &Qualified) -> String {
    format!(
        "DELETE FROM {} AS openivm_t WHERE EXISTS (SELECT 1 FROM {} AS openivm_k WHERE {})",
        data.sql(),
        keys.sql(),
        keys_match(q, "openivm_t", "openivm_k")
    )
}

/// The stored rows of the groups whose keys are in the table `keys` (NULL-safe), as a
/// parenthesized SELECT; every row of a view without keys (one global group).
pub fn stored_of_groups(q: &ViewQuery, data: &Qualified, keys: &Qualified) -> String {
    if key_columns(q).is_empty() {
        return format!("(SELECT * FROM {})", data.sql());
    }
    format!(
        "(SELECT * FROM {} AS openivm_t WHERE EXISTS (SELECT 1 FROM {} AS openivm_k WHERE {}))",
        data.sql(),
        keys.sql(),
        keys_match(q, "openivm_t", "openivm_k")
    )
}

/// How each stored sum is finalized, from the stored result's column types.
pub fn sum_kinds(q: &ViewQuery, data_columns: &[ColumnDef]) -> Vec<SumKind> {
    (0..q.aggregate_count())
        .map(|j| {
            let sum = stored::agg_sum(j);
            data_columns.iter().find(|c| c.name == sum).map_or(SumKind::Float, |c| SumKind::of(&c.ty))
        })
        .collect()
}

/// Payload rows restricted to the groups whose keys are in the table `keys`: a semi-join on the
/// key tuple, NULL-safe.
pub fn rows_of_groups(q: &ViewQuery, rows_sql: &str, keys: &Qualified) -> String {
    format!(
        "SELECT openivm_r.* FROM ({rows_sql}) AS openivm_r SEMI JOIN {} AS openivm_k ON {}",
        keys.sql(),
        keys_match(q, "openivm_r", "openivm_k")
    )
}

/// One output column of the view as the user sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputColumn {
    pub name: String,
    pub ty: String,
    /// The collation DuckDB gives the column (a stored column keeps it, so that the view
    /// compares, orders and groups its values as the query does).
    pub collation: Option<String>,
}

/// The user-facing view over the stored result: finalizes aggregates (AVG = sum / count, SUM of
/// only NULLs = NULL), evaluates the select list over them, and for bag views repeats each row
/// as many times as it occurs.
/// How an AVG's stored sum is typed, which decides how the view divides it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SumKind {
    /// An integer sum (HUGEINT, BIGINT, ...).
    Integer,
    /// A DECIMAL sum of this scale.
    Decimal(u8),
    /// A floating-point sum.
    Float,
}

impl SumKind {
    pub fn of(type_name: &str) -> SumKind {
        match decimal_scale(type_name) {
            Some(s) => SumKind::Decimal(s),
            None if ["HUGEINT", "BIGINT", "INTEGER", "SMALLINT", "TINYINT"].iter().any(|t| type_name.ends_with(t)) => {
                SumKind::Integer
            }
            None => SumKind::Float,
        }
    }
}

/// How the host DuckDB finishes an AVG of integers and decimals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AvgRule {
    /// DuckDB 1.5: the exact sum divided in extended precision (`exact_average`).
    Exact,
    /// DuckDB 2: `CAST(sum AS DOUBLE) / count`.
    DoubleSum,
}

static HOST_AVG_DOUBLE_SUM: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Records the host DuckDB's major version (when the extension loads): it decides `AvgRule`.
pub fn set_host_major(major: u32) {
    HOST_AVG_DOUBLE_SUM.store(major >= 2, std::sync::atomic::Ordering::Relaxed);
}

/// The host's `AvgRule`.
pub fn host_avg_rule() -> AvgRule {
    if HOST_AVG_DOUBLE_SUM.load(std::sync::atomic::Ordering::Relaxed) {
        AvgRule::DoubleSum
    } else {
        AvgRule::Exact
    }
}

/// How DuckDB finishes AVG `j` of a grouped query on a host whose rule is `host`. DuckDB 1.5
/// runs its AVG aggregate. DuckDB 2's optimizer turns AVG(x) into `CAST(SUM(x) AS DOUBLE) /
/// COUNT(x)` when there are no groups, or when that shares an aggregate the query computes
/// anyway: SUM(x) or COUNT(x), or, when x has no NULLs (its COUNT is then COUNT(*)), COUNT(*) or
/// the COUNT or AVG of another input without NULLs. Whether x has NULLs is a fact of DuckDB's
/// statistics, which no view query can follow: taken here as none.
fn avg_rule(keys: &[Expr], sets: bool, aggregates: &[Aggregate], j: usize, host: AvgRule) -> AvgRule {
    if host == AvgRule::Exact || (keys.is_empty() && !sets) {
        return host;
    }
    let shares = aggregates.iter().enumerate().any(|(i, b)| {
        i != j
            && match b.func {
                AggFunc::Sum => b.arg == aggregates[j].arg,
                AggFunc::Count | AggFunc::CountStar | AggFunc::Avg => true,
                _ => false,
            }
    });
    if shares {
        AvgRule::DoubleSum
    } else {
        AvgRule::Exact
    }
}

/// AVG as DuckDB computes it. DuckDB 2 divides the sum cast to DOUBLE by the count. DuckDB 1.5:
/// the exact (unscaled) integer sum divided by count · 10^scale in
/// extended precision. Below 2^53 in magnitude (a range test, since abs() of HUGEINT's minimum
/// overflows) both operands are exact doubles and one division rounds correctly; above, the integer quotient and the remainder are divided separately so that the
/// sum is not rounded before the division.
///
/// A DECIMAL(38,s) sum may exceed 38 digits (DuckDB's SUM lets it), and `sum * 10^s` overflows
/// long before: the unscaled sum is therefore built from the integer part and the fraction
/// (`trunc(sum) * 10^s + (sum - trunc(sum)) * 10^s`, exact for every scale up to 18), and only a
/// sum beyond 38 digits is divided as a double.
fn exact_average(sum: &str, nn: &str, kind: SumKind, rule: AvgRule) -> String {
    let double = format!("CAST({sum} AS DOUBLE) / {nn}");
    let (u, d, guard) = match kind {
        _ if rule == AvgRule::DoubleSum => return format!("CASE WHEN {nn} = 0 THEN NULL ELSE {double} END"),
        SumKind::Integer | SumKind::Decimal(0) => {
            (format!("CAST({sum} AS HUGEINT)"), format!("CAST({nn} AS HUGEINT)"), String::new())
        }
        SumKind::Decimal(scale) if scale <= 18 => {
            let factor = format!("1{}", "0".repeat(scale as usize));
            (
                format!(
                    "(CAST(trunc({sum}) AS HUGEINT) * {factor} + CAST(({sum} - trunc({sum})) * {factor} AS HUGEINT))"
                ),
                format!("(CAST({nn} AS HUGEINT) * {factor})"),
                format!("WHEN abs(CAST({sum} AS DOUBLE)) >= 1e{} THEN {double} ", 38 - i32::from(scale)),
            )
        }
        _ => return format!("CASE WHEN {nn} = 0 THEN NULL ELSE {double} END"),
    };
    format!(
        "CASE WHEN {nn} = 0 THEN NULL {guard}WHEN {u} BETWEEN -9007199254740991 AND 9007199254740991 THEN CAST({u} AS DOUBLE) / CAST({d} AS DOUBLE) \
         ELSE CAST({u} // {d} AS DOUBLE) + CAST({u} % {d} AS DOUBLE) / CAST({d} AS DOUBLE) END"
    )
}

/// A variance's input as an exact integer: the value itself, or a DECIMAL's unscaled value.
fn variance_integer(d: Dialect, v: &str, arg_type: Option<&str>) -> String {
    match crate::ir::variance_input(arg_type).unwrap_or(0) {
        0 => format!("CAST({v} AS {})", d.wide_integer()),
        s => format!("CAST({v} * 1{} AS {})", "0".repeat(s as usize), d.wide_integer()),
    }
}

/// VAR_POP / VAR_SAMP from the exact count `n`, sum `s` and sum of squares `q` of the (unscaled)
/// inputs: n·q - s² is computed exactly in HUGEINT and divided once in DOUBLE (n² or n(n-1),
/// then 10^(2·scale)), so the result is within a rounding of the exact variance; DuckDB's own
/// streaming (Welford) computation is within about 1e-14 of it, so the two can differ in the
/// last bits. Up to 2^31 rows n·q cannot overflow (|x| < 2^32); beyond, the DOUBLE form
/// q - s²/n is used. NULL for no input, and VAR_SAMP of one input, as in DuckDB.
fn exact_variance(s: &str, q: &str, n: &str, population: bool, scale: u8) -> String {
    let (k, few) = if population { (0, 0) } else { (1, 1) };
    let denominator = format!("(CAST({n} AS DOUBLE) * CAST({n} - {k} AS DOUBLE))");
    let exact = format!("CAST(CAST({n} AS HUGEINT) * {q} - {s} * {s} AS DOUBLE) / {denominator}");
    let wide = format!(
        "(CAST({q} AS DOUBLE) - CAST({s} AS DOUBLE) * CAST({s} AS DOUBLE) / CAST({n} AS DOUBLE)) / CAST({n} - {k} AS DOUBLE)"
    );
    let unscale = if scale == 0 { String::new() } else { format!(" / 1e{}", 2 * u32::from(scale)) };
    format!("(CASE WHEN {n} <= {few} THEN NULL WHEN {n} <= 2147483647 THEN {exact} ELSE {wide} END){unscale}")
}

/// A floating SUM as DuckDB's addition gives it, from the sum of the finite inputs and the
/// signed counts of +inf, -inf and NaN inputs: NaN if any input was NaN; the NaN of inf + -inf
/// (which prints as `-nan`) if both infinities occur; else the finite sum plus the infinity that
/// occurs (a finite sum that overflowed to the other infinity gives NaN, as in DuckDB); else the
/// finite sum.
fn float_sum(j: usize) -> String {
    let (sum, pinf, ninf, nan) = (
        ident(&stored::agg_sum(j)),
        ident(&stored::agg_pos_inf(j)),
        ident(&stored::agg_neg_inf(j)),
        ident(&stored::agg_nan(j)),
    );
    format!(
        "CASE WHEN {nan} > 0 THEN CAST('nan' AS DOUBLE) \
         WHEN {pinf} > 0 AND {ninf} > 0 THEN CAST('inf' AS DOUBLE) + CAST('-inf' AS DOUBLE) \
         WHEN {pinf} > 0 THEN COALESCE({sum}, 0) + CAST('inf' AS DOUBLE) \
         WHEN {ninf} > 0 THEN COALESCE({sum}, 0) + CAST('-inf' AS DOUBLE) ELSE {sum} END"
    )
}

/// `sum_kinds[j]` says how aggregate j's sum column is typed (see `exact_average`).
pub fn visible_view(q: &ViewQuery, data: &Qualified, outputs: &[OutputColumn], sum_kinds: &[SumKind]) -> String {
    visible_rows(q, &data.in_own_database(), outputs, sum_kinds)
}

/// The rows a view shows, read from `from` (its stored result, or a part of it as a
/// parenthesized SELECT): what `visible_view` shows of those stored rows.
pub fn visible_rows(q: &ViewQuery, from: &str, outputs: &[OutputColumn], sum_kinds: &[SumKind]) -> String {
    let p = &q.presentation;
    // DuckDB's row-group pruner (1.5.5 and 2.0.1) serves an ORDER BY ... LIMIT whose first key is
    // a stored column from the row groups whose statistics promise the first rows, trusting that
    // the rows behind a row group's min and max are still there. A merge or a recompute deletes
    // rows of the stored result, and a checkpointed row group keeps their statistics, so the
    // pruner could skip the row groups holding the rows the view shows (LIMIT 1 gave no row).
    // It does not prune a scan that has a filter: every stored row has a count of at least 0.
    let top_n = !p.order_by.is_empty() && !p.distinct && (p.limit.is_some() || p.offset.is_some());
    let from = if top_n { format!("{from} WHERE {} >= 0", ident(stored::COUNT)) } else { from.to_string() };
    let exprs: Vec<Expr> = match &q.shape {
        Shape::Grouped { outputs, .. } => outputs.clone(),
        Shape::Bag { outputs, .. } => (0..outputs.len()).map(|i| Expr::column(&stored::group(i))).collect(),
    };
    let select = list(exprs.iter().zip(outputs), ", ", |(e, o)| {
        format!("CAST({} AS {}) AS {}", expr(e, &[]), o.ty, ident(&o.name))
    });
    let inner = match &q.shape {
        Shape::Grouped { aggregates, keys, sets, .. } => {
            let mut cols: Vec<String> = key_columns(q).iter().map(|k| ident(k)).collect();
            for (j, a) in aggregates.iter().enumerate() {
                let (mut sum, nn) = (ident(&stored::agg_sum(j)), ident(&stored::agg_nonnull(j)));
                if SumInput::of(a.arg_type.as_deref()) == SumInput::Float {
                    sum = format!("({})", float_sum(j));
                }
                let fin = match a.func {
                    AggFunc::CountStar => ident(stored::COUNT),
                    AggFunc::Count => nn,
                    AggFunc::Min | AggFunc::Max => ident(&stored::agg_extremum(j)),
                    AggFunc::Recomputed => ident(&stored::agg_value(j)),
                    AggFunc::Variance { population, root } => {
                        let scale = crate::ir::variance_input(a.arg_type.as_deref()).unwrap_or(0);
                        let squares = ident(&stored::agg_squares(j));
                        let var = exact_variance(&ident(&stored::agg_sum(j)), &squares, &nn, population, scale);
                        if root {
                            format!("sqrt({var})")
                        } else {
                            var
                        }
                    }
                    AggFunc::Sum => format!("CASE WHEN {nn} = 0 THEN NULL ELSE {sum} END"),
                    AggFunc::Avg => {
                        let rule = avg_rule(keys, sets.is_some(), aggregates, j, host_avg_rule());
                        exact_average(&sum, &nn, sum_kinds.get(j).copied().unwrap_or(SumKind::Float), rule)
                    }
                };
                cols.push(format!("{fin} AS {}", ident(&stored::agg(j))));
            }
            if cols.is_empty() {
                cols.push(ident(stored::COUNT));
            }
            format!("SELECT {} FROM {from}", cols.join(", "))
        }
        // INTERSECT / EXCEPT over rows kept apart by more than DuckDB's equality: see
        // `compared_by_equality`.
        Shape::Bag { outputs: bag, text_identity }
            if q.compared.is_some() && text_identity.iter().any(|&t| t != Identity::Equal) =>
        {
            compared_by_equality(q.compared, bag.len(), from.as_str())
        }
        // INTERSECT / EXCEPT: a row's copies follow from its copies on each side.
        Shape::Bag { .. } if q.compared.is_some() => {
            let count = |side: u8| ident(&stored::side_count(side));
            let (c0, c1) = (count(0), count(1));
            let copies = match q.compared {
                Some(Compared::Intersect { all: true, sides }) => format!("LEAST({})", list(0..sides, ", ", count)),
                Some(Compared::Intersect { all: false, sides }) => {
                    format!("CASE WHEN {} THEN 1 ELSE 0 END", list(0..sides, " AND ", |s| format!("{} > 0", count(s))))
                }
                Some(Compared::Except { all: true }) => format!("GREATEST({c0} - {c1}, 0)"),
                _ => format!("CASE WHEN {c0} > 0 AND {c1} = 0 THEN 1 ELSE 0 END"),
            };
            format!("SELECT *, UNNEST(range(CAST({copies} AS BIGINT))) AS openivm_copy FROM {from}")
        }
        // DISTINCT reads each stored row once; otherwise a row is repeated for its copies.
        Shape::Bag { .. } if q.presentation.distinct => format!("SELECT * FROM {from}"),
        Shape::Bag { .. } => format!(
            "SELECT *, UNNEST(range(CAST({c} AS BIGINT))) AS openivm_copy FROM {from}",
            c = ident(stored::COUNT)
        ),
    };
    let distinct = if p.distinct { "DISTINCT " } else { "" };
    let mut sql = format!("SELECT {distinct}{select} FROM ({inner}) AS openivm_r");
    if let Some(h) = &p.having {
        sql.push_str(&format!(" WHERE {}", expr(h, &[])));
    }
    if !p.order_by.is_empty() {
        let keys = list(&p.order_by, ", ", |o| {
            let key = match &o.key {
                OrderKey::Output(i) => outputs.get(*i).map_or_else(|| "NULL".to_string(), |c| ident(&c.name)),
                OrderKey::Stored(e) => expr(e, &[]),
            };
            format!("{key}{}", order_suffix(o.descending, o.nulls_first))
        });
        sql.push_str(&format!(" ORDER BY {keys}"));
    }
    if let Some(n) = p.limit {
        sql.push_str(&format!(" LIMIT {n}"));
    }
    if let Some(n) = p.offset {
        sql.push_str(&format!(" OFFSET {n}"));
    }
    sql
}

/// The stored rows of an INTERSECT / EXCEPT view with copies of each, where a stored row is one
/// spelling ('a', 'A' under NOCASE; INTERVAL '1 month', '30 days') of a value DuckDB's set
/// operation compares as one: the sides' counts are summed over the value's spellings (a window
/// partitioned by the stored columns compares as the operation does), and its copies are shown
/// by the first operand's spellings, the first copies of the first operand first (DuckDB shows
/// one of them, its arbitrary choice).
fn compared_by_equality(compared: Option<Compared>, n_outputs: usize, from: &str) -> String {
    let partition = list(0..n_outputs, ", ", |i| ident(&stored::group(i)));
    let sides = compared.map_or(2, Compared::sides);
    let total = |s: u8| format!("openivm_total{s}");
    let c0 = ident(&stored::side_count(0));
    // The first operand's copies in the stored rows of the value before this one.
    let before = "openivm_before";
    let first = format!("{c0} > 0 AND {before} = 0");
    let copies = match compared {
        Some(Compared::Intersect { all: true, sides }) => {
            format!("GREATEST(LEAST({c0}, LEAST({}) - {before}), 0)", list(0..sides, ", ", total))
        }
        Some(Compared::Intersect { all: false, sides }) => {
            format!(
                "CASE WHEN {first} AND {} THEN 1 ELSE 0 END",
                list(0..sides, " AND ", |s| format!("{} > 0", total(s)))
            )
        }
        Some(Compared::Except { all: true }) => {
            format!("GREATEST(LEAST({c0}, {} - {before} - {}), 0)", total(0), total(1))
        }
        _ => format!("CASE WHEN {first} AND {} = 0 THEN 1 ELSE 0 END", total(1)),
    };
    let totals =
        list(0..sides, ", ", |s| format!("sum({}) OVER openivm_w AS {}", ident(&stored::side_count(s)), total(s)));
    format!(
        "SELECT *, UNNEST(range(CAST({copies} AS BIGINT))) AS openivm_copy FROM (SELECT *, {totals}, \
         COALESCE(sum({c0}) OVER (openivm_w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS {before} \
         FROM {from} WINDOW openivm_w AS (PARTITION BY {partition})) AS openivm_e"
    )
}

/// The user-facing view of a full view: the stored result as the query gave it, read in the
/// order it was stored when the query orders its rows.
pub fn full_view(data: &Qualified, outputs: &[OutputColumn], ordered: bool) -> String {
    let cols = list(outputs, ", ", |o| ident(&o.name));
    if ordered {
        format!("SELECT {cols} FROM {} ORDER BY rowid", data.sql())
    } else {
        format!("SELECT {cols} FROM {}", data.sql())
    }
}

/// The scale of a DECIMAL type as DuckDB names it (`DECIMAL(38,2)` -> 2).
pub fn decimal_scale(type_name: &str) -> Option<u8> {
    u8::try_from(decimal_parts(type_name)?.1).ok()
}

/// (width, scale) of a DECIMAL type name as DuckDB prints it (`DECIMAL(18,2)`); None for
/// another type.
pub fn decimal_parts(type_name: &str) -> Option<(u32, u32)> {
    let inner = type_name.trim().strip_prefix("DECIMAL(")?.strip_suffix(')')?;
    let mut parts = inner.split(',').map(|p| p.trim().parse::<u32>().ok());
    Some((parts.next()??, parts.next()??))
}

/// The columns of a change-capture snapshot and delta: the base columns a view reads.
pub fn column_list(cols: &[ColumnDef]) -> Vec<String> {
    cols.iter().map(|c| c.name.clone()).collect()
}

/// Whether DuckDB's equality on a type is coarser than what it prints: `INTERVAL '1 month'`
/// equals `'30 days'`, `DOUBLE` 0.0 equals -0.0. Grouping such values would merge different
/// spellings, so they are grouped by their text as well.
pub fn needs_text_identity(type_name: &str) -> bool {
    ["INTERVAL", "FLOAT", "DOUBLE", "REAL"].iter().any(|t| type_name.to_ascii_uppercase().contains(t))
}

fn with_comma(cols: &[String]) -> String {
    list(cols, "", |c| format!("{c}, "))
}

/// DuckDB's types of expressions over the leaves of a join, one output column each (only
/// bound, nothing runs). The expressions are all row-level or all aggregates.
pub fn describe_expressions(leaves: &[Leaf], exprs: &[Expr]) -> String {
    let aliases: Vec<String> = leaves.iter().map(|l| l.alias.clone()).collect();
    format!(
        "DESCRIBE SELECT {} FROM {}",
        list(exprs.iter().enumerate(), ", ", |(i, e)| format!(
            "{} AS {}",
            expr(e, &aliases),
            ident(&format!("openivm_e{i}"))
        )),
        list(leaves, ", ", |l| format!("{} AS {}", table(&l.table), ident(&l.alias)))
    )
}

/// A query's output columns as an empty table's (`create_temp_table_as`), whose catalog entry
/// shows what DESCRIBE does not: the columns' collations.
pub fn no_rows_of(query: &str) -> String {
    format!("SELECT * FROM ({query}) AS openivm_q LIMIT 0")
}

/// DuckDB's names and types of a query's output columns (the query is the user's own SELECT,
/// already checked to be exactly one statement by the parser).
pub fn describe(query: &str) -> String {
    format!("DESCRIBE {query}")
}

/// A UNION ALL of one row of NULLs per branch, each cast to that branch's column types: its
/// description gives DuckDB's unified type of every column of such a union.
pub fn typed_union(branches: &[Vec<String>]) -> String {
    let row = |types: &Vec<String>| {
        let cols = list(types.iter().enumerate(), ", ", |(i, t)| format!("CAST(NULL AS {t}) AS c{i}"));
        format!("SELECT {cols}")
    };
    list(branches, " UNION ALL ", row)
}

/// The query of the stage of an IN subquery: its distinct values (`sql` is DuckDB's own text of
/// the subquery, from its parse tree).
pub fn distinct_stage(sql: &str) -> String {
    format!("SELECT DISTINCT * FROM ({sql}) AS {}", ident("in_subquery"))
}

pub fn create_view(name: &Qualified, select: &str) -> String {
    format!("CREATE VIEW {} AS {}", name.sql(), select)
}

pub fn drop_view(name: &Qualified) -> String {
    format!("DROP VIEW IF EXISTS {}", name.sql())
}

pub fn count_rows(name: &Qualified) -> String {
    format!("SELECT count(*)::BIGINT FROM {}", name.sql())
}

pub fn create_table_as(name: &Qualified, select: &str) -> String {
    format!("CREATE TABLE {} AS {}", name.sql(), select)
}

pub fn create_temp_table_as(name: &Qualified, select: &str) -> String {
    format!("CREATE TEMP TABLE {} AS {}", ident(&name.name), select)
}

/// Rows of a recompute (materialized in `recompute`, with `columns`) that the view lacks, and
/// rows of the view the recompute lacks (multisets: duplicates count). Collated columns are
/// compared by their bytes: EXCEPT ALL would take 'a' and 'A' as one value under NOCASE.
pub fn verify_counts(view: &Qualified, recompute: &Qualified, columns: &[ColumnDef], by_bytes: bool) -> String {
    let exact = if by_bytes && columns.iter().any(|c| c.collation.is_some()) {
        list(columns, ", ", |c| match c.collation {
            Some(_) => format!("encode({})", ident(&c.name)),
            None => ident(&c.name),
        })
    } else {
        "*".to_string()
    };
    format!(
        "SELECT (SELECT count(*) FROM (SELECT {exact} FROM {r} EXCEPT ALL SELECT {exact} FROM {v}))::BIGINT, \
         (SELECT count(*) FROM (SELECT {exact} FROM {v} EXCEPT ALL SELECT {exact} FROM {r}))::BIGINT",
        v = view.sql(),
        r = ident(&recompute.name)
    )
}

pub fn delete_all(name: &Qualified) -> String {
    format!("DELETE FROM {}", name.sql())
}

pub fn insert_into(name: &Qualified, select: &str) -> String {
    format!("INSERT INTO {} {}", name.sql(), select)
}

/// The rowid the next insert into a table gets while nothing is deleted from it.
pub fn next_rowid(t: &TableId) -> String {
    format!("SELECT (coalesce(max(rowid), -1) + 1)::VARCHAR FROM {}", table(t))
}

pub fn select_all(name: &Qualified) -> String {
    format!("SELECT * FROM {}", name.sql())
}

pub fn drop_table(name: &Qualified) -> String {
    format!("DROP TABLE IF EXISTS {}", name.sql())
}

/// The incarnation tokens of one source database's tables (durable, in that database).
pub fn generations_table(catalog: &str) -> Qualified {
    Qualified { catalog: catalog.to_string(), schema: "main".into(), name: "openivm_source_generations".into() }
}

pub fn create_generations(catalog: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {} (table_schema VARCHAR NOT NULL, table_name VARCHAR NOT NULL, \
         token VARCHAR NOT NULL, columns_signature VARCHAR NOT NULL, created_at TIMESTAMP)",
        generations_table(catalog).sql()
    )
}

/// Parameters: table_schema, table_name, token, columns_signature.
pub fn insert_generation(catalog: &str) -> String {
    format!("INSERT INTO {} VALUES (?, ?, ?, ?, now()::TIMESTAMP)", generations_table(catalog).sql())
}

/// Parameters: table_schema, table_name, token.
pub fn find_generation(catalog: &str) -> String {
    format!(
        "SELECT columns_signature FROM {} WHERE table_schema = ? AND table_name = ? AND token = ?",
        generations_table(catalog).sql()
    )
}

/// The trusted RELY foreign keys kept in the metadata of the database `catalog`, both endpoints
/// fully qualified (rows without a catalog or schema, written by hand or by earlier versions, are
/// never used). Catalogs as stored there (see src/home.rs).
pub fn rely_declarations(catalog: &str) -> String {
    let cache =
        Qualified { catalog: catalog.to_string(), schema: "main".into(), name: "openivm_constraints_cache".into() };
    format!(
        "SELECT child_catalog, child_schema, child_table, child_columns, \
         parent_catalog, parent_schema, parent_table, parent_columns, \
         coalesce(child_token, ''), coalesce(parent_token, '') FROM {} \
         WHERE constraint_kind = 'RELY_FK' AND is_trusted \
         AND child_catalog IS NOT NULL AND child_schema IS NOT NULL \
         AND parent_catalog IS NOT NULL AND parent_schema IS NOT NULL",
        cache.sql()
    )
}

pub fn comment_on_view(v: &Qualified, comment: &str) -> String {
    format!("COMMENT ON VIEW {} IS {}", v.sql(), literal(comment))
}

pub fn comment_on_column(t: &TableId, column: &str, comment: &str) -> String {
    format!("COMMENT ON COLUMN {}.{} IS {}", table(t), ident(column), literal(comment))
}

pub fn union_all(selects: &[String]) -> String {
    selects.join(" UNION ALL ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::bind::bind;
    use crate::front::bind::tests::{star_select, TestCatalog};

    #[test]
    fn quotes_identifiers_and_literals() {
        assert_eq!(ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(literal("it's"), "'it''s'");
        assert_eq!(constant(&Constant::Decimal { digits: 15, scale: 1 }), "1.5");
        assert_eq!(constant(&Constant::Decimal { digits: -5, scale: 2 }), "(-0.05)");
        assert_eq!(constant(&Constant::Double(2500.0)), "2.5e3");
        assert_eq!(constant(&Constant::Integer(-3)), "(-3)");
    }

    #[test]
    fn extrema_take_positive_rows_and_merge_with_least_greatest() {
        let mut s = star_select();
        s.items[1].expr = Expr::Function {
            name: "min".into(),
            args: vec![Expr::Column(vec!["f".into(), "amount".into()])],
            is_operator: false,
        };
        s.items.push(crate::ast::SelectItem {
            expr: Expr::Function {
                name: "max".into(),
                args: vec![Expr::Column(vec!["f".into(), "amount".into()])],
                is_operator: false,
            },
            alias: None,
        });
        let q = bind(s, &TestCatalog::star()).unwrap();
        assert!(q.has_extrema());
        let agg = aggregate_weighted(&q, "SELECT 1");
        assert!(
            agg.contains(r#"MIN(CASE WHEN "openivm_weight" > 0 THEN "openivm_v0" END) AS "openivm_a0_ext""#),
            "{agg}"
        );
        assert!(
            // MIN and MAX of one argument read one value column
            agg.contains(r#"MAX(CASE WHEN "openivm_weight" > 0 THEN "openivm_v0" END) AS "openivm_a1_ext""#),
            "{agg}"
        );
        let (_, state) = stored_columns(&q);
        assert_eq!(state[0], Summed { column: "openivm_a0_ext".into(), rule: MergeRule::Least });
        assert_eq!(state[1], Summed { column: "openivm_a1_ext".into(), rule: MergeRule::Greatest });
        let merge = apply_view_delta(Storage::DuckDb, &q, &Qualified::temp("d".into()), "SELECT 1", None).join("; ");
        assert!(
            merge.contains(r#""openivm_a0_ext" = LEAST(openivm_t."openivm_a0_ext", openivm_d."openivm_a0_ext")"#),
            "{merge}"
        );
    }

    #[test]
    fn recomputed_aggregates_project_their_inputs_and_recompute_touched_groups() {
        let mut s = star_select();
        let amount = || Expr::Column(vec!["f".into(), "amount".into()]);
        // string_agg(DISTINCT f.amount, ',' ORDER BY f.amount DESC) FILTER (WHERE f.amount > 1)
        let call = AggCall {
            name: "string_agg".into(),
            args: vec![amount(), Expr::Constant(Constant::Text(",".into()))],
            distinct: true,
            order_by: vec![crate::ast::OrderItem { key: amount(), descending: Some(true), nulls_first: None }],
            filter: Some(Expr::Compare {
                op: CompareOp::Gt,
                left: Box::new(amount()),
                right: Box::new(Expr::Constant(Constant::Integer(1))),
            }),
        };
        s.items[1].expr = Expr::Aggregate(Box::new(call));
        let q = bind(s, &TestCatalog::star()).unwrap();
        // the column input is projected once (and the filter), the separator stays a constant
        let sources: Vec<Source> = q.leaves.iter().map(|l| Source::Current(l.table.clone())).collect();
        let term = term_select(&q, Term { mask: 0, sign: 1 }, &sources);
        assert!(
            term.contains(r#""f"."amount" AS "openivm_v0_0", ("f"."amount" > 1) AS "openivm_v0_1", (1)"#),
            "{term}"
        );
        let fill = aggregate_fill(&q, "SELECT 1");
        assert!(
            fill.contains(
                r#"string_agg(DISTINCT "openivm_v0_0", ',' ORDER BY "openivm_v0_0" DESC) FILTER (WHERE "openivm_v0_1") AS "openivm_a0_val""#
            ),
            "{fill}"
        );
        // never merged; the view reads the finished value
        assert!(stored_columns(&q).1.is_empty());
        let data = Qualified { catalog: "db".into(), schema: "openivm".into(), name: "data_main_v".into() };
        let view = visible_view(
            &q,
            &data,
            &[
                OutputColumn { name: "name".into(), ty: "VARCHAR".into(), collation: None },
                OutputColumn { name: "s".into(), ty: "VARCHAR".into(), collation: None },
            ],
            &[],
        );
        assert!(view.contains(r#""openivm_a0_val" AS "openivm_a0""#), "{view}");
        // the touched groups: distinct keys, deleted and recomputed NULL-safely
        let keys = Qualified::temp("k".into());
        assert_eq!(touched_keys(&q, "SELECT 1"), r#"SELECT DISTINCT "openivm_g0" FROM (SELECT 1) AS openivm_rows"#);
        assert_eq!(
            delete_groups(&q, &data, &keys),
            r#"DELETE FROM "db"."openivm"."data_main_v" AS openivm_t WHERE EXISTS (SELECT 1 FROM "temp"."main"."k" AS openivm_k WHERE openivm_t."openivm_g0" IS NOT DISTINCT FROM openivm_k."openivm_g0")"#
        );
        assert!(rows_of_groups(&q, "SELECT 1", &keys).ends_with(
            r#"SEMI JOIN "temp"."main"."k" AS openivm_k ON openivm_r."openivm_g0" IS NOT DISTINCT FROM openivm_k."openivm_g0""#
        ));
    }

    #[test]
    fn variances_keep_exact_sums_of_squares_and_divide_once() {
        // VAR_SAMP: NULL below 2 inputs; n·q - s² exact in HUGEINT up to 2^31 rows, then DOUBLE
        let v = exact_variance("s", "q", "n", false, 0);
        assert_eq!(
            v,
            "(CASE WHEN n <= 1 THEN NULL WHEN n <= 2147483647 THEN CAST(CAST(n AS HUGEINT) * q - s * s AS DOUBLE) / \
             (CAST(n AS DOUBLE) * CAST(n - 1 AS DOUBLE)) ELSE (CAST(q AS DOUBLE) - CAST(s AS DOUBLE) * CAST(s AS DOUBLE) \
             / CAST(n AS DOUBLE)) / CAST(n - 1 AS DOUBLE) END)"
        );
        // VAR_POP of a DECIMAL(9,2): 0 for one input, unscaled by 10^4
        let v = exact_variance("s", "q", "n", true, 2);
        assert!(v.starts_with("(CASE WHEN n <= 0 THEN NULL") && v.ends_with(" END) / 1e4"), "{v}");
        assert_eq!(variance_integer(Dialect::DuckDb, "x", Some("DECIMAL(9,2)")), "CAST(x * 100 AS HUGEINT)");
        assert_eq!(variance_integer(Dialect::DuckDb, "x", Some("INTEGER")), "CAST(x AS HUGEINT)");
    }

    #[test]
    fn renders_each_construct() {
        let a = vec!["t".to_string()];
        let c = || Box::new(Expr::Bound { leaf: 0, column: "x".into() });
        let k = |i| Box::new(Expr::Constant(Constant::Integer(i)));
        let cases: Vec<(Expr, &str)> = vec![
            (Expr::Compare { op: CompareOp::GtEq, left: c(), right: k(1) }, r#"("t"."x" >= 1)"#),
            (Expr::Between { expr: c(), low: k(1), high: k(2) }, r#"("t"."x" BETWEEN 1 AND 2)"#),
            (Expr::InList { expr: c(), list: vec![*k(1), *k(2)], negated: true }, r#"("t"."x" NOT IN (1, 2))"#),
            (Expr::IsNull { expr: c(), negated: false }, r#"("t"."x" IS NULL)"#),
            (Expr::Not(Box::new(Expr::Or(vec![*c(), *k(0)]))), r#"(NOT ("t"."x" OR 0))"#),
            (
                Expr::Function {
                    name: "~~".into(),
                    args: vec![*c(), Expr::Constant(Constant::Text("a%".into()))],
                    is_operator: true,
                },
                r#"("t"."x" LIKE 'a%')"#,
            ),
            (Expr::Function { name: "+".into(), args: vec![*c(), *k(1)], is_operator: true }, r#"("t"."x" + 1)"#),
            (Expr::Function { name: "upper".into(), args: vec![*c()], is_operator: false }, r#"upper("t"."x")"#),
            (
                Expr::Case { checks: vec![(*c(), *k(1))], otherwise: Box::new(Expr::Constant(Constant::Null)) },
                r#"CASE WHEN "t"."x" THEN 1 ELSE NULL END"#,
            ),
            (
                Expr::Cast {
                    expr: c(),
                    ty: TypeName { id: "DECIMAL".into(), decimal: Some((10, 2)) },
                    try_cast: false,
                },
                r#"CAST("t"."x" AS DECIMAL(10,2))"#,
            ),
            (Expr::Coalesce(vec![*c(), *k(0)]), r#"COALESCE("t"."x", 0)"#),
            (Expr::Compare { op: CompareOp::DistinctFrom, left: c(), right: k(1) }, r#"("t"."x" IS DISTINCT FROM 1)"#),
            (Expr::IsNull { expr: c(), negated: true }, r#"("t"."x" IS NOT NULL)"#),
            (Expr::And(vec![*c(), *k(1)]), r#"("t"."x" AND 1)"#),
            (
                Expr::Function {
                    name: "!~~*".into(),
                    args: vec![*c(), Expr::Constant(Constant::Text("A%".into()))],
                    is_operator: true,
                },
                r#"("t"."x" NOT ILIKE 'A%')"#,
            ),
            (Expr::Function { name: "-".into(), args: vec![*c()], is_operator: true }, r#"(- "t"."x")"#),
            (
                Expr::Cast { expr: c(), ty: TypeName { id: "INTEGER".into(), decimal: None }, try_cast: true },
                r#"TRY_CAST("t"."x" AS INTEGER)"#,
            ),
            (Expr::Function { name: "count_star".into(), args: vec![], is_operator: false }, "count(*)"),
            (Expr::Function { name: "My Func".into(), args: vec![*c()], is_operator: false }, r#""My Func"("t"."x")"#),
            (
                Expr::Function { name: "position".into(), args: vec![*c(), *k(1)], is_operator: false },
                r#""position"("t"."x", 1)"#,
            ),
            (Expr::Constant(Constant::Bool(false)), "FALSE"),
            (Expr::Constant(Constant::Null), "NULL"),
            (Expr::Constant(Constant::Double(-0.5)), "(-5e-1)"),
            (Expr::Column(vec!["openivm_g0".into()]), r#""openivm_g0""#),
            (
                Expr::Struct(vec![("a b".into(), *k(1)), ("c".into(), *c())]),
                r#"struct_pack("a b" := 1, "c" := "t"."x")"#,
            ),
            (
                Expr::Function { name: "list_value".into(), args: vec![*k(1), *c()], is_operator: false },
                r#"list_value(1, "t"."x")"#,
            ),
            (
                Expr::Function {
                    name: "like_escape".into(),
                    args: vec![
                        *c(),
                        Expr::Constant(Constant::Text("a!%".into())),
                        Expr::Constant(Constant::Text("!".into())),
                    ],
                    is_operator: false,
                },
                r#"like_escape("t"."x", 'a!%', '!')"#,
            ),
        ];
        for (e, want) in cases {
            assert_eq!(expr(&e, &a), want);
        }
    }

    #[test]
    fn reads_decimal_scales() {
        assert_eq!(decimal_scale("DECIMAL(38,2)"), Some(2));
        assert_eq!(decimal_scale("DECIMAL(18, 0)"), Some(0));
        assert_eq!(decimal_scale("HUGEINT"), None);
        assert_eq!(SumKind::of("DECIMAL(38,4)"), SumKind::Decimal(4));
        assert_eq!(SumKind::of("HUGEINT"), SumKind::Integer);
        assert_eq!(SumKind::of("DOUBLE"), SumKind::Float);
    }

    #[test]
    fn renders_a_term_with_its_weight() {
        let q = bind(star_select(), &TestCatalog::star()).unwrap();
        let delta = Qualified::temp("openivm_delta_product".into());
        let sources = vec![
            Source::Current(q.leaves[0].table.clone()),
            Source::Delta(delta),
            Source::Current(q.leaves[2].table.clone()),
        ];
        let sql = term_select(&q, Term { mask: 0b010, sign: 1 }, &sources);
        assert_eq!(
            sql,
            "SELECT \"p\".\"name\" AS \"openivm_g0\", \"f\".\"amount\" AS \"openivm_v0\", \
             (1 * \"p\".\"openivm_multiplicity\") AS \"openivm_weight\" \
             FROM \"memory\".\"main\".\"fact\" AS \"f\", \"temp\".\"main\".\"openivm_delta_product\" AS \"p\", \
             \"memory\".\"main\".\"store\" AS \"s\" \
             WHERE (\"f\".\"pid\" = \"p\".\"pid\") AND (\"f\".\"sid\" = \"s\".\"sid\")"
        );
    }

    #[test]
    fn aggregates_weighted_rows_into_stored_state() {
        let q = bind(star_select(), &TestCatalog::star()).unwrap();
        assert_eq!(
            aggregate_weighted(&q, "TERMS"),
            "SELECT \"openivm_g0\", CAST(COALESCE(SUM(\"openivm_weight\"), 0) AS BIGINT) AS \"openivm_count\", \
             SUM(\"openivm_v0\" * \"openivm_weight\") AS \"openivm_a0_sum\", \
             CAST(COALESCE(SUM(CASE WHEN \"openivm_v0\" IS NOT NULL THEN \"openivm_weight\" ELSE 0 END), 0) AS BIGINT) AS \"openivm_a0_nn\" \
             FROM (TERMS) AS openivm_rows GROUP BY 1"
        );
    }

    #[test]
    fn fills_stored_state_with_duckdbs_own_aggregates() {
        let tail = " FROM (ROWS) AS openivm_rows GROUP BY 1";
        let head = "SELECT \"openivm_g0\", COUNT(*) AS \"openivm_count\", ";
        let nn = "COUNT(\"openivm_v0\") AS \"openivm_a0_nn\"";
        assert_eq!(
            aggregate_fill(&typed_sum("DECIMAL(38,2)"), "ROWS"),
            format!("{head}SUM(\"openivm_v0\") AS \"openivm_a0_sum\", {nn}{tail}")
        );
        assert_eq!(
            aggregate_fill(&typed_sum("HUGEINT"), "ROWS"),
            format!(
                "{head}SUM(\"openivm_v0\") AS \"openivm_a0_sum\", CAST(NULL AS HUGEINT) AS \"openivm_a0_sub\", {nn}{tail}"
            )
        );
        let d = "CAST(\"openivm_v0\" AS DOUBLE)";
        // A plain SUM first: exact wherever it comes out finite (checked by `nonfinite_sums`).
        assert_eq!(
            aggregate_fill(&typed_sum("DOUBLE"), "ROWS"),
            format!(
                "{head}SUM({d}) AS \"openivm_a0_sum\", CAST(0 AS BIGINT) AS \"openivm_a0_pinf\", \
                 CAST(0 AS BIGINT) AS \"openivm_a0_ninf\", CAST(0 AS BIGINT) AS \"openivm_a0_nan\", {nn}{tail}"
            )
        );
        let data = Qualified { catalog: "db".into(), schema: "openivm".into(), name: "data_v".into() };
        assert_eq!(
            nonfinite_sums(&typed_sum("DOUBLE"), &data).as_deref(),
            Some("SELECT count(*) FROM \"db\".\"openivm\".\"data_v\" WHERE NOT isfinite(\"openivm_a0_sum\")")
        );
        assert_eq!(nonfinite_sums(&typed_sum("DECIMAL(38,2)"), &data), None);
        assert_eq!(
            aggregate_fill_exact(&typed_sum("DOUBLE"), "ROWS"),
            format!(
                "{head}SUM(CASE WHEN isfinite({d}) THEN {d} END) AS \"openivm_a0_sum\", \
                 COUNT(*) FILTER (WHERE {d} = CAST('inf' AS DOUBLE)) AS \"openivm_a0_pinf\", \
                 COUNT(*) FILTER (WHERE {d} = CAST('-inf' AS DOUBLE)) AS \"openivm_a0_ninf\", \
                 COUNT(*) FILTER (WHERE isnan({d})) AS \"openivm_a0_nan\", {nn}{tail}"
            )
        );
    }

    /// The star view with its one SUM typed as DuckDB would type its argument.
    fn typed_sum(ty: &str) -> ViewQuery {
        let mut q = bind(star_select(), &TestCatalog::star()).unwrap();
        if let Shape::Grouped { aggregates, .. } = &mut q.shape {
            aggregates[0].arg_type = Some(ty.to_string());
        }
        q
    }

    #[test]
    fn grouping_sets_aggregate_per_set_and_keep_the_empty_sets_row() {
        let mut q = typed_sum("INTEGER");
        if let Shape::Grouped { keys, sets, .. } = &mut q.shape {
            keys.push(keys[0].clone());
            *sets = Some(crate::ir::GroupingSets { sets: vec![vec![0, 1], vec![1], vec![]], keys: 2 });
        }
        let sql = aggregate_weighted(&q, "TERMS");
        assert!(
            sql.starts_with(
                "SELECT \"openivm_g0\", \"openivm_g1\", GROUPING_ID(\"openivm_g0\", \"openivm_g1\") AS \"openivm_gset\", "
            ),
            "{sql}"
        );
        assert!(
            sql.ends_with(
                " FROM (TERMS) AS openivm_rows GROUP BY GROUPING SETS ((\"openivm_g0\", \"openivm_g1\"), (\"openivm_g1\"), ())"
            ),
            "{sql}"
        );
        let data = Qualified { catalog: "db".into(), schema: "openivm".into(), name: "data_v".into() };
        let merge = apply_view_delta(Storage::DuckDb, &q, &data, "DELTA", None).join("; ");
        // the set id is a key; the empty set (both keys left out: id 3) is never deleted
        assert!(merge.contains("openivm_d.\"openivm_gset\""), "{merge}");
        assert!(
            merge.contains(
                "WHEN MATCHED AND openivm_t.\"openivm_count\" + openivm_d.\"openivm_count\" = 0 AND openivm_t.\"openivm_gset\" <> 3 THEN DELETE"
            ),
            "{merge}"
        );
    }

    #[test]
    fn keeps_each_sum_exact_by_its_argument_type() {
        let (v, w) = ("\"openivm_v0\"", "\"openivm_weight\"");
        let nn = format!(
            "CAST(COALESCE(SUM(CASE WHEN {v} IS NOT NULL THEN {w} ELSE 0 END), 0) AS BIGINT) AS \"openivm_a0_nn\""
        );
        let head = format!("SELECT \"openivm_g0\", CAST(COALESCE(SUM({w}), 0) AS BIGINT) AS \"openivm_count\", ");
        let tail = " FROM (TERMS) AS openivm_rows GROUP BY 1";
        // integers: widened before the product, so INT_MIN * -1 cannot overflow
        assert_eq!(
            aggregate_weighted(&typed_sum("INTEGER"), "TERMS"),
            format!("{head}SUM(CAST({v} AS HUGEINT) * {w}) AS \"openivm_a0_sum\", {nn}{tail}")
        );
        // HUGEINT: rows of positive and negative weight apart, never a negated value
        assert_eq!(
            aggregate_weighted(&typed_sum("HUGEINT"), "TERMS"),
            format!(
                "{head}SUM(CASE WHEN {w} > 0 THEN {v} * {w} END) AS \"openivm_a0_sum\", \
                 SUM(CASE WHEN {w} < 0 THEN {v} * (-{w}) END) AS \"openivm_a0_sub\", {nn}{tail}"
            )
        );
        // DOUBLE: finite inputs summed, +inf / -inf / NaN counted
        let d = format!("CAST({v} AS DOUBLE)");
        assert_eq!(
            aggregate_weighted(&typed_sum("DOUBLE"), "TERMS"),
            format!(
                "{head}SUM(CASE WHEN isfinite({d}) THEN {d} * {w} END) AS \"openivm_a0_sum\", \
                 CAST(COALESCE(SUM(CASE WHEN {d} = CAST('inf' AS DOUBLE) THEN {w} ELSE 0 END), 0) AS BIGINT) AS \"openivm_a0_pinf\", \
                 CAST(COALESCE(SUM(CASE WHEN {d} = CAST('-inf' AS DOUBLE) THEN {w} ELSE 0 END), 0) AS BIGINT) AS \"openivm_a0_ninf\", \
                 CAST(COALESCE(SUM(CASE WHEN isnan({d}) THEN {w} ELSE 0 END), 0) AS BIGINT) AS \"openivm_a0_nan\", {nn}{tail}"
            )
        );
        assert_eq!(
            aggregate_weighted(&typed_sum("DECIMAL(38,2)"), "TERMS"),
            format!("{head}SUM({v} * {w}) AS \"openivm_a0_sum\", {nn}{tail}")
        );

        // the merge: DECIMAL sums past 38 digits through list_sum, HUGEINT sums subtract first
        let data = Qualified { catalog: "db".into(), schema: "main".into(), name: "d".into() };
        let merge = apply_view_delta(Storage::DuckDb, &typed_sum("DECIMAL(38,2)"), &data, "DELTA", None).join("; ");
        assert!(merge
            .contains("\"openivm_a0_sum\" = list_sum([openivm_t.\"openivm_a0_sum\", openivm_d.\"openivm_a0_sum\"])"));
        let merge = apply_view_delta(Storage::DuckDb, &typed_sum("HUGEINT"), &data, "DELTA", None).join("; ");
        assert!(merge.contains(
            "\"openivm_a0_sum\" = (COALESCE(openivm_t.\"openivm_a0_sum\", 0) - COALESCE(openivm_d.\"openivm_a0_sub\", 0)) \
             + COALESCE(openivm_d.\"openivm_a0_sum\", 0)"
        ));
        // a new group subtracts its rows of negative weight too (TRY: matched rows compute it as well)
        assert!(merge.contains(
            "VALUES (openivm_d.\"openivm_g0\", openivm_d.\"openivm_count\", CASE WHEN openivm_d.\"openivm_a0_sub\" IS NULL \
             THEN openivm_d.\"openivm_a0_sum\" ELSE TRY(COALESCE(openivm_d.\"openivm_a0_sum\", 0) - openivm_d.\"openivm_a0_sub\") END, "
        ));
        let merge = apply_view_delta(Storage::DuckDb, &typed_sum("DOUBLE"), &data, "DELTA", None).join("; ");
        for c in ["pinf", "ninf", "nan"] {
            assert!(merge.contains(&format!(
                "\"openivm_a0_{c}\" = COALESCE(openivm_t.\"openivm_a0_{c}\", 0) + COALESCE(openivm_d.\"openivm_a0_{c}\", 0)"
            )));
        }

        // the visible view finalizes a DOUBLE sum as DuckDB's addition would
        let outputs = vec![
            OutputColumn { name: "name".into(), ty: "VARCHAR".into(), collation: None },
            OutputColumn { name: "total".into(), ty: "DOUBLE".into(), collation: None },
        ];
        let view = visible_view(&typed_sum("DOUBLE"), &data, &outputs, &[SumKind::Float]);
        assert!(view.contains(
            "CASE WHEN \"openivm_a0_nn\" = 0 THEN NULL ELSE (CASE WHEN \"openivm_a0_nan\" > 0 THEN CAST('nan' AS DOUBLE) \
             WHEN \"openivm_a0_pinf\" > 0 AND \"openivm_a0_ninf\" > 0 THEN CAST('inf' AS DOUBLE) + CAST('-inf' AS DOUBLE) \
             WHEN \"openivm_a0_pinf\" > 0 THEN COALESCE(\"openivm_a0_sum\", 0) + CAST('inf' AS DOUBLE) \
             WHEN \"openivm_a0_ninf\" > 0 THEN COALESCE(\"openivm_a0_sum\", 0) + CAST('-inf' AS DOUBLE) \
             ELSE \"openivm_a0_sum\" END) END AS \"openivm_a0\""
        ), "{view}");
        assert_eq!(SumInput::of(Some("UBIGINT")), SumInput::Integer);
        assert_eq!(SumInput::of(Some("UHUGEINT")), SumInput::Float);
        assert_eq!(SumInput::of(Some("DECIMAL(18,4)")), SumInput::Decimal);
        assert_eq!(SumInput::of(Some("INTERVAL")), SumInput::Other);
        assert_eq!(SumInput::of(None), SumInput::Other);
    }

    #[test]
    fn finalizes_aggregates_in_the_visible_view() {
        let q = bind(star_select(), &TestCatalog::star()).unwrap();
        let data = Qualified { catalog: "db".into(), schema: "openivm".into(), name: "data_main_v".into() };
        let outputs = vec![
            OutputColumn { name: "name".into(), ty: "VARCHAR".into(), collation: None },
            OutputColumn { name: "total".into(), ty: "HUGEINT".into(), collation: None },
        ];
        assert_eq!(
            visible_view(&q, &data, &outputs, &[SumKind::Integer]),
            "SELECT CAST(\"openivm_g0\" AS VARCHAR) AS \"name\", CAST(\"openivm_a0\" AS HUGEINT) AS \"total\" \
             FROM (SELECT \"openivm_g0\", CASE WHEN \"openivm_a0_nn\" = 0 THEN NULL ELSE \"openivm_a0_sum\" END AS \"openivm_a0\" \
             FROM \"openivm\".\"data_main_v\") AS openivm_r"
        );
        assert_eq!(
            exact_average("s", "n", SumKind::Decimal(2), AvgRule::Exact),
            "CASE WHEN n = 0 THEN NULL WHEN abs(CAST(s AS DOUBLE)) >= 1e36 THEN CAST(s AS DOUBLE) / n \
             WHEN (CAST(trunc(s) AS HUGEINT) * 100 + CAST((s - trunc(s)) * 100 AS HUGEINT)) BETWEEN -9007199254740991 AND 9007199254740991 \
             THEN CAST((CAST(trunc(s) AS HUGEINT) * 100 + CAST((s - trunc(s)) * 100 AS HUGEINT)) AS DOUBLE) / CAST((CAST(n AS HUGEINT) * 100) AS DOUBLE) \
             ELSE CAST((CAST(trunc(s) AS HUGEINT) * 100 + CAST((s - trunc(s)) * 100 AS HUGEINT)) // (CAST(n AS HUGEINT) * 100) AS DOUBLE) \
             + CAST((CAST(trunc(s) AS HUGEINT) * 100 + CAST((s - trunc(s)) * 100 AS HUGEINT)) % (CAST(n AS HUGEINT) * 100) AS DOUBLE) \
             / CAST((CAST(n AS HUGEINT) * 100) AS DOUBLE) END"
        );
        // a DECIMAL(38,0) sum, which may hold 39 digits, is never multiplied
        assert!(exact_average("s", "n", SumKind::Decimal(0), AvgRule::Exact)
            .starts_with("CASE WHEN n = 0 THEN NULL WHEN CAST(s AS HUGEINT) BETWEEN"));
        // DuckDB 2 divides the sum cast to DOUBLE, whatever its type
        for kind in [SumKind::Decimal(2), SumKind::Integer, SumKind::Float] {
            assert_eq!(
                exact_average("s", "n", kind, AvgRule::DoubleSum),
                "CASE WHEN n = 0 THEN NULL ELSE CAST(s AS DOUBLE) / n END"
            );
        }
    }

    /// The merge of a delta keyed by `k` with one summed column `s` into `target`.
    fn keyed_merge(target: &Qualified, delete_at_zero: bool, kept_set: Option<i64>, storage: Storage) -> Vec<String> {
        counted_merge(&CountedMerge {
            target,
            source: "SELECT 1",
            keys: &["k".into()],
            matched: None,
            target_count: "openivm_count",
            source_count: "openivm_count",
            summed: &[Summed::added("s".into())],
            delete_at_zero,
            kept_set,
            storage,
        })
    }

    #[test]
    fn merge_handles_null_keys_and_zero_counts() {
        let target = Qualified { catalog: "db".into(), schema: "main".into(), name: "d".into() };
        let sql = keyed_merge(&target, true, None, Storage::DuckDb).join("; ");
        assert!(
            sql.contains("\"openivm_t\".\"k\" IS NOT DISTINCT FROM \"openivm_d\".\"k\"")
                || sql.contains("openivm_t.\"k\" IS NOT DISTINCT FROM openivm_d.\"k\"")
        );
        assert!(sql.contains("THEN DELETE"));
        assert!(sql.contains("WHEN NOT MATCHED AND openivm_d.\"openivm_count\" > 0"));
    }

    #[test]
    fn a_ducklake_target_merges_then_deletes_the_rows_at_zero() {
        let target = Qualified { catalog: "lake".into(), schema: "openivm".into(), name: "d".into() };
        let merge = |delete_at_zero, kept_set| keyed_merge(&target, delete_at_zero, kept_set, Storage::DuckLake);
        // DuckLake's MERGE takes one UPDATE/DELETE action: the update, then a DELETE
        let two = merge(true, None);
        assert_eq!(two.len(), 2, "{two:?}");
        assert!(!two[0].contains("THEN DELETE") && two[0].contains("THEN UPDATE SET"), "{}", two[0]);
        assert_eq!(two[1], "DELETE FROM \"lake\".\"openivm\".\"d\" AS openivm_t WHERE openivm_t.\"openivm_count\" = 0");
        // the empty grouping set's row stays at count 0
        assert!(merge(true, Some(3))[1].ends_with(" = 0 AND openivm_t.\"openivm_gset\" <> 3"));
        // a global aggregate's one row is never deleted
        assert_eq!(merge(false, None).len(), 1);
    }
}
