//! The one planner: from what is known of a view's deltas to its delta program: the rule and
//! its terms, the keys the merge matches on, and the mode with why. A refresh,
//! `openivm_explain` and `openivm_compile_with_facts` all call `plan`, so the same facts give
//! the same program. (What a refresh decides before it captures, such as recomputing without
//! capturing, is decided by `plan::mode` where the refresh stands then: there are no deltas yet
//! to plan from.)
//!
//! The policy: a set operation takes inclusion-exclusion per branch (the N-term rule orders the
//! leaves of one join). A single join takes the N-term rule, its leaves in `leaf_order`
//! (referenced leaves first, so an insert-only parent's term is pruned), when every leaf's
//! state before the batch can be read and it runs fewer terms than the pruned
//! inclusion-exclusion plan: each term of either rule is one join driven by one delta, so the
//! terms run are the cost. On a tie inclusion-exclusion is kept: its terms read current states
//! only.

use crate::plan::fk_pruning::{leaf_order, ProvenRelation};
use crate::plan::merge_keys::MergeKeys;
use crate::plan::mode::{self, Mode, Requested};
use crate::plan::nterm;
use crate::plan::terms::{count_terms, empty_delta_bits, plan_spans, DeltaShape, Mask, Term, TermCounts, TermStatus};

/// The delta rules a program can use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    InclusionExclusion,
    NTerm,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::InclusionExclusion => "inclusion_exclusion",
            Rule::NTerm => "n_term",
        }
    }
}

/// What the planner is told.
#[derive(Clone, Copy, Debug)]
pub struct Facts<'a> {
    /// The leaves of each join (`ViewQuery::spans`): one span, or one per branch of a set
    /// operation.
    pub spans: &'a [(usize, usize)],
    /// Per leaf: what its delta holds.
    pub shapes: &'a [DeltaShape],
    /// The foreign keys proven between leaves.
    pub relations: &'a [ProvenRelation],
    /// The leaves whose delta terms foreign keys prove empty in inclusion-exclusion
    /// (`fk_pruning::fk_pruning(..).skip`, or `fk_skip_bits` when no delete is checked).
    pub fk_skip: Mask,
    /// Whether every leaf's state before the batch can be read (the N-term rule reads them).
    pub old_states: OldStates<'a>,
    /// The group keys that determine the others (`merge_keys::merge_keys`), if any.
    pub merge_keys: Option<&'a MergeKeys>,
    /// What chooses the mode; None for a program that is incremental by definition
    /// (compile-only).
    pub mode: Option<ModeFacts<'a>>,
    /// The leaves' aliases, to name them in reasons.
    pub aliases: &'a [String],
}

/// Whether a program may read the leaves' states before the batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OldStates<'a> {
    Readable,
    /// Not readable (a native table keeps no earlier states).
    Unreadable,
    /// Readable in principle, but reading them failed, with why (an expired DuckLake
    /// snapshot): the program reads current states only, and says why.
    Refused(&'a str),
}

/// What the mode of a refresh is chosen from.
#[derive(Clone, Copy, Debug)]
pub struct ModeFacts<'a> {
    pub requested: Requested,
    /// A table's feed was rebuilt or joined after the view's cursor: the view starts
    /// following it at this refresh.
    pub stale: bool,
    /// The feeds whose capture restarted at this refresh, with why.
    pub rebuilt: &'a [String],
    /// A recompute decided before capture, and why (`mode::full_before_capture`).
    pub full_first: Option<&'a str>,
    /// Per leaf: its delta's rows and its table's rows (auto's costs).
    pub delta_rows: &'a [u64],
    pub table_rows: &'a [u64],
    /// Why the view recomputes the groups its delta touches instead of applying the terms
    /// (`strategy::recomputed_per_group`), or None.
    pub per_group: Option<&'a str>,
    /// Whether its groups can be recomputed one by one (no grouping sets).
    pub groups_recomputable: bool,
}

/// The program's rule and terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    pub rule: Rule,
    /// The inclusion-exclusion terms, always computed (reports show them).
    pub inclusion_exclusion: Vec<(Term, TermStatus)>,
    /// The N-term rule's leaf order and one term per leaf in that order; empty for a set
    /// operation.
    pub order: Vec<usize>,
    pub nterm: Vec<(usize, TermStatus)>,
    /// Why the program has its rule, or None where there was no choice (`Program::reason`).
    pub rule_reason: Option<String>,
    /// The group keys the merge matches on, when they determine the others and no leaf they
    /// determine deleted anything; None: every key.
    pub merge_keys: Option<Vec<usize>>,
    pub mode: Mode,
    /// Why this mode (and, for an incremental one, why this rule).
    pub why: String,
}

