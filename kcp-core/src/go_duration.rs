//! Go durations (`1h30m`, `1.5s`, `300ms`, `-2us`): read as Go's `time.ParseDuration` reads
//! them, exactly, in integer nanoseconds, and written as `time.Duration.String` writes them. For
//! sprig's duration functions in templates, kcp-operator's duration flags and certificate
//! lifetimes, and the duration literals kube-apiserver checks in CEL rules.

/// Go's `time.ParseDuration`, in nanoseconds; `None` when `s` is not a Go duration (including
/// one beyond Go's range, about 292 years either way).
pub fn parse(s: &str) -> Option<i128> {
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
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, tail) = rest.split_at(end);
        let unit_end = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_end);
        let scale: i128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        total = total.checked_add(scaled(number, scale)?)?;
        rest = tail;
    }
    let total = if negative { -total } else { total };
    // A Go duration is an int64 of nanoseconds; Go refuses anything beyond as invalid.
    (i128::from(i64::MIN)..=i128::from(i64::MAX))
        .contains(&total)
        .then_some(total)
}

/// `number` (digits with an optional fraction) times `scale`, truncated like Go.
fn scaled(number: &str, scale: i128) -> Option<i128> {
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && frac.is_empty() {
        return None;
    }
    let whole: i128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let mut value = whole.checked_mul(scale)?;
    let mut unit = scale;
    for digit in frac.chars() {
        unit /= 10;
        value = value.checked_add(i128::from(digit.to_digit(10)?) * unit)?;
    }
    Some(value)
}

/// Go's `time.Duration.String` for nanoseconds: `1h2m3.5s`, `1.5ms`, `0s`.
pub fn format(ns: i128) -> String {
    if ns == 0 {
        return "0s".to_owned();
    }
    let sign = if ns < 0 { "-" } else { "" };
    let u = ns.unsigned_abs();
    if u < 1_000_000_000 {
        let (unit, scale) = match u {
            0..1_000 => ("ns", 1),
            1_000..1_000_000 => ("µs", 1_000),
            _ => ("ms", 1_000_000),
        };
        return format!("{sign}{}{unit}", fraction(u, scale));
    }
    let seconds = fraction(u % 60_000_000_000, 1_000_000_000);
    let minutes = u / 60_000_000_000;
    let mut out = sign.to_owned();
    if minutes > 0 {
        if minutes >= 60 {
            out.push_str(&format!("{}h", minutes / 60));
        }
        out.push_str(&format!("{}m", minutes % 60));
    }
    out.push_str(&format!("{seconds}s"));
    out
}

fn fraction(value: u128, scale: u128) -> String {
    let (whole, rest) = (value / scale, value % scale);
    if rest == 0 {
        return whole.to_string();
    }
    let digits = scale.to_string().len() - 1;
    let frac = format!("{rest:0digits$}");
    format!("{whole}.{}", frac.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_and_write_as_go_does() {
        assert_eq!(parse("1h30m"), Some(5_400_000_000_000));
        assert_eq!(parse("-1.5s"), Some(-1_500_000_000));
        assert_eq!(parse("0"), Some(0));
        assert_eq!(parse("1"), None);
        assert_eq!(parse(""), None);
        assert_eq!(parse("1d"), None);
        assert_eq!(format(5_400_000_000_000), "1h30m0s");
        assert_eq!(format(1_500_000), "1.5ms");
        assert_eq!(format(0), "0s");
    }

    /// An input written for the `operator_duration` fuzz target: two 26-digit hour counts
    /// overflowed the sum (a panic with overflow checks, a wrapped value without).
    #[test]
    fn durations_beyond_go_range_are_refused_instead_of_overflowing() {
        assert_eq!(
            parse("40000000000000000000000000h40000000000000000000000000h"),
            None
        );
        assert_eq!(parse("2562048h"), None);
        assert_eq!(
            parse("2562047h47m16.854775807s"),
            Some(i128::from(i64::MAX))
        );
        assert_eq!(
            parse("-2562047h47m16.854775808s"),
            Some(i128::from(i64::MIN))
        );
    }
}
