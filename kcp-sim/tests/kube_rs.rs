//! kube-rs against kcp-sim over HTTP: typed and dynamic APIs, server-side apply, watches with
//! `watcher` and `reflector`, and a `Controller` that reconciles.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kcp_sim::{Config, Server};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde_json::json;

async fn sim() -> Server {
    Server::start(Config::default()).await.unwrap()
}

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"app": "demo"}},
        "data": {"k": "v"},
    }))
    .unwrap()
}

const WIDGET_CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.example.io"},
  "spec": {"group": "example.io", "scope": "Namespaced",
    "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
    "versions": [{"name": "v1", "served": true, "storage": true,
      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
      "subresources": {"status": {}}}]}}"#;

async fn until<F: Fn() -> bool>(what: &str, f: F) {
    for _ in 0..200 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test]
async fn typed_config_maps_round_trip_through_create_get_list_replace_and_delete() {
    let sim = sim().await;
    let api: Api<ConfigMap> = Api::namespaced(sim.client("").unwrap(), "default");
    let created = api.create(&PostParams::default(), &cm("a")).await.unwrap();
    assert!(created.metadata.uid.is_some());
    assert!(created.metadata.creation_timestamp.is_some());

    let mut fetched = api.get("a").await.unwrap();
    assert_eq!(fetched.data.as_ref().unwrap()["k"], "v");

    fetched.data = Some([("k".to_string(), "w".to_string())].into());
    let replaced = api
        .replace("a", &PostParams::default(), &fetched)
        .await
        .unwrap();
    assert_ne!(
        replaced.metadata.resource_version,
        created.metadata.resource_version
    );

    let listed = api
        .list(&ListParams::default().labels("app=demo"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);

    api.delete("a", &DeleteParams::default()).await.unwrap();
    let err = api.get("a").await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(s) if s.code == 404 && s.reason == "NotFound"));
}

#[tokio::test]
async fn a_stale_replace_is_a_conflict() {
    let sim = sim().await;
    let api: Api<ConfigMap> = Api::namespaced(sim.client("").unwrap(), "default");
    let first = api.create(&PostParams::default(), &cm("a")).await.unwrap();
    let mut second = first.clone();
    api.replace("a", &PostParams::default(), &first)
        .await
        .unwrap();
    second.data = Some([("k".to_string(), "stale".to_string())].into());
    // `first` was unchanged, so that replace did not bump the version; change something first.
    let mut bumped = api.get("a").await.unwrap();
    bumped.data = Some([("k".to_string(), "new".to_string())].into());
    api.replace("a", &PostParams::default(), &bumped)
        .await
        .unwrap();
    let err = api
        .replace("a", &PostParams::default(), &second)
        .await
        .unwrap_err();
    assert!(matches!(err, kube::Error::Api(s) if s.code == 409 && s.reason == "Conflict"));
}

#[tokio::test]
async fn creating_in_a_missing_namespace_is_not_found_naming_the_namespace() {
    let sim = sim().await;
    let api: Api<ConfigMap> = Api::namespaced(sim.client("").unwrap(), "nope");
    let err = api
        .create(&PostParams::default(), &cm("a"))
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("{err:?}")
    };
    assert_eq!(status.code, 404);
    assert_eq!(status.message, "namespaces \"nope\" not found");
}

#[tokio::test]
async fn server_side_apply_creates_then_updates_and_reports_conflicts() {
    let sim = sim().await;
    let api: Api<ConfigMap> = Api::namespaced(sim.client("").unwrap(), "default");
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "a"}, "data": {"x": "1", "y": "2"}});
    api.patch("a", &PatchParams::apply("one"), &Patch::Apply(&body))
        .await
        .unwrap();
    let other = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "a"}, "data": {"x": "changed"}});
    let err = api
        .patch("a", &PatchParams::apply("two"), &Patch::Apply(&other))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 409),
        "{err:?}"
    );
    let forced = api
        .patch(
            "a",
            &PatchParams::apply("two").force(),
            &Patch::Apply(&other),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.unwrap()["x"], "changed");

    // "one" drops y from its intent: the field goes.
    let shrunk =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {}});
    let after = api
        .patch("a", &PatchParams::apply("one"), &Patch::Apply(&shrunk))
        .await
        .unwrap();
    let data = after.data.unwrap();
    assert!(!data.contains_key("y"), "{data:?}");
    assert_eq!(data["x"], "changed");
}

