//! `KubeObjectClient` against a scripted mock API server (tower-test).
//!
//! Every test lists, in order, the requests the client must send (method, path, query
//! parameters, content type, body) and the answers the "server" gives; the script fails the test
//! with a message naming the exchange when a request differs, is missing, or is one too many.

// The harness helpers are test code too: a panic is how they report a failed expectation.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::time::Duration;

use http::{Method, Request, Response};
use k8s_openapi::api::core::v1::ConfigMap;
use kcp_core::kube_client::KubeObjectClient;
use kcp_core::{
    DeleteOptions, DeleteOutcome, Error, ListOptions, ObjectClient, ObjectClientExt, ObjectPatch,
    ObjectRef, PatchOptions, Propagation, Subresource,
};
use kube::api::{DynamicObject, GroupVersionKind};
use kube::client::Body;
use serde_json::{Value, json};

// ------------------------------------------------------------------------------------------
// Harness: a scripted API server

/// How long the server waits for the next expected request before failing the test.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a client operation may take in total.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(10);

/// One expected request and the answer to it.
struct Exchange {
    method: Method,
    path: String,
    query: Vec<(String, String)>,
    content_type: Option<String>,
    body: Option<Value>,
    answer: Answer,
}

enum Answer {
    Json(u16, Value),
    Text(u16, String),
    ConnectionReset,
}

impl Exchange {
    fn new(method: Method, path: &str) -> Self {
        Exchange {
            method,
            path: path.to_string(),
            query: Vec::new(),
            content_type: None,
            body: None,
            answer: Answer::Json(200, json!({})),
        }
    }

    fn get(path: &str) -> Self {
        Self::new(Method::GET, path)
    }
    fn post(path: &str) -> Self {
        Self::new(Method::POST, path)
    }
    fn put(path: &str) -> Self {
        Self::new(Method::PUT, path)
    }
    fn patch(path: &str) -> Self {
        Self::new(Method::PATCH, path)
    }
    fn delete(path: &str) -> Self {
        Self::new(Method::DELETE, path)
    }

    /// The exact query parameters (in any order). Without this, the query must be empty.
    fn query(mut self, pairs: &[(&str, &str)]) -> Self {
        self.query = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self
    }

    fn content_type(mut self, content_type: &str) -> Self {
        self.content_type = Some(content_type.to_string());
        self
    }

    /// The exact JSON body.
    fn body(mut self, body: Value) -> Self {
        self.body = Some(body);
        self
    }

    fn reply(mut self, code: u16, body: Value) -> Self {
        self.answer = Answer::Json(code, body);
        self
    }

    fn reply_text(mut self, code: u16, text: &str) -> Self {
        self.answer = Answer::Text(code, text.to_string());
        self
    }

    fn reset_connection(mut self) -> Self {
        self.answer = Answer::ConnectionReset;
        self
    }

    fn describe(&self) -> String {
        format!("{} {}{}", self.method, self.path, render_query(&self.query))
    }
}

fn render_query(pairs: &[(String, String)]) -> String {
    if pairs.is_empty() {
        return String::new();
    }
    let rendered: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("?{}", rendered.join("&"))
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
                out.push(u8::from_str_radix(hex, 16).unwrap());
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).unwrap()
}

fn parse_query(query: Option<&str>) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = query
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect();
    pairs.sort();
    pairs
}

/// The mock API server; [`ApiServer::run`] drives one client operation against the script.
struct ApiServer {
    task: tokio::task::JoinHandle<()>,
    done: tokio::sync::oneshot::Sender<()>,
}

/// A `KubeObjectClient` talking to a server that expects exactly `script`, in order.
fn serve(script: Vec<Exchange>) -> (KubeObjectClient, ApiServer) {
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = KubeObjectClient::new(kube::Client::new(service, "default"));
    let (done, mut done_rx) = tokio::sync::oneshot::channel::<()>();
    let total = script.len();
    let task = tokio::spawn(async move {
        let expected: Vec<String> = script.iter().map(Exchange::describe).collect();
        for (index, exchange) in script.into_iter().enumerate() {
            let step = format!(
                "exchange {} of {total} ({})",
                index + 1,
                exchange.describe()
            );
            let next = tokio::select! {
                biased;
                next = tokio::time::timeout(REQUEST_TIMEOUT, handle.next_request()) => next,
                _ = &mut done_rx => panic!(
                    "the client finished without sending these expected requests: {:#?}",
                    &expected[index..]
                ),
            };
            let (request, respond) = match next {
                Ok(Some(r)) => r,
                Ok(None) => panic!("{step}: the client went away"),
                Err(_) => panic!("{step}: no request within {REQUEST_TIMEOUT:?}"),
            };
            check(&step, &exchange, request).await;
            match exchange.answer {
                Answer::Json(code, body) => respond.send_response(
                    Response::builder()
                        .status(code)
                        .header("content-type", "application/json")
                        .body(Body::from(serde_json::to_vec(&body).unwrap()))
                        .unwrap(),
                ),
                Answer::Text(code, text) => respond.send_response(
                    Response::builder()
                        .status(code)
                        .header("content-type", "text/plain")
                        .body(Body::from(text.into_bytes()))
                        .unwrap(),
                ),
                Answer::ConnectionReset => respond.send_error(std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "connection reset by peer",
                )),
            }
        }
        tokio::select! {
            biased;
            extra = handle.next_request() => if let Some((request, _)) = extra {
                panic!(
                    "unexpected request after the {total} scripted ones: {} {}",
                    request.method(),
                    request.uri()
                );
            },
            _ = done_rx => {}
        }
    });
    (client, ApiServer { task, done })
}

