//! apimachinery's checks of an object's metadata (`ValidateObjectMetaAccessor` and its update
//! form): its names, labels and finalizers, with the real server's messages (`util/validation`'s texts, with their examples
//! and the regular expression they name), as [`FieldError`]s for a `422 Invalid` answer.
//!
//! A name is checked by the rule of its kind: RBAC objects are path segments (so
//! `system:controller:x` and `<uid>:<role>` are valid, as `ValidateRBACName` allows), every
//! other kind a DNS-1123 subdomain.

use serde_json::{Value, json};

use crate::schema::field::{FieldError, go_json};

pub use kcp_core::name_validation::{
    dns1035_label_errors, dns1123_label_errors, dns1123_subdomain_errors, label_value_errors,
    qualified_name_errors, regex_error,
};

/// What is wrong with an object's `metadata.labels` (`ValidateLabels`: each key, then its
/// value; keys in order, where Go's map order is random).
pub fn label_errors(labels: Option<&Value>) -> Vec<FieldError> {
    let Some(labels) = labels.and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    for (key, value) in labels {
        let at = |v: &str, m: String| {
            FieldError::invalid("metadata.labels", Value::String(v.to_string()), m)
        };
        errors.extend(qualified_name_errors(key).into_iter().map(|m| at(key, m)));
        if let Some(value) = value.as_str() {
            errors.extend(label_value_errors(value).into_iter().map(|m| at(value, m)));
        }
    }
    errors
}

/// What is wrong with an object's `metadata.annotations` keys (`ValidateAnnotations`: each key
/// a qualified name once lowercased, written as sent; keys in order, where Go's map order is
/// random). The total size limit (256 KiB) is not checked.
pub fn annotation_errors(annotations: Option<&Value>) -> Vec<FieldError> {
    let Some(annotations) = annotations.and_then(Value::as_object) else {
        return Vec::new();
    };
    annotations
        .keys()
        .flat_map(|key| {
            qualified_name_errors(&key.to_lowercase())
                .into_iter()
                .map(move |m| {
                    FieldError::invalid("metadata.annotations", Value::String(key.clone()), m)
                })
        })
        .collect()
}

/// What decoding a body into `ObjectMeta` leaves of its empty collections: Go omits an empty
/// `labels`, `annotations`, `finalizers`, `ownerReferences` or `managedFields` (each
/// `omitempty`), for builtin kinds and custom resources alike, so a write that empties one, or
/// sends `{}`, stores none (seen on kube-apiserver v1.34.2, `kubectl diff` of an object
/// without annotations).
pub fn drop_empty_collections(obj: &mut Value) {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    for key in [
        "labels",
        "annotations",
        "finalizers",
        "ownerReferences",
        "managedFields",
    ] {
        let empty = match meta.get(key) {
            Some(Value::Object(map)) => map.is_empty(),
            Some(Value::Array(list)) => list.is_empty(),
            Some(Value::Null) => true,
            _ => false,
        };
        if empty {
            meta.remove(key);
        }
    }
}

/// Sets the annotation `key` to `text` (making `metadata.annotations` where there is none).
pub fn set_annotation(obj: &mut Value, key: &str, text: String) {
    if !obj["metadata"].is_object() {
        obj["metadata"] = Value::Object(serde_json::Map::new());
    }
    let meta = &mut obj["metadata"];
    if !meta["annotations"].is_object() {
        meta["annotations"] = Value::Object(serde_json::Map::new());
    }
    meta["annotations"][key] = Value::String(text);
}

/// Takes an annotation holding JSON out of the object (and an emptied `annotations` with it):
/// its value parsed, `None` when absent or not JSON.
pub fn take_json_annotation(obj: &mut Value, key: &str) -> Option<Value> {
    let map = obj.pointer_mut("/metadata/annotations")?.as_object_mut()?;
    let raw = map.remove(key)?;
    if map.is_empty()
        && let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.remove("annotations");
    }
    serde_json::from_str(raw.as_str()?).ok()
}

/// Adds `finalizer` to an object's finalizers unless it is there (a missing or malformed list
/// becomes a new one).
pub fn add_finalizer(obj: &mut Value, finalizer: &str) {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let finalizers = meta.entry("finalizers").or_insert_with(|| json!([]));
    if !finalizers.is_array() {
        *finalizers = json!([]);
    }
    if let Some(list) = finalizers.as_array_mut()
        && !list.iter().any(|f| f == finalizer)
    {
        list.push(json!(finalizer));
    }
}

