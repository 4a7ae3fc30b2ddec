//! Rewrites of a query into an equivalent one the binder maintains, one rule per file.

pub mod correlated;
pub mod distinct_by_values;
pub mod distinct_on;
pub mod semi_joins;
