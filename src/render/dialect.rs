//! The SQL dialects a refresh program can be rendered in. DuckDB is the dialect openivm runs;
//! Spark SQL is the external engine of the reference design, for which `openivm_compile_with_facts`
//! renders the same program without running it. A dialect decides only what differs in the
//! text: identifier quoting, the 128-bit integer type, null-safe equality and the few
//! functions DuckDB has and Spark lacks. Expressions of the user's query keep DuckDB's function
//! names in every dialect.

use crate::ir::TableId;

/// The kind of database that keeps a view's stored result and change state. DuckLake 1.5.5 takes
/// one UPDATE or DELETE action per MERGE and no compression choice per column, so a merge there
/// is a MERGE that updates and inserts followed by a DELETE of the rows whose count reached 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Storage {
    #[default]
    DuckDb,
    DuckLake,
}

impl Storage {
    /// The storage of a database of this type (`duckdb_databases().type`), if views can live there.
    pub fn of_type(ty: &str) -> Option<Storage> {
        match ty.to_ascii_lowercase().as_str() {
            "duckdb" => Some(Storage::DuckDb),
            "ducklake" => Some(Storage::DuckLake),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Dialect {
    #[default]
    DuckDb,
    Spark,
}

impl Dialect {
    /// The dialect named by `s` (case-insensitive), if it is one.
    pub fn parse(s: &str) -> Option<Dialect> {
        match s.trim().to_ascii_lowercase().as_str() {
            "duckdb" => Some(Dialect::DuckDb),
            "spark" => Some(Dialect::Spark),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::DuckDb => "duckdb",
            Dialect::Spark => "spark",
        }
    }

    /// A quoted identifier: `"a""b"` in DuckDB, `` `a``b` `` in Spark.
    pub fn ident(self, s: &str) -> String {
        match self {
            Dialect::DuckDb => format!("\"{}\"", s.replace('"', "\"\"")),
            Dialect::Spark => format!("`{}`", s.replace('`', "``")),
        }
    }

    /// A base table by its three-part name.
    pub fn table(self, id: &TableId) -> String {
        format!("{}.{}.{}", self.ident(&id.catalog), self.ident(&id.schema), self.ident(&id.name))
    }

    /// The type integer sums are widened to before they are weighted.
    pub fn wide_integer(self) -> &'static str {
        match self {
            Dialect::DuckDb => "HUGEINT",
            Dialect::Spark => "DECIMAL(38,0)",
        }
    }

    /// `a` equals `b`, NULL equal to NULL.
    pub fn not_distinct(self, a: &str, b: &str) -> String {
        match self {
            Dialect::DuckDb => format!("{a} IS NOT DISTINCT FROM {b}"),
            Dialect::Spark => format!("{a} <=> {b}"),
        }
    }

    /// Whether a DOUBLE is neither infinite nor NaN.
    pub fn is_finite(self, x: &str) -> String {
        match self {
            Dialect::DuckDb => format!("isfinite({x})"),
            Dialect::Spark => format!("(NOT isnan({x}) AND abs({x}) <> CAST('inf' AS DOUBLE))"),
        }
    }

    /// `a - b`, NULL where it overflows (for values computed for rows that do not use them).
    pub fn try_subtract(self, a: &str, b: &str) -> String {
        match self {
            Dialect::DuckDb => format!("TRY({a} - {b})"),
            Dialect::Spark => format!("try_subtract({a}, {b})"),
        }
    }

    /// The sum of two DECIMAL(38,s) values that may grow past 38 digits: DuckDB's `list_sum`
    /// widens, where `+` overflows; Spark has no wider decimal, so it is `+` there.
    pub fn unbounded_add(self, a: &str, b: &str) -> String {
        match self {
            Dialect::DuckDb => format!("list_sum([{a}, {b}])"),
            Dialect::Spark => format!("({a} + {b})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_each_dialect_its_own_way() {
        assert_eq!(Dialect::DuckDb.ident("a\"b`c"), "\"a\"\"b`c\"");
        assert_eq!(Dialect::Spark.ident("a\"b`c"), "`a\"b``c`");
        let t = TableId { catalog: "memory".into(), schema: "main".into(), name: "fact".into() };
        assert_eq!(Dialect::Spark.table(&t), "`memory`.`main`.`fact`");
        assert_eq!(Dialect::Spark.not_distinct("x", "y"), "x <=> y");
        assert_eq!(Dialect::DuckDb.unbounded_add("a", "b"), "list_sum([a, b])");
        assert_eq!(Dialect::DuckDb.try_subtract("a", "b"), "TRY(a - b)");
        assert_eq!(Dialect::Spark.try_subtract("a", "b"), "try_subtract(a, b)");
        assert_eq!(Dialect::parse(" Spark "), Some(Dialect::Spark));
        assert_eq!(Dialect::parse("postgres"), None);
    }
}
