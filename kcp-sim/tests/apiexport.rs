//! kcp's API exports over HTTP with kube-rs: APIResourceSchemas, APIExports in v1alpha1 and
//! v1alpha2, endpoint slices, APIBindings serving an export's resources in consumer workspaces,
//! and the apiexport virtual workspace (wildcard and per-consumer access, permission claims).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kcp_core::kcp::{APIBinding, APIExport, APIExportEndpointSlice, APIResourceSchema, Workspace};
use kcp_sim::{Config, ErrorRule, Server};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use kube::runtime::watcher;
use serde_json::{Value, json};

async fn kcp() -> Server {
    Server::start(Config::kcp()).await.unwrap()
}

fn client_at(url: &str) -> kube::Client {
    kube::Client::try_from(kube::Config::new(url.parse().unwrap())).unwrap()
}

/// Creates workspace `root:<name>` and answers its logical cluster name.
async fn workspace(sim: &Server, name: &str) -> String {
    let api: Api<Workspace> = Api::all(sim.client("root").unwrap());
    let ws: Workspace = serde_json::from_value(json!({"apiVersion": "tenancy.kcp.io/v1alpha1",
        "kind": "Workspace", "metadata": {"name": name}, "spec": {}}))
    .unwrap();
    api.create(&PostParams::default(), &ws).await.unwrap();
    sim.logical_cluster(&format!("root:{name}")).unwrap()
}

fn schema_body(name: &str, plural: &str, kind: &str) -> Value {
    json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIResourceSchema",
        "metadata": {"name": name},
        "spec": {"group": "example.io", "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.to_lowercase(), "listKind": format!("{kind}List")},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "subresources": {"status": {}}}]}})
}

async fn create_schema(sim: &Server, ws: &str, name: &str, plural: &str, kind: &str) {
    let api: Api<APIResourceSchema> = Api::all(sim.client(ws).unwrap());
    let schema = serde_json::from_value(schema_body(name, plural, kind)).unwrap();
    api.create(&PostParams::default(), &schema).await.unwrap();
}

/// The provider workspace `root:provider` with schema `v1.widgets.example.io` and the export
/// `widgets` of it (claims as given); answers the provider's logical cluster name.
async fn provider(sim: &Server, claims: Value) -> String {
    let schema = schema_body("v1.widgets.example.io", "widgets", "Widget");
    provider_with(sim, schema, claims).await
}

/// [`provider`] with the given APIResourceSchema `v1.widgets.example.io`.
async fn provider_with(sim: &Server, schema: Value, claims: Value) -> String {
    let lc = workspace(sim, "provider").await;
    let schemas: Api<APIResourceSchema> = Api::all(sim.client("root:provider").unwrap());
    let schema = serde_json::from_value(schema).unwrap();
    schemas
        .create(&PostParams::default(), &schema)
        .await
        .unwrap();
    let api: Api<APIExport> = Api::all(sim.client("root:provider").unwrap());
    let export = serde_json::from_value(json!({"apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIExport", "metadata": {"name": "widgets"},
        "spec": {"latestResourceSchemas": ["v1.widgets.example.io"], "permissionClaims": claims}}))
    .unwrap();
    api.create(&PostParams::default(), &export).await.unwrap();
    lc
}

async fn bind(sim: &Server, ws: &str, claims: Value) -> APIBinding {
    let api: Api<APIBinding> = Api::all(sim.client(ws).unwrap());
    let binding = serde_json::from_value(json!({"apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIBinding", "metadata": {"name": "widgets"},
        "spec": {"reference": {"export": {"path": "root:provider", "name": "widgets"}},
            "permissionClaims": claims}}))
    .unwrap();
    api.create(&PostParams::default(), &binding).await.unwrap();
    api.get("widgets").await.unwrap()
}

/// A consumer workspace `root:<name>` bound to the export; answers its logical cluster name.
async fn consumer(sim: &Server, name: &str, claims: Value) -> String {
    let lc = workspace(sim, name).await;
    bind(sim, &format!("root:{name}"), claims).await;
    lc
}

fn widget_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.io", "v1", "Widget"),
        "widgets",
    )
}

fn widgets(client: kube::Client) -> Api<DynamicObject> {
    Api::namespaced_with(client, "default", &widget_resource())
}

fn widget(name: &str) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "example.io/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": {"size": 1}}))
    .unwrap()
}

fn vw_url(sim: &Server, export_cluster: &str) -> String {
    format!("{}/services/apiexport/{export_cluster}/widgets", sim.url())
}

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name}, "data": {"k": "v"}}))
    .unwrap()
}

fn export_v1alpha2() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apis.kcp.io", "v1alpha2", "APIExport"),
        "apiexports",
    )
}

fn code_of(err: kube::Error) -> u16 {
    match err {
        kube::Error::Api(s) => s.code,
        other => panic!("not an API error: {other:?}"),
    }
}

fn cluster_of(obj: &DynamicObject) -> String {
    obj.metadata.annotations.as_ref().unwrap()["kcp.io/cluster"].clone()
}

// ---- APIResourceSchema ---------------------------------------------------------------------

/// The next event of a watch, within five seconds.
async fn next_event<K>(
    events: &mut futures::stream::BoxStream<'static, watcher::Result<watcher::Event<K>>>,
) -> watcher::Event<K> {
    tokio::time::timeout(Duration::from_secs(5), events.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap()
}
#[tokio::test]
async fn a_schema_name_must_end_in_its_plural_and_group() {
    let sim = kcp().await;
    let api: Api<APIResourceSchema> = Api::all(sim.client("root").unwrap());
    let bad =
        serde_json::from_value(schema_body("widgets.example.io", "widgets", "Widget")).unwrap();
    let err = api.create(&PostParams::default(), &bad).await.unwrap_err();
    assert!(
        // kcp's admission refuses a schema with a 403 listing its field errors.
        matches!(&err, kube::Error::Api(s) if s.code == 403 && s.message == "apiresourceschemas.apis.kcp.io \"widgets.example.io\" is forbidden: [metadata.name: Invalid value: \"widgets.example.io\": must end in .widgets.example.io]"),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_schema_spec_is_immutable() {
    let sim = kcp().await;
    create_schema(&sim, "root", "v1.widgets.example.io", "widgets", "Widget").await;
    let api: Api<APIResourceSchema> = Api::all(sim.client("root").unwrap());
    let err = api
        .patch(
            "v1.widgets.example.io",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"scope": "Cluster"}})),
        )
        .await
        .unwrap_err();
    // Refused by kcp's admission: 403.
    assert_eq!(code_of(err), 403);
}

