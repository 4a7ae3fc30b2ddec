//! Counting the `?` parameters and the statements of a fixed SQL text. Shared by build.rs (which
//! types every file in `sql/` by its count and marks the ones a connection may prepare) and the
//! library (unit tests).
//!
//! A `?` or `;` counts unless it is inside a string literal (`'...'`, `''` escapes a quote), a quoted
//! identifier (`"..."`), a line comment (`-- ...`) or a block comment (`/* ... */`).

/// The number of `?` parameters of `sql`.
pub fn count(sql: &str) -> usize {
    let mut n = 0;
    each_code_byte(sql, |c| n += usize::from(c == b'?'));
    n
}

/// Whether `sql` is one statement: no `;` is followed by more code (DuckDB prepares one
/// statement at a time).
pub fn single_statement(sql: &str) -> bool {
    let (mut ended, mut more) = (false, false);
    each_code_byte(sql, |c| match c {
        b';' => ended = true,
        c if ended && !c.is_ascii_whitespace() => more = true,
        _ => {}
    });
    !more
}

/// Calls `f` with every byte of `sql` outside string literals, quoted identifiers and comments.
fn each_code_byte(sql: &str, mut f: impl FnMut(u8)) {
    let b = sql.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"') => {
                i += 1;
                while i < b.len() {
                    if b[i] == q {
                        if b.get(i + 1) == Some(&q) {
                            i += 1;
                        } else {
                            break;
                        }
                    }
                    i += 1;
                }
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i += 1;
            }
            c => f(c),
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::{count, single_statement};

    #[test]
    fn counts_parameters_outside_literals_and_comments() {
        assert_eq!(count("SELECT 1"), 0);
        assert_eq!(count("SELECT ? , CAST(? AS BIGINT)"), 2);
        assert_eq!(count("-- Parameters: a, b?\nSELECT ?"), 1);
        assert_eq!(count("SELECT '?', 'it''s ?', \"a?\", ? /* ? */"), 1);
        assert_eq!(count("SELECT 'unterminated ?"), 0);
    }

    #[test]
    fn tells_one_statement_from_several() {
        assert!(single_statement("SELECT 1"));
        assert!(single_statement("CREATE TABLE t (a INT);\n-- done\n"));
        assert!(single_statement("SELECT ';' AS a, \"b;\" /* ; x */"));
        assert!(!single_statement("CREATE TABLE t (a INT); ALTER TABLE t ADD COLUMN b INT;"));
    }
}
