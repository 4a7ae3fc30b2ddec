//! The table of a view's stored result: its column types, and its rebuild when a stored sum
//! outgrows them.
//!
//! Sums of integers and of decimals are kept in 64 bits (BIGINT, DECIMAL(18,s)) while they fit,
//! although DuckDB's SUM gives them 128 (HUGEINT, DECIMAL(38,s)). DuckDB 1.5.5 decodes a
//! bit-packed 128-bit column about a hundred times slower than an uncompressed one, and every
//! merge scans the sums of the whole stored result, so 128-bit sums must be stored uncompressed,
//! 16 bytes a value: that made a stored result two to three times the size of the same result
//! as a plain table. A 64-bit column is bit-packed and decoded fast. A value that does not fit
//! its narrow column fails the statement that stores it with DuckDB's conversion error, never a
//! wrong value; the call that met it widens the columns (`widened`, `rebuild`) and runs again.

use super::{decimal_parts, ident, list, OutputColumn, Qualified, Storage};
use crate::ir::{stored, AggFunc, ColumnDef, Shape, SumInput, ViewQuery};

/// A view's stored result, empty, with the columns (names and DuckDB types) of its fill.
///
/// 128-bit columns (sums that outgrew 64 bits, and HUGEINT inputs) are stored uncompressed:
/// DuckDB 1.5.5 decodes a bit-packed HUGEINT at about 1.4 µs per value and a DECIMAL(38) at
/// about 0.35 µs, against 0.01 µs uncompressed, and every merge scans those columns over the
/// whole stored result (100,000 groups: 137 ms against 0.8 ms for a HUGEINT sum). DuckLake takes
/// no compression choice (its files are Parquet).
pub fn create_table(storage: Storage, name: &Qualified, columns: &[OutputColumn]) -> String {
    format!(
        "CREATE TABLE {} ({})",
        name.sql(),
        list(columns, ", ", |c| {
            let compression =
                if is_128_bit(&c.ty) && storage == Storage::DuckDb { " USING COMPRESSION uncompressed" } else { "" };
            let collate = c.collation.as_deref().map(|n| format!(" COLLATE {}", ident(n))).unwrap_or_default();
            format!("{} {}{collate}{compression}", ident(&c.name), c.ty)
        })
    )
}

/// Whether DuckDB keeps values of this type in 128 bits: HUGEINT, UHUGEINT, DECIMAL(p, s)
/// with p > 18.
pub fn is_128_bit(ty: &str) -> bool {
    let t = ty.trim().to_ascii_uppercase();
    if t == "HUGEINT" || t == "UHUGEINT" || t == "INT128" || t == "UINT128" {
        return true;
    }
    decimal_parts(&t).is_some_and(|(width, _)| width > 18)
}

/// The stored sums that may be kept in 64 bits: those of SUM and AVG over integers (up to
/// BIGINT) and decimals. HUGEINT inputs keep their two 128-bit halves; variances, floating sums
/// and the rest keep the type of their fill.
fn narrowable(q: &ViewQuery) -> Vec<String> {
    let Shape::Grouped { aggregates, .. } = &q.shape else {
        return vec![];
    };
    aggregates
        .iter()
        .enumerate()
        .filter(|(_, a)| matches!(a.func, AggFunc::Sum | AggFunc::Avg))
        .filter(|(_, a)| matches!(SumInput::of(a.arg_type.as_deref()), SumInput::Integer | SumInput::Decimal))
        .map(|(j, _)| stored::agg_sum(j))
        .collect()
}

/// The 64-bit type a 128-bit sum is stored in while it fits.
fn narrow_type(ty: &str) -> Option<String> {
    if ty.trim().eq_ignore_ascii_case("HUGEINT") {
        return Some("BIGINT".into());
    }
    match decimal_parts(ty)? {
        (38, scale) if scale <= 18 => Some(format!("DECIMAL(18,{scale})")),
        _ => None,
    }
}

