//! The string formats CRD schemas validate (`format: date-time`, `uuid`, …), checked the way
//! kube-openapi's `strfmt` registry checks them.
//!
//! kube-apiserver validates only the formats in apiextensions' `supportedVersionedFormats` and
//! strips every other format (`int32`, `int64`, `float`, `double`, …) before validating, so those
//! are not enforced here either. Names are normalised like go-openapi does (dashes removed, so
//! `date-time` and `datetime` are the same format).

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use regex::Regex;

/// A format kube-apiserver validates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    BsonObjectId,
    Uri,
    Email,
    Hostname,
    Ipv4,
    Ipv6,
    Cidr,
    Mac,
    Uuid,
    Uuid3,
    Uuid4,
    Uuid5,
    Isbn,
    Isbn10,
    Isbn13,
    CreditCard,
    Ssn,
    HexColor,
    RgbColor,
    Byte,
    Password,
    Date,
    Duration,
    DateTime,
}

impl Format {
    /// The validated format for a schema's `format` string; `None` for formats kube strips.
    pub(crate) fn parse(name: &str) -> Option<Format> {
        Some(match name.replace('-', "").as_str() {
            "bsonobjectid" => Format::BsonObjectId,
            "uri" => Format::Uri,
            "email" => Format::Email,
            "hostname" => Format::Hostname,
            "ipv4" => Format::Ipv4,
            "ipv6" => Format::Ipv6,
            "cidr" => Format::Cidr,
            "mac" => Format::Mac,
            "uuid" => Format::Uuid,
            "uuid3" => Format::Uuid3,
            "uuid4" => Format::Uuid4,
            "uuid5" => Format::Uuid5,
            "isbn" => Format::Isbn,
            "isbn10" => Format::Isbn10,
            "isbn13" => Format::Isbn13,
            "creditcard" => Format::CreditCard,
            "ssn" => Format::Ssn,
            "hexcolor" => Format::HexColor,
            "rgbcolor" => Format::RgbColor,
            "byte" => Format::Byte,
            "password" => Format::Password,
            "date" => Format::Date,
            "duration" => Format::Duration,
            "datetime" => Format::DateTime,
            _ => return None,
        })
    }

    /// Whether `s` is a valid value of this format.
    pub(crate) fn is_valid(self, s: &str) -> bool {
        match self {
            Format::BsonObjectId => s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit()),
            Format::Uri => is_request_uri(s),
            Format::Email => is_email(s),
            Format::Hostname => is_hostname(s),
            Format::Ipv4 => is_ipv4(s),
            Format::Ipv6 => s.contains(':') && parse_ip(s).is_some(),
            Format::Cidr => is_cidr(s),
            Format::Mac => is_mac(s),
            Format::Uuid => re(&UUID).is_match(s),
            Format::Uuid3 => re(&UUID3).is_match(s),
            Format::Uuid4 => re(&UUID4).is_match(s),
            Format::Uuid5 => re(&UUID5).is_match(s),
            Format::Isbn => is_isbn10(s) || is_isbn13(s),
            Format::Isbn10 => is_isbn10(s),
            Format::Isbn13 => is_isbn13(s),
            Format::CreditCard => is_credit_card(s),
            // govalidator.IsSSN insists on exactly 11 characters before matching the pattern.
            Format::Ssn => s.len() == 11 && re(&SSN).is_match(s),
            Format::HexColor => re(&HEXCOLOR).is_match(s),
            Format::RgbColor => re(&RGBCOLOR).is_match(s),
            // govalidator.IsBase64: the empty string does not match.
            Format::Byte => re(&BASE64).is_match(s),
            Format::Password => true,
            Format::Date => parse_date(s.as_bytes()).is_some_and(|rest| rest.is_empty()),
            Format::Duration => is_duration(s),
            Format::DateTime => is_date_time(s),
        }
    }
}

fn re(r: &LazyLock<Regex>) -> &Regex {
    r
}

