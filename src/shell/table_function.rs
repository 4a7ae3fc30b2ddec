//! Registering the extension's SQL surface as DuckDB table functions.
//!
//! Each function is a `Spec`: its name, parameters, result columns and a plain Rust `run`
//! function. The C callbacks here adapt that to DuckDB's bind/init/function protocol: bind reads
//! the arguments, init runs the work once (so `DESCRIBE` or a prepared statement never triggers
//! it), and the function callback streams the rows. Every callback catches panics: nothing may
//! unwind into DuckDB.
//!
//! The work's last COMMIT is deferred from init to the first call of the function callback
//! (`Call::with_session`, shell/gate.rs): DuckDB checks the caller's interrupt before that
//! call, so an interrupted statement never reaches the commit, and its work is rolled back when
//! DuckDB destroys the init data.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::{c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use libduckdb_sys as ffi;

use crate::db::Sql;
use crate::error::{Error, Result};
use crate::shell::ffi::{trace_begin, trace_step, Connection};
use crate::shell::gate::Parked;
use crate::shell::instance::Instance;

#[derive(Clone, Copy, Debug)]
pub enum ColumnType {
    Varchar,
    Integer,
    BigInt,
    Double,
    Boolean,
}

impl ColumnType {
    fn type_id(self) -> ffi::duckdb_type {
        match self {
            ColumnType::Varchar => ffi::DUCKDB_TYPE_DUCKDB_TYPE_VARCHAR,
            ColumnType::Integer => ffi::DUCKDB_TYPE_DUCKDB_TYPE_INTEGER,
            ColumnType::BigInt => ffi::DUCKDB_TYPE_DUCKDB_TYPE_BIGINT,
            ColumnType::Double => ffi::DUCKDB_TYPE_DUCKDB_TYPE_DOUBLE,
            ColumnType::Boolean => ffi::DUCKDB_TYPE_DUCKDB_TYPE_BOOLEAN,
        }
    }
}

/// One output value of a table function.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Text(String),
    Int(i64),
    Double(f64),
    Bool(bool),
}

/// Arguments as the user passed them: positional VARCHARs and named parameters.
#[derive(Debug, Default, Clone)]
pub struct Args {
    pub positional: Vec<Option<String>>,
    pub named: BTreeMap<String, Value>,
    /// The settings the caller set with `SET` (read at bind).
    pub caller: crate::store::settings::CallerSettings,
}

impl Args {
    /// The positional argument `index`, which must not be NULL.
    pub fn text(&self, index: usize, what: &str) -> Result<&str> {
        match self.positional.get(index) {
            Some(Some(s)) => Ok(s),
            _ => Err(Error::InvalidArgument(format!("{what} must not be NULL"))),
        }
    }

    /// The positional argument `index`, None when NULL (for parameters listed as nullable).
    pub fn opt_text(&self, index: usize) -> Option<&str> {
        self.positional.get(index).and_then(|v| v.as_deref())
    }

    /// A named VARCHAR parameter, if given (NULL counts as not given).
    pub fn named_text(&self, name: &str) -> Option<&str> {
        match self.named.get(name) {
            Some(Value::Text(s)) => Some(s),
            _ => None,
        }
    }

    /// A named BOOLEAN parameter, if given (NULL counts as not given).
    pub fn flag(&self, name: &str) -> Option<bool> {
        match self.named.get(name) {
            Some(Value::Bool(b)) => Some(*b),
            _ => None,
        }
    }
}

pub type Rows = Vec<Vec<Value>>;

/// What a `Spec`'s `run` gets: the database's instance, through which it reaches the kept
/// connection with its commit deferred to the function callback.
pub struct Call<'a> {
    instance: &'a Instance,
    parked: RefCell<Option<Parked<Connection>>>,
    caller: crate::store::settings::CallerSettings,
}

