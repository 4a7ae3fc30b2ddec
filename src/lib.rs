//! openivm: incremental maintenance of join and aggregate views for DuckDB, with
//! foreign-key-aware pruning of the inclusion-exclusion delta terms.
//!
//! One folder per stage of the data path; imports run one way, down this list (see
//! docs/architecture.md):
//!
//! - `shell`: the C ABI: entry points, table functions, the connection gate.
//! - `execute`: the calls users make (create, refresh, explain, verify, drop, writes through
//!   openivm, compile-only) as I/O around the pure stages.
//! - `declare`: what users declare (change sources, RELY keys) and the FK facts of a view.
//! - `capture`: change sources, feeds, logs and cursors: each table's delta.
//! - `front`: the user's SQL to the view's IR: parse, rewrite, bind against the catalog, strategy.
//! - `render`: every SQL text openivm runs.
//! - `plan`: the delta program, pure: terms, the N-term rule, FK proofs, merge keys, the mode.
//! - `store`: the metadata tables, settings and home of the views.
//! - `ast`, `ir`, `db`, `sql`, `error`: the typed vocabulary, the connection trait and the
//!   fixed statements everything shares.

pub mod ast;
pub mod capture;
pub mod db;
pub mod declare;
pub mod error;
pub mod execute;
pub mod front;
pub mod ir;
#[doc(hidden)]
pub mod placeholders;
pub mod plan;
pub mod render;
pub mod shell;
pub mod sql;
pub mod store;
