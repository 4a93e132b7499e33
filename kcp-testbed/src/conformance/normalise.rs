//! What differs between two correct servers is written alike before answers are compared:
//! the case's own names, uids, resourceVersions, continue tokens, identity hashes, generated
//! names, timestamps and server URLs.
//!
//! Values that only have to be *equal to each other* (uids, resourceVersions, tokens) become
//! ordinals in order of first appearance within a case (`<uid-1>`, `<rv-2>`), so "an update that
//! changes nothing keeps its resourceVersion" still shows. A list's or a bookmark's
//! resourceVersion is any later revision of the store (other writers share it on a real server):
//! it becomes `<rv>`.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::exchange::CaseNames;

/// Keys whose string values are times.
const TIMES: &[&str] = &[
    "acquireTime",
    "creationTimestamp",
    "deletionTimestamp",
    "deprecatedFirstTimestamp",
    "deprecatedLastTimestamp",
    "eventTime",
    "firstTimestamp",
    "lastHeartbeatTime",
    "lastProbeTime",
    "lastTimestamp",
    "lastTransitionTime",
    "lastUpdateTime",
    "renewTime",
    "time",
];

/// Keys whose values are replaced by ordinals.
const ORDINALS: &[(&str, &str)] = &[
    ("uid", "uid"),
    ("resourceVersion", "rv"),
    ("continue", "continue"),
    ("identityHash", "identity"),
];

/// Normalises the answers of one case on one server.
#[derive(Debug)]
pub struct Normaliser {
    literals: Vec<(String, String)>,
    ordinals: BTreeMap<&'static str, BTreeMap<String, usize>>,
    urls: regex::Regex,
}

impl Normaliser {
    /// A normaliser for a case run under `names`.
    pub fn new(names: &CaseNames) -> Normaliser {
        // Longest first: the workspace path holds the namespace's name.
        let mut literals = Vec::new();
        if let Some(cluster) = &names.cluster {
            literals.push((cluster.clone(), "{cluster}".to_string()));
        }
        if let Some(ws) = &names.workspace {
            literals.push((ws.clone(), "{ws}".to_string()));
        }
        literals.push((names.namespace.clone(), "{ns}".to_string()));
        Normaliser {
            literals,
            ordinals: BTreeMap::new(),
            // A proven-valid constant pattern.
            #[allow(clippy::unwrap_used)]
            urls: regex::Regex::new(r"https?://127\.0\.0\.1:[0-9]+").unwrap(),
        }
    }

    /// The answers of a case, in order.
    pub fn answers(&mut self, answers: &[Value]) -> Vec<Value> {
        answers.iter().map(|a| self.value(a, None)).collect()
    }

