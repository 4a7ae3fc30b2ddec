//! From the user's SQL to the view's IR: parse DuckDB's serialized tree into the typed AST,
//! rewrite it, bind it against the catalog, and choose the maintenance strategy.

pub mod aggregates;
pub mod bind;
pub mod catalog;
pub mod macros;
pub mod parse;
pub mod rewrite;
pub mod session;
pub mod strategy;