#[tokio::test]
async fn a_crd_becomes_served_and_its_custom_resources_have_a_status_subresource() {
    let sim = sim().await;
    let client = sim.client("").unwrap();
    let crds: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            "customresourcedefinitions",
        ),
    );
    let crd: DynamicObject = serde_json::from_str(WIDGET_CRD).unwrap();
    let created = crds.create(&PostParams::default(), &crd).await.unwrap();
    // As kube-apiserver: the create answers the CRD before its controllers establish it.
    assert_eq!(
        created.data["status"]["conditions"],
        serde_json::Value::Null
    );
    let established = crds.get("widgets.example.io").await.unwrap();
    let conditions = established.data["status"]["conditions"].as_array().unwrap();
    assert!(
        conditions
            .iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
    );

    let discovery = kube::Discovery::new(client.clone()).run().await.unwrap();
    let (ar, caps) = discovery
        .resolve_gvk(&GroupVersionKind::gvk("example.io", "v1", "Widget"))
        .unwrap();
    assert_eq!(ar.plural, "widgets");
    assert!(caps.subresources.iter().any(|(s, _)| s.plural == "status"));

    let widgets: Api<DynamicObject> = Api::namespaced_with(client, "default", &ar);
    let w: DynamicObject = serde_json::from_value(json!({"apiVersion": "example.io/v1",
        "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 1},
        "status": {"ignored": true}}))
    .unwrap();
    let w = widgets.create(&PostParams::default(), &w).await.unwrap();
    assert!(
        w.data.get("status").is_none(),
        "status is ignored on create"
    );
    assert_eq!(w.metadata.generation, Some(1));

    let s = widgets
        .patch_status(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}, "spec": {"size": 9}})),
        )
        .await
        .unwrap();
    assert_eq!(s.data["status"]["ready"], true);
    assert_eq!(s.data["spec"]["size"], 1, "spec is ignored on /status");
    assert_eq!(s.metadata.generation, Some(1));

    let p = widgets
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(
        p.metadata.generation,
        Some(2),
        "a spec change bumps the generation"
    );
}

#[tokio::test]
async fn watcher_and_reflector_follow_creates_updates_and_deletes() {
    let sim = sim().await;
    let api: Api<ConfigMap> = Api::namespaced(sim.client("").unwrap(), "default");
    let (reader, writer) = reflector::store::<ConfigMap>();
    let stream = reflector(writer, watcher(api.clone(), watcher::Config::default()))
        .applied_objects()
        .boxed();
    let task = tokio::spawn(async move { stream.try_for_each(|_| async { Ok(()) }).await });
    reader.wait_until_ready().await.unwrap();
    api.create(&PostParams::default(), &cm("a")).await.unwrap();
    api.create(&PostParams::default(), &cm("b")).await.unwrap();
    until("both objects in the store", || reader.state().len() == 2).await;
    api.delete("a", &DeleteParams::default()).await.unwrap();
    until("the deletion in the store", || reader.state().len() == 1).await;
    task.abort();
}

