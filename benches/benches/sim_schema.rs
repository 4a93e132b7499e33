//! The cost of CRD schemas on kcp-sim's write path.
//!
//! Target on the project's 2-core machine: in-process creates of a custom resource whose CRD
//! has a 40-property structural schema and 3 CEL rules (pruned, defaulted, validated, rules
//! evaluated) run at >= 50% of the rate of the same creates under a CRD without a schema
//! (`x-kubernetes-preserve-unknown-fields` at the root: nothing to check).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kcp_core::ObjectClient;
use kcp_core::kube::api::DynamicObject;
use kcp_sim::{Config, Server};
use serde_json::{Map, Value, json};

const BATCH: u64 = 1_000;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("tokio runtime: {e}"))
}

/// The 40 properties of the spec: strings with lengths, patterns and enums, bounded integers,
/// booleans, a list and a map.
fn properties() -> Map<String, Value> {
    let mut props = Map::new();
    for i in 0..12 {
        props.insert(
            format!("name{i}"),
            json!({"type": "string", "maxLength": 63, "pattern": "^[a-z0-9-]+$"}),
        );
    }
    for i in 0..12 {
        props.insert(
            format!("count{i}"),
            json!({"type": "integer", "minimum": 0, "maximum": 1000, "default": 1}),
        );
    }
    for i in 0..8 {
        props.insert(
            format!("mode{i}"),
            json!({"type": "string", "enum": ["fast", "slow", "off"]}),
        );
    }
    for i in 0..6 {
        props.insert(format!("flag{i}"), json!({"type": "boolean"}));
    }
    props.insert(
        "tags".into(),
        json!({"type": "array", "maxItems": 16, "x-kubernetes-list-type": "set", "items": {"type": "string"}}),
    );
    props.insert(
        "labels".into(),
        json!({"type": "object", "additionalProperties": {"type": "string"}}),
    );
    props
}

fn crd(group: &str, schema: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": schema}}]}}))
    .unwrap_or_else(|e| panic!("crd: {e}"))
}

fn with_schema() -> Value {
    json!({"type": "object", "properties": {"spec": {
    "type": "object",
    "required": ["name0", "count0"],
    "properties": properties(),
    "x-kubernetes-validations": [
        {"rule": "self.count0 <= self.count1 + 1000", "message": "count0 too large"},
        {"rule": "self.name0.startsWith('w')"},
        {"rule": "self.tags.all(t, size(t) < 20)", "messageExpression": "'bad tags: %d'.format([size(self.tags)])"},
    ]}}})
}

fn spec() -> Value {
    let mut spec = Map::new();
    for i in 0..12 {
        spec.insert(format!("name{i}"), json!(format!("widget-{i}")));
        spec.insert(format!("count{i}"), json!(i * 10));
    }
    for i in 0..8 {
        spec.insert(format!("mode{i}"), json!("fast"));
    }
    for i in 0..6 {
        spec.insert(format!("flag{i}"), json!(i % 2 == 0));
    }
    spec.insert("tags".into(), json!(["a", "b", "c"]));
    spec.insert("labels".into(), json!({"team": "x", "tier": "y"}));
    Value::Object(spec)
}

fn widget(group: &str, name: &str) -> DynamicObject {
    serde_json::from_value(
        json!({"apiVersion": format!("{group}/v1"), "kind": "Widget",
        "metadata": {"name": name, "namespace": "default"}, "spec": spec()}),
    )
    .unwrap_or_else(|e| panic!("widget: {e}"))
}

fn creates(c: &mut Criterion) {
    let rt = runtime();
    let sim = rt
        .block_on(Server::start(Config::default()))
        .unwrap_or_else(|e| panic!("kcp-sim: {e}"));
    let local = sim.object_client("");
    rt.block_on(async {
        let plain = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        for (group, schema) in [
            ("plain.example.io", plain),
            ("checked.example.io", with_schema()),
        ] {
            local
                .create(&crd(group, schema))
                .await
                .unwrap_or_else(|e| panic!("crd: {e}"));
        }
    });
    let counter = AtomicU64::new(0);
    let mut group = c.benchmark_group("kcp_sim_schema");
    group.throughput(Throughput::Elements(BATCH));
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(10));
    for (label, api_group) in [
        ("create_in_process_no_schema", "plain.example.io"),
        (
            "create_in_process_40_properties_3_rules",
            "checked.example.io",
        ),
    ] {
        group.bench_function(label, |b| {
            b.to_async(&rt).iter_custom(|iters| {
                let local = local.clone();
                let objects: Vec<_> = (0..iters * BATCH)
                    .map(|_| {
                        widget(
                            api_group,
                            &format!("w-{}", counter.fetch_add(1, Ordering::Relaxed)),
                        )
                    })
                    .collect();
                async move {
                    let start = Instant::now();
                    for obj in &objects {
                        local
                            .create(obj)
                            .await
                            .unwrap_or_else(|e| panic!("create: {e}"));
                    }
                    start.elapsed()
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, creates);
criterion_main!(benches);
