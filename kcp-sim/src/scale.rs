//! The `/scale` subresource: a workload's replicas read and written as an `autoscaling/v1`
//! Scale, as `kubectl scale` and autoscalers use it. Deployments and StatefulSets have it, and
//! so does every custom resource whose CRD version declares `subresources.scale` (its replicas
//! and selector then live at the paths the CRD names).
//!
//! kube-apiserver's ways, kept here: a builtin workload's Scale `status.selector` is its label
//! selector written as a string (`app=web,tier=front`); missing replicas read as 0; a write
//! through `/scale` changes only the spec replicas, and a Scale's resourceVersion is a
//! precondition. Who owns the replicas after it is [`crate::scale_fields`]'s.

use serde_json::{Map, Value, json};

use crate::patch;
use crate::schema::field::{FieldError, invalid_object};
use crate::semantics::PatchKind;
use crate::status::{ApiError, ApiResult};

/// Where a kind keeps what its Scale shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalePaths {
    /// The desired replicas (`.spec.replicas`).
    pub spec_replicas: String,
    /// The observed replicas (`.status.replicas`).
    pub status_replicas: String,
    /// Where the Scale's `status.selector` comes from.
    pub selector: SelectorSource,
}

/// The source of a Scale's `status.selector`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SelectorSource {
    /// A builtin workload's `spec.selector` (a LabelSelector), written as a string.
    SpecLabelSelector,
    /// A ReplicationController's `spec.selector` (a map of labels), written as a string.
    SpecLabels,
    /// A string field a CRD names in `labelSelectorPath`.
    Path(String),
    /// No selector.
    None,
}

impl ScalePaths {
    /// A Deployment's or StatefulSet's.
    pub fn workload() -> ScalePaths {
        ScalePaths {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            selector: SelectorSource::SpecLabelSelector,
        }
    }

    /// A ReplicationController's: its selector is a plain map of labels.
    pub fn replication_controller() -> ScalePaths {
        ScalePaths {
            selector: SelectorSource::SpecLabels,
            ..ScalePaths::workload()
        }
    }

    /// A CRD version's `subresources.scale`, if it has one.
    pub fn of_crd_version(version: &Value) -> Option<ScalePaths> {
        let scale = version.pointer("/subresources/scale")?;
        let path = |key: &str| scale.get(key).and_then(Value::as_str).map(String::from);
        Some(ScalePaths {
            spec_replicas: path("specReplicasPath")?,
            status_replicas: path("statusReplicasPath")?,
            selector: path("labelSelectorPath").map_or(SelectorSource::None, SelectorSource::Path),
        })
    }
}

/// The Scale of `object`.
pub fn render(paths: &ScalePaths, object: &Value) -> Value {
    let meta = |key: &str| object.pointer(&format!("/metadata/{key}")).cloned();
    let mut metadata = Map::new();
    for key in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(value) = meta(key) {
            metadata.insert(key.into(), value);
        }
    }
    let replicas = |path: &str| at(object, path).and_then(Value::as_i64).unwrap_or(0);
    let mut status = json!({"replicas": replicas(&paths.status_replicas)});
    let selector = match &paths.selector {
        SelectorSource::SpecLabelSelector => object.pointer("/spec/selector").map(format_selector),
        SelectorSource::SpecLabels => object
            .pointer("/spec/selector")
            .map(|labels| format_selector(&json!({"matchLabels": labels}))),
        SelectorSource::Path(path) => at(object, path).and_then(Value::as_str).map(String::from),
        SelectorSource::None => None,
    };
    if let Some(selector) = selector.filter(|s| !s.is_empty()) {
        status["selector"] = json!(selector);
    }
    // `spec.replicas` is `omitempty`, `status.replicas` is not.
    let desired = replicas(&paths.spec_replicas);
    let spec = if desired == 0 {
        json!({})
    } else {
        json!({"replicas": desired})
    };
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    })
}

