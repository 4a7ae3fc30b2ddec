//! SQL of change capture: counted snapshots and their diffs (the exact diff source), reads past
//! a watermark (declared append-only tables), and the shared change log that every view over a
//! table reads from its own cursor. One file per job, all re-exported here.

mod bookkeeping;
mod fresh;
mod key_check;
mod log;
mod open_batch;
mod position;
mod snapshot;

pub use bookkeeping::*;
pub use fresh::*;
pub use key_check::*;
pub use log::*;
pub use open_batch::*;
pub use position::*;
pub use snapshot::*;
