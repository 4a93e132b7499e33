//! Go durations: kcp-operator normalizes duration strings the way Go's `metav1.Duration`
//! round-trips them (`1m` is written as `1m0s` in flags), so rendered arguments match upstream.

pub use kcp_core::go_duration::{format, parse};

/// `s` in Go's canonical form (`90m` -> `1h30m0s`); an unparsable value is kept as written
/// (the API server's schema accepts any string; kcp reports it at start-up).
pub fn normalize(s: &str) -> String {
    parse(s).map_or_else(|| s.to_owned(), format)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_writes_durations_as_go_does() {
        assert_eq!(normalize("1m"), "1m0s");
        assert_eq!(normalize("90m"), "1h30m0s");
        assert_eq!(normalize("8766h"), "8766h0m0s");
        assert_eq!(normalize("1.5s"), "1.5s");
        assert_eq!(normalize("500ms"), "500ms");
        assert_eq!(normalize("0"), "0s");
        assert_eq!(normalize("bogus"), "bogus");
    }

    #[test]
    fn a_duration_beyond_go_range_is_kept_as_written() {
        assert_eq!(normalize("2562048h"), "2562048h");
    }

    #[test]
    fn parse_rejects_missing_units() {
        assert_eq!(parse("10"), None);
        assert_eq!(parse(""), None);
        assert_eq!(parse("1h30m"), Some(5_400_000_000_000));
    }
}