#[tokio::test]
async fn a_watcher_recovers_from_410_gone_and_dropped_watches() {
    let sim = sim().await;
    let api: Api<ConfigMap> = Api::namespaced(sim.client("").unwrap(), "default");
    let (reader, writer) = reflector::store::<ConfigMap>();
    let stream = reflector(writer, watcher(api.clone(), watcher::Config::default()))
        .default_backoff()
        .applied_objects()
        .boxed();
    let task = tokio::spawn(async move { stream.for_each(|_| async {}).await });
    reader.wait_until_ready().await.unwrap();
    api.create(&PostParams::default(), &cm("a")).await.unwrap();
    until("a", || reader.state().len() == 1).await;

    sim.faults().force_gone(1);
    sim.compact();
    sim.faults().drop_watches();
    api.create(&PostParams::default(), &cm("b")).await.unwrap();
    until("b after the re-list", || reader.state().len() == 2).await;
    task.abort();
}

#[tokio::test]
async fn a_controller_reconciles_every_config_map() {
    let sim = sim().await;
    let client = sim.client("").unwrap();
    let api: Api<ConfigMap> = Api::all(client.clone());
    for name in ["a", "b", "c"] {
        Api::<ConfigMap>::namespaced(client.clone(), "default")
            .create(&PostParams::default(), &cm(name))
            .await
            .unwrap();
    }
    struct Ctx {
        client: kube::Client,
        runs: AtomicUsize,
    }
    async fn reconcile(obj: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, kube::Error> {
        ctx.runs.fetch_add(1, Ordering::SeqCst);
        let ns = obj.metadata.namespace.clone().unwrap();
        let name = obj.metadata.name.clone().unwrap();
        let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ns);
        let patch = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "annotations": {"reconciled": "yes"}}});
        api.patch(&name, &PatchParams::apply("ctl"), &Patch::Apply(&patch))
            .await?;
        Ok(Action::await_change())
    }
    fn error_policy(_: Arc<ConfigMap>, _: &kube::Error, _: Arc<Ctx>) -> Action {
        Action::requeue(Duration::from_millis(100))
    }
    let ctx = Arc::new(Ctx {
        client: client.clone(),
        runs: AtomicUsize::new(0),
    });
    let controller = Controller::new(api.clone(), watcher::Config::default())
        .run(reconcile, error_policy, ctx.clone())
        .for_each(|_| async {});
    let task = tokio::spawn(controller);
    let check = Api::<ConfigMap>::namespaced(client, "default");
    for _ in 0..200 {
        let list = check
            .list(&ListParams::default().labels("app=demo"))
            .await
            .unwrap();
        if list.items.iter().all(|c| {
            c.metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.get("reconciled").map(String::as_str) == Some("yes"))
        }) {
            task.abort();
            assert!(ctx.runs.load(Ordering::SeqCst) >= 3);
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the controller did not reconcile every ConfigMap");
}

#[tokio::test]
async fn deleting_a_namespace_removes_its_contents_and_then_itself() {
    let sim = sim().await;
    let client = sim.client("").unwrap();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "team"}})).unwrap();
    let ns = namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Active"));
    let cms: Api<ConfigMap> = Api::namespaced(client, "team");
    cms.create(&PostParams::default(), &cm("a")).await.unwrap();
    namespaces
        .delete("team", &DeleteParams::default())
        .await
        .unwrap();
    assert!(cms.get_opt("a").await.unwrap().is_none());
    assert!(namespaces.get_opt("team").await.unwrap().is_none());
}

#[tokio::test]
async fn finalizers_hold_an_object_until_the_last_one_is_removed() {
    let sim = sim().await;
    let api: Api<ConfigMap> = Api::namespaced(sim.client("").unwrap(), "default");
    let mut obj = cm("held");
    obj.metadata.finalizers = Some(vec!["example.io/hold".into()]);
    api.create(&PostParams::default(), &obj).await.unwrap();
    api.delete("held", &DeleteParams::default()).await.unwrap();
    let held = api.get("held").await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some());
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(api.get_opt("held").await.unwrap().is_none());
}

/// Makes `child` a dependent of `owner` (a ConfigMap named "owner").
fn owned_by(child: &mut ConfigMap, owner: &ConfigMap) {
    child.metadata.owner_references = Some(vec![
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
            "uid": owner.metadata.uid.clone().unwrap()}))
        .unwrap(),
    ]);
}

