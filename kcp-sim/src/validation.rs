//! kube-apiserver's validation of the builtin kinds' own fields (its `ValidateX` and
//! `ValidateXUpdate` functions beyond metadata), for the checks a user's kubectl meets, with the
//! real server's field paths and messages:
//!
//! - ConfigMap and Secret keys (`IsConfigMapKey`), a ConfigMap key in both `data` and
//!   `binaryData`, the keys each Secret type requires, and the `immutable` rule of both;
//! - a workload's selector: required, not empty, and matching its pod template's labels
//!   (Deployments, ReplicaSets, StatefulSets, DaemonSets);
//! - a Service's ports: numbers in range, a name on each of several ports, target ports;
//! - an Event's involved object in the Event's namespace;
//! - an Ingress's paths: a path type on each, and service backends by a port name or a number
//!   in range;
//! - a StorageClass's provisioner (required, then unchangeable with its parameters and reclaim
//!   policy), a RuntimeClass's handler (a DNS-1123 label), a PersistentVolume's access modes,
//!   capacity and volume source.
//!
//! What is not here (resource quantities, pod specs beyond the template's labels, total sizes)
//! is not checked: kcp-sim stores such objects where kube-apiserver would refuse them.

use serde_json::{Map, Value, json};

use kcp_core::selector::LabelSelector;

use crate::object_meta::regex_error;
use crate::rbac_validation;
use crate::schema::field::FieldError;

const CONFIG_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const CONFIG_KEY_ERROR: &str =
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";
const IMMUTABLE_SET: &str = "field is immutable when `immutable` is set";

/// What is wrong with a new object of `group`/`kind`, besides its metadata.
pub fn create_errors(group: &str, kind: &str, obj: &Value) -> Vec<FieldError> {
    match (group, kind) {
        ("", "ConfigMap") => config_map_errors(obj),
        ("", "Pod") => crate::ephemeral_containers::create_errors(obj),
        ("", "Secret") => secret_errors(obj),
        ("", "Service") => service_port_errors(obj),
        ("", "LimitRange") => crate::limit_range_validation::errors(obj),
        ("", "Event") => crate::event_apis::create_errors("", obj),
        (crate::event_apis::GROUP, "Event") => crate::event_apis::create_errors(group, obj),
        ("networking.k8s.io", "Ingress") => ingress_errors(obj),
        ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet") => {
            workload_selector_errors(kind, obj)
        }
        ("storage.k8s.io", "StorageClass") => storage_class_errors(obj),
        ("node.k8s.io", "RuntimeClass") => runtime_class_errors(obj),
        ("", "PersistentVolume") => persistent_volume_errors(obj),
        ("certificates.k8s.io", "CertificateSigningRequest") => {
            crate::certificates::create_errors(obj)
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            admission_policy_errors(obj)
        }
        (rbac_validation::GROUP, "Role") => rbac_validation::role_errors(obj, true),
        (rbac_validation::GROUP, "ClusterRole") => rbac_validation::role_errors(obj, false),
        (rbac_validation::GROUP, "RoleBinding") => rbac_validation::binding_errors(obj, true),
        (rbac_validation::GROUP, "ClusterRoleBinding") => {
            rbac_validation::binding_errors(obj, false)
        }
        _ => Vec::new(),
    }
}

/// `validateValidatingAdmissionPolicySpec`'s structure (not its CEL): the policy matches some
/// resources, named by at least one rule, and checks or audits something.
fn admission_policy_errors(policy: &Value) -> Vec<FieldError> {
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    let mut errors = Vec::new();
    match spec.get("matchConstraints").filter(|m| !m.is_null()) {
        None => errors.push(FieldError::required("spec.matchConstraints", "")),
        Some(constraints) => {
            let rules = constraints.get("resourceRules").and_then(Value::as_array);
            if rules.is_none_or(Vec::is_empty) {
                errors.push(FieldError::required(
                    "spec.matchConstraints.resourceRules",
                    "",
                ));
            }
        }
    }
    let none = |field: &str| {
        spec.get(field)
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty)
    };
    if none("validations") && none("auditAnnotations") {
        for field in ["spec.validations", "spec.auditAnnotations"] {
            errors.push(FieldError::required(
                field,
                "validations or auditAnnotations must contain at least one item",
            ));
        }
    }
    errors
}

