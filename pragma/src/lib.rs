//! openivm's PRAGMA companion: `PRAGMA refresh('v')` and the other PRAGMA forms of openivm's table
//! functions. No v1 C API registers pragmas; DuckDB 2.0's v2 API does, so this file is a v2
//! extension, tied to the one DuckDB build it was compiled against (see `DUCKDB_VERSION`). The main
//! extension LOADs it from its own init when the host is that build.
//!
//! Each pragma is a *query* pragma: its callback returns `CALL f(<arguments as literals>)`, which
//! DuckDB runs in place of the PRAGMA, in the caller's connection and transaction, and whose rows
//! the caller gets. The arguments are never spliced as text: each is rendered as a SQL literal.

use std::ffi::c_char;
use std::ptr;

use libduckdb_sys::v2 as sys;

/// The DuckDB build whose v2 API this file is compiled against (the footer names it too).
pub const DUCKDB_VERSION: &str = "v2.0.1";

/// A PRAGMA and the table function it calls: the same name, positional VARCHAR parameters.
struct Pragma {
    name: &'static str,
    params: &'static [&'static str],
}

const VIEW: &[&str] = &["view_name"];
const FK: &[&str] = &["child_table", "child_columns", "parent_table", "parent_columns"];

const PRAGMAS: &[Pragma] = &[
    Pragma { name: "refresh", params: VIEW },
    Pragma { name: "openivm_refresh", params: VIEW },
    Pragma { name: "openivm_refresh_all", params: &[] },
    Pragma { name: "openivm_drop", params: VIEW },
    Pragma { name: "openivm_explain", params: VIEW },
    Pragma { name: "openivm_declare_rely_fk", params: FK },
    Pragma { name: "openivm_revoke_rely_fk", params: FK },
];

/// A SQL string literal: single quotes doubled; `None` is NULL.
pub fn literal(value: Option<&str>) -> String {
    match value {
        Some(text) => format!("'{}'", text.replace('\'', "''")),
        None => "NULL".to_string(),
    }
}

/// The statement a pragma runs: `CALL name(arg, ...)` with every argument a literal.
pub fn call_sql(function: &str, args: &[Option<String>]) -> String {
    let args: Vec<String> = args.iter().map(|a| literal(a.as_deref())).collect();
    format!("CALL {function}({})", args.join(", "))
}

fn text(s: &str) -> sys::duckdb_v2_str {
    sys::duckdb_v2_str { ptr: s.as_ptr() as *const c_char, len: s.len() as sys::idx_t }
}

fn ok(code: sys::DUCKDB_V2_ERROR) -> Result<(), String> {
    match code {
        sys::DUCKDB_V2_ERROR::DUCKDB_V2_ERROR_NONE => Ok(()),
        other => Err(format!("DuckDB C API error {other:?}")),
    }
}

/// Fails the current callback (or the load) with `message`.
unsafe fn fail(err: *mut sys::duckdb_v2_error_info_handle, message: &str) {
    if err.is_null() || (*err).is_null() {
        return;
    }
    sys::duckdb_v2_error_info_set_code(*err, sys::DUCKDB_V2_ERROR::DUCKDB_V2_ERROR_INPUT_INVALID);
    let message = format!("openivm_pragma: {message}");
    sys::duckdb_v2_error_info_set_text(*err, &text(&message));
}

/// The argument at `index` as text (`None` for NULL). The signature declares VARCHAR parameters,
/// so DuckDB has cast each argument to VARCHAR before the callback runs.
unsafe fn argument(info: sys::duckdb_v2_function_bind_info_handle, index: usize) -> Result<Option<String>, String> {
    let mut value: sys::duckdb_v2_value_handle = ptr::null_mut();
    ok(sys::duckdb_v2_function_bind_get_arg_value(info, index as sys::idx_t, &mut value, ptr::null_mut()))?;
    let mut is_null = false;
    let read = ok(sys::duckdb_v2_value_is_null(value, &mut is_null, ptr::null_mut())).and_then(|()| {
        if is_null {
            return Ok(None);
        }
        let mut out = sys::duckdb_v2_str { ptr: ptr::null(), len: 0 };
        ok(sys::duckdb_v2_value_get_varchar(value, &mut out, ptr::null_mut()))?;
        let bytes = std::slice::from_raw_parts(out.ptr as *const u8, out.len as usize);
        String::from_utf8(bytes.to_vec()).map(Some).map_err(|_| "an argument is not valid UTF-8".to_string())
    });
    sys::duckdb_v2_value_destroy(&mut value);
    read
}