async fn check(step: &str, exchange: &Exchange, request: Request<Body>) {
    let (parts, body) = request.into_parts();
    let got = format!("{} {}", parts.method, parts.uri);
    assert_eq!(
        parts.method, exchange.method,
        "{step}: wrong method, got {got}"
    );
    assert_eq!(
        parts.uri.path(),
        exchange.path,
        "{step}: wrong path (left: sent, right: expected), got {got}"
    );
    let mut want_query = exchange.query.clone();
    want_query.sort();
    assert_eq!(
        parse_query(parts.uri.query()),
        want_query,
        "{step}: wrong query parameters (left: sent, right: expected), got {got}"
    );
    if let Some(want) = &exchange.content_type {
        let content_type = parts
            .headers
            .get(http::header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap().to_string());
        assert_eq!(
            content_type.as_deref(),
            Some(want.as_str()),
            "{step}: wrong content-type"
        );
    }
    if let Some(want) = &exchange.body {
        let bytes = body.collect_bytes().await.unwrap();
        let got: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            panic!(
                "{step}: body is not JSON ({e}): {}",
                String::from_utf8_lossy(&bytes)
            )
        });
        assert_eq!(
            &got, want,
            "{step}: wrong body (left: sent, right: expected)"
        );
    }
}

impl ApiServer {
    /// Runs `operation`, then checks that the server saw exactly its script; a failed check
    /// fails the test with the server's message (not with the client error it caused).
    async fn run<F: Future>(self, operation: F) -> F::Output {
        let output = tokio::time::timeout(OPERATION_TIMEOUT, operation).await;
        let _ = self.done.send(());
        match self.task.await {
            Ok(()) => {}
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => panic!("mock API server task failed: {e}"),
        }
        output.unwrap_or_else(|_| panic!("the operation did not finish in {OPERATION_TIMEOUT:?}"))
    }
}

// ------------------------------------------------------------------------------------------
// Fixtures

fn core_v1_discovery() -> Exchange {
    Exchange::get("/api/v1").reply(
        200,
        json!({
            "kind": "APIResourceList", "groupVersion": "v1",
            "resources": [
                {"name": "configmaps", "singularName": "configmap", "namespaced": true, "kind": "ConfigMap",
                 "verbs": ["create","delete","get","list","patch","update","watch"]},
                {"name": "namespaces", "singularName": "namespace", "namespaced": false, "kind": "Namespace",
                 "verbs": ["create","delete","get","list","patch","update","watch"]},
                {"name": "namespaces/finalize", "singularName": "", "namespaced": false, "kind": "Namespace", "verbs": ["update"]},
                {"name": "namespaces/status", "singularName": "", "namespaced": false, "kind": "Namespace", "verbs": ["get","patch","update"]},
            ]
        }),
    )
}

fn apps_v1_discovery() -> Exchange {
    Exchange::get("/apis/apps/v1").reply(
        200,
        json!({
            "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps/v1",
            "resources": [
                {"name": "deployments", "singularName": "deployment", "namespaced": true, "kind": "Deployment",
                 "verbs": ["create","delete","get","list","patch","update","watch"], "shortNames": ["deploy"]},
                {"name": "deployments/scale", "singularName": "", "namespaced": true, "group": "autoscaling",
                 "version": "v1", "kind": "Scale", "verbs": ["get","patch","update"]},
                {"name": "deployments/status", "singularName": "", "namespaced": true, "kind": "Deployment",
                 "verbs": ["get","patch","update"]},
            ]
        }),
    )
}

fn rbac_v1_discovery() -> Exchange {
    Exchange::get("/apis/rbac.authorization.k8s.io/v1").reply(
        200,
        json!({
            "kind": "APIResourceList", "groupVersion": "rbac.authorization.k8s.io/v1",
            "resources": [
                {"name": "clusterroles", "singularName": "clusterrole", "namespaced": false, "kind": "ClusterRole",
                 "verbs": ["create","delete","get","list","patch","update","watch"]},
            ]
        }),
    )
}

/// `example.dev/v1` serving only `kinds` (plural, kind) pairs, each with a status subresource.
fn example_v1_discovery(kinds: &[(&str, &str)]) -> Exchange {
    let mut resources = Vec::new();
    for (plural, kind) in kinds {
        resources.push(
            json!({"name": plural, "singularName": "", "namespaced": true, "kind": kind,
            "verbs": ["create","delete","get","list","patch","update","watch"]}),
        );
        resources.push(
            json!({"name": format!("{plural}/status"), "singularName": "", "namespaced": true,
            "kind": kind, "verbs": ["get","patch","update"]}),
        );
    }
    Exchange::get("/apis/example.dev/v1").reply(
        200,
        json!({"kind": "APIResourceList", "groupVersion": "example.dev/v1", "resources": resources}),
    )
}

