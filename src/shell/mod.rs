//! The extension shell: the only code that talks to DuckDB's C API. The entrypoint opens the
//! kept connection and registers the table functions; everything else is the pure core.

pub mod companion;
pub mod ffi;
pub mod functions;
pub mod gate;
pub mod instance;
pub mod options;
pub mod table_function;

use std::ffi::CString;

use libduckdb_sys as sys;

use crate::error::{Error, Result};
use instance::Instance;

/// The oldest C API whose function table the extension reads (DuckDB 1.2.0 and later).
const MIN_C_API: &str = env!("OPENIVM_C_API_VERSION");

unsafe fn load(info: sys::duckdb_extension_info, access: *const sys::duckdb_extension_access) -> Result<bool> {
    let have_api = sys::duckdb_rs_extension_api_init(info, access, MIN_C_API)
        .map_err(|e| Error::Internal(format!("the DuckDB C API could not be initialized: {e}")))?;
    if !have_api {
        return Ok(false);
    }
    let get_database = (*access).get_database.ok_or_else(|| Error::Internal("no database to load into".into()))?;
    let db = get_database(info);
    if db.is_null() {
        return Err(Error::Internal("no database to load into".into()));
    }
    let conn = ffi::Connection::connect(*db)?;
    let raw = conn.raw();
    if let Some((major, _, _)) = options::host_version() {
        crate::render::set_host_major(major);
        if major >= 2 {
            conn.host_replans_reads();
        }
    }
    let has_options = options::host_has_options();
    if has_options {
        options::register(raw)?;
    }
    let instance = Instance::new(conn, has_options);
    for spec in functions::SPECS {
        table_function::register(raw, spec, instance.clone())?;
    }
    // After the table functions: the companion's PRAGMAs call them.
    if let Err(why) = instance.with_connection(|db| Ok(companion::load(db)))? {
        ffi::trace_note(&format!("the PRAGMA companion was not loaded: {why}"));
    }
    instance.watch();
    Ok(true)
}

/// The C entrypoint DuckDB looks up as `<extension name>_init_c_api`.
///
/// # Safety
/// Called by DuckDB with valid `info` and `access` pointers during LOAD.
#[no_mangle]
pub unsafe extern "C" fn openivm_init_c_api(
    info: sys::duckdb_extension_info,
    access: *const sys::duckdb_extension_access,
) -> bool {
    let outcome = table_function::guard(|| unsafe { load(info, access) });
    match outcome {
        Ok(loaded) => loaded,
        Err(e) => {
            if let Some(set_error) = (*access).set_error {
                let msg = CString::new(e.to_string().replace('\0', " ")).unwrap_or_default();
                set_error(info, msg.as_ptr());
            }
            false
        }
    }
}
