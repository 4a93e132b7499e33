//! Kubernetes' CEL semver library (`k8s.io/apiserver/pkg/cel/library/semverlib.go`):
//! `semver(string[, normalize])`, `isSemver(string[, normalize])` and the methods `major`,
//! `minor`, `patch`, `compareTo`, `isLessThan`, `isGreaterThan`. Versions are strict
//! `MAJOR.MINOR.PATCH[-pre][+build]`; with `normalize`, a leading `v` is dropped, missing minor
//! and patch become 0 and leading zeros are removed first.

use std::sync::Arc;

use cel::objects::Opaque;

/// A semantic version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Semver(pub semver::Version);

impl Opaque for Semver {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Semver"
    }
}

impl Semver {
    /// Parses `text`, normalized first when asked.
    pub fn parse(text: &str, normalize: bool) -> Result<Self, String> {
        let text = if normalize {
            normalized(text)
        } else {
            text.to_owned()
        };
        semver::Version::parse(&text)
            .map(Semver)
            .map_err(|e| format!("could not parse {text:?} as semver: {e}"))
    }

    /// The version as a CEL value.
    pub fn into_cel(self) -> cel::Value {
        cel::Value::Opaque(Arc::new(self))
    }
}

/// `v1.2` -> `1.2.0`, `01.02.03` -> `1.2.3`; pre-release and build parts are kept.
fn normalized(text: &str) -> String {
    let text = text.strip_prefix('v').unwrap_or(text);
    let cut = text.find(['-', '+']).unwrap_or(text.len());
    let (core, rest) = text.split_at(cut);
    let mut parts: Vec<String> = core
        .split('.')
        .map(|p| {
            let trimmed = p.trim_start_matches('0');
            if trimmed.is_empty() && !p.is_empty() {
                "0".to_owned()
            } else {
                trimmed.to_owned()
            }
        })
        .collect();
    while parts.len() < 3 {
        parts.push("0".to_owned());
    }
    format!("{}{rest}", parts.join("."))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn strict_parsing_needs_three_parts() {
        assert!(Semver::parse("1.2.3-rc.1+build", false).is_ok());
        assert!(Semver::parse("1.2", false).is_err());
        assert!(Semver::parse("v1.2.3", false).is_err());
    }

    #[test]
    fn normalizing_drops_v_pads_and_strips_leading_zeros() {
        assert_eq!(normalized("v1.2"), "1.2.0");
        assert_eq!(normalized("01.002.0-rc.1"), "1.2.0-rc.1");
        assert_eq!(
            Semver::parse("v1", true).unwrap().0,
            semver::Version::new(1, 0, 0)
        );
    }
}
