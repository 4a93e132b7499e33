//! Kubernetes protobuf over HTTP, checked with an independent implementation: the prost
//! structs of `k8s-pb` write the bodies kcp-sim reads and read the answers kcp-sim writes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_pb::api::apps::v1 as pb_apps;
use k8s_pb::api::core::v1 as pb_core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as pb_meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use kcp_sim::{Config, Server};
use kube::api::{Api, PostParams};
use prost::Message;
use serde_json::json;

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(raw),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = b"k8s\0".to_vec();
    out.extend(unknown.encode_to_vec());
    out
}

fn open(body: &[u8]) -> Unknown {
    assert!(body.starts_with(b"k8s\0"), "no protobuf magic: {body:?}");
    Unknown::decode(&body[4..]).unwrap()
}

/// Sends a raw request; returns the status, content type and body.
async fn send(
    sim: &Server,
    method: &str,
    path: &str,
    headers: &[(header::HeaderName, &str)],
    body: Vec<u8>,
) -> (StatusCode, String, Vec<u8>) {
    let client = sim.client("").unwrap();
    let mut req = Request::builder().method(method).uri(path);
    for (k, v) in headers {
        req = req.header(k, *v);
    }
    let resp = client
        .send(req.body(kube::client::Body::from(body)).unwrap())
        .await
        .unwrap();
    let status = resp.status();
    let content_type = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let bytes = resp
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    (status, content_type, bytes)
}

fn meta(name: &str) -> Option<pb_meta::ObjectMeta> {
    Some(pb_meta::ObjectMeta {
        name: Some(name.into()),
        ..Default::default()
    })
}

async fn configmap(sim: &Server, name: &str) {
    let api: Api<ConfigMap> = Api::namespaced(sim.client("").unwrap(), "default");
    let cm = serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}}));
    api.create(&PostParams::default(), &cm.unwrap())
        .await
        .unwrap();
}