// ---- APIExport -----------------------------------------------------------------------------

#[tokio::test]
async fn an_export_written_as_v1alpha1_reads_as_v1alpha2_resources() {
    let sim = kcp().await;
    provider(
        &sim,
        json!([{"group": "", "resource": "configmaps", "all": true}]),
    )
    .await;
    let v2: Api<DynamicObject> =
        Api::all_with(sim.client("root:provider").unwrap(), &export_v1alpha2());
    let export = v2.get("widgets").await.unwrap();
    assert_eq!(
        export.data["spec"]["resources"],
        json!([{"group": "example.io", "name": "widgets", "schema": "v1.widgets.example.io", "storage": {"crd": {}}}])
    );
    assert_eq!(
        export.data["spec"]["permissionClaims"],
        json!([{"group": "", "identityHash": "", "resource": "configmaps", "verbs": ["*"]}])
    );
}

#[tokio::test]
async fn an_export_written_as_v1alpha2_reads_as_v1alpha1_schemas_and_claims() {
    let sim = kcp().await;
    let v2: Api<DynamicObject> = Api::all_with(sim.client("root").unwrap(), &export_v1alpha2());
    let export: DynamicObject = serde_json::from_value(json!({"apiVersion": "apis.kcp.io/v1alpha2",
        "kind": "APIExport", "metadata": {"name": "things"},
        "spec": {"resources": [{"group": "example.io", "name": "things", "schema": "v1.things.example.io", "storage": {"crd": {}}}],
            "permissionClaims": [{"group": "", "resource": "secrets", "verbs": ["get", "list"]}]}}))
    .unwrap();
    v2.create(&PostParams::default(), &export).await.unwrap();
    let v1: Api<APIExport> = Api::all(sim.client("root").unwrap());
    let read = v1.get("things").await.unwrap();
    assert_eq!(
        read.spec.latest_resource_schemas.unwrap(),
        ["v1.things.example.io"]
    );
    let claims = read.spec.permission_claims.unwrap();
    assert_eq!(
        (claims[0].group.as_str(), claims[0].resource.as_str()),
        ("", "secrets")
    );
    let kept = &read.metadata.annotations.unwrap()["apis.v1alpha2.kcp.io/permission-claims"];
    assert!(kept.contains("\"list\""), "verbs kept for v1alpha2: {kept}");
}

#[tokio::test]
async fn a_v1alpha2_claim_without_verbs_is_invalid() {
    let sim = kcp().await;
    let v2: Api<DynamicObject> = Api::all_with(sim.client("root").unwrap(), &export_v1alpha2());
    let export: DynamicObject =
        serde_json::from_value(json!({"apiVersion": "apis.kcp.io/v1alpha2",
        "kind": "APIExport", "metadata": {"name": "things"},
        "spec": {"permissionClaims": [{"group": "", "resource": "secrets"}]}}))
        .unwrap();
    let err = v2
        .create(&PostParams::default(), &export)
        .await
        .unwrap_err();
    assert_eq!(code_of(err), 422);
}

#[tokio::test]
async fn an_export_gets_an_identity_hash_from_a_generated_secret() {
    let sim = kcp().await;
    provider(&sim, json!([])).await;
    let api: Api<APIExport> = Api::all(sim.client("root:provider").unwrap());
    let export = api.get("widgets").await.unwrap();
    let hash = export.status.unwrap().identity_hash.unwrap();
    assert_eq!(hash.len(), 64);
    let secret_ref = export.spec.identity.unwrap().secret_ref.unwrap();
    assert_eq!(secret_ref.namespace.as_deref(), Some("kcp-system"));
    assert_eq!(secret_ref.name.as_deref(), Some("widgets"));
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(sim.client("root:provider").unwrap(), "kcp-system");
    assert!(
        secrets
            .get("widgets")
            .await
            .unwrap()
            .data
            .unwrap()
            .contains_key("key")
    );
}

// ---- APIExportEndpointSlice ----------------------------------------------------------------

#[tokio::test]
async fn an_export_gets_an_endpoint_slice_without_endpoints_until_someone_binds_it() {
    let sim = kcp().await;
    let provider_lc = provider(&sim, json!([])).await;
    let slices: Api<APIExportEndpointSlice> = Api::all(sim.client("root:provider").unwrap());
    let slice = slices.get("widgets").await.unwrap();
    assert_eq!(slice.spec.export.name, "widgets");
    assert_eq!(slice.spec.export.path.as_deref(), Some("root:provider"));
    assert!(
        slice
            .status
            .unwrap()
            .endpoints
            .unwrap_or_default()
            .is_empty()
    );

    consumer(&sim, "consumer", json!([])).await;
    let urls: Vec<String> = slices
        .get("widgets")
        .await
        .unwrap()
        .status
        .unwrap()
        .endpoints
        .unwrap()
        .into_iter()
        .map(|e| e.url)
        .collect();
    assert_eq!(urls, [vw_url(&sim, &provider_lc)]);
}

#[tokio::test]
async fn a_user_created_slice_lists_the_endpoints_too() {
    let sim = kcp().await;
    let provider_lc = provider(&sim, json!([])).await;
    consumer(&sim, "consumer", json!([])).await;
    workspace(&sim, "agent").await;
    let slices: Api<APIExportEndpointSlice> = Api::all(sim.client("root:agent").unwrap());
    let slice = serde_json::from_value(json!({"apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIExportEndpointSlice", "metadata": {"name": "mine"},
        "spec": {"export": {"path": "root:provider", "name": "widgets"}}}))
    .unwrap();
    slices.create(&PostParams::default(), &slice).await.unwrap();
    let endpoints = slices
        .get("mine")
        .await
        .unwrap()
        .status
        .unwrap()
        .endpoints
        .unwrap();
    assert_eq!(endpoints[0].url, vw_url(&sim, &provider_lc));
}