fn gvk(group: &str, version: &str, kind: &str) -> GroupVersionKind {
    GroupVersionKind::gvk(group, version, kind)
}

fn configmap_gvk() -> GroupVersionKind {
    gvk("", "v1", "ConfigMap")
}

fn deployment_gvk() -> GroupVersionKind {
    gvk("apps", "v1", "Deployment")
}

fn configmap(namespace: &str, name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": namespace}, "data": {"k": "v"}})
}

fn deployment(namespace: &str, name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": name, "namespace": namespace, "resourceVersion": "7"},
           "spec": {"replicas": 1}})
}

fn object(value: Value) -> DynamicObject {
    serde_json::from_value(value).unwrap()
}

fn status(code: u16, reason: &str, message: &str, details: Value) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason, "details": details, "code": code})
}

fn web() -> ObjectRef {
    ObjectRef::namespaced(deployment_gvk(), "prod", "web")
}

// ------------------------------------------------------------------------------------------
// Discovery

#[tokio::test]
async fn discovery_of_a_group_version_is_fetched_once_and_cached() {
    let (client, server) = serve(vec![
        apps_v1_discovery(),
        Exchange::get("/apis/apps/v1/namespaces/prod/deployments/web")
            .reply(200, deployment("prod", "web")),
        Exchange::get("/apis/apps/v1/namespaces/prod/deployments/api")
            .reply(200, deployment("prod", "api")),
    ]);
    let (first, second) = server
        .run(async {
            let first = client.get(&web()).await;
            let api = ObjectRef::namespaced(deployment_gvk(), "prod", "api");
            (first, client.get(&api).await)
        })
        .await;
    assert!(first.unwrap().is_some());
    assert!(second.unwrap().is_some());
}

#[tokio::test]
async fn resolve_reports_plural_scope_and_subresources() {
    let (client, server) = serve(vec![apps_v1_discovery()]);
    let info = server.run(client.resolve(&deployment_gvk())).await.unwrap();
    assert_eq!(info.resource.plural, "deployments");
    assert_eq!(info.resource.api_version, "apps/v1");
    assert!(info.namespaced);
    assert_eq!(info.subresources, ["scale", "status"]);
    assert!(info.has_status());
}

#[tokio::test]
async fn a_kind_missing_from_a_cached_group_version_is_refreshed_once_then_not_served() {
    let (client, server) = serve(vec![
        example_v1_discovery(&[("widgets", "Widget")]),
        example_v1_discovery(&[("widgets", "Widget")]),
    ]);
    let (widget, gadget) = server
        .run(async {
            let widget = client.resolve(&gvk("example.dev", "v1", "Widget")).await;
            (
                widget,
                client.resolve(&gvk("example.dev", "v1", "Gadget")).await,
            )
        })
        .await;
    assert!(widget.is_ok());
    let err = gadget.unwrap_err();
    assert!(matches!(err, Error::KindNotServed { .. }), "{err:?}");
    assert!(err.is_transient());
    assert_eq!(
        err.to_string(),
        "kind example.dev/v1 Gadget is not served by the API server"
    );
}

#[tokio::test]
async fn a_crd_established_after_the_first_lookup_is_found_by_the_refresh() {
    let (client, server) = serve(vec![
        example_v1_discovery(&[("widgets", "Widget")]),
        example_v1_discovery(&[("widgets", "Widget"), ("gadgets", "Gadget")]),
    ]);
    let gadget = server
        .run(async {
            // Caches example.dev/v1 before the Gadget CRD is established...
            client
                .resolve(&gvk("example.dev", "v1", "Widget"))
                .await
                .unwrap();
            // ...so this lookup misses in the cache, refreshes, and finds it.
            client.resolve(&gvk("example.dev", "v1", "Gadget")).await
        })
        .await;
    assert_eq!(gadget.unwrap().resource.plural, "gadgets");
}

#[tokio::test]
async fn an_unserved_group_version_is_kind_not_served() {
    let (client, server) = serve(vec![
        Exchange::get("/apis/nope.dev/v1").reply_text(404, "404 page not found\n"),
    ]);
    let err = server
        .run(client.resolve(&gvk("nope.dev", "v1", "Thing")))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::KindNotServed { .. }), "{err:?}");
    assert!(err.is_transient());
}

#[tokio::test]
async fn concurrent_lookups_of_an_uncached_group_version_share_one_discovery_request() {
    let (client, server) = serve(vec![apps_v1_discovery()]);
    let kind = deployment_gvk();
    let (a, b) = server
        .run(async { tokio::join!(client.resolve(&kind), client.resolve(&kind)) })
        .await;
    assert_eq!(a.unwrap(), b.unwrap());
}