#[tokio::test]
async fn a_protobuf_deployment_is_stored_as_the_json_kube_rs_reads() {
    let sim = Server::start(Config::default()).await.unwrap();
    let labels = BTreeMap::from([("app".to_string(), "web".to_string())]);
    let deployment = pb_apps::Deployment {
        metadata: meta("web"),
        spec: Some(pb_apps::DeploymentSpec {
            replicas: Some(2),
            selector: Some(pb_meta::LabelSelector {
                match_labels: labels.clone(),
                ..Default::default()
            }),
            template: Some(pb_core::PodTemplateSpec {
                metadata: Some(pb_meta::ObjectMeta {
                    labels,
                    ..Default::default()
                }),
                spec: Some(pb_core::PodSpec {
                    containers: vec![pb_core::Container {
                        name: Some("web".into()),
                        image: Some("nginx".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            }),
            ..Default::default()
        }),
        status: None,
    };
    let body = envelope("apps/v1", "Deployment", deployment.encode_to_vec());
    let (status, content_type, _) = send(
        &sim,
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        &[
            (header::CONTENT_TYPE, PROTOBUF),
            (
                header::ACCEPT,
                "application/vnd.kubernetes.protobuf,application/json",
            ),
        ],
        body,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(content_type, "application/json");
    let api: Api<Deployment> = Api::namespaced(sim.client("").unwrap(), "default");
    let got = api.get("web").await.unwrap();
    let spec = got.spec.unwrap();
    assert_eq!(spec.replicas, Some(2));
    assert_eq!(
        spec.template.spec.unwrap().containers[0].image.as_deref(),
        Some("nginx")
    );
}

#[tokio::test]
async fn a_protobuf_only_client_reads_an_object_as_protobuf() {
    let sim = Server::start(Config::default()).await.unwrap();
    configmap(&sim, "settings").await;
    let (status, content_type, body) = send(
        &sim,
        "GET",
        "/api/v1/namespaces/default/configmaps/settings",
        &[(header::ACCEPT, PROTOBUF)],
        Vec::new(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(content_type, PROTOBUF);
    let unknown = open(&body);
    assert_eq!(
        unknown.type_meta.unwrap().kind.as_deref(),
        Some("ConfigMap")
    );
    let cm = pb_core::ConfigMap::decode(unknown.raw.unwrap().as_slice()).unwrap();
    assert_eq!(cm.data.get("k").map(String::as_str), Some("v"));
    let metadata = cm.metadata.unwrap();
    assert_eq!(metadata.namespace.as_deref(), Some("default"));
    assert!(metadata.creation_timestamp.unwrap().seconds.unwrap() > 0);
}

#[tokio::test]
async fn a_protobuf_only_client_reads_a_list_as_protobuf() {
    let sim = Server::start(Config::default()).await.unwrap();
    configmap(&sim, "a").await;
    configmap(&sim, "b").await;
    let (status, _, body) = send(
        &sim,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        &[(header::ACCEPT, PROTOBUF)],
        Vec::new(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let list = pb_core::ConfigMapList::decode(open(&body).raw.unwrap().as_slice()).unwrap();
    let names: Vec<_> = list
        .items
        .iter()
        .filter_map(|cm| cm.metadata.as_ref()?.name.clone())
        .collect();
    assert_eq!(names, ["a", "b"]);
    assert!(list.metadata.unwrap().resource_version.is_some());
}

#[tokio::test]
async fn a_protobuf_only_client_reads_errors_as_a_protobuf_status() {
    let sim = Server::start(Config::default()).await.unwrap();
    let (status, content_type, body) = send(
        &sim,
        "GET",
        "/api/v1/namespaces/default/configmaps/missing",
        &[(header::ACCEPT, PROTOBUF)],
        Vec::new(),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(content_type, PROTOBUF);
    let s = pb_meta::Status::decode(open(&body).raw.unwrap().as_slice()).unwrap();
    assert_eq!(s.reason.as_deref(), Some("NotFound"));
    assert_eq!(s.code, Some(404));
}

#[tokio::test]
async fn a_client_that_also_accepts_json_gets_json() {
    let sim = Server::start(Config::default()).await.unwrap();
    configmap(&sim, "settings").await;
    let (_, content_type, body) = send(
        &sim,
        "GET",
        "/api/v1/namespaces/default/configmaps/settings",
        &[(
            header::ACCEPT,
            "application/vnd.kubernetes.protobuf, application/json",
        )],
        Vec::new(),
    )
    .await;
    assert_eq!(content_type, "application/json");
    let cm: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(cm["data"]["k"], "v");
}

#[tokio::test]
async fn a_custom_resource_is_not_acceptable_to_a_protobuf_only_client() {
    let sim = Server::start(Config::default()).await.unwrap();
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.io"},
        "spec": {"group": "example.io", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]}});
    let (status, _, _) = send(
        &sim,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &[(header::CONTENT_TYPE, "application/json")],
        serde_json::to_vec(&crd).unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _, body) = send(
        &sim,
        "GET",
        "/apis/example.io/v1/namespaces/default/widgets",
        &[(header::ACCEPT, PROTOBUF)],
        Vec::new(),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::NOT_ACCEPTABLE,
        "{}",
        String::from_utf8_lossy(&body)
    );
}

#[tokio::test]
async fn a_broken_protobuf_body_is_a_bad_request_naming_the_kind() {
    let sim = Server::start(Config::default()).await.unwrap();
    let body = envelope("v1", "ConfigMap", vec![0x0a, 0xff]);
    let (status, _, body) = send(
        &sim,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &[(header::CONTENT_TYPE, PROTOBUF)],
        body,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let s: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(s["reason"], "BadRequest");
    assert!(s["message"].as_str().unwrap().contains("ConfigMap"), "{s}");
}

#[tokio::test]
async fn a_protobuf_only_watch_streams_length_delimited_watch_events() {
    let sim = Server::start(Config::default()).await.unwrap();
    configmap(&sim, "settings").await;
    let client = sim.client("").unwrap();
    let req = Request::builder()
        .uri("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0&timeoutSeconds=1")
        .header(header::ACCEPT, PROTOBUF)
        .body(kube::client::Body::empty())
        .unwrap();
    let resp = client.send(req).await.unwrap();
    assert_eq!(
        resp.headers()[header::CONTENT_TYPE],
        "application/vnd.kubernetes.protobuf;stream=watch"
    );
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    let len = u32::from_be_bytes(body[..4].try_into().unwrap()) as usize;
    let event = pb_meta::WatchEvent::decode(&body[4..4 + len]).unwrap();
    assert_eq!(event.r#type.as_deref(), Some("ADDED"));
    let raw = event.object.unwrap().raw.unwrap();
    let cm = pb_core::ConfigMap::decode(open(&raw).raw.unwrap().as_slice()).unwrap();
    assert_eq!(cm.metadata.unwrap().name.as_deref(), Some("settings"));
}
