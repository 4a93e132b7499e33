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
    assert_eq!(content_type, PROTOBUF);
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

/// As kube-apiserver v1.34.2 answers (conformance cases
/// protobuf-exchange/a-builtin-read-with-protobuf-first-is-answered-in-protobuf and
/// a-builtin-read-with-json-first-is-answered-in-json): the first entry of `Accept` wins.
#[tokio::test]
async fn the_first_acceptable_entry_chooses_protobuf_or_json() {
    let sim = Server::start(Config::default()).await.unwrap();
    configmap(&sim, "settings").await;
    let path = "/api/v1/namespaces/default/configmaps/settings";
    let protobuf_first = [(
        header::ACCEPT,
        "application/vnd.kubernetes.protobuf, application/json",
    )];
    let (_, content_type, body) = send(&sim, "GET", path, &protobuf_first, Vec::new()).await;
    assert_eq!(content_type, PROTOBUF);
    let cm = pb_core::ConfigMap::decode(open(&body).raw.unwrap().as_slice()).unwrap();
    assert_eq!(cm.data.get("k").map(String::as_str), Some("v"));
    let json_first = [(
        header::ACCEPT,
        "application/json, application/vnd.kubernetes.protobuf",
    )];
    let (_, content_type, body) = send(&sim, "GET", path, &json_first, Vec::new()).await;
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

/// JSON -> kcp-sim's encoder -> k8s-pb's typed message -> k8s-pb's encoder -> kcp-sim's
/// decoder: the JSON comes back unchanged when both implementations agree on every field.
fn through_k8s_pb<M: Message + Default>(object: &serde_json::Value) -> serde_json::Value {
    let ours = kcp_sim::protobuf::encode_envelope(object).unwrap();
    let unknown = open(&ours);
    let type_meta = unknown.type_meta.clone().unwrap();
    let typed = M::decode(unknown.raw.unwrap().as_slice()).unwrap();
    let theirs = envelope(
        type_meta.api_version.as_deref().unwrap(),
        type_meta.kind.as_deref().unwrap(),
        typed.encode_to_vec(),
    );
    kcp_sim::protobuf::decode_envelope(&theirs).unwrap()
}

fn metadata(name: &str) -> serde_json::Value {
    json!({"name": name, "namespace": "default", "uid": "6f2a", "resourceVersion": "12",
        "generation": 2, "creationTimestamp": "2026-11-23T20:00:00Z",
        "labels": {"app": "web"}, "annotations": {"note": "x"},
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
            "uid": "1a2b", "controller": true, "blockOwnerDeletion": false}],
        "finalizers": ["example.io/hold"]})
}

#[test]
fn core_kinds_agree_with_k8s_pb() {
    let objects = [
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata("c"),
            "data": {"a": "1"}, "binaryData": {"b": "AAE="}, "immutable": false}),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": metadata("s"),
            "type": "kubernetes.io/tls", "data": {"tls.crt": "Y2VydA=="}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata("sa"),
            "automountServiceAccountToken": false, "imagePullSecrets": [{"name": "pull"}]}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": metadata("svc"),
            "spec": {"type": "NodePort", "selector": {"app": "web"}, "clusterIP": "10.0.0.1",
                "ports": [{"name": "http", "port": 80, "targetPort": "http", "nodePort": 30080,
                    "protocol": "TCP"}]},
            "status": {"loadBalancer": {}}}),
        json!({"apiVersion": "v1", "kind": "Event", "metadata": metadata("e"),
            "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "Started", "count": 3,
            "type": "Normal", "source": {"component": "kubelet"},
            "firstTimestamp": "2026-11-23T20:00:00Z", "eventTime": "2026-11-23T20:00:00.123456Z"}),
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"},
            "spec": {"unschedulable": true, "taints": [{"key": "k", "effect": "NoSchedule"}]},
            "status": {"capacity": {"cpu": "4", "memory": "16Gi"},
                "conditions": [{"type": "Ready", "status": "True",
                    "lastHeartbeatTime": "2026-11-23T20:00:00Z"}]}}),
    ];
    for object in &objects {
        let back = match object["kind"].as_str().unwrap() {
            "Namespace" => through_k8s_pb::<pb_core::Namespace>(object),
            "ConfigMap" => through_k8s_pb::<pb_core::ConfigMap>(object),
            "Secret" => through_k8s_pb::<pb_core::Secret>(object),
            "ServiceAccount" => through_k8s_pb::<pb_core::ServiceAccount>(object),
            "Service" => through_k8s_pb::<pb_core::Service>(object),
            "Event" => through_k8s_pb::<pb_core::Event>(object),
            "Node" => through_k8s_pb::<pb_core::Node>(object),
            other => panic!("no case for {other}"),
        };
        assert_eq!(&back, object);
    }
}

