//! The one interface through which the core runs SQL. The shell's kept connection implements
//! it; everything above it only sees rows of text.
//!
//! Reading a result: rows are read into types, a struct declared with `typed_row!` (its fields
//! in the order of the query's columns) or a tuple, through `read_all`/`read_one`; the cells are
//! read by position only here (`FromCell`, the `Cells` trait). A column that is missing, NULL
//! where a value is required, or not of the expected form is an `Error::Internal` naming the
//! column and the value: never a panic, never a default substituted.

use crate::error::{Error, Result};

/// One row of a query result, every value as text; `None` is SQL NULL.
pub type Row = Vec<Option<String>>;

pub trait Sql {
    /// Runs `sql` with `params` bound to `?` placeholders as VARCHAR and returns all rows.
    fn query_with(&self, sql: &str, params: &[&str]) -> Result<Vec<Row>>;

    fn query(&self, sql: &str) -> Result<Vec<Row>> {
        self.query_with(sql, &[])
    }

    fn execute(&self, sql: &str) -> Result<()> {
        self.query_with(sql, &[]).map(|_| ())
    }

    /// Runs statements one after the other (a render that gives several, such as a merge into
    /// a DuckLake table), stopping at the first error.
    fn execute_all(&self, statements: &[String]) -> Result<()> {
        statements.iter().try_for_each(|s| self.execute(s))
    }

    /// Makes `catalog` the connection's default database (`USE`): unqualified names of later
    /// statements resolve there. A connection that keeps prepared statements keeps them per
    /// default database (a statement is bound where it was prepared).
    fn use_database(&self, catalog: &str) -> Result<()>;

    /// Runs a generated statement without parameters through a plan kept for its text and
    /// `class` (a caller's size class of the data it reads: a plan made for a small delta is
    /// not reused for a large one). DuckDB plans the statement again by itself when the catalog
    /// of a database it reads changed since. Saves the planning of a statement that runs
    /// again with the same text, such as a view's merge from its logs.
    fn execute_reusing_plan(&self, sql: &str, _class: u32) -> Result<()> {
        self.execute(sql)
    }

    /// `execute_reusing_plan` for a query whose rows the caller reads.
    fn query_reusing_plan(&self, sql: &str, _class: u32) -> Result<Vec<Row>> {
        self.query(sql)
    }

    /// Tells a connection that keeps plans the fingerprint of `catalog`'s tables and views as a
    /// refresh just read them (`execute::cache::ddl_fingerprint`).
    fn catalog_seen(&self, _catalog: &str, _fingerprint: u64) {}

    /// The call that used the connection ended: settings DuckDB holds for the whole database
    /// that the connection changed for its own statements are put back.
    fn call_ended(&self) {}

    fn execute_with(&self, sql: &str, params: &[&str]) -> Result<()> {
        self.query_with(sql, params).map(|_| ())
    }

    /// `query_with` for one of the fixed statements of `sql/` (`crate::sql::Query`): a
    /// connection may keep it prepared, since the same text runs again and again (parsing and
    /// planning are most of what a small metadata statement costs).
    fn query_fixed(&self, sql: &str, params: &[&str]) -> Result<Vec<Row>> {
        self.query_with(sql, params)
    }

    /// The single value of a one-row, one-column query.
    fn scalar(&self, sql: &str, params: &[&str]) -> Result<Option<String>> {
        first_value(self.query_with(sql, params)?, sql)
    }

    /// The single integer of a one-row, one-column query; NULL or a non-integer is an error.
    fn scalar_int(&self, sql: &str, params: &[&str]) -> Result<i64> {
        first_int(&self.query_with(sql, params)?, sql)
    }
}

/// Runs `f` in one transaction: all of its writes commit together, or none does.
pub fn in_transaction<T>(db: &dyn Sql, f: impl FnOnce() -> Result<T>) -> Result<T> {
    db.execute("BEGIN TRANSACTION")?;
    match f() {
        Ok(v) => match db.execute("COMMIT") {
            Ok(()) => Ok(v),
            Err(e) => {
                let _ = db.execute("ROLLBACK");
                Err(e)
            }
        },
        Err(e) => {
            let _ = db.execute("ROLLBACK");
            Err(e)
        }
    }
}

/// The first value of the first row of `sql`'s result (an error when it has no row).
pub fn first_value(rows: Vec<Row>, sql: &str) -> Result<Option<String>> {
    match rows.into_iter().next() {
        Some(row) => Ok(row.into_iter().next().flatten()),
        None => Err(no_row(sql)),
    }
}

/// The integer in the first column of the first row of `sql`'s result (an error when it has no
/// row, or the value is NULL or not an integer).
pub fn first_int(rows: &[Row], sql: &str) -> Result<i64> {
    rows.first().ok_or_else(|| no_row(sql))?.int(0)
}

/// The error of a query that was to give one row and gave none.
pub fn no_row(sql: &str) -> Error {
    Error::Internal(format!("expected one row from: {}", first_line(sql)))
}

