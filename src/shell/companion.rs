//! The PRAGMA companion (the crate in pragma/): `PRAGMA refresh('v')` and the other PRAGMA forms.
//! No v1 C API registers pragmas, and a v2 extension loads only into the exact DuckDB build it was
//! compiled for, so the companion is a second file beside this one, LOADed from here when the
//! host is that build. A missing or refused companion never fails the user's LOAD: everything but
//! the PRAGMA forms works without it (the CALL forms are this file's).

use std::ffi::{c_void, CStr};
use std::path::PathBuf;

use crate::db::Sql;

/// The one DuckDB build the companion is compiled for (pragma/DUCKDB_VERSION, via build.rs).
const DUCKDB_VERSION: &str = env!("OPENIVM_PRAGMA_DUCKDB_VERSION");
const FILE_NAME: &str = "openivm_pragma.duckdb_extension";

/// Loads the companion into the database of `conn` when the host is the companion's build.
/// Returns why it was not loaded, for the trace.
pub fn load(conn: &dyn Sql) -> Result<(), String> {
    let host = super::options::host_version_text().ok_or("the host's version is unknown")?;
    if host != DUCKDB_VERSION {
        return Err(format!("the host is DuckDB {host}, the companion is built for {DUCKDB_VERSION}"));
    }
    let path = own_file()?.with_file_name(FILE_NAME);
    if !path.is_file() {
        return Err(format!("{} does not exist", path.display()));
    }
    let path = path.to_str().ok_or("the companion's path is not UTF-8")?;
    conn.execute(&crate::render::load_extension(path)).map_err(|e| e.to_string())
}

/// The path of the file this code was loaded from: the library that holds this function.
fn own_file() -> Result<PathBuf, String> {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    let found = unsafe { libc::dladdr(own_file as *const c_void, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return Err("the extension's own file could not be found (dladdr)".into());
    }
    let name = unsafe { CStr::from_ptr(info.dli_fname) };
    Ok(PathBuf::from(name.to_str().map_err(|_| "the extension's path is not UTF-8")?))
}
