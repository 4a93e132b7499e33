//! The in-process `ObjectClient` of kcp-sim: the same answers and errors as
//! `KubeObjectClient` over HTTP, and kcp-core's `Applier` running on it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kcp_core::apply::{Applier, ApplierConfig, ApplyPlan, RuleSet};
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::{
    DeleteOptions, DeleteOutcome, Error, KubeObjectClient, ListOptions, ObjectClient, ObjectRef,
    PatchOptions, parse_manifests,
};
use kcp_sim::{Config, ErrorRule, Server, Verb};
use serde_json::json;

fn obj(v: serde_json::Value) -> DynamicObject {
    serde_json::from_value(v).unwrap()
}

fn cm(ns: &str, name: &str) -> DynamicObject {
    obj(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns}, "data": {"k": "v"}}))
}

fn cm_ref(ns: &str, name: &str) -> ObjectRef {
    ObjectRef::namespaced(GroupVersionKind::gvk("", "v1", "ConfigMap"), ns, name)
}

/// The variant name of an error, to compare the two clients' answers.
fn shape(e: &Error) -> String {
    match e {
        Error::KindNotServed { .. } => "KindNotServed".into(),
        Error::NamespaceNotFound { namespace, .. } => format!("NamespaceNotFound({namespace})"),
        Error::Api { code, reason, .. } => format!("Api({code} {reason})"),
        other => format!("{other:?}"),
    }
}

#[tokio::test]
async fn in_process_and_http_clients_report_the_same_errors() {
    let sim = Server::start(Config::default()).await.unwrap();
    let http = KubeObjectClient::new(sim.client("").unwrap());
    let local = sim.object_client("");
    let clients: [&dyn ObjectClient; 2] = [&http, &local];
    let mut answers = Vec::new();
    for (i, client) in clients.iter().enumerate() {
        let missing_ns = client.create(&cm("nowhere", "a")).await.unwrap_err();
        let unknown = client
            .resolve(&GroupVersionKind::gvk("example.io", "v1", "Widget"))
            .await
            .unwrap_err();
        let name = format!("dup{i}");
        client.create(&cm("default", &name)).await.unwrap();
        let dup = client.create(&cm("default", &name)).await.unwrap_err();
        answers.push([shape(&missing_ns), shape(&unknown), shape(&dup)]);
        assert!(missing_ns.is_transient() && unknown.is_transient());
        assert!(dup.is_already_exists());
    }
    assert_eq!(answers[0], answers[1]);
    assert_eq!(
        answers[0],
        [
            "NamespaceNotFound(nowhere)".to_string(),
            "KindNotServed".to_string(),
            "Api(409 AlreadyExists)".to_string()
        ]
    );
}

#[tokio::test]
async fn get_of_a_missing_object_is_none_and_delete_reports_its_outcome() {
    let sim = Server::start(Config::default()).await.unwrap();
    let client = sim.object_client("");
    assert!(client.get(&cm_ref("default", "a")).await.unwrap().is_none());
    let mut held = cm("default", "held");
    held.metadata.finalizers = Some(vec!["example.io/hold".into()]);
    client.create(&held).await.unwrap();
    client.create(&cm("default", "free")).await.unwrap();
    let opts = DeleteOptions::default();
    assert!(matches!(
        client
            .delete(&cm_ref("default", "held"), &opts)
            .await
            .unwrap(),
        DeleteOutcome::Terminating(_)
    ));
    assert_eq!(
        client
            .delete(&cm_ref("default", "free"), &opts)
            .await
            .unwrap(),
        DeleteOutcome::Deleted
    );
    assert_eq!(
        client
            .delete(&cm_ref("default", "free"), &opts)
            .await
            .unwrap(),
        DeleteOutcome::AlreadyGone
    );
}

#[tokio::test]
async fn lists_honour_label_selectors_in_process() {
    let sim = Server::start(Config::default()).await.unwrap();
    let client = sim.object_client("");
    let mut labelled = cm("default", "a");
    labelled.metadata.labels = Some([("tier".to_string(), "db".to_string())].into());
    client.create(&labelled).await.unwrap();
    client.create(&cm("default", "b")).await.unwrap();
    let gvk = GroupVersionKind::gvk("", "v1", "ConfigMap");
    let list = client
        .list(&gvk, Some("default"), &ListOptions::labels("tier in (db)"))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 1);
    let err = client
        .list(&gvk, None, &ListOptions::labels("tier in (db"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::InvalidObject { ref field, .. } if field == "labelSelector"),
        "{err}"
    );
}

