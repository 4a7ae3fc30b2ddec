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

use crate::db::{first_int, first_value, Row, Sql};
use crate::error::Result;

/// A fixed query with `N` `?` parameters.
#[derive(Clone, Copy, Debug)]
pub struct Query<const N: usize> {
    pub text: &'static str,
    /// The text is one statement, which a connection may keep prepared (`Sql::query_fixed`).
    single: bool,
}

impl<const N: usize> Query<N> {
    pub const fn new(text: &'static str, single: bool) -> Self {
        Query { text, single }
    }

    /// All rows of the query.
    pub fn rows(self, db: &dyn Sql, params: [&str; N]) -> Result<Vec<Row>> {
        if self.single {
            db.query_fixed(self.text, &params)
        } else {
            db.query_with(self.text, &params)
        }
    }

    /// All rows of the query (one without parameters) through a plan the connection keeps
    /// (`Sql::query_reusing_plan`): for a statement that runs in every refresh, whose planning
    /// costs more than its run.
    pub fn rows_kept(self, db: &dyn Sql) -> Result<Vec<Row>> {
        db.query_reusing_plan(self.text, 0)
    }

    /// Runs the query for its effect.
    pub fn run(self, db: &dyn Sql, params: [&str; N]) -> Result<()> {
        self.rows(db, params).map(|_| ())
    }

    /// The single value of a one-row, one-column query.
    pub fn scalar(self, db: &dyn Sql, params: [&str; N]) -> Result<Option<String>> {
        first_value(self.rows(db, params)?, self.text)
    }

    /// The single integer of a one-row, one-column query.
    pub fn scalar_int(self, db: &dyn Sql, params: [&str; N]) -> Result<i64> {
        first_int(&self.rows(db, params)?, self.text)
    }
}

include!(concat!(env!("OUT_DIR"), "/queries.rs"));

/// The first read of a refresh whose view is compiled, in one statement (each costs about a
/// millisecond, most of it fixed): `capture::CATALOG_OF_VIEW` (every table, the view's comment)
/// and `capture::CURSORS_AND_FEEDS` (every cursor and feed), rows of four kinds in one layout.
/// Parameters: the view's database, schema and name.
pub const REFRESH_READS: Query<0> = Query::new(
    concat!(
        include_str!("../sql/capture/catalog_of_view.sql"),
        "UNION ALL\n",
        include_str!("../sql/capture/cursors_and_feeds.sql")
    ),
    true,
);

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

    #[test]
    fn the_refresh_reads_are_one_statement_with_the_catalogs_parameters() {
        assert_eq!(crate::placeholders::count(REFRESH_READS.text), 0);
        assert!(crate::placeholders::single_statement(REFRESH_READS.text));
        assert!(
            REFRESH_READS.text.contains("FROM duckdb_views()") && REFRESH_READS.text.contains("FROM openivm.feeds")
        );
    }

    #[test]
    fn only_single_statements_are_prepared() {
        assert!(views::FIND.single);
        assert!(!METADATA.single);
    }
}