#[tokio::test]
async fn invalidate_makes_the_next_lookup_fetch_discovery_again() {
    let (client, server) = serve(vec![apps_v1_discovery(), apps_v1_discovery()]);
    let (first, second) = server
        .run(async {
            let first = client.resolve(&deployment_gvk()).await;
            client.invalidate();
            (first, client.resolve(&deployment_gvk()).await)
        })
        .await;
    assert_eq!(first.unwrap(), second.unwrap());
}

#[tokio::test]
async fn clones_share_the_discovery_cache() {
    let (client, server) = serve(vec![apps_v1_discovery()]);
    let clone = client.clone();
    let (a, b) = server
        .run(async {
            let a = client.resolve(&deployment_gvk()).await;
            (a, clone.resolve(&deployment_gvk()).await)
        })
        .await;
    assert_eq!(a.unwrap(), b.unwrap());
}

// ------------------------------------------------------------------------------------------
// get

#[tokio::test]
async fn get_of_a_namespaced_core_kind_uses_the_api_path_with_the_namespace() {
    let (client, server) = serve(vec![
        core_v1_discovery(),
        Exchange::get("/api/v1/namespaces/team-a/configmaps/settings")
            .reply(200, configmap("team-a", "settings")),
    ]);
    let target = ObjectRef::namespaced(configmap_gvk(), "team-a", "settings");
    let got = server.run(client.get(&target)).await.unwrap().unwrap();
    assert_eq!(got.data["data"]["k"], "v");
}

#[tokio::test]
async fn get_of_a_cluster_scoped_core_kind_has_no_namespace_in_the_path() {
    let (client, server) = serve(vec![
        core_v1_discovery(),
        Exchange::get("/api/v1/namespaces/team-a").reply(
            200,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}),
        ),
    ]);
    let target = ObjectRef::cluster_scoped(gvk("", "v1", "Namespace"), "team-a");
    let got = server.run(client.get(&target)).await.unwrap().unwrap();
    assert_eq!(got.metadata.name.as_deref(), Some("team-a"));
}

#[tokio::test]
async fn get_of_a_namespaced_kind_of_a_named_group_uses_the_apis_path() {
    let (client, server) = serve(vec![
        apps_v1_discovery(),
        Exchange::get("/apis/apps/v1/namespaces/prod/deployments/web")
            .reply(200, deployment("prod", "web")),
    ]);
    let got = server.run(client.get(&web())).await.unwrap().unwrap();
    assert_eq!(got.metadata.resource_version.as_deref(), Some("7"));
}

#[tokio::test]
async fn get_of_a_cluster_scoped_kind_of_a_named_group_ignores_a_given_namespace() {
    let (client, server) = serve(vec![
        rbac_v1_discovery(),
        Exchange::get("/apis/rbac.authorization.k8s.io/v1/clusterroles/admin").reply(
            200,
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                   "metadata": {"name": "admin"}}),
        ),
    ]);
    let target = ObjectRef::namespaced(
        gvk("rbac.authorization.k8s.io", "v1", "ClusterRole"),
        "ignored",
        "admin",
    );
    let got = server.run(client.get(&target)).await.unwrap();
    assert!(got.is_some());
}

#[tokio::test]
async fn get_of_a_missing_object_is_none() {
    let (client, server) = serve(vec![
        apps_v1_discovery(),
        Exchange::get("/apis/apps/v1/namespaces/prod/deployments/web").reply(
            404,
            status(
                404,
                "NotFound",
                "deployments.apps \"web\" not found",
                json!({"name": "web", "group": "apps", "kind": "deployments"}),
            ),
        ),
    ]);
    assert_eq!(server.run(client.get(&web())).await.unwrap(), None);
}

#[tokio::test]
async fn get_fills_in_api_version_and_kind_when_the_server_omits_them() {
    let (client, server) = serve(vec![
        apps_v1_discovery(),
        Exchange::get("/apis/apps/v1/namespaces/prod/deployments/web").reply(
            200,
            json!({"metadata": {"name": "web", "namespace": "prod"}}),
        ),
    ]);
    let got = server.run(client.get(&web())).await.unwrap().unwrap();
    let types = got.types.unwrap();
    assert_eq!(
        (types.api_version.as_str(), types.kind.as_str()),
        ("apps/v1", "Deployment")
    );
}

#[tokio::test]
async fn a_namespaced_kind_without_a_namespace_is_an_invalid_object_and_sends_nothing() {
    let (client, server) = serve(vec![apps_v1_discovery()]);
    let target = ObjectRef::cluster_scoped(deployment_gvk(), "web");
    let err = server.run(client.get(&target)).await.unwrap_err();
    assert!(matches!(err, Error::InvalidObject { .. }), "{err:?}");
    assert!(!err.is_transient());
    assert_eq!(
        err.to_string(),
        "invalid object apps/v1 Deployment web: field metadata.namespace: \
         is required for namespaced kind apps/v1 Deployment"
    );
}

// ------------------------------------------------------------------------------------------
// list

