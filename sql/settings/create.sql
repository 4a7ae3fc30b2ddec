-- Settings of the extension, per database. Config options cannot be registered through the
-- DuckDB 1.5 C API, so they live here; openivm_set changes them.
CREATE TABLE IF NOT EXISTS openivm_settings (
    name          VARCHAR NOT NULL,
    value         VARCHAR NOT NULL,
    default_value VARCHAR NOT NULL,
    description   VARCHAR NOT NULL
);