/// `ValidateStorageClass`: a provisioner is named.
fn storage_class_errors(class: &Value) -> Vec<FieldError> {
    match class.get("provisioner").and_then(Value::as_str) {
        Some(provisioner) if !provisioner.is_empty() => Vec::new(),
        _ => vec![FieldError::required("provisioner", "")],
    }
}

/// `ValidateStorageClassUpdate`: what a class provisions with cannot change.
fn storage_class_update_errors(old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for field in ["parameters", "provisioner", "reclaimPolicy"] {
        if old.get(field) != new.get(field) {
            errors.push(FieldError::forbidden(
                field,
                format!("updates to {field} are forbidden."),
            ));
        }
    }
    if old.get("volumeBindingMode") != new.get("volumeBindingMode") {
        let value = new.get("volumeBindingMode").cloned().unwrap_or(Value::Null);
        errors.push(FieldError::invalid(
            "volumeBindingMode",
            value,
            "field is immutable",
        ));
    }
    errors
}

/// `ValidateRuntimeClass`: the handler is a DNS-1123 label.
fn runtime_class_errors(class: &Value) -> Vec<FieldError> {
    let handler = class
        .get("handler")
        .and_then(Value::as_str)
        .unwrap_or_default();
    crate::object_meta::dns1123_label_errors(handler)
        .into_iter()
        .map(|why| FieldError::invalid("handler", json!(handler), why))
        .collect()
}

/// The volume sources a PersistentVolume may name.
const VOLUME_SOURCES: &[&str] = &[
    "awsElasticBlockStore",
    "azureDisk",
    "azureFile",
    "cephfs",
    "cinder",
    "csi",
    "fc",
    "flexVolume",
    "flocker",
    "gcePersistentDisk",
    "glusterfs",
    "hostPath",
    "iscsi",
    "local",
    "nfs",
    "photonPersistentDisk",
    "portworxVolume",
    "quobyte",
    "rbd",
    "scaleIO",
    "storageos",
    "vsphereVolume",
];

/// `ValidatePersistentVolumeSpec`, its first checks: access modes, a storage capacity and one
/// volume source.
fn persistent_volume_errors(volume: &Value) -> Vec<FieldError> {
    let spec = volume.get("spec").cloned().unwrap_or(Value::Null);
    let mut errors = Vec::new();
    let modes = spec.get("accessModes").and_then(Value::as_array);
    if modes.is_none_or(Vec::is_empty) {
        errors.push(FieldError::required("spec.accessModes", ""));
    }
    let capacity = spec.get("capacity").and_then(Value::as_object);
    if capacity.is_none_or(Map::is_empty) {
        errors.push(FieldError::required("spec.capacity", ""));
    }
    if capacity.is_none_or(|c| c.len() != 1 || !c.contains_key("storage")) {
        errors.push(FieldError::new(
            crate::schema::field::ErrorType::NotSupported,
            "spec.capacity",
            Some(capacity.map_or(Value::Null, |c| Value::Object(c.clone()))),
            "supported values: \"storage\"",
        ));
    }
    if !VOLUME_SOURCES.iter().any(|s| spec.get(*s).is_some()) {
        errors.push(FieldError::required("spec", "must specify a volume type"));
    }
    errors
}

/// What is wrong with an update of an object of `group`/`kind` from `old` to `new`, besides its
/// metadata: the change first, then the new object, as the `ValidateXUpdate` functions list them.
pub fn update_errors(group: &str, kind: &str, old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    match (group, kind) {
        ("", "ConfigMap") => errors.extend(immutable_errors(old, new, &["data", "binaryData"])),
        ("", "Secret") => {
            if old.get("type") != new.get("type") {
                let value = new.get("type").cloned().unwrap_or(json!(""));
                errors.push(FieldError::invalid("type", value, "field is immutable"));
            }
            errors.extend(immutable_errors(old, new, &["data"]));
        }
        ("storage.k8s.io", "StorageClass") => errors.extend(storage_class_update_errors(old, new)),
        ("", "Pod") => errors.extend(crate::pod_updates::spec_errors(old, new)),
        _ => {}
    }
    match (group, kind) {
        // A core Event's namespaces are checked on create only, and so are a pod's ephemeral
        // containers (an update that changes them is refused as any change of a pod's spec).
        ("", "Event" | "Pod") => {}
        (crate::event_apis::GROUP, "Event") => {
            errors.extend(crate::event_apis::update_errors(old, new));
        }
        _ => errors.extend(create_errors(group, kind, new)),
    }
    if group == rbac_validation::GROUP && matches!(kind, "RoleBinding" | "ClusterRoleBinding") {
        errors.extend(rbac_validation::role_ref_change_error(old, new));
    }
    errors
}

