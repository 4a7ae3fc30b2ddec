//! The gate in front of the kept connection: one openivm call at a time uses it, and every way
//! out of a call (a result, an error, a panic) leaves the connection as it was found: no open
//! transaction, no owner, no poisoned lock.
//!
//! The gate is generic over the connection (anything that runs SQL) so that its logic is unit
//! tested without DuckDB. It is not a `Mutex<Connection>` on purpose:
//! - a `MutexGuard` cannot outlive the callback that took it, nor be released on another
//!   thread, nor tell who holds it; the gate's holder is plain state under a short-lived lock,
//!   so a nested call on the holding thread is an error, not a deadlock;
//! - a panic never poisons it: the state lock is never held while SQL or user code runs, and a
//!   poisoned connection lock is taken over (`PoisonError::into_inner`), since the connection's
//!   own state is repaired by the rollback below.
//!
//! The lease a call holds rolls back a transaction it left open when it is dropped, whatever the
//! path that dropped it (including unwinding).
//!
//! Nested calls from other threads. A statement the holder runs can evaluate user code (a
//! Python UDF in a view's query) on one of DuckDB's worker threads, and that code can call
//! openivm again. Such a call is not on the holder's thread, so the thread check misses it, and
//! waiting for the gate would deadlock: the holder's statement waits for the function, the
//! function for the gate. Nothing in DuckDB's C API tells such a call from a concurrent one (a
//! second Python thread calling refresh), which must wait its turn. The gate tells them apart by
//! time: a waiter waits as long as the holder keeps finishing statements, however long the
//! holder's call takes; if the holder's current statement has not finished `nested_wait` after
//! the waiter started watching it, the waiter gets `Error::Busy` instead of waiting on. A nested
//! call always ends there (its statement cannot finish before it returns); a concurrent call
//! ends there only behind one statement longer than `nested_wait` (default 30 s,
//! `OPENIVM_NESTED_WAIT_MS`).
//!
//! Deferred commits. DuckDB looks at the caller's interrupt only between the callbacks of a
//! table function, and a call's work runs inside one callback (init). A work that commits there
//! and is interrupted meanwhile would report INTERRUPT with its changes committed. So a call run
//! with `with_lease_deferred` does not commit: its last COMMIT is held back and the gate is
//! *parked* with the transaction open (`Parked`). The caller commits it from the next callback,
//! which DuckDB reaches only if the statement was not interrupted (`Parked::commit`); dropping the
//! `Parked` (the statement ended without reaching it) rolls the work back. While a gate is
//! parked, the next call that wants it commits the parked work first and takes over, so a
//! statement that runs two openivm functions never waits on itself.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use crate::db::{Row, Sql};
use crate::error::{Error, Result};

/// A key for the current thread (never 0).
pub fn thread_key() -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    thread::current().id().hash(&mut h);
    h.finish() | 1
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What a statement does to the connection's explicit transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxEffect {
    Begin,
    Commit,
    Rollback,
    None,
}