/// `object` with the replicas of `scale` (a Scale a client sent), and the Scale's
/// resourceVersion as the write's precondition; a negative count is refused as kube-apiserver
/// refuses it, naming the Scale.
pub fn with_replicas(paths: &ScalePaths, object: &Value, scale: &Value) -> ApiResult<Value> {
    let name = scale
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let replicas = scale.pointer("/spec/replicas").cloned().unwrap_or(json!(0));
    if replicas.as_i64().is_none_or(|r| r < 0) {
        let error = FieldError::invalid(
            "spec.replicas",
            replicas,
            "must be greater than or equal to 0",
        );
        return Err(invalid_object("autoscaling", "Scale", name, &[error]));
    }
    let mut updated = object.clone();
    set_at(&mut updated, &paths.spec_replicas, replicas)?;
    let rv = scale
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|rv| !rv.is_empty());
    if let (Some(rv), Some(meta)) = (rv, updated.get_mut("metadata")) {
        meta["resourceVersion"] = json!(rv);
    }
    Ok(updated)
}

/// The Scale a patch makes of `current` (the Scale as read).
pub fn patched(current: &Value, kind: PatchKind, body: &Value) -> ApiResult<Value> {
    let mut scale = current.clone();
    let invalid = |e: patch::PatchError| ApiError::new(422, "Invalid", e.to_string());
    match kind {
        PatchKind::Merge => patch::merge_patch(&mut scale, body),
        PatchKind::Json => patch::json_patch(&mut scale, body).map_err(invalid)?,
        PatchKind::Strategic => patch::strategic_merge_patch(&mut scale, body).map_err(invalid)?,
        PatchKind::Apply => {
            return Err(ApiError::unsupported_media_type(
                "application/apply-patch+yaml",
            ));
        }
    }
    Ok(scale)
}

/// `metav1.FormatLabelSelector`: `matchLabels` as `k=v` and `matchExpressions` as `k in (a,b)`,
/// `k notin (a,b)`, `k` and `!k`, sorted by key.
pub fn format_selector(selector: &Value) -> String {
    let mut requirements: Vec<(String, String)> = Vec::new();
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (key, value) in labels {
            let value = value.as_str().unwrap_or_default();
            requirements.push((key.clone(), format!("{key}={value}")));
        }
    }
    for expression in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let field = |k: &str| {
            expression
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let key = field("key");
        let mut values: Vec<&str> = expression
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let text = match field("operator") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => continue,
        };
        requirements.push((key.to_string(), text));
    }
    requirements.sort();
    requirements
        .into_iter()
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join(",")
}

/// The value at a dotted path (`.spec.replicas`).
fn at<'v>(object: &'v Value, path: &str) -> Option<&'v Value> {
    path.trim_start_matches('.')
        .split('.')
        .try_fold(object, |value, key| value.get(key))
}

/// Sets the value at a dotted path, making the objects on the way.
fn set_at(object: &mut Value, path: &str, value: Value) -> ApiResult<()> {
    let keys: Vec<&str> = path.trim_start_matches('.').split('.').collect();
    let Some((last, parents)) = keys.split_last() else {
        return Err(ApiError::internal(format!("scale path {path:?} is empty")));
    };
    let mut current = object;
    for key in parents {
        if !current.get(*key).is_some_and(Value::is_object) {
            current[*key] = json!({});
        }
        current = &mut current[*key];
    }
    current[*last] = value;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_selector_is_written_as_kube_formats_it() {
        let selector = json!({
            "matchLabels": {"tier": "front", "app": "web"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                {"key": "gone", "operator": "DoesNotExist"},
            ],
        });
        assert_eq!(
            format_selector(&selector),
            "app=web,env in (dev,prod),!gone,tier=front"
        );
    }

    #[test]
    fn a_scale_shows_the_replicas_at_the_crd_paths() {
        let paths = ScalePaths {
            spec_replicas: ".spec.size".into(),
            status_replicas: ".status.ready".into(),
            selector: SelectorSource::Path(".status.selector".into()),
        };
        let object = json!({"metadata": {"name": "p", "namespace": "n"},
            "spec": {"size": 3}, "status": {"ready": 2, "selector": "app=p"}});
        let scale = render(&paths, &object);
        assert_eq!(scale["spec"], json!({"replicas": 3}));
        assert_eq!(scale["status"], json!({"replicas": 2, "selector": "app=p"}));
    }

    #[test]
    fn a_negative_scale_is_refused_naming_the_field() {
        let err = with_replicas(
            &ScalePaths::workload(),
            &json!({"metadata": {}}),
            &json!({"metadata": {"name": "web"}, "spec": {"replicas": -1}}),
        )
        .unwrap_err();
        assert_eq!(err.code, 422);
        assert!(err.message.contains("spec.replicas"), "{}", err.message);
    }
}
