//! How a refresh brings a view up to date: incrementally (apply the delta terms) or in full
//! (recompute the stored result). `auto` estimates both from row counts and, for views whose
//! capture must read whole tables, from the times measured on earlier refreshes.

/// What the user asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requested {
    Auto,
    Incremental,
    Full,
}

impl Requested {
    pub fn parse(s: &str) -> Option<Requested> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Some(Requested::Auto),
            "incremental" => Some(Requested::Incremental),
            "full" => Some(Requested::Full),
            _ => None,
        }
    }
}

/// What a refresh did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Incremental,
    /// The run terms give the touched groups, which are recomputed from the current tables
    /// (an aggregate without a delta rule, or MIN/MAX after a delete).
    GroupRecompute,
    Full,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Incremental => "incremental",
            Mode::GroupRecompute => "group_recompute",
            Mode::Full => "full",
        }
    }
}

/// The choice for a refresh that must recompute the groups its delta touches (`what`: the
/// aggregates that need it, and why): what `choose` picks, with incremental turned into a
/// recompute of the touched groups (whose cost is the run terms' plus a recompute restricted to
/// those groups), and why. A view whose groups cannot be recomputed one by one (`per_group`
/// false: grouping sets, where a row counts in a group of every set) is recomputed whole instead.
pub fn choose_groups(chosen: (Mode, String), what: &str, per_group: bool) -> (Mode, String) {
    match chosen {
        (Mode::Incremental, why) if per_group => {
            (Mode::GroupRecompute, format!("{why}; the touched groups are recomputed: {what}"))
        }
        (Mode::Incremental, _) => (
            Mode::Full,
            format!("recomputed whole: {what}, and the groups of a view with GROUPING SETS, ROLLUP or CUBE are not recomputed one by one"),
        ),
        other => other,
    }
}

/// What a delta row costs an incremental refresh, in rows a recompute reads: it is captured,
/// materialized, joined and merged, where a recompute only scans and joins it. Measured on the
/// 20M star (bench/results): a 10% append refreshed in 0.55-0.8 of a recompute's time, which
/// puts one delta row at 5-8 table rows; TPC-H SF1's Q5 and Q10 after a 10% RF1 at more.
pub const DELTA_ROW_COST: f64 = 8.0;

/// Below this many rows read by a recompute, both ways are cheap and auto stays incremental
/// (predictable term counts on small tables).
pub const FULL_MIN_ROWS: u64 = 100_000;

/// Whether a view attaching to a shared diff feed of a table of `table_rows` rows skips the diff
/// of the whole table that would bring the feed up to date now (`capture::skip_diff`): it joins
/// at -1 and recomputes at its first refresh, or, when it reads columns the feed does not track,
/// restarts the feed with them and the feed's other views recompute at their next refresh. The
/// view is filled from the table as it is either way, and a diff reads the whole table as a
/// recompute does, so auto defers it: the next refresh of the feed's views diffs once for all.
/// Under a refresh mode other than auto, and below `FULL_MIN_ROWS` (a cheap diff, predictable
/// first refreshes), the view captures now.
/// `mode`: the database's refresh mode, asked for only above `FULL_MIN_ROWS`.
pub fn start_by_recomputing(
    table_rows: i64,
    mode: impl FnOnce() -> crate::error::Result<Requested>,
) -> crate::error::Result<bool> {
    Ok(table_rows >= FULL_MIN_ROWS as i64 && mode()? == Requested::Auto)
}

/// The estimated cost of the run terms and of a recompute, in rows read: each term reads each
/// leaf's delta (at `DELTA_ROW_COST` per row) if it reads the leaf as a delta, its table
/// otherwise; a recompute reads every leaf's table once.
pub fn costs(run_masks: &[u32], delta_rows: &[u64], table_rows: &[u64]) -> (f64, f64) {
    let full: u64 = table_rows.iter().sum();
    let incremental = run_masks
        .iter()
        .map(|m| {
            (0..table_rows.len())
                .map(|i| if m & (1 << i) != 0 { DELTA_ROW_COST * delta_rows[i] as f64 } else { table_rows[i] as f64 })
                .sum::<f64>()
        })
        .sum();
    (incremental, full as f64)
}

/// The share of changed rows in the leaves that changed (0 when none did).
pub fn delta_share(delta_rows: &[u64], table_rows: &[u64]) -> f64 {
    let (d, t) = delta_rows
        .iter()
        .zip(table_rows)
        .filter(|(d, _)| **d > 0)
        .fold((0u64, 0u64), |(d, t), (dr, tr)| (d + dr, t + tr));
    if t == 0 {
        0.0
    } else {
        d as f64 / t as f64
    }
}

