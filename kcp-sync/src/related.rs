//! Locating related objects (upstream §4.7), the pure part: which names (and namespaces) on
//! the origin side pair with which on the destination side, from the two primaries (the kcp
//! object and its local copy).
//!
//! * `reference`: a path into both primaries; arrays give one value per element; values are
//!   trimmed and rewritten by the optional regex; both lists must have the same length and
//!   pairs with an empty side are skipped.
//! * `template`: rendered against the origin primary (`.Side` = the origin) and against the
//!   destination primary (`.Side` = the other side); an empty result on either side means none.
//! * `selector`: `matchLabels` keys and values containing `{{` are templates over
//!   `.LocalObject`, `.RemoteObject`, `.ClusterName`, `.ClusterPath` (keys that render empty
//!   are dropped); each selected origin name is rewritten for the destination by a regex or a
//!   template (`.Value`, `.RelatedObject`, ...). Templates render into a fresh copy, never into
//!   the shared PublishedResource (upstream writes them back, so the first workspace's labels
//!   leak into every other one).

use std::collections::BTreeMap;

use kcp_core::TemplateEngine;
use regex::Regex;
use serde_json::{Value, json};

use crate::api::{
    RegularExpression, RelatedResourceObjectReference, RelatedResourceObjectSelector,
    RelatedResourceOrigin,
};
use crate::error::{Error, Result};
use crate::hash::write_string;
use crate::path;

/// The two primaries and where they live.
#[derive(Debug, Clone, Copy)]
pub struct Primaries<'a> {
    /// The primary on the service cluster (the local copy).
    pub local: &'a Value,
    /// The primary in kcp.
    pub remote: &'a Value,
    /// The kcp logical cluster.
    pub cluster: &'a str,
    /// The workspace path, when known.
    pub path: &'a str,
}

impl<'a> Primaries<'a> {
    /// The primary on the `origin` side and on the other side.
    pub fn by_origin(&self, origin: RelatedResourceOrigin) -> (&'a Value, &'a Value) {
        match origin {
            RelatedResourceOrigin::Kcp => (self.remote, self.local),
            RelatedResourceOrigin::Service => (self.local, self.remote),
        }
    }
}

fn side_name(origin: RelatedResourceOrigin) -> &'static str {
    match origin {
        RelatedResourceOrigin::Kcp => "kcp",
        RelatedResourceOrigin::Service => "service",
    }
}

fn other(origin: RelatedResourceOrigin) -> RelatedResourceOrigin {
    match origin {
        RelatedResourceOrigin::Kcp => RelatedResourceOrigin::Service,
        RelatedResourceOrigin::Service => RelatedResourceOrigin::Kcp,
    }
}

fn template_error(location: &str, err: impl std::fmt::Display) -> Error {
    Error::Template {
        location: location.to_owned(),
        message: err.to_string(),
    }
}

/// Applies a Go-style regex replacement (an empty pattern means "use the replacement").
pub fn apply_regex(location: &str, re: &RegularExpression, value: &str) -> Result<String> {
    if re.pattern.is_empty() {
        return Ok(re.replacement.clone());
    }
    let compiled = Regex::new(&re.pattern).map_err(|e| Error::Template {
        location: format!("{location}.regex.pattern"),
        message: e.to_string(),
    })?;
    Ok(compiled
        .replace_all(value, re.replacement.as_str())
        .into_owned())
}

fn reference_values(
    location: &str,
    reference: &RelatedResourceObjectReference,
    primary: &Value,
) -> Result<Vec<String>> {
    let values = match path::get(primary, &reference.path) {
        None | Some(Value::Null) => vec![],
        Some(Value::Array(items)) => items.iter().map(string_of).collect(),
        Some(other) => vec![string_of(&other)],
    };
    values
        .into_iter()
        .map(|v| {
            let v = v.trim().to_owned();
            match &reference.regex {
                Some(re) if !v.is_empty() => apply_regex(location, re, &v),
                _ => Ok(v),
            }
        })
        .collect()
}

fn string_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Whether a reference `path` can find anything in objects of `crd`: `Err` (the reason) when
/// the schema of every version lacks the field it names. Only plain keys and `#` (every array
/// item) are followed; a path with gjson's other syntax, `metadata`, and schemas that keep
/// unknown fields or have additional properties are taken as possibly matching.
pub fn reference_in_schema(crd: &Value, path: &str) -> std::result::Result<(), String> {
    let special = |c: char| "*?()@|!=<>[]{}\\,".contains(c);
    let segments: Vec<&str> = path.split('.').collect();
    if path.contains(special) || segments.first() == Some(&"metadata") {
        return Ok(());
    }
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut missing = None;
    for version in &versions {
        let Some(schema) = version.pointer("/schema/openAPIV3Schema") else {
            return Ok(());
        };
        match missing_segment(schema, &segments) {
            None => return Ok(()),
            Some(at) => missing = Some(at),
        }
    }
    let kind = crd.pointer("/spec/names/kind").and_then(Value::as_str);
    match missing {
        Some(at) => Err(format!(
            "{path:?} matches nothing: {} has no field {}",
            kind.unwrap_or("the kind"),
            segments[..=at].join(".")
        )),
        None => Ok(()),
    }
}

