//! Counting the `?` parameters of a fixed SQL text. Shared by build.rs (which types every file in
//! `sql/` by its count) and the library (unit tests).
//!
//! A `?` counts unless it is inside a string literal (`'...'`, `''` escapes a quote), a quoted
//! identifier (`"..."`), a line comment (`-- ...`) or a block comment (`/* ... */`).

/// The number of `?` parameters of `sql`.
pub fn count(sql: &str) -> usize {
    let b = sql.as_bytes();
    let (mut i, mut n) = (0, 0);
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
            b'?' => n += 1,
            _ => {}
        }
        i += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::count;

    #[test]
    fn counts_parameters_outside_literals_and_comments() {
        assert_eq!(count("SELECT 1"), 0);
        assert_eq!(count("SELECT ? , CAST(? AS BIGINT)"), 2);
        assert_eq!(count("-- Parameters: a, b?\nSELECT ?"), 1);
        assert_eq!(count("SELECT '?', 'it''s ?', \"a?\", ? /* ? */"), 1);
        assert_eq!(count("SELECT 'unterminated ?"), 0);
    }
}
