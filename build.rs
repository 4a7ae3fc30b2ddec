//! Build script: gives the Rust code the one C API version the extension is built for.
//!
//! The version lives in the file `C_API_VERSION` (one line, `v<major>.<minor>.<patch>`), read
//! both here and by `tools/append_footer.py`, which writes it into the extension's footer: the
//! version the entrypoint asks DuckDB for and the one the footer declares cannot drift apart.

use std::fs;

/// Whether `v` reads `v<major>.<minor>.<patch>` with decimal numbers.
fn well_formed(v: &str) -> bool {
    let Some(rest) = v.strip_prefix('v') else { return false };
    let parts: Vec<&str> = rest.split('.').collect();
    parts.len() == 3 && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

fn main() {
    println!("cargo:rerun-if-changed=C_API_VERSION");
    println!("cargo:rerun-if-changed=build.rs");
    let text = match fs::read_to_string("C_API_VERSION") {
        Ok(t) => t,
        Err(e) => {
            println!("cargo:warning=C_API_VERSION could not be read: {e}");
            std::process::exit(1);
        }
    };
    let version = text.trim();
    if !well_formed(version) {
        println!("cargo:warning=C_API_VERSION must read v<major>.<minor>.<patch>, not {version:?}");
        std::process::exit(1);
    }
    println!("cargo:rustc-env=OPENIVM_C_API_VERSION={version}");
}
