//! What users declare about their tables, and the foreign-key facts a view's plan may rely on:
//! change sources (append-only, recorded, trigger or diff, `sources`), trusted RELY foreign
//! keys (`rely_fk`), and the foreign keys of the catalog and the declarations together
//! (`fk_facts`).

pub mod fk_facts;
pub mod rely_fk;
pub mod sources;
