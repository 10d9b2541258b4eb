//! CronJob schedules as kube-apiserver parses them: github.com/robfig/cron/v3 `ParseStandard`
//! (five fields, or a descriptor such as `@hourly`, optionally after `TZ=`/`CRON_TZ=`), with its
//! error messages, and Go's `time.LoadLocation` for time zone names.

use crate::error::go_quote;

/// A field's allowed range and names (robfig/cron `bounds`).
struct Bounds {
    min: i64,
    max: i64,
    names: &'static [&'static str],
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DAYS_OF_MONTH: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
/// Names map to their index plus `min`.
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ],
};
const DAYS_OF_WEEK: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
};

/// `time.LoadLocation`: `Err` is Go's error text.
pub(crate) fn load_location(name: &str) -> Result<(), String> {
    if name.is_empty() || name == "UTC" || name == "Local" {
        return Ok(());
    }
    if name.contains("..") || name.starts_with('/') || name.starts_with('\\') {
        return Err("time: invalid location name".into());
    }
    // kube-apiserver carries its own time zone database; where this machine has none, every
    // name would be unknown, so none is refused.
    if jiff::tz::db().is_definitively_empty() {
        return Ok(());
    }
    // Go looks names up case-sensitively; jiff's database does not.
    match jiff::tz::TimeZone::get(name) {
        Ok(tz) if tz.iana_name() == Some(name) => Ok(()),
        _ => Err(format!("unknown time zone {name}")),
    }
}

/// `cron.ParseStandard`: `Err` is the parser's error text.
pub(crate) fn parse_standard(spec: &str) -> Result<(), String> {
    if spec.is_empty() {
        return Err("empty spec string".into());
    }
    let mut spec = spec;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        // The parser takes the location up to the first space (a spec without one makes it
        // panic, which kube-apiserver answers with a 500; here the whole rest is the location).
        let eq = spec.find('=').unwrap_or_default();
        let end = spec.find(' ').unwrap_or(spec.len());
        let location = &spec[eq + 1..end];
        load_location(location).map_err(|e| format!("provided bad location {location}: {e}"))?;
        spec = spec[end..].trim();
    }
    if spec.starts_with('@') {
        return descriptor(spec);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    for (field, bounds) in
        fields
            .iter()
            .zip([&MINUTES, &HOURS, &DAYS_OF_MONTH, &MONTHS, &DAYS_OF_WEEK])
    {
        for expr in field.split(',').filter(|e| !e.is_empty()) {
            range(expr, bounds)?;
        }
    }
    Ok(())
}

/// `parseDescriptor`.
fn descriptor(spec: &str) -> Result<(), String> {
    match spec {
        "@yearly" | "@annually" | "@monthly" | "@weekly" | "@daily" | "@midnight" | "@hourly" => {
            Ok(())
        }
        _ => match spec.strip_prefix("@every ") {
            Some(d) => go_duration(d).map_err(|e| format!("failed to parse duration {spec}: {e}")),
            None => Err(format!("unrecognized descriptor: {spec}")),
        },
    }
}

/// `getRange`: `N`, `N-M`, `*` or `?`, each optionally `/step`.
fn range(expr: &str, b: &Bounds) -> Result<(), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let (start, mut end) = if low_and_high[0] == "*" || low_and_high[0] == "?" {
        (b.min, b.max)
    } else {
        let start = int_or_name(low_and_high[0], b)?;
        match low_and_high.len() {
            1 => (start, start),
            2 => (start, int_or_name(low_and_high[1], b)?),
            _ => return Err(format!("too many hyphens: {expr}")),
        }
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = non_negative_int(range_and_step[1])?;
            // "N/step" means "N-max/step".
            if low_and_high.len() == 1 {
                end = b.max;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < b.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            b.min
        ));
    }
    if end > b.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            b.max
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(())
}

/// `parseIntOrName`.
fn int_or_name(expr: &str, b: &Bounds) -> Result<i64, String> {
    let lower = expr.to_lowercase();
    match b.names.iter().position(|n| *n == lower) {
        Some(i) => Ok(b.min + i as i64),
        None => non_negative_int(expr),
    }
}

