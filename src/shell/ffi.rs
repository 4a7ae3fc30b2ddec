//! The only place that calls DuckDB's C API for running SQL: a kept connection and its results.
//!
//! Every result is read as text (the SQL that needs values casts them to VARCHAR), which keeps
//! this layer to one vector type and leaves typing to the callers that know what they asked for.

use std::ffi::{CStr, CString};
use std::ptr;

use libduckdb_sys as ffi;

use crate::db::{Row, Sql};
use crate::error::{Error, Result, SqlErrorKind};

/// A connection the extension owns. DuckDB connections may be used from any thread, one at a
/// time; the shell serializes access with a lock (see `shell::instance`).
pub struct Connection {
    raw: ffi::duckdb_connection,
    /// Prepared statements of the fixed SQL (sql/**/*.sql) and of SQL with parameters, by default database
    /// and text: prepared once per connection instead of once per use (parsing and planning are
    /// most of what a small metadata statement costs). DuckDB rebinds a prepared statement by
    /// itself when the catalog changed since it was prepared, but not when the default database
    /// changed (`use_database`), hence the database in the key.
    prepared: std::cell::RefCell<std::collections::HashMap<(String, String), ffi::duckdb_prepared_statement>>,
    /// Prepared statements of generated SQL whose plan a caller asked to reuse
    /// (`Sql::execute_reusing_plan`), by default database, text and the caller's size class; at
    /// most `KEPT_PLANS` of them (all are dropped when one more would not fit).
    kept: std::cell::RefCell<std::collections::HashMap<(String, String, u32), ffi::duckdb_prepared_statement>>,
    /// The default database as `use_database` last set it ('' until then: the one of LOAD).
    database: std::cell::RefCell<String>,
    /// The optimizers of `NO_STATISTICS` are off (since a kept plan ran). DuckDB holds
    /// `disabled_optimizers` for the whole database, so every other connection plans without
    /// them meanwhile: they are turned on again before a statement planned once and at the end
    /// of every call (`Sql::call_ended`).
    statistics_off: std::cell::Cell<bool>,
    /// The host plans a prepared statement that reads a table again at every run, with the
    /// rows' statistics of that run (DuckDB 2.0: its optimizers may use the rows), so no
    /// optimizer need be turned off (see `NO_STATISTICS`).
    replans_reads: std::cell::Cell<bool>,
    /// The optimizers the user turned off, read at the call's first kept plan: openivm's
    /// statements skip them too, and they are what `disabled_optimizers` goes back to.
    users_disabled: std::cell::RefCell<Option<Vec<String>>>,
    /// Per database (lower case): the fingerprint of its tables and views last seen
    /// (`Sql::catalog_seen`).
    catalogs_seen: std::cell::RefCell<std::collections::HashMap<String, u64>>,
}

/// How many reusable plans a connection keeps: a few per maintained view in steady state.
const KEPT_PLANS: usize = 64;

/// The optimizers whose plans hold conclusions about the rows the tables held when the plan was
/// made or last ran (DuckDB 1.5.5: statistics propagation prunes filters and joins that no row
/// passes and picks perfect hash tables from value ranges; compressed materialization narrows
/// values to the ranges seen; a join's pushed-down filter keeps the key range of the build side
/// of an earlier run of the same prepared statement; the row-group pruner skips row groups by
/// their statistics). A plan that outlives its data must be made and run without them
/// (test/sql/chains/kept_plan_ranges.test). DuckDB 2.0 plans a prepared statement that reads a
/// table again at every run, so there no plan outlives its data (`replans_reads`).
const NO_STATISTICS: [&str; 4] =
    ["statistics_propagation", "compressed_materialization", "join_filter_pushdown", "row_group_pruner"];

/// How a statement is planned.
#[derive(Clone, Copy)]
enum Planning {
    /// Planned for this one run (`duckdb_query`).
    Once,
    /// Fixed SQL, or SQL with parameters: prepared once per connection.
    Parameterized,
    /// Generated SQL without parameters whose plan is kept under this size class.
    Kept(u32),
    /// Fixed SQL without parameters that reads no table: prepared once, planned with every
    /// optimizer (there are no rows whose statistics a plan could keep).
    ReadsNoTable,
}

// SAFETY: a duckdb_connection is not tied to the thread that made it; access is serialized by
// the owning `Instance`.
unsafe impl Send for Connection {}

