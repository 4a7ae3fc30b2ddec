//! What the binder needs to know about the database (the `Catalog` trait, which
//! `front::catalog` implements over DuckDB's catalog) and what it answers.

use crate::ast::{Expr, Select, TableName};
use crate::error::{Error, Result};
use crate::ir::{ColumnDef, Leaf, TableId};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RelationKind {
    Table,
    View,
}

#[derive(Clone, Debug)]
pub struct ResolvedTable {
    pub id: TableId,
    pub kind: RelationKind,
    pub columns: Vec<ColumnDef>,
}

#[derive(Clone, Copy, Debug)]
pub struct FunctionInfo {
    pub aggregate: bool,
    /// Some overload is CONSISTENT: the name alone refuses only a function none of whose
    /// overloads is (which overload a call binds is checked on DuckDB's bound plan,
    /// `strategy::check_bound_calls`, where the view is created).
    pub deterministic: bool,
    /// Every overload is one of DuckDB's own (not a macro or function a user created, which
    /// may be replaced): what is known about it holds for the database's lifetime.
    pub builtin: bool,
}

/// A DuckDB view's definition, as the binder expands it into a subquery in FROM.
#[derive(Clone, Debug)]
pub enum ViewDefinition {
    /// A view openivm maintains, with its columns: read as a leaf of the join, whose changes
    /// are those of the rows the view shows (see `capture`), so that chained views stay exact
    /// whatever its presentation (HAVING, ORDER BY/LIMIT).
    Maintained { columns: Vec<ColumnDef> },
    /// Its query (table names resolved as DuckDB resolves them inside the view), the text of its
    /// definition (so that a replacement is noticed), its column names and its query's parse
    /// tree (a stage's query where the view cannot be flattened).
    Query { select: Box<Select>, sql: String, columns: Vec<String>, tree: Option<String> },
}

/// A query a maintained stage stores: DuckDB's parse tree of a subquery (JSON), or of an IN
/// subquery whose distinct values are stored (`distinct`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StageQuery {
    pub tree: String,
    pub distinct: bool,
}

/// What the binder needs to know about the database.
pub trait Catalog {
    /// Resolves a table name as DuckDB would on the extension's connection; None if not found.
    fn table(&self, name: &TableName) -> Result<Option<ResolvedTable>>;
    /// Looks up a function by name; None if DuckDB has no function of that name.
    fn function(&self, name: &str) -> Result<Option<FunctionInfo>>;
    /// DuckDB's types of expressions over the leaves of a join (columns bound to `leaves`), in
    /// order: row-level expressions, or only aggregates. None where the catalog cannot tell.
    fn expression_types(&self, leaves: &[Leaf], exprs: &[Expr]) -> Result<Vec<Option<String>>> {
        let _ = leaves;
        Ok(vec![None; exprs.len()])
    }
    /// The hidden maintained view (a stage) that stores `query`, made if the catalog may make
    /// one; None where there is none (the subquery then has no incremental rule).
    fn stage(&self, query: &StageQuery) -> Result<Option<ResolvedTable>> {
        let _ = query;
        Ok(None)
    }
    /// The definition of the DuckDB view `id`; None where the catalog cannot expand views.
    fn view(&self, id: &TableId) -> Result<Option<ViewDefinition>> {
        let _ = id;
        Ok(None)
    }
    /// The column types of a UNION ALL of branches of these column types, as DuckDB unifies
    /// them (a catalog that cannot ask DuckDB accepts only branches of equal types).
    fn union_types(&self, branches: &[Vec<String>]) -> Result<Vec<String>> {
        match branches.split_first() {
            Some((first, rest)) if rest.iter().all(|b| b == first) => Ok(first.clone()),
            _ => Err(Error::Unsupported("UNION ALL of branches of different column types".into())),
        }
    }
}
