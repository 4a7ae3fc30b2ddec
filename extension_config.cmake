# Read by DuckDB's extension build tooling (extension-ci-tools), as in DuckDB's extension
# templates. openivm is a Rust extension on the stable C API built by `make` (cargo + the
# project's footer writer), so DuckDB's CMake build neither compiles nor links it.
duckdb_extension_load(openivm
    DONT_LINK
    LOAD_TESTS
)