#[tokio::test]
async fn list_sends_selectors_limit_and_continue_and_fills_in_item_types() {
    let (client, server) = serve(vec![
        apps_v1_discovery(),
        Exchange::get("/apis/apps/v1/namespaces/prod/deployments")
            .query(&[
                ("labelSelector", "app=web,tier in (a,b)"),
                ("fieldSelector", "metadata.name!=old"),
                ("limit", "2"),
                ("continue", "token-1"),
            ])
            .reply(
                200,
                json!({"kind": "DeploymentList", "apiVersion": "apps/v1",
                "metadata": {"resourceVersion": "42", "continue": "token-2"},
                "items": [
                    {"metadata": {"name": "web", "namespace": "prod"}},
                    {"metadata": {"name": "web2", "namespace": "prod"}},
                ]}),
            ),
    ]);
    let options = ListOptions {
        label_selector: Some("app=web,tier in (a,b)".into()),
        field_selector: Some("metadata.name!=old".into()),
        limit: Some(2),
        continue_token: Some("token-1".into()),
    };
    let list = server
        .run(client.list(&deployment_gvk(), Some("prod"), &options))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 2);
    for item in &list.items {
        let types = item.types.as_ref().unwrap();
        assert_eq!(
            (types.api_version.as_str(), types.kind.as_str()),
            ("apps/v1", "Deployment")
        );
    }
    assert_eq!(list.resource_version.as_deref(), Some("42"));
    assert_eq!(list.continue_token.as_deref(), Some("token-2"));
}

#[tokio::test]
async fn list_without_a_namespace_lists_across_all_namespaces() {
    let (client, server) = serve(vec![
        apps_v1_discovery(),
        Exchange::get("/apis/apps/v1/deployments").reply(
            200,
            json!({"metadata": {"resourceVersion": "1"}, "items": []}),
        ),
    ]);
    let list = server
        .run(client.list(&deployment_gvk(), None, &ListOptions::default()))
        .await
        .unwrap();
    assert!(list.items.is_empty());
    assert_eq!(list.continue_token, None);
}

// ------------------------------------------------------------------------------------------
// create

#[tokio::test]
async fn create_posts_the_object_to_its_collection() {
    let cm = configmap("team-a", "settings");
    let (client, server) = serve(vec![
        core_v1_discovery(),
        Exchange::post("/api/v1/namespaces/team-a/configmaps")
            .content_type("application/json")
            .body(cm.clone())
            .reply(201, {
                let mut created = cm.clone();
                created["metadata"]["uid"] = json!("u-1");
                created
            }),
    ]);
    let created = server.run(client.create(&object(cm))).await.unwrap();
    assert_eq!(created.metadata.uid.as_deref(), Some("u-1"));
}

#[tokio::test]
async fn create_honours_generate_name() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"generateName": "run-", "namespace": "team-a"}});
    let (client, server) = serve(vec![
        core_v1_discovery(),
        Exchange::post("/api/v1/namespaces/team-a/configmaps")
            .body(cm.clone())
            .reply(201, configmap("team-a", "run-x7k2p")),
    ]);
    let created = server.run(client.create(&object(cm))).await.unwrap();
    assert_eq!(created.metadata.name.as_deref(), Some("run-x7k2p"));
}

#[tokio::test]
async fn create_of_a_namespaced_object_without_namespace_is_invalid_not_defaulted() {
    let (client, server) = serve(vec![core_v1_discovery()]);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}});
    let err = server.run(client.create(&object(cm))).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid object v1 ConfigMap settings: field metadata.namespace: \
         is required for namespaced kind v1 ConfigMap"
    );
}

#[tokio::test]
async fn create_of_a_cluster_scoped_object_drops_its_namespace() {
    let sent = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                      "metadata": {"name": "viewer"}, "rules": []});
    let (client, server) = serve(vec![
        rbac_v1_discovery(),
        Exchange::post("/apis/rbac.authorization.k8s.io/v1/clusterroles")
            .body(sent.clone())
            .reply(201, sent.clone()),
    ]);
    let mut with_namespace = sent.clone();
    with_namespace["metadata"]["namespace"] = json!("helm-release-ns");
    let created = server
        .run(client.create(&object(with_namespace)))
        .await
        .unwrap();
    assert_eq!(created.metadata.namespace, None);
}

#[tokio::test]
async fn create_in_a_missing_namespace_is_namespace_not_found_and_transient() {
    let (client, server) = serve(vec![
        core_v1_discovery(),
        Exchange::post("/api/v1/namespaces/team-b/configmaps").reply(
            404,
            status(
                404,
                "NotFound",
                "namespaces \"team-b\" not found",
                json!({"name": "team-b", "kind": "namespaces"}),
            ),
        ),
    ]);
    let err = server
        .run(client.create(&object(configmap("team-b", "settings"))))
        .await
        .unwrap_err();
    match &err {
        Error::NamespaceNotFound { object, namespace } => {
            assert_eq!(object, "v1 ConfigMap team-b/settings");
            assert_eq!(namespace, "team-b");
        }
        other => panic!("expected NamespaceNotFound, got {other:?}"),
    }
    assert!(err.is_transient());
}

