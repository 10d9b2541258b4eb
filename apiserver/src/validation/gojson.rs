//! The error Go's `json.Unmarshal(data, &map[string]interface{}{})` returns, for the built-in
//! validations that check a field holds a JSON object (a Secret's `.dockercfg` and
//! `.dockerconfigjson`). Go first runs its scanner over the whole input (encoding/json
//! scanner.go, `checkValid`): a syntax error names the offending byte and what the scanner was
//! looking for; a valid document of another type than an object fails to decode into the map.

use crate::error::go_quote;

/// What encloses the value being scanned (the scanner's `parseState` stack).
#[derive(Clone, Copy, PartialEq)]
enum Within {
    ObjectKey,
    ObjectValue,
    Array,
}

/// The scanner's states that can refuse a byte; literals carry the bytes still expected.
#[derive(Clone, Copy, PartialEq)]
enum State {
    BeginValue,
    BeginValueOrEmpty,
    BeginStringOrEmpty,
    BeginString,
    EndValue,
    EndTop,
    InString,
    InStringEsc,
    /// Inside `\u`, with this many hex digits still to come.
    InStringEscU(u8),
    Neg,
    /// The integer part began with a non-zero digit.
    Int,
    /// The integer part is `0`.
    Zero,
    Dot,
    Fraction,
    E,
    ESign,
    Exponent,
    /// A literal, its name and the index of the next expected byte.
    Literal(&'static str, usize),
}

/// `quoteChar`: a byte as the scanner's messages show it.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => r"'\''".to_string(),
        b'"' => "'\"'".to_string(),
        _ => {
            let q = go_quote(&char::from(c).to_string());
            format!("'{}'", &q[1..q.len() - 1])
        }
    }
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// Go's scanner: the state and the stack of enclosing values.
struct Scanner {
    state: State,
    stack: Vec<Within>,
}

impl Scanner {
    /// Feeds one byte (`scanner.step`); `Err` is the syntax error.
    fn step(&mut self, c: u8) -> Result<(), String> {
        let invalid = |context: &str| Err(format!("invalid character {} {context}", quote_char(c)));
        // A value's end hands the byte on to whatever follows it, as Go's `stateEndValue(s, c)`.
        loop {
            let mut again = false;
            let state = self.state;
            self.state = match state {
                State::BeginValue | State::BeginValueOrEmpty => match c {
                    c if is_space(c) => state,
                    b']' if state == State::BeginValueOrEmpty => {
                        again = true;
                        State::EndValue
                    }
                    b'{' => {
                        self.stack.push(Within::ObjectKey);
                        State::BeginStringOrEmpty
                    }
                    b'[' => {
                        self.stack.push(Within::Array);
                        State::BeginValueOrEmpty
                    }
                    b'"' => State::InString,
                    b'-' => State::Neg,
                    b'0' => State::Zero,
                    b'1'..=b'9' => State::Int,
                    b't' => State::Literal("true", 1),
                    b'f' => State::Literal("false", 1),
                    b'n' => State::Literal("null", 1),
                    _ => return invalid("looking for beginning of value"),
                },
                State::BeginStringOrEmpty | State::BeginString => match c {
                    c if is_space(c) => state,
                    b'}' if state == State::BeginStringOrEmpty => {
                        if let Some(top) = self.stack.last_mut() {
                            *top = Within::ObjectValue;
                        }
                        again = true;
                        State::EndValue
                    }
                    b'"' => State::InString,
                    _ => return invalid("looking for beginning of object key string"),
                },
                State::EndValue => match self.stack.last().copied() {
                    None => {
                        again = true;
                        State::EndTop
                    }
                    Some(_) if is_space(c) => state,
                    Some(Within::ObjectKey) => match c {
                        b':' => {
                            self.stack.pop();
                            self.stack.push(Within::ObjectValue);
                            State::BeginValue
                        }
                        _ => return invalid("after object key"),
                    },
                    Some(Within::ObjectValue) => match c {
                        b',' => {
                            self.stack.pop();
                            self.stack.push(Within::ObjectKey);
                            State::BeginString
                        }
                        b'}' => {
                            self.stack.pop();
                            State::EndValue
                        }
                        _ => return invalid("after object key:value pair"),
                    },
                    Some(Within::Array) => match c {
                        b',' => State::BeginValue,
                        b']' => {
                            self.stack.pop();
                            State::EndValue
                        }
                        _ => return invalid("after array element"),
                    },
                },
                State::EndTop => match c {
                    c if is_space(c) => state,
                    _ => return invalid("after top-level value"),
                },
                State::InString => match c {
                    b'"' => State::EndValue,
                    b'\\' => State::InStringEsc,
                    c if c < 0x20 => return invalid("in string literal"),
                    _ => state,
                },
                State::InStringEsc => match c {
                    b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => State::InString,
                    b'u' => State::InStringEscU(4),
                    _ => return invalid("in string escape code"),
                },
                State::InStringEscU(left) => match c {
                    c if c.is_ascii_hexdigit() => match left {
                        1 => State::InString,
                        n => State::InStringEscU(n - 1),
                    },
                    _ => return invalid("in \\u hexadecimal character escape"),
                },
                State::Neg => match c {
                    b'0' => State::Zero,
                    b'1'..=b'9' => State::Int,
                    _ => return invalid("in numeric literal"),
                },
                State::Int | State::Zero => match c {
                    b'0'..=b'9' if state == State::Int => state,
                    b'.' => State::Dot,
                    b'e' | b'E' => State::E,
                    _ => {
                        again = true;
                        State::EndValue
                    }
                },
                State::Dot => match c {
                    b'0'..=b'9' => State::Fraction,
                    _ => return invalid("after decimal point in numeric literal"),
                },
                State::Fraction => match c {
                    b'0'..=b'9' => state,
                    b'e' | b'E' => State::E,
                    _ => {
                        again = true;
                        State::EndValue
                    }
                },
                State::E => match c {
                    b'+' | b'-' => State::ESign,
                    _ => {
                        again = true;
                        State::ESign
                    }
                },
                State::ESign => match c {
                    b'0'..=b'9' => State::Exponent,
                    _ => return invalid("in exponent of numeric literal"),
                },
                State::Exponent => match c {
                    b'0'..=b'9' => state,
                    _ => {
                        again = true;
                        State::EndValue
                    }
                },
                State::Literal(word, i) => {
                    let expected = word.as_bytes()[i];
                    if c != expected {
                        return invalid(&format!(
                            "in literal {word} (expecting {})",
                            quote_char(expected)
                        ));
                    }
                    if i + 1 == word.len() {
                        State::EndValue
                    } else {
                        State::Literal(word, i + 1)
                    }
                }
            };
            if !again {
                return Ok(());
            }
        }
    }
}