impl<'a> Call<'a> {
    pub fn new(instance: &'a Instance, caller: crate::store::settings::CallerSettings) -> Call<'a> {
        Call { instance, parked: RefCell::new(None), caller }
    }

    /// Runs `f` with the kept connection and the database's cache of compiled views. Its last
    /// COMMIT is held back until the statement reaches the function callback (see the module's
    /// comment).
    pub fn with_session<T>(&self, f: impl FnOnce(&dyn Sql, &mut crate::execute::Session) -> Result<T>) -> Result<T> {
        // A second use in one call commits the first's work first (the gate does that on
        // acquire); the earlier `Parked` then only reports that outcome.
        let earlier = self.parked.borrow_mut().take();
        let caller = self.caller.clone();
        let (value, parked) = self.instance.with_session_deferred(|db, s| {
            s.set_caller(caller);
            f(db, s)
        })?;
        if let Some(p) = earlier {
            p.commit()?;
        }
        *self.parked.borrow_mut() = parked;
        Ok(value)
    }

    fn into_parked(self) -> Option<Parked<Connection>> {
        self.parked.into_inner()
    }
}

pub struct Spec {
    pub name: &'static str,
    /// Positional parameters, all VARCHAR.
    pub params: &'static [&'static str],
    /// Positional parameters that may be NULL (the others are refused at bind when NULL).
    pub nullable: &'static [&'static str],
    /// Named BOOLEAN parameters.
    pub named_flags: &'static [&'static str],
    /// Named VARCHAR parameters.
    pub named_text: &'static [&'static str],
    pub columns: &'static [(&'static str, ColumnType)],
    pub run: fn(&Call, &Args) -> Result<Rows>,
    /// Checks run at bind, before any work: an error here is a binder error, which leaves the
    /// caller's open transaction usable. Read-only (it may read through the kept connection).
    /// Every positional argument not listed as nullable is checked to be non-NULL before it runs.
    pub validate: Option<fn(&Instance, &Args) -> Result<()>>,
}

struct Registered {
    spec: &'static Spec,
    instance: Arc<Instance>,
}

struct InitData {
    rows: Rows,
    next: Mutex<usize>,
    /// The work's deferred commit: taken by the first function callback; dropped with the init
    /// data (rolling the work back) if the statement ends before reaching it.
    parked: Mutex<Option<Parked<Connection>>>,
}

/// Runs `f`, turning a panic into an error so that it never crosses into DuckDB.
pub fn guard<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let text = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            Err(Error::Internal(format!("internal error (panic caught): {text}")))
        }
    }
}

fn c_string(s: &str) -> CString {
    // After replacing NUL bytes the conversion cannot fail; an empty string is the fallback.
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

/// Registers `spec` on `conn` with `instance` as the state its callbacks see.
///
/// # Safety
/// `conn` must be a live connection of the database the functions are registered in.
pub unsafe fn register(conn: ffi::duckdb_connection, spec: &'static Spec, instance: Arc<Instance>) -> Result<()> {
    unsafe {
        let mut f = ffi::duckdb_create_table_function();
        let name = c_string(spec.name);
        ffi::duckdb_table_function_set_name(f, name.as_ptr());
        for _ in spec.params {
            let mut t = ffi::duckdb_create_logical_type(ffi::DUCKDB_TYPE_DUCKDB_TYPE_VARCHAR);
            ffi::duckdb_table_function_add_parameter(f, t);
            ffi::duckdb_destroy_logical_type(&mut t);
        }
        for flag in spec.named_flags {
            let mut t = ffi::duckdb_create_logical_type(ffi::DUCKDB_TYPE_DUCKDB_TYPE_BOOLEAN);
            let n = c_string(flag);
            ffi::duckdb_table_function_add_named_parameter(f, n.as_ptr(), t);
            ffi::duckdb_destroy_logical_type(&mut t);
        }
        for name in spec.named_text {
            let mut t = ffi::duckdb_create_logical_type(ffi::DUCKDB_TYPE_DUCKDB_TYPE_VARCHAR);
            let n = c_string(name);
            ffi::duckdb_table_function_add_named_parameter(f, n.as_ptr(), t);
            ffi::duckdb_destroy_logical_type(&mut t);
        }
        let extra = Box::into_raw(Box::new(Registered { spec, instance }));
        ffi::duckdb_table_function_set_extra_info(f, extra as *mut c_void, Some(drop_box::<Registered>));
        ffi::duckdb_table_function_set_bind(f, Some(bind));
        ffi::duckdb_table_function_set_init(f, Some(init));
        ffi::duckdb_table_function_set_function(f, Some(produce));
        let state = ffi::duckdb_register_table_function(conn, f);
        ffi::duckdb_destroy_table_function(&mut f);
        if state != ffi::duckdb_state_DuckDBSuccess {
            return Err(Error::Internal(format!("could not register table function {}", spec.name)));
        }
    }
    Ok(())
}

unsafe extern "C" fn drop_box<T>(p: *mut c_void) {
    if !p.is_null() {
        // Dropping user state must not unwind into DuckDB either.
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(p as *mut T))));
    }
}