#[tokio::test]
async fn the_default_field_manager_is_sent_on_create() {
    let (client, server) = serve(vec![
        core_v1_discovery(),
        Exchange::post("/api/v1/namespaces/team-a/configmaps")
            .query(&[("fieldManager", "kcp-init")])
            .reply(201, configmap("team-a", "settings")),
    ]);
    let client = client.with_default_field_manager("kcp-init");
    server
        .run(client.create(&object(configmap("team-a", "settings"))))
        .await
        .unwrap();
}

// ------------------------------------------------------------------------------------------
// replace

#[tokio::test]
async fn replace_puts_the_object_with_its_resource_version() {
    let dep = deployment("prod", "web");
    let (client, server) = serve(vec![
        apps_v1_discovery(),
        Exchange::put("/apis/apps/v1/namespaces/prod/deployments/web")
            .content_type("application/json")
            .body(dep.clone())
            .reply(200, dep.clone()),
    ]);
    server
        .run(client.replace(&object(dep), Subresource::Main))
        .await
        .unwrap();
}

#[tokio::test]
async fn update_status_puts_to_the_status_subresource() {
    let mut dep = deployment("prod", "web");
    dep["status"] = json!({"readyReplicas": 1});
    let (client, server) = serve(vec![
        apps_v1_discovery(),
        Exchange::put("/apis/apps/v1/namespaces/prod/deployments/web/status")
            .body(dep.clone())
            .reply(200, dep.clone()),
    ]);
    let updated = server
        .run(client.update_status(&object(dep)))
        .await
        .unwrap();
    assert_eq!(updated.data["status"]["readyReplicas"], 1);
}

#[tokio::test]
async fn a_stale_resource_version_is_a_transient_409_conflict() {
    let (client, server) = serve(vec![
        apps_v1_discovery(),
        Exchange::put("/apis/apps/v1/namespaces/prod/deployments/web").reply(
            409,
            status(409, "Conflict",
                "Operation cannot be fulfilled on deployments.apps \"web\": the object has been modified",
                json!({"name": "web", "group": "apps", "kind": "deployments"})),
        ),
    ]);
    let err = server
        .run(client.replace(&object(deployment("prod", "web")), Subresource::Main))
        .await
        .unwrap_err();
    match &err {
        Error::Api {
            verb,
            object,
            code,
            reason,
            ..
        } => {
            assert_eq!(
                (*verb, object.as_str(), *code, reason.as_str()),
                ("update", "apps/v1 Deployment prod/web", 409, "Conflict")
            );
        }
        other => panic!("expected Error::Api, got {other:?}"),
    }
    assert!(err.is_transient() && err.is_conflict());
}

// ------------------------------------------------------------------------------------------
// patch and server-side apply

#[tokio::test]
async fn apply_patches_with_the_apply_content_type_field_manager_and_force() {
    let intent = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                        "metadata": {"name": "web", "namespace": "prod"}, "spec": {"replicas": 3}});
    let (client, server) = serve(vec![
        apps_v1_discovery(),
        Exchange::patch("/apis/apps/v1/namespaces/prod/deployments/web")
            .query(&[("fieldManager", "kcp-sync"), ("force", "true")])
            .content_type("application/apply-patch+yaml")
            .body(intent.clone())
            .reply(200, deployment("prod", "web")),
    ]);
    server
        .run(client.apply(&object(intent), &PatchOptions::apply("kcp-sync")))
        .await
        .unwrap();
}

#[tokio::test]
async fn an_apply_body_without_type_gets_api_version_and_kind() {
    let (client, server) = serve(vec![
        apps_v1_discovery(),
        Exchange::patch("/apis/apps/v1/namespaces/prod/deployments/web")
            .query(&[("fieldManager", "m")])
            .body(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                         "metadata": {"name": "web"}, "spec": {"replicas": 3}}))
            .reply(200, deployment("prod", "web")),
    ]);
    let patch = ObjectPatch::Apply(json!({"spec": {"replicas": 3}}));
    let options = PatchOptions {
        field_manager: Some("m".into()),
        force: false,
    };
    server
        .run(client.patch(&web(), Subresource::Main, &patch, &options))
        .await
        .unwrap();
}

#[tokio::test]
async fn applying_an_object_read_from_the_server_drops_its_managed_fields() {
    let mut read_back = deployment("prod", "web");
    read_back["metadata"]["managedFields"] =
        json!([{"manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1"}]);
    let (client, server) = serve(vec![
        apps_v1_discovery(),
        Exchange::patch("/apis/apps/v1/namespaces/prod/deployments/web")
            .query(&[("fieldManager", "m"), ("force", "true")])
            .body(deployment("prod", "web"))
            .reply(200, deployment("prod", "web")),
    ]);
    server
        .run(client.apply(&object(read_back), &PatchOptions::apply("m")))
        .await
        .unwrap();
}

#[tokio::test]
async fn apply_uses_the_default_field_manager_when_none_is_given() {
    let (client, server) = serve(vec![
        apps_v1_discovery(),
        Exchange::patch("/apis/apps/v1/namespaces/prod/deployments/web")
            .query(&[("fieldManager", "kcp-operator")])
            .reply(200, deployment("prod", "web")),
    ]);
    let client = client.with_default_field_manager("kcp-operator");
    server
        .run(client.apply(&object(deployment("prod", "web")), &PatchOptions::default()))
        .await
        .unwrap();
}

