//! openivm: incremental maintenance of join and aggregate views for DuckDB, with
//! foreign-key-aware pruning of the inclusion-exclusion delta terms.
//!
//! The data path, one module per stage (see docs/architecture.md):
//! `parse` -> `bind` -> `facts` -> `plan` -> `render` -> `execute`, with change capture in
//! `capture`, writes that record their deltas in `write`, and the DuckDB-facing shell in `shell`.

#[cfg(test)]
mod algebra_check;
pub mod ast;
pub mod bind;
pub mod capture;
pub mod catalog;
pub mod compile_only;
pub mod db;
pub mod error;
pub mod execute;
pub mod facts;
pub mod fk_sources;
pub mod home;
pub mod ir;
pub mod lookup;
pub mod macros;
pub mod merge_keys;
pub mod parse;
#[doc(hidden)]
pub mod placeholders;
pub mod plan;
pub mod rely;
pub mod render;
pub mod session;
pub mod settings;
pub mod shell;
pub mod sql;
pub mod strategy;
pub mod telescope;
pub mod write;
