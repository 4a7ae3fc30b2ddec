//! What a refresh returns for one view: the row of `refresh()` and `openivm_refresh_all()`.

use crate::plan::mode::Mode;
use crate::plan::terms::TermCounts;

/// One view's refresh: its term counts, delta, time and mode, or why it failed.
pub struct RefreshReport {
    pub schema: String,
    pub view: String,
    pub counts: TermCounts,
    pub delta_rows: i64,
    pub duration_ms: f64,
    /// None: the view was not refreshed (`error`).
    pub mode: Option<Mode>,
    /// Why the refresh took its mode (as in the history's `reason`).
    pub mode_reason: String,
    /// Why the view failed, in `openivm_refresh_all(on_error := 'skip')`.
    pub error: Option<String>,
}
