use serde_json::{Value, json};

use super::schema_of;

fn convert(definitions: Value, name: &str) -> Value {
    schema_of(definitions.as_object().unwrap(), name).unwrap()
}

#[test]
fn a_property_description_wins_over_the_referenced_definitions() {
    let schema = convert(
        json!({
            "a.Root": {"type": "object", "description": "root", "properties": {
                "spec": {"$ref": "#/definitions/a.Spec", "description": "the spec"},
                "other": {"$ref": "#/definitions/a.Spec"}}},
            "a.Spec": {"type": "object", "description": "a spec", "properties": {
                "size": {"type": "string", "enum": ["s"], "default": "s", "pattern": "s"}}},
        }),
        "a.Root",
    );
    assert_eq!(schema["properties"]["spec"]["description"], "the spec");
    assert_eq!(schema["properties"]["other"]["description"], "a spec");
    assert_eq!(
        schema["properties"]["spec"]["properties"]["size"],
        json!({"type": "string"}),
        "enum, default and pattern have no place in the model"
    );
}

#[test]
fn the_roots_metadata_is_a_bare_object_and_an_embedded_one_preserves_fields() {
    let schema = convert(
        json!({
            "a.Root": {"type": "object", "properties": {
                "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "description": "m"},
                "template": {"$ref": "#/definitions/a.Template"}}},
            "a.Template": {"type": "object", "properties": {
                "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "description": "tm"}}},
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"type": "object", "properties": {}},
        }),
        "a.Root",
    );
    assert_eq!(schema["properties"]["metadata"], json!({"type": "object"}));
    assert_eq!(
        schema["properties"]["template"]["properties"]["metadata"],
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true, "description": "tm"})
    );
}

#[test]
fn a_merge_patched_list_of_objects_is_a_map_list_whose_items_require_the_key() {
    let schema = convert(
        json!({
            "a.Root": {"type": "object", "properties": {
                "ports": {"type": "array", "items": {"$ref": "#/definitions/io.k8s.api.core.v1.ContainerPort"},
                    "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "containerPort",
                    "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["containerPort", "protocol"]}}},
            "io.k8s.api.core.v1.ContainerPort": {"type": "object", "required": ["containerPort"], "properties": {
                "containerPort": {"type": "integer", "format": "int32"},
                "protocol": {"type": "string"}}},
        }),
        "a.Root",
    );
    let ports = &schema["properties"]["ports"];
    assert_eq!(ports["x-kubernetes-list-type"], "map");
    assert_eq!(
        ports["items"]["required"],
        json!(["containerPort"]),
        "protocol is defaulted"
    );
    assert_eq!(ports["items"]["properties"]["protocol"]["default"], "TCP");
}

#[test]
fn a_list_with_only_a_patch_strategy_gets_its_type_from_it() {
    let schema = convert(
        json!({"a.Root": {"type": "object", "properties": {
            "names": {"type": "array", "items": {"type": "string"}, "x-kubernetes-patch-strategy": "merge"},
            "flags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-patch-strategy": "replace"}}}}),
        "a.Root",
    );
    assert_eq!(
        schema["properties"]["names"]["x-kubernetes-list-type"],
        "set"
    );
    assert_eq!(
        schema["properties"]["flags"]["x-kubernetes-list-type"],
        "atomic"
    );
}

#[test]
fn an_object_without_properties_is_a_map_of_embedded_resources() {
    let schema = convert(
        json!({"a.Root": {"type": "object", "properties": {
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "anything": {"type": "object", "description": "free"}}}}),
        "a.Root",
    );
    assert_eq!(
        schema["properties"]["labels"],
        json!({"type": "object", "additionalProperties": {"type": "string"}})
    );
    assert_eq!(
        schema["properties"]["anything"],
        json!({"type": "object", "description": "free",
            "additionalProperties": {"description": "free", "x-kubernetes-embedded-resource": true}})
    );
}

#[test]
fn int_or_string_and_quantity_are_fixed_schemas() {
    let schema = convert(
        json!({
            "a.Root": {"type": "object", "properties": {
                "port": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.util.intstr.IntOrString"},
                "cpu": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.api.resource.Quantity"}}},
            "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": "string", "format": "int-or-string"},
            "io.k8s.apimachinery.pkg.api.resource.Quantity": {"type": "string"},
        }),
        "a.Root",
    );
    assert_eq!(
        schema["properties"]["port"]["x-kubernetes-int-or-string"],
        true
    );
    assert_eq!(
        schema["properties"]["cpu"]["anyOf"],
        json!([{"type": "integer"}, {"type": "string"}])
    );
    assert!(schema["properties"]["cpu"]["pattern"].is_string());
}

#[test]
fn a_recursive_reference_is_refused_naming_it() {
    let err = schema_of(
        json!({"a.Node": {"type": "object", "properties": {"next": {"$ref": "#/definitions/a.Node"}}}})
            .as_object()
            .unwrap(),
        "a.Node",
    );
    // The root itself is not "being expanded" (upstream marks references only), so the first
    // reference expands and the second one is the recursion.
    assert!(
        err.unwrap_err()
            .contains("recursive schema are not supported: a.Node")
    );
}