#[tokio::test]
async fn apply_without_any_field_manager_is_a_configuration_error_naming_the_object() {
    let (client, server) = serve(vec![]);
    let err = server
        .run(client.apply(&object(deployment("prod", "web")), &PatchOptions::default()))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Config(_)), "{err:?}");
    assert!(
        err.to_string().contains("apps/v1 Deployment prod/web"),
        "{err}"
    );
    assert!(!err.is_transient());
}

#[tokio::test]
async fn apply_into_a_missing_namespace_is_namespace_not_found() {
    let (client, server) = serve(vec![
        apps_v1_discovery(),
        Exchange::patch("/apis/apps/v1/namespaces/prod/deployments/web")
            .query(&[("fieldManager", "m"), ("force", "true")])
            .reply(
                404,
                status(
                    404,
                    "NotFound",
                    "namespaces \"prod\" not found",
                    json!({"name": "prod", "kind": "namespaces"}),
                ),
            ),
    ]);
    let err = server
        .run(client.apply(
            &object(deployment("prod", "web")),
            &PatchOptions::apply("m"),
        ))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NamespaceNotFound { .. }), "{err:?}");
}

#[tokio::test]
async fn a_merge_patch_is_sent_as_merge_patch_json() {
    let (client, server) = serve(vec![
        apps_v1_discovery(),
        Exchange::patch("/apis/apps/v1/namespaces/prod/deployments/web")
            .content_type("application/merge-patch+json")
            .body(json!({"metadata": {"labels": {"a": "b"}}}))
            .reply(200, deployment("prod", "web")),
    ]);
    let patch = ObjectPatch::Merge(json!({"metadata": {"labels": {"a": "b"}}}));
    server
        .run(client.patch(&web(), Subresource::Main, &patch, &PatchOptions::default()))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_json_patch_is_sent_as_json_patch_json() {
    let ops = json!([
        {"op": "test", "path": "/metadata/finalizers/0", "value": "example.dev/cleanup"},
        {"op": "remove", "path": "/metadata/finalizers/0"},
    ]);
    let (client, server) = serve(vec![
        apps_v1_discovery(),
        Exchange::patch("/apis/apps/v1/namespaces/prod/deployments/web")
            .content_type("application/json-patch+json")
            .body(ops.clone())
            .reply(200, deployment("prod", "web")),
    ]);
    let patch = ObjectPatch::Json(serde_json::from_value(ops).unwrap());
    server
        .run(client.patch(&web(), Subresource::Main, &patch, &PatchOptions::default()))
        .await
        .unwrap();
}

#[tokio::test]
async fn force_is_only_sent_for_server_side_apply() {
    let (client, server) = serve(vec![
        apps_v1_discovery(),
        Exchange::patch("/apis/apps/v1/namespaces/prod/deployments/web")
            .query(&[("fieldManager", "m")])
            .content_type("application/merge-patch+json")
            .reply(200, deployment("prod", "web")),
    ]);
    let patch = ObjectPatch::Merge(json!({"spec": {"replicas": 2}}));
    server
        .run(client.patch(&web(), Subresource::Main, &patch, &PatchOptions::apply("m")))
        .await
        .unwrap();
}

#[tokio::test]
async fn patch_status_patches_the_status_subresource() {
    let (client, server) = serve(vec![
        apps_v1_discovery(),
        Exchange::patch("/apis/apps/v1/namespaces/prod/deployments/web/status")
            .content_type("application/merge-patch+json")
            .body(json!({"status": {"readyReplicas": 1}}))
            .reply(200, deployment("prod", "web")),
    ]);
    let patch = ObjectPatch::Merge(json!({"status": {"readyReplicas": 1}}));
    server
        .run(client.patch_status(&web(), &patch))
        .await
        .unwrap();
}

#[tokio::test]
async fn apply_status_applies_to_the_status_subresource() {
    let mut intent = deployment("prod", "web");
    intent["status"] = json!({"readyReplicas": 1});
    let (client, server) = serve(vec![
        apps_v1_discovery(),
        Exchange::patch("/apis/apps/v1/namespaces/prod/deployments/web/status")
            .query(&[("fieldManager", "m"), ("force", "true")])
            .content_type("application/apply-patch+yaml")
            .body(intent.clone())
            .reply(200, intent.clone()),
    ]);
    server
        .run(client.apply_status(&object(intent), &PatchOptions::apply("m")))
        .await
        .unwrap();
}

// ------------------------------------------------------------------------------------------
// delete

#[tokio::test]
async fn delete_sends_propagation_and_preconditions_as_delete_options() {
    let (client, server) = serve(vec![
        apps_v1_discovery(),
        Exchange::delete("/apis/apps/v1/namespaces/prod/deployments/web")
            .content_type("application/json")
            .body(json!({"propagationPolicy": "Foreground",
                         "preconditions": {"uid": "u-1", "resourceVersion": "7"}}))
            .reply(
                200,
                json!({"kind": "Status", "apiVersion": "v1", "status": "Success",
                               "details": {"name": "web", "group": "apps", "kind": "deployments"}}),
            ),
    ]);
    let options = DeleteOptions {
        propagation: Some(Propagation::Foreground),
        precondition_uid: Some("u-1".into()),
        precondition_resource_version: Some("7".into()),
        grace_period_seconds: None,
    };
    let outcome = server.run(client.delete(&web(), &options)).await.unwrap();
    assert_eq!(outcome, DeleteOutcome::Deleted);
}

#[tokio::test]
async fn delete_of_an_object_with_pending_finalizers_is_terminating() {
    let mut terminating = deployment("prod", "web");
    terminating["metadata"]["deletionTimestamp"] = json!("2026-11-20T10:00:00Z");
    terminating["metadata"]["finalizers"] = json!(["example.dev/cleanup"]);
    let (client, server) = serve(vec![
        apps_v1_discovery(),
        Exchange::delete("/apis/apps/v1/namespaces/prod/deployments/web")
            .body(json!({}))
            .reply(200, terminating),
    ]);
    let outcome = server
        .run(client.delete(&web(), &DeleteOptions::default()))
        .await
        .unwrap();
    match outcome {
        DeleteOutcome::Terminating(obj) => {
            assert_eq!(
                obj.metadata.finalizers,
                Some(vec!["example.dev/cleanup".to_string()])
            );
        }
        other => panic!("expected Terminating, got {other:?}"),
    }
}

#[tokio::test]
async fn delete_answered_with_the_last_state_of_a_removed_object_is_deleted() {
    let (client, server) = serve(vec![
        apps_v1_discovery(),
        Exchange::delete("/apis/apps/v1/namespaces/prod/deployments/web")
            .reply(200, deployment("prod", "web")),
    ]);
    let outcome = server
        .run(client.delete(&web(), &DeleteOptions::default()))
        .await
        .unwrap();
    assert_eq!(outcome, DeleteOutcome::Deleted);
}

#[tokio::test]
async fn delete_of_a_missing_object_is_already_gone() {
    let (client, server) = serve(vec![
        apps_v1_discovery(),
        Exchange::delete("/apis/apps/v1/namespaces/prod/deployments/web").reply(
            404,
            status(
                404,
                "NotFound",
                "deployments.apps \"web\" not found",
                json!({"name": "web", "group": "apps", "kind": "deployments"}),
            ),
        ),
    ]);
    let outcome = server
        .run(client.delete(&web(), &DeleteOptions::default()))
        .await
        .unwrap();
    assert_eq!(outcome, DeleteOutcome::AlreadyGone);
}

// ------------------------------------------------------------------------------------------
// error classification

#[tokio::test]
async fn forbidden_is_a_permanent_api_error_with_reason_forbidden() {
    let (client, server) = serve(vec![
        apps_v1_discovery(),
        Exchange::get("/apis/apps/v1/namespaces/prod/deployments/web").reply(
            403,
            status(403, "Forbidden",
                "deployments.apps \"web\" is forbidden: User \"system:serviceaccount:x:y\" cannot get resource",
                json!({"name": "web", "group": "apps", "kind": "deployments"})),
        ),
    ]);
    let err = server.run(client.get(&web())).await.unwrap_err();
    assert!(err.is_status(403), "{err:?}");
    assert_eq!(err.reason(), "Forbidden");
    assert!(!err.is_transient());
    assert!(
        err.to_string()
            .starts_with("get apps/v1 Deployment prod/web: 403 Forbidden: "),
        "{err}"
    );
}

#[tokio::test]
async fn a_server_error_without_a_status_body_is_a_transient_api_error() {
    let (client, server) = serve(vec![
        apps_v1_discovery(),
        Exchange::get("/apis/apps/v1/namespaces/prod/deployments/web")
            .reply_text(503, "upstream connect error"),
    ]);
    let err = server.run(client.get(&web())).await.unwrap_err();
    assert!(err.is_status(503), "{err:?}");
    assert_eq!(err.reason(), "ServiceUnavailable");
    assert!(err.is_transient());
}

#[tokio::test]
async fn a_connection_failure_is_a_transient_transport_error() {
    let (client, server) = serve(vec![
        apps_v1_discovery(),
        Exchange::get("/apis/apps/v1/namespaces/prod/deployments/web").reset_connection(),
    ]);
    let err = server.run(client.get(&web())).await.unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    assert!(err.is_transient());
    assert!(
        err.to_string()
            .starts_with("get apps/v1 Deployment prod/web: "),
        "{err}"
    );
}

// ------------------------------------------------------------------------------------------
// typed layer

#[tokio::test]
async fn typed_get_works_through_the_kube_client() {
    let (client, server) = serve(vec![
        core_v1_discovery(),
        Exchange::get("/api/v1/namespaces/team-a/configmaps/settings")
            .reply(200, configmap("team-a", "settings")),
    ]);
    let cm: Option<ConfigMap> = server
        .run(client.get_typed::<ConfigMap>(Some("team-a"), "settings"))
        .await
        .unwrap();
    let cm = cm.unwrap();
    assert_eq!(cm.data.unwrap()["k"], "v");
}