    fn value(&mut self, value: &Value, key: Option<&str>) -> Value {
        match value {
            Value::Object(map) => Value::Object(self.object(map)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.value(v, key)).collect()),
            Value::String(s) => Value::String(self.string(s, key)),
            other => other.clone(),
        }
    }

    fn object(&mut self, map: &Map<String, Value>) -> Map<String, Value> {
        self.learn_generated_name(map);
        let is_list = map.contains_key("items");
        let is_bookmark = map.get("type").and_then(Value::as_str) == Some("BOOKMARK");
        map.iter()
            .map(|(k, v)| {
                let any_revision = (is_list || is_bookmark) && k == "metadata";
                let v = match (any_revision, v) {
                    (true, Value::Object(meta)) => Value::Object(self.list_metadata(meta)),
                    _ if is_bookmark && k == "object" => self.bookmark_object(v),
                    _ => self.value(v, Some(k)),
                };
                (k.clone(), v)
            })
            .collect()
    }

    fn list_metadata(&mut self, meta: &Map<String, Value>) -> Map<String, Value> {
        meta.iter()
            .map(|(k, v)| match (k.as_str(), v) {
                ("resourceVersion", Value::String(s)) if !s.is_empty() => {
                    (k.clone(), Value::String("<rv>".into()))
                }
                _ => (k.clone(), self.value(v, Some(k))),
            })
            .collect()
    }

    fn bookmark_object(&mut self, object: &Value) -> Value {
        let mut object = object.clone();
        if let Some(rv) = object.pointer_mut("/metadata/resourceVersion") {
            *rv = Value::String("<rv>".into());
        }
        self.value(&object, None)
    }

    /// A `name` made from `generateName` is written as `<generateName><generated-n>`, here and
    /// wherever it appears later.
    fn learn_generated_name(&mut self, map: &Map<String, Value>) {
        let (Some(Value::String(prefix)), Some(Value::String(name))) =
            (map.get("generateName"), map.get("name"))
        else {
            return;
        };
        if prefix.is_empty() || !name.starts_with(prefix.as_str()) || name == prefix {
            return;
        }
        if self.literals.iter().any(|(from, _)| from == name) {
            return;
        }
        let n = self.ordinal("generated", name);
        self.literals
            .insert(0, (name.clone(), format!("{prefix}<generated-{n}>")));
    }

    fn string(&mut self, s: &str, key: Option<&str>) -> String {
        if let Some(key) = key {
            if TIMES.contains(&key) && !s.is_empty() {
                return "<time>".into();
            }
            if let Some((_, label)) = ORDINALS.iter().find(|(k, _)| *k == key)
                && !s.is_empty()
            {
                let n = self.ordinal(label, s);
                return format!("<{label}-{n}>");
            }
        }
        let mut out = s.to_string();
        for (from, to) in &self.literals {
            if out.contains(from.as_str()) {
                out = out.replace(from.as_str(), to);
            }
        }
        self.urls.replace_all(&out, "<server>").into_owned()
    }

    fn ordinal(&mut self, label: &'static str, value: &str) -> usize {
        let seen = self.ordinals.entry(label).or_default();
        let next = seen.len() + 1;
        *seen.entry(value.to_string()).or_insert(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn normaliser() -> Normaliser {
        Normaliser::new(&CaseNames {
            namespace: "cf-7".into(),
            workspace: Some("root:cf-7".into()),
            cluster: Some("2abc".into()),
        })
    }

    #[test]
    fn equal_resource_versions_stay_equal_and_different_ones_different() {
        let answers = normaliser().answers(&[
            json!({"metadata": {"resourceVersion": "10"}}),
            json!({"metadata": {"resourceVersion": "10"}}),
            json!({"metadata": {"resourceVersion": "12"}}),
        ]);
        assert_eq!(
            answers[0],
            json!({"metadata": {"resourceVersion": "<rv-1>"}})
        );
        assert_eq!(answers[1], answers[0]);
        assert_eq!(
            answers[2],
            json!({"metadata": {"resourceVersion": "<rv-2>"}})
        );
    }

    #[test]
    fn a_list_resource_version_is_any_revision() {
        let answer = &normaliser().answers(&[json!({
            "metadata": {"resourceVersion": "99"},
            "items": [{"metadata": {"resourceVersion": "98"}}]
        })])[0];
        assert_eq!(answer["metadata"]["resourceVersion"], "<rv>");
        assert_eq!(answer["items"][0]["metadata"]["resourceVersion"], "<rv-1>");
    }

    #[test]
    fn the_case_names_times_and_server_urls_are_written_alike() {
        let answer = &normaliser().answers(&[json!({
            "message": "configmaps \"x\" in root:cf-7 (2abc) namespace cf-7",
            "url": "https://127.0.0.1:6443/clusters/root:cf-7",
            "metadata": {"creationTimestamp": "2026-01-01T00:00:00Z", "deletionTimestamp": null}
        })])[0];
        assert_eq!(
            answer["message"],
            "configmaps \"x\" in {ws} ({cluster}) namespace {ns}"
        );
        assert_eq!(answer["url"], "<server>/clusters/{ws}");
        assert_eq!(answer["metadata"]["creationTimestamp"], "<time>");
        assert_eq!(answer["metadata"]["deletionTimestamp"], Value::Null);
    }

    #[test]
    fn a_generated_name_keeps_its_prefix_and_is_recognised_later() {
        let answers = normaliser().answers(&[
            json!({"metadata": {"generateName": "cm-", "name": "cm-x7k2p"}}),
            json!({"message": "configmaps \"cm-x7k2p\" not found"}),
        ]);
        assert_eq!(answers[0]["metadata"]["name"], "cm-<generated-1>");
        assert_eq!(
            answers[1]["message"],
            "configmaps \"cm-<generated-1>\" not found"
        );
    }
}