#[tokio::test]
async fn owned_objects_are_garbage_collected_with_their_owner() {
    let sim = sim().await;
    let api: Api<ConfigMap> = Api::namespaced(sim.client("").unwrap(), "default");
    let owner = api
        .create(&PostParams::default(), &cm("owner"))
        .await
        .unwrap();
    let mut child = cm("child");
    owned_by(&mut child, &owner);
    api.create(&PostParams::default(), &child).await.unwrap();
    api.delete("owner", &DeleteParams::background())
        .await
        .unwrap();
    assert!(api.get_opt("child").await.unwrap().is_none());
}

#[tokio::test]
async fn orphan_propagation_keeps_dependents_without_the_owner_reference() {
    let sim = sim().await;
    let api: Api<ConfigMap> = Api::namespaced(sim.client("").unwrap(), "default");
    let owner = api
        .create(&PostParams::default(), &cm("owner"))
        .await
        .unwrap();
    let mut child = cm("child");
    owned_by(&mut child, &owner);
    api.create(&PostParams::default(), &child).await.unwrap();
    api.delete("owner", &DeleteParams::orphan()).await.unwrap();
    let child = api.get("child").await.unwrap();
    assert!(child.metadata.owner_references.is_none());
}

/// Removes every finalizer of ConfigMap `name`.
async fn release(api: &Api<ConfigMap>, name: &str) {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn dependents_are_collected_when_the_owners_last_finalizer_is_removed() {
    let sim = sim().await;
    let api: Api<ConfigMap> = Api::namespaced(sim.client("").unwrap(), "default");
    let mut owner = cm("owner");
    owner.metadata.finalizers = Some(vec!["example.io/hold".into()]);
    let owner = api.create(&PostParams::default(), &owner).await.unwrap();
    let mut child = cm("child");
    owned_by(&mut child, &owner);
    api.create(&PostParams::default(), &child).await.unwrap();
    api.delete("owner", &DeleteParams::background())
        .await
        .unwrap();
    assert!(
        api.get_opt("child").await.unwrap().is_some(),
        "the owner still exists while its finalizer holds it"
    );
    release(&api, "owner").await;
    assert!(api.get_opt("owner").await.unwrap().is_none());
    assert!(api.get_opt("child").await.unwrap().is_none());
}

#[tokio::test]
async fn orphaned_dependents_stay_when_the_held_owner_finally_goes() {
    let sim = sim().await;
    let api: Api<ConfigMap> = Api::namespaced(sim.client("").unwrap(), "default");
    let mut owner = cm("owner");
    owner.metadata.finalizers = Some(vec!["example.io/hold".into()]);
    let owner = api.create(&PostParams::default(), &owner).await.unwrap();
    let mut child = cm("child");
    owned_by(&mut child, &owner);
    api.create(&PostParams::default(), &child).await.unwrap();
    api.delete("owner", &DeleteParams::orphan()).await.unwrap();
    release(&api, "owner").await;
    let child = api.get("child").await.unwrap();
    assert!(child.metadata.owner_references.is_none());
}

#[tokio::test]
async fn a_dependent_with_another_live_owner_only_loses_the_reference_to_the_gone_one() {
    let sim = sim().await;
    let api: Api<ConfigMap> = Api::namespaced(sim.client("").unwrap(), "default");
    let mut first = cm("owner");
    first.metadata.finalizers = Some(vec!["example.io/hold".into()]);
    let first = api.create(&PostParams::default(), &first).await.unwrap();
    let second = api
        .create(&PostParams::default(), &cm("second"))
        .await
        .unwrap();
    let mut child = cm("child");
    owned_by(&mut child, &first);
    let mut refs = child.metadata.owner_references.take().unwrap();
    refs.push(
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "name": "second", "uid": second.metadata.uid.clone().unwrap()}))
        .unwrap(),
    );
    child.metadata.owner_references = Some(refs);
    api.create(&PostParams::default(), &child).await.unwrap();
    api.delete("owner", &DeleteParams::background())
        .await
        .unwrap();
    release(&api, "owner").await;
    let child = api.get("child").await.unwrap();
    let owners: Vec<String> = child
        .metadata
        .owner_references
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(owners, ["second"]);
}

