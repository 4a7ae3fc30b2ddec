//! A feed's state as `openivm.feeds` stores it: the columns a capture changes, read with the
//! feed (`capture::feed::StoredFeed`) and written back by `render::capture::feeds_update`.

use crate::db::typed_row;

typed_row! {
    /// In the order of those columns in `openivm.feeds` and in the queries that read them.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct FeedState {
        pub source: String,
        /// An append-only table's key column (JSON), a DuckLake table's id; None: rowid or none.
        pub key_column: Option<String>,
        pub watermark: Option<String>,
        pub row_count: i64,
        pub size_seen: i64,
        pub seq: i64,
        pub log_rows: i64,
        pub pending_rows: i64,
        pub batch_rows: i64,
        pub batch_deletes: i64,
        /// What the key checks found about batch `seq` (`BatchFacts`, as text).
        pub batch_facts: Option<String>,
    }
}