#[test]
fn workload_kinds_agree_with_k8s_pb() {
    let pod = json!({"metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "web", "image": "nginx",
            "ports": [{"containerPort": 80, "protocol": "TCP"}],
            "env": [{"name": "A", "value": "1"},
                {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "b"}}}],
            "resources": {"requests": {"cpu": "100m"}, "limits": {"memory": "128Mi"}},
            "livenessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 5},
            "securityContext": {"runAsUser": 0, "privileged": false}}],
            "volumes": [{"name": "cfg", "configMap": {"name": "c", "defaultMode": 420}},
                {"name": "tmp", "emptyDir": {}}],
            "terminationGracePeriodSeconds": 0}});
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": metadata("d"),
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}}, "template": pod,
            "strategy": {"type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}}},
        "status": {"observedGeneration": 2, "replicas": 1,
            "conditions": [{"type": "Available", "status": "True",
                "lastUpdateTime": "2026-11-23T20:00:00Z"}]}});
    assert_eq!(
        through_k8s_pb::<pb_apps::Deployment>(&deployment),
        deployment
    );
    let statefulset = json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": metadata("s"),
        "spec": {"replicas": 2, "serviceName": "s", "selector": {"matchLabels": {"app": "web"}},
            "template": pod, "podManagementPolicy": "Parallel"},
        "status": {"replicas": 2, "readyReplicas": 2}});
    assert_eq!(
        through_k8s_pb::<pb_apps::StatefulSet>(&statefulset),
        statefulset
    );
}

#[test]
fn rbac_coordination_and_events_kinds_agree_with_k8s_pb() {
    use k8s_pb::api::{coordination::v1 as pb_coord, events::v1 as pb_events, rbac::v1 as pb_rbac};
    let rules = json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]},
        {"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]);
    let subjects = json!([{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "a"}]);
    let rbac = "rbac.authorization.k8s.io/v1";
    let role =
        json!({"apiVersion": rbac, "kind": "Role", "metadata": metadata("r"), "rules": rules});
    assert_eq!(through_k8s_pb::<pb_rbac::Role>(&role), role);
    let cluster_role = json!({"apiVersion": rbac, "kind": "ClusterRole",
        "metadata": {"name": "cr"}, "rules": rules,
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "true"}}]}});
    assert_eq!(
        through_k8s_pb::<pb_rbac::ClusterRole>(&cluster_role),
        cluster_role
    );
    let binding = json!({"apiVersion": rbac, "kind": "RoleBinding", "metadata": metadata("rb"),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
        "subjects": subjects});
    assert_eq!(through_k8s_pb::<pb_rbac::RoleBinding>(&binding), binding);
    let cluster_binding = json!({"apiVersion": rbac, "kind": "ClusterRoleBinding",
        "metadata": {"name": "crb"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cr"},
        "subjects": subjects});
    assert_eq!(
        through_k8s_pb::<pb_rbac::ClusterRoleBinding>(&cluster_binding),
        cluster_binding
    );
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": metadata("l"),
        "spec": {"holderIdentity": "", "leaseDurationSeconds": 15, "leaseTransitions": 0,
            "acquireTime": "2026-11-23T20:00:00.000001Z"}});
    assert_eq!(through_k8s_pb::<pb_coord::Lease>(&lease), lease);
    let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": metadata("e"),
        "eventTime": "2026-11-23T20:00:00.500000Z", "reason": "Started", "action": "Start",
        "reportingController": "kubelet", "reportingInstance": "node-1", "type": "Normal",
        "regarding": {"kind": "Pod", "name": "p"},
        "series": {"count": 2, "lastObservedTime": "2026-11-23T20:00:01.000000Z"}});
    assert_eq!(through_k8s_pb::<pb_events::Event>(&event), event);
}

#[test]
fn crds_agree_with_k8s_pb() {
    use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as pb_ext;
    let schema = json!({"type": "object", "required": ["spec"],
        "properties": {"spec": {"type": "object",
            "properties": {
                "size": {"type": "integer", "minimum": 1.0, "maximum": 10.0, "default": 3},
                "name": {"type": "string", "maxLength": 64, "pattern": "^[a-z]+$",
                    "enum": ["a", "b"]},
                "tags": {"type": "array", "items": {"type": "string"},
                    "x-kubernetes-list-type": "set"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "closed": {"type": "object", "additionalProperties": false},
                "port": {"x-kubernetes-int-or-string": true},
                "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                    "x-kubernetes-embedded-resource": true}},
            "x-kubernetes-validations": [{"rule": "self.size <= 10",
                "messageExpression": "'too big'", "fieldPath": ".size"}]}}});
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.io"},
        "spec": {"group": "example.io", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "shortNames": ["wd"]},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": schema}, "subresources": {"status": {}},
                "additionalPrinterColumns": [{"name": "Size", "type": "integer",
                    "jsonPath": ".spec.size", "priority": 1}]}]},
        "status": {"acceptedNames": {"kind": "Widget", "plural": "widgets"},
            "storedVersions": ["v1"],
            "conditions": [{"type": "Established", "status": "True",
                "lastTransitionTime": "2026-11-23T20:00:00Z"}]}});
    assert_eq!(
        through_k8s_pb::<pb_ext::CustomResourceDefinition>(&crd),
        crd
    );
}

