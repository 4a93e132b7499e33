//! Installing CRDs on a real kube-apiserver before a test creates their objects.
//!
//! kube-apiserver marks a CRD Established a moment before its discovery lists the kind, and a
//! create in that moment fails with "kind not served". The Applier waits for Established; this
//! waits for discovery as well.

use std::time::Duration;

use kcp_core::ObjectClient;
use kcp_core::apply::{Applier, ApplierConfig, ApplyPlan, RuleSet};
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};

/// Applies `objects` as `manager` and returns once every CRD among them has its kind in
/// discovery (every served version); panics after a minute naming what is missing.
pub async fn apply_and_wait_served(
    client: &dyn ObjectClient,
    manager: &str,
    objects: Vec<DynamicObject>,
) {
    let kinds: Vec<GroupVersionKind> = objects.iter().flat_map(served_kinds).collect();
    let plan = ApplyPlan::build(objects, &RuleSet::default()).unwrap();
    let report = Applier::new(client, ApplierConfig::new(manager))
        .apply_until_settled(&plan, Duration::from_secs(60))
        .await;
    assert!(report.is_complete(), "{report}: {report:?}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    for kind in &kinds {
        while let Err(err) = client.resolve(kind).await {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{kind:?} not in discovery a minute after its CRD was established: {err}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// The kinds a CRD serves, one per served version; none for other objects.
fn served_kinds(crd: &DynamicObject) -> Vec<GroupVersionKind> {
    let is_crd = crd
        .types
        .as_ref()
        .is_some_and(|t| t.kind == "CustomResourceDefinition");
    let spec = &crd.data["spec"];
    let (Some(group), Some(kind)) = (spec["group"].as_str(), spec["names"]["kind"].as_str()) else {
        return Vec::new();
    };
    if !is_crd {
        return Vec::new();
    }
    spec["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["served"] == serde_json::json!(true))
        .filter_map(|v| v["name"].as_str())
        .map(|version| GroupVersionKind::gvk(group, version, kind))
        .collect()
}