/// Plans the delta program of one refresh (or compile-only call) from `f`.
pub fn plan(f: &Facts) -> Program {
    let inclusion_exclusion = plan_spans(f.spans, empty_delta_bits(f.shapes), f.fk_skip);
    let (order, terms) = match f.spans {
        [(0, n)] => {
            let order = leaf_order(*n, f.relations);
            let terms = nterm::terms(&order, f.shapes, f.relations);
            (order, terms)
        }
        _ => (vec![], vec![]),
    };
    let cheaper = !terms.is_empty() && nterm::cheaper(count_terms(&terms), count_terms(&inclusion_exclusion));
    let readable = f.old_states == OldStates::Readable;
    let rule = if readable && cheaper { Rule::NTerm } else { Rule::InclusionExclusion };
    let merge_keys = f.merge_keys.filter(|m| m.usable(|leaf| !f.shapes[leaf].insert_only())).map(|m| m.matched.clone());
    let mut p = Program {
        rule,
        inclusion_exclusion,
        order,
        nterm: terms,
        rule_reason: None,
        merge_keys,
        mode: Mode::Incremental,
        why: String::new(),
    };
    // Without old states inclusion-exclusion is the only rule: nothing to explain.
    p.rule_reason = match f.old_states {
        OldStates::Readable => Some(p.reason(f.aliases)),
        OldStates::Unreadable => None,
        OldStates::Refused(why) => Some(why.to_string()),
    };
    let (mode, why) = match &f.mode {
        Some(m) => choose_mode(m, &p.run_masks()),
        None => (Mode::Incremental, String::new()),
    };
    p.why = match (&p.rule_reason, mode) {
        (Some(note), Mode::Incremental) if why.is_empty() => note.clone(),
        (Some(note), Mode::Incremental) => format!("{why}; {note}"),
        _ => why,
    };
    p.mode = mode;
    p
}

/// The mode of a refresh and why: a recompute where the view's feeds cannot give its delta
/// (a stale cursor, a restarted capture, a recompute decided before capture), else auto's or
/// the requested choice (`mode::choose`), a recompute of the touched groups where the view
/// needs one.
fn choose_mode(m: &ModeFacts, run_masks: &[Mask]) -> (Mode, String) {
    if m.stale {
        return (
            Mode::Full,
            "the view starts following a table's changes at this refresh (the table's change state was rebuilt by \
             a full refresh of another view, or restarted with more columns for a view created later, or the view \
             was created before the table's last changes were captured); recomputed"
                .into(),
        );
    }
    if !m.rebuilt.is_empty() {
        return (Mode::Full, format!("recomputed, and change capture restarted: {}", m.rebuilt.join("; ")));
    }
    if let Some(why) = m.full_first {
        return (Mode::Full, why.to_string());
    }
    let chosen = mode::choose(m.requested, run_masks, m.delta_rows, m.table_rows);
    match m.per_group {
        Some(what) if !run_masks.is_empty() => mode::choose_groups(chosen, what, m.groups_recomputable),
        _ => chosen,
    }
}

impl Program {
    /// The term counts of the chosen rule.
    pub fn counts(&self) -> TermCounts {
        match self.rule {
            Rule::InclusionExclusion => count_terms(&self.inclusion_exclusion),
            Rule::NTerm => count_terms(&self.nterm),
        }
    }

    /// The delta leaves of each term that runs: a mask per inclusion-exclusion term, a single
    /// leaf per N-term term.
    pub fn run_masks(&self) -> Vec<Mask> {
        match self.rule {
            Rule::InclusionExclusion => {
                self.inclusion_exclusion.iter().filter(|(_, s)| *s == TermStatus::Run).map(|(t, _)| t.mask).collect()
            }
            Rule::NTerm => self.nterm.iter().filter(|(_, s)| *s == TermStatus::Run).map(|(i, _)| 1 << i).collect(),
        }
    }