/// The choice after capture: incremental unless the run terms are estimated to cost more than a
/// recompute (`costs`). Small tables stay incremental. Returns the mode and why.
pub fn choose(requested: Requested, run_masks: &[u32], delta_rows: &[u64], table_rows: &[u64]) -> (Mode, String) {
    match requested {
        Requested::Incremental => (Mode::Incremental, "mode := 'incremental' was requested".into()),
        Requested::Full => (Mode::Full, "mode := 'full' was requested".into()),
        Requested::Auto => {
            let (inc, full) = costs(run_masks, delta_rows, table_rows);
            let share = delta_share(delta_rows, table_rows);
            let terms = run_masks.len();
            if run_masks.is_empty() {
                (Mode::Incremental, "auto: no term to run".into())
            } else if full >= FULL_MIN_ROWS as f64 && inc > full {
                (
                    Mode::Full,
                    format!(
                        "auto: the {terms} delta terms would cost about {inc:.0} row reads ({:.2}% of the changed \
                         tables' rows changed, a delta row counted {DELTA_ROW_COST}), a recompute {full:.0}",
                        share * 100.0
                    ),
                )
            } else {
                (
                    Mode::Incremental,
                    format!(
                        "auto: the {terms} delta terms cost about {inc:.0} row reads, a recompute {full:.0}; {:.2}% \
                         of the changed tables' rows changed",
                        share * 100.0
                    ),
                )
            }
        }
    }
}

/// A lower bound of the cost of any term over these deltas (`costs`), or None when no leaf has
/// one: a term reads at least one leaf with a delta as its delta, and every other leaf as its
/// delta or as its table, so the cheapest term takes each leaf's cheaper reading, with at least
/// one delta among them. A recompute cheaper than this is cheaper than the terms, whichever run.
pub fn cheapest_term(delta_rows: &[u64], table_rows: &[u64]) -> Option<f64> {
    let changed: Vec<usize> = (0..delta_rows.len()).filter(|&i| delta_rows[i] > 0).collect();
    let as_delta = |i: usize| DELTA_ROW_COST * delta_rows[i] as f64;
    let each: f64 = (0..table_rows.len())
        .map(|i| if changed.contains(&i) { as_delta(i).min(table_rows[i] as f64) } else { table_rows[i] as f64 })
        .sum();
    // Where every changed leaf is cheaper read in full, one of them must still be a delta.
    let forced = changed.iter().map(|&i| (as_delta(i) - table_rows[i] as f64).max(0.0)).fold(f64::INFINITY, f64::min);
    (!changed.is_empty()).then_some(each + forced)
}

/// The choice before capture for a view over append-only tables, from their appended-row counts
/// (what `duckdb_tables()` reports beyond what the last capture saw, per leaf): when auto would
/// recompute anyway because much changed, or a recompute was requested, a table only this view
/// reads need not be captured at all (its feed restarts from the table as the recompute reads
/// it). Returns why, or None to capture as usual.
pub fn full_before_capture(requested: Requested, appended: &[u64], table_rows: &[u64]) -> Option<String> {
    match requested {
        Requested::Full => Some("mode := 'full' was requested".into()),
        Requested::Incremental => None,
        Requested::Auto => {
            let inc = cheapest_term(appended, table_rows)?;
            let full = table_rows.iter().sum::<u64>() as f64;
            let share = delta_share(appended, table_rows);
            (full >= FULL_MIN_ROWS as f64 && inc > full).then(|| {
                format!(
                    "auto: about {:.1}% of the changed tables' rows were appended; their terms would cost about \
                     {inc:.0} row reads, a recompute {full:.0}: recomputed, and the new rows were not captured",
                    share * 100.0
                )
            })
        }
    }
}

/// What reading DuckLake's deletion half costs, per row of the table, in rows a recompute reads:
/// `ducklake_table_deletions` scans the table's data files whatever the range. Measured on this
/// machine (DuckLake 1.5.5, DuckDB-file catalog): over a 4M-row table, the deletions of one
/// snapshot took 55-60 ms (inlined or in delete files) where a grouped recompute took 42 ms; a
/// refresh after a scattered delete from a 5M-row fact joined to a dimension took 2.9x its
/// recompute.
pub const LAKE_DELETION_ROW_COST: f64 = 1.5;

