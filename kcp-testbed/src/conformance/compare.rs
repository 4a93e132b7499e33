//! Field-by-field comparison of two normalised answer sequences, and the list of differences
//! kcp-sim is known to have (`differences.yaml`), each with its reason.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};

/// One field that differs: `path` is `/<step>/<pointer into the answer>` (steps 1-based).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    /// Where.
    pub path: String,
    /// kcp-sim's value (`None`: it has no such field).
    pub sim: Option<Value>,
    /// The real server's value.
    pub real: Option<Value>,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |v: &Option<Value>| v.as_ref().map_or("(absent)".to_string(), Value::to_string);
        write!(
            f,
            "{}: kcp-sim {} real {}",
            self.path,
            show(&self.sim),
            show(&self.real)
        )
    }
}

/// Every field where `sim` and `real` differ, in document order.
pub fn differences(sim: &[Value], real: &[Value]) -> Vec<Difference> {
    let mut out = Vec::new();
    let steps = sim.len().max(real.len());
    for i in 0..steps {
        walk(&format!("/{}", i + 1), sim.get(i), real.get(i), &mut out);
    }
    out
}

fn walk(path: &str, sim: Option<&Value>, real: Option<&Value>, out: &mut Vec<Difference>) {
    match (sim, real) {
        (Some(Value::Object(s)), Some(Value::Object(r))) => {
            let mut keys: Vec<&String> = s.keys().chain(r.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let child = format!("{path}/{}", k.replace('~', "~0").replace('/', "~1"));
                walk(&child, s.get(k), r.get(k), out);
            }
        }
        (Some(Value::Array(s)), Some(Value::Array(r))) => {
            for i in 0..s.len().max(r.len()) {
                walk(&format!("{path}/{i}"), s.get(i), r.get(i), out);
            }
        }
        (s, r) if s == r => {}
        (s, r) => out.push(Difference {
            path: path.to_string(),
            sim: s.cloned(),
            real: r.cloned(),
        }),
    }
}

/// A difference kcp-sim is known to have, with its reason (README's known differences).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Listed {
    /// `<file>/<case>`.
    pub case: String,
    /// A prefix of the differences' paths it covers (`/3/body/metadata/managedFields`).
    pub path: String,
    /// Why kcp-sim answers so.
    pub reason: String,
}

impl Listed {
    /// Reads the list (a YAML sequence).
    pub fn load(path: &Path) -> Result<Vec<Listed>> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::config(format!("reading {}", path.display()), e))?;
        serde_saphyr::from_str(&text)
            .map_err(|e| Error::config(format!("parsing {}", path.display()), e))
    }

    /// Whether this listing covers `difference` of `case`.
    pub fn covers(&self, case: &str, difference: &Difference) -> bool {
        self.case == case
            && (difference.path == self.path
                || difference.path.starts_with(&format!("{}/", self.path)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn differences_name_the_step_and_the_field() {
        let found = differences(
            &[json!({"status": 200, "body": {"a": [1, 2]}})],
            &[json!({"status": 201, "body": {"a": [1], "b": true}})],
        );
        let paths: Vec<&str> = found.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, ["/1/body/a/1", "/1/body/b", "/1/status"]);
        assert_eq!(found[0].real, None);
    }

    #[test]
    fn a_listing_covers_its_path_and_what_is_below_it_only() {
        let listed = Listed {
            case: "crud/x".into(),
            path: "/2/body/metadata".into(),
            reason: "r".into(),
        };
        let at = |path: &str| Difference {
            path: path.into(),
            sim: None,
            real: None,
        };
        assert!(listed.covers("crud/x", &at("/2/body/metadata/uid")));
        assert!(listed.covers("crud/x", &at("/2/body/metadata")));
        assert!(!listed.covers("crud/x", &at("/2/body/metadataX")));
        assert!(!listed.covers("crud/y", &at("/2/body/metadata")));
    }
}