// Constant patterns; the tests compile every one of them.
macro_rules! lazy_re {
    ($name:ident, $pat:expr) => {
        static $name: LazyLock<Regex> =
            LazyLock::new(|| Regex::new($pat).expect("constant pattern compiles"));
    };
}

lazy_re!(
    UUID,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"
);
lazy_re!(
    UUID3,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"
);
lazy_re!(
    UUID4,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
);
lazy_re!(
    UUID5,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
);
lazy_re!(SSN, r"^[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}$");
lazy_re!(HEXCOLOR, r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$");
lazy_re!(
    RGBCOLOR,
    r"^rgb\([\t\n\f\r ]*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])[\t\n\f\r ]*,[\t\n\f\r ]*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])[\t\n\f\r ]*,[\t\n\f\r ]*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])[\t\n\f\r ]*\)$"
);
lazy_re!(
    BASE64,
    r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$"
);
// strfmt.HostnamePattern, followed by the length checks of strfmt.IsHostname.
lazy_re!(
    HOSTNAME,
    r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9\-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$"
);
lazy_re!(
    CREDITCARD,
    r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|(222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}|27[01][0-9]|2720)[0-9]{12}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})[0-9]{11}|6[27][0-9]{14})$"
);
lazy_re!(
    EMAIL_ADDR,
    r"^(?:[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*|\x22(?:[^\x22\\]|\\.)*\x22)@(?:[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*|\[[^\[\]\\]*\])$"
);
// strfmt.ParseDuration's fallback for Scala-style durations ("3 days").
lazy_re!(
    DURATION_WORDS,
    r"(((?:-[\t\n\f\r ]?)?[0-9]+)[\t\n\f\r ]*([A-Za-zµ]+))"
);

fn is_hostname(s: &str) -> bool {
    re(&HOSTNAME).is_match(s) && s.len() <= 255 && s.split('.').all(|p| p.len() <= 63)
}

/// `netutils.ParseIPSloppy(s) != nil && strings.Contains(s, ".")`: dotted quads with leading
/// zeros, or IPv6 with an embedded IPv4 part.
fn is_ipv4(s: &str) -> bool {
    s.contains('.') && parse_ip(s).is_some()
}

enum Ip {
    V4,
    V6,
}

fn parse_ip(s: &str) -> Option<Ip> {
    if parse_ipv4_sloppy(s) {
        return Some(Ip::V4);
    }
    s.parse::<Ipv6Addr>().ok().map(|_| Ip::V6)
}

fn parse_ipv4_sloppy(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.len() <= 3
                && p.bytes().all(|b| b.is_ascii_digit())
                && p.parse::<u16>().is_ok_and(|n| n <= 255)
        })
        || s.parse::<Ipv4Addr>().is_ok()
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    if bits.is_empty() || bits.len() > 3 || !bits.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let Ok(bits) = bits.parse::<u32>() else {
        return false;
    };
    match parse_ip(ip) {
        Some(Ip::V4) if !ip.contains(':') => bits <= 32,
        Some(_) => bits <= 128,
        None => false,
    }
}

/// `net.ParseMAC`: 6, 8 or 20 octets separated by `:` or `-`, or 3, 4 or 10 dot-separated
/// groups of four hex digits.
fn is_mac(s: &str) -> bool {
    let hex = |p: &str, n: usize| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit());
    if s.contains('.') {
        let parts: Vec<&str> = s.split('.').collect();
        return matches!(parts.len(), 3 | 4 | 10) && parts.iter().all(|p| hex(p, 4));
    }
    for sep in [':', '-'] {
        if s.contains(sep) {
            let parts: Vec<&str> = s.split(sep).collect();
            return matches!(parts.len(), 6 | 8 | 20) && parts.iter().all(|p| hex(p, 2));
        }
    }
    false
}

fn isbn_digits(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .collect()
}

