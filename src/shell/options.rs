//! The settings as DuckDB config options: `SET openivm_fk_pruning = false`, `SET GLOBAL`,
//! `RESET`, `current_setting()` and `duckdb_settings()`, per connection.
//!
//! The entries that register options and read the caller's values sit past the v1.2.0 band of
//! the C API's function table: DuckDB 1.5.5 hands them to a `C_STRUCT` extension in its unstable
//! tail, 1.5.6 and 2.0 in their stable v1.5.6 band, at the same positions. An older host has no
//! such entries, so the host's version is checked before any is used; there the settings are
//! `openivm_set` and the named parameters only.
//!
//! An option's default is the setting's default. DuckDB reports a value of the default (and a
//! `SET GLOBAL`) in the global scope and a `SET` in the session's, so the caller has set an option
//! when its value differs from the default or when it was set in the session; otherwise the
//! database's stored setting (`openivm_set`) applies. (A NULL default would tell them apart
//! without this rule, but `current_setting()` then refuses the name on 1.5.5 and 2.0.1.)

use std::ffi::{CStr, CString};

use libduckdb_sys as ffi;

use crate::error::{Error, Result};
use crate::store::settings;

/// The first DuckDB version whose function table has the option entries.
const FIRST_HOST: (u32, u32, u32) = (1, 5, 5);

/// `(major, minor, patch)` of a version text such as `v1.5.5` or `v2.0.1-dev12`.
fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    let mut parts = text.trim().trim_start_matches('v').splitn(3, '.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let patch: String = parts.next()?.chars().take_while(|c| c.is_ascii_digit()).collect();
    Some((major, minor, patch.parse().ok()?))
}

/// The host DuckDB's version as it names itself (`v1.5.5`).
pub fn host_version_text() -> Option<String> {
    unsafe {
        let p = ffi::duckdb_library_version();
        (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned())
    }
}

/// The host DuckDB's `(major, minor, patch)`.
pub fn host_version() -> Option<(u32, u32, u32)> {
    parse_version(&host_version_text()?)
}

/// Whether the host DuckDB's function table has the option entries.
pub fn host_has_options() -> bool {
    host_version().is_some_and(|v| v >= FIRST_HOST)
}

/// Registers every setting of `settings::ALL` as a config option on `conn`'s database: BOOLEAN
/// for a boolean setting, VARCHAR for one with choices (checked when a call reads it).
///
/// # Safety
/// `conn` must be a live connection, and `host_has_options()` true.
pub unsafe fn register(conn: ffi::duckdb_connection) -> Result<()> {
    for s in settings::ALL {
        let mut option = ffi::duckdb_create_config_option();
        let name = CString::new(s.name).unwrap_or_default();
        let description = CString::new(s.description).unwrap_or_default();
        let type_id = if s.choices.is_empty() {
            ffi::DUCKDB_TYPE_DUCKDB_TYPE_BOOLEAN
        } else {
            ffi::DUCKDB_TYPE_DUCKDB_TYPE_VARCHAR
        };
        let mut ty = ffi::duckdb_create_logical_type(type_id);
        ffi::duckdb_config_option_set_name(option, name.as_ptr());
        ffi::duckdb_config_option_set_type(option, ty);
        ffi::duckdb_config_option_set_description(option, description.as_ptr());
        let mut default = if s.choices.is_empty() {
            ffi::duckdb_create_bool(s.default == "true")
        } else {
            let d = CString::new(s.default).unwrap_or_default();
            ffi::duckdb_create_varchar(d.as_ptr())
        };
        ffi::duckdb_config_option_set_default_value(option, default);
        ffi::duckdb_destroy_value(&mut default);
        let state = ffi::duckdb_register_config_option(conn, option);
        ffi::duckdb_destroy_logical_type(&mut ty);
        ffi::duckdb_destroy_config_option(&mut option);
        if state != ffi::duckdb_state_DuckDBSuccess {
            return Err(Error::Internal(format!("could not register the setting {}", s.name)));
        }
    }
    Ok(())
}

/// The settings the caller of the table function being bound has set (see the module's
/// comment), by name, as text (`true`/`false` for booleans).
///
/// # Safety
/// `info` must be the bind info of a running bind callback, and `host_has_options()` true.
pub unsafe fn caller_values(info: ffi::duckdb_bind_info) -> Vec<(String, String)> {
    let mut context: ffi::duckdb_client_context = std::ptr::null_mut();
    ffi::duckdb_table_function_get_client_context(info, &mut context);
    if context.is_null() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for s in settings::ALL {
        let name = CString::new(s.name).unwrap_or_default();
        let mut scope: ffi::duckdb_config_option_scope = 0;
        let mut value = ffi::duckdb_client_context_get_config_option(context, name.as_ptr(), &mut scope);
        if value.is_null() {
            continue;
        }
        if !ffi::duckdb_is_null_value(value) {
            let text = if s.choices.is_empty() {
                ffi::duckdb_get_bool(value).to_string()
            } else {
                let p = ffi::duckdb_get_varchar(value);
                let t = if p.is_null() { String::new() } else { CStr::from_ptr(p).to_string_lossy().into_owned() };
                if !p.is_null() {
                    ffi::duckdb_free(p as *mut std::ffi::c_void);
                }
                t
            };
            if text != s.default || scope == ffi::duckdb_config_option_scope_DUCKDB_CONFIG_OPTION_SCOPE_SESSION {
                out.push((s.name.to_string(), text));
            }
        }
        ffi::duckdb_destroy_value(&mut value);
    }
    ffi::duckdb_destroy_client_context(&mut context);
    out
}

#[cfg(test)]
mod tests {
    use super::parse_version;

    #[test]
    fn versions() {
        assert_eq!(parse_version("v1.5.5"), Some((1, 5, 5)));
        assert_eq!(parse_version("v2.0.1-dev12"), Some((2, 0, 1)));
        assert_eq!(parse_version("1.4.0"), Some((1, 4, 0)));
        assert_eq!(parse_version("nonsense"), None);
        assert!(parse_version("v1.4.3").unwrap() < (1, 5, 5));
        assert!(parse_version("v2.0.0").unwrap() >= (1, 5, 5));
    }
}