/// Classifies a statement by its first keyword (after whitespace and `--` comments).
pub fn tx_effect(sql: &str) -> TxEffect {
    let mut rest = sql;
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix("--") {
            rest = after.split_once('\n').map_or("", |(_, r)| r);
        } else {
            break;
        }
    }
    let word: String = rest.chars().take_while(|c| c.is_ascii_alphabetic()).collect::<String>().to_ascii_uppercase();
    match word.as_str() {
        "BEGIN" | "START" => TxEffect::Begin,
        "COMMIT" | "END" => TxEffect::Commit,
        "ROLLBACK" | "ABORT" => TxEffect::Rollback,
        _ => TxEffect::None,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Holder {
    Free,
    Busy {
        thread: u64,
    },
    /// A call's work is done, its transaction open, its commit deferred (see `Parked`).
    Parked {
        ticket: u64,
    },
}

/// How the commit of a parked call ended, when another call committed it (set once, waited for).
#[derive(Default)]
struct Outcome {
    result: Mutex<Option<std::result::Result<(), String>>>,
    set: Condvar,
}

impl Outcome {
    fn put(&self, r: std::result::Result<(), String>) {
        *lock(&self.result) = Some(r);
        self.set.notify_all();
    }

    fn wait(&self) -> std::result::Result<(), String> {
        let mut r = lock(&self.result);
        loop {
            if let Some(v) = r.take() {
                return v;
            }
            r = self.set.wait(r).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

struct State {
    holder: Holder,
    /// When the holder's current statement started (`None` between statements).
    statement_since: Option<Instant>,
    /// An explicit transaction is open on the connection (tracked from the statements run).
    tx_open: bool,
    /// The holder's COMMITs are held back (`with_lease_deferred`).
    defer_commit: bool,
    /// A COMMIT was held back; the transaction is open and done.
    commit_pending: bool,
    /// Where a taker records the outcome of the parked call's commit.
    parked_outcome: Option<Arc<Outcome>>,
    next_ticket: u64,
}

pub struct Gate<C> {
    nested_wait: Duration,
    state: Mutex<State>,
    freed: Condvar,
    /// Locked only by the gate's holder, one statement at a time.
    conn: Mutex<Option<C>>,
}

impl<C: Sql + Send> Gate<C> {
    /// `nested_wait`: how long a waiter watches one statement of the holder that does not
    /// finish before it concludes that it is nested (see the module's comment).
    pub fn new(conn: C, nested_wait: Duration) -> Gate<C> {
        Gate {
            nested_wait,
            state: Mutex::new(State {
                holder: Holder::Free,
                statement_since: None,
                tx_open: false,
                defer_commit: false,
                commit_pending: false,
                parked_outcome: None,
                next_ticket: 1,
            }),
            freed: Condvar::new(),
            conn: Mutex::new(Some(conn)),
        }
    }

    /// Waits for the gate and takes it. A call from the thread that holds it is nested and gets
    /// `Error::Reentrant` at once; a call from another thread waits while the holder makes
    /// progress and gets `Error::Busy` when one statement of the holder stalls for `nested_wait`.
    pub fn acquire(&self) -> Result<Lease<'_, C>> {
        /// A waiter looks at the holder's statement at least this often.
        const POLL: Duration = Duration::from_millis(50);
        let me = thread_key();
        let started = Instant::now();
        let mut st = lock(&self.state);
        let mut taken_over = None;
        loop {
            match st.holder {
                Holder::Free => break,
                Holder::Parked { .. } => {
                    taken_over = Some(st.parked_outcome.take());
                    break;
                }
                Holder::Busy { thread } if thread == me => return Err(Error::Reentrant),
                Holder::Busy { .. } => {
                    let mut pause = POLL;
                    if let Some(since) = st.statement_since {
                        let watched_from = since.max(started);
                        let stalled = watched_from.elapsed();
                        if stalled >= self.nested_wait {
                            return Err(Error::Busy { seconds: stalled.as_secs_f64().round() });
                        }
                        pause = pause.min(self.nested_wait - stalled);
                    }
                    st = self.freed.wait_timeout(st, pause).unwrap_or_else(PoisonError::into_inner).0;
                }
            }
        }
        st.holder = Holder::Busy { thread: me };
        drop(st);
        let lease = Lease { gate: self };
        if let Some(slot) = taken_over {
            // The parked call's work is done: commit it before this call uses the connection.
            let committed = catch_unwind(AssertUnwindSafe(|| self.run("COMMIT", &[]).map(|_| ())))
                .unwrap_or_else(|_| Err(Error::Internal("the commit panicked".into())));
            if committed.is_err() {
                let _ = self.run("ROLLBACK", &[]);
            }
            if let Some(slot) = slot {
                slot.put(committed.map_err(|e| e.to_string()));
            }
        }
        if lock(&self.conn).is_none() {
            return Err(Error::Released); // the lease's drop frees the gate again
        }
        Ok(lease)
    }

    /// Takes the gate only if it is free now (the watchdog never waits).
    pub fn try_acquire(&self) -> Option<Lease<'_, C>> {
        let mut st = lock(&self.state);
        if st.holder != Holder::Free {
            return None;
        }
        st.holder = Holder::Busy { thread: thread_key() };
        Some(Lease { gate: self })
    }

    fn release(&self) {
        let tx_open = lock(&self.state).tx_open;
        // Best effort, and never a panic out of a drop: the transaction must not outlive the
        // call that opened it, nor the call's settings.
        let _ = catch_unwind(AssertUnwindSafe(|| {
            if let Some(c) = lock(&self.conn).as_ref() {
                if tx_open {
                    let _ = c.execute("ROLLBACK");
                }
                c.call_ended();
            }
        }));
        let mut st = lock(&self.state);
        st.tx_open = false;
        st.defer_commit = false;
        st.commit_pending = false;
        st.statement_since = None;
        st.holder = Holder::Free;
        drop(st);
        self.freed.notify_all();
    }

    fn run(&self, sql: &str, params: &[&str]) -> Result<Vec<Row>> {
        let effect = tx_effect(sql);
        let flush = {
            let mut st = lock(&self.state);
            match effect {
                TxEffect::Commit if st.defer_commit && st.tx_open && !st.commit_pending => {
                    st.commit_pending = true;
                    return Ok(vec![]);
                }
                // A new transaction after a held-back COMMIT: that one commits now (a call that
                // runs several transactions defers only its last).
                TxEffect::Begin => std::mem::take(&mut st.commit_pending),
                TxEffect::Rollback => {
                    st.commit_pending = false;
                    false
                }
                _ => false,
            }
        };
        if flush {
            self.run_now("COMMIT", &[])?;
        }
        self.run_now(sql, params)
    }

    /// Runs `f` on the connection as the holder's current statement (watched by waiters).
    fn on_connection<T>(&self, f: impl FnOnce(&C) -> Result<T>) -> Result<T> {
        lock(&self.state).statement_since = Some(Instant::now());
        let outcome = {
            let conn = lock(&self.conn);
            match conn.as_ref() {
                Some(c) => f(c),
                None => Err(Error::Released),
            }
        };
        lock(&self.state).statement_since = None;
        outcome
    }

    fn run_now(&self, sql: &str, params: &[&str]) -> Result<Vec<Row>> {
        let effect = tx_effect(sql);
        let outcome = self.on_connection(|c| c.query_with(sql, params));
        let mut st = lock(&self.state);
        match (effect, outcome.is_ok()) {
            (TxEffect::Begin, true) => st.tx_open = true,
            (TxEffect::Commit, true) | (TxEffect::Rollback, _) => {
                st.tx_open = false;
                st.commit_pending = false;
            }
            _ => {}
        }
        outcome
    }
}

/// A call whose work is done and whose commit is deferred (see the module's comment). It holds
/// the gate until `commit`, or until dropped, which rolls the work back.
pub struct Parked<C: Sql + Send> {
    gate: Arc<Gate<C>>,
    ticket: u64,
    outcome: Arc<Outcome>,
    done: bool,
}

impl<C: Sql + Send> Parked<C> {
    /// Takes the gate back if no other call has committed this one and taken over.
    fn reclaim(&self) -> bool {
        let mut st = lock(&self.gate.state);
        if st.holder != (Holder::Parked { ticket: self.ticket }) {
            return false;
        }
        st.holder = Holder::Busy { thread: thread_key() };
        st.parked_outcome = None;
        true
    }

    /// Commits the work; an error means that nothing of it was committed.
    pub fn commit(mut self) -> Result<()> {
        self.done = true;
        if self.reclaim() {
            let lease = Lease { gate: &*self.gate };
            // An error leaves the transaction open: the lease's drop rolls it back.
            return lease.query_with("COMMIT", &[]).map(|_| ());
        }
        // Another call took the gate over and commits this call's work first: wait for its word.
        self.outcome.wait().map_err(|e| Error::Internal(format!("the work of this call could not be committed: {e}")))
    }
}

impl<C: Sql + Send> Drop for Parked<C> {
    fn drop(&mut self) {
        if !self.done && self.reclaim() {
            drop(Lease { gate: &*self.gate }); // rolls back the open transaction
        }
    }
}

/// Like `with_lease`, with the last COMMIT of `f` deferred: if `f` succeeds and left a COMMIT
/// pending, the gate is parked and returned, to be committed (or dropped, rolling back) later.
pub fn with_lease_deferred<C: Sql + Send, T>(
    gate: &Arc<Gate<C>>,
    f: impl FnOnce(&dyn Sql) -> Result<T>,
) -> Result<(T, Option<Parked<C>>)> {
    let lease = gate.acquire()?;
    lock(&gate.state).defer_commit = true;
    let value = match catch_unwind(AssertUnwindSafe(|| f(&lease))) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => return Err(e), // the lease's drop rolls back
        Err(payload) => {
            return Err(Error::Internal(format!("internal error (panic caught): {}", panic_text(&*payload))))
        }
    };
    let mut st = lock(&gate.state);
    st.defer_commit = false;
    if !(st.commit_pending && st.tx_open) {
        drop(st);
        drop(lease);
        return Ok((value, None));
    }
    drop(st);
    // Parked, the call is over for the database's other connections.
    let _ = catch_unwind(AssertUnwindSafe(|| lease.with_conn(|c| c.map(Sql::call_ended))));
    let mut st = lock(&gate.state);
    let ticket = st.next_ticket;
    st.next_ticket += 1;
    let outcome: Arc<Outcome> = Arc::new(Outcome::default());
    st.holder = Holder::Parked { ticket };
    st.parked_outcome = Some(outcome.clone());
    st.statement_since = None;
    drop(st);
    // The gate now belongs to the `Parked`, not to this lease.
    std::mem::forget(lease);
    gate.freed.notify_all();
    Ok((value, Some(Parked { gate: gate.clone(), ticket, outcome, done: false })))
}

/// The right to use the connection, until dropped.
pub struct Lease<'g, C: Sql + Send> {
    gate: &'g Gate<C>,
}