#[tokio::test]
async fn each_shard_lists_its_endpoint_only_while_it_holds_a_consumer() {
    let sim = Server::start(Config {
        shards: 2,
        ..Config::kcp()
    })
    .await
    .unwrap();
    let provider_lc = provider(&sim, json!([])).await;
    let slices: Api<APIExportEndpointSlice> = Api::all(sim.client("root:provider").unwrap());
    let urls = || async {
        slices
            .get("widgets")
            .await
            .unwrap()
            .status
            .unwrap()
            .endpoints
            .unwrap_or_default()
            .len()
    };
    // root and provider took the two shards; the next clusters alternate again.
    consumer(&sim, "c1", json!([])).await;
    assert_eq!(urls().await, 1);
    consumer(&sim, "c2", json!([])).await;
    assert_eq!(urls().await, 2);
    let expected: Vec<String> = sim
        .shard_urls()
        .iter()
        .map(|u| format!("{u}/services/apiexport/{provider_lc}/widgets"))
        .collect();
    let listed: Vec<String> = slices
        .get("widgets")
        .await
        .unwrap()
        .status
        .unwrap()
        .endpoints
        .unwrap()
        .into_iter()
        .map(|e| e.url)
        .collect();
    assert_eq!(listed, expected);
}

// ---- APIBinding ----------------------------------------------------------------------------

#[tokio::test]
async fn a_binding_is_bound_with_the_resources_it_serves() {
    let sim = kcp().await;
    let provider_lc = provider(&sim, json!([])).await;
    workspace(&sim, "consumer").await;
    let binding = bind(&sim, "root:consumer", json!([])).await;
    let status = binding.status.unwrap();
    assert!(status.is_bound());
    assert_eq!(
        status.api_export_cluster_name.as_deref(),
        Some(provider_lc.as_str())
    );
    let bound = status.bound_resources.unwrap();
    assert_eq!(
        (bound[0].group.as_str(), bound[0].resource.as_str()),
        ("example.io", "widgets")
    );
    assert_eq!(bound[0].schema.name, "v1.widgets.example.io");
    assert_eq!(bound[0].schema.identity_hash.len(), 64);
}

#[tokio::test]
async fn a_bound_resource_is_served_in_the_consumer_like_a_crd() {
    let sim = kcp().await;
    provider(&sim, json!([])).await;
    consumer(&sim, "consumer", json!([])).await;
    let client = sim.client("root:consumer").unwrap();
    let discovery = kube::Discovery::new(client.clone()).run().await.unwrap();
    assert!(discovery.has_group("example.io"));
    let api = widgets(client);
    api.create(&PostParams::default(), &widget("w1"))
        .await
        .unwrap();
    let status = api
        .patch_status(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}})),
        )
        .await
        .unwrap();
    assert_eq!(status.data["status"]["ready"], true);
    assert_eq!(
        api.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
}

#[tokio::test]
async fn a_schema_whose_version_schema_is_not_structural_is_refused() {
    let sim = kcp().await;
    let api: Api<APIResourceSchema> = Api::all(sim.client("root").unwrap());
    let mut body = schema_body("v1.widgets.example.io", "widgets", "Widget");
    body["spec"]["versions"][0]["schema"] = json!({"type": "object",
        "properties": {"spec": {"properties": {"size": {"type": "integer"}}}}});
    let bad = serde_json::from_value(body).unwrap();
    let err = api.create(&PostParams::default(), &bad).await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 403
            && s.message.contains("apiresourceschemas.apis.kcp.io \"v1.widgets.example.io\" is forbidden: [")
            && s.message.contains("spec.versions[0].schema.properties[spec].type")),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_bound_resource_is_pruned_and_validated_by_its_schema() {
    let sim = kcp().await;
    let mut body = schema_body("v1.widgets.example.io", "widgets", "Widget");
    body["spec"]["versions"][0]["schema"] = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer", "minimum": 1}}}}});
    provider_with(&sim, body, json!([])).await;
    consumer(&sim, "consumer", json!([])).await;
    let api = widgets(sim.client("root:consumer").unwrap());
    let mut extra = widget("w1");
    extra.data["spec"]["colour"] = json!("red");
    let created = api.create(&PostParams::default(), &extra).await.unwrap();
    assert_eq!(created.data["spec"], json!({"size": 1}));
    let mut zero = widget("w2");
    zero.data["spec"]["size"] = json!(0);
    let err = api.create(&PostParams::default(), &zero).await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 422 && s.message.contains("spec.size")),
        "{err:?}"
    );
}

#[tokio::test]
async fn the_provider_workspace_does_not_serve_what_it_exports() {
    let sim = kcp().await;
    provider(&sim, json!([])).await;
    let err = widgets(sim.client("root:provider").unwrap())
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert_eq!(code_of(err), 404);
}

#[tokio::test]
async fn two_bindings_serving_the_same_resource_conflict() {
    let sim = kcp().await;
    provider(&sim, json!([])).await;
    workspace(&sim, "other").await;
    create_schema(
        &sim,
        "root:other",
        "v2.widgets.example.io",
        "widgets",
        "Widget",
    )
    .await;
    let exports: Api<APIExport> = Api::all(sim.client("root:other").unwrap());
    let export = serde_json::from_value(json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport",
        "metadata": {"name": "more-widgets"}, "spec": {"latestResourceSchemas": ["v2.widgets.example.io"]}}))
    .unwrap();
    exports
        .create(&PostParams::default(), &export)
        .await
        .unwrap();
    consumer(&sim, "consumer", json!([])).await;

    let api: Api<APIBinding> = Api::all(sim.client("root:consumer").unwrap());
    let second = serde_json::from_value(
        json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding",
        "metadata": {"name": "more"},
        "spec": {"reference": {"export": {"path": "root:other", "name": "more-widgets"}}}}),
    )
    .unwrap();
    api.create(&PostParams::default(), &second).await.unwrap();
    let status = api.get("more").await.unwrap().status.unwrap();
    assert!(!status.is_bound());
    let conditions = status.conditions.unwrap();
    let up_to_date = conditions
        .iter()
        .find(|c| c.type_ == "BindingUpToDate")
        .unwrap();
    assert_eq!(up_to_date.status, "False");
    assert_eq!(up_to_date.reason.as_deref(), Some("NamingConflicts"));
    assert!(api.get("widgets").await.unwrap().status.unwrap().is_bound());
}