/// The index of the first segment `schema` has no field for, `None` when it may have all.
fn missing_segment(schema: &Value, segments: &[&str]) -> Option<usize> {
    let mut node = schema;
    for (i, segment) in segments.iter().enumerate() {
        if node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
            return None;
        }
        let is_index = *segment == "#" || segment.parse::<usize>().is_ok();
        if let (true, Some(items)) = (is_index, node.get("items")) {
            node = items;
            continue;
        }
        if let Some(next) = node.pointer(&format!("/properties/{segment}")) {
            node = next;
            continue;
        }
        match node.get("additionalProperties") {
            Some(Value::Bool(false)) | None => return Some(i),
            Some(Value::Object(_)) | Some(_) => return None,
        }
    }
    None
}

/// The (origin, destination) pairs a `reference` gives.
pub fn reference_pairs(
    location: &str,
    reference: &RelatedResourceObjectReference,
    origin_primary: &Value,
    dest_primary: &Value,
) -> Result<Vec<(String, String)>> {
    let origin = reference_values(location, reference, origin_primary)?;
    let dest = reference_values(location, reference, dest_primary)?;
    if origin.len() != dest.len() {
        return Err(Error::InvalidObject {
            object: location.to_owned(),
            field: reference.path.clone(),
            reason: format!(
                "the path gives {} values on the origin side and {} on the destination side",
                origin.len(),
                dest.len()
            ),
        });
    }
    Ok(origin
        .into_iter()
        .zip(dest)
        .filter(|(o, d)| !o.is_empty() && !d.is_empty())
        .collect())
}

/// The (origin, destination) pair a `template` gives, `None` when either side is empty.
pub fn template_pair(
    engine: &TemplateEngine,
    location: &str,
    template: &str,
    origin: RelatedResourceOrigin,
    primaries: &Primaries<'_>,
) -> Result<Option<(String, String)>> {
    let (origin_primary, dest_primary) = primaries.by_origin(origin);
    let render = |side: RelatedResourceOrigin, object: &Value| {
        let context = json!({
            "Side": side_name(side),
            "Object": object,
            "ClusterName": primaries.cluster,
            "ClusterPath": primaries.path,
        });
        engine
            .render(location, template, &context)
            .map(|s| s.trim().to_owned())
            .map_err(|e| template_error(location, e))
    };
    let o = render(origin, origin_primary)?;
    let d = render(other(origin), dest_primary)?;
    Ok((!o.is_empty() && !d.is_empty()).then_some((o, d)))
}

/// The label selector (`k=v,...`) of a `selector` locator, its templates rendered.
pub fn selector_string(
    engine: &TemplateEngine,
    location: &str,
    selector: &RelatedResourceObjectSelector,
    primaries: &Primaries<'_>,
) -> Result<String> {
    let context = json!({
        "LocalObject": primaries.local,
        "RemoteObject": primaries.remote,
        "ClusterName": primaries.cluster,
        "ClusterPath": primaries.path,
    });
    let render = |s: &str| -> Result<String> {
        if !crate::naming::is_go_template(s) {
            return Ok(s.to_owned());
        }
        engine
            .render(location, s, &context)
            .map(|r| r.trim().to_owned())
            .map_err(|e| template_error(location, e))
    };
    let mut labels = BTreeMap::new();
    for (k, v) in selector.match_labels.iter().flatten() {
        let key = render(k)?;
        if !key.is_empty() {
            labels.insert(key, render(v)?);
        }
    }
    let mut parts: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    for req in selector.match_expressions.iter().flatten() {
        let values = req.values.clone().unwrap_or_default().join(",");
        parts.push(match req.operator.as_str() {
            "In" => format!("{} in ({values})", req.key),
            "NotIn" => format!("{} notin ({values})", req.key),
            "Exists" => req.key.clone(),
            "DoesNotExist" => format!("!{}", req.key),
            other => {
                return Err(Error::InvalidObject {
                    object: location.to_owned(),
                    field: "matchExpressions.operator".into(),
                    reason: format!("unknown operator {other:?}"),
                });
            }
        });
    }
    Ok(parts.join(","))
}

