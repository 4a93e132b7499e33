//! CRD schemas over HTTP, as clients see them: kube-rs gets `422 Invalid` with causes for a
//! custom resource that breaks its schema (create, patch, status), objects come back pruned and
//! defaulted, objects stored before their CRD gained a default read with it, a CRD whose schema is
//! not structural is refused, and kubectl prints kube-apiserver's error text.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use kcp_sim::{Config, Server};
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use serde_json::{Value, json};

fn crd(extra_spec_props: Value) -> Value {
    let mut props = json!({
        "size": {"type": "integer", "minimum": 1, "maximum": 10},
        "mode": {"type": "string", "enum": ["fast", "slow"]},
        "name": {"type": "string", "maxLength": 8,
            "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "name is immutable"}]},
    });
    if let (Some(p), Some(extra)) = (props.as_object_mut(), extra_spec_props.as_object()) {
        p.extend(extra.clone());
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.io"},
        "spec": {"group": "example.io", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "required": ["size"], "properties": props},
                    "status": {"type": "object", "properties": {
                        "phase": {"type": "string", "enum": ["Pending", "Ready"]}}}}}}}]}})
}

async fn crd_api(sim: &Server) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition");
    Api::all_with(sim.client("").unwrap(), &ApiResource::from_gvk(&gvk))
}

async fn widgets(sim: &Server) -> Api<DynamicObject> {
    let crds = crd_api(sim).await;
    crds.create(
        &PostParams::default(),
        &serde_json::from_value(crd(json!({}))).unwrap(),
    )
    .await
    .unwrap();
    let gvk = GroupVersionKind::gvk("example.io", "v1", "Widget");
    Api::namespaced_with(
        sim.client("").unwrap(),
        "default",
        &ApiResource::from_gvk(&gvk),
    )
}

fn widget(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "example.io/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": spec}))
    .unwrap()
}

fn api_status(e: kube::Error) -> Box<kube::core::Status> {
    match e {
        kube::Error::Api(s) => s,
        other => panic!("not an API error: {other}"),
    }
}

async fn sim() -> Server {
    Server::start(Config::default()).await.unwrap()
}

#[tokio::test]
async fn creating_an_invalid_custom_resource_is_422_invalid_with_a_cause_per_field() {
    let sim = sim().await;
    let api = widgets(&sim).await;
    let err = api
        .create(
            &PostParams::default(),
            &widget("w", json!({"size": 11, "mode": "warp"})),
        )
        .await
        .unwrap_err();
    let status = api_status(err);
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        status.message,
        "Widget.example.io \"w\" is invalid: [spec.mode: Unsupported value: \"warp\": supported values: \"fast\", \"slow\", spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10, <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]"
    );
    let details = status.details.unwrap();
    assert_eq!(
        (
            details.kind.as_str(),
            details.group.as_str(),
            details.name.as_str()
        ),
        ("Widget", "example.io", "w")
    );
    let causes: Vec<(String, String)> = details
        .causes
        .iter()
        .map(|c| (c.reason.clone(), c.field.clone()))
        .collect();
    assert_eq!(
        causes,
        [
            (
                "FieldValueNotSupported".to_string(),
                "spec.mode".to_string()
            ),
            ("FieldValueInvalid".to_string(), "spec.size".to_string()),
            // The unsupported value keeps the CEL rules from running, as in kube-apiserver.
            ("FieldValueInvalid".to_string(), "<nil>".to_string())
        ]
    );
    assert!(api.get_opt("w").await.unwrap().is_none());
}

#[tokio::test]
async fn a_missing_required_field_is_field_value_required() {
    let sim = sim().await;
    let api = widgets(&sim).await;
    let status = api_status(
        api.create(&PostParams::default(), &widget("w", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        status.message,
        "Widget.example.io \"w\" is invalid: [spec.size: Required value, <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]"
    );
    assert_eq!(
        status.details.unwrap().causes[0].reason,
        "FieldValueRequired"
    );
}

#[tokio::test]
async fn unknown_fields_are_pruned_from_what_is_stored() {
    let sim = sim().await;
    let api = widgets(&sim).await;
    let created = api
        .create(
            &PostParams::default(),
            &widget("w", json!({"size": 2, "colour": "red"})),
        )
        .await
        .unwrap();
    assert_eq!(created.data["spec"], json!({"size": 2}));
    assert_eq!(api.get("w").await.unwrap().data["spec"], json!({"size": 2}));
}

#[tokio::test]
async fn a_merge_patch_that_breaks_the_schema_is_refused_and_changes_nothing() {
    let sim = sim().await;
    let api = widgets(&sim).await;
    api.create(&PostParams::default(), &widget("w", json!({"size": 2})))
        .await
        .unwrap();
    let err = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 0}})),
        )
        .await
        .unwrap_err();
    assert_eq!(api_status(err).code, 422);
    assert_eq!(api.get("w").await.unwrap().data["spec"]["size"], 2);
}

#[tokio::test]
async fn a_transition_rule_refuses_a_change_on_update() {
    let sim = sim().await;
    let api = widgets(&sim).await;
    api.create(
        &PostParams::default(),
        &widget("w", json!({"size": 2, "name": "a"})),
    )
    .await
    .unwrap();
    let err = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"name": "b"}})),
        )
        .await
        .unwrap_err();
    let status = api_status(err);
    assert_eq!(
        status.message,
        // The value shown is the field's schema type, as kube-apiserver v1.34.2 answered
        // (conformance crd-schemas/a-transition-rule-keeps-a-field-as-it-was).
        "Widget.example.io \"w\" is invalid: spec.name: Invalid value: \"string\": name is immutable"
    );
}

