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

/// The choice for a refresh that must recompute the groups its delta touches: what `choose`
/// picks, with incremental turned into a recompute of the touched groups (whose cost is the
/// run terms' plus a recompute restricted to those groups), and why.
pub fn choose_groups(chosen: (Mode, String), groups_why: &str) -> (Mode, String) {
    match chosen {
        (Mode::Incremental, why) => (Mode::GroupRecompute, format!("{why}; {groups_why}")),
        other => other,
    }
}

/// Above this many rows read by the run terms, per row a recompute reads, incremental is taken to
/// cost more (many terms over large current states, as without foreign-key pruning).
pub const FULL_ABOVE_ROWS_READ: f64 = 1.0;

/// Above this share of changed rows in the tables that changed, a recompute is taken to be
/// cheaper: capturing, materializing and merging that many rows costs about as much as joining
/// the tables once. Measured on the 20M star (bench/results): a 10% batch refreshed at 0.8-1.4x
/// the recompute's time, a 1% batch at about 0.2x; TPC-H SF1 needs a 0.1% batch to stay
/// incremental although its one term scans orders and customer in full.
pub const FULL_ABOVE_DELTA_SHARE: f64 = 0.05;

/// Below this many rows read by a recompute, both ways are cheap and auto stays incremental
/// (predictable term counts on small tables).
pub const FULL_MIN_ROWS: u64 = 100_000;

/// The rows the run terms read (each leaf: its delta if the term reads it as a delta, its table
/// otherwise) and the rows a recompute reads (every leaf's table once).
pub fn rows_read(run_masks: &[u32], delta_rows: &[u64], table_rows: &[u64]) -> (u64, u64) {
    let full: u64 = table_rows.iter().sum();
    let incremental = run_masks
        .iter()
        .map(|m| {
            (0..table_rows.len()).map(|i| if m & (1 << i) != 0 { delta_rows[i] } else { table_rows[i] }).sum::<u64>()
        })
        .sum();
    (incremental, full)
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

/// The choice after capture: incremental unless the run terms would read more rows than a
/// recompute, or the changed tables changed by more than `FULL_ABOVE_DELTA_SHARE`. Small tables
/// stay incremental. Returns the mode and why.
pub fn choose(requested: Requested, run_masks: &[u32], delta_rows: &[u64], table_rows: &[u64]) -> (Mode, String) {
    match requested {
        Requested::Incremental => (Mode::Incremental, "mode := 'incremental' was requested".into()),
        Requested::Full => (Mode::Full, "mode := 'full' was requested".into()),
        Requested::Auto => {
            let (inc, full) = rows_read(run_masks, delta_rows, table_rows);
            let share = delta_share(delta_rows, table_rows);
            let terms = run_masks.len();
            if run_masks.is_empty() {
                (Mode::Incremental, "auto: no term to run".into())
            } else if full >= FULL_MIN_ROWS && inc as f64 > FULL_ABOVE_ROWS_READ * full as f64 {
                (Mode::Full, format!("auto: the {terms} delta terms would read about {inc} rows, a recompute {full}"))
            } else if full >= FULL_MIN_ROWS && share > FULL_ABOVE_DELTA_SHARE {
                (
                    Mode::Full,
                    format!(
                        "auto: {:.1}% of the changed tables' rows changed (more than {:.0}%); a recompute is cheaper",
                        share * 100.0,
                        FULL_ABOVE_DELTA_SHARE * 100.0
                    ),
                )
            } else {
                (
                    Mode::Incremental,
                    format!(
                        "auto: the {terms} delta terms read about {inc} rows, a recompute {full}; {:.2}% of the \
                         changed tables' rows changed",
                        share * 100.0
                    ),
                )
            }
        }
    }
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
            let full: u64 = table_rows.iter().sum();
            let share = delta_share(appended, table_rows);
            (full >= FULL_MIN_ROWS && share > FULL_ABOVE_DELTA_SHARE).then(|| {
                format!(
                    "auto: about {:.1}% of the changed tables' rows were appended (more than {:.0}%); a recompute \
                     is cheaper, and the new rows were not captured",
                    share * 100.0,
                    FULL_ABOVE_DELTA_SHARE * 100.0
                )
            })
        }
    }
}