impl<C: Sql + Send> Lease<'_, C> {
    /// Runs `f` on the connection itself (`None` once released).
    pub fn with_conn<T>(&self, f: impl FnOnce(Option<&C>) -> T) -> T {
        f(lock(&self.gate.conn).as_ref())
    }

    /// Removes the connection (the watchdog releasing it); later calls get `Error::Released`.
    pub fn take_connection(&self) -> Option<C> {
        lock(&self.gate.conn).take()
    }
}

impl<C: Sql + Send> Sql for Lease<'_, C> {
    fn query_with(&self, sql: &str, params: &[&str]) -> Result<Vec<Row>> {
        self.gate.run(sql, params)
    }

    fn use_database(&self, catalog: &str) -> Result<()> {
        self.gate.on_connection(|c| c.use_database(catalog))
    }

    fn execute_reusing_plan(&self, sql: &str, class: u32) -> Result<()> {
        if tx_effect(sql) != TxEffect::None {
            return self.execute(sql);
        }
        self.gate.on_connection(|c| c.execute_reusing_plan(sql, class))
    }

    fn query_reusing_plan(&self, sql: &str, class: u32) -> Result<Vec<Row>> {
        if tx_effect(sql) != TxEffect::None {
            return self.query(sql);
        }
        self.gate.on_connection(|c| c.query_reusing_plan(sql, class))
    }

    fn catalog_seen(&self, catalog: &str, fingerprint: u64) {
        let _ = self.gate.on_connection(|c| {
            c.catalog_seen(catalog, fingerprint);
            Ok(())
        });
    }
}