/// The 128-bit type a narrowed sum widens to (DuckDB SUM's own type).
fn wide_type(ty: &str) -> Option<String> {
    if ty.trim().eq_ignore_ascii_case("BIGINT") {
        return Some("HUGEINT".into());
    }
    match decimal_parts(ty)? {
        (width, scale) if width <= 18 => Some(format!("DECIMAL(38,{scale})")),
        _ => None,
    }
}

/// The columns of a new stored result (the types of its fill) with the narrowable sums in 64
/// bits. DuckLake results keep the fill's types (Parquet has no such trade).
pub fn narrowed(q: &ViewQuery, storage: Storage, columns: &[OutputColumn]) -> Vec<OutputColumn> {
    let names = narrowable(q);
    columns
        .iter()
        .map(|c| match narrow_type(&c.ty).filter(|_| storage == Storage::DuckDb && names.contains(&c.name)) {
            Some(ty) => OutputColumn { name: c.name.clone(), ty, collation: None },
            None => c.clone(),
        })
        .collect()
}

/// The stored result's columns with every narrowed sum back at 128 bits; None when none is
/// narrow (nothing to widen: the conversion error is the query's own).
pub fn widened(q: &ViewQuery, columns: &[ColumnDef]) -> Option<Vec<OutputColumn>> {
    let names = narrowable(q);
    let wide = |c: &ColumnDef| wide_type(&c.ty).filter(|_| names.contains(&c.name));
    columns.iter().any(|c| wide(c).is_some()).then(|| {
        columns
            .iter()
            .map(|c| OutputColumn {
                name: c.name.clone(),
                ty: wide(c).unwrap_or_else(|| c.ty.clone()),
                collation: c.collation.clone(),
            })
            .collect()
    })
}

