//! What differs between two correct servers is written alike before answers are compared:
//! the case's own names, uids, resourceVersions, continue tokens, identity hashes, logical
//! cluster names, generated names, timestamps and server URLs.
//!
//! Values that only have to be *equal to each other* become ordinals in order of first
//! appearance within a case (`<uid-1>`, `<rv-2>`), so "an update that changes nothing keeps its
//! resourceVersion" still shows. A first pass learns them over every answer of the case, so a
//! uid, hash or cluster name is recognised wherever it appears later, inside messages, label
//! keys and managedFields keys too. A list's or a bookmark's resourceVersion is any later
//! revision of the store (other writers share it on a real server): it becomes `<rv>`. On kcp
//! every resourceVersion does: its controllers write objects at moments of their own, so which
//! resourceVersions are equal is a race there.
//! managedFields entries are sorted by manager, operation and subresource (when two controllers
//! write one object, which came first is a race on a real server), a WorkspaceType's
//! virtualWorkspaces by type (kcp lists them in a random order). kcp's names of
//! its own system bindings (`tenancy.kcp.io-3eit2`) end in a random suffix per kcp process, and
//! long hex hashes (an initializer's label, of a name holding the case's cluster) become `<hash>`.
//! The store's current revision that a 410 Gone quotes is `<rv>`; the two a failed precondition
//! quotes are written as the fields holding them are. An RFC 3339 time inside a text
//! (a `CREATED AT` column) `<time>`; an OpenAPI document's hash keeps only its length. A Table's
//! age cells (an `Age` column, or one of type `date`) become `<age>`: whether a second has passed
//! since the object was made is a race on either server. A run of PEM certificates is
//! `<certificates>`: each server has a CA bundle of its own. kubectl's log lines keep their
//! level, not their time and process id.

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
    "lastPhaseTransitionTime",
    "lastTransitionTime",
    "lastUpdateTime",
    "renewTime",
    "time",
];

/// Keys whose values are replaced by ordinals, and whether the value is also replaced where it
/// appears inside other strings (long, random values only: not resourceVersions).
const ORDINALS: &[(&str, &str, bool)] = &[
    ("uid", "uid", true),
    ("UID", "uid", true),
    ("resourceVersion", "rv", false),
    ("continue", "continue", false),
    ("identityHash", "identity", true),
    ("storageVersionHash", "storage-hash", false),
    ("internal.apis.kcp.io/export", "export-label", true),
    ("internal.tenancy.kcp.io/cluster", "cluster", true),
    ("kcp.io/cluster", "cluster", true),
    ("cluster", "cluster", true),
];

/// Normalises the answers of one case on one server.
#[derive(Debug)]
pub struct Normaliser {
    /// Exact strings replaced inside every string and key, longest first.
    literals: Vec<(String, String)>,
    ordinals: BTreeMap<&'static str, BTreeMap<String, usize>>,
    urls: regex::Regex,
    uuids: regex::Regex,
    suffixes: regex::Regex,
    hashes: regex::Regex,
    /// The content hash an OpenAPI v3 index puts in each document's URL (its length kept: it
    /// tells the digest).
    document_hashes: regex::Regex,
    /// The store's current revision, quoted in a 410's message and in a 504's for a revision
    /// not reached yet.
    current_revision: regex::Regex,
    /// The two resourceVersions a failed precondition's message quotes.
    precondition_revisions: regex::Regex,
    /// An object's resourceVersion in a YAML answer (`resourceVersion: "228"`).
    yaml_revisions: regex::Regex,
    /// An RFC 3339 time inside a text (kubectl's `CREATED AT` column).
    timestamps: regex::Regex,
    /// PEM certificates one after another (a server's CA bundle, published in
    /// `kube-root-ca.crt`): each server has its own, of as many certificates as it trusts.
    certificates: regex::Regex,
    /// The header of a line kubectl logs (klog's `E1204 13:11:18.477932   15375 `): its time
    /// and process id.
    log_headers: regex::Regex,
    /// kcp's controllers write objects at moments of their own, so on kcp which
    /// resourceVersions are equal is a race: they are all `<rv>` there.
    revisions_as_ordinals: bool,
}

