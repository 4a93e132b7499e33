use super::*;

fn builtin_type(group: &str, version: &str, kind: &str) -> TypeSchema {
    TypeSchema {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: format!("{}s", kind.to_ascii_lowercase()),
        namespaced: true,
        custom: None,
    }
}

fn crontab(schema: Value) -> TypeSchema {
    TypeSchema {
        group: "stable.example.com".into(),
        version: "v1".into(),
        kind: "CronTab".into(),
        plural: "crontabs".into(),
        namespaced: true,
        custom: Some(schema),
    }
}

fn document(types: &[TypeSchema], path: &str) -> Value {
    let docs = documents(types, "v1.34.2");
    let doc = docs.get(path).expect("document");
    serde_json::from_slice(&doc.body).expect("JSON")
}

fn schema<'a>(doc: &'a Value, name: &str) -> &'a Value {
    &doc["components"]["schemas"][name]
}

/// Every `$ref` in a value.
fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            if let Some(Value::String(r)) = o.get("$ref") {
                out.push(r.clone());
            }
            o.values().for_each(|v| refs(v, out));
        }
        Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

#[test]
fn a_builtin_kind_is_named_as_kube_names_it_and_carries_its_group_version_kind() {
    let doc = document(&[builtin_type("", "v1", "ConfigMap")], "api/v1");
    let cm = schema(&doc, "io.k8s.api.core.v1.ConfigMap");
    assert_eq!(
        cm["x-kubernetes-group-version-kind"],
        json!([{"group": "", "kind": "ConfigMap", "version": "v1"}])
    );
    assert_eq!(cm["properties"]["data"]["type"], "object");
    assert_eq!(doc["openapi"], "3.0.0");
}

#[test]
fn a_builtin_kind_does_not_require_metadata() {
    let doc = document(&[builtin_type("", "v1", "ConfigMap")], "api/v1");
    assert!(
        schema(&doc, "io.k8s.api.core.v1.ConfigMap")
            .get("required")
            .is_none()
    );
}

#[test]
fn every_reference_resolves_inside_its_document() {
    let types = [
        builtin_type("apps", "v1", "Deployment"),
        builtin_type("apps", "v1", "StatefulSet"),
    ];
    let doc = document(&types, "apis/apps/v1");
    let mut found = Vec::new();
    refs(&doc, &mut found);
    assert!(!found.is_empty());
    for r in found {
        let name = r.strip_prefix(REF_PREFIX).expect("a components reference");
        assert!(
            doc["components"]["schemas"].get(name).is_some(),
            "{r} is not defined"
        );
    }
}

#[test]
fn the_kubernetes_specials_keep_their_extensions() {
    let doc = document(&[builtin_type("apps", "v1", "Deployment")], "apis/apps/v1");
    let int_or_string = schema(&doc, "io.k8s.apimachinery.pkg.util.intstr.IntOrString");
    assert_eq!(int_or_string["x-kubernetes-int-or-string"], true);
    let time = schema(&doc, "io.k8s.apimachinery.pkg.apis.meta.v1.Time");
    assert_eq!(
        (&time["type"], &time["format"]),
        (&json!("string"), &json!("date-time"))
    );
    let quantity = schema(&doc, "io.k8s.apimachinery.pkg.api.resource.Quantity");
    assert!(quantity.is_object(), "Quantity is defined");
}

#[test]
fn a_reference_with_a_description_is_wrapped_in_all_of() {
    let doc = document(&[builtin_type("", "v1", "ConfigMap")], "api/v1");
    let metadata = &schema(&doc, "io.k8s.api.core.v1.ConfigMap")["properties"]["metadata"];
    assert_eq!(
        metadata["allOf"],
        json!([{"$ref": format!("{REF_PREFIX}{OBJECT_META}")}])
    );
}

#[test]
fn a_custom_kind_is_named_by_its_reversed_group() {
    assert_eq!(
        custom_definition_name("stable.example.com", "v1", "CronTab"),
        "com.example.stable.v1.CronTab"
    );
}