impl Connection {
    /// Opens a new connection to `db`.
    ///
    /// # Safety
    /// `db` must be the live database handle DuckDB lends during LOAD (the entrypoint).
    pub unsafe fn connect(db: ffi::duckdb_database) -> Result<Connection> {
        let mut raw: ffi::duckdb_connection = ptr::null_mut();
        let state = ffi::duckdb_connect(db, &mut raw);
        if state != ffi::duckdb_state_DuckDBSuccess || raw.is_null() {
            return Err(Error::Internal("could not open a connection to the database".into()));
        }
        Ok(Connection {
            raw,
            prepared: Default::default(),
            kept: Default::default(),
            database: Default::default(),
            statistics_off: Default::default(),
            users_disabled: Default::default(),
            replans_reads: Default::default(),
            catalogs_seen: Default::default(),
        })
    }

    /// Runs fixed SQL without parameters that reads no table (a system function), prepared
    /// once; it leaves the database's settings alone (see `statistics_off`).
    pub fn query_reading_no_table(&self, sql: &str) -> Result<Vec<Row>> {
        self.traced(sql, &[], Planning::ReadsNoTable)
    }

    /// Tells the connection that its host plans a prepared statement that reads a table again
    /// at every run (DuckDB 2.0).
    pub fn host_replans_reads(&self) {
        self.replans_reads.set(true);
    }

    pub fn raw(&self) -> ffi::duckdb_connection {
        self.raw
    }

    /// The prepared statement of `sql`, prepared on first use.
    fn prepared_statement(&self, sql: &str, c_sql: &CString) -> Result<ffi::duckdb_prepared_statement> {
        let key = (self.database.borrow().clone(), sql.to_string());
        if let Some(&stmt) = self.prepared.borrow().get(&key) {
            return Ok(stmt);
        }
        let stmt = self.prepare(sql, c_sql)?;
        self.prepared.borrow_mut().insert(key, stmt);
        Ok(stmt)
    }

    /// The kept prepared statement of `sql` in size class `class`, prepared on first use.
    fn kept_statement(&self, sql: &str, c_sql: &CString, class: u32) -> Result<ffi::duckdb_prepared_statement> {
        let key = (self.database.borrow().clone(), sql.to_string(), class);
        if let Some(&stmt) = self.kept.borrow().get(&key) {
            return Ok(stmt);
        }
        let stmt = self.prepare(sql, c_sql)?;
        if self.kept.borrow().len() >= KEPT_PLANS {
            self.forget_all_kept();
        }
        self.kept.borrow_mut().insert(key, stmt);
        Ok(stmt)
    }

    /// Forgets every kept plan.
    fn forget_all_kept(&self) {
        for (_, mut old) in self.kept.borrow_mut().drain() {
            unsafe { ffi::duckdb_destroy_prepare(&mut old) };
        }
    }

    /// Forgets the kept plan of `sql` (after it failed: the next run plans afresh).
    fn forget_kept(&self, sql: &str, class: u32) {
        let key = (self.database.borrow().clone(), sql.to_string(), class);
        if let Some(mut stmt) = self.kept.borrow_mut().remove(&key) {
            unsafe { ffi::duckdb_destroy_prepare(&mut stmt) };
        }
    }

    fn prepare(&self, sql: &str, c_sql: &CString) -> Result<ffi::duckdb_prepared_statement> {
        let mut stmt: ffi::duckdb_prepared_statement = ptr::null_mut();
        unsafe {
            if ffi::duckdb_prepare(self.raw, c_sql.as_ptr(), &mut stmt) != ffi::duckdb_state_DuckDBSuccess {
                let message = text_or(ffi::duckdb_prepare_error(stmt), "could not prepare");
                ffi::duckdb_destroy_prepare(&mut stmt);
                return Err(Error::sql(message, sql));
            }
        }
        Ok(stmt)
    }

    /// Turns the optimizers of `NO_STATISTICS` off for a statement that is prepared once and run
    /// again (DuckDB also plans it again with the settings of the run after a catalog change),
    /// besides those the user turned off.
    fn statistics_optimizers_off(&self) -> Result<()> {
        if self.statistics_off.get() || self.replans_reads.get() {
            return Ok(());
        }
        let mut off = self.users_disabled()?;
        for o in NO_STATISTICS {
            if !off.iter().any(|u| u == o) {
                off.push(o.to_string());
            }
        }
        self.run_once(&crate::render::set_disabled_optimizers(&off))?;
        self.statistics_off.set(true);
        Ok(())
    }