/// `IsConfigMapKey`.
fn config_key_errors(key: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if key.len() > 253 {
        errors.push("must be no more than 253 characters".to_string());
    }
    let shaped = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
    if !shaped {
        errors.push(regex_error(
            CONFIG_KEY_ERROR,
            CONFIG_KEY_FMT,
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    match key {
        "." => errors.push("must not be '.'".to_string()),
        ".." => errors.push("must not be '..'".to_string()),
        _ if key.starts_with("..") => errors.push("must not start with '..'".to_string()),
        _ => {}
    }
    errors
}

/// The keys of the map at `field`, in Go's map order as kube-apiserver happens to report them
/// (sorted here, so a case with several bad keys reads the same every time).
fn keys_of<'a>(obj: &'a Value, field: &str) -> Vec<&'a String> {
    obj.get(field)
        .and_then(Value::as_object)
        .map(|map| map.keys().collect())
        .unwrap_or_default()
}

fn key_errors(obj: &Value, field: &str) -> Vec<FieldError> {
    keys_of(obj, field)
        .into_iter()
        .flat_map(|key| {
            config_key_errors(key)
                .into_iter()
                .map(move |m| FieldError::invalid(format!("{field}[{key}]"), json!(key), m))
        })
        .collect()
}

/// `ValidateConfigMap`: its keys, and no key in both bags.
fn config_map_errors(obj: &Value) -> Vec<FieldError> {
    let mut errors = key_errors(obj, "data");
    let binary = keys_of(obj, "binaryData");
    for key in keys_of(obj, "data") {
        if binary.contains(&key) {
            errors.push(FieldError::invalid(
                format!("data[{key}]"),
                json!(key),
                "duplicate of key present in binaryData",
            ));
        }
    }
    errors.extend(key_errors(obj, "binaryData"));
    errors
}

/// `ValidateSecret`: its keys, then what its type requires.
fn secret_errors(obj: &Value) -> Vec<FieldError> {
    let mut errors = key_errors(obj, "data");
    let data = obj.get("data").and_then(Value::as_object);
    let has = |key: &str| data.is_some_and(|d| d.contains_key(key));
    let required = |key: &str| FieldError::required(format!("data[{key}]"), "");
    match obj.get("type").and_then(Value::as_str).unwrap_or_default() {
        "kubernetes.io/service-account-token" => {
            let named = obj
                .pointer("/metadata/annotations/kubernetes.io~1service-account.name")
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty());
            if !named {
                errors.push(FieldError::required(
                    "metadata.annotations[kubernetes.io/service-account.name]",
                    "",
                ));
            }
        }
        "kubernetes.io/dockercfg" => errors.extend(docker_config_errors(data, ".dockercfg")),
        "kubernetes.io/dockerconfigjson" => {
            errors.extend(docker_config_errors(data, ".dockerconfigjson"));
        }
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            errors.push(required("username"));
            errors.push(required("password"));
        }
        "kubernetes.io/ssh-auth" if decoded_len(data, "ssh-privatekey") == 0 => {
            errors.push(required("ssh-privatekey"));
        }
        "kubernetes.io/tls" => {
            if !has("tls.crt") {
                errors.push(required("tls.crt"));
            }
            if !has("tls.key") {
                errors.push(required("tls.key"));
            }
        }
        _ => {}
    }
    errors
}

/// A docker config Secret's key: present, and a JSON object once decoded.
fn docker_config_errors(data: Option<&Map<String, Value>>, key: &str) -> Vec<FieldError> {
    use base64::Engine as _;
    let Some(encoded) = data.and_then(|d| d.get(key)) else {
        return vec![FieldError::required(format!("data[{key}]"), "")];
    };
    let bytes = encoded
        .as_str()
        .and_then(|text| base64::engine::general_purpose::STANDARD.decode(text).ok())
        .unwrap_or_default();
    match serde_json::from_slice::<Map<String, Value>>(&bytes) {
        Ok(_) => Vec::new(),
        Err(e) => vec![FieldError::invalid(
            format!("data[{key}]"),
            json!("<secret contents redacted>"),
            format!("invalid JSON: {e}"),
        )],
    }
}

