//! The user-facing view over the stored result: finalized aggregates (exact averages and
//! variances), shown rows of set operations, presentation.

use super::dialect::Dialect;
use super::expr::{expr, order_suffix};
use super::quote::{ident, list, Qualified};
use super::term::key_columns;
use crate::ast::{Compared, Expr};
use crate::ir::{stored, AggFunc, Aggregate, ColumnDef, Identity, OrderKey, Shape, SumInput, ViewQuery};

/// How each stored sum is finalized, from the stored result's column types.
pub fn sum_kinds(q: &ViewQuery, data_columns: &[ColumnDef]) -> Vec<SumKind> {
    (0..q.aggregate_count())
        .map(|j| {
            let sum = stored::agg_sum(j);
            data_columns.iter().find(|c| c.name == sum).map_or(SumKind::Float, |c| SumKind::of(&c.ty))
        })
        .collect()
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

impl AvgRule {
    /// As `openivm_views.avg_finish` stores it.
    pub fn as_str(self) -> &'static str {
        match self {
            AvgRule::Exact => "exact",
            AvgRule::DoubleSum => "double_sum",
        }
    }

    pub fn parse(s: &str) -> Option<AvgRule> {
        match s {
            "exact" => Some(AvgRule::Exact),
            "double_sum" => Some(AvgRule::DoubleSum),
            _ => None,
        }
    }
}

pub(crate) static HOST_AVG_DOUBLE_SUM: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

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
pub(crate) fn avg_rule(keys: &[Expr], sets: bool, aggregates: &[Aggregate], j: usize, host: AvgRule) -> AvgRule {
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
/// the exact (unscaled) integer sum divided by count · 10^scale in extended precision, which
/// rounds as the exact quotient does. Below 2^53 in magnitude (a range test, since abs() of
/// HUGEINT's minimum overflows), and at that minimum (-2^127), both operands are exact doubles
/// and one division rounds correctly. Above, the sum is not rounded before the division: its
/// magnitude's integer quotient q and remainder r are taken apart (DuckDB 1.5 casts a negative
/// HUGEINT to DOUBLE inexactly, a positive one exactly). From q = 2^53 on, every rounding
/// midpoint is an even integer, so q + r/d rounds as the integer 2q + sign(r) does, halved;
/// below, q is exact and r/d adds the fraction.
///
/// A DECIMAL(38,s) sum may exceed 38 digits (DuckDB's SUM lets it), and `sum * 10^s` overflows
/// long before: the unscaled sum is therefore built from the integer part and the fraction
/// (`trunc(sum) * 10^s + (sum - trunc(sum)) * 10^s`, exact for every scale up to 18), and only a
/// sum beyond 38 digits is divided as a double.
pub(crate) fn exact_average(sum: &str, nn: &str, kind: SumKind, rule: AvgRule) -> String {
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
    let (q, r) = (format!("abs({u}) // {d}"), format!("abs({u}) % {d}"));
    format!(
        "CASE WHEN {nn} = 0 THEN NULL {guard}WHEN {u} BETWEEN -9007199254740991 AND 9007199254740991 \
         OR {u} = -170141183460469231731687303715884105728 THEN CAST({u} AS DOUBLE) / CAST({d} AS DOUBLE) \
         ELSE sign({u}) * CASE WHEN {q} >= 9007199254740992 THEN CAST(2 * ({q}) + sign({r}) AS DOUBLE) / 2 \
         ELSE CAST({q} AS DOUBLE) + CAST({r} AS DOUBLE) / CAST({d} AS DOUBLE) END END"
    )
}

/// A variance's input as an exact integer: the value itself, or a DECIMAL's unscaled value.
pub(crate) fn variance_integer(d: Dialect, v: &str, arg_type: Option<&str>) -> String {
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
pub(crate) fn exact_variance(s: &str, q: &str, n: &str, population: bool, scale: u8) -> String {
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
pub(crate) fn float_sum(j: usize) -> String {
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

/// `sum_kinds[j]` says how aggregate j's sum column is typed (see `exact_average`);
/// `avg_finish`: how DuckDB finished the query's AVGs when it was read (None: `avg_rule`).
pub fn visible_view(
    q: &ViewQuery,
    data: &Qualified,
    outputs: &[OutputColumn],
    sum_kinds: &[SumKind],
    avg_finish: Option<AvgRule>,
) -> String {
    visible_rows(q, &data.in_own_database(), outputs, sum_kinds, avg_finish)
}

/// The rows a view shows, read from `from` (its stored result, or a part of it as a
/// parenthesized SELECT): what `visible_view` shows of those stored rows.
pub fn visible_rows(
    q: &ViewQuery,
    from: &str,
    outputs: &[OutputColumn],
    sum_kinds: &[SumKind],
    avg_finish: Option<AvgRule>,
) -> String {
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
                    AggFunc::Sum => {
                        // A sum stored in 64 bits while it fits (`stored_table`) is read back in
                        // DuckDB SUM's own type (HUGEINT, DECIMAL(38,s)): an expression over it
                        // (2 * SUM(x)) then computes in 128 bits as the query does, where the
                        // narrow column would overflow.
                        let sum = match SumInput::of(a.arg_type.as_deref()) {
                            SumInput::Integer => format!("CAST({sum} AS HUGEINT)"),
                            SumInput::Decimal => match a.arg_type.as_deref().and_then(decimal_scale) {
                                Some(scale) => format!("CAST({sum} AS DECIMAL(38,{scale}))"),
                                None => sum,
                            },
                            _ => sum,
                        };
                        format!("CASE WHEN {nn} = 0 THEN NULL ELSE {sum} END")
                    }
                    AggFunc::Avg => {
                        let rule = match (host_avg_rule(), avg_finish) {
                            (AvgRule::DoubleSum, Some(read)) => read,
                            (host, _) => avg_rule(keys, sets.is_some(), aggregates, j, host),
                        };
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
pub(crate) fn compared_by_equality(compared: Option<Compared>, n_outputs: usize, from: &str) -> String {
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

/// Whether DuckDB's equality on a type is coarser than what it prints: `INTERVAL '1 month'`
/// equals `'30 days'`, `DOUBLE` 0.0 equals -0.0. Grouping such values would merge different
/// spellings, so they are grouped by their text as well.
pub fn needs_text_identity(type_name: &str) -> bool {
    ["INTERVAL", "FLOAT", "DOUBLE", "REAL"].iter().any(|t| type_name.to_ascii_uppercase().contains(t))
}