#[tokio::test]
async fn a_binding_to_a_missing_export_binds_once_the_export_appears() {
    let sim = kcp().await;
    workspace(&sim, "provider").await;
    workspace(&sim, "consumer").await;
    // kcp refuses a binding to a missing export of another workspace, worded as a missing
    // permission so as not to tell whether the workspace exists.
    let api: Api<APIBinding> = Api::all(sim.client("root:consumer").unwrap());
    let elsewhere = serde_json::from_value(json!({"apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIBinding", "metadata": {"name": "widgets"},
        "spec": {"reference": {"export": {"path": "root:provider", "name": "widgets"}}}}))
    .unwrap();
    let err = api
        .create(&PostParams::default(), &elsewhere)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 403 && s.message == "apibindings.apis.kcp.io \"widgets\" is forbidden: unable to create APIBinding: no permission to bind to export root:provider:widgets"),
        "{err:?}"
    );
    // A binding to an export of its own workspace is admitted and waits for it.
    let local = serde_json::from_value(json!({"apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIBinding", "metadata": {"name": "widgets"},
        "spec": {"reference": {"export": {"name": "widgets"}}}}))
    .unwrap();
    api.create(&PostParams::default(), &local).await.unwrap();
    let binding = api.get("widgets").await.unwrap();
    let status = binding.status.unwrap();
    assert_eq!(status.phase.as_deref(), Some("Binding"));
    let valid = status
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "APIExportValid")
        .unwrap();
    assert_eq!(valid.reason.as_deref(), Some("APIExportNotFound"));

    create_schema(
        &sim,
        "root:consumer",
        "v1.widgets.example.io",
        "widgets",
        "Widget",
    )
    .await;
    let exports: Api<APIExport> = Api::all(sim.client("root:consumer").unwrap());
    let export = serde_json::from_value(json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport",
        "metadata": {"name": "widgets"}, "spec": {"latestResourceSchemas": ["v1.widgets.example.io"]}}))
    .unwrap();
    exports
        .create(&PostParams::default(), &export)
        .await
        .unwrap();
    assert!(api.get("widgets").await.unwrap().status.unwrap().is_bound());
}

#[tokio::test]
async fn a_schema_added_to_the_export_later_is_served_in_every_binding_workspace() {
    let sim = kcp().await;
    provider(&sim, json!([])).await;
    consumer(&sim, "a", json!([])).await;
    consumer(&sim, "b", json!([])).await;
    create_schema(
        &sim,
        "root:provider",
        "v1.gadgets.example.io",
        "gadgets",
        "Gadget",
    )
    .await;
    let exports: Api<APIExport> = Api::all(sim.client("root:provider").unwrap());
    exports
        .patch(
            "widgets",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"latestResourceSchemas": ["v1.widgets.example.io", "v1.gadgets.example.io"]}})),
        )
        .await
        .unwrap();
    let gadgets = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.io", "v1", "Gadget"),
        "gadgets",
    );
    for ws in ["root:a", "root:b"] {
        let api: Api<DynamicObject> =
            Api::namespaced_with(sim.client(ws).unwrap(), "default", &gadgets);
        assert!(
            api.list(&ListParams::default()).await.is_ok(),
            "{ws} serves gadgets"
        );
    }
}

#[tokio::test]
async fn deleting_a_binding_deletes_its_objects_and_stops_serving() {
    let sim = kcp().await;
    provider(&sim, json!([])).await;
    consumer(&sim, "consumer", json!([])).await;
    let api = widgets(sim.client("root:consumer").unwrap());
    api.create(&PostParams::default(), &widget("w1"))
        .await
        .unwrap();
    let bindings: Api<APIBinding> = Api::all(sim.client("root:consumer").unwrap());
    bindings
        .delete("widgets", &DeleteParams::default())
        .await
        .unwrap();
    assert!(bindings.get_opt("widgets").await.unwrap().is_none());
    let err = api.list(&ListParams::default()).await.unwrap_err();
    assert_eq!(code_of(err), 404);
}

#[tokio::test]
async fn a_binding_being_deleted_waits_for_finalizers_on_its_objects() {
    let sim = kcp().await;
    let provider_lc = provider(&sim, json!([])).await;
    let consumer_lc = consumer(&sim, "consumer", json!([])).await;
    let api = widgets(sim.client("root:consumer").unwrap());
    let mut held = widget("held");
    held.metadata.finalizers = Some(vec!["example.io/cleanup".into()]);
    api.create(&PostParams::default(), &held).await.unwrap();
    let bindings: Api<APIBinding> = Api::all(sim.client("root:consumer").unwrap());
    bindings
        .delete("widgets", &DeleteParams::default())
        .await
        .unwrap();
    let terminating = bindings.get("widgets").await.unwrap();
    assert!(terminating.metadata.deletion_timestamp.is_some());
    // kcp's finalizer holds the binding until its objects are gone.
    assert_eq!(
        terminating.metadata.finalizers.as_deref(),
        Some(&["apis.kcp.io/apibinding-finalizer".to_string()][..])
    );

    // The provider removes its finalizer through the virtual workspace; then the binding goes.
    let inside = widgets(client_at(&format!(
        "{}/clusters/{consumer_lc}",
        vw_url(&sim, &provider_lc)
    )));
    inside
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    assert!(bindings.get_opt("widgets").await.unwrap().is_none());
}

// ---- the apiexport virtual workspace -------------------------------------------------------

