use kcp_sim::openapi::{TypeSchema, documents};
use kcp_sim::resource::Flavor;

use super::*;

/// The OpenAPI v3 document kcp-sim's Kubernetes flavor serves for one builtin kind.
fn document(group: &str, version: &str, kind: &str, plural: &str) -> Value {
    let t = TypeSchema {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
        namespaced: true,
        custom: None,
    };
    let docs = documents(
        std::slice::from_ref(&t),
        Flavor::Kubernetes.kubernetes_version(),
    );
    serde_json::from_slice(&docs[&t.document_path()].body).expect("JSON")
}

fn discovered(
    group: &str,
    kind: &str,
    plural: &str,
    versions: &[(&str, bool, bool)],
) -> Discovered {
    Discovered {
        group: group.into(),
        kind: kind.into(),
        plural: plural.into(),
        singular: kind.to_ascii_lowercase(),
        namespaced: true,
        short_names: Vec::new(),
        categories: Vec::new(),
        versions: versions
            .iter()
            .map(|(name, status, scale)| DiscoveredVersion {
                name: (*name).into(),
                status: *status,
                scale: *scale,
            })
            .collect(),
        preferred: versions[0].0.into(),
    }
}

fn configmap() -> Value {
    let mut d = discovered("", "ConfigMap", "configmaps", &[("v1", false, false)]);
    d.short_names = vec!["cm".into()];
    let docs = BTreeMap::from([(
        "v1".to_owned(),
        document("", "v1", "ConfigMap", "configmaps"),
    )]);
    synthesize_crd(&d, &OpenApiModels::V3(docs.clone())).expect("synthesised")
}

fn role() -> Value {
    let group = "rbac.authorization.k8s.io";
    let d = discovered(group, "Role", "roles", &[("v1", false, false)]);
    let docs = BTreeMap::from([("v1".to_owned(), document(group, "v1", "Role", "roles"))]);
    synthesize_crd(&d, &OpenApiModels::V3(docs.clone())).expect("synthesised")
}

fn deployment() -> Value {
    let d = discovered("apps", "Deployment", "deployments", &[("v1", true, true)]);
    let docs = BTreeMap::from([(
        "v1".to_owned(),
        document("apps", "v1", "Deployment", "deployments"),
    )]);
    synthesize_crd(&d, &OpenApiModels::V3(docs.clone())).expect("synthesised")
}

/// Every key of a name anywhere in `v`, removed (keeps big snapshots reviewable).
fn without(mut v: Value, key: &str) -> Value {
    fn strip(v: &mut Value, key: &str) {
        match v {
            Value::Object(o) => {
                o.remove(key);
                o.values_mut().for_each(|v| strip(v, key));
            }
            Value::Array(a) => a.iter_mut().for_each(|v| strip(v, key)),
            _ => {}
        }
    }
    strip(&mut v, key);
    v
}

fn find_key(v: &Value, key: &str) -> bool {
    match v {
        Value::Object(o) => o.contains_key(key) || o.values().any(|v| find_key(v, key)),
        Value::Array(a) => a.iter().any(|v| find_key(v, key)),
        _ => false,
    }
}

/// kcp-sim's schema compiler: refuses what kube-apiserver refuses (non-structural schemas).
fn compiles(crd: &Value) {
    let mut crd = crd.clone();
    crd["metadata"]["uid"] = json!("u");
    if let Err(e) = kcp_sim::schema::compile_crd(&crd) {
        panic!("the synthesised CRD is refused: {e:?}");
    }
}

#[test]
fn a_configmap_crd_matches_snapshot() {
    insta::assert_yaml_snapshot!(configmap());
}

#[test]
fn a_role_crd_matches_snapshot() {
    insta::assert_yaml_snapshot!(role());
}

#[test]
fn a_deployment_crd_matches_snapshot_without_descriptions() {
    insta::assert_yaml_snapshot!(without(deployment(), "description"));
}

#[test]
fn synthesised_crds_are_structural_as_kube_apiserver_requires() {
    for crd in [configmap(), role(), deployment()] {
        compiles(&crd);
    }
}

#[test]
fn synthesised_crds_are_self_contained() {
    for crd in [configmap(), role(), deployment()] {
        assert!(!find_key(&crd, "$ref"), "{crd}");
        assert!(!find_key(&crd, "allOf"), "{crd}");
        assert!(!find_key(&crd, "x-kubernetes-group-version-kind"));
    }
}

#[test]
fn the_core_group_names_the_crd_plural_dot_core() {
    assert_eq!(configmap()["metadata"]["name"], "configmaps.core");
    assert!(configmap()["metadata"].get("annotations").is_none());
}

#[test]
fn a_protected_group_gets_the_api_approved_annotation() {
    assert_eq!(
        role()["metadata"]["annotations"][API_APPROVED_ANNOTATION],
        API_APPROVED_VALUE
    );
    assert!(is_protected_group("k8s.io"));
    assert!(is_protected_group("x.kubernetes.io"));
    assert!(!is_protected_group("apps"));
    assert!(!is_protected_group("example.com"));
}

