//! Label and field selectors: parsing the query-string syntax and matching objects.

use crate::error::ApiError;

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Requirement {
    /// `key=value`, `key==value`
    Eq(String, String),
    /// `key!=value`
    NotEq(String, String),
    /// `key in (a,b)`
    In(String, Vec<String>),
    /// `key notin (a,b)`
    NotIn(String, Vec<String>),
    /// `key`
    Exists(String),
    /// `!key`
    NotExists(String),
}

/// A parsed label selector (`labelSelector=` query parameter); all requirements must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LabelSelector {
    /// The requirements, ANDed.
    pub requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Parses the Kubernetes selector syntax (`a=b,c!=d,e in (f,g),!h`).
    pub(crate) fn parse(s: &str) -> Result<Self, ApiError> {
        let mut p = Parser {
            s: s.as_bytes(),
            pos: 0,
            src: s,
        };
        let mut requirements = Vec::new();
        p.skip_ws();
        if p.at_end() {
            return Ok(LabelSelector { requirements });
        }
        loop {
            requirements.push(p.requirement()?);
            p.skip_ws();
            if p.at_end() {
                break;
            }
            p.expect(b',')?;
            p.skip_ws();
        }
        Ok(LabelSelector { requirements })
    }

    /// True when the selector selects everything.
    pub(crate) fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Does a label set (as key/value pairs) match?
    pub(crate) fn matches<'a>(&self, labels: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| match r {
            Requirement::Eq(k, v) => labels(k) == Some(v.as_str()),
            Requirement::NotEq(k, v) => labels(k) != Some(v.as_str()),
            Requirement::In(k, vs) => labels(k).is_some_and(|l| vs.iter().any(|v| v == l)),
            Requirement::NotIn(k, vs) => labels(k).is_none_or(|l| !vs.iter().any(|v| v == l)),
            Requirement::Exists(k) => labels(k).is_some(),
            Requirement::NotExists(k) => labels(k).is_none(),
        })
    }
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    src: &'a str,
}

impl Parser<'_> {
    fn at_end(&self) -> bool {
        self.pos >= self.s.len()
    }
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }
    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
    }
    fn err(&self, what: &str) -> ApiError {
        ApiError::bad_request(format!(
            "unable to parse requirement: {what} in label selector \"{}\"",
            self.src
        ))
    }
    fn expect(&mut self, c: u8) -> Result<(), ApiError> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.err(&format!(
                "expected '{}' at position {}",
                c as char, self.pos
            )))
        }
    }
    fn ident(&mut self) -> String {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'/') {
                self.pos += 1;
            } else {
                break;
            }
        }
        self.src[start..self.pos].to_string()
    }
    fn key(&mut self) -> Result<String, ApiError> {
        let k = self.ident();
        if k.is_empty() {
            return Err(self.err(&format!("expected a label key at position {}", self.pos)));
        }
        validate_key(&k).map_err(|m| self.err(&m))?;
        Ok(k)
    }
    fn value(&mut self) -> Result<String, ApiError> {
        let v = self.ident();
        if v.len() > 63 {
            return Err(self.err(&format!(
                "invalid label value: \"{v}\": must be no more than 63 characters"
            )));
        }
        Ok(v)
    }
    fn values(&mut self) -> Result<Vec<String>, ApiError> {
        self.skip_ws();
        self.expect(b'(')?;
        let mut out = Vec::new();
        loop {
            self.skip_ws();
            out.push(self.value()?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b')') => {
                    self.pos += 1;
                    return Ok(out);
                }
                _ => return Err(self.err("expected ',' or ')' in value set")),
            }
        }
    }
    fn word(&mut self, w: &str) -> bool {
        let end = self.pos + w.len();
        if self.s.get(self.pos..end) == Some(w.as_bytes())
            && self.s.get(end).is_none_or(|c| matches!(c, b' ' | b'('))
        {
            self.pos = end;
            true
        } else {
            false
        }
    }
    fn requirement(&mut self) -> Result<Requirement, ApiError> {
        if self.peek() == Some(b'!') {
            self.pos += 1;
            self.skip_ws();
            return Ok(Requirement::NotExists(self.key()?));
        }
        let key = self.key()?;
        self.skip_ws();
        match self.peek() {
            None | Some(b',') => Ok(Requirement::Exists(key)),
            Some(b'=') => {
                self.pos += 1;
                if self.peek() == Some(b'=') {
                    self.pos += 1;
                }
                self.skip_ws();
                Ok(Requirement::Eq(key, self.value()?))
            }
            Some(b'!') => {
                self.pos += 1;
                self.expect(b'=')?;
                self.skip_ws();
                Ok(Requirement::NotEq(key, self.value()?))
            }
            _ if self.word("in") => Ok(Requirement::In(key, self.values()?)),
            _ if self.word("notin") => Ok(Requirement::NotIn(key, self.values()?)),
            _ => Err(self.err(&format!("unexpected character at position {}", self.pos))),
        }
    }
}