fn is_isbn10(s: &str) -> bool {
    let d = isbn_digits(s);
    let b = d.as_bytes();
    if b.len() != 10
        || !b[..9].iter().all(u8::is_ascii_digit)
        || !(b[9].is_ascii_digit() || b[9] == b'X')
    {
        return false;
    }
    let mut sum = 0u32;
    for (i, c) in b[..9].iter().enumerate() {
        sum += (i as u32 + 1) * u32::from(c - b'0');
    }
    sum += 10
        * if b[9] == b'X' {
            10
        } else {
            u32::from(b[9] - b'0')
        };
    sum.is_multiple_of(11)
}

fn is_isbn13(s: &str) -> bool {
    let d = isbn_digits(s);
    let b = d.as_bytes();
    if b.len() != 13 || !b.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let sum: u32 = b
        .iter()
        .enumerate()
        .map(|(i, c)| u32::from(c - b'0') * if i % 2 == 0 { 1 } else { 3 })
        .sum();
    sum.is_multiple_of(10)
}

/// govalidator.IsCreditCard: non-digits are ignored, then the issuer pattern and the Luhn sum.
fn is_credit_card(s: &str) -> bool {
    let digits: String = s.chars().filter(char::is_ascii_digit).collect();
    if !re(&CREDITCARD).is_match(&digits) {
        return false;
    }
    let mut sum = 0u32;
    let mut double = false;
    for c in digits.bytes().rev() {
        let mut d = u32::from(c - b'0');
        if double {
            d *= 2;
            if d > 9 {
                d -= 9;
            }
        }
        sum += d;
        double = !double;
    }
    sum.is_multiple_of(10)
}

/// `net/mail.ParseAddress`, approximately: `local@domain` or `Display Name <local@domain>`.
fn is_email(s: &str) -> bool {
    let s = s.trim();
    let addr = match (s.rfind('<'), s.ends_with('>')) {
        (Some(open), true) => &s[open + 1..s.len() - 1],
        (None, false) => s,
        _ => return false,
    };
    re(&EMAIL_ADDR).is_match(addr)
}

/// `url.ParseRequestURI`, approximately: an absolute path, `*`, or `scheme:` followed by an
/// opaque part or `//authority/path`; no control characters, well-formed `%` escapes.
fn is_request_uri(s: &str) -> bool {
    if s.is_empty() || s.chars().any(|c| c.is_ascii_control()) {
        return false;
    }
    let rest = s.split('#').next().unwrap_or(s);
    if !valid_escapes(rest) {
        return false;
    }
    if rest.starts_with('/') || rest == "*" {
        return true;
    }
    let Some(colon) = rest.find(':') else {
        return false;
    };
    let scheme = &rest[..colon];
    let mut chars = scheme.chars();
    let scheme_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !scheme_ok {
        return false;
    }
    let after = &rest[colon + 1..];
    if let Some(auth_and_path) = after.strip_prefix("//") {
        let end = auth_and_path
            .find(['/', '?'])
            .unwrap_or(auth_and_path.len());
        let authority = &auth_and_path[..end];
        let host_port = authority.rsplit('@').next().unwrap_or(authority);
        if host_port.contains(' ') {
            return false;
        }
        if let Some(bracket_end) = host_port.strip_prefix('[').and_then(|h| h.find(']')) {
            let port = &host_port[bracket_end + 2..];
            return port.is_empty()
                || port
                    .strip_prefix(':')
                    .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()));
        }
        if let Some((_, port)) = host_port.rsplit_once(':') {
            return port.bytes().all(|b| b.is_ascii_digit());
        }
    }
    true
}

fn valid_escapes(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            if i + 2 >= b.len() {
                return false;
            }
            if !(b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit()) {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}

// ---- dates, times and durations ------------------------------------------------------------

fn digits(b: &[u8], n: usize) -> Option<(u32, &[u8])> {
    if b.len() < n || !b[..n].iter().all(u8::is_ascii_digit) {
        return None;
    }
    let v = b[..n]
        .iter()
        .fold(0u32, |acc, d| acc * 10 + u32::from(d - b'0'));
    Some((v, &b[n..]))
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => {
            29
        }
        _ => 28,
    }
}

