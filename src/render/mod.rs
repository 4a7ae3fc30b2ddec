//! The only producer of SQL text, one file per kind of statement. Every identifier is quoted
//! here and every literal escaped here (`quote`); no other module builds SQL from strings.

pub mod aggregate;
pub mod capture;
pub mod compile;
pub mod ddl;
pub mod dialect;
pub mod ducklake;
pub mod expr;
pub mod group_lookup;
pub mod merge;
pub mod quote;
pub mod stored_table;
pub mod term;
#[cfg(test)]
mod tests;
pub mod trigger;
pub mod visible;
pub mod write;

pub use aggregate::*;
pub use ddl::*;
pub use dialect::{Dialect, Storage};
pub use expr::*;
pub use merge::*;
pub use quote::*;
pub use term::*;
pub use visible::*;
