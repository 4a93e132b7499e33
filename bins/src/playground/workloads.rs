//! No kubelet runs next to the real kube-apiserver of the playground, so Deployments and
//! StatefulSets would never report available and the operator would never converge. This task
//! does what envtest users do in their tests: it writes each workload's status as it would be
//! once its pods run (kcp-sim's own workload simulation, [`kcp_sim::workloads::settled_status`]).

use std::sync::Arc;
use std::time::Duration;

use kcp_core::kube::api::GroupVersionKind;
use kcp_core::{ListOptions, ObjectClient, Subresource};

/// The kinds whose status is written.
const KINDS: [(&str, &str, &str); 2] =
    [("apps", "v1", "Deployment"), ("apps", "v1", "StatefulSet")];

/// Every 300 ms, marks every Deployment and StatefulSet whose status lags its spec available.
pub async fn mark_available(kube: Arc<dyn ObjectClient>) {
    loop {
        for (group, version, kind) in KINDS {
            if let Err(err) =
                settle(kube.as_ref(), &GroupVersionKind::gvk(group, version, kind)).await
            {
                tracing::debug!(kind, error = %err, "marking workloads available");
            }
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

async fn settle(kube: &dyn ObjectClient, gvk: &GroupVersionKind) -> Result<(), kcp_core::Error> {
    let now = jiff::Timestamp::now().to_string();
    for mut object in kube.list(gvk, None, &ListOptions::default()).await?.items {
        let value =
            serde_json::to_value(&object).map_err(|source| kcp_core::Error::Serialization {
                context: format!("a {}", gvk.kind),
                source,
            })?;
        let settled = kcp_sim::workloads::settled_status(&gvk.kind, &value, &now);
        let current = &object.data["status"];
        if current["observedGeneration"] == settled["observedGeneration"]
            && current["availableReplicas"] == settled["availableReplicas"]
        {
            continue;
        }
        object.data["status"] = settled;
        kube.replace(&object, Subresource::Status).await?;
    }
    Ok(())
}
