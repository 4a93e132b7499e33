//! Each expected text was answered by kube-apiserver v1.34.2 to the same body.

use serde_json::{Value, json};

use super::decode;
use crate::protobuf::schema::Schema;

fn decoded(api_version: &str, kind: &str, mut obj: Value) -> (Result<Vec<String>, String>, Value) {
    let schema = Schema::get().unwrap();
    let desc = schema.message_for(api_version, kind).unwrap();
    let result = decode(schema, &desc, &mut obj);
    (result, obj)
}

fn error_of(api_version: &str, kind: &str, obj: Value) -> String {
    decoded(api_version, kind, obj).0.unwrap_err()
}

#[test]
fn unknown_fields_are_dropped_and_named_by_their_paths() {
    let (unknown, obj) = decoded(
        "apps/v1",
        "Deployment",
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "typo"},
               "spec": {"replica": 2, "template": {"spec": {"containers": [
                   {"name": "c", "image": "nginx", "extra": 1}]}}}}),
    );
    assert_eq!(
        unknown.unwrap(),
        ["spec.replica", "spec.template.spec.containers[0].extra"]
    );
    assert_eq!(obj["spec"].get("replica"), None);
    assert_eq!(
        obj["spec"]["template"]["spec"]["containers"][0],
        json!({"name": "c", "image": "nginx"})
    );
    assert_eq!(obj["apiVersion"], "apps/v1");
}

#[test]
fn unknown_fields_of_metadata_are_named_under_it() {
    let (unknown, _) = decoded(
        "v1",
        "ConfigMap",
        json!({"metadata": {"name": "w1", "extra": 2}, "data": {"a": "b"}}),
    );
    assert_eq!(unknown.unwrap(), ["metadata.extra"]);
}

#[test]
fn a_string_for_an_integer_fails_with_the_struct_and_path_go_names() {
    assert_eq!(
        error_of(
            "apps/v1",
            "Deployment",
            json!({"metadata": {"name": "n2"}, "spec": {"replicas": "two"}})
        ),
        "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
    );
}

#[test]
fn a_number_for_a_map_of_strings_names_the_map_field() {
    assert_eq!(
        error_of(
            "v1",
            "ConfigMap",
            json!({"metadata": {"name": "t1"}, "data": {"a": 1}})
        ),
        "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
    );
    assert_eq!(
        error_of(
            "v1",
            "ConfigMap",
            json!({"metadata": {"name": "n1", "labels": {"a": 1}}})
        ),
        "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"
    );
}

#[test]
fn a_scalar_for_a_struct_or_list_names_the_go_type() {
    assert_eq!(
        error_of(
            "apps/v1",
            "Deployment",
            json!({"metadata": {"name": "n3"}, "spec": "x"})
        ),
        "json: cannot unmarshal string into Go struct field Deployment.spec of type v1.DeploymentSpec"
    );
    assert_eq!(
        error_of(
            "v1",
            "Pod",
            json!({"metadata": {"name": "n5"}, "spec": {"containers": {"name": "c"}}})
        ),
        "json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container"
    );
}

#[test]
fn a_fraction_for_an_integer_is_named_by_its_text() {
    assert_eq!(
        error_of(
            "v1",
            "Pod",
            json!({"metadata": {"name": "n6"}, "spec": {"containers": [
                {"name": "c", "image": "i", "ports": [{"containerPort": 1.5}]}]}})
        ),
        "json: cannot unmarshal number 1.5 into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32"
    );
}

#[test]
fn a_bool_for_an_int_or_string_is_refused_as_int32() {
    assert_eq!(
        error_of(
            "v1",
            "Pod",
            json!({"metadata": {"name": "n8"}, "spec": {"containers": [
                {"name": "c", "image": "i", "livenessProbe": {"httpGet": {"port": true}}}]}})
        ),
        "json: cannot unmarshal bool into Go struct field HTTPGetAction.spec.containers.livenessProbe.httpGet.port of type int32"
    );
}

#[test]
fn a_string_for_a_pointer_bool_names_bool() {
    assert_eq!(
        error_of(
            "v1",
            "ConfigMap",
            json!({"metadata": {"name": "n9"}, "immutable": "yes"})
        ),
        "json: cannot unmarshal string into Go struct field ConfigMap.immutable of type bool"
    );
}