    /// The optimizers the user turned off, read once per call.
    fn users_disabled(&self) -> Result<Vec<String>> {
        if let Some(users) = self.users_disabled.borrow().as_ref() {
            return Ok(users.clone());
        }
        let rows = self.run_once(crate::sql::shell::DISABLED_OPTIMIZERS.text)?;
        let value = rows.first().and_then(|r| r.first().cloned().flatten()).unwrap_or_default();
        let users: Vec<String> =
            value.split(',').map(str::trim).filter(|o| !o.is_empty()).map(str::to_string).collect();
        *self.users_disabled.borrow_mut() = Some(users.clone());
        Ok(users)
    }

    /// Puts `disabled_optimizers` back to the user's value. In a transaction a failed statement
    /// aborted, SET fails too; the next statement tries again (meanwhile statements are planned
    /// without those optimizers: slower at worst).
    fn statistics_optimizers_on(&self) {
        if !self.statistics_off.get() {
            return;
        }
        let users = self.users_disabled.borrow().clone().unwrap_or_default();
        if self.run_once(&crate::render::set_disabled_optimizers(&users)).is_ok() {
            self.statistics_off.set(false);
        }
    }

    /// Runs `sql` planned for this one run.
    fn run_once(&self, sql: &str) -> Result<Vec<Row>> {
        let c_sql = CString::new(sql).map_err(|_| Error::Internal("SQL text contains a NUL byte".into()))?;
        let mut result: ffi::duckdb_result = unsafe { std::mem::zeroed() };
        let state = unsafe { ffi::duckdb_query(self.raw, c_sql.as_ptr(), &mut result) };
        outcome(state, &mut result, sql)
    }

    fn run(&self, sql: &str, params: &[&str], planning: Planning) -> Result<Vec<Row>> {
        if matches!(planning, Planning::Once) {
            // After a kept plan: the optimizers again, for this statement and those after.
            self.statistics_optimizers_on();
        }
        let c_sql = CString::new(sql).map_err(|_| Error::Internal("SQL text contains a NUL byte".into()))?;
        let mut result: ffi::duckdb_result = unsafe { std::mem::zeroed() };
        let state = match planning {
            Planning::Once => unsafe { ffi::duckdb_query(self.raw, c_sql.as_ptr(), &mut result) },
            Planning::Kept(class) => {
                // Planned (and re-planned by DuckDB after a catalog change) without the
                // optimizers that use the data's statistics: a kept plan would otherwise keep
                // conclusions about the rows at its planning (a filter no row passed then, a
                // value range) and give wrong results once the tables hold other rows.
                self.statistics_optimizers_off()?;
                let stmt = self.kept_statement(sql, &c_sql, class)?;
                unsafe { ffi::duckdb_execute_prepared(stmt, &mut result) }
            }
            Planning::ReadsNoTable => {
                let stmt = self.prepared_statement(sql, &c_sql)?;
                unsafe { ffi::duckdb_execute_prepared(stmt, &mut result) }
            }
            Planning::Parameterized => {
                // Prepared once and run many times: the same rule as a kept plan.
                self.statistics_optimizers_off()?;
                let stmt = self.prepared_statement(sql, &c_sql)?;
                unsafe {
                    ffi::duckdb_clear_bindings(stmt);
                    for (i, p) in params.iter().enumerate() {
                        let v = CString::new(*p)
                            .map_err(|_| Error::InvalidArgument("a name contains a NUL byte".into()))?;
                        ffi::duckdb_bind_varchar(stmt, (i + 1) as u64, v.as_ptr());
                    }
                    ffi::duckdb_execute_prepared(stmt, &mut result)
                }
            }
        };
        let outcome = outcome(state, &mut result, sql);
        if let (Planning::Kept(class), Err(_)) = (planning, &outcome) {
            self.forget_kept(sql, class);
        }
        outcome
    }
}

/// The rows of a finished statement, or its error; destroys the result.
fn outcome(state: ffi::duckdb_state, result: &mut ffi::duckdb_result, sql: &str) -> Result<Vec<Row>> {
    let outcome = if state == ffi::duckdb_state_DuckDBSuccess {
        let mut rows = Vec::new();
        read_rows(result, &mut rows).map(|()| rows)
    } else {
        let message = unsafe { text_or(ffi::duckdb_result_error(result), "unknown error") };
        let kind = match unsafe { ffi::duckdb_result_error_type(result) } {
            ffi::duckdb_error_type_DUCKDB_ERROR_CONVERSION => SqlErrorKind::Conversion,
            ffi::duckdb_error_type_DUCKDB_ERROR_CATALOG => SqlErrorKind::Catalog,
            _ => SqlErrorKind::Other,
        };
        Err(Error::Sql { message, sql: sql.to_string(), kind })
    };
    unsafe { ffi::duckdb_destroy_result(result) };
    outcome
}