/// Rebuilds the stored result `data` with `columns` (its rows copied, the view over it untouched:
/// DuckDB binds a view's names when it runs).
pub fn rebuild(storage: Storage, data: &Qualified, columns: &[OutputColumn]) -> Vec<String> {
    let next = data.sibling(format!("{}_widened", data.name));
    vec![
        super::drop_table(&next),
        create_table(storage, &next, columns),
        format!("INSERT INTO {} SELECT * FROM {}", next.sql(), data.sql()),
        super::drop_table(data),
        format!("ALTER TABLE {} RENAME TO {}", next.sql(), ident(&data.name)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::bind::bind;
    use crate::front::bind::tests::{star_select, TestCatalog};
    use crate::ir::Aggregate;

    fn col(name: &str, ty: &str) -> OutputColumn {
        OutputColumn { name: name.into(), ty: ty.into(), collation: None }
    }

    #[test]
    fn stores_128_bit_columns_uncompressed() {
        let cols = [
            col("openivm_g0", "VARCHAR"),
            col("openivm_count", "BIGINT"),
            col("openivm_a0_sum", "DECIMAL(38,2)"),
            col("openivm_a1_sum", "HUGEINT"),
            col("openivm_a2_sum", "DECIMAL(18,3)"),
        ];
        let t = Qualified { catalog: "db".into(), schema: "s".into(), name: "openivm_data_v".into() };
        assert_eq!(
            create_table(Storage::DuckDb, &t, &cols),
            "CREATE TABLE \"db\".\"s\".\"openivm_data_v\" (\"openivm_g0\" VARCHAR, \"openivm_count\" BIGINT, \
             \"openivm_a0_sum\" DECIMAL(38,2) USING COMPRESSION uncompressed, \
             \"openivm_a1_sum\" HUGEINT USING COMPRESSION uncompressed, \"openivm_a2_sum\" DECIMAL(18,3))"
        );
        assert!(is_128_bit("UHUGEINT") && is_128_bit("DECIMAL(19,0)"));
        assert!(!is_128_bit("DECIMAL(18,2)") && !is_128_bit("BIGINT") && !is_128_bit("DOUBLE"));
        // no compression choice in DuckLake
        assert_eq!(
            create_table(Storage::DuckLake, &t, &[col("s", "HUGEINT")]),
            "CREATE TABLE \"db\".\"s\".\"openivm_data_v\" (\"s\" HUGEINT)"
        );
    }

    /// The star view with SUM(INTEGER), AVG(DECIMAL), SUM(DOUBLE), SUM(HUGEINT) and COUNT:
    /// only the first two narrow.
    fn view() -> ViewQuery {
        let mut q = bind(star_select(), &TestCatalog::star()).unwrap();
        if let Shape::Grouped { aggregates, .. } = &mut q.shape {
            let sum = aggregates[0].clone();
            let with = |func, ty: &str| Aggregate { func, arg_type: Some(ty.into()), ..sum.clone() };
            *aggregates = vec![
                with(AggFunc::Sum, "INTEGER"),
                with(AggFunc::Avg, "DECIMAL(12,2)"),
                with(AggFunc::Sum, "DOUBLE"),
                with(AggFunc::Sum, "HUGEINT"),
                with(AggFunc::Count, "INTEGER"),
            ];
        }
        q
    }

    #[test]
    fn narrows_integer_and_decimal_sums_and_widens_them_back() {
        let q = view();
        let fill = [
            col("openivm_g0", "INTEGER"),
            col("openivm_count", "BIGINT"),
            col("openivm_a0_sum", "HUGEINT"),
            col("openivm_a0_nn", "BIGINT"),
            col("openivm_a1_sum", "DECIMAL(38,2)"),
            col("openivm_a1_nn", "BIGINT"),
            col("openivm_a2_sum", "DOUBLE"),
            col("openivm_a3_sum", "HUGEINT"),
            col("openivm_a3_sub", "HUGEINT"),
            col("openivm_a4_nn", "BIGINT"),
        ];
        let narrow = narrowed(&q, Storage::DuckDb, &fill);
        let types: Vec<&str> = narrow.iter().map(|c| c.ty.as_str()).collect();
        assert_eq!(
            types,
            [
                "INTEGER",
                "BIGINT",
                "BIGINT",
                "BIGINT",
                "DECIMAL(18,2)",
                "BIGINT",
                "DOUBLE",
                "HUGEINT",
                "HUGEINT",
                "BIGINT"
            ]
        );
        assert_eq!(narrowed(&q, Storage::DuckLake, &fill), fill.to_vec());
        // widening restores exactly the fill's types, and only where a sum was narrowed
        let stored: Vec<ColumnDef> =
            narrow.iter().map(|c| ColumnDef { name: c.name.clone(), ty: c.ty.clone(), collation: None }).collect();
        assert_eq!(widened(&q, &stored), Some(fill.to_vec()));
        let wide: Vec<ColumnDef> =
            fill.iter().map(|c| ColumnDef { name: c.name.clone(), ty: c.ty.clone(), collation: None }).collect();
        assert_eq!(widened(&q, &wide), None);
    }

    #[test]
    fn rebuilds_under_a_new_name_then_takes_the_old_one() {
        let t = Qualified { catalog: "db".into(), schema: "openivm".into(), name: "data_v".into() };
        let sql = rebuild(Storage::DuckDb, &t, &[col("openivm_a0_sum", "HUGEINT")]);
        assert_eq!(
            sql,
            [
                "DROP TABLE IF EXISTS \"db\".\"openivm\".\"data_v_widened\"",
                "CREATE TABLE \"db\".\"openivm\".\"data_v_widened\" (\"openivm_a0_sum\" HUGEINT USING COMPRESSION uncompressed)",
                "INSERT INTO \"db\".\"openivm\".\"data_v_widened\" SELECT * FROM \"db\".\"openivm\".\"data_v\"",
                "DROP TABLE IF EXISTS \"db\".\"openivm\".\"data_v\"",
                "ALTER TABLE \"db\".\"openivm\".\"data_v_widened\" RENAME TO \"data_v\"",
            ]
        );
    }
}