/// The destination name of a selected origin object: `rewrite.regex` or `rewrite.template`
/// (`.Value` = the origin name); without either, the origin name.
pub fn rewrite_name(
    engine: &TemplateEngine,
    location: &str,
    selector: &RelatedResourceObjectSelector,
    value: &str,
    related: Option<&Value>,
    primaries: &Primaries<'_>,
) -> Result<String> {
    if let Some(re) = &selector.rewrite.regex {
        return apply_regex(location, re, value);
    }
    let Some(template) = &selector.rewrite.template else {
        return Ok(value.to_owned());
    };
    let context = json!({
        "Value": value,
        "RelatedObject": related.cloned().unwrap_or(Value::Null),
        "LocalObject": primaries.local,
        "RemoteObject": primaries.remote,
        "ClusterName": primaries.cluster,
        "ClusterPath": primaries.path,
    });
    engine
        .render(location, &template.template, &context)
        .map(|r| r.trim().to_owned())
        .map_err(|e| template_error(location, e))
}

/// The annotation key on the kcp primary for a service-origin related copy:
/// `related-resources.syncagent.kcp.io/<identifier>.<index>`.
pub fn annotation_key(identifier: &str, index: usize) -> String {
    format!(
        "{}{identifier}.{index}",
        crate::metadata::RELATED_OBJECT_ANNOTATION_PREFIX
    )
}

/// The `related-resources.syncagent.kcp.io/*` annotations of `primary` not in `wanted`.
pub fn stale_annotations(primary: &Value, wanted: &[String]) -> Vec<String> {
    primary
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|annotations| annotations.keys())
        .filter(|k| k.starts_with(crate::metadata::RELATED_OBJECT_ANNOTATION_PREFIX))
        .filter(|k| !wanted.contains(k))
        .cloned()
        .collect()
}