impl Normaliser {
    /// A normaliser for a case run under `names`.
    pub fn new(names: &CaseNames) -> Normaliser {
        let mut literals = Vec::new();
        if let Some(cluster) = &names.cluster {
            literals.push((cluster.clone(), "{cluster}".to_string()));
        }
        if let Some(ws) = &names.workspace {
            literals.push((ws.clone(), "{ws}".to_string()));
        }
        literals.push((names.namespace.clone(), "{ns}".to_string()));
        // Both patterns are proven-valid constants.
        #[allow(clippy::unwrap_used)]
        Normaliser {
            revisions_as_ordinals: names.workspace.is_none(),
            literals,
            ordinals: BTreeMap::new(),
            urls: regex::Regex::new(r"(https?://)?127\.0\.0\.1:[0-9]+").unwrap(),
            uuids: regex::Regex::new(
                r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            )
            .unwrap(),
            suffixes: regex::Regex::new(r"(\.kcp\.io)-[a-z0-9]{5}\b").unwrap(),
            hashes: regex::Regex::new(r"\b[0-9a-f]{32,}\b").unwrap(),
            document_hashes: regex::Regex::new(r"hash=([0-9A-F]{32,})").unwrap(),
            current_revision: regex::Regex::new(
                r"(too old resource version: [0-9]+ \(|Too large resource version: [0-9]+, current: )[0-9]+",
            )
            .unwrap(),
            precondition_revisions: regex::Regex::new(
                r"(ResourceVersion in (?:the precondition|record)) \(([0-9]+)\)",
            )
            .unwrap(),
            yaml_revisions: regex::Regex::new(r#"(resourceVersion: )"([0-9]+)""#).unwrap(),
            timestamps: regex::Regex::new(
                r"\b[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z\b",
            )
            .unwrap(),
            certificates: regex::Regex::new(
                r"(?:-----BEGIN CERTIFICATE-----\n[A-Za-z0-9+/=\n]*-----END CERTIFICATE-----\n?)+",
            )
            .unwrap(),
            log_headers: regex::Regex::new(
                r"(?m)^([IWEF])[0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6} +[0-9]+ ",
            )
            .unwrap(),
        }
    }

    /// The answers of a case, in order.
    pub fn answers(&mut self, answers: &[Value]) -> Vec<Value> {
        for answer in answers {
            self.learn(answer, None);
        }
        // Longest first, so a name holding another is replaced whole.
        self.literals
            .sort_by_key(|(from, _)| std::cmp::Reverse(from.len()));
        answers.iter().map(|a| self.value(a, None)).collect()
    }

    /// First pass: ordinals for every value that must only be equal to itself.
    fn learn(&mut self, value: &Value, key: Option<&str>) {
        match value {
            Value::Object(map) => {
                self.learn_generated_name(map);
                self.learn_default_binding_name(value);
                for (k, v) in map {
                    self.learn(v, Some(k));
                }
            }
            Value::Array(items) => items.iter().for_each(|v| self.learn(v, key)),
            Value::String(s) if !s.is_empty() => {
                if let Some(&(_, label, inside)) = key.and_then(ordinal_key) {
                    let n = self.ordinal(label, s);
                    if inside && !self.is_case_name(s) {
                        self.literals.push((s.clone(), format!("<{label}-{n}>")));
                    }
                }
                let found: Vec<String> = self
                    .uuids
                    .find_iter(s)
                    .map(|m| m.as_str().to_string())
                    .collect();
                for uuid in found {
                    let n = self.ordinal("uid", &uuid);
                    self.literals.push((uuid, format!("<uid-{n}>")));
                }
            }
            _ => {}
        }
    }

    fn is_case_name(&self, s: &str) -> bool {
        self.literals
            .iter()
            .any(|(from, to)| from == s && to.starts_with('{'))
    }

    /// A `name` made from `generateName` is written as `<generateName><generated-n>`.
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
            .push((name.clone(), format!("{prefix}<generated-{n}>")));
    }