#[tokio::test]
async fn injected_faults_apply_to_the_in_process_client_too() {
    let sim = Server::start(Config::default()).await.unwrap();
    sim.faults().add_error(
        ErrorRule::new(503, 1.0)
            .verbs([Verb::Create])
            .resources(["configmaps"]),
    );
    let client = sim.object_client("");
    let err = client.create(&cm("default", "a")).await.unwrap_err();
    assert!(matches!(err, Error::Api { code: 503, .. }));
    assert!(err.is_transient());
}

#[tokio::test]
async fn an_after_the_write_fault_fails_the_answer_but_the_write_lands() {
    let sim = Server::start(Config::default()).await.unwrap();
    sim.faults().add_error(
        ErrorRule::new(503, 1.0)
            .verbs([Verb::Create])
            .resources(["configmaps"])
            .after_the_write(),
    );
    let client = sim.object_client("");
    let err = client.create(&cm("default", "a")).await.unwrap_err();
    assert!(matches!(err, Error::Api { code: 503, .. }), "{err}");
    let target = ObjectRef::from_object(&cm("default", "a")).unwrap();
    assert!(client.get(&target).await.unwrap().is_some());
}

#[tokio::test]
async fn the_applier_applies_a_bundle_listed_in_the_wrong_order() {
    let sim = Server::start(Config::kcp()).await.unwrap();
    let client = sim.object_client("root");
    let bundle = r#"
apiVersion: example.io/v1
kind: Widget
metadata: {name: w, namespace: team}
spec: {size: 1}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: team}
data: {a: "1"}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.io}
spec:
  group: example.io
  scope: Namespaced
  names: {kind: Widget, plural: widgets}
  versions: [{name: v1, served: true, storage: true}]
---
apiVersion: v1
kind: Namespace
metadata: {name: team}
"#;
    let objects = parse_manifests("bundle.yaml", bundle).unwrap();
    let plan = ApplyPlan::build(objects, &RuleSet::default()).unwrap();
    let applier = Applier::new(&client, ApplierConfig::new("test"));
    let report = applier.apply(&plan).await;
    assert!(report.is_complete(), "{report}");
    assert_eq!(report.applied().count(), 4);
    let widget = ObjectRef::namespaced(
        GroupVersionKind::gvk("example.io", "v1", "Widget"),
        "team",
        "w",
    );
    let stored = client.get(&widget).await.unwrap().unwrap();
    assert_eq!(
        stored.metadata.annotations.unwrap()["kcp.io/cluster"],
        "root"
    );

    // Applied again, only the Namespace changes: a Namespace applied with its name alone has
    // no fields owned, so kube's `before-first-apply` manager claims its label and finalizers
    // (conformance case apply-reset/an-apply-of-only-a-namespaces-name-applied-again).
    let again = applier.apply(&plan).await;
    assert_eq!(again.unchanged().count(), 3, "{again}");
    let changed: Vec<&str> = again
        .applied()
        .map(|r| r.object.gvk.kind.as_str())
        .collect();
    assert_eq!(changed, ["Namespace"], "{again}");
    let third = applier.apply(&plan).await;
    assert_eq!(third.unchanged().count(), 4, "{third}");
}

#[tokio::test]
async fn server_side_apply_in_process_honours_ownership() {
    let sim = Server::start(Config::default()).await.unwrap();
    let client = sim.object_client("");
    let mine = cm("default", "shared");
    client
        .apply(
            &mine,
            &PatchOptions {
                field_manager: Some("me".into()),
                force: false,
            },
        )
        .await
        .unwrap();
    let theirs = obj(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "shared", "namespace": "default"}, "data": {"k": "other"}}));
    let err = client
        .apply(
            &theirs,
            &PatchOptions {
                field_manager: Some("them".into()),
                force: false,
            },
        )
        .await
        .unwrap_err();
    assert!(err.is_conflict(), "{err}");
    client
        .apply(&theirs, &PatchOptions::apply("them"))
        .await
        .unwrap();
}
