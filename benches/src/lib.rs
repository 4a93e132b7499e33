//! Fixtures shared by the criterion benchmarks in `benches/benches/`.
//!
//! The figures quoted in docs/benchmarks.md come from these benchmarks; see each bench file for what it
//! measures and the target it is held to.

use kcp_core::kube::api::DynamicObject;
use serde_json::{Value, json};

fn object(value: Value) -> Option<DynamicObject> {
    serde_json::from_value(value).ok()
}

/// `n` objects of a realistic mix, in a deliberately unhelpful order (dependents first).
///
/// Every block of 12 objects is one "tenant": a namespace with two ConfigMaps, a Secret, a
/// ServiceAccount, a Role and a RoleBinding to it, a Deployment running as the account and
/// mounting the config, a Service, two custom resources, and (every 10th tenant) the CRD of a new
/// custom resource kind, otherwise a ClusterRole bound to the account.
pub fn mixed_objects(n: usize) -> Vec<DynamicObject> {
    let mut out = Vec::with_capacity(n);
    let mut tenant = 0usize;
    while out.len() < n {
        let ns = format!("tenant-{tenant}");
        let group = format!("g{}.example.com", tenant / 10);
        let block = [
            json!({"apiVersion": format!("{group}/v1"), "kind": "Widget",
                "metadata": {"name": "w1", "namespace": ns}, "spec": {"size": 1}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": ns},
                "spec": {"template": {"spec": {"serviceAccountName": "app",
                    "volumes": [{"name": "cfg", "configMap": {"name": "settings"}}],
                    "containers": [{"name": "web", "image": "nginx",
                        "envFrom": [{"secretRef": {"name": "token"}}]}]}}}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "app", "namespace": ns},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "app"},
                "subjects": [{"kind": "ServiceAccount", "name": "app"}]}),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "settings", "namespace": ns}, "data": {"a": "b"}}),
            json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "web", "namespace": ns}, "spec": {"ports": [{"port": 80}]}}),
            json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "token", "namespace": ns}, "stringData": {"t": "x"}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "app", "namespace": ns}, "rules": []}),
            json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": "app", "namespace": ns}}),
            json!({"apiVersion": format!("{group}/v1"), "kind": "Widget",
                "metadata": {"name": "w2", "namespace": ns}, "spec": {"size": 2}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "extra", "namespace": ns}, "data": {"c": "d"}}),
            if tenant.is_multiple_of(10) {
                json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                    "metadata": {"name": format!("widgets.{group}")},
                    "spec": {"group": group, "scope": "Namespaced",
                        "names": {"kind": "Widget", "plural": "widgets"}}})
            } else {
                json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                    "metadata": {"name": format!("{ns}-reader")}, "rules": []})
            },
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        ];
        out.extend(block.into_iter().filter_map(object).take(n - out.len()));
        tenant += 1;
    }
    out
}

/// A ConfigMap whose JSON is about `size` bytes (one data entry fills it up).
pub fn config_map(namespace: &str, name: &str, size: usize) -> DynamicObject {
    let resource = kcp_core::kube::api::ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        plural: "configmaps".into(),
    };
    let skeleton = DynamicObject::new(name, &resource)
        .within(namespace)
        .data(json!({"data": {"payload": ""}}));
    let used = serde_json::to_string(&skeleton)
        .map(|s| s.len())
        .unwrap_or(0);
    let filler = "x".repeat(size.saturating_sub(used));
    skeleton.data(json!({"data": {"payload": filler}}))
}

/// Resident memory of this process in bytes (Linux `/proc/self/statm`), or 0 where unknown.
pub fn resident_bytes() -> u64 {
    let Ok(statm) = std::fs::read_to_string("/proc/self/statm") else {
        return 0;
    };
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// The `q`-quantile (0..=1) of sorted samples.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}
