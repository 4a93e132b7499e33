//! What kube-apiserver writes for itself when it starts, which a new Kubernetes-flavor cluster
//! holds in the same order: its four namespaces, the system PriorityClasses, the bootstrap RBAC
//! ([`crate::bootstrap_rbac`]), the flow-control configuration ([`crate::flowcontrol`]), the
//! legacy-token-tracking ConfigMap, the `kubernetes` Service with its ServiceCIDR and IPAddress
//! ([`crate::services::bootstrap`]) and the APIServices ([`crate::api_services`]).

use serde_json::json;

use crate::resource::GroupResource;
use crate::semantics::{self, WriteOptions};
use crate::status::ApiResult;
use crate::store::State;

/// The namespaces kube-apiserver's system-namespaces controller makes.
pub const NAMESPACES: [&str; 4] = ["default", "kube-node-lease", "kube-public", "kube-system"];

/// Writes it all into `cluster`; `api_port` is the port kcp-sim serves on (the `kubernetes`
/// Service's target port).
pub fn run(state: &mut State, cluster: &str, api_port: u16) -> ApiResult<()> {
    for ns in NAMESPACES {
        semantics::ensure_namespace(state, cluster, ns)?;
    }
    crate::scheduling::ensure_system_classes(state, cluster)?;
    crate::bootstrap_rbac::seed(state, cluster)?;
    crate::flowcontrol::seed(state, cluster)?;
    track_legacy_tokens(state, cluster)?;
    crate::services::bootstrap(state, cluster, api_port)?;
    crate::api_services::sync(state, cluster)
}

/// The legacy-token-tracking controller's record of the day it started tracking.
fn track_legacy_tokens(state: &mut State, cluster: &str) -> ApiResult<()> {
    let configmaps = state.required_type(cluster, &GroupResource::new("", "configmaps"))?;
    let today = jiff::Timestamp::now().strftime("%Y-%m-%d").to_string();
    let record = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "kube-apiserver-legacy-service-account-token-tracking",
            "namespace": "kube-system",
        },
        "data": {"since": today},
    });
    let opts = WriteOptions {
        default_manager: "kube-apiserver".into(),
        ..WriteOptions::default()
    };
    semantics::create(
        state,
        cluster,
        &configmaps,
        "v1",
        Some("kube-system"),
        record,
        &opts,
    )?;
    Ok(())
}
