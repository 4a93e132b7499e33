//! Ordering resourceVersions, as Kubernetes 1.35 made them comparable (KEP-5504, client-go's
//! `CompareResourceVersion`): two resourceVersions of objects of the same resource, each a
//! positive decimal integer without leading zeros, order as those integers. Anything else
//! compares only for equality, as before that rule.

use std::cmp::Ordering;

/// Whether `rv` has the form that orders: digits only, no leading zero, not `0`.
fn comparable(rv: &str) -> bool {
    !rv.is_empty() && !rv.starts_with('0') && rv.bytes().all(|b| b.is_ascii_digit())
}

/// How resourceVersion `a` orders against `b` (of the same resource), or `None` when either is
/// not of the comparable form. Integers of any length compare (no overflow).
pub fn compare(a: &str, b: &str) -> Option<Ordering> {
    (comparable(a) && comparable(b)).then(|| a.len().cmp(&b.len()).then_with(|| a.cmp(b)))
}

/// Whether an object at resourceVersion `seen` shows a write that produced `written`: the
/// same version, or a later one of the comparable form.
pub fn includes(seen: &str, written: &str) -> bool {
    seen == written || compare(seen, written).is_some_and(Ordering::is_ge)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_order_by_value_not_by_text() {
        assert_eq!(compare("9", "10"), Some(Ordering::Less));
        assert_eq!(compare("10", "9"), Some(Ordering::Greater));
        assert_eq!(compare("42", "42"), Some(Ordering::Equal));
    }

    #[test]
    fn integers_longer_than_u64_still_compare() {
        assert_eq!(
            compare("99999999999999999999999", "100000000000000000000000"),
            Some(Ordering::Less)
        );
    }

    #[test]
    fn anything_but_a_positive_integer_without_leading_zeros_does_not_order() {
        for odd in ["", "0", "007", "12a", "-3", "1.5"] {
            assert_eq!(compare(odd, "5"), None, "{odd:?}");
            assert_eq!(compare("5", odd), None, "{odd:?}");
        }
    }

    #[test]
    fn a_later_or_equal_version_includes_the_write() {
        assert!(includes("12", "11"));
        assert!(includes("11", "11"));
        assert!(!includes("10", "11"));
    }

    #[test]
    fn opaque_versions_include_a_write_only_when_equal() {
        assert!(includes("abc", "abc"));
        assert!(!includes("abd", "abc"));
        assert!(!includes("12", ""));
    }
}