#[tokio::test]
async fn server_side_apply_is_validated_too() {
    let sim = sim().await;
    let api = widgets(&sim).await;
    let pp = PatchParams::apply("test");
    let err = api
        .patch("w", &pp, &Patch::Apply(widget("w", json!({"size": 20}))))
        .await
        .unwrap_err();
    assert_eq!(api_status(err).code, 422);
    api.patch("w", &pp, &Patch::Apply(widget("w", json!({"size": 5}))))
        .await
        .unwrap();
}

#[tokio::test]
async fn the_status_subresource_validates_the_status() {
    let sim = sim().await;
    let api = widgets(&sim).await;
    api.create(&PostParams::default(), &widget("w", json!({"size": 2})))
        .await
        .unwrap();
    let err = api
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Lost"}})),
        )
        .await
        .unwrap_err();
    let status = api_status(err);
    assert_eq!(
        status.message,
        "Widget.example.io \"w\" is invalid: status.phase: Unsupported value: \"Lost\": supported values: \"Pending\", \"Ready\""
    );
    let ok = api
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Ready", "junk": 1}})),
        )
        .await
        .unwrap();
    assert_eq!(ok.data["status"], json!({"phase": "Ready"}));
}

#[tokio::test]
async fn schema_defaults_apply_on_create() {
    let sim = sim().await;
    let crds = crd_api(&sim).await;
    let with_default = crd(json!({"replicas": {"type": "integer", "default": 1}}));
    crds.create(
        &PostParams::default(),
        &serde_json::from_value(with_default).unwrap(),
    )
    .await
    .unwrap();
    let gvk = GroupVersionKind::gvk("example.io", "v1", "Widget");
    let api: Api<DynamicObject> = Api::namespaced_with(
        sim.client("").unwrap(),
        "default",
        &ApiResource::from_gvk(&gvk),
    );
    let created = api
        .create(&PostParams::default(), &widget("w", json!({"size": 2})))
        .await
        .unwrap();
    assert_eq!(created.data["spec"]["replicas"], 1);
}

#[tokio::test]
async fn objects_stored_before_a_crd_gained_a_default_read_with_it() {
    let sim = sim().await;
    let api = widgets(&sim).await;
    let before = api
        .create(&PostParams::default(), &widget("w", json!({"size": 2})))
        .await
        .unwrap();
    let crds = crd_api(&sim).await;
    let mut current = crds.get("widgets.example.io").await.unwrap();
    let updated = crd(json!({"replicas": {"type": "integer", "default": 3}}));
    current.data["spec"] = updated["spec"].clone();
    crds.replace("widgets.example.io", &PostParams::default(), &current)
        .await
        .unwrap();
    let read = api.get("w").await.unwrap();
    assert_eq!(read.data["spec"]["replicas"], 3);
    // Defaulting on read is no write.
    assert_eq!(
        read.metadata.resource_version,
        before.metadata.resource_version
    );
}

#[tokio::test]
async fn a_crd_whose_schema_is_not_structural_is_refused() {
    let sim = sim().await;
    let crds = crd_api(&sim).await;
    let mut bad = crd(json!({}));
    bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["loose"] =
        json!({"description": "no type"});
    let err = crds
        .create(
            &PostParams::default(),
            &serde_json::from_value(bad).unwrap(),
        )
        .await
        .unwrap_err();
    let status = api_status(err);
    assert_eq!(
        status.message,
        "CustomResourceDefinition.apiextensions.k8s.io \"widgets.example.io\" is invalid: spec.validation.openAPIV3Schema.properties[spec].properties[loose].type: Required value: must not be empty for specified object fields"
    );
    assert!(crds.get_opt("widgets.example.io").await.unwrap().is_none());
}

#[tokio::test]
async fn a_crd_whose_rule_does_not_compile_is_refused() {
    let sim = sim().await;
    let crds = crd_api(&sim).await;
    let mut bad = crd(json!({}));
    bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] =
        json!([{"rule": "self.size >"}]);
    let err = crds
        .create(
            &PostParams::default(),
            &serde_json::from_value(bad).unwrap(),
        )
        .await
        .unwrap_err();
    let status = api_status(err);
    assert_eq!(status.code, 422);
    assert_eq!(
        status.details.unwrap().causes[0].field,
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_of_an_invalid_custom_resource_prints_the_api_servers_error() {
    let sim = sim().await;
    widgets(&sim).await;
    let dir = std::env::temp_dir().join(format!(
        "kcp-sim-schema-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig, &[]).unwrap();
    let manifest = dir.join("w.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: example.io/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 11, mode: warp}\n",
    )
    .unwrap();
    let kubectl = std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".to_string());
    let mut cmd = Command::new(&kubectl);
    cmd.arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["apply", "-f"])
        .arg(&manifest);
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("cannot run {kubectl}: {e} (install kubectl or set KUBECTL)"));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("\"w1\" is invalid"), "{stderr}");
    assert!(
        stderr.contains(
            "spec.mode: Unsupported value: \"warp\": supported values: \"fast\", \"slow\""
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10"
        ),
        "{stderr}"
    );
}
