//! `pattern` regular expressions with Go RE2 semantics, compiled once and shared.
//!
//! Go's `regexp` and Rust's `regex` accept nearly the same syntax, but Go's Perl classes are
//! ASCII-only while Rust's are Unicode-aware (`\d` matches `٣` in Rust, not in Go). Patterns are
//! rewritten so `\d`, `\w`, `\s` and `\b` keep Go's meaning. Compiled patterns are cached by
//! source text: CRD versions and built-in schemas share patterns, and a CRD update recompiles its
//! schema without recompiling its regexes.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use regex::Regex;

static CACHE: LazyLock<Mutex<HashMap<String, Regex>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Compiles a schema `pattern` with Go semantics; the error text reads like Go's
/// `error parsing regexp: …`.
pub(crate) fn compile(pattern: &str) -> Result<Regex, String> {
    if let Ok(cache) = CACHE.lock()
        && let Some(re) = cache.get(pattern)
    {
        return Ok(re.clone());
    }
    let re = Regex::new(&translate(pattern))
        .map_err(|e| format!("error parsing regexp: {}", first_line(&e.to_string())))?;
    if let Ok(mut cache) = CACHE.lock() {
        // Bounded: a process that sees endless distinct patterns should not grow without limit.
        if cache.len() > 10_000 {
            cache.clear();
        }
        cache.insert(pattern.to_string(), re.clone());
    }
    Ok(re)
}

fn first_line(s: &str) -> String {
    s.lines()
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or(s)
        .trim()
        .to_string()
}

/// Rewrites Go's ASCII Perl classes into explicit ASCII classes.
fn translate(p: &str) -> String {
    let mut out = String::with_capacity(p.len() + 16);
    let mut chars = p.chars().peekable();
    let mut in_class = false;
    // Position inside a class: `]` right after `[` or `[^` is a literal, not the end.
    let mut class_start = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(n) = chars.next() else {
                    out.push('\\');
                    break;
                };
                class_start = false;
                let rep = match (in_class, n) {
                    (false, 'd') => "[0-9]",
                    (false, 'D') => "[^0-9]",
                    (false, 'w') => "[0-9A-Za-z_]",
                    (false, 'W') => "[^0-9A-Za-z_]",
                    (false, 's') => "[\\t\\n\\f\\r ]",
                    (false, 'S') => "[^\\t\\n\\f\\r ]",
                    (false, 'b') => "(?-u:\\b)",
                    (false, 'B') => "(?-u:\\B)",
                    (true, 'd') => "0-9",
                    (true, 'w') => "0-9A-Za-z_",
                    (true, 's') => "\\t\\n\\f\\r ",
                    _ => {
                        out.push('\\');
                        out.push(n);
                        continue;
                    }
                };
                out.push_str(rep);
            }
            '[' if !in_class => {
                in_class = true;
                class_start = true;
                out.push('[');
                if chars.peek() == Some(&'^') {
                    out.push('^');
                    chars.next();
                }
            }
            '[' if in_class && chars.peek() == Some(&':') => {
                // POSIX class like [:alpha:] inside a bracket expression.
                out.push('[');
                for n in chars.by_ref() {
                    out.push(n);
                    if n == ']' {
                        break;
                    }
                }
                class_start = false;
            }
            ']' if in_class && !class_start => {
                in_class = false;
                out.push(']');
            }
            c => {
                class_start = false;
                out.push(c);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perl_classes_are_ascii_like_go() {
        let d = compile(r"^\d+$").unwrap();
        assert!(d.is_match("123"));
        assert!(
            !d.is_match("١٢٣"),
            "Go's \\d does not match Arabic-Indic digits"
        );
        let w = compile(r"^\w+$").unwrap();
        assert!(w.is_match("a_1"));
        assert!(!w.is_match("é"));
        let s = compile(r"^a\sb$").unwrap();
        assert!(s.is_match("a b"));
        assert!(!s.is_match("a\u{a0}b"));
        let class = compile(r"^[\d.]+$").unwrap();
        assert!(class.is_match("1.2"));
        assert!(!class.is_match("١"));
        let lit = compile(r"^[]a]+$").unwrap();
        assert!(lit.is_match("]a"));
        let posix = compile(r"^[[:alpha:]\d]+$").unwrap();
        assert!(posix.is_match("ab12"));
        assert!(compile(r"\bword\b").unwrap().is_match("a word here"));
    }

    #[test]
    fn unanchored_like_go_match_string() {
        assert!(compile("^v").unwrap().is_match("v1"));
        assert!(compile("b").unwrap().is_match("abc"));
    }

    #[test]
    fn invalid_pattern_reports_error() {
        let e = compile("(abc").unwrap_err();
        assert!(e.starts_with("error parsing regexp: "), "{e}");
    }

    #[test]
    fn cache_returns_same_program() {
        let a = compile("^cache-me$").unwrap();
        let b = compile("^cache-me$").unwrap();
        assert_eq!(a.as_str(), b.as_str());
    }
}
