//! Rows, Z-sets and masks written out for a failing case.

use crate::plan::terms::Mask;

use super::view::COLUMNS;
use super::zset::{Row, ZSet, NULL};

fn show_value(v: i64) -> String {
    if v == NULL {
        "null".into()
    } else {
        v.to_string()
    }
}

/// A row of one table, or a joined row as the leaves' rows one after the other.
fn show_row(row: &Row) -> String {
    row.chunks(COLUMNS.len())
        .map(|c| format!("({})", c.iter().map(|&v| show_value(v)).collect::<Vec<_>>().join(",")))
        .collect::<Vec<_>>()
        .join("")
}

pub(super) fn show(z: &ZSet) -> String {
    let rows: Vec<String> = z.iter().map(|(r, w)| format!("{}:{w:+}", show_row(r))).collect();
    format!("{{{}}}", rows.join(" "))
}

pub(super) fn show_rows(rows: &[(Row, i64)]) -> String {
    let rows: Vec<String> = rows.iter().map(|(r, m)| format!("{}:{m:+}", show_row(r))).collect();
    format!("[{}]", rows.join(" "))
}

pub(super) fn mask_label(n: usize, mask: Mask) -> String {
    (0..n).rev().map(|i| if mask & (1 << i) != 0 { '1' } else { '0' }).collect()
}