unsafe fn value_text(v: ffi::duckdb_value) -> Option<String> {
    if v.is_null() || ffi::duckdb_is_null_value(v) {
        return None;
    }
    let p = ffi::duckdb_get_varchar(v);
    if p.is_null() {
        return None;
    }
    let s = CStr::from_ptr(p).to_string_lossy().into_owned();
    ffi::duckdb_free(p as *mut c_void);
    Some(s)
}

unsafe extern "C" fn bind(info: ffi::duckdb_bind_info) {
    let outcome = guard(|| {
        let reg = &*(ffi::duckdb_bind_get_extra_info(info) as *const Registered);
        let mut args = Args::default();
        for i in 0..reg.spec.params.len() {
            let mut v = ffi::duckdb_bind_get_parameter(info, i as u64);
            args.positional.push(value_text(v));
            if !v.is_null() {
                ffi::duckdb_destroy_value(&mut v);
            }
        }
        for flag in reg.spec.named_flags {
            let n = c_string(flag);
            let mut v = ffi::duckdb_bind_get_named_parameter(info, n.as_ptr());
            if !v.is_null() {
                if !ffi::duckdb_is_null_value(v) {
                    args.named.insert(flag.to_string(), Value::Bool(ffi::duckdb_get_bool(v)));
                }
                ffi::duckdb_destroy_value(&mut v);
            }
        }
        for name in reg.spec.named_text {
            let n = c_string(name);
            let mut v = ffi::duckdb_bind_get_named_parameter(info, n.as_ptr());
            if !v.is_null() {
                if let Some(text) = value_text(v) {
                    args.named.insert(name.to_string(), Value::Text(text));
                }
                ffi::duckdb_destroy_value(&mut v);
            }
        }
        if reg.instance.has_options() {
            args.caller = crate::store::settings::CallerSettings::parse(&crate::shell::options::caller_values(info))?;
        }
        for (i, param) in reg.spec.params.iter().enumerate() {
            if !reg.spec.nullable.contains(param) && !matches!(args.positional.get(i), Some(Some(_))) {
                return Err(Error::InvalidArgument(format!("{param} must not be NULL")));
            }
        }
        if let Some(validate) = reg.spec.validate {
            let started = trace_begin();
            validate(&reg.instance, &args)?;
            trace_step("bind-time checks", started);
        }
        for (name, ty) in reg.spec.columns {
            let mut t = ffi::duckdb_create_logical_type(ty.type_id());
            let n = c_string(name);
            ffi::duckdb_bind_add_result_column(info, n.as_ptr(), t);
            ffi::duckdb_destroy_logical_type(&mut t);
        }
        let data = Box::into_raw(Box::new(args));
        ffi::duckdb_bind_set_bind_data(info, data as *mut c_void, Some(drop_box::<Args>));
        Ok(())
    });
    if let Err(e) = outcome {
        let m = c_string(&e.to_string());
        ffi::duckdb_bind_set_error(info, m.as_ptr());
    }
}