/// Every row of `rows` read into `T`.
pub fn read_all<T: FromRow>(rows: &[Row]) -> Result<Vec<T>> {
    rows.iter().map(|r| T::from_row(r)).collect()
}

/// JSON text of a value the extension stores (column lists, signatures).
pub fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::Internal(format!("could not serialize to JSON: {e}")))
}

fn first_line(sql: &str) -> String {
    let line: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    line.chars().take(120).collect()
}

/// A value read from one result row.
pub trait FromRow: Sized {
    fn from_row(row: &Row) -> Result<Self>;
}

/// A value read from cell `i` of a row (the types a `typed_row!` field or a tuple may have).
pub trait FromCell: Sized {
    fn from_cell(row: &[Option<String>], i: usize) -> Result<Self>;
}

impl FromCell for String {
    fn from_cell(row: &[Option<String>], i: usize) -> Result<Self> {
        row.text(i)
    }
}

impl FromCell for Option<String> {
    fn from_cell(row: &[Option<String>], i: usize) -> Result<Self> {
        Ok(row.opt_text(i)?.map(str::to_string))
    }
}

impl FromCell for i64 {
    fn from_cell(row: &[Option<String>], i: usize) -> Result<Self> {
        row.int(i)
    }
}

impl FromCell for u64 {
    fn from_cell(row: &[Option<String>], i: usize) -> Result<Self> {
        let n = row.int(i)?;
        u64::try_from(n).map_err(|_| Error::Internal(format!("result column {i} holds {n} where a count was expected")))
    }
}

impl FromCell for Option<i64> {
    fn from_cell(row: &[Option<String>], i: usize) -> Result<Self> {
        row.opt_int(i)
    }
}

impl FromCell for Option<f64> {
    fn from_cell(row: &[Option<String>], i: usize) -> Result<Self> {
        row.opt_text(i)?
            .map(|s| {
                s.trim()
                    .parse()
                    .map_err(|_| Error::Internal(format!("result column {i} holds '{s}' where a number was expected")))
            })
            .transpose()
    }
}

impl FromCell for bool {
    fn from_cell(row: &[Option<String>], i: usize) -> Result<Self> {
        row.bool(i)
    }
}

impl FromCell for Option<bool> {
    fn from_cell(row: &[Option<String>], i: usize) -> Result<Self> {
        match row.opt_text(i)? {
            None => Ok(None),
            Some(_) => row.bool(i).map(Some),
        }
    }
}

/// A cell holding a JSON array of strings (column lists in metadata).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JsonList(pub Vec<String>);

impl FromCell for JsonList {
    fn from_cell(row: &[Option<String>], i: usize) -> Result<Self> {
        row.json_list(i).map(JsonList)
    }
}

macro_rules! tuple_from_row {
    ($($t:ident $i:tt),+) => {
        impl<$($t: FromCell),+> FromRow for ($($t,)+) {
            fn from_row(row: &Row) -> Result<Self> {
                Ok(($($t::from_cell(row, $i)?,)+))
            }
        }
    };
}
tuple_from_row!(A 0);
tuple_from_row!(A 0, B 1);
tuple_from_row!(A 0, B 1, C 2);
tuple_from_row!(A 0, B 1, C 2, D 3);
tuple_from_row!(A 0, B 1, C 2, D 3, E 4);
tuple_from_row!(A 0, B 1, C 2, D 3, E 4, F 5);

/// A row of integers only, as wide as the query made it (one count per part of a statement).
impl FromRow for Vec<i64> {
    fn from_row(row: &Row) -> Result<Self> {
        (0..row.len()).map(|i| row.int(i)).collect()
    }
}

