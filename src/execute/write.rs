//! Writes through the extension: `openivm_insert`, `openivm_delete` and `openivm_update`
//! perform a write and record its exact delta in the table's change state, in one transaction
//! on the extension's connection, so that every view over the table sees it exactly once.
//!
//! An insert's query is any one SELECT statement (a table, a file, a table function, constant
//! rows): it is evaluated once into a temp table, and the rows inserted and recorded are read
//! from there (`query_rows`).
//!
//! The fragments of a delete and an update (the predicate, the assignments) are parsed by DuckDB inside a
//! probe SELECT that is never run (`render::write`), and the probe's parse tree must have the
//! shape that was rendered around the fragment: a fragment that ends the statement, adds a
//! clause or smuggles in a second statement is refused. The fragment is then bound like a view
//! query (`bind`: columns of the table, deterministic functions, nothing of the caller's
//! session) and rendered again from the bound expression; its text is never run.
//!
//! What a write records depends on the table's feed (`capture::feeds`), the change state its
//! views read:
//! - no feed (no maintained view reads the table) or a diff feed: nothing; the diff sees the
//!   write like any other;
//! - recorded: every write's delta goes to the feed's pending batch;
//! - append-only with a key: inserts past the watermark are left to the watermark (rows not past
//!   it are recorded); a delete or an update first takes in the rows past the watermark (the
//!   inserts no capture has seen, which it may delete or change) and then records its delta;
//! - append-only on the rowid: inserts only; a delete or an update is refused, because after
//!   deletes a CHECKPOINT can renumber rows and the rowid watermark would no longer be exact.
//!
//! Each delete and update reads its rows in the transaction before it writes, with the same
//! rendered predicate and values, and fails if the write touched another number of rows.

use std::cell::RefCell;
use std::collections::HashMap;

use crate::ast::{CompareOp, Expr, FromItem, Select, SelectItem, TableName};
use crate::capture::feeds::{self, Feed};
use crate::capture::{recorded, SourceKind};
use crate::db::{in_transaction, Sql};
use crate::error::{Error, Result, SqlErrorKind};
use crate::execute::Cache;
use crate::front::bind::{bind, Catalog, FunctionInfo, RelationKind, ResolvedTable};
use crate::front::catalog::{main_table_exists, table_name, SqlCatalog};
use crate::front::parse::{check_one_select, parse_select};
use crate::ir::{ColumnDef, Leaf, Shape, TableId};
use crate::render::capture::{self as capture_sql, Position};
use crate::render::write::{self as sql, Assignment, Target};
use crate::render::{self, Qualified};
use crate::sql::catalog::PARSE_TREE;

/// What a write did: the table (fully qualified) and the rows it inserted, deleted or updated.
#[derive(Debug)]
pub struct Written {
    pub table: String,
    pub rows: i64,
}

/// The catalog a write's fragments are bound against: DuckDB's, with the built-in functions
/// remembered per database instance (reading DuckDB's list of functions costs about 100 ms
/// here, more than a small write). Functions a user created are looked up every time: a macro
/// can be replaced by one that is not deterministic.
/// The write's target table is resolved once and remembered under its fully qualified name,
/// which is how the probes name it.
pub struct WriteCatalog<'a> {
    inner: SqlCatalog<'a>,
    functions: RefCell<&'a mut HashMap<String, FunctionInfo>>,
    target: RefCell<Option<(TableName, ResolvedTable)>>,
}

