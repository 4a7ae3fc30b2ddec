//! Stage 6: runs the data path against the database, each call in one transaction on the
//! extension's connection: create (parse, bind, fill, start capture), refresh (capture deltas,
//! plan, apply the view delta, advance capture), explain (the same plan, rolled back), drop.

use std::time::Instant;

use serde::Serialize;

use crate::ast::TableName;
use crate::bind::bind;
use crate::capture::{self, ChangeSource, DeltaStats, Tracked};
use crate::catalog::{table_name, SqlCatalog};
use crate::db::{int, text, Sql};
use crate::error::{Error, Result};
use crate::facts::{self, ForeignKey, ProvenRelation};
use crate::ir::{ColumnDef, TableId, ViewQuery};
use crate::parse::parse_select;
use crate::plan::{self, Term, TermCounts, TermStatus};
use crate::render::{self, OutputColumn, Qualified, Source};
use crate::{fk_sources, settings};

const METADATA: &str = include_str!("../sql/metadata.sql");
const VIEW_INSERT: &str = include_str!("../sql/views/insert.sql");
const VIEW_FIND: &str = include_str!("../sql/views/find.sql");
const VIEW_MARK_REFRESHED: &str = include_str!("../sql/views/mark_refreshed.sql");
const VIEW_DELETE: &str = include_str!("../sql/views/delete.sql");
const SNAPSHOT_INSERT: &str = include_str!("../sql/views/snapshot_insert.sql");
const SNAPSHOT_DELETE: &str = include_str!("../sql/views/snapshot_delete.sql");
const SNAPSHOTS_OF_VIEW: &str = include_str!("../sql/views/snapshots_of_view.sql");
const SCHEMA_EXISTS: &str = include_str!("../sql/catalog/schema_exists.sql");
const PARSE_TREE: &str = include_str!("../sql/catalog/parse_tree.sql");

/// Runs `f` in one transaction: all of its writes commit together, or none does.
pub fn in_transaction<T>(db: &dyn Sql, f: impl FnOnce() -> Result<T>) -> Result<T> {
    db.execute("BEGIN TRANSACTION")?;
    match f() {
        Ok(v) => match db.execute("COMMIT") {
            Ok(()) => Ok(v),
            Err(e) => {
                let _ = db.execute("ROLLBACK");
                Err(e)
            }
        },
        Err(e) => {
            let _ = db.execute("ROLLBACK");
            Err(e)
        }
    }
}

/// Creates the metadata tables if this database has none yet.
pub fn ensure_metadata(db: &dyn Sql) -> Result<()> {
    db.execute(METADATA)?;
    settings::ensure(db)
}

fn metadata_exists(db: &dyn Sql) -> Result<bool> {
    crate::catalog::main_table_exists(db, "openivm_views")
}

/// Where a view of this name lives: the default database, the given or default schema.
fn view_location(db: &dyn Sql, arg: &str) -> Result<Qualified> {
    let name = table_name(arg)?;
    let (default_catalog, default_schema) = SqlCatalog::new(db).defaults()?;
    if let Some(c) = &name.catalog {
        if !c.eq_ignore_ascii_case(&default_catalog) {
            return Err(Error::InvalidArgument(format!(
                "views are kept in the database openivm was loaded into ('{default_catalog}'); '{arg}' names another database"
            )));
        }
    }
    Ok(Qualified { catalog: default_catalog, schema: name.schema.unwrap_or(default_schema), name: name.name })
}

/// A maintained view as its metadata row records it.
struct ViewRecord {
    at: Qualified,
    query: String,
    data: Qualified,
    signature: String,
}