/// The error of `json.Unmarshal` into a `map[string]interface{}`, or `None` when it succeeds.
pub(crate) fn unmarshal_object_error(data: &[u8]) -> Option<String> {
    let mut scanner = Scanner {
        state: State::BeginValue,
        stack: Vec::new(),
    };
    for &c in data {
        if let Err(e) = scanner.step(c) {
            return Some(e);
        }
    }
    // `eof`: a space ends a pending number or shows what is still missing.
    if let Err(e) = scanner.step(b' ') {
        return Some(e);
    }
    if scanner.state != State::EndTop {
        return Some("unexpected end of JSON input".into());
    }
    // The document is valid: only an object (or null) decodes into the map.
    let first = data.iter().copied().find(|c| !is_space(*c));
    let kind = match first {
        Some(b'{') | Some(b'n') => return None,
        Some(b'[') => "array",
        Some(b'"') => "string",
        Some(b't') | Some(b'f') => "bool",
        _ => "number",
    };
    Some(format!(
        "json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
    ))
}

#[cfg(test)]
mod tests {
    use super::unmarshal_object_error as e;

    #[test]
    fn errors_are_what_go_reports() {
        for ok in [
            r#"{}"#,
            r#" {"auths": {"r": {"auth": "eA=="}}} "#,
            "null",
            r#"{"a":[1,-2.5e+3,true,null,"\u00e9\n"]}"#,
        ] {
            assert_eq!(e(ok.as_bytes()), None, "{ok}");
        }
        for (input, msg) in [
            ("", "unexpected end of JSON input"),
            ("{", "unexpected end of JSON input"),
            (r#"{"a":1"#, "unexpected end of JSON input"),
            ("x", "invalid character 'x' looking for beginning of value"),
            (
                "{a}",
                "invalid character 'a' looking for beginning of object key string",
            ),
            (r#"{"a" 1}"#, "invalid character '1' after object key"),
            (
                r#"{"a":1 "b"}"#,
                "invalid character '\"' after object key:value pair",
            ),
            ("[1 2]", "invalid character '2' after array element"),
            ("{} x", "invalid character 'x' after top-level value"),
            ("\"a\nb\"", "invalid character '\\n' in string literal"),
            (r#""\x""#, "invalid character 'x' in string escape code"),
            (
                r#""\u12g4""#,
                "invalid character 'g' in \\u hexadecimal character escape",
            ),
            ("-x", "invalid character 'x' in numeric literal"),
            (
                "1.x",
                "invalid character 'x' after decimal point in numeric literal",
            ),
            (
                "1ex",
                "invalid character 'x' in exponent of numeric literal",
            ),
            (
                "tru",
                "invalid character ' ' in literal true (expecting 'e')",
            ),
            (
                "1.",
                "invalid character ' ' after decimal point in numeric literal",
            ),
            ("[1,", "unexpected end of JSON input"),
            ("\"abc", "unexpected end of JSON input"),
            (
                "trx",
                "invalid character 'x' in literal true (expecting 'u')",
            ),
            (
                "nul1",
                "invalid character '1' in literal null (expecting 'l')",
            ),
            (
                "'a'",
                r"invalid character '\'' looking for beginning of value",
            ),
            (
                "[]",
                "json: cannot unmarshal array into Go value of type map[string]interface {}",
            ),
            (
                "\"s\"",
                "json: cannot unmarshal string into Go value of type map[string]interface {}",
            ),
            (
                "12",
                "json: cannot unmarshal number into Go value of type map[string]interface {}",
            ),
            (
                "false",
                "json: cannot unmarshal bool into Go value of type map[string]interface {}",
            ),
        ] {
            assert_eq!(e(input.as_bytes()).as_deref(), Some(msg), "{input:?}");
        }
    }
}