impl<C: Sql + Send> Drop for Lease<'_, C> {
    fn drop(&mut self) {
        self.gate.release();
    }
}

/// Runs `f` with the gate held; a panic in `f` becomes an error, and on every path the lease is
/// dropped (so the gate is free and no transaction stays open) before this returns.
pub fn with_lease<C: Sql + Send, T>(gate: &Gate<C>, f: impl FnOnce(&dyn Sql) -> Result<T>) -> Result<T> {
    let lease = gate.acquire()?;
    let outcome = catch_unwind(AssertUnwindSafe(|| f(&lease)));
    drop(lease);
    match outcome {
        Ok(r) => r,
        Err(payload) => Err(Error::Internal(format!("internal error (panic caught): {}", panic_text(&*payload)))),
    }
}

pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string())
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// A connection that records statements and panics or fails on request.
    #[derive(Default)]
    pub struct Fake {
        pub log: Mutex<Vec<String>>,
        pub panic_on: Option<&'static str>,
        pub sleep_on: Option<(&'static str, Duration)>,
        /// How many times a call ended on it (`Sql::call_ended`).
        pub ended: Mutex<usize>,
    }

    impl Sql for Fake {
        fn query_with(&self, sql: &str, _params: &[&str]) -> Result<Vec<Row>> {
            lock(&self.log).push(sql.to_string());
            if let Some((s, d)) = self.sleep_on {
                if sql == s {
                    thread::sleep(d);
                }
            }
            if self.panic_on == Some(sql) {
                panic!("fake panic on {sql}");
            }
            if sql == "FAIL" {
                return Err(Error::Internal("fake failure".into()));
            }
            Ok(vec![])
        }

        fn use_database(&self, catalog: &str) -> Result<()> {
            self.execute(&crate::render::use_database(catalog))
        }

        fn call_ended(&self) {
            *lock(&self.ended) += 1;
        }
    }

    const LONG: Duration = Duration::from_secs(30);

    fn log(g: &Gate<Fake>) -> Vec<String> {
        g.try_acquire().expect("gate free").with_conn(|c| lock(&c.expect("connection").log).clone())
    }

    #[test]
    fn classifies_transaction_statements() {
        assert_eq!(tx_effect("BEGIN TRANSACTION"), TxEffect::Begin);
        assert_eq!(tx_effect("  -- c\n begin"), TxEffect::Begin);
        assert_eq!(tx_effect("COMMIT"), TxEffect::Commit);
        assert_eq!(tx_effect("rollback"), TxEffect::Rollback);
        assert_eq!(tx_effect("SELECT 'BEGIN'"), TxEffect::None);
        assert_eq!(tx_effect("BEGINNING"), TxEffect::None);
    }

    #[test]
    fn a_panic_frees_the_gate_and_rolls_back() {
        let g = Gate::new(Fake { panic_on: Some("BOOM"), ..Fake::default() }, LONG);
        let err = with_lease(&g, |db| {
            db.execute("BEGIN TRANSACTION")?;
            db.execute("BOOM")
        })
        .unwrap_err();
        assert!(err.to_string().contains("panic caught"), "{err}");
        assert_eq!(log(&g), vec!["BEGIN TRANSACTION", "BOOM", "ROLLBACK"]);
        // The same thread is not taken for a nested caller afterwards, and the poisoned
        // connection lock does not stop the next call nor the watchdog.
        with_lease(&g, |db| db.execute("SELECT 1")).unwrap();
        assert!(g.try_acquire().is_some());
    }

    #[test]
    fn a_panic_in_the_callers_code_frees_the_gate() {
        let g = Gate::new(Fake::default(), LONG);
        let err = with_lease(&g, |db| -> Result<()> {
            db.execute("BEGIN")?;
            panic!("in the caller")
        })
        .unwrap_err();
        assert!(err.to_string().contains("in the caller"));
        assert_eq!(log(&g), vec!["BEGIN", "ROLLBACK"]);
    }

    #[test]
    fn an_error_with_an_open_transaction_rolls_back_and_a_commit_does_not() {
        let g = Gate::new(Fake::default(), LONG);
        assert!(with_lease(&g, |db| {
            db.execute("BEGIN")?;
            db.execute("FAIL")
        })
        .is_err());
        with_lease(&g, |db| {
            db.execute("BEGIN")?;
            db.execute("COMMIT")
        })
        .unwrap();
        assert_eq!(log(&g), vec!["BEGIN", "FAIL", "ROLLBACK", "BEGIN", "COMMIT"]);
    }

    #[test]
    fn a_nested_call_on_the_holding_thread_is_an_error() {
        let g = Gate::new(Fake::default(), LONG);
        let inner = with_lease(&g, |_| Ok(with_lease(&g, |_| Ok(())))).unwrap();
        assert!(matches!(inner, Err(Error::Reentrant)));
        with_lease(&g, |_| Ok(())).unwrap();
    }

    #[test]
    fn another_thread_waits_for_the_holder() {
        let g =
            Arc::new(Gate::new(Fake { sleep_on: Some(("SLOW", Duration::from_millis(200))), ..Fake::default() }, LONG));
        let g2 = g.clone();
        let t = thread::spawn(move || with_lease(&g2, |db| db.execute("SLOW")));
        thread::sleep(Duration::from_millis(50));
        with_lease(&g, |db| db.execute("AFTER")).unwrap();
        t.join().unwrap().unwrap();
        assert_eq!(log(&g), vec!["SLOW", "AFTER"]);
    }

    #[test]
    fn a_released_connection_is_reported() {
        let g = Gate::new(Fake::default(), LONG);
        assert!(g.try_acquire().unwrap().take_connection().is_some());
        assert!(matches!(with_lease(&g, |_| Ok(())), Err(Error::Released)));
        assert!(g.try_acquire().is_some(), "the failed acquire freed the gate");
    }

    #[test]
    fn a_waiter_behind_a_stalled_statement_is_told_it_is_probably_nested() {
        let slow = Fake { sleep_on: Some(("STALL", Duration::from_millis(800))), ..Fake::default() };
        let g = Arc::new(Gate::new(slow, Duration::from_millis(150)));
        let g2 = g.clone();
        let holder = thread::spawn(move || with_lease(&g2, |db| db.execute("STALL")));
        thread::sleep(Duration::from_millis(50));
        let started = Instant::now();
        let err = with_lease(&g, |_| Ok(())).unwrap_err();
        assert!(matches!(err, Error::Busy { .. }), "{err}");
        assert!(err.to_string().contains("cannot call openivm"));
        assert!(started.elapsed() < Duration::from_millis(600), "gave up after the stall, not after the statement");
        holder.join().unwrap().unwrap();
        with_lease(&g, |_| Ok(())).unwrap();
    }

    #[test]
    fn a_waiter_behind_a_long_call_of_short_statements_waits_its_turn() {
        let step = Fake { sleep_on: Some(("STEP", Duration::from_millis(40))), ..Fake::default() };
        let g = Arc::new(Gate::new(step, Duration::from_millis(150)));
        let g2 = g.clone();
        // 15 statements of 40 ms: the call lasts 600 ms, four times the nested wait.
        let holder = thread::spawn(move || with_lease(&g2, |db| (0..15).try_for_each(|_| db.execute("STEP"))));
        thread::sleep(Duration::from_millis(30));
        with_lease(&g, |db| db.execute("AFTER")).unwrap();
        holder.join().unwrap().unwrap();
        assert_eq!(log(&g).last().map(String::as_str), Some("AFTER"));
    }

    fn deferred(g: &Arc<Gate<Fake>>, stmts: &'static [&'static str]) -> Result<((), Option<Parked<Fake>>)> {
        with_lease_deferred(g, |db| stmts.iter().try_for_each(|s| db.execute(s)))
    }

    #[test]
    fn a_deferred_commit_runs_only_when_the_parked_call_commits() {
        let g = Arc::new(Gate::new(Fake::default(), LONG));
        let (_, parked) = deferred(&g, &["BEGIN", "W", "COMMIT"]).unwrap();
        let parked = parked.expect("parked");
        assert!(g.try_acquire().is_none(), "a parked gate is not free");
        parked.commit().unwrap();
        assert_eq!(log(&g), vec!["BEGIN", "W", "COMMIT"]);
    }

    #[test]
    fn the_connection_is_told_of_every_end_of_a_call() {
        let g = Arc::new(Gate::new(Fake::default(), LONG));
        let ended = || *lock(&lock(&g.conn).as_ref().expect("connection").ended);
        with_lease(&g, |db| db.execute("A")).unwrap();
        assert!(with_lease(&g, |db| db.execute("FAIL")).is_err());
        assert_eq!(ended(), 2);
        // Parked, a call is over for the database's other connections; its commit ends it again.
        let (_, parked) = deferred(&g, &["BEGIN", "W", "COMMIT"]).unwrap();
        assert_eq!(ended(), 3);
        parked.expect("parked").commit().unwrap();
        assert_eq!(ended(), 4);
    }

    #[test]
    fn a_parked_call_dropped_before_its_commit_rolls_back() {
        let g = Arc::new(Gate::new(Fake::default(), LONG));
        let (_, parked) = deferred(&g, &["BEGIN", "W", "COMMIT"]).unwrap();
        drop(parked);
        assert_eq!(log(&g), vec!["BEGIN", "W", "ROLLBACK"]);
    }

    #[test]
    fn the_next_call_commits_a_parked_call_and_takes_over() {
        let g = Arc::new(Gate::new(Fake::default(), LONG));
        let (_, parked) = deferred(&g, &["BEGIN", "W", "COMMIT"]).unwrap();
        // The same thread (two openivm functions in one statement) does not wait on itself.
        with_lease(&g, |db| db.execute("NEXT")).unwrap();
        parked.expect("parked").commit().unwrap();
        assert_eq!(log(&g), vec!["BEGIN", "W", "COMMIT", "NEXT"]);
    }

    #[test]
    fn only_the_last_of_several_transactions_is_deferred_and_an_error_undoes_it() {
        let g = Arc::new(Gate::new(Fake::default(), LONG));
        let (_, parked) = deferred(&g, &["BEGIN", "A", "COMMIT", "BEGIN", "B", "COMMIT"]).unwrap();
        parked.expect("parked").commit().unwrap();
        assert_eq!(log(&g), vec!["BEGIN", "A", "COMMIT", "BEGIN", "B", "COMMIT"]);
        let g = Arc::new(Gate::new(Fake::default(), LONG));
        assert!(deferred(&g, &["BEGIN", "A", "COMMIT", "FAIL"]).is_err());
        assert_eq!(log(&g), vec!["BEGIN", "A", "FAIL", "ROLLBACK"]);
        let g = Arc::new(Gate::new(Fake::default(), LONG));
        let (_, parked) = deferred(&g, &["BEGIN", "A", "ROLLBACK", "SELECT"]).unwrap();
        assert!(parked.is_none(), "nothing to commit");
        assert_eq!(log(&g), vec!["BEGIN", "A", "ROLLBACK", "SELECT"]);
    }

    #[test]
    fn a_parked_call_taken_over_by_another_thread_learns_the_commits_outcome() {
        let slow = Fake { sleep_on: Some(("COMMIT", Duration::from_millis(100))), ..Fake::default() };
        let g = Arc::new(Gate::new(slow, LONG));
        let (_, parked) = deferred(&g, &["BEGIN", "W", "COMMIT"]).unwrap();
        let g2 = g.clone();
        let taker = thread::spawn(move || with_lease(&g2, |db| db.execute("NEXT")));
        thread::sleep(Duration::from_millis(30)); // the taker is inside the parked call's COMMIT
        parked.expect("parked").commit().unwrap();
        taker.join().unwrap().unwrap();
        assert_eq!(log(&g), vec!["BEGIN", "W", "COMMIT", "NEXT"]);
    }
}