fn find_view(db: &dyn Sql, arg: &str) -> Result<ViewRecord> {
    let at = view_location(db, arg)?;
    if !metadata_exists(db)? {
        return Err(Error::UnknownView(arg.to_string()));
    }
    let rows = db.query_with(VIEW_FIND, &[&at.catalog, &at.schema, &at.name])?;
    let Some(r) = rows.first() else {
        return Err(Error::UnknownView(arg.to_string()));
    };
    let at = Qualified { catalog: text(&r[1]), schema: text(&r[2]), name: text(&r[0]) };
    Ok(ViewRecord { data: at.sibling(text(&r[4])), query: text(&r[3]), signature: text(&r[5]), at })
}

/// Parses and binds a view query against the current catalog; DuckDB's own binder then checks
/// it and names and types its output columns.
fn compile(db: &dyn Sql, query: &str) -> Result<(ViewQuery, Vec<OutputColumn>)> {
    let json = db.scalar(PARSE_TREE, &[query])?.ok_or_else(|| Error::Parse("DuckDB returned no parse tree".into()))?;
    let select = parse_select(&json)?;
    let mut q = bind(select, &SqlCatalog::new(db))?;
    let outputs = describe(db, query)?;
    q.set_output_types(&outputs.iter().map(|o| o.ty.clone()).collect::<Vec<_>>(), render::needs_text_identity);
    Ok((q, outputs))
}

#[derive(Serialize)]
struct SignatureLeaf<'a> {
    alias: &'a str,
    table: &'a TableId,
    columns: Vec<&'a ColumnDef>,
}

/// What a view depends on: each leaf's table and the names and types of the columns it reads.
fn signature(q: &ViewQuery) -> String {
    let leaves: Vec<SignatureLeaf> = q
        .leaves
        .iter()
        .zip(&q.used_columns)
        .map(|(l, used)| SignatureLeaf {
            alias: &l.alias,
            table: &l.table,
            columns: l.columns.iter().filter(|c| used.contains(&c.name)).collect(),
        })
        .collect();
    serde_json::to_string(&leaves).expect("serializable")
}

fn tracked(q: &ViewQuery, view: &Qualified) -> Vec<Tracked> {
    q.tables()
        .into_iter()
        .enumerate()
        .map(|(k, table)| Tracked {
            columns: q.table_columns(&table),
            state: view.sibling(format!("openivm_snapshot_{}_{}", view.name, k)),
            table,
        })
        .collect()
}

/// Temp table names for the deltas: `openivm_delta_<table>`, numbered when two tables of a
/// view share a name.
fn delta_names(tracked: &[Tracked]) -> Vec<Qualified> {
    let mut names: Vec<Qualified> = Vec::new();
    for t in tracked {
        let base = format!("openivm_delta_{}", t.table.name);
        let mut name = base.clone();
        let mut n = 1;
        while names.iter().any(|q| q.name.eq_ignore_ascii_case(&name)) {
            n += 1;
            name = format!("{base}_{n}");
        }
        names.push(Qualified::temp(name));
    }
    names
}

fn describe(db: &dyn Sql, query: &str) -> Result<Vec<OutputColumn>> {
    let rows = db.query(&render::describe(query))?;
    Ok(rows.iter().map(|r| OutputColumn { name: text(&r[0]), ty: text(&r[1]) }).collect())
}

pub struct Created {
    pub view: String,
    pub rows: i64,
}