/// The choice before capture for a view over DuckLake tables whose pending snapshots delete rows
/// (`deleting[i]`: leaf i's table is such a table only this view reads): the deletion half reads
/// those tables whole, so when that alone costs more than a recompute, auto recomputes and the
/// feeds restart without reading the changes. Returns why, or None to capture as usual.
pub fn lake_deletions_before_capture(requested: Requested, deleting: &[bool], table_rows: &[u64]) -> Option<String> {
    if requested != Requested::Auto {
        return None;
    }
    let full = table_rows.iter().sum::<u64>() as f64;
    let scan: f64 =
        deleting.iter().zip(table_rows).filter(|(d, _)| **d).map(|(_, &r)| LAKE_DELETION_ROW_COST * r as f64).sum();
    (scan > 0.0 && full >= FULL_MIN_ROWS as f64 && scan > full).then(|| {
        format!(
            "auto: rows of DuckLake tables were deleted or updated, and reading DuckLake's deletions scans those \
             tables' data files (about {scan:.0} row reads, a row counted {LAKE_DELETION_ROW_COST}), a recompute \
             {full:.0}: recomputed, and the changes were not read"
        )
    })
}

/// The choice before capture for a view whose capture reads whole tables (a diff source): when
/// the last incremental refresh cost more than the last recompute, recomputing without
/// capturing is cheaper, and the view stops tracking changes until an incremental refresh is
/// requested. Before any incremental refresh, the time the view's change state took to start
/// (its snapshot, about what a diff costs) stands in for one. Times in ms; None where nothing
/// was measured yet. Views whose diff-captured tables hold fewer than `FULL_MIN_ROWS` rows
/// (`diff_rows`) stay as they are: such a capture is cheap, and the times are too small to tell
/// apart (the terms' cost is priced per batch by `choose`).
pub fn skip_capture(
    requested: Requested,
    diff_rows: u64,
    last_incremental: Option<f64>,
    incremental_ran: bool,
    last_full: Option<f64>,
) -> Option<String> {
    let measured = |inc: f64| {
        if incremental_ran {
            format!("the last incremental refresh took {inc:.1} ms (its capture reads whole tables)")
        } else {
            format!(
                "no incremental refresh ran yet, and starting the view's change state (a snapshot of whole tables, \
                 what each capture reads) took {inc:.1} ms"
            )
        }
    };
    match (requested, last_incremental, last_full) {
        (Requested::Auto, Some(inc), Some(full)) if inc > full && diff_rows >= FULL_MIN_ROWS => Some(format!(
            "auto: {}, a recompute {full:.1} ms; the view is recomputed and no longer tracks changes (refresh with \
             mode := 'incremental' to track them again)",
            measured(inc)
        )),
        _ => None,
    }
}

/// Why auto lets a view that stopped tracking its tables (`skip_capture`, `skip_shared_capture`)
/// track them again at this refresh, or None to recompute once more. Its tables are not read to
/// find whether anything changed: no exact check costs less than the diff tracking needs (row
/// counts miss updates, DuckDB keeps no version per table, docs/statement-log.md), so each
/// refresh recomputes. It resumes when the reason is gone: no table is read by the diff source
/// any more (`diff`), its diff-captured tables hold fewer than `FULL_MIN_ROWS` rows, or (`alone`: a refresh
/// of its own, not a round, whose shared diff is decided for all its views) the last incremental
/// refresh's capture, which every incremental refresh pays whatever its batch, took less than
/// the last recompute, so a small batch refreshes cheaper than a recompute. The refresh then
/// recomputes and starts the view's change state at that state (exact); a batch dear again
/// stops the tracking again after one incremental refresh.
pub fn resume_tracking(
    diff: bool,
    diff_rows: u64,
    alone: bool,
    last_capture: Option<f64>,
    last_full: Option<f64>,
) -> Option<String> {
    let why = if !diff {
        "no table of the view is read by the diff source any more".to_string()
    } else if diff_rows < FULL_MIN_ROWS {
        format!("its tables on the diff source hold fewer than {FULL_MIN_ROWS} rows")
    } else {
        match (alone, last_capture, last_full) {
            (true, Some(capture), Some(full)) if capture < full => format!(
                "the capture of its last incremental refresh took {capture:.1} ms, less than its last recompute \
                 ({full:.1} ms), so a small batch is cheaper incrementally"
            ),
            _ => return None,
        }
    };
    Some(format!("auto: the view tracks its tables again ({why}); recomputed once, incremental from the next refresh"))
}

