//! The one error type of the extension. Every message names the object and what to do.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    #[error("openivm: unsupported in an incrementally maintained view: {0}")]
    Unsupported(String),

    /// A query no strategy may maintain: its result depends on the caller's session, the clock
    /// or chance, or it reads what openivm cannot watch. Never falls back to recomputing.
    #[error("openivm: refused as a maintained view: {0}")]
    Refused(String),

    #[error("openivm: could not parse the view query: {0}")]
    Parse(String),

    #[error("openivm: a view's query must be one SELECT statement ({0})")]
    NotOneSelect(String),

    /// A name of the query or of an argument does not resolve (table, column, function) or is
    /// ambiguous. At refresh this is what a schema change looks like (see `is_schema_change`).
    #[error("openivm: could not resolve a name: {0}")]
    Bind(String),

    /// An argument of an openivm function is NULL, empty, malformed or not allowed.
    #[error("openivm: invalid argument: {0}")]
    InvalidArgument(String),

    #[error("openivm: view '{0}' does not exist (see FROM openivm_views)")]
    UnknownView(String),

    #[error("openivm: the name '{0}' is already taken by a table or view; drop it or choose another name")]
    NameTaken(String),

    /// Only for a real schema change: a table or column the view reads is gone, renamed or
    /// retyped. Errors that DuckDB itself raises while compiling or running the view's query are
    /// passed on as they are (`Sql`), not wrapped in `Stale`.
    #[error("openivm: view '{view}' no longer matches its source tables ({detail}); drop and re-create it with openivm_drop and openivm_create")]
    Stale { view: String, detail: String },

    #[error("openivm: {0}")]
    BrokenPromise(String),

    /// An error DuckDB raised running the extension's SQL, as DuckDB worded it.
    #[error("openivm: {message}")]
    Sql { message: String, sql: String, kind: SqlErrorKind },

    /// A call made on the thread that is running an openivm call (certainly nested).
    #[error("openivm: this call was made from inside another openivm call on this database; a function called from inside an openivm call cannot call openivm")]
    Reentrant,

    /// A call from another thread that waited while the running call's current statement made
    /// no step for `seconds`: most likely nested (a function that statement evaluates called
    /// openivm), possibly a concurrent call behind a very long statement.
    #[error("openivm: openivm is busy with another call on this database, whose current statement has not finished for {seconds} s; a function called from inside an openivm call cannot call openivm (if this call is not nested, retry it, or allow a longer wait with the environment variable OPENIVM_NESTED_WAIT_MS)")]
    Busy { seconds: f64 },

    #[error("openivm: the extension released its connection because the database had no other open connection; close and reopen the database, then LOAD openivm again")]
    Released,

    #[error("openivm: internal error: {0}")]
    Internal(String),
}

/// The kind of a DuckDB error that the extension acts on (DuckDB's C API error type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqlErrorKind {
    /// A value did not fit the type it was cast or stored to (a stored sum outgrowing its
    /// 64-bit column is widened and the call run again, see `execute::widen`).
    Conversion,
    /// A name did not resolve in the catalog (a table, view, macro or function): an insert's
    /// query naming one of the caller's temporary objects, which the extension's connection
    /// cannot see (`write::insert`).
    Catalog,
    Other,
}

impl Error {
    /// An error of DuckDB's that the extension does not act on.
    pub fn sql(message: impl Into<String>, sql: impl Into<String>) -> Error {
        Error::Sql { message: message.into(), sql: sql.into(), kind: SqlErrorKind::Other }
    }

    /// Whether this error, raised while compiling a stored view's query again at refresh, means
    /// that the catalog changed under the view (so `Stale` is the right answer), rather than an
    /// error of DuckDB's or of the extension that should be reported as it is.
    pub fn is_schema_change(&self) -> bool {
        matches!(self, Error::Bind(_))
    }
}

pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    fn all(s: &str) -> Vec<Error> {
        vec![
            Error::Unsupported(s.into()),
            Error::Refused(s.into()),
            Error::Parse(s.into()),
            Error::Bind(s.into()),
            Error::InvalidArgument(s.into()),
            Error::UnknownView(s.into()),
            Error::NameTaken(s.into()),
            Error::Stale { view: s.into(), detail: s.into() },
            Error::sql(s, s),
            Error::Reentrant,
            Error::Busy { seconds: 1.0 },
            Error::Released,
            Error::Internal(s.into()),
        ]
    }

    #[test]
    fn no_two_variants_print_the_same_text() {
        let texts: Vec<String> = all("x").iter().map(|e| e.to_string()).collect();
        for (i, a) in texts.iter().enumerate() {
            assert!(a.starts_with("openivm: "), "{a}");
            for b in &texts[..i] {
                assert_ne!(a, b);
            }
        }
    }

    #[test]
    fn only_name_resolution_counts_as_a_schema_change() {
        let changed: Vec<bool> = all("x").iter().map(Error::is_schema_change).collect();
        assert_eq!(changed.iter().filter(|c| **c).count(), 1);
        assert!(Error::Bind("table 't' does not exist".into()).is_schema_change());
        assert!(!Error::sql("Conversion Error", "").is_schema_change());
    }
}
