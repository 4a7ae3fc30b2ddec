//! Quoting and naming: identifiers, literals, qualified names, lists.

use super::dialect::Dialect;
use crate::ir::{ColumnDef, TableId};

/// A quoted identifier (DuckDB's quoting).
pub fn ident(s: &str) -> String {
    Dialect::DuckDb.ident(s)
}

/// Makes `catalog` the connection's default database.
pub fn use_database(catalog: &str) -> String {
    // With its schema: `USE x` means the schema x of the current database when one exists.
    format!("USE {}.main", ident(catalog))
}

/// Sets the optimizers DuckDB skips: a setting of the whole database, not of one connection.
pub fn set_disabled_optimizers(names: &[String]) -> String {
    format!("SET disabled_optimizers = {}", literal(&names.join(",")))
}

/// A string literal.
pub fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// `LOAD` of the extension file at `path`.
pub fn load_extension(path: &str) -> String {
    format!("LOAD {}", literal(path))
}

pub fn table(id: &TableId) -> String {
    format!("{}.{}.{}", ident(&id.catalog), ident(&id.schema), ident(&id.name))
}

/// A name in the schema of a view: `"catalog"."schema"."name"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Qualified {
    pub catalog: String,
    pub schema: String,
    pub name: String,
}

impl Qualified {
    pub fn sql(&self) -> String {
        self.sql_in(Dialect::DuckDb)
    }
    pub fn sql_in(&self, d: Dialect) -> String {
        format!("{}.{}.{}", d.ident(&self.catalog), d.ident(&self.schema), d.ident(&self.name))
    }
    /// `"schema"."name"`: how a view's body names a table of its own database, so that the view
    /// keeps working when the database is renamed, copied or attached under another name
    /// (DuckDB binds a view's names in the view's database).
    pub fn in_own_database(&self) -> String {
        format!("{}.{}", ident(&self.schema), ident(&self.name))
    }
    pub fn sibling(&self, name: String) -> Qualified {
        Qualified { catalog: self.catalog.clone(), schema: self.schema.clone(), name }
    }
    pub fn temp(name: String) -> Qualified {
        Qualified { catalog: "temp".into(), schema: "main".into(), name }
    }
    pub fn table_id(&self) -> TableId {
        TableId { catalog: self.catalog.clone(), schema: self.schema.clone(), name: self.name.clone() }
    }
}

pub(crate) fn list<T>(items: impl IntoIterator<Item = T>, sep: &str, f: impl FnMut(T) -> String) -> String {
    items.into_iter().map(f).collect::<Vec<_>>().join(sep)
}

/// The columns of a change-capture snapshot and delta: the base columns a view reads.
pub fn column_list(cols: &[ColumnDef]) -> Vec<String> {
    cols.iter().map(|c| c.name.clone()).collect()
}

pub(crate) fn with_comma(cols: &[String]) -> String {
    list(cols, "", |c| format!("{c}, "))
}

pub fn union_all(selects: &[String]) -> String {
    selects.join(" UNION ALL ")
}
