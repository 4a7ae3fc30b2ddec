//! Whether a maintained view is still openivm's: not replaced, dropped, renamed or copied
//! behind its back.

use super::cache::Cache;
use super::view::{renamed_to, standing_of, Standing, ViewRecord};
use crate::db::Sql;
use crate::error::{Error, Result};

/// Fails when the view was replaced or dropped behind openivm's back (the comment read from the
/// cache's round of refreshes when in one).
pub fn check_standing(db: &dyn Sql, cache: &mut Cache, v: &ViewRecord) -> Result<()> {
    let comment = cache.view_comment(db, &v.at)?;
    let uncommented = comment.as_deref() == Some("");
    let what = match standing_of(comment, v) {
        Standing::Ours => return Ok(()),
        // EXPORT/IMPORT DATABASE and COPY FROM DATABASE keep no comments.
        Standing::Replaced if uncommented => {
            return Err(Error::InvalidArgument(format!(
                "the view '{v}' lost openivm's marker (its comment): it was replaced by another definition (CREATE OR \
                 REPLACE VIEW) behind openivm's back, or the database was copied by EXPORT/IMPORT DATABASE or COPY \
                 FROM DATABASE, which keep no comments and no triggers; openivm no longer maintains it. CALL \
                 openivm_drop('{v}') removes openivm's state for it (and leaves any view of yours alone); after a copy, \
                 also DROP VIEW {v}, then create it again with openivm_create",
                v = v.at.name
            )))
        }
        Standing::Replaced => "was replaced by another definition (CREATE OR REPLACE VIEW)".to_string(),
        Standing::Gone => match renamed_to(db, v)? {
            // ALTER VIEW ... RENAME keeps the comment: the view is found under its new name.
            Some(now) => {
                return Err(Error::InvalidArgument(format!(
                    "the view '{}' was renamed to '{now}' (ALTER VIEW ... RENAME) behind openivm's back, so openivm \
                     no longer maintains it; rename it back (ALTER VIEW {now} RENAME TO {}) to maintain it again",
                    v.at.name, v.at.name
                )))
            }
            None => "was dropped (DROP VIEW)".to_string(),
        },
    };
    Err(Error::InvalidArgument(format!(
        "the view '{}' {what} behind openivm's back, so openivm no longer maintains it; \
         CALL openivm_drop('{}') removes openivm's state for it (and leaves any view of yours alone)",
        v.at.name, v.at.name
    )))
}