/// The finalizers of an object's metadata.
pub fn finalizers_of(obj: &Value) -> Vec<String> {
    strings_at(obj, "/metadata/finalizers")
}

/// The strings of the list at `pointer` in `obj` (a finalizer list, a LogicalCluster's
/// initializers, a CRD's short names); anything else in the list is skipped, and no list is an
/// empty one.
pub fn strings_at(obj: &Value, pointer: &str) -> Vec<String> {
    obj.pointer(pointer)
        .and_then(Value::as_array)
        .map(|all| {
            all.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// `ValidateFinalizers`: each finalizer is a qualified name, and `orphan` and
/// `foregroundDeletion` are not both set.
pub fn finalizer_errors(finalizers: &[String]) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for f in finalizers {
        errors.extend(
            qualified_name_errors(f)
                .into_iter()
                .map(|m| FieldError::invalid("metadata.finalizers", Value::String(f.clone()), m)),
        );
    }
    let has = |name: &str| finalizers.iter().any(|f| f == name);
    if has("orphan") && has("foregroundDeletion") {
        errors.push(FieldError::invalid(
            "metadata.finalizers",
            Value::from(finalizers.to_vec()),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    errors
}

/// `validateKubeFinalizerName`, which kube-apiserver adds for the kinds its core metadata checks
/// validate (core, apps, RBAC, events): a finalizer without a `/` must be a standard one.
pub fn kube_finalizer_errors(group: &str, finalizers: &[String]) -> Vec<FieldError> {
    let kube = matches!(
        group,
        "" | "apps" | "rbac.authorization.k8s.io" | "events.k8s.io"
    );
    if !kube {
        return Vec::new();
    }
    finalizers
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            !f.contains('/')
                && !matches!(f.as_str(), "kubernetes" | "orphan" | "foregroundDeletion")
        })
        .map(|(i, f)| {
            FieldError::invalid(
                format!("metadata.finalizers[{i}]"),
                Value::String(f.clone()),
                "name is neither a standard finalizer name nor is it fully qualified",
            )
        })
        .collect()
}

/// `ValidateNoNewFinalizers`: once an object is being deleted, finalizers can only go. The new
/// ones are listed sorted, as Go prints a `[]string` with `%#v`.
pub fn no_new_finalizer_errors(old: &[String], new: &[String]) -> Vec<FieldError> {
    let mut added: Vec<&String> = new.iter().filter(|f| !old.contains(f)).collect();
    added.sort();
    added.dedup();
    if added.is_empty() {
        return Vec::new();
    }
    let quoted: Vec<String> = added
        .iter()
        .map(|f| Value::String((*f).clone()).to_string())
        .collect();
    vec![FieldError::forbidden(
        "metadata.finalizers",
        format!(
            "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
            quoted.join(", ")
        ),
    )]
}

/// kube's `ValidateOwnerReferences`: each reference names an `apiVersion` with a version, a
/// `kind`, a `name` and a `uid` (the paths are not indexed, as kube reports them), none is a
/// core Event, and at most one is the controller.
pub fn owner_reference_errors(owners: Option<&Value>) -> Vec<FieldError> {
    const PATH: &str = "metadata.ownerReferences";
    let owners = owners
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let mut errors = Vec::new();
    let mut first_controller: Option<String> = None;
    for owner in owners {
        let text = |key: &str| owner.get(key).and_then(Value::as_str).unwrap_or_default();
        let (api_version, kind) = (text("apiVersion"), text("kind"));
        let version = match api_version.matches('/').count() {
            0 => api_version,
            1 => api_version.split_once('/').map_or("", |(_, v)| v),
            _ => "",
        };
        let empty = |key: &str, value: &str, detail: &str| {
            value.is_empty().then(|| {
                FieldError::invalid(format!("{PATH}.{key}"), json!(value), detail.to_string())
            })
        };
        errors.extend(empty("apiVersion", version, "version must not be empty"));
        errors.extend(empty("kind", kind, "must not be empty"));
        errors.extend(empty("name", text("name"), "must not be empty"));
        errors.extend(empty("uid", text("uid"), "must not be empty"));
        if api_version == "v1" && kind == "Event" {
            errors.push(FieldError::invalid_struct(
                PATH,
                owner_reference_go_json(owner),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if owner.get("controller").and_then(Value::as_bool) == Some(true) {
            let this = format!("{kind}/{}", text("name"));
            match &first_controller {
                Some(first) => errors.push(FieldError::invalid_struct(
                    PATH,
                    format!(
                        "[{}]",
                        owners
                            .iter()
                            .map(owner_reference_go_json)
                            .collect::<Vec<_>>()
                            .join(",")
                    ),
                    format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {this}"
                    ),
                )),
                None => first_controller = Some(this),
            }
        }
    }
    errors
}

/// An owner reference as Go's `encoding/json` writes a `metav1.OwnerReference`: its fields in
/// the struct's order, the two optional booleans only when set.
fn owner_reference_go_json(owner: &Value) -> String {
    let mut fields: Vec<String> = ["apiVersion", "kind", "name", "uid"]
        .into_iter()
        .map(|key| {
            let value = owner.get(key).and_then(Value::as_str).unwrap_or_default();
            format!("\"{key}\":{}", go_json(&json!(value)))
        })
        .collect();
    for key in ["controller", "blockOwnerDeletion"] {
        if let Some(flag) = owner.get(key).and_then(Value::as_bool) {
            fields.push(format!("\"{key}\":{flag}"));
        }
    }
    format!("{{{}}}", fields.join(","))
}

/// What is wrong with the metadata of a new object of `group`/`kind` (after name generation),
/// in kube-apiserver's order: names, labels, annotations, owner references, finalizers.
pub fn create_errors(
    (group, kind): (&str, &str),
    generate_name: Option<&str>,
    name: &str,
    obj: &Value,
) -> Vec<FieldError> {
    let finalizers = finalizers_of(obj);
    let mut errors = name_errors((group, kind), generate_name, name);
    errors.extend(label_errors(obj.pointer("/metadata/labels")));
    errors.extend(annotation_errors(obj.pointer("/metadata/annotations")));
    errors.extend(owner_reference_errors(
        obj.pointer("/metadata/ownerReferences"),
    ));
    errors.extend(finalizer_errors(&finalizers));
    errors.extend(kube_finalizer_errors(group, &finalizers));
    errors
}

/// A check of an object's metadata that a kind's update strategy runs after the registry's own
/// two (kube's `ValidateObjectMeta` of the new object, `ValidateObjectMetaUpdate` of the change).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StrategyCheck {
    /// The new object's metadata: labels, owner references, finalizers.
    Object,
    /// The change: no new finalizer while deleting, labels, owner references.
    Update,
}

/// The metadata checks of each kind's update strategy, in order. The number of checks was counted
/// on kube-apiserver v1.34.2 (conformance file `metadata-updates.yaml`: one bad owner reference
/// is listed once per check, two of them the registry's); their order where a kind runs two is
/// read from the kinds' `Validate*Update` and registry strategies.
fn strategy_checks(group: &str, kind: &str) -> &'static [StrategyCheck] {
    use StrategyCheck::{Object, Update};
    match (group, kind) {
        ("" | "events.k8s.io", "Event") | ("policy", "PodDisruptionBudget") => &[],
        ("", "ConfigMap" | "Secret" | "ServiceAccount" | "Endpoints" | "Pod")
        | ("networking.k8s.io", "IngressClass") => &[Update, Object],
        ("", "Namespace" | "Node" | "PersistentVolume" | "ReplicationController")
        | ("batch", "Job")
        | ("networking.k8s.io", "Ingress" | "NetworkPolicy")
        | ("storage.k8s.io", "StorageClass") => &[Object, Update],
        (
            "rbac.authorization.k8s.io",
            "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding",
        )
        | ("", "PersistentVolumeClaim") => &[Object, Object, Update],
        _ => &[Update],
    }
}

/// What is wrong with the metadata of an update of an object of `group`/`kind`, as
/// kube-apiserver reports it: the registry's common checks of the new metadata and of the
/// change, then the checks the kind's strategy runs again ([`strategy_checks`]), each followed
/// by kube's own finalizer names, so one error is listed as often as it is checked. A status
/// write (`status`) is checked by the kind's status strategy, once, as a change.
pub fn update_errors(
    (group, kind): (&str, &str),
    status: bool,
    old: &Value,
    new: &Value,
) -> Vec<FieldError> {
    let finalizers = finalizers_of(new);
    let deleting = old.pointer("/metadata/deletionTimestamp").is_some();
    let labels_and_owners = || {
        let mut errors = label_errors(new.pointer("/metadata/labels"));
        errors.extend(annotation_errors(new.pointer("/metadata/annotations")));
        errors.extend(owner_reference_errors(
            new.pointer("/metadata/ownerReferences"),
        ));
        errors
    };
    let object = || {
        let mut errors = labels_and_owners();
        errors.extend(finalizer_errors(&finalizers));
        errors
    };
    let update = || {
        let mut errors = if deleting {
            no_new_finalizer_errors(&finalizers_of(old), &finalizers)
        } else {
            Vec::new()
        };
        errors.extend(uid_change_error(old, new));
        errors.extend(labels_and_owners());
        errors
    };
    let mut errors = object();
    errors.extend(update());
    let checks = if status {
        &[StrategyCheck::Update][..]
    } else {
        strategy_checks(group, kind)
    };
    for check in checks {
        errors.extend(match check {
            StrategyCheck::Object => object(),
            StrategyCheck::Update => update(),
        });
        errors.extend(kube_finalizer_errors(group, &finalizers));
    }
    errors
}

/// A uid the update sends that is not the object's: immutable (a PUT's body uid is a
/// precondition instead, refused before validation, [`crate::preconditions::uid`]).
fn uid_change_error(old: &Value, new: &Value) -> Option<FieldError> {
    let old_uid = old.pointer("/metadata/uid").and_then(Value::as_str);
    let sent = new
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .filter(|sent| Some(*sent) != old_uid)?;
    Some(FieldError::invalid(
        "metadata.uid",
        json!(sent),
        "field is immutable",
    ))
}

/// A deletion timestamp an update sets on an object not being deleted: immutable, listed twice
/// (the registry's common check and the kind's own). On an object being deleted, the registry
/// keeps the stored timestamp whatever the update sends.
pub fn deletion_timestamp_errors(old: &Value, sent: Option<&Value>) -> Vec<FieldError> {
    let deleting = old.pointer("/metadata/deletionTimestamp").is_some();
    match sent {
        Some(sent) if !deleting && !sent.is_null() => {
            let error = FieldError::invalid(
                "metadata.deletionTimestamp",
                sent.clone(),
                "field is immutable",
            );
            vec![error.clone(), error]
        }
        _ => Vec::new(),
    }
}

/// `path.ValidatePathSegmentName`: a prefix (a `generateName`) may be `.` or `..`.
pub(crate) fn path_segment_errors(name: &str, prefix: bool) -> Vec<String> {
    if !prefix && let Some(bad) = [".", ".."].into_iter().find(|bad| name == *bad) {
        return vec![format!("may not be '{bad}'")];
    }
    ["/", "%"]
        .into_iter()
        .filter(|bad| name.contains(bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

/// `maskTrailingDash`: a prefix may end in a dash, since a suffix follows it. Go's code drops
/// the last two characters and appends `a`.
fn mask_trailing_dash(name: &str) -> String {
    match name.strip_suffix('-') {
        Some(rest) if name.len() > 1 => {
            let mut chars = rest.chars();
            chars.next_back();
            format!("{}a", chars.as_str())
        }
        _ => name.to_string(),
    }
}

/// The kind's `ValidateNameFunc`: what is wrong with `name` (a `generateName` when `prefix`).
fn name_messages((group, kind): (&str, &str), name: &str, prefix: bool) -> Vec<String> {
    // RBAC objects, and APIServices (whose names are `<version>.<group>`, `v1.` for the core
    // group), need only be path segments.
    if matches!(
        group,
        "rbac.authorization.k8s.io" | "apiregistration.k8s.io"
    ) {
        return path_segment_errors(name, prefix);
    }
    let name = if prefix {
        mask_trailing_dash(name)
    } else {
        name.to_string()
    };
    match (group, kind) {
        ("", "Namespace") => dns1123_label_errors(&name),
        ("", "Service") => dns1035_label_errors(&name),
        _ => dns1123_subdomain_errors(&name),
    }
}

/// What is wrong with the names of a new object of `group`/`kind` (after name generation): its
/// `generateName`, if any, and its `name`, as `ValidateObjectMetaAccessor` reports them.
pub fn name_errors(kind: (&str, &str), generate_name: Option<&str>, name: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if let Some(prefix) = generate_name.filter(|p| !p.is_empty()) {
        errors.extend(name_messages(kind, prefix, true).into_iter().map(|m| {
            FieldError::invalid("metadata.generateName", Value::String(prefix.into()), m)
        }));
    }
    if name.is_empty() {
        errors.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        errors.extend(
            name_messages(kind, name, false)
                .into_iter()
                .map(|m| FieldError::invalid("metadata.name", Value::String(name.into()), m)),
        );
    }
    errors
}

/// Sets `keys` of `object`'s metadata to what `sent` holds there, removing those it does not
/// hold (a subresource's strategy keeps these of the sent object, the rest of the stored one).
pub fn take_metadata(object: &mut Value, sent: &Value, keys: &[&str]) {
    for key in keys {
        let value = sent.pointer(&format!("/metadata/{key}")).cloned();
        if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            match value {
                Some(value) => metadata.insert((*key).into(), value),
                None => metadata.remove(*key),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner_messages(owners: Value) -> Vec<String> {
        owner_reference_errors(Some(&owners))
            .iter()
            .map(FieldError::message)
            .collect()
    }

    #[test]
    fn an_owner_reference_names_a_version_kind_name_and_uid_at_unindexed_paths() {
        // As kube-apiserver v1.34.2 answered (gc-edges/an-owner-reference-without-an-api-version-kind-or-name-is-invalid).
        assert_eq!(
            owner_messages(json!([{"apiVersion": "apps/", "kind": "", "name": "", "uid": "u"}])),
            [
                "metadata.ownerReferences.apiVersion: Invalid value: \"\": version must not be empty",
                "metadata.ownerReferences.kind: Invalid value: \"\": must not be empty",
                "metadata.ownerReferences.name: Invalid value: \"\": must not be empty",
            ]
        );
    }

    #[test]
    fn a_second_controller_reference_shows_every_reference_in_gos_field_order() {
        let owners = json!([
            {"uid": "1", "name": "a", "kind": "ConfigMap", "apiVersion": "v1", "controller": true},
            {"uid": "2", "name": "b", "kind": "ConfigMap", "apiVersion": "v1", "controller": true,
             "blockOwnerDeletion": false},
        ]);
        assert_eq!(
            owner_messages(owners),
            [
                "metadata.ownerReferences: Invalid value: [{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"a\",\"uid\":\"1\",\"controller\":true},{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"b\",\"uid\":\"2\",\"controller\":true,\"blockOwnerDeletion\":false}]: Only one reference can have Controller set to true. Found \"true\" in references for ConfigMap/a and ConfigMap/b"
            ]
        );
    }

    #[test]
    fn a_core_event_cannot_own() {
        let owners = json!([{"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "1"}]);
        assert_eq!(
            owner_messages(owners),
            [
                "metadata.ownerReferences: Invalid value: {\"apiVersion\":\"v1\",\"kind\":\"Event\",\"name\":\"e\",\"uid\":\"1\"}: /v1, Kind=Event is disallowed from being an owner"
            ]
        );
    }

    fn messages(group: &str, generate_name: Option<&str>, name: &str) -> Vec<String> {
        name_errors((group, "ConfigMap"), generate_name, name)
            .iter()
            .map(FieldError::message)
            .collect()
    }

    #[test]
    fn a_namespace_name_is_a_dns_label() {
        let errors = name_errors(("", "Namespace"), None, "Not_A_Name");
        assert_eq!(
            errors[0].message(),
            "metadata.name: Invalid value: \"Not_A_Name\": a lowercase RFC 1123 label must \
             consist of lower case alphanumeric characters or '-', and must start and end with an \
             alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is \
             '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        );
        let dotted = name_errors(("", "Namespace"), None, "a.b");
        assert_eq!(
            dotted[0].message(),
            "metadata.name: Invalid value: \"a.b\": must not contain dots"
        );
    }

    #[test]
    fn a_service_name_starts_with_a_letter() {
        assert!(name_errors(("", "Service"), None, "web-1").is_empty());
        let errors = name_errors(("", "Service"), None, "1web");
        assert!(
            errors[0]
                .message()
                .contains("a DNS-1035 label must consist")
        );
    }

    #[test]
    fn names_must_be_dns_subdomains() {
        assert!(messages("", None, "web-1.example").is_empty());
        for bad in ["Web", "-web", "a..b", "a.-b", "web_1"] {
            assert_eq!(messages("apps", None, bad).len(), 1, "{bad}");
        }
        assert_eq!(messages("", None, &"a".repeat(254)).len(), 1);
    }

    #[test]
    fn an_invalid_name_reads_as_kube_apiserver_writes_it() {
        assert_eq!(
            messages("", None, "Upper_Case"),
            [
                "metadata.name: Invalid value: \"Upper_Case\": a lowercase RFC 1123 subdomain must \
              consist of lower case alphanumeric characters, '-' or '.', and must start and end \
              with an alphanumeric character (e.g. 'example.com', regex used for validation is \
              '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        assert_eq!(
            messages("", None, ""),
            ["metadata.name: Required value: name or generateName is required"]
        );
    }

    #[test]
    fn a_generate_name_may_end_in_a_dash() {
        assert!(messages("", Some("made-"), "made-x7k2p").is_empty());
        let bad = messages("", Some("Made-"), "Made-x7k2p");
        assert_eq!(bad.len(), 2);
        assert!(bad[0].starts_with("metadata.generateName: Invalid value: \"Made-\""));
        assert!(bad[1].starts_with("metadata.name: Invalid value: \"Made-x7k2p\""));
    }

    #[test]
    fn a_bad_label_value_reads_as_kube_apiserver_writes_it() {
        let errors = label_errors(Some(&serde_json::json!({"a": "not valid!", "b": ""})));
        let messages: Vec<String> = errors.iter().map(FieldError::message).collect();
        assert_eq!(
            messages,
            [
                "metadata.labels: Invalid value: \"not valid!\": a valid label must be an empty \
              string or consist of alphanumeric characters, '-', '_' or '.', and must start and \
              end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', \
              regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
            ]
        );
        assert_eq!(label_value_errors(&"a".repeat(64)).len(), 1);
    }

    #[test]
    fn an_annotation_key_is_a_qualified_name_whatever_its_case() {
        let annotations = serde_json::json!({"Example.COM/Owner": "x", "bad key": "y"});
        let errors = annotation_errors(Some(&annotations));
        let messages: Vec<String> = errors.iter().map(FieldError::message).collect();
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(
            messages[0].starts_with("metadata.annotations: Invalid value: \"bad key\": name part")
        );
    }

    #[test]
    fn a_finalizer_without_a_slash_must_be_a_standard_one_for_kube_kinds() {
        let bad = vec!["no slash".to_string()];
        let messages: Vec<String> = finalizer_errors(&bad)
            .iter()
            .chain(&kube_finalizer_errors("", &bad))
            .map(FieldError::message)
            .collect();
        assert_eq!(messages.len(), 2);
        assert!(
            messages[0].starts_with("metadata.finalizers: Invalid value: \"no slash\": name part")
        );
        assert_eq!(
            messages[1],
            "metadata.finalizers[0]: Invalid value: \"no slash\": name is neither a standard \
             finalizer name nor is it fully qualified"
        );
        let standard = vec!["orphan".to_string(), "example.com/x".to_string()];
        assert!(kube_finalizer_errors("apps", &standard).is_empty());
        assert!(kube_finalizer_errors("example.com", &["x".to_string()]).is_empty());
    }

    #[test]
    fn new_finalizers_of_a_deleting_object_are_listed_as_go_prints_them() {
        let old = vec!["a/x".to_string()];
        let new = vec!["a/x".to_string(), "c/z".to_string(), "b/y".to_string()];
        let errors = no_new_finalizer_errors(&old, &new);
        assert_eq!(
            errors[0].message(),
            "metadata.finalizers: Forbidden: no new finalizers can be added if the object is \
             being deleted, found new finalizers []string{\"b/y\", \"c/z\"}"
        );
        assert!(no_new_finalizer_errors(&new, &old).is_empty());
    }

    #[test]
    fn rbac_names_are_path_segments() {
        let rbac = "rbac.authorization.k8s.io";
        assert!(messages(rbac, None, "system:controller:x").is_empty());
        assert!(messages(rbac, None, "0b7e:cluster-admin").is_empty());
        assert_eq!(
            messages(rbac, None, "a/b%"),
            [
                "metadata.name: Invalid value: \"a/b%\": may not contain '/'",
                "metadata.name: Invalid value: \"a/b%\": may not contain '%'"
            ]
        );
        assert_eq!(
            messages(rbac, None, ".."),
            ["metadata.name: Invalid value: \"..\": may not be '..'"]
        );
        assert!(!messages("apps", None, "a:b").is_empty());
    }
}