impl<'a> WriteCatalog<'a> {
    pub fn new(db: &'a dyn Sql, functions: &'a mut HashMap<String, FunctionInfo>) -> WriteCatalog<'a> {
        WriteCatalog { inner: SqlCatalog::new(db), functions: RefCell::new(functions), target: RefCell::new(None) }
    }

    /// The table a write targets: a base table, not one of openivm's own.
    pub fn target_table(&self, arg: &str) -> Result<(TableId, Vec<ColumnDef>)> {
        let name = table_name(arg)?;
        let found = self.inner.find(&name)?.ok_or_else(|| Error::Bind(format!("table '{arg}' does not exist")))?;
        if found.kind != RelationKind::Table {
            return Err(Error::InvalidArgument(format!("'{arg}' is a view; openivm writes to tables")));
        }
        if found.schema.eq_ignore_ascii_case(feeds::SCHEMA) || found.name.to_ascii_lowercase().starts_with("openivm_") {
            return Err(Error::InvalidArgument(format!(
                "'{arg}' is one of openivm's own tables (the schema openivm and names starting with openivm_ are reserved)"
            )));
        }
        let id = TableId { catalog: found.catalog, schema: found.schema, name: found.name };
        let columns = self.inner.columns(&id)?;
        let qualified_name =
            TableName { catalog: Some(id.catalog.clone()), schema: Some(id.schema.clone()), name: id.name.clone() };
        let resolved = ResolvedTable { id: id.clone(), kind: RelationKind::Table, columns: columns.clone() };
        *self.target.borrow_mut() = Some((qualified_name, resolved));
        Ok((id, columns))
    }

    /// The default database of the extension's connection (read once per write).
    pub fn main_catalog(&self) -> Result<String> {
        Ok(self.inner.defaults()?.0)
    }
}

impl Catalog for WriteCatalog<'_> {
    fn table(&self, name: &TableName) -> Result<Option<ResolvedTable>> {
        if let Some((n, t)) = self.target.borrow().as_ref() {
            if n == name {
                return Ok(Some(t.clone()));
            }
        }
        self.inner.table(name)
    }

    fn function(&self, name: &str) -> Result<Option<FunctionInfo>> {
        let key = name.to_lowercase();
        if let Some(f) = self.functions.borrow().get(&key) {
            return Ok(Some(*f));
        }
        let found = self.inner.function(name)?;
        if let Some(f) = found.filter(|f| f.builtin) {
            self.functions.borrow_mut().insert(key, f);
        }
        Ok(found)
    }

    fn expression_types(&self, leaves: &[Leaf], exprs: &[Expr]) -> Result<Vec<Option<String>>> {
        self.inner.expression_types(leaves, exprs)
    }
}

/// The three writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Insert,
    Delete,
    Update,
}

/// DuckDB's parse tree (JSON) of a statement (parsed, never run).
fn parse_tree(db: &dyn Sql, text: &str) -> Result<String> {
    PARSE_TREE.scalar(db, [text])?.ok_or_else(|| Error::Parse("DuckDB returned no parse tree".into()))
}

/// DuckDB's parse of a probe SELECT (parsed, never run).
fn parse_probe(db: &dyn Sql, probe: &str) -> Result<Select> {
    select_of(&parse_tree(db, probe)?)
}

/// The SELECT of a parse tree of one statement.
fn select_of(json: &str) -> Result<Select> {
    let select = parse_select(json)?;
    // The parser takes `x IN (SELECT ...)` conjuncts out of the WHERE clause; a fragment has none.
    if !select.semi_joins.is_empty() {
        return Err(Error::Unsupported("subqueries".into()));
    }
    Ok(select)
}

/// The FROM item of a probe over `t` as the parse tree gives it back.
fn probe_from(t: &TableId) -> FromItem {
    FromItem::Table {
        name: TableName { catalog: Some(t.catalog.clone()), schema: Some(t.schema.clone()), name: t.name.clone() },
        alias: None,
    }
}

fn not_one(what: &str, t: &TableId, text: &str) -> Error {
    Error::InvalidArgument(format!(
        "the {what} must be {} over the columns of {} and nothing else; '{text}' is not",
        match what {
            "predicate" => "one boolean expression",
            _ => "a comma-separated list of column = expression",
        },
        t.dotted()
    ))
}

/// Adds which fragment an error of binding it came from.
fn in_fragment(what: &str, e: Error) -> Error {
    match e {
        Error::Bind(m) => Error::Bind(format!("{m} (in the {what})")),
        Error::Unsupported(m) | Error::Refused(m) => {
            Error::InvalidArgument(format!("unsupported in the {what} of a write through openivm: {m}"))
        }
        Error::Parse(m) => Error::InvalidArgument(format!("could not parse the {what}: {m}")),
        Error::NotOneSelect(m) => Error::InvalidArgument(format!(
            "the {what} must be one {} ({m})",
            if what == "query" { "SELECT statement" } else { "expression" }
        )),
        other => other,
    }
}