#[tokio::test]
async fn a_protobuf_update_replaces_the_object() {
    let sim = Server::start(Config::default()).await.unwrap();
    configmap(&sim, "settings").await;
    let api: Api<ConfigMap> = Api::namespaced(sim.client("").unwrap(), "default");
    let rv = api.get("settings").await.unwrap().metadata.resource_version;
    let cm = pb_core::ConfigMap {
        metadata: Some(pb_meta::ObjectMeta {
            name: Some("settings".into()),
            resource_version: rv,
            ..Default::default()
        }),
        data: BTreeMap::from([("k".to_string(), "changed".to_string())]),
        ..Default::default()
    };
    let (status, _, _) = send(
        &sim,
        "PUT",
        "/api/v1/namespaces/default/configmaps/settings",
        &[(header::CONTENT_TYPE, PROTOBUF)],
        envelope("v1", "ConfigMap", cm.encode_to_vec()),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let data = api.get("settings").await.unwrap().data.unwrap();
    assert_eq!(data["k"], "changed");
}

#[tokio::test]
async fn protobuf_delete_options_are_honoured() {
    let sim = Server::start(Config::default()).await.unwrap();
    configmap(&sim, "settings").await;
    let options = pb_meta::DeleteOptions {
        preconditions: Some(pb_meta::Preconditions {
            uid: Some("not-the-uid".into()),
            resource_version: None,
        }),
        ..Default::default()
    };
    let (status, _, body) = send(
        &sim,
        "DELETE",
        "/api/v1/namespaces/default/configmaps/settings",
        &[(header::CONTENT_TYPE, PROTOBUF)],
        envelope("meta.k8s.io/v1", "DeleteOptions", options.encode_to_vec()),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::CONFLICT,
        "{}",
        String::from_utf8_lossy(&body)
    );
}

#[tokio::test]
async fn a_protobuf_only_client_reads_discovery_as_protobuf() {
    let sim = Server::start(Config::default()).await.unwrap();
    let accept = [(header::ACCEPT, PROTOBUF)];
    let (status, _, body) = send(&sim, "GET", "/api/v1", &accept, Vec::new()).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let list = pb_meta::APIResourceList::decode(open(&body).raw.unwrap().as_slice()).unwrap();
    let configmaps = list
        .resources
        .iter()
        .find(|r| r.name.as_deref() == Some("configmaps"))
        .unwrap();
    assert!(
        configmaps
            .verbs
            .as_ref()
            .unwrap()
            .items
            .contains(&"watch".to_string())
    );
    let (status, _, body) = send(&sim, "GET", "/apis", &accept, Vec::new()).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let groups = pb_meta::APIGroupList::decode(open(&body).raw.unwrap().as_slice()).unwrap();
    assert!(
        groups
            .groups
            .iter()
            .any(|g| g.name.as_deref() == Some("apps"))
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    #[test]
    fn any_configmap_round_trips_through_k8s_pb(
        data in proptest::collection::btree_map("[a-zA-Z0-9._-]{1,16}", "\\PC{0,24}", 0..5),
        binary in proptest::collection::btree_map(
            "[a-z0-9]{1,8}", proptest::collection::vec(proptest::num::u8::ANY, 0..16), 0..3),
        labels in proptest::collection::btree_map("[a-z]{1,8}", "[a-z0-9]{0,8}", 0..4),
        immutable in proptest::option::of(proptest::bool::ANY),
    ) {
        use base64::Engine;
        let mut object = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "default"}});
        if !labels.is_empty() {
            object["metadata"]["labels"] = json!(labels);
        }
        if !data.is_empty() {
            object["data"] = json!(data);
        }
        if !binary.is_empty() {
            let encoded: BTreeMap<_, _> = binary
                .iter()
                .map(|(k, v)| (k.clone(), base64::engine::general_purpose::STANDARD.encode(v)))
                .collect();
            object["binaryData"] = json!(encoded);
        }
        if let Some(flag) = immutable {
            object["immutable"] = json!(flag);
        }
        proptest::prop_assert_eq!(through_k8s_pb::<pb_core::ConfigMap>(&object), object);
    }
}
