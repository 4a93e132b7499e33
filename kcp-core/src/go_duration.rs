//! Durations as Go writes them (`1h30m`, `1.5s`, `300ms`, `-2us`), read as Go's
//! `time.ParseDuration` reads them: for sprig's duration functions in templates, and for the
//! duration literals kube-apiserver checks in CEL rules.

/// Go's `time.ParseDuration`, in nanoseconds; `None` where Go returns an error.
pub fn parse(s: &str) -> Option<i64> {
    let (negative, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..number_end];
        if number.is_empty() || number == "." {
            return None;
        }
        let value: f64 = number.parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        total += value * scale;
    }
    if total >= 9_223_372_036_854_775_808.0 {
        return None;
    }
    let ns = total.round() as i64;
    Some(if negative { -ns } else { ns })
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn durations_read_as_go_reads_them() {
        assert_eq!(parse("1h30m"), Some(5_400_000_000_000));
        assert_eq!(parse("-1.5s"), Some(-1_500_000_000));
        assert_eq!(parse("0"), Some(0));
        assert_eq!(parse("1"), None);
        assert_eq!(parse(""), None);
        assert_eq!(parse("1d"), None);
    }
}
