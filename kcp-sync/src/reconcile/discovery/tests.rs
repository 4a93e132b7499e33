use std::collections::BTreeMap;

use serde_json::json;

use super::*;

/// A server answering fixed documents (404 for every other path).
struct Fixed(BTreeMap<String, Value>);

#[async_trait]
impl ApiDocuments for Fixed {
    async fn get_json(&self, path: &str) -> Result<Option<Value>> {
        Ok(self.0.get(path).cloned())
    }
}

fn fixed(entries: &[(&str, Value)]) -> Fixed {
    Fixed(
        entries
            .iter()
            .map(|(p, v)| ((*p).to_owned(), v.clone()))
            .collect(),
    )
}

fn core() -> Fixed {
    fixed(&[
        ("/api", json!({"kind": "APIVersions", "versions": ["v1"]})),
        (
            "/api/v1",
            json!({"resources": [
                {"name": "configmaps", "singularName": "configmap", "namespaced": true, "kind": "ConfigMap", "shortNames": ["cm"]},
                {"name": "namespaces", "singularName": "namespace", "namespaced": false, "kind": "Namespace"},
                {"name": "namespaces/status", "singularName": "", "namespaced": false, "kind": "Namespace"},
            ]}),
        ),
        ("/openapi/v3/api/v1", json!({"components": {"schemas": {}}})),
    ])
}

/// `widgets.example.com` served as v1 (preferred), v2beta1 (with status and scale) and v1alpha1.
fn multi_version() -> Fixed {
    let list = |status: bool| {
        let mut resources = vec![json!({"name": "widgets", "singularName": "widget",
            "namespaced": true, "kind": "Widget", "categories": ["all"]})];
        if status {
            resources.push(json!({"name": "widgets/status", "kind": "Widget"}));
            resources.push(json!({"name": "widgets/scale", "kind": "Scale"}));
        }
        json!({ "resources": resources })
    };
    fixed(&[
        (
            "/apis/example.com",
            json!({"versions": [{"version": "v2beta1"}, {"version": "v1"}, {"version": "v1alpha1"}],
                "preferredVersion": {"version": "v1"}}),
        ),
        ("/apis/example.com/v1", list(false)),
        ("/apis/example.com/v2beta1", list(true)),
        ("/apis/example.com/v1alpha1", list(false)),
    ])
}

#[tokio::test]
async fn a_single_version_core_kind_is_discovered_with_its_names_and_scope() {
    let d = discover(&core(), "", "ConfigMap").await.unwrap().unwrap();
    assert_eq!(
        d,
        Discovered {
            group: String::new(),
            kind: "ConfigMap".into(),
            plural: "configmaps".into(),
            singular: "configmap".into(),
            namespaced: true,
            short_names: vec!["cm".into()],
            categories: Vec::new(),
            versions: vec![DiscoveredVersion {
                name: "v1".into(),
                status: false,
                scale: false
            }],
            preferred: "v1".into(),
        }
    );
}

#[tokio::test]
async fn a_status_subresource_is_discovered_for_its_kind_only() {
    let ns = discover(&core(), "", "Namespace").await.unwrap().unwrap();
    assert!(ns.versions[0].status);
    assert!(!ns.namespaced);
}

#[tokio::test]
async fn a_multi_version_kind_lists_every_version_with_the_preferred_one_first() {
    let d = discover(&multi_version(), "example.com", "Widget")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(d.preferred, "v1");
    let versions: Vec<(&str, bool, bool)> = d
        .versions
        .iter()
        .map(|v| (v.name.as_str(), v.status, v.scale))
        .collect();
    assert_eq!(
        versions,
        [
            ("v1", false, false),
            ("v2beta1", true, true),
            ("v1alpha1", false, false)
        ]
    );
    assert_eq!(d.categories, ["all"]);
}

#[tokio::test]
async fn an_unknown_kind_or_group_is_not_discovered() {
    assert!(discover(&core(), "", "Gadget").await.unwrap().is_none());
    assert!(
        discover(&core(), "nope.io", "Gadget")
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn a_missing_openapi_document_is_a_permanent_error_saying_v3_is_needed() {
    let d = discover(&multi_version(), "example.com", "Widget")
        .await
        .unwrap()
        .unwrap();
    let err = openapi_documents(&multi_version(), &d).await.unwrap_err();
    assert!(!err.is_transient());
    let text = err.to_string();
    assert!(text.contains("/openapi/v3/apis/example.com/v1"), "{text}");
    assert!(text.contains("Kubernetes 1.27"), "{text}");
}

#[tokio::test]
async fn the_openapi_document_of_each_version_is_read() {
    let d = discover(&core(), "", "ConfigMap").await.unwrap().unwrap();
    let docs = openapi_documents(&core(), &d).await.unwrap();
    assert_eq!(docs.keys().collect::<Vec<_>>(), ["v1"]);
}

#[tokio::test]
async fn a_resource_is_named_by_its_kind_in_its_group_versions_list() {
    let widgets = ("example.com", "v2beta1", "widgets");
    let kind = kind_of_resource(&multi_version(), widgets).await.unwrap();
    assert_eq!(kind.as_deref(), Some("Widget"));
    let scale = ("example.com", "v2beta1", "widgets/scale");
    let kind = kind_of_resource(&multi_version(), scale).await.unwrap();
    assert_eq!(kind.as_deref(), Some("Scale"));
}

#[tokio::test]
async fn a_resource_of_an_unserved_group_version_has_no_kind() {
    let gadgets = ("example.com", "v1", "gadgets");
    assert_eq!(
        kind_of_resource(&multi_version(), gadgets).await.unwrap(),
        None
    );
    let elsewhere = ("nope.io", "v1", "widgets");
    assert_eq!(
        kind_of_resource(&multi_version(), elsewhere).await.unwrap(),
        None
    );
}