pub fn create(db: &dyn Sql, source: &dyn ChangeSource, name: &str, query: &str) -> Result<Created> {
    in_transaction(db, || {
        ensure_metadata(db)?;
        let at = view_location(db, name)?;
        if at.name.to_ascii_lowercase().starts_with("openivm_") {
            return Err(Error::InvalidArgument(format!("names starting with openivm_ are reserved ('{}')", at.name)));
        }
        if db.scalar(SCHEMA_EXISTS, &[&at.catalog, &at.schema])?.as_deref() == Some("0") {
            return Err(Error::InvalidArgument(format!("schema '{}' does not exist", at.schema)));
        }
        let taken = SqlCatalog::new(db).find(&TableName {
            catalog: Some(at.catalog.clone()),
            schema: Some(at.schema.clone()),
            name: at.name.clone(),
        })?;
        if taken.is_some() {
            return Err(Error::NameTaken(name.to_string()));
        }
        if !db.query_with(VIEW_FIND, &[&at.catalog, &at.schema, &at.name])?.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "a maintained view named '{}' is still registered although its DuckDB view was dropped; \
                 run openivm_drop('{}') first",
                at.name, at.name
            )));
        }
        // DuckDB's own binder has the last word on the query and names its columns.
        let (q, outputs) = compile(db, query)?;
        for (i, o) in outputs.iter().enumerate() {
            if outputs[..i].iter().any(|p| p.name.eq_ignore_ascii_case(&o.name)) {
                return Err(Error::InvalidArgument(format!(
                    "the query has two output columns named '{}'; give them distinct aliases",
                    o.name
                )));
            }
        }
        let data = at.sibling(format!("openivm_data_{}", at.name));
        db.execute(&render::create_table_as(&data, &render::aggregate_weighted(&q, &render::full_select(&q))))?;
        let data_columns = SqlCatalog::new(db).columns(&data.table_id())?;
        let sum_kinds: Vec<render::SumKind> = (0..q.aggregate_count())
            .map(|j| {
                let sum = crate::ir::stored::agg_sum(j);
                data_columns
                    .iter()
                    .find(|c| c.name == sum)
                    .map_or(render::SumKind::Float, |c| render::SumKind::of(&c.ty))
            })
            .collect();
        let view_sql = render::visible_view(&q, &data, &outputs, &sum_kinds);
        db.execute(&render::create_view(&at, &view_sql))?;
        for t in tracked(&q, &at) {
            source.start(db, &t)?;
            let cols = serde_json::to_string(&render::column_list(&t.columns)).expect("serializable");
            db.execute_with(
                SNAPSHOT_INSERT,
                &[
                    &at.catalog,
                    &at.schema,
                    &at.name,
                    &t.table.catalog,
                    &t.table.schema,
                    &t.table.name,
                    &t.state.name,
                    &cols,
                ],
            )?;
        }
        let leaves = serde_json::to_string(&q.leaves.iter().map(|l| (&l.alias, &l.table)).collect::<Vec<_>>())
            .expect("serializable");
        db.execute_with(
            VIEW_INSERT,
            &[&at.name, &at.catalog, &at.schema, query, &leaves, q.kind(), &data.name, &signature(&q)],
        )?;
        let rows = int(&db.scalar(&render::count_rows(&at), &[])?);
        Ok(Created { view: at.name.clone(), rows })
    })
}

/// Everything a refresh or an explain decides before it writes.
struct Prepared {
    view: ViewRecord,
    q: ViewQuery,
    tracked: Vec<Tracked>,
    deltas: Vec<Qualified>,
    /// Per leaf: the index of its table in `tracked`.
    leaf_table: Vec<usize>,
    stats: Vec<DeltaStats>,
    relations: Vec<ProvenRelation>,
    fk_bits: plan::Mask,
    plan: Vec<(Term, TermStatus)>,
}

fn prepare(db: &dyn Sql, source: &dyn ChangeSource, name: &str, fk_pruning: Option<bool>) -> Result<Prepared> {
    let view = find_view(db, name)?;
    let (q, _) =
        compile(db, &view.query).map_err(|e| Error::Stale { view: name.to_string(), detail: e.to_string() })?;
    if signature(&q) != view.signature {
        return Err(Error::Stale {
            view: name.to_string(),
            detail: "a column it reads was added, dropped, renamed or retyped".into(),
        });
    }
    let tracked = tracked(&q, &view.at);
    let deltas = delta_names(&tracked);
    let stats = tracked.iter().zip(&deltas).map(|(t, d)| source.capture(db, t, d)).collect::<Result<Vec<_>>>()?;
    let tables = q.tables();
    let leaf_table: Vec<usize> =
        q.leaves.iter().map(|l| tables.iter().position(|t| t == &l.table).expect("leaf table tracked")).collect();
    let leaf_rows: Vec<u64> = leaf_table.iter().map(|&k| stats[k].rows).collect();
    let insert_only: Vec<bool> = leaf_table.iter().map(|&k| stats[k].insert_only()).collect();
    let pruning = match fk_pruning {
        Some(b) => b,
        None => settings::fk_pruning(db)?,
    };
    let (relations, fk_bits) = if pruning {
        let fks: Vec<ForeignKey> = fk_sources::foreign_keys(db, &tables)?;
        let relations = facts::proven_relations(&q, &fks);
        let bits = facts::fk_skip_bits(&relations, &insert_only);
        (relations, bits)
    } else {
        (vec![], 0)
    };
    let plan = plan::plan_terms(q.leaves.len(), plan::empty_delta_bits(&leaf_rows), fk_bits);
    Ok(Prepared { view, q, tracked, deltas, leaf_table, stats, relations, fk_bits, plan })
}

