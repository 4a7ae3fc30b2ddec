//! What the key checks of a refresh found about the batch it captured, kept with the feed so
//! that the feed's other views, which read the same batch from the log, need not check it again.
//!
//! FK pruning with deletes rests on two checks of a delta (`fk_pruning::key_checks`,
//! `fk_pruning::coverage_checks`): no key of a parent's delta is on two rows, and every key its
//! child's delta references is in the parent's delta. Both depend on nothing but the rows of the
//! deltas. When a view's delta of a table is exactly one batch of its feed, as logged (not
//! netted), a check's outcome is a fact about that batch: the view that captured the batch
//! records it in the feed's row (`openivm.feeds.batch_facts`, in the same transaction as the
//! batch, so a rollback takes both back), and a view one batch behind reads it instead of
//! scanning the log (a statement of about 2 ms at TPC-H SF1, a fifth of such a refresh).
//!
//! The facts are about batch `seq` only: a feed whose newest batch is another (a later capture,
//! a rebuild) has none. Batches are never changed once logged, so a fact stays true while the
//! batch is the feed's newest.

use serde::{Deserialize, Serialize};

/// Facts about batch `seq` of a feed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchFacts {
    pub seq: i64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unique: Vec<Unique>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub covered: Vec<Covered>,
}

/// Whether no value of `columns` is on two rows of the batch and every row is one copy
/// (multiplicity +1 or -1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unique {
    pub columns: Vec<String>,
    pub holds: bool,
}

/// Whether every non-NULL value of `refs` in the batch is a value of `keys` in batch
/// `parent_seq` of feed `parent`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Covered {
    pub refs: Vec<String>,
    pub parent: i64,
    pub parent_seq: i64,
    pub keys: Vec<String>,
    pub holds: bool,
}

impl BatchFacts {
    pub fn new(seq: i64) -> BatchFacts {
        BatchFacts { seq, ..BatchFacts::default() }
    }

    pub fn is_empty(&self) -> bool {
        self.unique.is_empty() && self.covered.is_empty()
    }

    /// The stored form ('' for no facts, as the column's NULL reads).
    pub fn to_text(&self) -> String {
        if self.is_empty() {
            String::new()
        } else {
            serde_json::to_string(self).unwrap_or_default()
        }
    }

    /// The facts stored as `text` (none for '' or a text this version cannot read: a fact
    /// missed only costs the check it would have saved).
    pub fn from_text(text: &str) -> Option<BatchFacts> {
        (!text.is_empty()).then(|| serde_json::from_str(text).ok()).flatten()
    }

    /// Whether keys `columns` are unique in the batch, if known.
    pub fn unique(&self, columns: &[String]) -> Option<bool> {
        self.unique.iter().find(|u| u.columns == columns).map(|u| u.holds)
    }

    /// Whether the batch's `refs` are all among `keys` of batch `parent_seq` of feed `parent`,
    /// if known.
    pub fn covered(&self, refs: &[String], parent: i64, parent_seq: i64, keys: &[String]) -> Option<bool> {
        self.covered
            .iter()
            .find(|c| c.refs == refs && c.parent == parent && c.parent_seq == parent_seq && c.keys == keys)
            .map(|c| c.holds)
    }

    /// Adds the facts of `other` (about the same batch) not known yet.
    pub fn absorb(&mut self, other: BatchFacts) {
        for u in other.unique {
            self.note_unique(&u.columns, u.holds);
        }
        for c in other.covered {
            self.note_covered(&c.refs, c.parent, c.parent_seq, &c.keys, c.holds);
        }
    }

    pub fn note_unique(&mut self, columns: &[String], holds: bool) {
        if self.unique(columns).is_none() {
            self.unique.push(Unique { columns: columns.to_vec(), holds });
        }
    }

    pub fn note_covered(&mut self, refs: &[String], parent: i64, parent_seq: i64, keys: &[String], holds: bool) {
        if self.covered(refs, parent, parent_seq, keys).is_none() {
            self.covered.push(Covered { refs: refs.to_vec(), parent, parent_seq, keys: keys.to_vec(), holds });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols(c: &[&str]) -> Vec<String> {
        c.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn facts_round_trip_through_their_stored_text() {
        let mut f = BatchFacts::new(7);
        assert_eq!(f.to_text(), "");
        f.note_unique(&cols(&["o_orderkey"]), true);
        f.note_covered(&cols(&["l_orderkey"]), 2, 7, &cols(&["o_orderkey"]), false);
        let back = BatchFacts::from_text(&f.to_text()).unwrap();
        assert_eq!(back, f);
        assert_eq!(back.unique(&cols(&["o_orderkey"])), Some(true));
        assert_eq!(back.unique(&cols(&["o_custkey"])), None);
        assert_eq!(back.covered(&cols(&["l_orderkey"]), 2, 7, &cols(&["o_orderkey"])), Some(false));
        // Another parent batch is another fact.
        assert_eq!(back.covered(&cols(&["l_orderkey"]), 2, 6, &cols(&["o_orderkey"])), None);
    }

    #[test]
    fn the_first_outcome_noted_stays() {
        let mut f = BatchFacts::new(1);
        f.note_unique(&cols(&["k"]), false);
        f.note_unique(&cols(&["k"]), true);
        assert_eq!(f.unique(&cols(&["k"])), Some(false));
        assert_eq!(f.unique.len(), 1);
    }

    #[test]
    fn unreadable_or_empty_text_is_no_facts() {
        assert_eq!(BatchFacts::from_text(""), None);
        assert_eq!(BatchFacts::from_text("not json"), None);
        assert_eq!(BatchFacts::from_text(r#"{"seq":3}"#), Some(BatchFacts::new(3)));
    }
}
