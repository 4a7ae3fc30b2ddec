//! The one interface through which the core runs SQL. The shell's kept connection implements
//! it; everything above it only sees rows of text.
//!
//! Reading a result: `row.text(i)?`, `row.int(i)?`, `row.opt_text(i)?`, `row.json_list(i)?`
//! (the `Cells` trait) return `Error::Internal` naming the column and the value when a column
//! is missing, NULL where a value is required, or not of the expected form. They never panic and
//! never substitute a default; a caller that wants one says so (`row.opt_text(i)?.unwrap_or_default()`).

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