/// A struct read from a result row, its fields in the order of the query's columns: declares
/// the struct and its `FromRow`.
macro_rules! typed_row {
    ($(#[$meta:meta])* $vis:vis struct $name:ident {
        $($(#[$fmeta:meta])* $fvis:vis $field:ident : $ty:ty),+ $(,)?
    }) => {
        $(#[$meta])* $vis struct $name { $($(#[$fmeta])* $fvis $field: $ty),+ }

        impl $crate::db::FromRow for $name {
            fn from_row(row: &$crate::db::Row) -> $crate::error::Result<Self> {
                let mut _i = 0usize;
                Ok($name {
                    $($field: {
                        let v = <$ty as $crate::db::FromCell>::from_cell(row, _i)?;
                        _i += 1;
                        v
                    }),+
                })
            }
        }
    };
}
#[allow(unused_imports)]
pub(crate) use typed_row;

/// The one row of a result read into `T` (an error naming the query when there is none).
pub fn read_one<T: FromRow>(rows: &[Row], sql: &str) -> Result<T> {
    T::from_row(rows.first().ok_or_else(|| no_row(sql))?)
}

/// A row whose first column says which of several layouts (of one UNION ALL) the rest has:
/// the tag and the rest.
pub fn tagged(row: &Row) -> Result<(i64, Row)> {
    Ok((row.int(0)?, row.get(1..).unwrap_or_default().to_vec()))
}

/// Typed access to the cells of a row.
pub trait Cells {
    /// The cell `i`: `Err` if the row has no such column; `None` for NULL.
    fn opt_text(&self, i: usize) -> Result<Option<&str>>;

    /// The text of cell `i`, which must not be NULL.
    fn text(&self, i: usize) -> Result<String> {
        match self.opt_text(i)? {
            Some(s) => Ok(s.to_string()),
            None => Err(Error::Internal(format!("result column {i} is NULL where a value was expected"))),
        }
    }

    /// The integer in cell `i`, which must not be NULL.
    fn int(&self, i: usize) -> Result<i64> {
        let s = self
            .opt_text(i)?
            .ok_or_else(|| Error::Internal(format!("result column {i} is NULL where an integer was expected")))?;
        parse_int(s, i)
    }

    /// The integer in cell `i`, or `None` for NULL.
    fn opt_int(&self, i: usize) -> Result<Option<i64>> {
        self.opt_text(i)?.map(|s| parse_int(s, i)).transpose()
    }

    /// The boolean in cell `i` (`true`/`false` as DuckDB prints them), which must not be NULL.
    fn bool(&self, i: usize) -> Result<bool> {
        match self.opt_text(i)? {
            Some("true") => Ok(true),
            Some("false") => Ok(false),
            Some(other) => {
                Err(Error::Internal(format!("result column {i} holds '{other}' where a boolean was expected")))
            }
            None => Err(Error::Internal(format!("result column {i} is NULL where a boolean was expected"))),
        }
    }

    /// Cell `i` holding a JSON array of strings (column lists in metadata).
    fn json_list(&self, i: usize) -> Result<Vec<String>> {
        let s = self.text(i)?;
        serde_json::from_str(&s).map_err(|_| {
            Error::Internal(format!("result column {i} holds '{s}' where a JSON array of strings was expected"))
        })
    }
}

fn parse_int(s: &str, i: usize) -> Result<i64> {
    s.trim()
        .parse()
        .map_err(|_| Error::Internal(format!("result column {i} holds '{s}' where an integer was expected")))
}

impl Cells for [Option<String>] {
    fn opt_text(&self, i: usize) -> Result<Option<&str>> {
        match self.get(i) {
            Some(cell) => Ok(cell.as_deref()),
            None => {
                Err(Error::Internal(format!("expected at least {} result columns, the row has {}", i + 1, self.len())))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cells: &[Option<&str>]) -> Row {
        cells.iter().map(|c| c.map(str::to_string)).collect()
    }

    #[test]
    fn reads_typed_cells() {
        let r = row(&[Some("a"), Some("42"), None, Some("true"), Some(r#"["x","y"]"#)]);
        assert_eq!(r.text(0).unwrap(), "a");
        assert_eq!(r.int(1).unwrap(), 42);
        assert_eq!(r.opt_int(2).unwrap(), None);
        assert_eq!(r.opt_text(2).unwrap(), None);
        assert!(r.bool(3).unwrap());
        assert_eq!(r.json_list(4).unwrap(), vec!["x", "y"]);
    }

    typed_row! {
        #[derive(Debug)]
        struct Sample {
            name: String,
            n: i64,
            note: Option<String>,
            flag: bool,
            cols: JsonList,
        }
    }

    #[test]
    fn reads_typed_rows_in_column_order() {
        let r = row(&[Some("a"), Some("42"), None, Some("true"), Some(r#"["x","y"]"#)]);
        let s: Sample = read_one(std::slice::from_ref(&r), "q").unwrap();
        assert_eq!((s.name.as_str(), s.n, s.note, s.flag), ("a", 42, None, true));
        assert_eq!(s.cols.0, vec!["x", "y"]);
        let t: (String, i64) = FromRow::from_row(&r).unwrap();
        assert_eq!(t, ("a".to_string(), 42));
        let e = Sample::from_row(&row(&[Some("a"), Some("x")])).unwrap_err().to_string();
        assert!(e.contains("'x' where an integer"), "{e}");
        assert!(read_one::<(String,)>(&[], "SELECT 1").unwrap_err().to_string().contains("SELECT 1"));
        let (tag, rest) = tagged(&row(&[Some("2"), Some("b")])).unwrap();
        assert_eq!((tag, rest), (2, row(&[Some("b")])));
    }

    #[test]
    fn bad_cells_are_errors_not_defaults() {
        let r = row(&[Some("a"), None, Some("[1]")]);
        let msg = |e: Error| e.to_string();
        assert!(msg(r.int(0).unwrap_err()).contains("'a' where an integer"));
        assert!(msg(r.text(1).unwrap_err()).contains("NULL"));
        assert!(msg(r.int(1).unwrap_err()).contains("NULL"));
        assert!(msg(r.bool(0).unwrap_err()).contains("boolean"));
        assert!(msg(r.json_list(2).unwrap_err()).contains("JSON array"));
        assert!(msg(r.text(7).unwrap_err()).contains("at least 8 result columns"));
        assert!(matches!(r.text(7), Err(Error::Internal(_))));
    }
}