    /// Why the program, planned with old states readable, has its rule, naming leaves by
    /// `aliases`.
    fn reason(&self, aliases: &[String]) -> String {
        let ie = count_terms(&self.inclusion_exclusion);
        if self.nterm.is_empty() {
            return format!(
                "a set operation: inclusion-exclusion per branch (the N-term rule orders one join); {} of {} terms \
                 run, {} pruned by foreign keys, {} skipped for empty deltas",
                ie.run, ie.total, ie.fk_pruned, ie.empty_skipped
            );
        }
        let nt = count_terms(&self.nterm);
        match self.rule {
            Rule::NTerm => format!(
                "N-term rule: it runs {} of {} terms, inclusion-exclusion {} of {}; leaves in the order {}{}",
                nt.run,
                nt.total,
                ie.run,
                ie.total,
                self.order.iter().map(|&i| aliases.get(i).map_or("?", |a| a.as_str())).collect::<Vec<_>>().join(", "),
                if nt.fk_pruned > 0 { " (referenced leaves first, so their insert-only terms are empty)" } else { "" }
            ),
            Rule::InclusionExclusion => format!(
                "inclusion-exclusion rule: it runs {} of {} terms, the N-term rule would run {} of {}",
                ie.run, ie.total, nt.run, nt.total
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::fk_pruning::{FactSource, ForeignKey};
    use crate::plan::terms::DeltaShape as S;

    fn rel(child: usize, parent: usize) -> ProvenRelation {
        let t = |n: &str| crate::ir::TableId { catalog: "c".into(), schema: "s".into(), name: n.into() };
        let fk = ForeignKey {
            child: t("f"),
            child_columns: vec!["k".into()],
            parent: t("d"),
            parent_columns: vec!["k".into()],
            source: FactSource::Rely,
        };
        ProvenRelation { child_leaf: child, parent_leaf: parent, fk }
    }

    fn facts<'a>(
        spans: &'a [(usize, usize)],
        shapes: &'a [S],
        relations: &'a [ProvenRelation],
        old: bool,
    ) -> Facts<'a> {
        let fk_skip = crate::plan::fk_pruning::fk_skip_bits(relations, shapes);
        let old_states = if old { OldStates::Readable } else { OldStates::Unreadable };
        Facts { spans, shapes, relations, fk_skip, old_states, merge_keys: None, mode: None, aliases: &[] }
    }

    fn auto<'a>(delta_rows: &'a [u64], table_rows: &'a [u64]) -> ModeFacts<'a> {
        ModeFacts {
            requested: Requested::Auto,
            stale: false,
            rebuilt: &[],
            full_first: None,
            delta_rows,
            table_rows,
            per_group: None,
            groups_recomputable: true,
        }
    }

    #[test]
    fn without_old_states_a_join_takes_inclusion_exclusion() {
        let shapes = [S::INSERTS | S::DELETES; 3];
        let p = plan(&facts(&[(0, 3)], &shapes, &[], false));
        assert_eq!(p.rule, Rule::InclusionExclusion);
        assert_eq!(p.counts().run, 7);
        assert_eq!(p.rule_reason, None);
    }

    #[test]
    fn with_old_states_the_rule_that_runs_fewer_terms_wins_and_a_tie_keeps_inclusion_exclusion() {
        let general = [S::INSERTS | S::DELETES; 3];
        let p = plan(&facts(&[(0, 3)], &general, &[], true));
        assert_eq!((p.rule, p.counts().run), (Rule::NTerm, 3));
        assert_eq!(p.run_masks(), vec![1, 2, 4]);
        // A star whose two dimensions are insert-only: both rules run the fact's term alone.
        let star = [S::INSERTS | S::DELETES, S::INSERTS, S::INSERTS];
        let rels = [rel(0, 1), rel(0, 2)];
        let p = plan(&facts(&[(0, 3)], &star, &rels, true));
        assert_eq!((p.rule, p.counts().run, p.run_masks()), (Rule::InclusionExclusion, 1, vec![1]));
        // One insert-only parent of three: inclusion-exclusion runs 3 terms, the N-term rule 2.
        let one = [S::INSERTS | S::DELETES, S::INSERTS, S::INSERTS | S::DELETES];
        let p = plan(&facts(&[(0, 3)], &one, &[rel(0, 1)], true));
        assert_eq!((p.rule, p.counts().run, p.order.clone()), (Rule::NTerm, 2, vec![1, 0, 2]));
        let aliases = ["f".to_string(), "d1".into(), "d2".into()];
        let p = plan(&Facts { aliases: &aliases, ..facts(&[(0, 3)], &one, &[rel(0, 1)], true) });
        assert!(p.rule_reason.unwrap().contains("order d1, f, d2"));
    }

    #[test]
    fn a_set_operation_takes_inclusion_exclusion_per_branch() {
        let shapes = [S::INSERTS | S::DELETES; 3];
        let p = plan(&facts(&[(0, 2), (2, 1)], &shapes, &[], true));
        assert_eq!(p.rule, Rule::InclusionExclusion);
        assert!(p.nterm.is_empty());
        assert!(p.rule_reason.unwrap().starts_with("a set operation"));
    }

    #[test]
    fn old_states_refused_give_inclusion_exclusion_and_say_why() {
        let shapes = [S::INSERTS | S::DELETES; 3];
        let p = plan(&Facts {
            old_states: OldStates::Refused("the snapshot expired"),
            ..facts(&[(0, 3)], &shapes, &[], true)
        });
        assert_eq!((p.rule, p.counts().run), (Rule::InclusionExclusion, 7));
        assert_eq!(p.why, "the snapshot expired");
    }

    #[test]
    fn the_mode_is_full_where_the_feeds_cannot_give_the_delta_whatever_was_requested() {
        let shapes = [S::INSERTS; 2];
        let (d, t) = ([1, 0], [1_000_000, 10]);
        let base = ModeFacts { requested: Requested::Incremental, ..auto(&d, &t) };
        let rebuilt = ["t: a column was added".to_string()];
        for (m, starts) in [
            (ModeFacts { stale: true, ..base }, "the view starts following"),
            (ModeFacts { rebuilt: &rebuilt, ..base }, "recomputed, and change capture restarted: t: a column"),
            (ModeFacts { full_first: Some("auto: most rows were appended"), ..base }, "auto: most rows"),
        ] {
            let p = plan(&Facts { mode: Some(m), ..facts(&[(0, 2)], &shapes, &[], false) });
            assert_eq!(p.mode, Mode::Full);
            assert!(p.why.starts_with(starts), "{}", p.why);
        }
        let p = plan(&Facts { mode: Some(base), ..facts(&[(0, 2)], &shapes, &[], false) });
        assert_eq!((p.mode, p.why.as_str()), (Mode::Incremental, "mode := 'incremental' was requested"));
    }

    #[test]
    fn auto_weighs_the_run_terms_against_a_recompute_and_names_the_rule_when_incremental() {
        let shapes = [S::INSERTS | S::DELETES, S::empty(), S::empty()];
        let aliases = ["a".to_string(), "b".into(), "c".into()];
        let table = [1_000_000; 3];
        let f = |delta: &'static [u64; 3]| Facts {
            mode: Some(auto(delta, &table)),
            aliases: &aliases,
            ..facts(&[(0, 3)], &shapes, &[], true)
        };
        let p = plan(&f(&[10, 0, 0]));
        assert_eq!(p.mode, Mode::Incremental);
        assert!(
            p.why.starts_with("auto: the 1 delta terms") && p.why.contains("; inclusion-exclusion rule"),
            "{}",
            p.why
        );
        let p = plan(&f(&[900_000, 0, 0]));
        assert_eq!(p.mode, Mode::Full);
        assert!(!p.why.contains("rule"), "{}", p.why);
    }

