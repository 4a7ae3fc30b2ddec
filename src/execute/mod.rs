//! Stage 6: runs the data path against the database on the extension's connection: create
//! (parse, bind, fill, attach to the tables' change feeds), refresh (capture, plan, apply or
//! recompute, advance the cursors), explain (the same plan, not applied), drop.

pub mod apply;
pub mod attach;
pub mod cache;
pub mod compile_only;
pub mod create;
pub mod database;
pub mod explain;
pub mod full;
pub mod history;
pub mod key_checks;
pub mod lookup;
pub mod nterm;
pub mod prepare;
pub mod prepared;
pub mod refresh;
pub mod report;
pub mod round;
pub mod standing;
pub mod verify;
pub mod view;
pub mod widen;
pub mod write;

pub use cache::Cache;
pub use create::{create, drop_view};
pub use database::Session;
