//! Per-database state: the connection the extension keeps, and its release when the database
//! closes.
//!
//! DuckDB lends the database handle only during LOAD, so the connection that later runs the
//! extension's SQL must be opened then and kept. Kept, it holds the database instance alive:
//! closing the database and opening the same file again in one process would wait forever for
//! the old instance to go. A watchdog thread therefore polls `duckdb_connection_count()` and
//! releases the kept connection as soon as it is the only one left, which lets the instance
//! close. The state lives in the registered functions' extra info (one `Arc<Instance>` per
//! database), never in a process-global, so two databases in one process never share it.
//!
//! At process exit the C++ runtime tears down DuckDB's static state while other threads may
//! still run; a poll in flight then crashes the process (seen as a segfault after a Python
//! script's last line). So every watchdog is stopped, waiting for a poll in progress to end,
//! before that teardown begins: from a thread-local destructor of the main thread, which
//! `exit()` runs before any `atexit` handler or static destructor (a plain `atexit` handler is
//! not enough: DuckDB registers the destructors of function-local statics when they are first
//! used, after LOAD, and those run first), with an `atexit` handler as the fallback when LOAD
//! did not run on the main thread, registered once more after the first poll (so that it runs
//! before the destructors of the statics a poll uses).
//!
//! Access to the connection goes through a `Gate` (shell/gate.rs): one call at a time, nested
//! calls refused, and every exit path (including a panic) frees it and rolls back a transaction
//! left open.

use std::sync::{Arc, Mutex, Once, Weak};
use std::thread;
use std::time::Duration;

use crate::db::Sql;
use crate::error::Result;
use crate::execute::Session;
use crate::shell::ffi::Connection;
use crate::shell::gate::{with_lease, with_lease_deferred, Gate, Parked};

use crate::sql::shell::CONNECTION_COUNT;

/// How often the watchdog looks for the database's other connections;
/// `OPENIVM_WATCH_INTERVAL_MS` overrides it (the exit test polls continuously).
const WATCH_INTERVAL: Duration = Duration::from_millis(100);

/// A duration in milliseconds from the environment, or `default`.
fn env_millis(name: &str, default: Duration) -> Duration {
    std::env::var(name).ok().and_then(|v| v.trim().parse::<u64>().ok()).map_or(default, Duration::from_millis)
}

/// Process-wide: true once the process is exiting. Each watchdog poll holds this lock, so the
/// exit handler that sets it waits for a poll in progress. (A process-global on purpose: exit is
/// per process, not per database.)
static EXITING: Mutex<bool> = Mutex::new(false);
static EXIT_HANDLER: Once = Once::new();
static EXIT_HANDLER_AFTER_POLL: Once = Once::new();

extern "C" {
    fn atexit(callback: extern "C" fn()) -> std::os::raw::c_int;
    fn getpid() -> std::os::raw::c_int;
    fn gettid() -> std::os::raw::c_int;
}

/// Dropped with the main thread's thread-locals, i.e. at the very start of `exit()`.
struct ExitGuard;

impl Drop for ExitGuard {
    fn drop(&mut self) {
        stop_watchdogs_at_exit();
    }
}

thread_local! {
    static EXIT_GUARD: ExitGuard = const { ExitGuard };
}

fn on_main_thread() -> bool {
    // SAFETY: both calls only read the calling thread's ids.
    unsafe { gettid() == getpid() }
}

/// Runs at `exit()`, before the static destructors of libraries loaded earlier (DuckDB's among
/// them): after it returns no watchdog touches DuckDB again.
extern "C" fn stop_watchdogs_at_exit() {
    *EXITING.lock().unwrap_or_else(|p| p.into_inner()) = true;
}

/// How long a call waits behind one statement of another call that does not finish before it
/// concludes that it was made from inside that statement (shell/gate.rs). Long for a concurrent
/// call, finite for a nested one; `OPENIVM_NESTED_WAIT_MS` overrides it.
const NESTED_WAIT: Duration = Duration::from_secs(30);

pub struct Instance {
    gate: Arc<Gate<Connection>>,
    /// The home database and the compiled views and settings per database (used only while the
    /// gate is held).
    session: Mutex<Session>,
    /// The settings are registered as DuckDB config options (`shell/options.rs`).
    has_options: bool,
}

impl Instance {
    pub fn new(conn: Connection, has_options: bool) -> Arc<Instance> {
        Arc::new(Instance {
            gate: Arc::new(Gate::new(conn, env_millis("OPENIVM_NESTED_WAIT_MS", NESTED_WAIT))),
            session: Mutex::new(Session::default()),
            has_options,
        })
    }

