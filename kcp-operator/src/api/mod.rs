//! The `operator.kcp.io/v1alpha1` and `deploy.operator.kcp.io/v1alpha1` APIs.
//!
//! Group, version, kinds, plurals and every field name are upstream kcp-operator's wire
//! contract (`sdk/apis/operator/v1alpha1`, `sdk/apis/deploy/v1alpha1`), so kcp-operator can take
//! over objects written for the Go operator. All kinds are namespaced and have a status
//! subresource.
//!
//! Differences, all additive:
//! * CEL rules upstream lacks, so the API server refuses a bad object with a clear message:
//!   exactly one Kubeconfig target, `issuerRef` xor `caSecretRef`, a named RootShard reference
//!   on Shard and FrontProxy;
//! * `status.observedGeneration` on every kind, a `Ready` condition, and a CacheServer status
//!   (phase, conditions) and `resources` field; the Kubeconfig's certificate expiry in status.
//! * `podDisruptionBudget` on every kind with a Deployment (upstream kcp-operator#176),
//!   `external.servicePort` for an endpoint served by an Ingress or Gateway on another port than
//!   the front-proxy Service (upstream kcp-operator#124), and `requiredSecrets` on the Compiled*
//!   kinds (their contract is documented in [`compiled`]).
//!
//! [`crds`] and [`crds_yaml`] give the CustomResourceDefinitions to install.

pub mod common;
pub mod compiled;
pub mod frontproxy;
pub mod kubeconfig;
pub mod shard;
pub mod virtualworkspace;

pub use common::*;
pub use compiled::*;
pub use frontproxy::*;
pub use kubeconfig::*;
pub use shard::*;
pub use virtualworkspace::*;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt as _;

use crate::error::{Error, Result};

/// The API group of the source kinds.
pub const GROUP: &str = "operator.kcp.io";

/// The (only) API version of both groups.
pub const VERSION: &str = "v1alpha1";

/// Condition type: the workload runs (derived from the Deployment).
pub const CONDITION_AVAILABLE: &str = "Available";
/// Condition type: the object is fully reconciled and usable (a kcp-rs summary condition).
pub const CONDITION_READY: &str = "Ready";
/// Condition type: the RootShard reference of a Shard or FrontProxy resolves.
pub const CONDITION_ROOT_SHARD: &str = "RootShard";
/// Condition type: the references of a Kubeconfig or VirtualWorkspace resolve.
pub const CONDITION_REFERENCE_VALID: &str = "ReferenceValid";

/// Finalizer of Shards: the kcp `Shard` object on the root shard is deleted first.
pub const FINALIZER_CLEANUP_SHARD: &str = "operator.kcp.io/cleanup-shard";
/// Finalizer of Kubeconfigs with `authorization`: the ClusterRoleBindings are deleted first.
pub const FINALIZER_CLEANUP_RBAC: &str = "operator.kcp.io/cleanup-rbac";

/// The CustomResourceDefinitions of the `operator.kcp.io` kinds, then the Compiled* kinds.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        RootShard::crd(),
        Shard::crd(),
        FrontProxy::crd(),
        CacheServer::crd(),
        Kubeconfig::crd(),
        VirtualWorkspace::crd(),
        CompiledRootShard::crd(),
        CompiledShard::crd(),
        CompiledFrontProxy::crd(),
        CompiledCacheServer::crd(),
        CompiledVirtualWorkspace::crd(),
    ]
}

/// [`crds`] as one YAML stream, documents separated by `---` lines.
pub fn crds_yaml() -> Result<String> {
    serde_saphyr::to_string_multiple(&crds()).map_err(|err| Error::Serialization {
        context: "writing the CustomResourceDefinitions as YAML".to_owned(),
        message: err.to_string(),
    })
}

/// [`crds`] as `DynamicObject`s, ready for an `ApplyPlan` or an `ObjectClient`.
pub fn crd_objects() -> Result<Vec<kube::api::DynamicObject>> {
    crds()
        .into_iter()
        .map(|crd| {
            serde_json::to_value(crd)
                .and_then(serde_json::from_value)
                .map_err(|err| Error::Serialization {
                    context: "converting a CustomResourceDefinition".to_owned(),
                    message: err.to_string(),
                })
        })
        .collect()
}

#[cfg(test)]
mod tests;