#[tokio::test]
async fn the_wildcard_lists_exported_objects_of_every_consumer_with_their_cluster() {
    let sim = kcp().await;
    let provider_lc = provider(&sim, json!([])).await;
    let a = consumer(&sim, "a", json!([])).await;
    let b = consumer(&sim, "b", json!([])).await;
    for ws in ["root:a", "root:b"] {
        widgets(sim.client(ws).unwrap())
            .create(&PostParams::default(), &widget("same"))
            .await
            .unwrap();
    }
    let all: Api<DynamicObject> = Api::all_with(
        client_at(&format!("{}/clusters/*", vw_url(&sim, &provider_lc))),
        &widget_resource(),
    );
    let mut clusters: Vec<String> = all
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(cluster_of)
        .collect();
    clusters.sort();
    let mut expected = vec![a, b];
    expected.sort();
    assert_eq!(clusters, expected);
}

#[tokio::test]
async fn a_wildcard_watch_sees_objects_created_in_two_consumers() {
    let sim = kcp().await;
    let provider_lc = provider(&sim, json!([])).await;
    let a = consumer(&sim, "a", json!([])).await;
    let b = consumer(&sim, "b", json!([])).await;
    let all: Api<DynamicObject> = Api::all_with(
        client_at(&format!("{}/clusters/*", vw_url(&sim, &provider_lc))),
        &widget_resource(),
    );
    let mut events = watcher(all, watcher::Config::default()).boxed();
    loop {
        if let watcher::Event::InitDone = events.try_next().await.unwrap().unwrap() {
            break;
        }
    }
    for ws in ["root:a", "root:b"] {
        widgets(sim.client(ws).unwrap())
            .create(&PostParams::default(), &widget("w"))
            .await
            .unwrap();
    }
    let mut seen = Vec::new();
    while seen.len() < 2 {
        if let watcher::Event::Apply(obj) = next_event(&mut events).await {
            seen.push(cluster_of(&obj));
        }
    }
    seen.sort();
    let mut expected = vec![a, b];
    expected.sort();
    assert_eq!(seen, expected);
}

#[tokio::test]
async fn the_wildcard_shows_nothing_of_workspaces_without_a_binding() {
    let sim = kcp().await;
    let provider_lc = provider(&sim, json!([])).await;
    consumer(&sim, "bound", json!([])).await;
    workspace(&sim, "unbound").await;
    let all: Api<ConfigMap> = Api::all(client_at(&format!(
        "{}/clusters/*",
        vw_url(&sim, &provider_lc)
    )));
    // Configmaps are not claimed: not served at all.
    assert_eq!(
        code_of(all.list(&ListParams::default()).await.unwrap_err()),
        404
    );
}

#[tokio::test]
async fn a_consumer_is_reachable_through_the_view_with_crud_and_status() {
    let sim = kcp().await;
    let provider_lc = provider(&sim, json!([])).await;
    let lc = consumer(&sim, "consumer", json!([])).await;
    let inside = widgets(client_at(&format!(
        "{}/clusters/{lc}",
        vw_url(&sim, &provider_lc)
    )));
    let created = inside
        .create(&PostParams::default(), &widget("w1"))
        .await
        .unwrap();
    assert_eq!(cluster_of(&created), lc);
    inside
        .patch_status(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Synced"}})),
        )
        .await
        .unwrap();
    let direct = widgets(sim.client("root:consumer").unwrap());
    assert_eq!(
        direct.get("w1").await.unwrap().data["status"]["phase"],
        "Synced"
    );
    inside.delete("w1", &DeleteParams::default()).await.unwrap();
    assert!(direct.get_opt("w1").await.unwrap().is_none());
}

#[tokio::test]
async fn a_workspace_without_a_binding_is_forbidden_through_the_view() {
    let sim = kcp().await;
    let provider_lc = provider(&sim, json!([])).await;
    let other = workspace(&sim, "other").await;
    let inside = widgets(client_at(&format!(
        "{}/clusters/{other}",
        vw_url(&sim, &provider_lc)
    )));
    assert_eq!(
        code_of(inside.list(&ListParams::default()).await.unwrap_err()),
        403
    );
}

#[tokio::test]
async fn a_consumer_is_addressed_by_logical_cluster_name_not_path() {
    let sim = kcp().await;
    let provider_lc = provider(&sim, json!([])).await;
    consumer(&sim, "consumer", json!([])).await;
    let by_path = widgets(client_at(&format!(
        "{}/clusters/root:consumer",
        vw_url(&sim, &provider_lc)
    )));
    assert_eq!(
        code_of(by_path.list(&ListParams::default()).await.unwrap_err()),
        404
    );
}

#[tokio::test]
async fn an_unknown_export_is_not_found() {
    let sim = kcp().await;
    let provider_lc = provider(&sim, json!([])).await;
    let url = format!(
        "{}/services/apiexport/{provider_lc}/nope/clusters/*",
        sim.url()
    );
    let all: Api<DynamicObject> = Api::all_with(client_at(&url), &widget_resource());
    assert_eq!(
        code_of(all.list(&ListParams::default()).await.unwrap_err()),
        404
    );
}

