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
    Full,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Incremental => "incremental",
            Mode::Full => "full",
        }
    }
}

/// Above this share of the rows a recompute reads, the terms of an incremental refresh are
/// estimated to cost more than the recompute (they also capture, materialize and merge, while a
/// recompute writes the result in one pass). Measured on the 20M star (bench/results): a 10%
/// fact batch refreshed at 0.8-1.4x the recompute's time, a 1% batch at about 0.2x.
pub const FULL_ABOVE_SHARE: f64 = 0.08;

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

/// The choice after capture: incremental unless the run terms would read more than
/// `FULL_ABOVE_SHARE` of what a recompute reads. Returns the mode and why.
pub fn choose(requested: Requested, run_masks: &[u32], delta_rows: &[u64], table_rows: &[u64]) -> (Mode, String) {
    match requested {
        Requested::Incremental => (Mode::Incremental, "mode := 'incremental' was requested".into()),
        Requested::Full => (Mode::Full, "mode := 'full' was requested".into()),
        Requested::Auto => {
            let (inc, full) = rows_read(run_masks, delta_rows, table_rows);
            if run_masks.is_empty() {
                (Mode::Incremental, "auto: no term to run".into())
            } else if full >= FULL_MIN_ROWS && inc as f64 > FULL_ABOVE_SHARE * full as f64 {
                (
                    Mode::Full,
                    format!(
                        "auto: the {} delta terms would read about {inc} rows, a recompute {full} \
                         (more than {:.0}%)",
                        run_masks.len(),
                        FULL_ABOVE_SHARE * 100.0
                    ),
                )
            } else {
                (
                    Mode::Incremental,
                    format!("auto: the {} delta terms read about {inc} rows, a recompute {full}", run_masks.len()),
                )
            }
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
    fn auto_recomputes_when_terms_read_most_of_the_tables() {
        // The FK-pruned star term reads the delta and the dimensions: incremental.
        let (m, _) = choose(Requested::Auto, &[0b01], &[1000, 0], &[1_000_000, 10_000]);
        assert_eq!(m, Mode::Incremental);
        // The dimension's term reads the whole fact table: full.
        let (m, why) = choose(Requested::Auto, &[0b01, 0b10], &[1000, 50], &[1_000_000, 10_000]);
        assert_eq!(m, Mode::Full);
        assert!(why.contains("1011050 rows"), "{why}");
        // A delta of 10% of the table: full; of 1%: incremental.
        assert_eq!(choose(Requested::Auto, &[0b01], &[100_000, 0], &[1_000_000, 10_000]).0, Mode::Full);
        assert_eq!(choose(Requested::Auto, &[0b01], &[10_000, 0], &[1_000_000, 10_000]).0, Mode::Incremental);
        assert_eq!(choose(Requested::Incremental, &[0b01, 0b10], &[10, 5], &[1000, 100]).0, Mode::Incremental);
        assert_eq!(choose(Requested::Full, &[], &[0, 0], &[1000, 100]).0, Mode::Full);
        assert_eq!(choose(Requested::Auto, &[], &[0, 0], &[1_000_000, 100]).0, Mode::Incremental);
    }

    #[test]
    fn skips_a_whole_table_capture_that_lost_to_a_recompute() {
        assert!(skip_capture(Requested::Auto, Some(30.0), Some(10.0)).is_some());
        assert!(skip_capture(Requested::Auto, Some(5.0), Some(10.0)).is_none());
        assert!(skip_capture(Requested::Auto, None, Some(10.0)).is_none());
        assert!(skip_capture(Requested::Incremental, Some(30.0), Some(10.0)).is_none());
    }
}