#[test]
fn a_custom_kind_gets_api_version_kind_and_a_metadata_reference() {
    let t = crontab(json!({"type": "object", "properties": {"spec": {"type": "object"}}}));
    let doc = document(&[t], "apis/stable.example.com/v1");
    let ct = schema(&doc, "com.example.stable.v1.CronTab");
    assert_eq!(ct["properties"]["spec"], json!({"type": "object"}));
    assert_eq!(ct["properties"]["apiVersion"]["type"], "string");
    assert_eq!(
        ct["properties"]["metadata"]["allOf"][0]["$ref"],
        format!("{REF_PREFIX}{OBJECT_META}")
    );
    assert!(schema(&doc, OBJECT_META).is_object());
    assert_eq!(
        ct["x-kubernetes-group-version-kind"],
        json!([{"group": "stable.example.com", "kind": "CronTab", "version": "v1"}])
    );
}

#[test]
fn the_hash_changes_with_the_document_and_only_then() {
    let a = crontab(json!({"type": "object"}));
    let b = crontab(json!({"type": "object", "description": "changed"}));
    let path = "apis/stable.example.com/v1";
    let hash = |t: &TypeSchema| {
        documents(std::slice::from_ref(t), "v1.34.2")[path]
            .hash
            .clone()
    };
    assert_eq!(hash(&a), hash(&a.clone()));
    assert_ne!(hash(&a), hash(&b));
}

#[test]
fn kcp_kinds_are_described_from_their_derived_crds() {
    let doc = document(
        &[builtin_type("tenancy.kcp.io", "v1alpha1", "Workspace")],
        "apis/tenancy.kcp.io/v1alpha1",
    );
    let ws = schema(&doc, "io.kcp.tenancy.v1alpha1.Workspace");
    assert!(ws["properties"]["spec"].is_object());
}

#[test]
fn the_index_names_each_document_with_its_url_and_hash() {
    let docs = documents(&[builtin_type("", "v1", "ConfigMap")], "v1.34.2");
    let index = index("/clusters/root", &docs);
    let url = index["paths"]["api/v1"]["serverRelativeURL"]
        .as_str()
        .expect("url");
    assert_eq!(
        url,
        format!(
            "/clusters/root/openapi/v3/api/v1?hash={}",
            docs["api/v1"].hash
        )
    );
}

#[test]
fn each_kind_has_a_read_operation_naming_its_group_version_kind() {
    let mut ns = builtin_type("", "v1", "Namespace");
    ns.namespaced = false;
    let doc = document(&[builtin_type("", "v1", "ConfigMap"), ns], "api/v1");
    let cm = &doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["get"];
    assert_eq!(
        cm["x-kubernetes-group-version-kind"],
        json!({"group": "", "kind": "ConfigMap", "version": "v1"})
    );
    assert_eq!(
        cm["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
        format!("{REF_PREFIX}io.k8s.api.core.v1.ConfigMap")
    );
    assert!(doc["paths"]["/api/v1/namespaces/{name}"]["get"].is_object());
}

#[test]
fn every_kind_kcp_sim_serves_has_a_schema() {
    use crate::resource::{Flavor, builtin_types};
    for flavor in [Flavor::Kubernetes, Flavor::Kcp] {
        for t in builtin_types(flavor) {
            for version in &t.versions {
                assert!(
                    builtin(&t.group, version, &t.kind).is_some(),
                    "{}/{version} {} has no OpenAPI schema",
                    t.group,
                    t.kind
                );
            }
        }
    }
}

#[test]
fn a_builtin_field_has_its_go_documentation_as_description() {
    let name = field_description("", "v1", "ConfigMap", &["metadata", "name"]).unwrap();
    assert!(
        name.starts_with("Name must be unique within a namespace."),
        "{name}"
    );
    let created =
        field_description("", "v1", "Secret", &["metadata", "creationTimestamp"]).unwrap();
    assert!(
        created.starts_with("CreationTimestamp is a timestamp"),
        "{created}"
    );
    let data = field_description("", "v1", "ConfigMap", &["data"]).unwrap();
    assert!(
        data.starts_with("Data contains the configuration data."),
        "{data}"
    );
    assert!(field_description("", "v1", "ConfigMap", &["nothing"]).is_none());
}
