//! The one interface through which the core runs SQL. The shell's kept connection implements
//! it; everything above it only sees rows of text.

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

    fn execute_with(&self, sql: &str, params: &[&str]) -> Result<()> {
        self.query_with(sql, params).map(|_| ())
    }

    /// The single value of a one-row, one-column query.
    fn scalar(&self, sql: &str, params: &[&str]) -> Result<Option<String>> {
        let rows = self.query_with(sql, params)?;
        match rows.into_iter().next() {
            Some(row) => Ok(row.into_iter().next().flatten()),
            None => Err(Error::Internal(format!("expected one row from: {sql}"))),
        }
    }
}

/// Reads a number out of a text cell.
pub fn int(cell: &Option<String>) -> i64 {
    cell.as_deref().and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// Reads a text cell, NULL as empty.
pub fn text(cell: &Option<String>) -> String {
    cell.clone().unwrap_or_default()
}

/// Reads a cell holding a JSON array of strings (column lists in metadata); anything else is empty.
pub fn json_list(cell: &Option<String>) -> Vec<String> {
    serde_json::from_str(&text(cell)).unwrap_or_default()
}