/// The query callback of `PRAGMAS[I]`: one monomorphized function per pragma, so it needs no user data.
unsafe extern "C" fn query<const I: usize>(
    info: sys::duckdb_v2_function_bind_info_handle,
    result: sys::duckdb_v2_pragma_function_query_info_handle,
    _context: sys::duckdb_v2_context_handle,
    err: *mut sys::duckdb_v2_error_info_handle,
) {
    let pragma = &PRAGMAS[I];
    let outcome = std::panic::catch_unwind(|| unsafe {
        let args = (0..pragma.params.len()).map(|i| argument(info, i)).collect::<Result<Vec<_>, _>>()?;
        let sql = call_sql(pragma.name, &args);
        ok(sys::duckdb_v2_pragma_function_query_set_query(result, &text(&sql), ptr::null_mut()))
    });
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(message)) => fail(err, &format!("PRAGMA {}: {message}", pragma.name)),
        Err(_) => fail(err, &format!("PRAGMA {}: internal error", pragma.name)),
    }
}

const CALLBACKS: [sys::duckdb_v2_pragma_function_query_callback_fn; 7] = [
    Some(query::<0>),
    Some(query::<1>),
    Some(query::<2>),
    Some(query::<3>),
    Some(query::<4>),
    Some(query::<5>),
    Some(query::<6>),
];

unsafe fn register(
    extension: sys::duckdb_v2_extension_handle,
    factory: sys::duckdb_v2_factory_handle,
    varchar: sys::duckdb_v2_logical_type_handle,
    index: usize,
) -> Result<(), String> {
    let pragma = &PRAGMAS[index];
    let mut function: sys::duckdb_v2_pragma_function_handle = ptr::null_mut();
    ok(sys::duckdb_v2_pragma_function_create(factory, &mut function, ptr::null_mut()))?;
    let built = (|| {
        ok(sys::duckdb_v2_pragma_function_set_name(function, &text(pragma.name), ptr::null_mut()))?;
        let mut sig: sys::duckdb_v2_function_signature_handle = ptr::null_mut();
        ok(sys::duckdb_v2_pragma_function_get_signature(function, &mut sig, ptr::null_mut()))?;
        for param in pragma.params {
            ok(sys::duckdb_v2_function_signature_add_parameter(
                sig,
                &text(param),
                varchar,
                ptr::null_mut(),
                sys::DUCKDB_V2_FUNCTION_PARAMETER_KIND::DUCKDB_V2_FUNCTION_PARAMETER_KIND_POSITIONAL_ONLY,
                ptr::null_mut(),
            ))?;
        }
        ok(sys::duckdb_v2_pragma_function_set_query_callback(function, CALLBACKS[index], ptr::null_mut()))?;
        ok(sys::duckdb_v2_extension_register_pragma_function(extension, function, ptr::null_mut()))
    })();
    sys::duckdb_v2_pragma_function_destroy(&mut function);
    built.map_err(|e| format!("registering PRAGMA {}: {e}", pragma.name))
}

unsafe fn load(input: &sys::duckdb_v2_extension_input) -> Result<bool, String> {
    if !sys::duckdb_rs_extension_api_v2_init(input, "v2.0.0")? {
        return Ok(false); // DuckDB refused the API and has recorded why
    }
    let mut factory: sys::duckdb_v2_factory_handle = ptr::null_mut();
    ok(sys::duckdb_v2_context_get_factory(input.context, &mut factory, ptr::null_mut()))?;
    let mut varchar: sys::duckdb_v2_logical_type_handle = ptr::null_mut();
    ok(sys::duckdb_v2_factory_create_type_from_id(
        factory,
        sys::DUCKDB_V2_LOGICAL_TYPE_ID::DUCKDB_V2_LOGICAL_TYPE_ID_VARCHAR,
        ptr::null(),
        ptr::null(),
        0,
        &mut varchar,
        ptr::null_mut(),
    ))?;
    let registered = (0..PRAGMAS.len()).try_for_each(|i| register(input.extension, factory, varchar, i));
    sys::duckdb_v2_logical_type_destroy(&mut varchar);
    registered.map(|()| true)
}

/// The v2 entrypoint DuckDB looks up as `<extension name>_init_c_api_v2`.
///
/// # Safety
/// Called by DuckDB during LOAD with a valid `input`.
#[no_mangle]
pub unsafe extern "C" fn openivm_pragma_init_c_api_v2(input: *mut sys::duckdb_v2_extension_input) {
    let Some(input) = input.as_ref() else { return };
    match std::panic::catch_unwind(|| unsafe { load(input) }) {
        Ok(Ok(_)) => {}
        Ok(Err(message)) => fail(input.err, &message),
        Err(_) => fail(input.err, "internal error while loading"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_literals() {
        assert_eq!(call_sql("refresh", &[Some("v".into())]), "CALL refresh('v')");
        assert_eq!(call_sql("openivm_drop", &[Some("it's".into())]), "CALL openivm_drop('it''s')");
        assert_eq!(
            call_sql("refresh", &[Some("v'); DROP TABLE t; --".into())]),
            "CALL refresh('v''); DROP TABLE t; --')"
        );
        assert_eq!(call_sql("openivm_refresh_all", &[]), "CALL openivm_refresh_all()");
        assert_eq!(call_sql("refresh", &[None]), "CALL refresh(NULL)");
    }

    #[test]
    fn every_pragma_has_a_callback() {
        assert_eq!(PRAGMAS.len(), CALLBACKS.len());
    }
}