#[tokio::test]
async fn an_unaccepted_claim_hides_the_claimed_resource() {
    let sim = kcp().await;
    let provider_lc = provider(
        &sim,
        json!([{"group": "", "resource": "configmaps", "all": true}]),
    )
    .await;
    let lc = consumer(&sim, "consumer", json!([])).await;
    let cms: Api<ConfigMap> = Api::namespaced(sim.client("root:consumer").unwrap(), "default");
    cms.create(&PostParams::default(), &cm("secret-sauce"))
        .await
        .unwrap();
    let vw = vw_url(&sim, &provider_lc);
    let all: Api<ConfigMap> = Api::all(client_at(&format!("{vw}/clusters/*")));
    assert!(
        all.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    let inside: Api<ConfigMap> =
        Api::namespaced(client_at(&format!("{vw}/clusters/{lc}")), "default");
    assert_eq!(
        code_of(inside.list(&ListParams::default()).await.unwrap_err()),
        403
    );
}

#[tokio::test]
async fn accepting_a_claim_brings_the_claimed_objects_into_view() {
    let sim = kcp().await;
    let provider_lc = provider(
        &sim,
        json!([{"group": "", "resource": "configmaps", "all": true}]),
    )
    .await;
    let lc = consumer(&sim, "consumer", json!([])).await;
    let cms: Api<ConfigMap> = Api::namespaced(sim.client("root:consumer").unwrap(), "default");
    cms.create(&PostParams::default(), &cm("shared"))
        .await
        .unwrap();
    let vw = vw_url(&sim, &provider_lc);
    let all: Api<ConfigMap> = Api::all(client_at(&format!("{vw}/clusters/*")));
    let mut events = watcher(all.clone(), watcher::Config::default()).boxed();
    loop {
        if let watcher::Event::InitDone = events.try_next().await.unwrap().unwrap() {
            break;
        }
    }
    let bindings: Api<APIBinding> = Api::all(sim.client("root:consumer").unwrap());
    bindings
        .patch(
            "widgets",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"permissionClaims": [
                {"group": "", "resource": "configmaps", "all": true, "state": "Accepted"}]}})),
        )
        .await
        .unwrap();
    // Both config maps of the namespace come into view: the user's and the CA kcp publishes.
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let event = next_event(&mut events).await;
        let watcher::Event::Apply(cm) = event else {
            panic!("expected the config maps to appear, got {event:?}");
        };
        seen.push(cm.metadata.name.unwrap());
    }
    seen.sort();
    assert_eq!(seen, ["kube-root-ca.crt", "shared"]);
    let inside: Api<ConfigMap> =
        Api::namespaced(client_at(&format!("{vw}/clusters/{lc}")), "default");
    assert_eq!(
        inside
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        2
    );
    let status = bindings.get("widgets").await.unwrap();
    assert!(status.status.unwrap().is_bound());
}

#[tokio::test]
async fn a_claim_accepted_by_another_workspace_does_not_show_this_one() {
    let sim = kcp().await;
    let provider_lc = provider(
        &sim,
        json!([{"group": "", "resource": "configmaps", "all": true}]),
    )
    .await;
    let accepted =
        json!([{"group": "", "resource": "configmaps", "all": true, "state": "Accepted"}]);
    let yes = consumer(&sim, "yes", accepted).await;
    consumer(&sim, "no", json!([])).await;
    for ws in ["root:yes", "root:no"] {
        Api::<ConfigMap>::namespaced(sim.client(ws).unwrap(), "default")
            .create(&PostParams::default(), &cm("c"))
            .await
            .unwrap();
    }
    let all: Api<ConfigMap> = Api::all(client_at(&format!(
        "{}/clusters/*",
        vw_url(&sim, &provider_lc)
    )));
    let listed = all.list(&ListParams::default()).await.unwrap().items;
    let clusters: Vec<&str> = listed
        .iter()
        .map(|c| c.metadata.annotations.as_ref().unwrap()["kcp.io/cluster"].as_str())
        .collect();
    assert!(clusters.iter().all(|c| *c == yes), "{clusters:?}");
    assert!(!clusters.is_empty());
}

#[tokio::test]
async fn api_bindings_of_the_export_are_listable_and_read_only_through_the_view() {
    let sim = kcp().await;
    let provider_lc = provider(&sim, json!([])).await;
    let a = consumer(&sim, "a", json!([])).await;
    let vw = vw_url(&sim, &provider_lc);
    let all: Api<APIBinding> = Api::all(client_at(&format!("{vw}/clusters/*")));
    let listed = all.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(listed.len(), 1);
    assert_eq!(
        listed[0].metadata.annotations.as_ref().unwrap()["kcp.io/cluster"],
        a
    );

    let inside: Api<APIBinding> = Api::all(client_at(&format!("{vw}/clusters/{a}")));
    let err = inside
        .patch(
            "widgets",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .unwrap_err();
    assert_eq!(code_of(err), 403);
}

#[tokio::test]
async fn each_shard_url_shows_only_its_own_consumers() {
    let sim = Server::start(Config {
        shards: 2,
        ..Config::kcp()
    })
    .await
    .unwrap();
    let provider_lc = provider(&sim, json!([])).await;
    for name in ["c1", "c2", "c3", "c4"] {
        consumer(&sim, name, json!([])).await;
        widgets(sim.client(&format!("root:{name}")).unwrap())
            .create(&PostParams::default(), &widget("w"))
            .await
            .unwrap();
    }
    let mut total = 0;
    for shard in sim.shard_urls() {
        let url = format!("{shard}/services/apiexport/{provider_lc}/widgets/clusters/*");
        let n = Api::<DynamicObject>::all_with(client_at(&url), &widget_resource())
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len();
        assert_eq!(n, 2, "consumers alternate between the shards");
        total += n;
    }
    assert_eq!(total, 4);
}

#[tokio::test]
async fn faults_apply_to_the_virtual_workspace() {
    let sim = kcp().await;
    let provider_lc = provider(&sim, json!([])).await;
    consumer(&sim, "consumer", json!([])).await;
    sim.faults()
        .add_error(ErrorRule::new(500, 1.0).resources(["widgets.example.io"]));
    let all: Api<DynamicObject> = Api::all_with(
        client_at(&format!("{}/clusters/*", vw_url(&sim, &provider_lc))),
        &widget_resource(),
    );
    assert_eq!(
        code_of(all.list(&ListParams::default()).await.unwrap_err()),
        500
    );
}

#[tokio::test]
async fn an_accepted_logical_cluster_claim_lets_the_provider_read_the_consumer_path() {
    let sim = kcp().await;
    let claim = json!([{"group": "core.kcp.io", "resource": "logicalclusters", "all": true}]);
    let provider_lc = provider(&sim, claim).await;
    let accepted = json!([{"group": "core.kcp.io", "resource": "logicalclusters", "all": true, "state": "Accepted"}]);
    let lc = consumer(&sim, "consumer", accepted).await;
    let inside: Api<kcp_core::kcp::LogicalCluster> = Api::all(client_at(&format!(
        "{}/clusters/{lc}",
        vw_url(&sim, &provider_lc)
    )));
    let cluster = inside.get("cluster").await.unwrap();
    assert_eq!(
        cluster.metadata.annotations.unwrap()["kcp.io/path"],
        "root:consumer"
    );
}

#[tokio::test]
async fn an_accepted_events_claim_covers_both_event_groups() {
    let sim = kcp().await;
    let provider_lc = provider(
        &sim,
        json!([{"group": "", "resource": "events", "all": true}]),
    )
    .await;
    let accepted = json!([{"group": "", "resource": "events", "all": true, "state": "Accepted"}]);
    let lc = consumer(&sim, "consumer", accepted).await;
    let client = client_at(&format!("{}/clusters/{lc}", vw_url(&sim, &provider_lc)));
    let core: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client.clone(), "default");
    assert!(core.list(&ListParams::default()).await.is_ok());
    let new: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client, "default");
    assert!(new.list(&ListParams::default()).await.is_ok());
}

