//! Where foreign-key facts come from: DuckDB's catalog (enforced constraints) and trusted RELY
//! declarations. Both are read fresh at every refresh: the catalog query is cheap, so there is
//! no reason to gate pruning on how many inputs changed.

use crate::db::{read_all, JsonList, Sql};
use crate::error::Result;
use crate::ir::TableId;
use crate::plan::fk_pruning::{FactSource, ForeignKey};

use crate::sql::facts::CATALOG_FOREIGN_KEYS;

/// The FOREIGN KEY constraints of the catalog between tables in `tables`.
pub fn catalog_foreign_keys(db: &dyn Sql, tables: &[TableId]) -> Result<Vec<ForeignKey>> {
    let rows: Vec<(String, String, String, JsonList, String, JsonList)> =
        read_all(&CATALOG_FOREIGN_KEYS.rows(db, [])?)?;
    let mut out = Vec::new();
    for (catalog, schema, name, JsonList(child_columns), parent_name, JsonList(parent_columns)) in rows {
        let child = TableId { catalog, schema, name };
        let parent = TableId { catalog: child.catalog.clone(), schema: child.schema.clone(), name: parent_name };
        let find = |id: &TableId| {
            tables
                .iter()
                .find(|t| t.catalog == id.catalog && t.schema == id.schema && t.name.eq_ignore_ascii_case(&id.name))
                .cloned()
        };
        let (Some(child), Some(parent)) = (find(&child), find(&parent)) else {
            continue;
        };
        out.push(ForeignKey { child, child_columns, parent, parent_columns, source: FactSource::Catalog });
    }
    Ok(out)
}

/// Every foreign-key fact that applies to a view over `tables` (`metadata`: the databases whose
/// metadata may hold RELY declarations, see `rely::valid_declarations`).
pub fn foreign_keys(db: &dyn Sql, metadata: &[&str], tables: &[TableId]) -> Result<Vec<ForeignKey>> {
    let mut fks = catalog_foreign_keys(db, tables)?;
    fks.extend(crate::declare::rely_fk::valid_declarations(db, metadata, tables)?);
    Ok(fks)
}