/// `mustParseInt`: `strconv.Atoi`, then no negatives.
fn non_negative_int(expr: &str) -> Result<i64, String> {
    let digits = expr.strip_prefix(['+', '-']).unwrap_or(expr);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "failed to parse int from {expr}: strconv.Atoi: parsing {}: invalid syntax",
            go_quote(expr)
        ));
    }
    let n: i64 = expr.parse().map_err(|_| {
        format!(
            "failed to parse int from {expr}: strconv.Atoi: parsing {}: value out of range",
            go_quote(expr)
        )
    })?;
    if n < 0 {
        return Err(format!("negative number ({n}) not allowed: {expr}"));
    }
    Ok(n)
}

/// `time.ParseDuration`'s errors (a sequence of decimal numbers, each with a unit).
fn go_duration(s: &str) -> Result<(), String> {
    let invalid = || Err(format!("time: invalid duration {}", go_quote(s)));
    let mut rest = s.strip_prefix(['-', '+']).unwrap_or(s);
    if rest == "0" {
        return Ok(());
    }
    if rest.is_empty() {
        return invalid();
    }
    while !rest.is_empty() {
        if !rest.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
            return invalid();
        }
        let digits = |t: &str| t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let int = digits(rest);
        let mut after = &rest[int..];
        let mut frac = 0;
        if let Some(f) = after.strip_prefix('.') {
            frac = digits(f);
            after = &f[frac..];
        }
        if int == 0 && frac == 0 {
            return invalid();
        }
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_len);
        if unit.is_empty() {
            return Err(format!("time: missing unit in duration {}", go_quote(s)));
        }
        if !["ns", "us", "µs", "μs", "ms", "s", "m", "h"].contains(&unit) {
            return Err(format!(
                "time: unknown unit {} in duration {}",
                go_quote(unit),
                go_quote(s)
            ));
        }
        rest = next;
    }
    // What remains is an overflow past Go's int64 nanoseconds.
    match crate::schema::parse_go_duration(s) {
        Some(_) => Ok(()),
        None => invalid(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_schedules_parse_as_robfig_cron_does() {
        for ok in [
            "* * * * *",
            "*/5 0-6,22 1 jan-MAR mon-fri",
            "0 0 ? * SUN",
            "5/15 * * * *",
            "@hourly",
            "@every 1h30m",
            "CRON_TZ=Europe/Berlin 0 3 * * *",
            "TZ=UTC @daily",
        ] {
            assert_eq!(parse_standard(ok), Ok(()), "{ok}");
        }
        for (spec, msg) in [
            ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
            (
                "not a schedule",
                "expected exactly 5 fields, found 3: [not a schedule]",
            ),
            ("60 * * * *", "end of range (60) above maximum (59): 60"),
            ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
            (
                "5-1 * * * *",
                "beginning of range (5) beyond end of range (1): 5-1",
            ),
            (
                "*/0 * * * *",
                "step of range should be a positive number: */0",
            ),
            ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
            ("1/2/3 * * * *", "too many slashes: 1/2/3"),
            (
                "x * * * *",
                "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax",
            ),
            (
                "* * * foo *",
                "failed to parse int from foo: strconv.Atoi: parsing \"foo\": invalid syntax",
            ),
            ("@fortnightly", "unrecognized descriptor: @fortnightly"),
            (
                "@every 5x",
                "failed to parse duration @every 5x: time: unknown unit \"x\" in duration \"5x\"",
            ),
            (
                "@every 5",
                "failed to parse duration @every 5: time: missing unit in duration \"5\"",
            ),
            (
                "TZ=Mars/Olympus 0 * * * *",
                "provided bad location Mars/Olympus: unknown time zone Mars/Olympus",
            ),
        ] {
            assert_eq!(parse_standard(spec).unwrap_err(), msg, "{spec}");
        }
    }

    #[test]
    fn locations_load_as_go_loads_them() {
        assert_eq!(load_location("America/New_York"), Ok(()));
        assert_eq!(load_location(""), Ok(()));
        assert_eq!(
            load_location("america/new_york").unwrap_err(),
            "unknown time zone america/new_york"
        );
        assert_eq!(
            load_location("../etc/passwd").unwrap_err(),
            "time: invalid location name"
        );
    }
}
