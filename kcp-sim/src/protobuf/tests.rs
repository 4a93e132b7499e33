#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;

use super::*;

/// What kubectl 1.32 sends for `kubectl create namespace demo` (captured on the wire).
const KUBECTL_NAMESPACE: &[u8] = b"k8s\x00\n\x0f\n\x02v1\x12\tNamespace\x12\x1c\n\x14\n\x04demo\x12\x00\x1a\x00\"\x00*\x002\x008\x00B\x00\x12\x00\x1a\x02\n\x00\x1a\x00\"\x00";

fn round_trip(object: Value) -> Value {
    decode_envelope(&encode_envelope(&object).unwrap()).unwrap()
}

#[test]
fn kubectl_create_namespace_decodes_to_the_json_kube_would_store() {
    assert_eq!(
        decode_envelope(KUBECTL_NAMESPACE).unwrap(),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}, "spec": {}, "status": {}})
    );
}

#[test]
fn secret_bytes_are_base64_in_json() {
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
        "type": "Opaque", "data": {"password": "aHVudGVyMg==", "empty": ""}});
    assert_eq!(round_trip(secret.clone()), secret);
}

#[test]
fn int_or_string_is_a_number_or_a_string() {
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"ports": [
            {"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080},
            {"name": "https", "port": 443, "protocol": "TCP", "targetPort": "https"}],
            "type": "ClusterIP"},
        "status": {"loadBalancer": {}}});
    assert_eq!(round_trip(service.clone()), service);
}

#[test]
fn times_are_rfc3339_and_micro_times_keep_microseconds() {
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "l", "creationTimestamp": "2026-11-23T20:00:01Z"},
        "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15,
            "renewTime": "2026-11-23T20:00:02.123456Z", "leaseTransitions": 0}});
    assert_eq!(round_trip(lease.clone()), lease);
}

#[test]
fn pointer_fields_keep_their_zero_and_plain_fields_drop_it() {
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"replicas": 0, "minReadySeconds": 0, "paused": false,
            "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "nginx",
                    "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}},
                    "ports": [{"containerPort": 80, "hostPort": 0}]}],
                    "automountServiceAccountToken": false}}},
        "status": {}});
    let got = round_trip(deployment);
    assert_eq!(got["spec"]["replicas"], 0);
    assert!(got["spec"].get("minReadySeconds").is_none(), "{got}");
    assert!(got["spec"].get("paused").is_none(), "{got}");
    let pod = &got["spec"]["template"]["spec"];
    assert_eq!(pod["automountServiceAccountToken"], false);
    assert_eq!(
        pod["containers"][0]["ports"],
        json!([{"containerPort": 80}])
    );
    assert_eq!(
        pod["containers"][0]["resources"]["limits"],
        json!({"cpu": "500m", "memory": "1Gi"})
    );
}

#[test]
fn inline_structs_are_lifted_into_their_parent() {
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"selector": {}, "template": {"spec": {"containers": [],
            "volumes": [{"name": "cfg", "configMap": {"name": "settings", "defaultMode": 420}}]}}},
        "status": {}});
    let got = round_trip(deployment.clone());
    assert_eq!(
        got["spec"]["template"]["spec"]["volumes"],
        deployment["spec"]["template"]["spec"]["volumes"]
    );
}

#[test]
fn crd_schemas_keep_their_json_names_and_either_or_forms() {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.io"},
        "spec": {"group": "example.io", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true,
                    "properties": {
                        "spec": {"type": "object", "additionalProperties": {"type": "string"},
                            "default": {"size": 1}},
                        "tags": {"type": "array", "items": {"type": "string"},
                            "x-kubernetes-list-type": "set"},
                        "mode": {"type": "string", "enum": ["a", "b"]},
                        "open": {"type": "object", "additionalProperties": false}}}}}]},
        "status": {}});
    let got = round_trip(crd.clone());
    assert_eq!(
        got["spec"]["versions"][0]["schema"],
        crd["spec"]["versions"][0]["schema"]
    );
}

