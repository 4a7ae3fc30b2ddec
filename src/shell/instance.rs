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

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread;
use std::time::Duration;

use crate::db::Sql;
use crate::error::{Error, Result};
use crate::execute::Cache;
use crate::shell::ffi::Connection;

const CONNECTION_COUNT: &str = include_str!("../../sql/shell/connection_count.sql");

/// How often the watchdog looks for the database's other connections.
const WATCH_INTERVAL: Duration = Duration::from_millis(100);

pub struct Instance {
    conn: Mutex<Option<Connection>>,
    /// Compiled views and settings of this database (used only while `conn` is held).
    cache: Mutex<Cache>,
    /// The thread that holds `conn` now (0 = none): a second lock attempt from the same thread
    /// is a re-entrant call, answered with an error instead of a deadlock.
    owner: AtomicU64,
}

fn thread_key() -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    thread::current().id().hash(&mut h);
    h.finish() | 1
}

impl Instance {
    pub fn new(conn: Connection) -> Arc<Instance> {
        Arc::new(Instance {
            conn: Mutex::new(Some(conn)),
            cache: Mutex::new(Cache::default()),
            owner: AtomicU64::new(0),
        })
    }

    /// Runs `f` with the kept connection, serializing callers.
    pub fn with_connection<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let me = thread_key();
        if self.owner.load(Ordering::Acquire) == me {
            return Err(Error::Reentrant);
        }
        let guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        self.owner.store(me, Ordering::Release);
        let outcome = match guard.as_ref() {
            Some(conn) => f(conn),
            None => Err(Error::Released),
        };
        self.owner.store(0, Ordering::Release);
        drop(guard);
        outcome
    }

    /// Runs `f` with the kept connection and this database's cache of compiled views.
    pub fn with_session<T>(&self, f: impl FnOnce(&Connection, &mut Cache) -> Result<T>) -> Result<T> {
        self.with_connection(|conn| {
            let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            f(conn, &mut cache)
        })
    }

    /// Starts the watchdog that releases the kept connection once no one else is connected.
    pub fn watch(self: &Arc<Instance>) {
        let weak: Weak<Instance> = Arc::downgrade(self);
        let spawned = thread::Builder::new().name("openivm-watchdog".into()).spawn(move || loop {
            thread::sleep(WATCH_INTERVAL);
            let Some(instance) = weak.upgrade() else {
                return;
            };
            if instance.release_if_alone() {
                return;
            }
        });
        // Without a watchdog the extension still works; only reopening in-process would wait.
        let _ = spawned;
    }

    /// Returns true once the connection has been released (or is gone).
    fn release_if_alone(&self) -> bool {
        let Ok(mut guard) = self.conn.try_lock() else {
            return false;
        };
        let alone = match guard.as_ref() {
            None => return true,
            Some(conn) => match conn.query(CONNECTION_COUNT) {
                Ok(rows) => rows
                    .first()
                    .and_then(|r| r.first().cloned().flatten())
                    .and_then(|s| s.parse::<i64>().ok())
                    .map(|n| n <= 1)
                    .unwrap_or(false),
                Err(_) => false,
            },
        };
        if !alone {
            return false;
        }
        let conn = guard.take();
        drop(guard);
        // Disconnecting the last connection closes the database on this thread.
        drop(conn);
        true
    }
}