/// The length of a Secret value once base64-decoded (0 when absent or not base64).
fn decoded_len(data: Option<&Map<String, Value>>, key: &str) -> usize {
    use base64::Engine as _;
    data.and_then(|d| d.get(key))
        .and_then(Value::as_str)
        .and_then(|text| base64::engine::general_purpose::STANDARD.decode(text).ok())
        .map_or(0, |bytes| bytes.len())
}

/// The `immutable` rule of ConfigMaps and Secrets: once set, neither it nor `fields` change.
fn immutable_errors(old: &Value, new: &Value, fields: &[&str]) -> Vec<FieldError> {
    if old.get("immutable") != Some(&Value::Bool(true)) {
        return Vec::new();
    }
    let mut errors = Vec::new();
    if new.get("immutable") != Some(&Value::Bool(true)) {
        errors.push(FieldError::forbidden("immutable", IMMUTABLE_SET));
    }
    for field in fields {
        let empty = |v: Option<&Value>| v.is_none_or(|v| v.as_object().is_some_and(Map::is_empty));
        let (before, after) = (old.get(*field), new.get(*field));
        let changed = before != after && !(empty(before) && empty(after));
        if changed {
            errors.push(FieldError::forbidden(*field, IMMUTABLE_SET));
        }
    }
    errors
}

/// A workload's selector: required, not empty, and matching the pod template's labels.
fn workload_selector_errors(kind: &str, obj: &Value) -> Vec<FieldError> {
    let Some(selector) = obj.pointer("/spec/selector").filter(|s| !s.is_null()) else {
        return vec![FieldError::required("spec.selector", "")];
    };
    let count = |field: &str| {
        selector.get(field).map_or(0, |v| match v {
            Value::Object(map) => map.len(),
            Value::Array(list) => list.len(),
            _ => 0,
        })
    };
    if count("matchLabels") + count("matchExpressions") == 0 {
        let what = kind.to_ascii_lowercase();
        return vec![FieldError::invalid(
            "spec.selector",
            selector.clone(),
            format!("empty selector is invalid for {what}"),
        )];
    }
    let labels = obj
        .pointer("/spec/template/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if selects(selector, &labels) {
        return Vec::new();
    }
    vec![FieldError::invalid(
        "spec.template.metadata.labels",
        Value::Object(labels),
        "`selector` does not match template `labels`",
    )]
}

/// Whether a `LabelSelector` selects an object with these labels (`LabelSelectorAsSelector`
/// then `Matches`: the selector in its string form, read by kcp-core's parser).
pub(crate) fn selects(selector: &Value, labels: &Map<String, Value>) -> bool {
    LabelSelector::parse(&crate::scale::format_selector(selector))
        .is_ok_and(|selector| selector.matches(Some(labels)))
}

/// `validateServicePort` for each port: a name on each of several ports, the port number, the
/// target port (a number in range or a port name).
fn service_port_errors(obj: &Value) -> Vec<FieldError> {
    let ports = obj
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut errors = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let at = format!("spec.ports[{i}]");
        let name = port.get("name").and_then(Value::as_str).unwrap_or_default();
        if name.is_empty() {
            if ports.len() > 1 {
                errors.push(FieldError::required(format!("{at}.name"), ""));
            }
        } else {
            errors.extend(
                crate::object_meta::dns1123_label_errors(name)
                    .into_iter()
                    .map(|why| FieldError::invalid(format!("{at}.name"), json!(name), why)),
            );
            if names.contains(&name) {
                errors.push(FieldError::new(
                    crate::schema::field::ErrorType::Duplicate,
                    format!("{at}.name"),
                    Some(json!(name)),
                    "",
                ));
            } else {
                names.push(name);
            }
        }
        let number = port.get("port").and_then(Value::as_i64).unwrap_or(0);
        if !(1..=65535).contains(&number) {
            errors.push(FieldError::invalid(
                format!("{at}.port"),
                json!(number),
                PORT_RANGE,
            ));
        }
        errors.extend(target_port_errors(
            port.get("targetPort"),
            &format!("{at}.targetPort"),
        ));
    }
    errors
}

const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

