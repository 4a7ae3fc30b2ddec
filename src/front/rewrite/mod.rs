//! Rewrites of the typed AST into an equivalent query the binder maintains, one rule per file.

pub mod distinct_on;