#[tokio::test]
async fn generate_name_gives_a_fresh_name_with_a_random_suffix() {
    let sim = sim().await;
    let api: Api<ConfigMap> = Api::namespaced(sim.client("").unwrap(), "default");
    let mut obj = cm("");
    obj.metadata.name = None;
    obj.metadata.generate_name = Some("gen-".into());
    let a = api.create(&PostParams::default(), &obj).await.unwrap();
    let b = api.create(&PostParams::default(), &obj).await.unwrap();
    let (a, b) = (a.metadata.name.unwrap(), b.metadata.name.unwrap());
    assert!(a.starts_with("gen-") && a.len() == 9, "{a}");
    assert_ne!(a, b);
}

#[tokio::test]
async fn list_pages_with_limit_and_continue() {
    let sim = sim().await;
    let api: Api<ConfigMap> = Api::namespaced(sim.client("").unwrap(), "default");
    for i in 0..5 {
        api.create(&PostParams::default(), &cm(&format!("c{i}")))
            .await
            .unwrap();
    }
    let first = api.list(&ListParams::default().limit(2)).await.unwrap();
    assert_eq!(first.items.len(), 2);
    let token = first.metadata.continue_.clone().unwrap();
    let rest = api
        .list(&ListParams::default().limit(10).continue_token(&token))
        .await
        .unwrap();
    assert_eq!(rest.items.len(), 3);
    assert!(rest.metadata.continue_.is_none() || rest.metadata.continue_.as_deref() == Some(""));
}

#[tokio::test]
async fn injected_errors_reach_the_client_with_the_chosen_code() {
    let sim = sim().await;
    // 500 rather than 503: kube 5's default client retries 429/503/504 up to 15 times.
    sim.faults()
        .add_error(kcp_sim::ErrorRule::new(500, 1.0).verbs([kcp_sim::Verb::Get]));
    let api: Api<ConfigMap> = Api::namespaced(sim.client("").unwrap(), "default");
    let err = api.get("x").await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(s) if s.code == 500 && s.reason == "InternalError"));
    sim.faults().clear();
    assert!(api.get_opt("x").await.unwrap().is_none());
}

#[tokio::test]
async fn an_object_created_at_one_version_can_be_patched_at_another_served_version() {
    let sim = sim().await;
    let client = sim.client("").unwrap();
    let crds: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            "customresourcedefinitions",
        ),
    );
    let mut crd: serde_json::Value = serde_json::from_str(WIDGET_CRD).unwrap();
    let v1 = crd["spec"]["versions"][0].clone();
    let mut v2 = v1.clone();
    v2["name"] = json!("v2");
    v2["storage"] = json!(false);
    crd["spec"]["versions"] = json!([v1, v2]);
    let crd: DynamicObject = serde_json::from_value(crd).unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();
    let at = |version: &str| {
        Api::<DynamicObject>::namespaced_with(
            client.clone(),
            "default",
            &ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("example.io", version, "Widget"),
                "widgets",
            ),
        )
    };
    let widget: DynamicObject = serde_json::from_value(json!({"apiVersion": "example.io/v1",
        "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}}))
    .unwrap();
    at("v1")
        .create(&PostParams::default(), &widget)
        .await
        .unwrap();
    let patched = at("v2")
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.data["spec"]["size"], 2);
    assert_eq!(
        patched.types.map(|t| t.api_version).as_deref(),
        Some("example.io/v2")
    );
}