/// `ValidatePortNumOrName`.
fn target_port_errors(target: Option<&Value>, at: &str) -> Vec<FieldError> {
    match target {
        Some(Value::String(name)) => port_name_errors(name)
            .into_iter()
            .map(|m| FieldError::invalid(at, json!(name), m))
            .collect(),
        Some(Value::Number(n)) if (1..=65535).contains(&n.as_i64().unwrap_or(0)) => Vec::new(),
        other => {
            let number = other.and_then(Value::as_i64).unwrap_or(0);
            vec![FieldError::invalid(at, json!(number), PORT_RANGE)]
        }
    }
}

/// `IsValidPortName`.
fn port_name_errors(name: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if name.len() > 15 {
        errors.push("must be no more than 15 characters".to_string());
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        || name.is_empty()
    {
        errors
            .push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if !name.bytes().any(|b| b.is_ascii_lowercase()) {
        errors.push("must contain at least one letter (a-z)".into());
    }
    if name.contains("--") {
        errors.push("must not contain consecutive hyphens".into());
    }
    if name.starts_with('-') || name.ends_with('-') {
        errors.push("must not begin or end with a hyphen".into());
    }
    errors
}

/// An Ingress's HTTP paths (`validateHTTPIngressPath`): each states its type, and its service
/// backend names a valid port.
fn ingress_errors(obj: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let rules = obj.pointer("/spec/rules").and_then(Value::as_array);
    for (r, rule) in rules.into_iter().flatten().enumerate() {
        let paths = rule.pointer("/http/paths").and_then(Value::as_array);
        for (p, path) in paths.into_iter().flatten().enumerate() {
            let at = format!("spec.rules[{r}].http.paths[{p}]");
            if path.get("pathType").is_none_or(Value::is_null) {
                errors.push(FieldError::required(
                    format!("{at}.pathType"),
                    "pathType must be specified",
                ));
                continue;
            }
            if let Some(port) = path.pointer("/backend/service/port") {
                errors.extend(backend_port_errors(port, &format!("{at}.backend")));
            }
        }
    }
    errors
}

/// A service backend's port: a name or a number, not both, and valid.
fn backend_port_errors(port: &Value, at: &str) -> Vec<FieldError> {
    let name = port.get("name").and_then(Value::as_str).unwrap_or_default();
    let number = port.get("number").and_then(Value::as_i64).unwrap_or(0);
    match (name.is_empty(), number == 0) {
        (false, false) => vec![FieldError::invalid(
            at,
            json!(""),
            "cannot set both port name & port number",
        )],
        (false, true) => port_name_errors(name)
            .into_iter()
            .map(|m| FieldError::invalid(format!("{at}.service.port.name"), json!(name), m))
            .collect(),
        (true, false) if !(1..=65535).contains(&number) => vec![FieldError::invalid(
            format!("{at}.service.port.number"),
            json!(number),
            PORT_RANGE,
        )],
        (true, false) => Vec::new(),
        (true, true) => vec![FieldError::required(at, "port name or number is required")],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(errors: &[FieldError]) -> Vec<String> {
        errors.iter().map(FieldError::message).collect()
    }

    #[test]
    fn a_config_map_key_with_a_blank_is_invalid() {
        let errors = create_errors("", "ConfigMap", &json!({"data": {"no good": "1"}}));
        assert_eq!(
            messages(&errors),
            [
                "data[no good]: Invalid value: \"no good\": a valid config key must consist of \
              alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or \
              'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
            ]
        );
    }

    #[test]
    fn a_config_map_key_in_both_bags_is_a_duplicate() {
        let errors = create_errors(
            "",
            "ConfigMap",
            &json!({"data": {"a": "1"}, "binaryData": {"a": "MQ=="}}),
        );
        assert_eq!(
            messages(&errors),
            ["data[a]: Invalid value: \"a\": duplicate of key present in binaryData"]
        );
    }

    #[test]
    fn a_docker_config_secret_needs_its_key() {
        let secret = json!({"type": "kubernetes.io/dockerconfigjson", "data": {"other": "e30="}});
        assert_eq!(
            messages(&create_errors("", "Secret", &secret)),
            ["data[.dockerconfigjson]: Required value"]
        );
    }

    #[test]
    fn a_tls_secret_needs_its_certificate_and_key() {
        let secret = json!({"type": "kubernetes.io/tls", "data": {}});
        assert_eq!(
            messages(&create_errors("", "Secret", &secret)),
            [
                "data[tls.crt]: Required value",
                "data[tls.key]: Required value"
            ]
        );
    }

    #[test]
    fn an_immutable_secret_keeps_its_data_and_its_flag() {
        let old = json!({"type": "Opaque", "immutable": true, "data": {"a": "MQ=="}});
        let changed = json!({"type": "Opaque", "immutable": true, "data": {"a": "Mg=="}});
        assert_eq!(
            messages(&update_errors("", "Secret", &old, &changed)),
            ["data: Forbidden: field is immutable when `immutable` is set"]
        );
        let unset = json!({"type": "Opaque", "immutable": false, "data": {"a": "MQ=="}});
        assert_eq!(
            messages(&update_errors("", "Secret", &old, &unset)),
            ["immutable: Forbidden: field is immutable when `immutable` is set"]
        );
    }

    #[test]
    fn a_secret_keeps_its_type() {
        let old = json!({"type": "Opaque"});
        let new = json!({"type": "kubernetes.io/ssh-auth", "data": {"ssh-privatekey": "eA=="}});
        assert_eq!(
            messages(&update_errors("", "Secret", &old, &new)),
            ["type: Invalid value: \"kubernetes.io/ssh-auth\": field is immutable"]
        );
    }

    #[test]
    fn a_selector_must_match_the_template_labels() {
        let deployment = json!({"spec": {
            "selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "b"}}}
        }});
        assert_eq!(
            messages(&create_errors("apps", "Deployment", &deployment)),
            [
                "spec.template.metadata.labels: Invalid value: {\"app\":\"b\"}: `selector` does \
              not match template `labels`"
            ]
        );
    }

    #[test]
    fn a_selector_expression_is_matched_too() {
        let set = json!({"spec": {
            "selector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["x"]}]},
            "template": {"metadata": {"labels": {"tier": "x"}}}
        }});
        assert!(create_errors("apps", "DaemonSet", &set).is_empty());
    }

    #[test]
    fn a_service_port_of_zero_is_out_of_range_twice() {
        let service = json!({"spec": {"ports": [{"port": 0, "targetPort": 0}]}});
        assert_eq!(
            messages(&create_errors("", "Service", &service)),
            [
                "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                "spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive"
            ]
        );
    }

    #[test]
    fn several_service_ports_each_need_a_name() {
        let service = json!({"spec": {"ports": [
            {"port": 80, "targetPort": 80}, {"name": "b", "port": 81, "targetPort": "web"}
        ]}});
        assert_eq!(
            messages(&create_errors("", "Service", &service)),
            ["spec.ports[0].name: Required value"]
        );
    }

    #[test]
    fn an_ingress_backend_port_out_of_range_is_invalid() {
        let ingress = json!({"spec": {"rules": [{"http": {"paths": [{"path": "/",
            "pathType": "Exact",
            "backend": {"service": {"name": "site", "port": {"number": 99999}}}}]}}]}});
        assert_eq!(
            messages(&create_errors("networking.k8s.io", "Ingress", &ingress)),
            [
                "spec.rules[0].http.paths[0].backend.service.port.number: Invalid value: 99999: \
              must be between 1 and 65535, inclusive"
            ]
        );
    }

    #[test]
    fn an_ingress_path_needs_a_type() {
        let ingress = json!({"spec": {"rules": [{"http": {"paths": [{"path": "/"}]}}]}});
        assert_eq!(
            messages(&create_errors("networking.k8s.io", "Ingress", &ingress)),
            ["spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"]
        );
    }

    #[test]
    fn an_admission_policy_without_constraints_or_checks_is_invalid() {
        let policy = json!({"spec": {"matchConstraints": {}}});
        assert_eq!(
            create_errors(
                "admissionregistration.k8s.io",
                "ValidatingAdmissionPolicy",
                &policy
            )
            .iter()
            .map(|e| e.field.as_str())
            .collect::<Vec<_>>(),
            [
                "spec.matchConstraints.resourceRules",
                "spec.validations",
                "spec.auditAnnotations"
            ]
        );
    }

    #[test]
    fn an_event_about_an_object_elsewhere_is_invalid() {
        let event = json!({"metadata": {"namespace": "a"}, "involvedObject": {"namespace": "b"}});
        assert_eq!(
            messages(&create_errors("", "Event", &event)),
            ["involvedObject.namespace: Invalid value: \"b\": does not match event.namespace"]
        );
    }
}
