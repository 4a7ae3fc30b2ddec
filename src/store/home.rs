//! How openivm's metadata names databases.
//!
//! A DuckDB database takes its name from its file (`shop.db` is `shop`) or from `ATTACH ... AS`,
//! so the name changes when the file is renamed, copied or attached under another alias. The
//! metadata therefore never records the name of the database that holds it (its *home*): a
//! catalog column stores `''` for it, and the name is filled in when the metadata is read, as the
//! database the metadata was read from. Tables of other attached databases keep their name.
//!
//! Metadata written before this rule named the home database explicitly; a stored name equal to
//! the home's current name is read as the home as well, so such rows keep meaning what they
//! meant as long as the file keeps its name.

use crate::ir::TableId;

/// What a catalog column stores for the database that holds the metadata.
pub const HERE: &str = "";

/// Whether `catalog` names the home database `home` (DuckDB compares database names without
/// regard to case).
pub fn is_home(home: &str, catalog: &str) -> bool {
    catalog == HERE || catalog.eq_ignore_ascii_case(home)
}

/// The catalog as the metadata stores it: `''` for the home, the name otherwise.
pub fn stored(home: &str, live: &str) -> String {
    if is_home(home, live) {
        HERE.to_string()
    } else {
        live.to_string()
    }
}

/// The catalog a stored value means now.
pub fn live(home: &str, stored: &str) -> String {
    if is_home(home, stored) {
        home.to_string()
    } else {
        stored.to_string()
    }
}

/// The two values a row may store for `live` (the current and the earlier layout), for lookups
/// that must also find rows written before this rule. Both are equal for other databases.
pub fn spellings(home: &str, live: &str) -> [String; 2] {
    if is_home(home, live) {
        [HERE.to_string(), home.to_string()]
    } else {
        [live.to_string(), live.to_string()]
    }
}

/// A table as the metadata stores it.
pub fn stored_table(home: &str, t: &TableId) -> TableId {
    TableId { catalog: stored(home, &t.catalog), ..t.clone() }
}

/// A stored table as it is named now.
pub fn live_table(home: &str, t: TableId) -> TableId {
    TableId { catalog: live(home, &t.catalog), ..t }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(catalog: &str) -> TableId {
        TableId { catalog: catalog.into(), schema: "main".into(), name: "t".into() }
    }

    #[test]
    fn the_home_is_stored_without_its_name() {
        assert_eq!(stored("shop", "shop"), "");
        assert_eq!(stored("shop", "SHOP"), "");
        assert_eq!(stored("shop", "other"), "other");
        assert_eq!(stored_table("shop", &t("shop")), t(""));
        assert_eq!(stored_table("shop", &t("other")), t("other"));
    }

    #[test]
    fn a_renamed_home_reads_under_its_new_name() {
        // written while the file was shop.db, read after it was copied to copy.db
        let s = stored_table("shop", &t("shop"));
        assert_eq!(live_table("copy", s), t("copy"));
        // a table of another database keeps its name wherever the metadata goes
        assert_eq!(live_table("copy", stored_table("shop", &t("other"))), t("other"));
    }

    #[test]
    fn earlier_rows_naming_the_home_still_mean_the_home() {
        assert_eq!(live("shop", "shop"), "shop");
        assert_eq!(live("shop", "Shop"), "shop");
        assert_eq!(spellings("shop", "shop"), ["".to_string(), "shop".to_string()]);
        assert_eq!(spellings("shop", "other"), ["other".to_string(), "other".to_string()]);
    }
}