    /// kcp names the binding of a workspace type's default export `<export>-<five characters>`
    /// hashed from the new workspace's logical cluster, which differs from run to run: such a
    /// name is written `<export>-<binding>`.
    fn learn_default_binding_name(&mut self, object: &Value) {
        let at = |pointer: &str| object.pointer(pointer).and_then(Value::as_str);
        let (name, export) = (at("/metadata/name"), at("/spec/reference/export/name"));
        // kcp's own exports (`tenancy.kcp.io`) are written `<suffix>` wherever they appear.
        let (Some(name), Some(export)) = (name, export) else {
            return;
        };
        if export.ends_with(".kcp.io") {
            return;
        }
        let generated = name
            .strip_prefix(export)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|hash| {
                hash.len() == 5
                    && hash
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            });
        if generated && !self.literals.iter().any(|(from, _)| from == name) {
            self.literals
                .push((name.to_string(), format!("{export}-<binding>")));
        }
    }

    fn value(&self, value: &Value, key: Option<&str>) -> Value {
        match value {
            Value::Object(map) => Value::Object(self.object(map)),
            Value::Array(items) if let Some(fields) = key.and_then(unordered) => {
                let mut items: Vec<Value> = items.iter().map(|v| self.value(v, None)).collect();
                items.sort_by_key(|item| sort_key(item, fields));
                Value::Array(items)
            }
            Value::Array(items) => Value::Array(items.iter().map(|v| self.value(v, key)).collect()),
            Value::String(s) => Value::String(self.string(s, key)),
            other => other.clone(),
        }
    }

    fn object(&self, map: &Map<String, Value>) -> Map<String, Value> {
        self.object_fields(&self.table_ages(map))
    }

    /// A Table with the cells of its age columns written `<age>`; any other object unchanged.
    fn table_ages(&self, map: &Map<String, Value>) -> Map<String, Value> {
        let (Some(Value::Array(columns)), Some(Value::Array(_))) =
            (map.get("columnDefinitions"), map.get("rows"))
        else {
            return map.clone();
        };
        let ages: Vec<usize> = columns
            .iter()
            .enumerate()
            .filter(|(_, c)| c["name"] == "Age" || c["type"] == "date")
            .map(|(i, _)| i)
            .collect();
        let mut map = map.clone();
        if let Some(Value::Array(rows)) = map.get_mut("rows") {
            for cells in rows.iter_mut().filter_map(|r| r.get_mut("cells")) {
                for &i in &ages {
                    if let Some(cell @ Value::String(_)) = cells.get_mut(i) {
                        *cell = Value::String("<age>".into());
                    }
                }
            }
        }
        map
    }

    fn object_fields(&self, map: &Map<String, Value>) -> Map<String, Value> {
        let is_list = map.contains_key("items");
        let is_bookmark = map.get("type").and_then(Value::as_str) == Some("BOOKMARK");
        map.iter()
            .map(|(k, v)| {
                let v = match v {
                    Value::Object(meta) if (is_list || is_bookmark) && k == "metadata" => {
                        Value::Object(self.list_metadata(meta))
                    }
                    _ if is_bookmark && k == "object" => self.bookmark_object(v),
                    _ => self.value(v, Some(k)),
                };
                (self.text(k), v)
            })
            .collect()
    }

    fn list_metadata(&self, meta: &Map<String, Value>) -> Map<String, Value> {
        meta.iter()
            .map(|(k, v)| match (k.as_str(), v) {
                ("resourceVersion", Value::String(s)) if !s.is_empty() => {
                    (k.clone(), Value::String("<rv>".into()))
                }
                _ => (k.clone(), self.value(v, Some(k))),
            })
            .collect()
    }

    fn bookmark_object(&self, object: &Value) -> Value {
        let mut object = object.clone();
        if let Some(rv) = object.pointer_mut("/metadata/resourceVersion") {
            *rv = Value::String("<rv>".into());
        }
        self.value(&object, None)
    }

    fn string(&self, s: &str, key: Option<&str>) -> String {
        if let Some(key) = key {
            if TIMES.contains(&key) && !s.is_empty() {
                return "<time>".into();
            }
            if key == "resourceVersion" && !self.revisions_as_ordinals && !s.is_empty() {
                return "<rv>".into();
            }
            if let Some(&(_, label, _)) = ordinal_key(key)
                && !s.is_empty()
                && !self.is_case_name(s)
                && let Some(n) = self.ordinals.get(label).and_then(|seen| seen.get(s))
            {
                return format!("<{label}-{n}>");
            }
        }
        self.text(s)
    }

    /// `s` with the learnt literals, uids and server URLs replaced.
    fn text(&self, s: &str) -> String {
        let mut out = s.to_string();
        for (from, to) in &self.literals {
            if out.contains(from.as_str()) {
                out = out.replace(from.as_str(), to);
            }
        }
        let out = self.urls.replace_all(&out, "<server>");
        let out = self.suffixes.replace_all(&out, "$1-<suffix>");
        let out = self.current_revision.replace_all(&out, "$1<rv>");
        let out = self
            .precondition_revisions
            .replace_all(&out, |c: &regex::Captures| {
                format!("{} ({})", &c[1], self.revision(&c[2]))
            });
        let out = self
            .yaml_revisions
            .replace_all(&out, |c: &regex::Captures| {
                format!("{}\"{}\"", &c[1], self.revision(&c[2]))
            });
        let out = self.timestamps.replace_all(&out, "<time>");
        let out = self.certificates.replace_all(&out, "<certificates>");
        let out = self.log_headers.replace_all(&out, "$1<time> <pid> ");
        let out = self
            .document_hashes
            .replace_all(&out, |c: &regex::Captures| {
                format!("hash=<hash-{}>", c[1].len())
            });
        self.hashes.replace_all(&out, "<hash>").into_owned()
    }

    /// A resourceVersion quoted inside a text, written as the field holding it is.
    fn revision(&self, rv: &str) -> String {
        match self.ordinals.get("rv").and_then(|seen| seen.get(rv)) {
            Some(n) if self.revisions_as_ordinals => format!("<rv-{n}>"),
            _ => "<rv>".to_string(),
        }
    }

    fn ordinal(&mut self, label: &'static str, value: &str) -> usize {
        let seen = self.ordinals.entry(label).or_default();
        let next = seen.len() + 1;
        *seen.entry(value.to_string()).or_insert(next)
    }
}