fn time_error(text: Value) -> String {
    error_of(
        "v1",
        "ConfigMap",
        json!({"metadata": {"name": "t", "creationTimestamp": text}}),
    )
}

#[test]
fn timestamps_fail_with_the_words_of_go_time_parse() {
    for (text, expected) in [
        (
            json!("bad"),
            r#"parsing time "bad" as "2006-01-02T15:04:05Z07:00": cannot parse "bad" as "2006""#,
        ),
        (
            json!("2026-13-01T00:00:00Z"),
            r#"parsing time "2026-13-01T00:00:00Z": month out of range"#,
        ),
        (
            json!("2026-01-01"),
            r#"parsing time "2026-01-01" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "T""#,
        ),
        (
            json!("2026-01-01T25:00:00Z"),
            r#"parsing time "2026-01-01T25:00:00Z": hour out of range"#,
        ),
        (
            json!("2026-02-30T00:00:00Z"),
            r#"parsing time "2026-02-30T00:00:00Z": day out of range"#,
        ),
        (
            json!("2026-01-01T00:00:00Zjunk"),
            r#"parsing time "2026-01-01T00:00:00Zjunk": extra text: "junk""#,
        ),
        (
            json!("2026-1-01T00:00:00Z"),
            r#"parsing time "2026-1-01T00:00:00Z" as "2006-01-02T15:04:05Z07:00": cannot parse "1-01T00:00:00Z" as "01""#,
        ),
        (
            json!("2026-01-01T00:00:00+0100"),
            r#"parsing time "2026-01-01T00:00:00+0100" as "2006-01-02T15:04:05Z07:00": cannot parse "+0100" as "Z07:00""#,
        ),
        (
            json!("2026-01-01T00:00:60Z"),
            r#"parsing time "2026-01-01T00:00:60Z": second out of range"#,
        ),
        (
            json!("2026-01-01t00:00:00z"),
            r#"parsing time "2026-01-01t00:00:00z" as "2006-01-02T15:04:05Z07:00": cannot parse "t00:00:00z" as "T""#,
        ),
        (
            json!(5),
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.creationTimestamp of type string",
        ),
    ] {
        assert_eq!(time_error(text.clone()), expected, "{text}");
    }
}

#[test]
fn timestamps_with_fractions_and_offsets_are_accepted() {
    for text in [
        "2026-01-01T00:00:00.5+01:00",
        "2026-02-28T23:59:59Z",
        "2024-02-29T00:00:00-07:00",
    ] {
        let (result, _) = decoded(
            "v1",
            "ConfigMap",
            json!({"metadata": {"name": "t", "creationTimestamp": text}}),
        );
        assert!(result.is_ok(), "{text}: {result:?}");
    }
}

fn quantity_result(q: Value) -> Result<Vec<String>, String> {
    decoded(
        "v1",
        "ResourceQuota",
        json!({"metadata": {"name": "t"}, "spec": {"hard": {"cpu": q}}}),
    )
    .0
}

#[test]
fn quantities_fail_with_the_words_of_parse_quantity() {
    const FORMAT: &str = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
    const SUFFIX: &str = "unable to parse quantity's suffix";
    for (q, expected) in [
        (json!("1.5.5"), FORMAT),
        (json!("1Zi"), FORMAT),
        (json!(""), FORMAT),
        (json!(true), FORMAT),
        (json!({}), FORMAT),
        (json!("1ii"), SUFFIX),
        (json!("1Ki2"), SUFFIX),
        (json!("1mi"), SUFFIX),
        (json!("5e"), SUFFIX),
    ] {
        assert_eq!(quantity_result(q.clone()).unwrap_err(), expected, "{q}");
    }
}

#[test]
fn quantities_kube_accepts_are_accepted() {
    for q in [
        json!("1e3"),
        json!("+1"),
        json!(" 1"),
        json!("1000m"),
        json!("0.5"),
        json!(1.5),
        json!("1Gi"),
        json!("100M"),
        json!("01"),
        json!("1e-3"),
        json!("1E3"),
        json!("-1"),
    ] {
        assert!(quantity_result(q.clone()).is_ok(), "{q}");
    }
}

