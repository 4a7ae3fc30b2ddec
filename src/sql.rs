//! The fixed queries of `sql/**/*.sql`, typed by their number of `?` parameters.
//!
//! build.rs turns every file into a constant `crate::sql::<dir>::<NAME>: Query<N>` (for example
//! `sql/views/find.sql` is `sql::views::FIND`, a `Query<2>`); its methods take exactly N
//! parameters as an array, so a call with another number does not compile:
//!
//! ```compile_fail
//! # fn f(db: &dyn openivm::db::Sql) -> openivm::error::Result<()> {
//! openivm::sql::views::FIND.rows(db, ["main"])?; // views/find.sql has two parameters
//! # Ok(()) }
//! ```

use crate::db::{Row, Sql};
use crate::error::Result;

/// A fixed query with `N` `?` parameters.
#[derive(Clone, Copy, Debug)]
pub struct Query<const N: usize> {
    pub text: &'static str,
}

impl<const N: usize> Query<N> {
    pub const fn new(text: &'static str) -> Self {
        Query { text }
    }

    /// All rows of the query.
    pub fn rows(self, db: &dyn Sql, params: [&str; N]) -> Result<Vec<Row>> {
        db.query_with(self.text, &params)
    }

    /// Runs the query for its effect.
    pub fn run(self, db: &dyn Sql, params: [&str; N]) -> Result<()> {
        db.execute_with(self.text, &params)
    }

    /// The single value of a one-row, one-column query.
    pub fn scalar(self, db: &dyn Sql, params: [&str; N]) -> Result<Option<String>> {
        db.scalar(self.text, &params)
    }

    /// The single integer of a one-row, one-column query.
    pub fn scalar_int(self, db: &dyn Sql, params: [&str; N]) -> Result<i64> {
        db.scalar_int(self.text, &params)
    }
}

include!(concat!(env!("OUT_DIR"), "/queries.rs"));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fixed_query_is_typed_by_its_parameters() {
        assert!(views::FIND.text.contains("FROM openivm_views"));
        let _: Query<2> = views::FIND;
        let _: Query<0> = METADATA;
        let _: Query<10> = facts::RELY_DELETE;
    }
}