/// The choice before capture for a view whose capture reads whole tables (a diff source): when
/// the last incremental refresh cost more than the last recompute, recomputing without
/// capturing is cheaper, and the view stops tracking changes until an incremental refresh is
/// requested. Times in ms; None where nothing was measured yet.
pub fn skip_capture(requested: Requested, last_incremental: Option<f64>, last_full: Option<f64>) -> Option<String> {
    match (requested, last_incremental, last_full) {
        (Requested::Auto, Some(inc), Some(full)) if inc > full => Some(format!(
            "auto: the last incremental refresh took {inc:.1} ms (its capture reads whole tables), a recompute \
             {full:.1} ms; the view is recomputed and no longer tracks changes (refresh with mode := \
             'incremental' to track them again)"
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_rows_read_per_term() {
        // A 1-fact + 1-dimension join, fact 1000 rows (10 changed), dimension 100 rows (5 changed):
        // term {f}: 10 + 100; term {d}: 1000 + 5; term {f,d}: 10 + 5.
        assert_eq!(rows_read(&[0b01, 0b10, 0b11], &[10, 5], &[1000, 100]), (110 + 1005 + 15, 1100));
        assert_eq!(rows_read(&[0b01], &[10, 0], &[1000, 100]), (110, 1100));
    }

    #[test]
    fn small_tables_stay_incremental() {
        assert_eq!(choose(Requested::Auto, &[0b01, 0b10], &[10, 5], &[1000, 100]).0, Mode::Incremental);
    }

    #[test]
    fn auto_recomputes_when_terms_read_more_than_a_recompute_or_much_changed() {
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
        assert!(why.contains("would read about"), "{why}");
        // A delta of 10% of the table: full; of 1%: incremental.
        let (m, why) = choose(Requested::Auto, &[0b01], &[100_000, 0], &[1_000_000, 10_000]);
        assert_eq!(m, Mode::Full);
        assert!(why.contains("10.0% of the changed tables"), "{why}");
        assert_eq!(choose(Requested::Auto, &[0b01], &[10_000, 0], &[1_000_000, 10_000]).0, Mode::Incremental);
        assert_eq!(choose(Requested::Incremental, &[0b01, 0b10], &[10, 5], &[1000, 100]).0, Mode::Incremental);
        assert_eq!(choose(Requested::Full, &[], &[0, 0], &[1000, 100]).0, Mode::Full);
        assert_eq!(choose(Requested::Auto, &[], &[0, 0], &[1_000_000, 100]).0, Mode::Incremental);
    }

    #[test]
    fn touched_groups_are_recomputed_unless_auto_recomputes_all() {
        let (m, why) = choose_groups(choose(Requested::Auto, &[0b01], &[10, 0], &[1_000_000, 10_000]), "LIST()");
        assert_eq!(m, Mode::GroupRecompute);
        assert!(why.ends_with("; LIST()"), "{why}");
        // a delta of 10%: the whole view is recomputed
        let chosen = choose(Requested::Auto, &[0b01], &[100_000, 0], &[1_000_000, 10_000]);
        assert_eq!(choose_groups(chosen, "LIST()").0, Mode::Full);
        let chosen = choose(Requested::Incremental, &[0b01], &[100_000, 0], &[1_000_000, 10_000]);
        assert_eq!(choose_groups(chosen, "LIST()").0, Mode::GroupRecompute);
        assert_eq!(choose_groups(choose(Requested::Full, &[0b01], &[1, 0], &[10, 10]), "x").0, Mode::Full);
    }

    #[test]
    fn delta_share_counts_only_changed_tables() {
        assert_eq!(delta_share(&[100, 0], &[1000, 1_000_000]), 0.1);
        assert_eq!(delta_share(&[0, 0], &[1000, 10]), 0.0);
    }

    #[test]
    fn recomputes_before_capture_when_much_was_appended() {
        // 10% appended to a 1M-row fact: recompute without capturing; 1%: capture as usual.
        let why = full_before_capture(Requested::Auto, &[100_000, 0], &[1_000_000, 10_000]).unwrap();
        assert!(why.contains("10.0%"), "{why}");
        assert!(full_before_capture(Requested::Auto, &[10_000, 0], &[1_000_000, 10_000]).is_none());
        // small tables stay incremental; forced modes are obeyed
        assert!(full_before_capture(Requested::Auto, &[500, 0], &[1_000, 100]).is_none());
        assert!(full_before_capture(Requested::Full, &[0, 0], &[1_000, 100]).is_some());
        assert!(full_before_capture(Requested::Incremental, &[900_000, 0], &[1_000_000, 10]).is_none());
    }

    #[test]
    fn skips_a_whole_table_capture_that_lost_to_a_recompute() {
        assert!(skip_capture(Requested::Auto, Some(30.0), Some(10.0)).is_some());
        assert!(skip_capture(Requested::Auto, Some(5.0), Some(10.0)).is_none());
        assert!(skip_capture(Requested::Auto, None, Some(10.0)).is_none());
        assert!(skip_capture(Requested::Incremental, Some(30.0), Some(10.0)).is_none());
    }
}
