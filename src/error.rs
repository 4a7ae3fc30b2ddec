//! The one error type of the extension. Every message names the object and what to do.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    #[error("openivm: unsupported in an incrementally maintained view: {0}")]
    Unsupported(String),

    #[error("openivm: could not parse the view query: {0}")]
    Parse(String),

    #[error("openivm: a view's query must be one SELECT statement ({0})")]
    NotOneSelect(String),

    #[error("openivm: {0}")]
    Bind(String),

    #[error("openivm: {0}")]
    InvalidArgument(String),

    #[error("openivm: view '{0}' does not exist (see FROM openivm_views)")]
    UnknownView(String),

    #[error("openivm: the name '{0}' is already taken by a table or view; drop it or choose another name")]
    NameTaken(String),

    #[error("openivm: view '{view}' no longer matches its source tables ({detail}); drop and re-create it with openivm_drop and openivm_create")]
    Stale { view: String, detail: String },

    #[error("openivm: {0}")]
    BrokenPromise(String),

    #[error("openivm: {message}")]
    Sql { message: String, sql: String },

    #[error("openivm: this call was made from inside another openivm call on the same thread; openivm functions cannot be nested")]
    Reentrant,

    #[error("openivm: the extension released its connection because the database had no other open connection; close and reopen the database, then LOAD openivm again")]
    Released,

    #[error("openivm: internal error: {0}")]
    Internal(String),
}

pub type Result<T> = std::result::Result<T, Error>;
