//! The string formats kube-apiserver validates in custom resources (`date`, `date-time`, `byte`,
//! `uuid`, `ipv4`, `ipv6`, `cidr`, `mac`, `hostname`, `email`, `uri`, `duration`,
//! `k8s-short-name`, `k8s-long-name`, ...). Formats it does not check (`int32`, `int64`,
//! `float`, `double`, any unknown name) never get here: they accept any value of the type.

use std::net::{Ipv4Addr, Ipv6Addr};

use base64::Engine;

/// Whether `s` is a valid value of `format`.
pub fn is_valid(format: &str, s: &str) -> bool {
    match format {
        "date" => jiff::civil::Date::strptime("%Y-%m-%d", s).is_ok(),
        "date-time" | "datetime" => s.parse::<jiff::Timestamp>().is_ok(),
        "byte" => base64::engine::general_purpose::STANDARD.decode(s).is_ok(),
        "uuid" | "uuid3" | "uuid4" | "uuid5" => is_uuid(format, s),
        "ipv4" => s.contains('.') && s.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => s.contains(':') && s.parse::<Ipv6Addr>().is_ok(),
        "cidr" => is_cidr(s),
        "mac" => is_mac(s),
        "hostname" => is_hostname(s),
        "email" => is_email(s),
        "uri" => is_uri(s),
        "duration" => is_duration(s),
        "k8s-short-name" => is_dns_label(s),
        "k8s-long-name" => {
            s.len() <= 253 && !s.is_empty() && s.split('.').all(is_dns_label_any_length)
        }
        "hexcolor" => is_hex_color(s),
        "bsonobjectid" => s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit()),
        "ssn" => is_ssn(s),
        _ => true,
    }
}

fn is_uuid(format: &str, s: &str) -> bool {
    let hex: String = s.chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return false;
    }
    let groups: Vec<&str> = s.split('-').collect();
    if groups.len() != 1 && groups.iter().map(|g| g.len()).collect::<Vec<_>>() != [8, 4, 4, 4, 12] {
        return false;
    }
    let version = hex.as_bytes()[12];
    let variant = hex.as_bytes()[16].to_ascii_lowercase();
    let good_variant = matches!(variant, b'8' | b'9' | b'a' | b'b');
    match format {
        "uuid3" => version == b'3',
        "uuid4" => version == b'4' && good_variant,
        "uuid5" => version == b'5' && good_variant,
        _ => true,
    }
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    if ip.parse::<Ipv4Addr>().is_ok() {
        bits <= 32
    } else {
        ip.parse::<Ipv6Addr>().is_ok() && bits <= 128
    }
}

fn is_mac(s: &str) -> bool {
    let parts: Vec<&str> = s.split([':', '-']).collect();
    matches!(parts.len(), 6 | 8 | 20)
        && parts
            .iter()
            .all(|p| p.len() == 2 && p.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn is_dns_label_any_length(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn is_dns_label(s: &str) -> bool {
    s.len() <= 63 && is_dns_label_any_length(s)
}

fn is_hostname(s: &str) -> bool {
    s.len() <= 255
        && !s.is_empty()
        && s.trim_end_matches('.').split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
}

fn is_email(s: &str) -> bool {
    let s = match (s.find('<'), s.rfind('>')) {
        (Some(a), Some(b)) if a < b => &s[a + 1..b],
        _ => s,
    };
    match s.rsplit_once('@') {
        Some((local, domain)) => !local.is_empty() && !domain.is_empty() && !s.contains(' '),
        None => false,
    }
}

/// As Go's `url.ParseRequestURI`: an absolute URI (with a scheme) or an absolute path.
fn is_uri(s: &str) -> bool {
    if s.starts_with('/') {
        return !s.contains(' ');
    }
    match s.split_once(':') {
        Some((scheme, rest)) => {
            scheme
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_alphabetic())
                && scheme
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
                && !rest.is_empty()
                && !s.contains(' ')
        }
        None => false,
    }
}

/// A Go duration (`1h30m`, `250ms`, `-1.5h`) or a Scala-style one (`3 days`).
fn is_duration(s: &str) -> bool {
    let go = {
        let t = s.strip_prefix(['-', '+']).unwrap_or(s);
        let mut rest = t;
        let mut ok = !t.is_empty() || s == "0";
        while ok && !rest.is_empty() {
            let num_end = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(rest.len());
            let unit_end = rest[num_end..]
                .find(|c: char| c.is_ascii_digit() || c == '.')
                .map_or(rest.len(), |i| num_end + i);
            let unit = &rest[num_end..unit_end];
            ok = num_end > 0 && matches!(unit, "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h");
            rest = &rest[unit_end..];
        }
        ok || t == "0"
    };
    go || {
        let mut parts = s.split_whitespace();
        let n = parts.next().is_some_and(|n| n.parse::<u64>().is_ok());
        let unit = parts.next().map(|u| u.trim_end_matches('s'));
        n && parts.next().is_none()
            && matches!(
                unit,
                Some(
                    "ns" | "nano"
                        | "nanosecond"
                        | "us"
                        | "micro"
                        | "microsecond"
                        | "ms"
                        | "milli"
                        | "millisecond"
                        | "s"
                        | "second"
                        | "m"
                        | "minute"
                        | "h"
                        | "hour"
                        | "d"
                        | "day"
                        | "w"
                        | "week"
                )
            )
    }
}

fn is_hex_color(s: &str) -> bool {
    let h = s.strip_prefix('#').unwrap_or(s);
    (h.len() == 3 || h.len() == 6) && h.bytes().all(|b| b.is_ascii_hexdigit())
}

fn is_ssn(s: &str) -> bool {
    let digits: String = s.chars().filter(|c| c.is_ascii_digit()).collect();
    digits.len() == 9
        && s.chars()
            .all(|c| c.is_ascii_digit() || c == '-' || c == ' ')
}

#[cfg(test)]
mod tests {
    use super::is_valid;

    #[test]
    fn dates_and_times_follow_rfc3339() {
        assert!(is_valid("date", "2024-02-29"));
        assert!(!is_valid("date", "2023-02-29"));
        assert!(is_valid("date-time", "2024-01-01T10:00:00Z"));
        assert!(!is_valid("date-time", "yesterday"));
    }

    #[test]
    fn addresses_parse_as_go_parses_them() {
        assert!(is_valid("ipv4", "10.0.0.1"));
        assert!(!is_valid("ipv4", "::1"));
        assert!(is_valid("cidr", "10.0.0.0/8"));
        assert!(!is_valid("cidr", "10.0.0.0/33"));
        assert!(is_valid("mac", "00:1b:63:84:45:e6"));
    }

    #[test]
    fn durations_accept_go_and_scala_forms() {
        assert!(is_valid("duration", "1h30m"));
        assert!(is_valid("duration", "3 days"));
        assert!(!is_valid("duration", "soon"));
    }
}