    /// Whether a call reads the caller's `SET` of the settings.
    pub fn has_options(&self) -> bool {
        self.has_options
    }

    /// Runs `f` with the kept connection, serializing callers. A panic in `f` is returned as an
    /// error; the gate is free and no transaction is left open when this returns.
    pub fn with_connection<T>(&self, f: impl FnOnce(&dyn Sql) -> Result<T>) -> Result<T> {
        with_lease(&self.gate, f)
    }

    /// Like `with_connection`, but the last COMMIT of `f` is held back: the work's transaction
    /// stays open in the returned `Parked`, committed by `Parked::commit` and rolled back if the
    /// `Parked` is dropped first (shell/gate.rs).
    pub fn with_connection_deferred<T>(
        &self,
        f: impl FnOnce(&dyn Sql) -> Result<T>,
    ) -> Result<(T, Option<Parked<Connection>>)> {
        with_lease_deferred(&self.gate, f)
    }

    /// `with_connection_deferred` with the session (home database, caches).
    pub fn with_session_deferred<T>(
        &self,
        f: impl FnOnce(&dyn Sql, &mut Session) -> Result<T>,
    ) -> Result<(T, Option<Parked<Connection>>)> {
        self.with_connection_deferred(|db| f(db, &mut self.session.lock().unwrap_or_else(|p| p.into_inner())))
    }

    /// `with_connection` with the session (for the read-only checks at bind).
    pub fn with_session<T>(&self, f: impl FnOnce(&dyn Sql, &mut Session) -> Result<T>) -> Result<T> {
        self.with_connection(|db| f(db, &mut self.session.lock().unwrap_or_else(|p| p.into_inner())))
    }

    /// Starts the watchdog that releases the kept connection once no one else is connected.
    pub fn watch(self: &Arc<Instance>) {
        if on_main_thread() {
            // Registers the guard's destructor with this (main) thread.
            EXIT_GUARD.with(|_| ());
        }
        EXIT_HANDLER.call_once(|| {
            // SAFETY: registers a plain function of this library that takes no arguments. If
            // registration fails the watchdog still works; only the exit race stays open.
            unsafe {
                atexit(stop_watchdogs_at_exit);
            }
        });
        let weak: Weak<Instance> = Arc::downgrade(self);
        let interval = env_millis("OPENIVM_WATCH_INTERVAL_MS", WATCH_INTERVAL);
        let spawned = thread::Builder::new().name("openivm-watchdog".into()).spawn(move || loop {
            thread::sleep(interval);
            let exiting = EXITING.lock().unwrap_or_else(|p| p.into_inner());
            if *exiting {
                return;
            }
            let Some(instance) = weak.upgrade() else {
                return;
            };
            let released = instance.release_if_alone();
            // The instance (and the connection it may hold) goes while the poll lock is held.
            drop(instance);
            drop(exiting);
            // A poll first uses some of DuckDB's function-local statics, whose destructors are
            // registered then, after the handler registered at LOAD: registered again now, the
            // handler runs before them (atexit runs in reverse order). This covers a LOAD that
            // did not run on the main thread (DuckDB 2.0's Python client), where the
            // thread-local guard is not armed.
            EXIT_HANDLER_AFTER_POLL.call_once(|| {
                // SAFETY: as for the registration in `watch`.
                unsafe {
                    atexit(stop_watchdogs_at_exit);
                }
            });
            if released {
                return;
            }
        });
        // Without a watchdog the extension still works; only reopening in-process would wait.
        let _ = spawned;
    }

    /// Returns true once the connection has been released (or is gone).
    fn release_if_alone(&self) -> bool {
        // A call in progress means someone is connected: look again at the next tick.
        let Some(lease) = self.gate.try_acquire() else {
            return false;
        };
        let alone = lease.with_conn(|conn| conn.map(|conn| connection_count(conn).is_ok_and(|n| n <= 1)));
        match alone {
            None => true,
            Some(false) => false,
            Some(true) => {
                let conn = lease.take_connection();
                drop(lease);
                // Disconnecting the last connection closes the database on this thread.
                drop(conn);
                true
            }
        }
    }
}

/// The database's open connections (a poll changes no setting of the database, shell/ffi.rs).
fn connection_count(conn: &Connection) -> Result<i64> {
    crate::db::first_int(&conn.query_reading_no_table(CONNECTION_COUNT.text)?, CONNECTION_COUNT.text)
}