#[test]
fn empty_omitempty_collections_and_zero_scalars_are_dropped() {
    let (_, obj) = decoded(
        "v1",
        "ConfigMap",
        json!({"metadata": {"name": "d1", "generateName": ""}, "data": {}, "binaryData": {}}),
    );
    assert_eq!(obj, json!({"metadata": {"name": "d1"}}));
}

#[test]
fn pointer_zeroes_and_slices_without_omitempty_stay() {
    let (_, obj) = decoded(
        "apps/v1",
        "Deployment",
        json!({"metadata": {"name": "d"}, "spec": {"replicas": 0, "paused": false}}),
    );
    assert_eq!(obj["spec"], json!({"replicas": 0}));
    let (_, role) = decoded(
        "rbac.authorization.k8s.io/v1",
        "Role",
        json!({"metadata": {"name": "r"}, "rules": [{"verbs": [], "resources": []}]}),
    );
    assert_eq!(role["rules"], json!([{"verbs": []}]));
}

#[test]
fn fields_of_an_embedded_struct_are_known() {
    let (unknown, obj) = decoded(
        "v1",
        "Pod",
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}],
               "volumes": [{"name": "v", "configMap": {"name": "cm"}, "bogus": 1}]}}),
    );
    assert_eq!(unknown.unwrap(), ["spec.volumes[0].bogus"]);
    assert_eq!(
        obj["spec"]["volumes"][0],
        json!({"name": "v", "configMap": {"name": "cm"}})
    );
}

#[test]
fn a_crd_schema_is_read_through_its_either_or_wrappers() {
    let (unknown, _) = decoded(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        json!({"metadata": {"name": "widgets.example.com"}, "spec": {"group": "example.com",
               "versions": [{"name": "v1", "schema": {"openAPIV3Schema": {"type": "object",
                   "properties": {"spec": {"type": "object", "tpye": "x"}},
                   "additionalProperties": {"type": "string", "oops": 1}}}}]}}),
    );
    let unknown = unknown.unwrap();
    assert!(
        unknown
            .contains(&"spec.versions[0].schema.openAPIV3Schema.properties[spec].tpye".to_string()),
        "{unknown:?}"
    );
    assert!(
        unknown.contains(
            &"spec.versions[0].schema.openAPIV3Schema.additionalProperties.oops".to_string()
        ),
        "{unknown:?}"
    );
}

fn with_zero_fields(api_version: &str, kind: &str, mut obj: Value) -> Value {
    let schema = Schema::get().unwrap();
    let desc = schema.message_for(api_version, kind).unwrap();
    super::add_zero_fields(schema, &desc, &mut obj);
    obj
}

/// As kube-apiserver v1.34.2 answered the same creates.
#[test]
fn fields_go_writes_when_left_out_are_added() {
    let role = with_zero_fields(
        "rbac.authorization.k8s.io/v1",
        "Role",
        json!({"metadata": {"name": "r"}}),
    );
    assert_eq!(role["rules"], Value::Null);
    assert!(role.get("rules").is_some());
    let lease = with_zero_fields(
        "coordination.k8s.io/v1",
        "Lease",
        json!({"metadata": {"name": "l"}}),
    );
    assert_eq!(lease["spec"], json!({}));
    let node = with_zero_fields(
        "v1",
        "Node",
        json!({"metadata": {"name": "n"}, "status": {}}),
    );
    assert_eq!(
        node["status"]["daemonEndpoints"],
        json!({"kubeletEndpoint": {"Port": 0}})
    );
    assert_eq!(node["status"]["nodeInfo"]["kubeletVersion"], "");
}

#[test]
fn a_zero_creation_timestamp_is_left_out() {
    let cronjob = with_zero_fields(
        "batch/v1",
        "CronJob",
        json!({"metadata": {"name": "cj"}, "spec": {"schedule": "* * * * *"}}),
    );
    assert_eq!(cronjob["spec"]["jobTemplate"]["metadata"], json!({}));
}