/// Whether a probe's parse tree has the shape rendered around a predicate.
fn is_predicate_probe(s: &Select, t: &TableId) -> bool {
    let star = [SelectItem { expr: Expr::Star { relation: None }, alias: None }];
    s.items == star && s.from == probe_from(t) && s.group_by.is_empty() && s.where_clause.is_some()
}

/// Parses and binds a write's predicate (None: every row).
pub fn bind_predicate(db: &dyn Sql, cat: &dyn Catalog, t: &TableId, predicate: Option<&str>) -> Result<Target> {
    let Some(text) = predicate else {
        return Ok(Target { table: t.clone(), alias: t.name.clone(), predicate: vec![] });
    };
    if text.trim().is_empty() {
        return Err(Error::InvalidArgument("the predicate is empty; pass NULL to write every row".into()));
    }
    let select = parse_probe(db, &sql::predicate_probe(t, text)).map_err(|e| in_fragment("predicate", e))?;
    if !is_predicate_probe(&select, t) {
        return Err(not_one("predicate", t, text));
    }
    let q = bind(select, cat).map_err(|e| in_fragment("predicate", e))?;
    let alias = q.leaves.first().map(|l| l.alias.clone()).unwrap_or_else(|| t.name.clone());
    Ok(Target { table: t.clone(), alias, predicate: q.predicates })
}