unsafe fn text_or(p: *const std::os::raw::c_char, fallback: &str) -> String {
    if p.is_null() {
        fallback.to_string()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// Set OPENIVM_TRACE=1 to print every statement the extension runs, with its time, to stderr
/// (the first 160 characters; OPENIVM_TRACE=full prints whole statements).
fn tracing() -> Option<usize> {
    static TRACE: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *TRACE.get_or_init(|| match std::env::var("OPENIVM_TRACE") {
        Ok(v) if v == "full" => Some(usize::MAX),
        Ok(_) => Some(160),
        Err(_) => None,
    })
}

thread_local! {
    /// Inside a step of a call on this thread: when its last traced statement ended (or the
    /// step began). None outside steps: the watchdog's polls and the time between calls are
    /// not openivm's work.
    static LAST_END: std::cell::Cell<Option<std::time::Instant>> = const { std::cell::Cell::new(None) };
}

/// Starts a step of a call (bind, work, commit): returns its start for `trace_step`.
pub fn trace_begin() -> std::time::Instant {
    let now = std::time::Instant::now();
    if tracing().is_some() {
        LAST_END.with(|last| last.set(Some(now)));
    }
    now
}

/// With OPENIVM_TRACE set, prints how long one step of a call took (bind, work, commit).
pub fn trace_step(what: &str, started: std::time::Instant) {
    if tracing().is_some() {
        LAST_END.with(|last| last.set(None));
        eprintln!("openivm {:8.2} ms  [{what}]", started.elapsed().as_secs_f64() * 1000.0);
    }
}

/// With OPENIVM_TRACE set, prints a note.
pub fn trace_note(what: &str) {
    if tracing().is_some() {
        eprintln!("openivm {what}");
    }
}

impl Connection {
    /// Runs `sql` planned as `planning`, traced with OPENIVM_TRACE.
    fn traced(&self, sql: &str, params: &[&str], planning: Planning) -> Result<Vec<Row>> {
        let Some(width) = tracing() else {
            return self.run(sql, params, planning);
        };
        let started = std::time::Instant::now();
        // Time spent outside statements (in openivm itself, or waiting) since the last one of
        // this step, where it is worth a line.
        LAST_END.with(|last| {
            if let Some(gap) = last.get().map(|end| started.duration_since(end)) {
                if gap.as_secs_f64() > 0.002 {
                    eprintln!("openivm {:8.2} ms  [between statements]", gap.as_secs_f64() * 1000.0);
                }
            }
        });
        let outcome = self.run(sql, params, planning);
        LAST_END.with(|last| {
            if last.get().is_some() {
                last.set(Some(std::time::Instant::now()));
            }
        });
        let line: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
        let kept = if matches!(planning, Planning::Kept(_)) { "[kept plan] " } else { "" };
        eprintln!(
            "openivm {:8.2} ms  {kept}{}",
            started.elapsed().as_secs_f64() * 1000.0,
            line.chars().take(width).collect::<String>()
        );
        outcome
    }
}

impl Sql for Connection {
    fn query_with(&self, sql: &str, params: &[&str]) -> Result<Vec<Row>> {
        let planning = if params.is_empty() { Planning::Once } else { Planning::Parameterized };
        self.traced(sql, params, planning)
    }

    fn query_fixed(&self, sql: &str, params: &[&str]) -> Result<Vec<Row>> {
        self.traced(sql, params, Planning::Parameterized)
    }

    fn call_ended(&self) {
        self.statistics_optimizers_on();
        if !self.statistics_off.get() {
            // The user may change the setting before the next call.
            *self.users_disabled.borrow_mut() = None;
        }
    }

    fn execute_reusing_plan(&self, sql: &str, class: u32) -> Result<()> {
        self.traced(sql, &[], Planning::Kept(class)).map(|_| ())
    }

    fn query_reusing_plan(&self, sql: &str, class: u32) -> Result<Vec<Row>> {
        self.traced(sql, &[], Planning::Kept(class))
    }

    /// DuckDB 1.5.5 binds a prepared statement again when a catalog it reads changed, and from
    /// then on at every run (measured: a TPC-H Q3 merge 4.2 ms kept, 5.3 ms at every refresh
    /// after one unrelated `CREATE TABLE`): a change of a database's tables or views drops the
    /// kept plans, which are prepared again at their next run.
    fn catalog_seen(&self, catalog: &str, fingerprint: u64) {
        let before = self.catalogs_seen.borrow_mut().insert(catalog.to_lowercase(), fingerprint);
        if before.is_some_and(|b| b != fingerprint) {
            self.forget_all_kept();
        }
    }

    /// `USE`, and from now on the prepared statements of that database.
    fn use_database(&self, catalog: &str) -> Result<()> {
        self.execute(&crate::render::use_database(catalog))?;
        *self.database.borrow_mut() = catalog.to_lowercase();
        Ok(())
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        for (_, mut stmt) in self.prepared.borrow_mut().drain() {
            unsafe { ffi::duckdb_destroy_prepare(&mut stmt) };
        }
        self.forget_all_kept();
        unsafe { ffi::duckdb_disconnect(&mut self.raw) };
    }
}

fn read_rows(result: &mut ffi::duckdb_result, rows: &mut Vec<Row>) -> Result<()> {
    let columns = unsafe { ffi::duckdb_column_count(result) } as usize;
    loop {
        let chunk = unsafe { ffi::duckdb_fetch_chunk(*result) };
        if chunk.is_null() {
            break;
        }
        let size = unsafe { ffi::duckdb_data_chunk_get_size(chunk) } as usize;
        let mut block: Vec<Row> = (0..size).map(|_| Vec::with_capacity(columns)).collect();
        for col in 0..columns {
            unsafe {
                let vector = ffi::duckdb_data_chunk_get_vector(chunk, col as u64);
                let ty = ffi::duckdb_vector_get_column_type(vector);
                let type_id = ffi::duckdb_get_type_id(ty);
                let mut ty_mut = ty;
                ffi::duckdb_destroy_logical_type(&mut ty_mut);
                let validity = ffi::duckdb_vector_get_validity(vector);
                let data = ffi::duckdb_vector_get_data(vector);
                for (i, row) in block.iter_mut().enumerate() {
                    let valid = validity.is_null() || ffi::duckdb_validity_row_is_valid(validity, i as u64);
                    let cell = if valid { read_cell(type_id, data, i) } else { Ok(None) };
                    match cell {
                        Ok(c) => row.push(c),
                        Err(e) => {
                            let mut chunk_mut = chunk;
                            ffi::duckdb_destroy_data_chunk(&mut chunk_mut);
                            return Err(e);
                        }
                    }
                }
            }
        }
        rows.extend(block);
        let mut chunk_mut = chunk;
        unsafe { ffi::duckdb_destroy_data_chunk(&mut chunk_mut) };
    }
    Ok(())
}

/// Reads one value of the few physical types the extension's own queries return; any other
/// type is an error naming it (the query must cast it to VARCHAR).
unsafe fn read_cell(type_id: ffi::duckdb_type, data: *mut std::ffi::c_void, i: usize) -> Result<Option<String>> {
    Ok(Some(match type_id {
        ffi::DUCKDB_TYPE_DUCKDB_TYPE_VARCHAR => {
            let s = (data as *mut ffi::duckdb_string_t).add(i);
            let len = ffi::duckdb_string_t_length(*s) as usize;
            let p = ffi::duckdb_string_t_data(s) as *const u8;
            String::from_utf8_lossy(std::slice::from_raw_parts(p, len)).into_owned()
        }
        ffi::DUCKDB_TYPE_DUCKDB_TYPE_BOOLEAN => (*(data as *const bool).add(i)).to_string(),
        ffi::DUCKDB_TYPE_DUCKDB_TYPE_INTEGER => (*(data as *const i32).add(i)).to_string(),
        ffi::DUCKDB_TYPE_DUCKDB_TYPE_BIGINT => (*(data as *const i64).add(i)).to_string(),
        ffi::DUCKDB_TYPE_DUCKDB_TYPE_DOUBLE => (*(data as *const f64).add(i)).to_string(),
        other => {
            return Err(Error::Internal(format!(
            "a query of the extension returned a column of type id {other}, which it does not read; cast it to VARCHAR"
        )))
        }
    }))
}
