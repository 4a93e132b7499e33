//! kcp-sim's protobuf codec: decoding the body `kubectl create deployment` sends, encoding a
//! stored Deployment for a protobuf-only client, and parsing the same object from JSON for
//! comparison.
//!
//! Target on the project's 2-core machine: decoding a protobuf Deployment costs at most 10x
//! parsing it from JSON (the descriptor-driven decoder walks the message once and builds the
//! same `serde_json::Value`), so a protobuf create stays well under the HTTP request cost.

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};

fn deployment() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"},
            "annotations": {"deployment.kubernetes.io/revision": "1"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    "env": [{"name": "MODE", "value": "prod"}],
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                    "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080},
                        "periodSeconds": 5}}],
                    "volumes": [{"name": "cfg", "configMap": {"name": "web"}}]}}},
        "status": {}})
}

fn codec(c: &mut Criterion) {
    let object = deployment();
    let protobuf = kcp_sim::protobuf::encode_envelope(&object)
        .unwrap_or_else(|e| panic!("encoding the fixture: {e}"));
    let json_bytes = serde_json::to_vec(&object).unwrap_or_default();
    let mut group = c.benchmark_group("kcp_sim_protobuf");
    group.throughput(Throughput::Elements(1));
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("decode_deployment", |b| {
        b.iter(|| kcp_sim::protobuf::decode_envelope(&protobuf))
    });
    group.bench_function("encode_deployment", |b| {
        b.iter(|| kcp_sim::protobuf::encode_envelope(&object))
    });
    group.bench_function("parse_deployment_json", |b| {
        b.iter(|| serde_json::from_slice::<Value>(&json_bytes))
    });
    group.finish();
}

criterion_group!(benches, codec);
criterion_main!(benches);