/// Why a view that does not track its tables is recomputed (`resume_tracking` said no).
pub const UNTRACKED: &str = "the view does not track its tables (auto found recomputing cheaper than capturing \
    changes); recomputed at every refresh, also when nothing changed (no exact check that a table is unchanged \
    costs less than the diff that tracking needs); refresh with mode := 'incremental' to track them again";

/// A view of a round that reads a shared diff feed: its last recompute and its last incremental
/// refresh less that refresh's capture (ms; None: not measured yet).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reader {
    pub full: Option<f64>,
    pub apply: Option<f64>,
}

/// The choice for a diff feed that several views of one round (`openivm_refresh_all`) read: the
/// round captures it once for all of them (one diff of the whole table, `capture` ms as last
/// measured), so the capture pays when the recomputes it saves, each reader's last recompute
/// less its last incremental apply, add up to more than it costs. Returns why the readers
/// recompute instead (and stop tracking changes), or None to capture. What was not measured
/// yet (`capture`: only a diff measured by a round, never a stand-in) is captured, and tables of
/// fewer than `FULL_MIN_ROWS` rows stay as they are.
pub fn skip_shared_capture(capture: Option<f64>, readers: &[Reader], rows: u64) -> Option<String> {
    let capture = capture?;
    if rows < FULL_MIN_ROWS {
        return None;
    }
    let saved: f64 =
        readers.iter().map(|r| r.full.map(|f| (f - r.apply.unwrap_or(0.0)).max(0.0))).sum::<Option<f64>>()?;
    (capture > saved).then(|| {
        format!(
            "auto: the round's one capture of a table read by {} views (a diff of the whole table) took {capture:.1} \
             ms, more than the {saved:.1} ms its views save against recomputing; the views are recomputed and no \
             longer track changes (refresh with mode := 'incremental' to track them again)",
            readers.len()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_each_delta_row_at_several_table_rows() {
        // A 1-fact + 1-dimension join, fact 1000 rows (10 changed), dimension 100 rows (5 changed):
        // term {f}: 8 * 10 + 100; term {d}: 1000 + 8 * 5; term {f,d}: 8 * 10 + 8 * 5.
        assert_eq!(costs(&[0b01, 0b10, 0b11], &[10, 5], &[1000, 100]), (180.0 + 1040.0 + 120.0, 1100.0));
        assert_eq!(costs(&[0b01], &[10, 0], &[1000, 100]), (180.0, 1100.0));
    }

    #[test]
    fn a_view_over_a_large_shared_diff_feed_starts_by_recomputing_under_auto_only() {
        let never = || -> crate::error::Result<Requested> { panic!("the mode is not read below FULL_MIN_ROWS") };
        assert!(!start_by_recomputing(99_999, never).unwrap());
        assert!(start_by_recomputing(100_000, || Ok(Requested::Auto)).unwrap());
        assert!(!start_by_recomputing(5_000_000, || Ok(Requested::Incremental)).unwrap());
        assert!(!start_by_recomputing(5_000_000, || Ok(Requested::Full)).unwrap());
    }

    #[test]
    fn small_tables_stay_incremental() {
        assert_eq!(choose(Requested::Auto, &[0b01, 0b10], &[10, 5], &[1000, 100]).0, Mode::Incremental);
    }

    #[test]
    fn auto_recomputes_when_the_terms_cost_more_than_a_recompute() {
        // The FK-pruned star term reads the delta and the dimensions: incremental.
        let (m, _) = choose(Requested::Auto, &[0b01], &[1000, 0], &[1_000_000, 10_000]);
        assert_eq!(m, Mode::Incremental);
        // One term that scans two other tables in full (TPC-H Q3 after RF1): still incremental.
        assert_eq!(
            choose(Requested::Auto, &[0b001], &[6_000, 0, 0], &[6_000_000, 1_500_000, 150_000]).0,
            Mode::Incremental
        );
        // Every term reads the whole fact table (no pruning, all dimensions changed): full.
        let masks = [0b0010, 0b0100, 0b1000, 0b0110, 0b1010, 0b1100, 0b1110];
        let (m, why) = choose(Requested::Auto, &masks, &[0, 10, 10, 10], &[1_000_000, 10_000, 10_000, 10_000]);
        assert_eq!(m, Mode::Full);
        assert!(why.contains("would cost about"), "{why}");
        // The pruned star term over an append of 10% of the fact: 8 * 100,000 + 10,000 row reads
        // against 1,010,000: incremental; of 20%: 1,610,000, full.
        assert_eq!(choose(Requested::Auto, &[0b01], &[100_000, 0], &[1_000_000, 10_000]).0, Mode::Incremental);
        let (m, why) = choose(Requested::Auto, &[0b01], &[200_000, 0], &[1_000_000, 10_000]);
        assert_eq!(m, Mode::Full);
        assert!(why.contains("20.00% of the changed tables"), "{why}");
        assert_eq!(choose(Requested::Incremental, &[0b01, 0b10], &[10, 5], &[1000, 100]).0, Mode::Incremental);
        assert_eq!(choose(Requested::Full, &[], &[0, 0], &[1000, 100]).0, Mode::Full);
        assert_eq!(choose(Requested::Auto, &[], &[0, 0], &[1_000_000, 100]).0, Mode::Incremental);
    }

    #[test]
    fn touched_groups_are_recomputed_unless_auto_recomputes_all() {
        let (m, why) = choose_groups(choose(Requested::Auto, &[0b01], &[10, 0], &[1_000_000, 10_000]), "LIST()", true);
        assert_eq!(m, Mode::GroupRecompute);
        assert!(why.ends_with("; the touched groups are recomputed: LIST()"), "{why}");
        // a delta of 20%: the whole view is recomputed
        let chosen = choose(Requested::Auto, &[0b01], &[200_000, 0], &[1_000_000, 10_000]);
        assert_eq!(choose_groups(chosen, "LIST()", true).0, Mode::Full);
        let chosen = choose(Requested::Incremental, &[0b01], &[100_000, 0], &[1_000_000, 10_000]);
        assert_eq!(choose_groups(chosen, "LIST()", true).0, Mode::GroupRecompute);
        assert_eq!(choose_groups(choose(Requested::Full, &[0b01], &[1, 0], &[10, 10]), "x", true).0, Mode::Full);
        // grouping sets: recomputed whole
        let chosen = choose(Requested::Incremental, &[0b01], &[10, 0], &[1_000_000, 10_000]);
        let (m, why) = choose_groups(chosen, "MIN()", false);
        assert_eq!(m, Mode::Full);
        assert!(why.starts_with("recomputed whole: MIN(), and the groups"), "{why}");
    }

    #[test]
    fn delta_share_counts_only_changed_tables() {
        assert_eq!(delta_share(&[100, 0], &[1000, 1_000_000]), 0.1);
        assert_eq!(delta_share(&[0, 0], &[1000, 10]), 0.0);
    }

    #[test]
    fn recomputes_before_capture_when_much_was_appended() {
        // 20% appended to a 1M-row fact: recompute without capturing; 10% or 1%: capture as usual.
        let why = full_before_capture(Requested::Auto, &[200_000, 0], &[1_000_000, 10_000]).unwrap();
        assert!(why.contains("20.0%"), "{why}");
        assert!(full_before_capture(Requested::Auto, &[100_000, 0], &[1_000_000, 10_000]).is_none());
        assert!(full_before_capture(Requested::Auto, &[10_000, 0], &[1_000_000, 10_000]).is_none());
        // an append to every leaf: the cheapest term reads the fact as its table (1M, cheaper
        // than 8 * 200,000) and the dimension as its delta (8 * 5,000), since one must be a delta
        assert_eq!(cheapest_term(&[200_000, 5_000], &[1_000_000, 10_000]), Some(1_040_000.0));
        assert_eq!(cheapest_term(&[1_000, 5_000], &[1_000_000, 10_000]), Some(8_000.0 + 10_000.0));
        assert_eq!(cheapest_term(&[0, 0], &[1_000_000, 10_000]), None);
        assert!(full_before_capture(Requested::Auto, &[200_000, 5_000], &[1_000_000, 10_000]).is_some());
        // small tables stay incremental; forced modes are obeyed
        assert!(full_before_capture(Requested::Auto, &[500, 0], &[1_000, 100]).is_none());
        assert!(full_before_capture(Requested::Full, &[0, 0], &[1_000, 100]).is_some());
        assert!(full_before_capture(Requested::Incremental, &[900_000, 0], &[1_000_000, 10]).is_none());
    }

    #[test]
    fn deletions_from_a_lake_table_recompute_when_their_scan_costs_more() {
        // a fact of 1M rows with deletions: its scan (1.5M row reads) beats a recompute of the
        // fact and a 10,000-row dimension (1.01M)
        let why = lake_deletions_before_capture(Requested::Auto, &[true, false], &[1_000_000, 10_000]).unwrap();
        assert!(why.contains("about 1500000 row reads") && why.contains("a recompute 1010000"), "{why}");
        // deletions only from the dimension: 15,000 row reads against 1.01M, capture
        assert!(lake_deletions_before_capture(Requested::Auto, &[false, true], &[1_000_000, 10_000]).is_none());
        // against a dimension as large as the fact: 1.5M < 2M, capture
        assert!(lake_deletions_before_capture(Requested::Auto, &[true, false], &[1_000_000, 1_000_000]).is_none());
        // nothing deleted, small tables, forced modes: as before
        assert!(lake_deletions_before_capture(Requested::Auto, &[false, false], &[1_000_000, 10]).is_none());
        assert!(lake_deletions_before_capture(Requested::Auto, &[true], &[50_000]).is_none());
        assert!(lake_deletions_before_capture(Requested::Incremental, &[true], &[1_000_000]).is_none());
        assert!(lake_deletions_before_capture(Requested::Full, &[true], &[1_000_000]).is_none());
    }

    #[test]
    fn a_round_captures_a_shared_diff_when_its_views_save_more_than_it_costs() {
        let r = |full, apply| Reader { full: Some(full), apply: Some(apply) };
        let big = 5_000_000;
        // 50 views: each recompute 60 ms, each incremental apply 5 ms: 2750 ms saved > 1300 ms.
        assert!(skip_shared_capture(Some(1300.0), &vec![r(60.0, 5.0); 50], big).is_none());
        // 6 views of 13 ms recomputes (78 ms saved at most) against a 1300 ms capture: recompute.
        let why = skip_shared_capture(Some(1300.0), &vec![r(13.0, 1.0); 6], big).unwrap();
        assert!(why.contains("read by 6 views") && why.contains("72.0 ms"), "{why}");
        // an apply dearer than the recompute saves nothing (not a negative saving)
        assert!(skip_shared_capture(Some(100.0), &[r(60.0, 90.0), r(150.0, 0.0)], big).is_none());
        assert!(skip_shared_capture(Some(200.0), &[r(60.0, 90.0), r(150.0, 0.0)], big).is_some());
        // not measured yet, or small tables: capture
        assert!(skip_shared_capture(None, &[r(1.0, 0.0)], big).is_none());
        let unmeasured = Reader { full: None, apply: None };
        assert!(skip_shared_capture(Some(1300.0), &[r(1.0, 0.0), unmeasured], big).is_none());
        assert!(skip_shared_capture(Some(1300.0), &[r(1.0, 0.0)], 1_000).is_none());
        // no incremental apply measured yet: the whole recompute counts as saved
        let fresh = Reader { full: Some(60.0), apply: None };
        assert!(skip_shared_capture(Some(100.0), &[fresh, fresh], big).is_none());
    }

    #[test]
    fn an_untracked_view_resumes_when_its_reason_is_gone() {
        let big = 1_000_000;
        assert!(resume_tracking(false, big, false, None, None).is_some());
        assert!(resume_tracking(true, 1_000, false, None, None).is_some());
        // a diff dearer than the recompute: a batch of any size loses
        assert!(resume_tracking(true, big, true, Some(30.0), Some(10.0)).is_none());
        // a cheap diff (the last batch's apply made it lose): resumes, but only alone
        let why = resume_tracking(true, big, true, Some(5.0), Some(10.0)).unwrap();
        assert!(why.contains("took 5.0 ms, less than its last recompute (10.0 ms)"), "{why}");
        assert!(resume_tracking(true, big, false, Some(5.0), Some(10.0)).is_none());
        assert!(resume_tracking(true, big, true, None, Some(10.0)).is_none());
    }

    #[test]
    fn skips_a_whole_table_capture_that_lost_to_a_recompute() {
        let big = 1_000_000;
        assert!(skip_capture(Requested::Auto, big, Some(30.0), true, Some(10.0)).is_some());
        assert!(skip_capture(Requested::Auto, big, Some(5.0), true, Some(10.0)).is_none());
        assert!(skip_capture(Requested::Auto, big, None, true, Some(10.0)).is_none());
        assert!(skip_capture(Requested::Incremental, big, Some(30.0), true, Some(10.0)).is_none());
        // small tables: times too small to tell apart
        assert!(skip_capture(Requested::Auto, 1_000, Some(30.0), true, Some(10.0)).is_none());
    }
}