#[test]
fn managed_fields_keep_their_fields_json() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "managedFields": [{"manager": "kubectl", "operation": "Apply",
            "apiVersion": "v1", "time": "2026-11-23T20:00:01Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:a": {}}}}]},
        "data": {"a": "1"}});
    assert_eq!(round_trip(cm.clone()), cm);
}

#[test]
fn a_body_without_the_magic_is_a_bad_request() {
    let err = decode_envelope(b"{\"kind\":\"Namespace\"}").unwrap_err();
    assert_eq!((err.code, err.reason), (400, "BadRequest"));
    assert!(err.message.contains("magic"), "{}", err.message);
}

#[test]
fn a_truncated_object_is_a_bad_request_naming_its_kind() {
    // typeMeta {v1, Namespace}, raw = a metadata field that claims 255 bytes and has none.
    let body = b"k8s\x00\n\x0f\n\x02v1\x12\tNamespace\x12\x02\n\xff";
    let err = decode_envelope(body).unwrap_err();
    assert_eq!(err.code, 400);
    assert!(err.message.contains("Namespace"), "{}", err.message);
}

#[test]
fn a_kind_without_a_protobuf_form_is_unsupported_media_type() {
    let widget = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}});
    let mut body = encode_envelope(&widget).unwrap().to_vec();
    // Rename the kind in the envelope: `Namespace` -> `Namespacx` (same length).
    let at = body.windows(9).position(|w| w == b"Namespace").unwrap();
    body[at + 8] = b'x';
    let err = decode_envelope(&body).unwrap_err();
    assert_eq!(err.code, 415);
    assert!(err.message.contains("Namespacx"), "{}", err.message);
}

#[test]
fn custom_resources_are_not_acceptable_as_protobuf() {
    let err =
        encode_envelope(&json!({"apiVersion": "example.io/v1", "kind": "Widget"})).unwrap_err();
    assert_eq!((err.code, err.reason), (406, "NotAcceptable"));
}

#[test]
fn a_field_without_a_place_in_the_message_is_not_acceptable_and_named() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
        "data": {"a": "1"}, "extra": true});
    let err = encode_envelope(&cm).unwrap_err();
    assert_eq!(err.code, 406);
    assert!(err.message.contains("extra"), "{}", err.message);
}

#[test]
fn only_a_protobuf_only_accept_header_asks_for_protobuf() {
    assert!(accepts_only_protobuf("application/vnd.kubernetes.protobuf"));
    assert!(accepts_only_protobuf(
        "application/vnd.kubernetes.protobuf;stream=watch"
    ));
    assert!(!accepts_only_protobuf(
        "application/vnd.kubernetes.protobuf,application/json"
    ));
    assert!(!accepts_only_protobuf("application/json, */*"));
    assert!(!accepts_only_protobuf(""));
}

#[test]
fn watch_frames_are_length_prefixed_watch_events_around_an_enveloped_object() {
    let event = json!({"type": "ADDED", "object": {"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c"}}});
    let frame = encode_watch_event(&event).unwrap();
    let len = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
    assert_eq!(len, frame.len() - 4);
    let schema = Schema::get().unwrap();
    let desc = schema.message(&format!("{META}.WatchEvent")).unwrap();
    let msg = DynamicMessage::decode(desc, &frame[4..]).unwrap();
    let json = to_json::message(schema, &msg, "$").unwrap();
    assert_eq!(json["type"], "ADDED");
    assert_eq!(json["object"]["metadata"]["name"], "c");
}

#[test]
fn a_watch_frame_decodes_back_to_its_event() {
    let event = json!({"type": "MODIFIED", "object": {"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c"}, "data": {"k": "v"}}});
    let frame = encode_watch_event(&event).unwrap();
    assert_eq!(decode_watch_event(&frame[4..]).unwrap(), event);
}

#[test]
fn a_watch_frame_that_is_not_a_watch_event_is_a_bad_request() {
    let err = decode_watch_event(b"\xff\xff\xff").unwrap_err();
    assert_eq!(err.code, 400);
    assert!(err.message.contains("WatchEvent"), "{}", err.message);
}
