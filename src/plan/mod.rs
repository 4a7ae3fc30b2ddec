//! The delta program of a refresh, in pure functions: the inclusion-exclusion terms, the N-term
//! rule, the foreign-key proofs that prune terms, the stored result's merge keys and the
//! refresh mode. Nothing here reads the database.

pub mod fk_pruning;
pub mod merge_keys;
pub mod mode;
pub mod nterm;
pub mod planner;
pub mod terms;

#[cfg(test)]
mod algebra_check;