    #[test]
    fn touched_groups_are_recomputed_where_the_view_needs_it_and_can() {
        let shapes = [S::INSERTS | S::DELETES];
        let (d, t) = ([5], [100]);
        for (recomputable, mode) in [(true, Mode::GroupRecompute), (false, Mode::Full)] {
            let m =
                ModeFacts { per_group: Some("MIN after a delete"), groups_recomputable: recomputable, ..auto(&d, &t) };
            let p = plan(&Facts { mode: Some(m), ..facts(&[(0, 1)], &shapes, &[], false) });
            assert_eq!(p.mode, mode);
            assert!(p.why.contains("MIN after a delete"));
        }
    }

    #[test]
    fn merge_keys_are_narrowed_only_when_no_leaf_they_determine_deleted() {
        let keys = MergeKeys { matched: vec![0], determined: 0b10 };
        let insert_only = [S::INSERTS | S::DELETES, S::INSERTS];
        let p = plan(&Facts { merge_keys: Some(&keys), ..facts(&[(0, 2)], &insert_only, &[], false) });
        assert_eq!(p.merge_keys, Some(vec![0]));
        let deleting = [S::INSERTS, S::INSERTS | S::DELETES];
        let p = plan(&Facts { merge_keys: Some(&keys), ..facts(&[(0, 2)], &deleting, &[], false) });
        assert_eq!(p.merge_keys, None);
    }
}