unsafe extern "C" fn init(info: ffi::duckdb_init_info) {
    let outcome = guard(|| {
        let reg = &*(ffi::duckdb_init_get_extra_info(info) as *const Registered);
        let args = &*(ffi::duckdb_init_get_bind_data(info) as *const Args);
        let call = Call::new(&reg.instance, args.caller.clone());
        let started = trace_begin();
        let rows = (reg.spec.run)(&call, args)?;
        trace_step(reg.spec.name, started);
        let parked = Mutex::new(call.into_parked());
        let data = Box::into_raw(Box::new(InitData { rows, next: Mutex::new(0), parked }));
        ffi::duckdb_init_set_init_data(info, data as *mut c_void, Some(drop_box::<InitData>));
        Ok(())
    });
    if let Err(e) = outcome {
        let m = c_string(&e.to_string());
        ffi::duckdb_init_set_error(info, m.as_ptr());
    }
}

unsafe extern "C" fn produce(info: ffi::duckdb_function_info, output: ffi::duckdb_data_chunk) {
    let outcome = guard(|| {
        let reg = &*(ffi::duckdb_function_get_extra_info(info) as *const Registered);
        let data = &*(ffi::duckdb_function_get_init_data(info) as *const InitData);
        let mut next = data.next.lock().map_err(|_| Error::Internal("poisoned output cursor".into()))?;
        // DuckDB got here, so the statement was not interrupted during the work: commit it.
        let parked = data.parked.lock().map(|mut p| p.take()).unwrap_or_else(|p| p.into_inner().take());
        if let Some(p) = parked {
            let started = trace_begin();
            p.commit()?;
            trace_step("deferred commit", started);
        }
        let capacity = ffi::duckdb_vector_size() as usize;
        let end = (*next + capacity).min(data.rows.len());
        for (col, (_, ty)) in reg.spec.columns.iter().enumerate() {
            let vector = ffi::duckdb_data_chunk_get_vector(output, col as u64);
            for (out_row, row) in data.rows[*next..end].iter().enumerate() {
                let value = row
                    .get(col)
                    .ok_or_else(|| Error::Internal(format!("{}: a result row has no column {col}", reg.spec.name)))?;
                write_value(vector, *ty, out_row, value)?;
            }
        }
        ffi::duckdb_data_chunk_set_size(output, (end - *next) as u64);
        *next = end;
        Ok(())
    });
    if let Err(e) = outcome {
        let m = c_string(&e.to_string());
        ffi::duckdb_function_set_error(info, m.as_ptr());
    }
}

/// Writes one value; a value of the wrong kind for its column is an error (never a panic).
unsafe fn write_value(vector: ffi::duckdb_vector, ty: ColumnType, row: usize, value: &Value) -> Result<()> {
    let data = ffi::duckdb_vector_get_data(vector);
    match (ty, value) {
        (_, Value::Null) => {
            ffi::duckdb_vector_ensure_validity_writable(vector);
            let validity = ffi::duckdb_vector_get_validity(vector);
            ffi::duckdb_validity_set_row_invalid(validity, row as u64);
        }
        (ColumnType::Varchar, Value::Text(s)) => {
            ffi::duckdb_vector_assign_string_element_len(vector, row as u64, s.as_ptr() as *const _, s.len() as u64);
        }
        (ColumnType::Integer, Value::Int(i)) => {
            let v = i32::try_from(*i)
                .map_err(|_| Error::Internal(format!("value {i} does not fit an INTEGER result column")))?;
            *(data as *mut i32).add(row) = v
        }
        (ColumnType::BigInt, Value::Int(i)) => *(data as *mut i64).add(row) = *i,
        (ColumnType::Double, Value::Double(d)) => *(data as *mut f64).add(row) = *d,
        (ColumnType::Boolean, Value::Bool(b)) => *(data as *mut bool).add(row) = *b,
        (ty, v) => return Err(Error::Internal(format!("value {v:?} does not fit a result column of type {ty:?}"))),
    }
    Ok(())
}