fn validate_key(k: &str) -> Result<(), String> {
    let name = match k.split_once('/') {
        Some((prefix, name)) => {
            if prefix.is_empty() || prefix.len() > 253 {
                return Err(format!(
                    "invalid label key \"{k}\": prefix part must be a DNS subdomain"
                ));
            }
            name
        }
        None => k,
    };
    if name.is_empty() || name.len() > 63 {
        return Err(format!(
            "invalid label key \"{k}\": name part must be no more than 63 characters"
        ));
    }
    Ok(())
}

/// One requirement of a field selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldRequirement {
    /// The field path, e.g. `metadata.name`.
    pub field: String,
    /// The value compared with.
    pub value: String,
    /// `!=` instead of `=`/`==`.
    pub negated: bool,
}

/// A parsed field selector (`fieldSelector=` query parameter).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldSelector {
    /// The requirements, ANDed.
    pub requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// Parses `a=b,c!=d`; `allowed` names the fields the resource supports beside
    /// `metadata.name` and `metadata.namespace`.
    pub(crate) fn parse(s: &str, allowed: &[&str]) -> Result<Self, ApiError> {
        let mut requirements = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (field, value, negated) = if let Some((f, v)) = part.split_once("!=") {
                (f, v, true)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, v, false)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, v, false)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                )));
            };
            let field = field.trim();
            if field != "metadata.name"
                && field != "metadata.namespace"
                && !allowed.contains(&field)
            {
                let mut known: Vec<String> = ["metadata.name", "metadata.namespace"]
                    .iter()
                    .chain(allowed)
                    .map(|f| format!("{f:?}"))
                    .collect();
                known.dedup();
                return Err(ApiError::bad_request(format!(
                    "{field:?} is not a known field selector: only {}",
                    known.join(", ")
                )));
            }
            requirements.push(FieldRequirement {
                field: field.to_string(),
                value: value.trim().to_string(),
                negated,
            });
        }
        Ok(FieldSelector { requirements })
    }

    /// True when the selector selects everything.
    pub(crate) fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// True when only `metadata.name`/`metadata.namespace` are used (matchable without parsing the object).
    pub(crate) fn only_metadata(&self) -> bool {
        self.requirements
            .iter()
            .all(|r| r.field == "metadata.name" || r.field == "metadata.namespace")
    }

    /// Does an object match? `field` returns the field's value as a string (missing = empty string,
    /// as kube-apiserver treats absent fields).
    pub(crate) fn matches(&self, field: impl Fn(&str) -> String) -> bool {
        self.requirements
            .iter()
            .all(|r| (field(&r.field) == r.value) != r.negated)
    }

    /// The exact name required by `metadata.name=x`, if any (lets a list skip to one object).
    pub(crate) fn required_name(&self) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == "metadata.name" && !r.negated)
            .map(|r| r.value.as_str())
    }
}

/// Reads a dotted field path (`involvedObject.name`) from a JSON object as a selector string.
pub(crate) fn field_of(obj: &serde_json::Value, path: &str) -> String {
    let mut cur = obj;
    for seg in path.split('.') {
        match cur.get(seg) {
            Some(v) => cur = v,
            None => return String::new(),
        }
    }
    match cur {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn m(sel: &str, labels: &[(&str, &str)]) -> bool {
        let l: BTreeMap<&str, &str> = labels.iter().copied().collect();
        LabelSelector::parse(sel)
            .unwrap()
            .matches(|k| l.get(k).copied())
    }

    #[test]
    fn label_selector_operators() {
        assert!(m("a=b", &[("a", "b")]));
        assert!(m("a==b", &[("a", "b")]));
        assert!(!m("a=b", &[("a", "c")]));
        assert!(m("a!=b", &[("a", "c")]));
        assert!(m("a!=b", &[]));
        assert!(m("a in (b, c)", &[("a", "c")]));
        assert!(!m("a in (b,c)", &[]));
        assert!(m("a notin (b,c)", &[]));
        assert!(!m("a notin (b,c)", &[("a", "b")]));
        assert!(m("a", &[("a", "")]));
        assert!(m("!a", &[("b", "x")]));
        assert!(!m("!a", &[("a", "x")]));
        assert!(m(
            "app.kubernetes.io/name=x,tier in (web),!legacy",
            &[("app.kubernetes.io/name", "x"), ("tier", "web")]
        ));
        assert!(m("", &[]));
    }

    #[test]
    fn label_selector_errors() {
        assert!(LabelSelector::parse("a in b").is_err());
        assert!(LabelSelector::parse("=b").is_err());
        assert!(LabelSelector::parse("a=b,").is_err());
    }

    #[test]
    fn field_selectors() {
        let s = FieldSelector::parse("metadata.name=foo,metadata.namespace!=x", &[]).unwrap();
        assert!(s.matches(|f| if f == "metadata.name" {
            "foo".into()
        } else {
            "y".into()
        }));
        assert_eq!(s.required_name(), Some("foo"));
        let e = FieldSelector::parse("spec.foo=bar", &[]).unwrap_err();
        assert_eq!(
            e.message,
            r#""spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace""#
        );
    }
}