/// The assignments of a probe's parse tree: (column as written, value), or None if an item is
/// not `column = expression`.
fn assignment_items(s: &Select, t: &TableId) -> Option<Vec<(String, Expr)>> {
    if s.from != probe_from(t) || s.where_clause.is_some() || !s.group_by.is_empty() || s.items.is_empty() {
        return None;
    }
    s.items
        .iter()
        .map(|item| match (&item.expr, &item.alias) {
            (Expr::Compare { op: CompareOp::Eq, left, right }, None) => match left.as_ref() {
                Expr::Column(parts) if parts.len() == 1 => Some((parts[0].clone(), right.as_ref().clone())),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// Parses and binds an update's assignments (`a = a + 1, b = 'x'`).
pub fn bind_assignments(
    db: &dyn Sql,
    cat: &dyn Catalog,
    t: &TableId,
    columns: &[ColumnDef],
    text: &str,
) -> Result<Vec<Assignment>> {
    if text.trim().is_empty() {
        return Err(Error::InvalidArgument("the assignments are empty".into()));
    }
    let select = parse_probe(db, &sql::assignments_probe(t, text)).map_err(|e| in_fragment("assignments", e))?;
    let items = assignment_items(&select, t).ok_or_else(|| not_one("assignments", t, text))?;
    let mut targets: Vec<ColumnDef> = Vec::new();
    for (name, _) in &items {
        let c = columns.iter().find(|c| c.name.eq_ignore_ascii_case(name)).ok_or_else(|| {
            Error::Bind(format!("table '{}' has no column '{name}' (in the assignments)", t.dotted()))
        })?;
        if targets.contains(c) {
            return Err(Error::InvalidArgument(format!("the column '{}' is assigned twice", c.name)));
        }
        targets.push(c.clone());
    }
    let values =
        Select::plain(items.into_iter().map(|(_, v)| SelectItem { expr: v, alias: None }).collect(), probe_from(t));
    let q = bind(values, cat).map_err(|e| in_fragment("assignments", e))?;
    let Shape::Bag { outputs, .. } = q.shape else {
        return Err(Error::InvalidArgument("an assignment must not aggregate".into()));
    };
    Ok(targets.into_iter().zip(outputs).map(|(column, value)| Assignment { column, value }).collect())
}

/// The rows of an insert's query, evaluated once into a temp table with the table's columns
/// (so that the rows inserted and the rows recorded are the same rows, whatever the query reads:
/// a file that changes, `random()`). Any one SELECT statement is accepted and run as it is, on
/// the extension's connection: it sees what is committed, and not the caller's temporary
/// objects (`unreachable`).
fn query_rows(db: &dyn Sql, t: &TableId, columns: &[ColumnDef], text: &str) -> Result<Qualified> {
    if text.trim().is_empty() {
        return Err(in_fragment("query", Error::NotOneSelect("the query is empty".into())));
    }
    check_one_select(&parse_tree(db, text)?).map_err(|e| in_fragment("query", e))?;
    let described = db.query(&sql::describe(text)).map_err(unreachable)?;
    check_width(described.len(), t, columns)?;
    let rows = Qualified::temp("openivm_write_rows".into());
    db.execute(&render::create_temp_table_as(&rows, &sql::no_rows(t, columns)))?;
    db.execute(&sql::insert_query(&rows, text)).map_err(unreachable)?;
    Ok(rows)
}

/// An insert's query naming what DuckDB does not find: said with where the query runs, and
/// what to do when the name is one of the caller's temporary tables, views or macros.
fn unreachable(e: Error) -> Error {
    match e {
        Error::Sql { message, kind: SqlErrorKind::Catalog, .. } => Error::Bind(format!(
            "{message} (in the query of the insert). openivm runs the query on its own connection, which sees what is \
             committed in the database but not this session's temporary tables, views or macros, nor the uncommitted \
             changes of an open transaction: insert from a regular table, a file or a table function instead (copy a \
             temporary table into a regular table first)"
        )),
        other => other,
    }
}

fn check_width(given: usize, t: &TableId, columns: &[ColumnDef]) -> Result<()> {
    if given != columns.len() {
        return Err(Error::InvalidArgument(format!(
            "the query gives {given} columns and the table '{}' has {}; give a value for every column, in the table's order",
            t.dotted(),
            columns.len()
        )));
    }
    Ok(())
}

/// The feed a write records its delta in (None: record nothing).
fn recording_feed(db: &dyn Sql, cat: &WriteCatalog, t: &TableId, op: Op) -> Result<Option<Feed>> {
    if !main_table_exists(db, "openivm_views")? {
        return Ok(None);
    }
    let main = cat.main_catalog()?;
    let Some(feed) = feeds::of_table(db, &main, t)? else {
        return Ok(None);
    };
    match (&feed.kind, op) {
        // The diff, the triggers and DuckLake's change feed see the write like any other.
        (SourceKind::Diff | SourceKind::DuckLake(_) | SourceKind::Trigger, _)
        | (SourceKind::AppendOnly(Position::RowId), Op::Insert) => return Ok(None),
        (SourceKind::AppendOnly(Position::RowId), _) => {
            return Err(Error::InvalidArgument(format!(
                "table '{}' is declared append-only with the rowid as its watermark; after a delete, a CHECKPOINT can \
                 renumber its rows and the watermark would no longer be exact. Declare it with an ever-increasing key \
                 (openivm_declare_append_only('{}', key := '<column>')) or as recorded (openivm_declare_recorded) to \
                 delete or update through openivm",
                t.dotted(),
                t.dotted()
            )))
        }
        _ => {}
    }
    if t.catalog != main {
        return Err(Error::InvalidArgument(format!(
            "table '{}' is in the database '{}', but its change state is kept in '{main}' and DuckDB writes one database \
             per transaction, so a write through openivm cannot record its delta there in the same transaction",
            t.dotted(),
            t.catalog
        )));
    }
    Ok(Some(feed))
}

/// The rows of a recording feed that a delete or update records: every row, or for a
/// key-declared append-only feed the rows not past its watermark (rows past it have not been
/// captured yet, and the next capture reads them as they are then: deleted, or with their new
/// values). Returns the condition over the table's columns (None: every row).
fn recorded_rows(feed: &Feed) -> Option<String> {
    match &feed.kind {
        SourceKind::AppendOnly(pos) => Some(capture_sql::not_after(pos, feed.watermark.as_deref())),
        _ => None,
    }
}

/// How many rows a write's predicate selects past the feed's watermark (0 without one): the
/// rows it changes without recording them.
fn unrecorded_rows(db: &dyn Sql, feed: &Feed, target: &Target) -> Result<i64> {
    match &feed.kind {
        SourceKind::AppendOnly(pos) => {
            db.scalar_int(&sql::count_matching(target, &capture_sql::after(pos, feed.watermark.as_deref())), &[])
        }
        _ => Ok(0),
    }
}

/// Runs a DML statement and returns how many rows it wrote.
fn run_dml(db: &dyn Sql, statement: &str) -> Result<i64> {
    db.scalar_int(statement, &[])
}

fn check_same(written: i64, read: i64, what: &str) -> Result<()> {
    if written != read {
        return Err(Error::Internal(format!(
            "the {what} wrote {written} rows where the rows read before it were {read}; nothing was written"
        )));
    }
    Ok(())
}

/// `openivm_insert(table, query)`.
pub fn insert(db: &dyn Sql, cache: &mut Cache, table_arg: &str, query: &str) -> Result<Written> {
    in_transaction(db, || {
        cache.upgrade_before_write(db)?;
        let cat = WriteCatalog::new(db, cache.functions());
        let (t, columns) = cat.target_table(table_arg)?;
        let feed = recording_feed(db, &cat, &t, Op::Insert)?;
        let rows = query_rows(db, &t, &columns, query)?;
        let n = run_dml(db, &sql::insert_from(&t, &columns, &rows))?;
        if let Some(mut feed) = feed {
            // Rows past an append-only watermark are found there; the others are recorded.
            let only = match &feed.kind {
                SourceKind::AppendOnly(pos) => Some(capture_sql::not_after(pos, feed.watermark.as_deref())),
                _ => None,
            };
            let recorded = recorded::record(db, &mut feed, &rows, 1, only.as_deref())?;
            feed.row_count += recorded;
            feed.save(db)?;
        }
        db.execute(&render::drop_table(&rows))?;
        Ok(Written { table: t.dotted(), rows: n })
    })
}

/// `openivm_delete(table, predicate)`.
pub fn delete(db: &dyn Sql, cache: &mut Cache, table_arg: &str, predicate: Option<&str>) -> Result<Written> {
    in_transaction(db, || {
        cache.upgrade_before_write(db)?;
        let cat = WriteCatalog::new(db, cache.functions());
        let (t, _) = cat.target_table(table_arg)?;
        let target = bind_predicate(db, &cat, &t, predicate)?;
        let Some(mut feed) = recording_feed(db, &cat, &t, Op::Delete)? else {
            return Ok(Written { table: t.dotted(), rows: run_dml(db, &sql::delete(&target))? });
        };
        // The rows as they are go into the open batch, then the same predicate deletes them;
        // rows past an append-only watermark, which the next capture finds deleted, are counted.
        let only = recorded_rows(&feed);
        let unrecorded = unrecorded_rows(db, &feed, &target)?;
        let record = sql::record_deleted(&feed.open_batch(), &target, &feed.columns, only.as_deref());
        let recorded = recorded::record_with(db, &mut feed, &record)?;
        let n = run_dml(db, &sql::delete(&target))?;
        check_same(n, recorded + unrecorded, "delete")?;
        feed.row_count -= n - unrecorded;
        feed.save(db)?;
        Ok(Written { table: t.dotted(), rows: n })
    })
}

/// `openivm_update(table, assignments, predicate)`.
pub fn update(
    db: &dyn Sql,
    cache: &mut Cache,
    table_arg: &str,
    assignments: &str,
    predicate: Option<&str>,
) -> Result<Written> {
    in_transaction(db, || {
        cache.upgrade_before_write(db)?;
        let cat = WriteCatalog::new(db, cache.functions());
        let (t, columns) = cat.target_table(table_arg)?;
        let set = bind_assignments(db, &cat, &t, &columns, assignments)?;
        let target = bind_predicate(db, &cat, &t, predicate)?;
        let Some(mut feed) = recording_feed(db, &cat, &t, Op::Update)? else {
            return Ok(Written { table: t.dotted(), rows: run_dml(db, &sql::update(&target, &set))? });
        };
        if let SourceKind::AppendOnly(Position::Key(k)) = &feed.kind {
            if set.iter().any(|a| a.column.name == k.name) {
                return Err(Error::InvalidArgument(format!(
                    "'{}' is the ever-increasing key of the append-only table '{}'; it cannot be assigned",
                    k.name,
                    t.dotted()
                )));
            }
        }
        let touches_feed = set.iter().any(|a| feed.columns.iter().any(|c| c.name == a.column.name));
        let n = if touches_feed {
            // Old (-1) and new (+1) rows, recorded from one read of the table before the update.
            let only = recorded_rows(&feed);
            let record = sql::record_updated(&feed.open_batch(), &target, &set, &feed.columns, only.as_deref());
            let m = recorded::record_with(db, &mut feed, &record)?;
            let unseen = unrecorded_rows(db, &feed, &target)?;
            let n = run_dml(db, &sql::update(&target, &set))?;
            check_same(2 * n, m + 2 * unseen, "update")?;
            n
        } else {
            // No column the views read changes: the delta is empty.
            run_dml(db, &sql::update(&target, &set))?
        };
        feed.save(db)?;
        Ok(Written { table: t.dotted(), rows: n })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::Constant;

    fn t() -> TableId {
        TableId { catalog: "db".into(), schema: "main".into(), name: "t".into() }
    }

    fn eq(l: Expr, r: Expr) -> Expr {
        Expr::Compare { op: CompareOp::Eq, left: Box::new(l), right: Box::new(r) }
    }

    fn one() -> Expr {
        Expr::Constant(Constant::Integer(1))
    }

    fn probe(items: Vec<SelectItem>, where_clause: Option<Expr>) -> Select {
        Select { where_clause, ..Select::plain(items, probe_from(&t())) }
    }

    #[test]
    fn a_predicate_probe_must_come_back_as_rendered() {
        let star = || vec![SelectItem { expr: Expr::Star { relation: None }, alias: None }];
        assert!(is_predicate_probe(&probe(star(), Some(eq(Expr::column("k"), one()))), &t()));
        // a clause or a select item smuggled in, another table, no WHERE at all
        let mut grouped = probe(star(), Some(one()));
        grouped.group_by = vec![Expr::column("k")];
        assert!(!is_predicate_probe(&grouped, &t()));
        let mut more = star();
        more.push(SelectItem { expr: one(), alias: None });
        assert!(!is_predicate_probe(&probe(more, Some(one())), &t()));
        let other = TableId { name: "u".into(), ..t() };
        assert!(!is_predicate_probe(&probe(star(), Some(one())), &other));
        assert!(!is_predicate_probe(&probe(star(), None), &t()));
    }

    #[test]
    fn assignments_are_plain_columns_set_to_expressions() {
        let item = |expr: Expr, alias: Option<&str>| SelectItem { expr, alias: alias.map(str::to_string) };
        let good =
            probe(vec![item(eq(Expr::column("a"), one()), None), item(eq(Expr::column("B"), one()), None)], None);
        assert_eq!(assignment_items(&good, &t()), Some(vec![("a".to_string(), one()), ("B".to_string(), one())]));
        // an alias, a qualified column, an expression on the left, not an equality, a WHERE
        for bad in [
            probe(vec![item(eq(Expr::column("a"), one()), Some("x"))], None),
            probe(vec![item(eq(Expr::Column(vec!["t".into(), "a".into()]), one()), None)], None),
            probe(vec![item(eq(one(), Expr::column("a")), None)], None),
            probe(vec![item(Expr::column("a"), None)], None),
            probe(vec![item(eq(Expr::column("a"), one()), None)], Some(one())),
            probe(vec![], None),
        ] {
            assert_eq!(assignment_items(&bad, &t()), None, "{bad:?}");
        }
    }
}
