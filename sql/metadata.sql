-- The extension's own metadata, created on first use in the main schema of the database openivm
-- was loaded into. Every table is plain data: inspect it with SQL, it survives restarts.
-- Catalog columns store '' for this database (whose name follows its file and changes when the
-- file is renamed or copied) and the name of any other attached database (see src/home.rs).

-- One row per maintained view.
CREATE TABLE IF NOT EXISTS openivm_views (
    view_name     VARCHAR NOT NULL,   -- the name the user gave (without schema)
    view_catalog  VARCHAR NOT NULL,   -- '' (earlier versions stored the database's name)
    view_schema   VARCHAR NOT NULL,
    query         VARCHAR NOT NULL,   -- the view's SQL as given to openivm_create
    leaves        VARCHAR NOT NULL,   -- JSON array: one {alias, table} per join leaf
    kind          VARCHAR NOT NULL,   -- 'grouped_aggregate', 'aggregate' or 'bag'
    data_table    VARCHAR NOT NULL,   -- the stored result, in the schema openivm
    signature     VARCHAR NOT NULL,   -- JSON of the leaves' column names and types at creation
    created_at    TIMESTAMP NOT NULL,
    refreshed_at  TIMESTAMP,
    refresh_count BIGINT NOT NULL
);

-- The comment openivm put on the view it created (a token): CREATE OR REPLACE VIEW and DROP VIEW
-- lose it, so a view replaced or dropped behind openivm's back is recognized. Added after the
-- first release.
ALTER TABLE openivm_views ADD COLUMN IF NOT EXISTS view_marker VARCHAR;

-- How the view is maintained ('incremental' or 'full'; NULL in rows made before strategies:
-- incremental) and why it is not incremental (the construct without an incremental rule).
ALTER TABLE openivm_views ADD COLUMN IF NOT EXISTS strategy VARCHAR;
ALTER TABLE openivm_views ADD COLUMN IF NOT EXISTS strategy_reason VARCHAR;

-- How DuckDB finished the view's AVGs of integers and decimals when it was created, read from
-- its optimized plan ('exact' or 'double_sum'; NULL: not read, openivm's model decides).
ALTER TABLE openivm_views ADD COLUMN IF NOT EXISTS avg_finish VARCHAR;

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

-- The extension's internal state lives in its own schema, out of the way of SHOW TABLES.
CREATE SCHEMA IF NOT EXISTS openivm;

-- Change state, kept once per base table and set of read columns and shared by every view
-- over it (see docs/architecture.md, "Change capture").
CREATE TABLE IF NOT EXISTS openivm.feeds (
    feed_id       BIGINT NOT NULL,
    table_catalog VARCHAR NOT NULL,
    table_schema  VARCHAR NOT NULL,
    table_name    VARCHAR NOT NULL,
    columns       VARCHAR NOT NULL,   -- JSON array of {name, ty}: the columns its views read
    source        VARCHAR NOT NULL,   -- 'diff', 'append_only' or 'recorded'
    key_column    VARCHAR,            -- append_only: the declared ever-increasing column, JSON {name, ty} (NULL: rowid)
    watermark     VARCHAR,            -- append_only: the next rowid, or the largest key captured (or recorded)
    row_count     BIGINT NOT NULL,    -- append_only, recorded: rows of the table at the last capture, plus the open batch's net rows
    size_seen     BIGINT NOT NULL,    -- duckdb_tables().estimated_size at the last capture
    seq           BIGINT NOT NULL,    -- number of the last captured batch
    log_rows      BIGINT NOT NULL     -- rows in the change log (batches some view has not seen)
);

-- Rows of the feed's open batch: deltas recorded by writes through openivm_insert /
-- openivm_delete / openivm_update since the feed's last capture, kept in its log as batch seq + 1
-- (earlier versions kept them in a table of their own, `openivm.pending_<id>`). Added after the
-- first release.
ALTER TABLE openivm.feeds ADD COLUMN IF NOT EXISTS pending_rows BIGINT DEFAULT 0;

-- Rows and deleted rows (multiplicity < 0) of batch `seq` as the capture that logged it counted
-- them (-1: not known): a view one batch behind, whose log holds just that batch, knows its delta
-- without counting the log. Added later.
ALTER TABLE openivm.feeds ADD COLUMN IF NOT EXISTS batch_rows BIGINT DEFAULT -1;
ALTER TABLE openivm.feeds ADD COLUMN IF NOT EXISTS batch_deletes BIGINT DEFAULT -1;

-- What the key checks of the refresh that captured batch `seq` found about it (JSON, see
-- src/capture/batch_facts.rs; NULL: nothing): the feed's other views, reading the same batch,
-- take the outcome instead of checking again. Added later.
ALTER TABLE openivm.feeds ADD COLUMN IF NOT EXISTS batch_facts VARCHAR;

-- The statement triggers of the trigger source (DuckDB 2.0), as DuckDB keeps their text
-- (`duckdb_triggers().sql`, read back when they were installed): every capture checks the
-- triggers on its table still match (src/capture/trigger.rs). Added later.
CREATE TABLE IF NOT EXISTS openivm.triggers (
    feed_id      BIGINT NOT NULL,
    trigger_name VARCHAR NOT NULL,
    trigger_sql  VARCHAR NOT NULL
);

-- Per view and feed: the last batch the view has applied.
CREATE TABLE IF NOT EXISTS openivm.cursors (
    view_schema VARCHAR NOT NULL,
    view_name   VARCHAR NOT NULL,
    feed_id     BIGINT NOT NULL,
    seq         BIGINT NOT NULL
);

-- The feed's watermark when the view's cursor last moved: for a DuckLake feed, the snapshot at
-- which the view's state of the table is (read by the N-term rule as the table's old state when
-- the view lags behind the feed). NULL in rows made before it. Added after the first release.
ALTER TABLE openivm.cursors ADD COLUMN IF NOT EXISTS watermark VARCHAR;

-- One row per refresh that did work (a refresh that finds nothing to do writes nothing).
CREATE TABLE IF NOT EXISTS openivm_refresh_history (
    view_name           VARCHAR NOT NULL,
    view_schema         VARCHAR NOT NULL,
    started_at          TIMESTAMP NOT NULL,
    mode                VARCHAR NOT NULL,   -- 'incremental' or 'full'
    reason              VARCHAR NOT NULL,   -- why this mode
    terms_total         INTEGER NOT NULL,
    terms_fk_pruned     INTEGER NOT NULL,
    terms_empty_skipped INTEGER NOT NULL,
    terms_run           INTEGER NOT NULL,
    delta_rows          BIGINT NOT NULL,
    capture_ms          DOUBLE NOT NULL,
    apply_ms            DOUBLE NOT NULL,
    total_ms            DOUBLE NOT NULL
);

-- Of capture_ms, the one-time work of starting a trigger feed (installing its triggers with a
-- snapshot of the table, and its first capture, a diff): auto mode prices captures without it.
-- 0 in rows made before it. Added after the first release.
ALTER TABLE openivm_refresh_history ADD COLUMN IF NOT EXISTS setup_ms DOUBLE DEFAULT 0;

-- The change source each table's changes came from in this refresh ('fact: trigger, dim: diff';
-- empty for a recompute that captured nothing). Added later.
ALTER TABLE openivm_refresh_history ADD COLUMN IF NOT EXISTS sources VARCHAR DEFAULT '';