fn ordinal_key(key: &str) -> Option<&'static (&'static str, &'static str, bool)> {
    ORDINALS.iter().find(|(k, _, _)| *k == key)
}

/// Arrays whose order a real server does not keep stable, and the fields they are sorted by.
const UNORDERED: &[(&str, &[&str])] = &[
    ("managedFields", &["manager", "operation", "subresource"]),
    ("virtualWorkspaces", &["type"]),
];

fn unordered(key: &str) -> Option<&'static [&'static str]> {
    UNORDERED
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, fields)| *fields)
}

fn sort_key(entry: &Value, fields: &[&str]) -> Vec<String> {
    fields
        .iter()
        .map(|f| entry[*f].as_str().unwrap_or_default().to_string())
        .collect()
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
            kubeconfig: None,
        })
    }

    fn kube_normaliser() -> Normaliser {
        Normaliser::new(&CaseNames {
            namespace: "cf-7".into(),
            ..CaseNames::default()
        })
    }

    #[test]
    fn equal_resource_versions_stay_equal_and_different_ones_different() {
        let answers = kube_normaliser().answers(&[
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
        let answer = &kube_normaliser().answers(&[json!({
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
    fn a_generated_name_keeps_its_prefix_and_is_recognised_everywhere() {
        let answers = normaliser().answers(&[
            json!({"message": "configmaps \"cm-x7k2p\" seen first in a message"}),
            json!({"metadata": {"generateName": "cm-", "name": "cm-x7k2p"}}),
        ]);
        assert_eq!(answers[1]["metadata"]["name"], "cm-<generated-1>");
        assert_eq!(
            answers[0]["message"],
            "configmaps \"cm-<generated-1>\" seen first in a message"
        );
    }

    #[test]
    fn a_default_bindings_hashed_name_keeps_its_export_and_nothing_else_does() {
        let answers = normaliser().answers(&[
            json!({"metadata": {"name": "widgets-2bp1c"},
                   "spec": {"reference": {"export": {"name": "widgets"}}}}),
            json!({"metadata": {"name": "widgets-mine"},
                   "spec": {"reference": {"export": {"name": "widgets"}}}}),
        ]);
        assert_eq!(answers[0]["metadata"]["name"], "widgets-<binding>");
        assert_eq!(answers[1]["metadata"]["name"], "widgets-mine");
    }

    #[test]
    fn uids_and_hashes_are_recognised_in_messages_and_keys() {
        let uid = "5cf50be9-84f3-46fd-a79b-19ae51fba0db";
        let answers = normaliser().answers(&[
            json!({"metadata": {"uid": uid, "labels": {"internal.apis.kcp.io/export": "Hash1"}}}),
            json!({"message": format!("the UID in record ({uid})"),
                   "labels": {"claimed.internal.apis.kcp.io/Hash1": "x"},
                   "fields": {format!("k:{{\"uid\":\"{uid}\"}}"): {}}}),
        ]);
        assert_eq!(answers[0]["metadata"]["uid"], "<uid-1>");
        assert_eq!(answers[1]["message"], "the UID in record (<uid-1>)");
        assert!(
            answers[1]["labels"]
                .get("claimed.internal.apis.kcp.io/<export-label-1>")
                .is_some()
        );
        assert!(
            answers[1]["fields"]
                .get("k:{\"uid\":\"<uid-1>\"}")
                .is_some()
        );
    }

    #[test]
    fn the_current_revision_a_410_quotes_is_any_revision() {
        let answer = &kube_normaliser()
            .answers(&[json!({"message": "too old resource version: 1 (4711)"})])[0];
        assert_eq!(answer["message"], "too old resource version: 1 (<rv>)");
    }

    #[test]
    fn the_current_revision_a_too_large_revisions_504_quotes_is_any_revision() {
        let message = "Timeout: Too large resource version: 99999999999, current: 255";
        let answer = &kube_normaliser().answers(&[json!({ "message": message })])[0];
        assert_eq!(
            answer["message"],
            "Timeout: Too large resource version: 99999999999, current: <rv>"
        );
    }

    #[test]
    fn a_failed_preconditions_revisions_are_written_as_the_fields_holding_them() {
        let message = "the ResourceVersion in the precondition (7) does not match \
                       the ResourceVersion in record (8). The object might have been modified";
        let answers = kube_normaliser().answers(&[
            json!({"metadata": {"resourceVersion": "7"}}),
            json!({"metadata": {"resourceVersion": "8"}}),
            json!({"message": message}),
        ]);
        assert_eq!(
            answers[2]["message"],
            "the ResourceVersion in the precondition (<rv-1>) does not match \
             the ResourceVersion in record (<rv-2>). The object might have been modified"
        );
    }

    #[test]
    fn a_document_hash_keeps_only_its_length() {
        let url = format!("/openapi/v3/api/v1?hash={}", "AB".repeat(64));
        let answer = &kube_normaliser().answers(&[json!({"url": url})])[0];
        assert_eq!(answer["url"], "/openapi/v3/api/v1?hash=<hash-128>");
    }

    #[test]
    fn on_kcp_every_resource_version_is_any_revision() {
        let answer = &normaliser().answers(&[json!({"metadata": {"resourceVersion": "10"}})])[0];
        assert_eq!(answer["metadata"]["resourceVersion"], "<rv>");
    }

    #[test]
    fn managed_fields_are_ordered_by_manager() {
        let answer = &normaliser().answers(&[json!({"metadata": {"managedFields": [
            {"manager": "kcp", "operation": "Update"},
            {"manager": "alice", "operation": "Apply"},
        ]}})])[0];
        assert_eq!(answer["metadata"]["managedFields"][0]["manager"], "alice");
    }

    #[test]
    fn a_tables_age_cells_are_written_as_an_age() {
        let answers = kube_normaliser().answers(&[json!({
            "kind": "Table",
            "columnDefinitions": [
                {"name": "Name", "type": "string"},
                {"name": "Age", "type": "string"},
                {"name": "Seen", "type": "date"},
            ],
            "rows": [{"cells": ["one", "1s", "3m"]}, {"cells": ["two", "0s", null]}],
        })]);
        assert_eq!(
            answers[0]["rows"],
            json!([{"cells": ["one", "<age>", "<age>"]}, {"cells": ["two", "<age>", null]}])
        );
    }
}