/// `2006-01-02` as Go's `time.Parse` checks it (day within the month); returns the rest.
fn parse_date(b: &[u8]) -> Option<&[u8]> {
    let (year, b) = digits(b, 4)?;
    let b = b.strip_prefix(b"-")?;
    let (month, b) = digits(b, 2)?;
    let b = b.strip_prefix(b"-")?;
    let (day, b) = digits(b, 2)?;
    ((1..=12).contains(&month) && day >= 1 && day <= days_in_month(year, month)).then_some(b)
}

/// strfmt.IsDateTime: one of the layouts in `strfmt.DateTimeFormats` parses the string.
fn is_date_time(s: &str) -> bool {
    let Some(rest) = parse_date(s.as_bytes()) else {
        return false;
    };
    let (space, rest) = match rest.split_first() {
        Some((b'T', r)) => (false, r),
        Some((b' ', r)) => (true, r),
        _ => return false,
    };
    let Some((hour, rest)) = digits(rest, 2) else {
        return false;
    };
    let Some(rest) = rest.strip_prefix(b":") else {
        return false;
    };
    let Some((minute, rest)) = digits(rest, 2) else {
        return false;
    };
    if hour > 23 || minute > 59 {
        return false;
    }
    // Reduced precision: "2006-01-02T15:04Z" and "2006-01-02T15:04".
    if !rest.starts_with(b":") {
        return !space && (rest.is_empty() || rest == b"Z");
    }
    let Some((second, rest)) = digits(&rest[1..], 2) else {
        return false;
    };
    if second > 59 {
        return false;
    }
    // Go accepts fractional seconds after the seconds field even when the layout has none.
    let (frac, rest) = match rest.strip_prefix(b".") {
        Some(r) => {
            let n = r.iter().take_while(|b| b.is_ascii_digit()).count();
            if n == 0 {
                return false;
            }
            (n, &r[n..])
        }
        None => (0, rest),
    };
    if space {
        // ISO8601TimeUniversalSortableDateTimePattern has no zone.
        return rest.is_empty();
    }
    match rest {
        [] | [b'Z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => valid_offset(*h1, *h2, *m1, *m2),
        // RFC3339MillisNoColon / RFC3339MicroNoColon need exactly 3 or 6 fraction digits.
        [b'+' | b'-', h1, h2, m1, m2] if matches!(frac, 3 | 6) => valid_offset(*h1, *h2, *m1, *m2),
        _ => false,
    }
}

fn valid_offset(h1: u8, h2: u8, m1: u8, m2: u8) -> bool {
    [h1, h2, m1, m2].iter().all(u8::is_ascii_digit)
        && (h1 - b'0') * 10 + (h2 - b'0') < 24
        && (m1 - b'0') * 10 + (m2 - b'0') < 60
}

/// Go's `time.ParseDuration` in nanoseconds (`1h30m`, `-1.5s`, `300ms`, `0`), parsed by kube's
/// `metav1.Duration` ([`kube::core::Duration`]).
///
/// kube's parser panics where Go returns an error (a sign inside the string, `1h-1m`, multiplies
/// by a negative number; a term beyond `u64::MAX` seconds overflows `std::time::Duration`), and
/// takes `""` and `-` for zero; those inputs are refused here before it sees them. So that no sum
/// can overflow either, a string longer than 64 bytes or a number with more than 15 digits before
/// its point is refused: Go takes such a number only in `ns`, `us` or `ms` (up to
/// `9223372036854775807ns`), and no duration a person writes has one.
pub(crate) fn parse_go_duration(s: &str) -> Option<i128> {
    let unsigned = s.strip_prefix(['-', '+']).unwrap_or(s);
    let mut integer_digits = 0;
    let mut after_point = false;
    for c in unsigned.chars() {
        match c {
            '0' if integer_digits == 0 => {}
            '0'..='9' if !after_point => integer_digits += 1,
            '0'..='9' => {}
            '.' => after_point = true,
            '-' | '+' => return None,
            _ => (integer_digits, after_point) = (0, false),
        }
        if integer_digits > 15 {
            return None;
        }
    }
    if unsigned.is_empty() || s.len() > 64 {
        return None;
    }
    let parsed: kube::core::Duration = s.parse().ok()?;
    let nanos = i128::try_from(std::time::Duration::from(parsed).as_nanos()).ok()?;
    if nanos > i128::from(i64::MAX) {
        return None;
    }
    Some(if parsed.is_negative() { -nanos } else { nanos })
}

/// strfmt.IsDuration: Go durations, or anything containing a Scala-style `<n> <unit>`.
fn is_duration(s: &str) -> bool {
    if parse_go_duration(s).is_some() {
        return true;
    }
    const UNITS: [&[&str]; 8] = [
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    re(&DURATION_WORDS).captures_iter(s).any(|c| {
        let unit = c
            .get(3)
            .map(|m| m.as_str().trim().to_lowercase())
            .unwrap_or_default();
        UNITS.iter().any(|variants| {
            variants
                .iter()
                .enumerate()
                .any(|(i, v)| (i == variants.len() - 1 && unit.starts_with(v)) || unit == *v)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(f: &str, s: &str) -> bool {
        Format::parse(f).expect(f).is_valid(s)
    }

    #[test]
    fn patterns_compile() {
        for r in [
            &UUID,
            &UUID3,
            &UUID4,
            &UUID5,
            &SSN,
            &HEXCOLOR,
            &RGBCOLOR,
            &BASE64,
            &HOSTNAME,
            &CREDITCARD,
            &EMAIL_ADDR,
            &DURATION_WORDS,
        ] {
            assert!(!re(r).as_str().is_empty());
        }
    }

    #[test]
    fn stripped_formats_are_not_validated() {
        for f in [
            "int32",
            "int64",
            "float",
            "double",
            "quantity",
            "k8s-short-name",
        ] {
            assert_eq!(Format::parse(f), None, "{f}");
        }
        assert_eq!(Format::parse("date-time"), Some(Format::DateTime));
    }

    #[test]
    fn date_time() {
        for good in [
            "2024-01-02T03:04:05Z",
            "2024-01-02T03:04:05.123Z",
            "2024-01-02T03:04:05.123456789+02:00",
            "2024-01-02T03:04:05.123+0200",
            "2024-01-02T03:04:05",
            "2024-01-02T03:04Z",
            "2024-01-02T03:04",
            "2024-01-02 03:04:05",
            "2024-02-29T00:00:00Z",
        ] {
            assert!(ok("date-time", good), "{good}");
        }
        for bad in [
            "",
            "2024-01-02",
            "2024-13-02T03:04:05Z",
            "2023-02-29T00:00:00Z",
            "2024-01-02T24:00:00Z",
            "2024-01-02T03:04:05+0200",
            "2024-01-02T03:04:05z",
            "2024-01-02 03:04:05Z",
            "yesterday",
        ] {
            assert!(!ok("date-time", bad), "{bad}");
        }
    }

    #[test]
    fn date() {
        assert!(ok("date", "2024-02-29"));
        assert!(!ok("date", "2024-02-30"));
        assert!(!ok("date", "2024-2-3"));
        assert!(!ok("date", "2024-02-03T00:00:00Z"));
    }

    #[test]
    fn duration() {
        for good in [
            "1h30m",
            "-1.5s",
            "300ms",
            "0",
            "2µs",
            "3 days",
            "1 week",
            "5 minutes",
        ] {
            assert!(ok("duration", good), "{good}");
        }
        for bad in ["", "1", "1x", "h", "abc"] {
            assert!(!ok("duration", bad), "{bad}");
        }
        assert_eq!(parse_go_duration("1h30m"), Some(5_400_000_000_000));
        assert_eq!(parse_go_duration("-2ms"), Some(-2_000_000));
        assert_eq!(parse_go_duration("0.3s"), Some(300_000_000));
        assert_eq!(parse_go_duration("-0"), Some(0));
        assert_eq!(
            parse_go_duration("2562047h"),
            Some(9_223_369_200_000_000_000)
        );
        // What Go refuses, and what would make kube's parser panic, is an error.
        for bad in [
            "",
            "-",
            "+-1s",
            "1h-1m",
            "1h+1m",
            "2562048h",
            "9999999999999999999h",
            "1..5s",
            "1s ",
        ] {
            assert_eq!(parse_go_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn network_formats() {
        assert!(ok("ipv4", "10.0.0.1"));
        assert!(ok("ipv4", "010.000.000.001"));
        assert!(!ok("ipv4", "10.0.0"));
        assert!(!ok("ipv4", "::1"));
        assert!(ok("ipv6", "::1"));
        assert!(ok("ipv6", "fe80::1:2"));
        assert!(!ok("ipv6", "10.0.0.1"));
        assert!(ok("cidr", "10.0.0.0/8"));
        assert!(ok("cidr", "fd00::/64"));
        assert!(!ok("cidr", "10.0.0.0/33"));
        assert!(!ok("cidr", "10.0.0.0"));
        assert!(ok("mac", "00:00:5e:00:53:01"));
        assert!(ok("mac", "00-00-5e-00-53-01"));
        assert!(ok("mac", "0000.5e00.5301"));
        assert!(!ok("mac", "00:00:5e:00:53"));
        assert!(ok("hostname", "example.com"));
        assert!(ok("hostname", "localhost"));
        assert!(!ok("hostname", "-bad-.com"));
        assert!(!ok("hostname", "a..b"));
        assert!(ok("uri", "https://example.com/a?b=c"));
        assert!(ok("uri", "/just/a/path"));
        assert!(ok("uri", "mailto:someone@example.com"));
        assert!(!ok("uri", "example.com"));
        assert!(!ok("uri", "http://exa mple.com"));
        assert!(!ok("uri", "http://example.com:port"));
        assert!(!ok("uri", "/bad%zzescape"));
        assert!(ok("email", "a.b@example.com"));
        assert!(ok("email", "Someone <a@example.com>"));
        assert!(!ok("email", "not-an-email"));
    }

    #[test]
    fn identifiers() {
        assert!(ok("uuid", "123e4567-e89b-12d3-a456-426614174000"));
        assert!(ok("uuid", "123E4567E89B12D3A456426614174000"));
        assert!(!ok("uuid", "123e4567"));
        assert!(ok("uuid4", "123e4567-e89b-42d3-a456-426614174000"));
        assert!(!ok("uuid4", "123e4567-e89b-12d3-a456-426614174000"));
        assert!(ok("uuid3", "123e4567-e89b-32d3-a456-426614174000"));
        assert!(ok("uuid5", "123e4567-e89b-52d3-a456-426614174000"));
        assert!(ok("bsonobjectid", "507f1f77bcf86cd799439011"));
        assert!(!ok("bsonobjectid", "507f1f77"));
        assert!(ok("isbn10", "0321751043"));
        assert!(ok("isbn13", "978-0321751041"));
        assert!(ok("isbn", "978-0321751041"));
        assert!(!ok("isbn10", "0321751044"));
        assert!(ok("creditcard", "4111 1111 1111 1111"));
        assert!(!ok("creditcard", "4111 1111 1111 1112"));
        assert!(ok("ssn", "123-45-6789"));
        assert!(!ok("ssn", "123456789"));
        assert!(ok("hexcolor", "#ffF"));
        assert!(!ok("hexcolor", "#ffff"));
        assert!(ok("rgbcolor", "rgb(255, 0,10)"));
        assert!(!ok("rgbcolor", "rgb(256,0,0)"));
        assert!(ok("byte", "aGVsbG8="));
        assert!(!ok("byte", "aGVsbG8"));
        assert!(!ok("byte", ""));
        assert!(ok("password", ""));
    }
}