impl Prepared {
    fn sources(&self, term: Term) -> Vec<Source> {
        self.q
            .leaves
            .iter()
            .enumerate()
            .map(|(i, l)| {
                if term.mask & (1 << i) != 0 {
                    Source::Delta(self.deltas[self.leaf_table[i]].clone())
                } else {
                    Source::Current(l.table.clone())
                }
            })
            .collect()
    }

    fn term_sql(&self, term: Term) -> String {
        render::term_select(&self.q, term, &self.sources(term))
    }

    fn run_count(&self) -> usize {
        self.plan.iter().filter(|(_, s)| *s == TermStatus::Run).count()
    }

    fn delta_leaves(&self, term: Term) -> String {
        plan::leaves_of(term.mask).map(|i| self.q.leaves[i].alias.clone()).collect::<Vec<_>>().join(",")
    }

    fn reason(&self, term: Term, status: TermStatus) -> String {
        match status {
            TermStatus::Run if self.run_count() > COMBINE_ABOVE => {
                format!("delta rows to join; the {} run terms are evaluated in one combined join", self.run_count())
            }
            TermStatus::Run => "delta rows to join".into(),
            TermStatus::EmptySkipped => {
                let empty: Vec<String> = plan::leaves_of(term.mask)
                    .filter(|&i| self.stats[self.leaf_table[i]].rows == 0)
                    .map(|i| self.q.leaves[i].alias.clone())
                    .collect();
                format!("empty delta: {}", empty.join(","))
            }
            TermStatus::FkPruned => {
                let mut parts = Vec::new();
                for i in plan::leaves_of(term.mask) {
                    for r in facts::reasons_for(&self.relations, i) {
                        if !self.stats[self.leaf_table[i]].insert_only() {
                            continue;
                        }
                        let child = &self.q.leaves[r.child_leaf].alias;
                        let parent = &self.q.leaves[r.parent_leaf].alias;
                        parts.push(format!(
                            "{child}({}) -> {parent}({}) [{}]; delta of {parent} is insert-only",
                            r.fk.child_columns.join(","),
                            r.fk.parent_columns.join(","),
                            r.fk.source.as_str()
                        ));
                    }
                }
                parts.dedup();
                format!("foreign key {}", parts.join("; "))
            }
        }
    }
}

/// Above this many run terms, a refresh evaluates them all in one combined join (see
/// `render::combined_terms`) instead of one join per term: 2^k - 1 terms for k changed leaves
/// would otherwise cost 2^k - 1 joins to plan and run.
pub const COMBINE_ABOVE: usize = 15;