/// An export `widgets` in `root:provider` claiming ConfigMaps with `verbs`; answers the
/// provider's logical cluster.
async fn export_claiming_configmaps(sim: &Server, verbs: Value) -> String {
    let lc_provider = workspace(sim, "provider").await;
    create_schema(
        sim,
        "root:provider",
        "v1.widgets.example.io",
        "widgets",
        "Widget",
    )
    .await;
    let v2: Api<DynamicObject> =
        Api::all_with(sim.client("root:provider").unwrap(), &export_v1alpha2());
    let export: DynamicObject = serde_json::from_value(json!({"apiVersion": "apis.kcp.io/v1alpha2",
        "kind": "APIExport", "metadata": {"name": "widgets"},
        "spec": {"resources": [{"group": "example.io", "name": "widgets", "schema": "v1.widgets.example.io", "storage": {"crd": {}}}],
            "permissionClaims": [{"group": "", "resource": "configmaps", "verbs": verbs}]}}))
    .unwrap();
    v2.create(&PostParams::default(), &export).await.unwrap();
    lc_provider
}

// kcp's apiexport authorizer, as kcp v0.30.0 answers the conformance cases of
// kcp-testbed/conformance/cases/kcp-claims.yaml, intersects the binding's and the export's verb
// lists literally and allows a request whose verb (or `*`) is in the intersection. A v1alpha1
// binding accepts all verbs (`*`), so it is refused explicit export verbs, as a v1alpha2 binding
// accepting `*` is in kcp-claims/all-verbs-on-the-binding-and-some-on-the-export. Bindings with
// explicit verbs: tests/claim_verbs.rs.

#[tokio::test]
async fn explicit_export_verbs_are_refused_to_a_binding_accepting_all_verbs() {
    let sim = kcp().await;
    let lc_provider = export_claiming_configmaps(&sim, json!(["get", "list"])).await;
    let accepted =
        json!([{"group": "", "resource": "configmaps", "all": true, "state": "Accepted"}]);
    let lc = consumer(&sim, "consumer", accepted).await;
    let inside: Api<ConfigMap> = Api::namespaced(
        client_at(&format!("{}/clusters/{lc}", vw_url(&sim, &lc_provider))),
        "default",
    );
    let err = inside.list(&ListParams::default()).await.unwrap_err();
    assert_eq!(code_of(err), 403);
}

#[tokio::test]
async fn all_verbs_claimed_are_allowed_to_a_binding_accepting_all_verbs() {
    let sim = kcp().await;
    let lc_provider = export_claiming_configmaps(&sim, json!(["*"])).await;
    let accepted =
        json!([{"group": "", "resource": "configmaps", "all": true, "state": "Accepted"}]);
    let lc = consumer(&sim, "consumer", accepted).await;
    let inside: Api<ConfigMap> = Api::namespaced(
        client_at(&format!("{}/clusters/{lc}", vw_url(&sim, &lc_provider))),
        "default",
    );
    assert!(inside.list(&ListParams::default()).await.is_ok());
    inside
        .create(&PostParams::default(), &cm("allowed"))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_claim_on_another_exports_resource_uses_its_identity_hash() {
    let sim = kcp().await;
    provider(&sim, json!([])).await;
    let widgets_export: Api<APIExport> = Api::all(sim.client("root:provider").unwrap());
    let identity = widgets_export
        .get("widgets")
        .await
        .unwrap()
        .status
        .unwrap()
        .identity_hash
        .unwrap();
    let auditor_lc = workspace(&sim, "auditor").await;
    let exports: Api<APIExport> = Api::all(sim.client("root:auditor").unwrap());
    let claim = json!({"group": "example.io", "resource": "widgets", "identityHash": identity, "all": true});
    let audit = serde_json::from_value(
        json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport",
        "metadata": {"name": "audit"}, "spec": {"permissionClaims": [claim]}}),
    )
    .unwrap();
    exports
        .create(&PostParams::default(), &audit)
        .await
        .unwrap();

    let lc = consumer(&sim, "consumer", json!([])).await;
    let bindings: Api<APIBinding> = Api::all(sim.client("root:consumer").unwrap());
    let mut accepted = claim.clone();
    accepted["state"] = json!("Accepted");
    let binding = serde_json::from_value(
        json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding",
        "metadata": {"name": "audit"},
        "spec": {"reference": {"export": {"path": "root:auditor", "name": "audit"}},
            "permissionClaims": [accepted]}}),
    )
    .unwrap();
    bindings
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    widgets(sim.client("root:consumer").unwrap())
        .create(&PostParams::default(), &widget("w1"))
        .await
        .unwrap();
    let url = format!(
        "{}/services/apiexport/{auditor_lc}/audit/clusters/*",
        sim.url()
    );
    let seen = Api::<DynamicObject>::all_with(client_at(&url), &widget_resource())
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    assert_eq!(seen.len(), 1);
    assert_eq!(cluster_of(&seen[0]), lc);
}

#[tokio::test]
async fn deleting_an_export_invalidates_its_bindings_and_removes_its_slice() {
    let sim = kcp().await;
    provider(&sim, json!([])).await;
    consumer(&sim, "consumer", json!([])).await;
    let exports: Api<APIExport> = Api::all(sim.client("root:provider").unwrap());
    exports
        .delete("widgets", &DeleteParams::default())
        .await
        .unwrap();
    let slices: Api<APIExportEndpointSlice> = Api::all(sim.client("root:provider").unwrap());
    assert!(slices.get_opt("widgets").await.unwrap().is_none());
    let bindings: Api<APIBinding> = Api::all(sim.client("root:consumer").unwrap());
    let conditions = bindings
        .get("widgets")
        .await
        .unwrap()
        .status
        .unwrap()
        .conditions
        .unwrap();
    let valid = conditions
        .iter()
        .find(|c| c.type_ == "APIExportValid")
        .unwrap();
    assert_eq!(valid.reason.as_deref(), Some("APIExportNotFound"));
}