/// The annotation value: Go's JSON of `{namespace?, name, apiVersion, kind}`.
pub fn annotation_value(namespace: &str, name: &str, api_version: &str, kind: &str) -> String {
    let mut out = String::from("{");
    if !namespace.is_empty() {
        out.push_str("\"namespace\":");
        write_string(&mut out, namespace);
        out.push(',');
    }
    for (i, (k, v)) in [("name", name), ("apiVersion", api_version), ("kind", kind)]
        .into_iter()
        .enumerate()
    {
        if i > 0 {
            out.push(',');
        }
        write_string(&mut out, k);
        out.push(':');
        write_string(&mut out, v);
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{RelatedResourceSelectorRewrite, TemplateExpression};

    fn reference(path: &str) -> RelatedResourceObjectReference {
        RelatedResourceObjectReference {
            path: path.into(),
            regex: None,
        }
    }

    #[test]
    fn only_related_annotations_nobody_wants_are_stale() {
        let primary = json!({"metadata": {"annotations": {
            "related-resources.syncagent.kcp.io/creds.0": "{}",
            "related-resources.syncagent.kcp.io/creds.1": "{}",
            "related-resources.syncagent.kcp.io/old.0": "{}",
            "example.com/mine": "x",
        }}});
        let wanted = vec!["related-resources.syncagent.kcp.io/creds.0".to_owned()];
        assert_eq!(
            stale_annotations(&primary, &wanted),
            vec![
                "related-resources.syncagent.kcp.io/creds.1".to_owned(),
                "related-resources.syncagent.kcp.io/old.0".to_owned(),
            ]
        );
    }

    #[test]
    fn a_reference_pairs_the_values_of_both_primaries() {
        let pairs = reference_pairs(
            "r",
            &reference("spec.secretName"),
            &json!({"spec": {"secretName": " creds "}}),
            &json!({"spec": {"secretName": "creds-copy"}}),
        )
        .unwrap();
        assert_eq!(pairs, [("creds".to_owned(), "creds-copy".to_owned())]);
    }

    #[test]
    fn a_missing_or_empty_reference_finds_nothing() {
        let empty = json!({"spec": {"secretName": ""}});
        assert!(
            reference_pairs("r", &reference("spec.secretName"), &empty, &empty)
                .unwrap()
                .is_empty()
        );
        let missing = json!({"spec": {}});
        assert!(
            reference_pairs("r", &reference("spec.secretName"), &missing, &missing)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn reference_arrays_give_one_pair_per_element_and_skip_empty_items() {
        let obj = json!({"spec": {"secrets": [{"name": "a"}, {"name": ""}, {"name": "c"}]}});
        let pairs = reference_pairs("r", &reference("spec.secrets.#.name"), &obj, &obj).unwrap();
        assert_eq!(pairs, [("a".into(), "a".into()), ("c".into(), "c".into())]);
    }

    #[test]
    fn a_reference_path_no_version_has_is_refused_naming_the_missing_field() {
        let crd = json!({"spec": {"names": {"kind": "Database"}, "versions": [{"name": "v1",
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "secretName": {"type": "string"},
                    "users": {"type": "array", "items": {"type": "object", "properties": {"secret": {"type": "string"}}}},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}}}]}});
        for path in [
            "spec.secretName",
            "spec.users.#.secret",
            "spec.users.0.secret",
            "spec.labels.anything",
            "spec.free.any.thing",
            "metadata.name",
            "spec.users.#(secret==\"x\").secret",
        ] {
            assert_eq!(reference_in_schema(&crd, path), Ok(()), "{path}");
        }
        assert_eq!(
            reference_in_schema(&crd, "spec.credentials.secretName"),
            Err("\"spec.credentials.secretName\" matches nothing: Database has no field spec.credentials".into())
        );
        assert!(reference_in_schema(&crd, "spec.users.#.password").is_err());
    }

    #[test]
    fn reference_lists_of_different_length_are_an_error() {
        let a = json!({"l": ["x", "y"]});
        let b = json!({"l": ["x"]});
        assert!(reference_pairs("r", &reference("l"), &a, &b).is_err());
    }

    #[test]
    fn a_reference_regex_rewrites_each_value() {
        let mut r = reference("spec.secretName");
        r.regex = Some(RegularExpression {
            pattern: "^(.+)$".into(),
            replacement: "$1-tls".into(),
        });
        let obj = json!({"spec": {"secretName": "creds"}});
        assert_eq!(
            reference_pairs("r", &r, &obj, &obj).unwrap(),
            [("creds-tls".into(), "creds-tls".into())]
        );
    }

    fn primaries<'a>(local: &'a Value, remote: &'a Value) -> Primaries<'a> {
        Primaries {
            local,
            remote,
            cluster: "abc",
            path: "",
        }
    }

    #[test]
    fn a_template_renders_per_side() {
        let (local, remote) = (
            json!({"metadata": {"name": "l"}}),
            json!({"metadata": {"name": "r"}}),
        );
        let pair = template_pair(
            &TemplateEngine::new(),
            "t",
            "{{ .Side }}-{{ .Object.metadata.name }}",
            RelatedResourceOrigin::Kcp,
            &primaries(&local, &remote),
        )
        .unwrap();
        assert_eq!(pair, Some(("kcp-r".into(), "service-l".into())));
    }

    #[test]
    fn a_template_empty_on_one_side_finds_nothing() {
        let (local, remote) = (json!({}), json!({}));
        let pair = template_pair(
            &TemplateEngine::new(),
            "t",
            "{{ if eq .Side \"kcp\" }}x{{ end }}",
            RelatedResourceOrigin::Kcp,
            &primaries(&local, &remote),
        )
        .unwrap();
        assert_eq!(pair, None);
    }

    fn selector(labels: &[(&str, &str)]) -> RelatedResourceObjectSelector {
        RelatedResourceObjectSelector {
            match_labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            match_expressions: None,
            rewrite: RelatedResourceSelectorRewrite::default(),
        }
    }

    #[test]
    fn selector_templates_render_keys_and_values_and_drop_empty_keys() {
        let (local, remote) = (json!({}), json!({"metadata": {"name": "db"}}));
        let s = selector(&[
            ("ca-for", "{{ .RemoteObject.metadata.name }}"),
            ("{{ \"\" }}", "dropped"),
            ("len", "{{ .ClusterName | len }}"),
        ]);
        let out =
            selector_string(&TemplateEngine::new(), "s", &s, &primaries(&local, &remote)).unwrap();
        assert_eq!(out, "ca-for=db,len=3");
    }

    #[test]
    fn selector_templates_do_not_change_the_shared_spec() {
        let (local, remote) = (json!({}), json!({"metadata": {"name": "db"}}));
        let s = selector(&[("a", "{{ .RemoteObject.metadata.name }}")]);
        selector_string(&TemplateEngine::new(), "s", &s, &primaries(&local, &remote)).unwrap();
        assert_eq!(
            s.match_labels.unwrap()["a"],
            "{{ .RemoteObject.metadata.name }}"
        );
    }

    #[test]
    fn rewrite_template_sees_the_value() {
        let (local, remote) = (json!({}), json!({}));
        let mut s = selector(&[]);
        s.rewrite.template = Some(TemplateExpression {
            template: "{{ .Value }}-copy".into(),
        });
        let out = rewrite_name(
            &TemplateEngine::new(),
            "s",
            &s,
            "ca",
            None,
            &primaries(&local, &remote),
        )
        .unwrap();
        assert_eq!(out, "ca-copy");
    }

    #[test]
    fn annotation_keys_and_values_follow_upstream() {
        assert_eq!(
            annotation_key("creds", 0),
            "related-resources.syncagent.kcp.io/creds.0"
        );
        assert_eq!(
            annotation_value("ns", "n", "v1", "Secret"),
            r#"{"namespace":"ns","name":"n","apiVersion":"v1","kind":"Secret"}"#
        );
        assert_eq!(
            annotation_value("", "n", "v1", "Secret"),
            r#"{"name":"n","apiVersion":"v1","kind":"Secret"}"#
        );
    }
}