/// Applies the run terms to the stored result.
fn apply_terms(db: &dyn Sql, p: &Prepared) -> Result<()> {
    let run: Vec<Term> = p.plan.iter().filter(|(_, s)| *s == TermStatus::Run).map(|(t, _)| *t).collect();
    if run.is_empty() {
        return Ok(());
    }
    let rows = if run.len() > COMBINE_ABOVE {
        let with_delta = run.iter().fold(0, |m, t| m | t.mask);
        let leaves: Vec<render::CombinedLeaf> =
            p.q.leaves
                .iter()
                .enumerate()
                .map(|(i, l)| render::CombinedLeaf {
                    table: l.table.clone(),
                    delta: (with_delta & (1 << i) != 0).then(|| p.deltas[p.leaf_table[i]].clone()),
                    columns: render::column_list(&p.q.table_columns(&l.table)),
                })
                .collect();
        render::combined_terms(&p.q, &leaves, p.fk_bits)
    } else {
        render::union_all(&run.iter().map(|t| p.term_sql(*t)).collect::<Vec<_>>())
    };
    let delta = render::aggregate_weighted(&p.q, &rows);
    db.execute(&render::apply_view_delta(&p.q, &p.view.data, &delta))
}

pub struct RefreshReport {
    pub view: String,
    pub counts: TermCounts,
    pub delta_rows: i64,
    pub duration_ms: f64,
}

pub fn refresh(db: &dyn Sql, source: &dyn ChangeSource, name: &str, fk_pruning: Option<bool>) -> Result<RefreshReport> {
    let started = Instant::now();
    let (view, counts, delta_rows) = in_transaction(db, || {
        let p = prepare(db, source, name, fk_pruning)?;
        apply_terms(db, &p)?;
        for ((t, d), stats) in p.tracked.iter().zip(&p.deltas).zip(&p.stats) {
            source.advance(db, t, d, stats)?;
            capture::discard(db, d)?;
        }
        db.execute_with(VIEW_MARK_REFRESHED, &[&p.view.at.catalog, &p.view.at.schema, &p.view.at.name])?;
        let delta_rows = p.stats.iter().map(|s| s.rows as i64).sum();
        Ok((p.view.at.name.clone(), plan::count_terms(&p.plan), delta_rows))
    })?;
    Ok(RefreshReport { view, counts, delta_rows, duration_ms: started.elapsed().as_secs_f64() * 1000.0 })
}

pub struct ExplainRow {
    pub mask: u32,
    pub delta_leaves: String,
    pub sign: i32,
    pub status: TermStatus,
    pub reason: String,
    pub sql: String,
}

/// The plan of the next refresh, without applying it: the capture runs in a transaction that
/// is rolled back.
pub fn explain(
    db: &dyn Sql,
    source: &dyn ChangeSource,
    name: &str,
    fk_pruning: Option<bool>,
) -> Result<Vec<ExplainRow>> {
    db.execute("BEGIN TRANSACTION")?;
    let outcome = prepare(db, source, name, fk_pruning).map(|p| {
        p.plan
            .iter()
            .map(|&(t, s)| ExplainRow {
                mask: t.mask,
                delta_leaves: p.delta_leaves(t),
                sign: t.sign,
                status: s,
                reason: p.reason(t, s),
                sql: p.term_sql(t),
            })
            .collect()
    });
    let _ = db.execute("ROLLBACK");
    outcome
}

/// Removes a view, its stored result and its capture state.
pub fn drop_view(db: &dyn Sql, source: &dyn ChangeSource, name: &str) -> Result<String> {
    in_transaction(db, || {
        let view = find_view(db, name)?;
        let at = &view.at;
        db.execute(&render::drop_view(at))?;
        db.execute(&render::drop_table(&view.data))?;
        for r in db.query_with(SNAPSHOTS_OF_VIEW, &[&at.catalog, &at.schema, &at.name])? {
            let t = Tracked {
                table: TableId { catalog: text(&r[0]), schema: text(&r[1]), name: text(&r[2]) },
                columns: vec![],
                state: at.sibling(text(&r[3])),
            };
            source.stop(db, &t)?;
        }
        db.execute_with(SNAPSHOT_DELETE, &[&at.catalog, &at.schema, &at.name])?;
        db.execute_with(VIEW_DELETE, &[&at.catalog, &at.schema, &at.name])?;
        Ok(at.name.clone())
    })
}