#[tokio::test]
async fn the_in_process_client_reaches_the_virtual_workspace_too() {
    use kcp_core::ObjectClient;
    let sim = kcp().await;
    let provider_lc = provider(&sim, json!([])).await;
    let lc = consumer(&sim, "consumer", json!([])).await;
    let inside = sim.object_client_at(kcp_sim::Endpoint::ApiExport {
        export_cluster: provider_lc,
        export: "widgets".into(),
        cluster: Some(lc.clone()),
        shard: None,
    });
    let mut obj = widget("w1");
    obj.metadata.namespace = Some("default".into());
    let created = inside.create(&obj).await.unwrap();
    assert_eq!(cluster_of(&created), lc);
}

// ---- kcp-core's ApiExportConsumers provider against the simulator ---------------------------

mod consumers_provider {
    use std::sync::Arc;

    use kcp_core::cluster::{ApiExportConsumers, ClusterClients, ClusterEvent, ClusterProvider};
    use tokio::sync::mpsc;

    use super::*;

    struct Running {
        events: mpsc::Receiver<ClusterEvent>,
        task: tokio::task::JoinHandle<kcp_core::Result<()>>,
        urls: tokio::sync::watch::Receiver<Vec<String>>,
    }

    fn start(provider: ApiExportConsumers) -> Running {
        let (tx, events) = mpsc::channel(64);
        let urls = provider.urls();
        let task = tokio::spawn(async move { provider.run(tx).await });
        Running { events, task, urls }
    }

    fn from_slice(sim: &Server) -> ApiExportConsumers {
        let clients = Arc::new(ClusterClients::new(sim.kube_config("root").unwrap()));
        ApiExportConsumers::from_endpoint_slice(
            clients,
            sim.client("root:provider").unwrap(),
            "widgets",
        )
    }

    async fn next(events: &mut mpsc::Receiver<ClusterEvent>) -> ClusterEvent {
        tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .expect("a cluster event in time")
            .expect("the provider is running")
    }

    async fn engaged(
        events: &mut mpsc::Receiver<ClusterEvent>,
    ) -> kcp_core::cluster::EngagedCluster {
        match next(events).await {
            ClusterEvent::Engaged(cluster) => cluster,
            other => panic!("expected an engagement, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_bound_consumer_is_engaged_with_a_client_scoped_to_it_in_the_virtual_workspace() {
        let sim = kcp().await;
        let provider_lc = provider(&sim, json!([])).await;
        let mut running = start(from_slice(&sim));
        let consumer_lc = consumer(&sim, "consumer", json!([])).await;
        let cluster = engaged(&mut running.events).await;
        assert_eq!(cluster.name.as_str(), consumer_lc);
        assert_eq!(
            cluster.base_url.as_deref(),
            Some(vw_url(&sim, &provider_lc).as_str())
        );
        let announced = cluster.announced_by.as_deref().expect("the binding");
        assert_eq!(announced.types.as_ref().unwrap().kind, "APIBinding");
        // The engaged kube client reaches the consumer's widgets through the view.
        widgets(sim.client("root:consumer").unwrap())
            .create(&PostParams::default(), &widget("w1"))
            .await
            .unwrap();
        let seen = widgets(cluster.kube.clone().unwrap())
            .list(&ListParams::default())
            .await
            .unwrap();
        assert_eq!(seen.items.len(), 1);
        assert_eq!(
            *running.urls.borrow_and_update(),
            [vw_url(&sim, &provider_lc)]
        );
        drop(running.events);
        running.task.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn deleting_the_binding_disengages_the_consumer() {
        let sim = kcp().await;
        provider(&sim, json!([])).await;
        let mut running = start(from_slice(&sim));
        let consumer_lc = consumer(&sim, "consumer", json!([])).await;
        engaged(&mut running.events).await;
        let bindings: Api<APIBinding> = Api::all(sim.client("root:consumer").unwrap());
        bindings
            .delete("widgets", &DeleteParams::default())
            .await
            .unwrap();
        match next(&mut running.events).await {
            ClusterEvent::Disengaged(name) => assert_eq!(name.as_str(), consumer_lc),
            other => panic!("expected a disengagement, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn consumers_on_every_shard_are_engaged_once_each() {
        let sim = Server::start(Config {
            shards: 2,
            ..Config::kcp()
        })
        .await
        .unwrap();
        provider(&sim, json!([])).await;
        let mut running = start(from_slice(&sim));
        let mut expected = Vec::new();
        for name in ["c1", "c2", "c3", "c4"] {
            expected.push(consumer(&sim, name, json!([])).await);
        }
        let mut seen = Vec::new();
        for _ in 0..expected.len() {
            seen.push(engaged(&mut running.events).await.name.as_str().to_string());
        }
        seen.sort();
        expected.sort();
        assert_eq!(seen, expected);
        assert_eq!(running.urls.borrow().len(), 2, "one view per shard");
        assert!(
            tokio::time::timeout(Duration::from_millis(300), running.events.recv())
                .await
                .is_err(),
            "no cluster is engaged twice"
        );
    }
}

#[tokio::test]
async fn the_view_stops_serving_a_resource_whose_schema_was_deleted() {
    let sim = kcp().await;
    let provider_lc = provider(&sim, json!([])).await;
    let lc = consumer(&sim, "consumer", json!([])).await;
    let inside = widgets(client_at(&format!(
        "{}/clusters/{lc}",
        vw_url(&sim, &provider_lc)
    )));
    inside.list(&ListParams::default()).await.unwrap();
    let schemas: Api<APIResourceSchema> = Api::all(sim.client("root:provider").unwrap());
    schemas
        .delete("v1.widgets.example.io", &DeleteParams::default())
        .await
        .unwrap();
    let err = inside.list(&ListParams::default()).await.unwrap_err();
    assert_eq!(code_of(err), 404);
}