#[test]
fn the_root_metadata_is_an_object_as_in_a_crd() {
    let schema = &configmap()["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    assert_eq!(schema["properties"]["metadata"], json!({"type": "object"}));
    assert_eq!(schema["properties"]["kind"]["type"], "string");
    assert!(schema.get("required").is_none());
}

#[test]
fn int_or_string_and_quantity_become_x_kubernetes_int_or_string() {
    let crd = deployment();
    let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    let max_surge =
        &spec["properties"]["strategy"]["properties"]["rollingUpdate"]["properties"]["maxSurge"];
    assert_eq!(max_surge["x-kubernetes-int-or-string"], true);
    assert_eq!(
        max_surge["anyOf"],
        json!([{"type": "integer"}, {"type": "string"}])
    );
    let container =
        &spec["properties"]["template"]["properties"]["spec"]["properties"]["containers"]["items"];
    let limits = &container["properties"]["resources"]["properties"]["limits"];
    assert_eq!(
        limits["additionalProperties"]["x-kubernetes-int-or-string"],
        true
    );
}

#[test]
fn an_embedded_object_meta_preserves_unknown_fields() {
    let crd = deployment();
    let template = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["template"];
    assert_eq!(
        without(template["properties"]["metadata"].clone(), "description"),
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
    );
}

#[test]
fn status_and_scale_subresources_come_from_discovery() {
    let crd = deployment();
    assert_eq!(
        crd["spec"]["versions"][0]["subresources"],
        json!({"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}})
    );
    assert_eq!(
        configmap()["spec"]["versions"][0]["subresources"],
        json!({})
    );
}

#[test]
fn a_multi_version_kind_gets_one_version_each_sorted_by_priority_storage_preferred() {
    let doc = |version: &str| {
        let mut d = document("", "v1", "ConfigMap", "configmaps");
        let model = d["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"].clone();
        d["components"]["schemas"][format!("io.example.{version}.ConfigMap")] = model;
        d["components"]["schemas"][format!("io.example.{version}.ConfigMap")]["x-kubernetes-group-version-kind"] =
            json!([{"group": "example.com", "version": version, "kind": "ConfigMap"}]);
        d
    };
    let mut d = discovered(
        "example.com",
        "ConfigMap",
        "configmaps",
        &[
            ("v1", false, false),
            ("v2beta1", true, false),
            ("v1alpha1", false, false),
        ],
    );
    d.preferred = "v1".into();
    let docs: BTreeMap<String, Value> = ["v1", "v2beta1", "v1alpha1"]
        .iter()
        .map(|v| ((*v).to_owned(), doc(v)))
        .collect();
    let crd = synthesize_crd(&d, &OpenApiModels::V3(docs.clone())).expect("synthesised");
    let versions: Vec<(&str, bool)> = crd["spec"]["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .map(|v| {
            (
                v["name"].as_str().unwrap_or_default(),
                v["storage"] == json!(true),
            )
        })
        .collect();
    assert_eq!(
        versions,
        [("v1alpha1", false), ("v2beta1", false), ("v1", true)]
    );
    assert_eq!(
        crd["spec"]["versions"][1]["subresources"],
        json!({"status": {}})
    );
    compiles(&crd);
}

#[test]
fn a_version_without_a_model_is_an_error_naming_it() {
    let d = discovered("", "ConfigMap", "configmaps", &[("v1", false, false)]);
    let docs = BTreeMap::from([("v1".to_owned(), document("", "v1", "Secret", "secrets"))]);
    let err = synthesize_crd(&d, &OpenApiModels::V3(docs.clone())).expect_err("no model");
    assert!(err.contains("v1, Kind=ConfigMap"), "{err}");
    let err = synthesize_crd(&d, &OpenApiModels::V3(BTreeMap::new())).expect_err("no document");
    assert!(
        err.contains("no OpenAPI document for version \"v1\""),
        "{err}"
    );
}

#[test]
fn a_recursive_definition_stops_at_the_recursion_point() {
    let schemas = json!({
        "Node": {"type": "object", "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
            "parent": {"allOf": [{"$ref": "#/components/schemas/Node"}], "description": "Up."},
        }},
    });
    let schema = structural_schema(schemas.as_object().expect("map"), "Node");
    assert_eq!(
        schema["properties"]["children"]["items"],
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
    );
    assert_eq!(
        schema["properties"]["parent"],
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true, "description": "Up."})
    );
}

#[test]
fn a_map_list_whose_keys_are_neither_required_nor_defaulted_becomes_atomic() {
    let schemas = json!({"K": {"type": "object", "properties": {
        "good": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}},
        "bad": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"],
            "items": {"type": "object", "required": ["port"], "properties": {
                "port": {"type": "integer"}, "protocol": {"type": "string"}}}},
        "set": {"type": "array", "x-kubernetes-list-type": "set", "x-kubernetes-patch-strategy": "merge",
            "items": {"type": "string"}},
    }}});
    let schema = structural_schema(schemas.as_object().expect("map"), "K");
    let props = &schema["properties"];
    assert_eq!(props["good"]["x-kubernetes-list-map-keys"], json!(["name"]));
    assert!(props["bad"].get("x-kubernetes-list-type").is_none());
    assert!(props["bad"].get("x-kubernetes-list-map-keys").is_none());
    assert_eq!(
        props["set"],
        json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}})
    );
}
