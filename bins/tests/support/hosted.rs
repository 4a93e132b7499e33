//! What HyperShift and the assisted installer leave on a management cluster for
//! capi-provider-agent, written as they write it: the tests that run the provider as a process
//! on the real kube-apiserver build their worlds from these.

use kcp_core::kube::api::DynamicObject;
use kcp_core::{ObjectClient, ObjectPatch, ObjectRef, PatchOptions, Subresource};
use serde_json::{Value, json};

/// An Ignition config as HyperShift writes it into the bootstrap data Secret.
pub const USER_DATA: &str = r#"{"ignition":{"version":"3.2.0","config":{"merge":[{"source":"https://ignition.example.com/ignition"}]}}}"#;

/// Creates `value`.
pub async fn create(kube: &dyn ObjectClient, value: Value) -> DynamicObject {
    let obj: DynamicObject = serde_json::from_value(value).unwrap();
    kube.create(&obj).await.unwrap()
}

/// Merges `status` into the status of `of`.
pub async fn set_status(kube: &dyn ObjectClient, of: &DynamicObject, status: Value) {
    let at = ObjectRef::from_object(of).unwrap();
    kube.patch(
        &at,
        Subresource::Status,
        &ObjectPatch::Merge(json!({"status": status})),
        &PatchOptions::default(),
    )
    .await
    .unwrap();
}

/// HostedControlPlane `hc` in `ns` with the Secrets it names and the bootstrap data Secret
/// `user-data`, as HyperShift leaves them (its status names the kubeconfig and password).
pub async fn hosted_control_plane(kube: &dyn ObjectClient, ns: &str) {
    for name in ["pull-secret", "admin-kubeconfig", "kubeadmin-password"] {
        create(
            kube,
            json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": ns}, "data": {"x": "eA=="}}),
        )
        .await;
    }
    create(
        kube,
        json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "user-data", "namespace": ns},
        "stringData": {"value": USER_DATA}}),
    )
    .await;
    let hcp = create(
        kube,
        json!({"apiVersion": "hypershift.openshift.io/v1beta1", "kind": "HostedControlPlane",
        "metadata": {"name": "hc", "namespace": ns},
        "spec": {"dns": {"baseDomain": "example.com"}, "pullSecret": {"name": "pull-secret"}}}),
    )
    .await;
    set_status(
        kube,
        &hcp,
        json!({"kubeConfig": {"name": "admin-kubeconfig", "key": "kubeconfig"},
            "kubeadminPassword": {"name": "kubeadmin-password"}}),
    )
    .await;
}

/// An approved, validated, connected, unbound Agent `name` in `ns`, as the assisted installer
/// reports a discovered host.
pub async fn unbound_agent(kube: &dyn ObjectClient, ns: &str, name: &str) {
    let agent = create(
        kube,
        json!({"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "Agent",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"approved": true, "role": "worker", "installation_disk_id": "/dev/sda"}}),
    )
    .await;
    set_status(kube, &agent, json!({
        "conditions": agent_conditions(false),
        "inventory": {"hostname": format!("{name}.local"),
            "interfaces": [{"hasCarrier": true, "ipV4Addresses": ["192.168.1.10/24"], "ipV6Addresses": []}]},
        "debugInfo": {"state": "known-unbound"}}))
    .await;
}

/// The conditions the assisted installer reports on an Agent: a discovered host waiting to be
/// bound (`installed` false), or one bound and installed into its cluster.
pub fn agent_conditions(installed: bool) -> Value {
    let (bound, install) = if installed {
        (
            json!({"type": "Bound", "status": "True", "reason": "Bound"}),
            json!({"type": "Installed", "status": "True", "reason": "InstallationCompleted", "message": "done"}),
        )
    } else {
        (
            json!({"type": "Bound", "status": "False", "reason": "Unbound"}),
            json!({"type": "Installed", "status": "False", "reason": "InstallationNotStarted", "message": "not yet"}),
        )
    };
    json!([
        {"type": "Validated", "status": "True", "reason": "ValidationsPassing"},
        {"type": "Connected", "status": "True", "reason": "AgentIsConnected"},
        bound,
        {"type": "SpecSynced", "status": "True", "reason": "SyncOK"},
        {"type": "RequirementsMet", "status": "True", "reason": "AgentIsReady"},
        install,
    ])
}
