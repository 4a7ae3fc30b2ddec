-- The extension's own metadata, created on first use in the main schema of the database openivm
-- was loaded into. Every table is plain data: inspect it with SQL, it survives restarts.

-- One row per maintained view.
CREATE TABLE IF NOT EXISTS openivm_views (
    view_name     VARCHAR NOT NULL,   -- the name the user gave (without schema)
    view_catalog  VARCHAR NOT NULL,
    view_schema   VARCHAR NOT NULL,
    query         VARCHAR NOT NULL,   -- the view's SQL as given to openivm_create
    leaves        VARCHAR NOT NULL,   -- JSON array: one {alias, table} per join leaf
    kind          VARCHAR NOT NULL,   -- 'grouped_aggregate', 'aggregate' or 'bag'
    data_table    VARCHAR NOT NULL,   -- the stored result, in the view's schema
    signature     VARCHAR NOT NULL,   -- JSON of the leaves' column names and types at creation
    created_at    TIMESTAMP NOT NULL,
    refreshed_at  TIMESTAMP,
    refresh_count BIGINT NOT NULL
);

-- Change capture state: for each view and base table, the snapshot of what the view last saw.
CREATE TABLE IF NOT EXISTS openivm_snapshots (
    view_catalog   VARCHAR NOT NULL,
    view_schema    VARCHAR NOT NULL,
    view_name      VARCHAR NOT NULL,
    table_catalog  VARCHAR NOT NULL,
    table_schema   VARCHAR NOT NULL,
    table_name     VARCHAR NOT NULL,
    snapshot_table VARCHAR NOT NULL,  -- in the view's schema
    columns        VARCHAR NOT NULL   -- JSON array of the base columns the view reads
);

-- Trusted constraints declared by users, for tables whose catalog carries no FOREIGN KEY.
-- Both endpoints are stored fully qualified together with the incarnation token each table
-- had when the declaration was made (see docs/fk-aware-pruning.md, "Declaration lifetime").
CREATE TABLE IF NOT EXISTS openivm_constraints_cache (
    constraint_kind VARCHAR NOT NULL,   -- 'RELY_FK'
    is_trusted      BOOLEAN NOT NULL,
    child_catalog   VARCHAR,            -- NULL in legacy rows: such rows never authorize pruning
    child_schema    VARCHAR,
    child_table     VARCHAR NOT NULL,
    child_columns   VARCHAR NOT NULL,   -- JSON array of column names
    parent_catalog  VARCHAR,
    parent_schema   VARCHAR,
    parent_table    VARCHAR NOT NULL,
    parent_columns  VARCHAR NOT NULL,   -- JSON array of column names
    child_token     VARCHAR,
    parent_token    VARCHAR,
    declared_at     TIMESTAMP
);
