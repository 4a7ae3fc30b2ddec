//! Settings. A call takes each from, in this order: its named parameter (`fk_pruning :=`,
//! `mode :=`), the caller's `SET` (a DuckDB config option, `shell/options.rs`, on hosts that
//! have them), the database's stored setting (`openivm_set`, the table `openivm_settings`,
//! which persists), and the default. Every known setting has a row in the table, so
//! `FROM openivm_settings` lists them all.

use crate::db::{read_all, Sql};
use crate::error::{Error, Result};

use crate::sql::settings::ADD_DEFAULT;
use crate::sql::settings::CREATE;
use crate::sql::settings::GET;
use crate::sql::settings::SET;

pub struct Setting {
    pub name: &'static str,
    pub default: &'static str,
    pub description: &'static str,
    /// The accepted values; empty for a boolean setting.
    pub choices: &'static [&'static str],
}

pub const FK_PRUNING: Setting = Setting {
    name: "openivm_fk_pruning",
    default: "true",
    description: "Skip inclusion-exclusion terms that foreign keys prove empty (insert-only referenced tables)",
    choices: &[],
};

pub const REFRESH_MODE: Setting = Setting {
    name: "openivm_refresh_mode",
    default: "auto",
    description:
        "How refresh brings a view up to date: auto (incremental unless a recompute is cheaper), incremental, or full",
    choices: &["auto", "incremental", "full"],
};

pub const KEPT_PLANS: Setting = Setting {
    name: "openivm_kept_plans",
    default: "true",
    description: "Reuse the plan of a merge that repeats from one refresh to the next (planned without the optimizers that use the rows' statistics)",
    choices: &[],
};

pub const DEFAULT_SOURCE: Setting = Setting {
    name: "openivm_default_source",
    default: "trigger",
    description: "How changes of a table without a source declaration are captured: trigger (statement triggers openivm installs, where the database allows them: DuckDB 2.0, storage v2.0.0+, a table no FOREIGN KEY touches; diff elsewhere) or diff (compare the table with a snapshot)",
    choices: &["trigger", "diff"],
};

pub const ALL: &[Setting] = &[FK_PRUNING, REFRESH_MODE, KEPT_PLANS, DEFAULT_SOURCE];

/// Creates the settings table and a row for every known setting.
pub fn ensure(db: &dyn Sql) -> Result<()> {
    CREATE.run(db, [])?;
    ALL.iter().try_for_each(|s| ADD_DEFAULT.run(db, [s.name, s.default, s.description]))
}

/// Normalizes a boolean setting's text ('true'/'false', also on/off, 1/0, yes/no).
pub fn parse_bool(name: &str, value: &str) -> Result<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "on" | "1" | "yes" | "t" => Ok(true),
        "false" | "off" | "0" | "no" | "f" => Ok(false),
        _ => Err(Error::InvalidArgument(format!("setting '{name}' takes true or false, not '{value}'"))),
    }
}

/// Normalizes the value of a setting with a fixed set of values.
pub fn parse_choice(s: &Setting, value: &str) -> Result<String> {
    let v = value.trim().to_ascii_lowercase();
    if s.choices.contains(&v.as_str()) {
        Ok(v)
    } else {
        Err(Error::InvalidArgument(format!("setting '{}' takes {}, not '{value}'", s.name, s.choices.join(", "))))
    }
}

/// The known setting `name` (case-insensitive) and `value` normalized for it; an unknown name
/// or a value it does not take is an error. Pure: checked at bind, before anything runs.
pub fn check(name: &str, value: &str) -> Result<(&'static Setting, String)> {
    let Some(s) = ALL.iter().find(|s| s.name.eq_ignore_ascii_case(name)) else {
        let known: Vec<&str> = ALL.iter().map(|s| s.name).collect();
        return Err(Error::InvalidArgument(format!("unknown setting '{name}' (known: {})", known.join(", "))));
    };
    let normalized =
        if s.choices.is_empty() { parse_bool(s.name, value)?.to_string() } else { parse_choice(s, value)? };
    Ok((s, normalized))
}

/// The settings the caller set with `SET` (None: not set), checked and normalized.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallerSettings {
    pub fk_pruning: Option<bool>,
    pub refresh_mode: Option<String>,
    pub kept_plans: Option<bool>,
    pub default_source: Option<String>,
}

impl CallerSettings {
    /// From `(name, value)` pairs as the caller's session holds them; a value the setting does
    /// not take is an error naming the `SET` to fix.
    pub fn parse(values: &[(String, String)]) -> Result<CallerSettings> {
        let mut out = CallerSettings::default();
        for (name, value) in values {
            let (s, normalized) = check(name, value).map_err(|e| match e {
                Error::InvalidArgument(m) => {
                    Error::InvalidArgument(format!("{m} (set with SET {name}; RESET {name} clears it)"))
                }
                other => other,
            })?;
            match s.name {
                n if n == FK_PRUNING.name => out.fk_pruning = Some(normalized == "true"),
                n if n == KEPT_PLANS.name => out.kept_plans = Some(normalized == "true"),
                n if n == DEFAULT_SOURCE.name => out.default_source = Some(normalized),
                _ => out.refresh_mode = Some(normalized),
            }
        }
        Ok(out)
    }
}

/// Stores a setting; returns its normalized value.
pub fn set(db: &dyn Sql, name: &str, value: &str) -> Result<String> {
    let (s, normalized) = check(name, value)?;
    ensure(db)?;
    SET.run(db, [&normalized, s.name])?;
    Ok(normalized)
}

/// The stored value of a setting, or its default when it has no row or a NULL value.
fn stored(db: &dyn Sql, s: &Setting) -> Result<String> {
    let rows: Vec<(Option<String>,)> = read_all(&GET.rows(db, [s.name])?)?;
    Ok(rows.into_iter().next().and_then(|(value,)| value).unwrap_or_else(|| s.default.to_string()))
}

/// The effective value of `openivm_refresh_mode`.
pub fn refresh_mode(db: &dyn Sql) -> Result<String> {
    parse_choice(&REFRESH_MODE, &stored(db, &REFRESH_MODE)?)
}

/// The effective value of `openivm_kept_plans`.
pub fn kept_plans(db: &dyn Sql) -> Result<bool> {
    parse_bool(KEPT_PLANS.name, &stored(db, &KEPT_PLANS)?)
}

/// The stored value of `openivm_default_source`.
pub fn default_source(db: &dyn Sql) -> Result<String> {
    parse_choice(&DEFAULT_SOURCE, &stored(db, &DEFAULT_SOURCE)?)
}

/// The effective value of `openivm_fk_pruning`.
pub fn fk_pruning(db: &dyn Sql) -> Result<bool> {
    parse_bool(FK_PRUNING.name, &stored(db, &FK_PRUNING)?)
}
