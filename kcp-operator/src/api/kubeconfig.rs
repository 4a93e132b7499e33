//! Kubeconfig: a client certificate and kubeconfig Secret for a RootShard, Shard or
//! FrontProxy, optionally with ClusterRoleBindings in a target workspace.

use k8s_openapi::api::core::v1::LocalObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::CertificateTemplate;

/// The pattern of `spec.targetWorkspace` (a kcp workspace path).
pub const WORKSPACE_PATH_PATTERN: &str =
    "^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(:[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$";

/// The desired state of a Kubeconfig.
// Several printer columns share `type_ = "string"`, which clippy takes for a repeated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "operator.kcp.io",
    version = "v1alpha1",
    kind = "Kubeconfig",
    plural = "kubeconfigs",
    singular = "kubeconfig",
    namespaced,
    status = "KubeconfigStatus",
    derive = "PartialEq",
    doc = "Kubeconfig issues a client certificate and writes a kubeconfig Secret for a kcp endpoint.",
    printcolumn(name = "Target", type_ = "string", json_path = ".status.targetName"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "!(has(self.targetWorkspace) && has(self.authorization) && has(self.authorization.clusterRoleBindings.cluster))",
    "message": "Cannot set both targetWorkspace and authorization.clusterRoleBindings.cluster. Use targetWorkspace only."
}]))]
pub struct KubeconfigSpec {
    /// The endpoint the kubeconfig points at (exactly one reference).
    pub target: KubeconfigTarget,
    /// The workspace path of the kubeconfig URL and the RBAC grants; `root` when unset.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(regex(
        pattern = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(:[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$"
    ))]
    pub target_workspace: String,
    /// The user name in the client certificate (CN).
    pub username: String,
    /// The groups in the client certificate (O).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// The certificate lifetime (a Go duration).
    pub validity: String,
    /// The Secret the kubeconfig is written to.
    pub secret_ref: LocalObjectReference,
    /// Customizations of the client Certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_template: Option<CertificateTemplate>,
    /// Permissions to grant in the target workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization: Option<KubeconfigAuthorization>,
}

/// The endpoint of a Kubeconfig.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "[has(self.rootShardRef), has(self.shardRef), has(self.frontProxyRef)].filter(x, x).size() == 1",
    "message": "exactly one of rootShardRef, shardRef and frontProxyRef must be set"
}]))]
pub struct KubeconfigTarget {
    /// A RootShard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_shard_ref: Option<LocalObjectReference>,
    /// A Shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_ref: Option<LocalObjectReference>,
    /// A FrontProxy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub front_proxy_ref: Option<LocalObjectReference>,
}

/// Permissions granted to a Kubeconfig's identity.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeconfigAuthorization {
    /// ClusterRoles to bind.
    pub cluster_role_bindings: KubeconfigClusterRoleBindings,
}

/// ClusterRoles bound to the Kubeconfig's group in a workspace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeconfigClusterRoleBindings {
    /// Deprecated: the workspace; use `spec.targetWorkspace`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cluster: String,
    /// The ClusterRoles to bind.
    pub cluster_roles: Vec<String>,
}

/// The observed state of a Kubeconfig.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeconfigStatus {
    /// `Provisioning`, `Ready` or `Failed`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub phase: String,
    /// `RootShard/<n>`, `Shard/<n>` or `FrontProxy/<n>`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub target_name: String,
    /// Where the RBAC grants were provisioned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization: Option<KubeconfigAuthorizationStatus>,
    /// The generation this status describes (a kcp-rs addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// When the embedded client certificate expires, RFC 3339 (a kcp-rs addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_not_after: Option<String>,
    /// Conditions (`ReferenceValid`, `Available`, `Ready`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}

/// Where a Kubeconfig's RBAC grants live.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeconfigAuthorizationStatus {
    /// The workspace the ClusterRoleBindings were created in.
    pub provisioned_cluster: String,
}

/// Which object a Kubeconfig targets, by precedence rootShard > shard > frontProxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetRef<'a> {
    /// A RootShard.
    RootShard(&'a str),
    /// A Shard.
    Shard(&'a str),
    /// A FrontProxy.
    FrontProxy(&'a str),
}

impl TargetRef<'_> {
    /// The field of the Kubeconfig that names it, e.g. `spec.target.frontProxyRef`.
    pub fn field(&self) -> &'static str {
        match self {
            TargetRef::RootShard(_) => "spec.target.rootShardRef",
            TargetRef::Shard(_) => "spec.target.shardRef",
            TargetRef::FrontProxy(_) => "spec.target.frontProxyRef",
        }
    }

    /// `RootShard/<n>`, `Shard/<n>` or `FrontProxy/<n>` (the `status.targetName` form).
    pub fn display_name(&self) -> String {
        match self {
            TargetRef::RootShard(n) => format!("RootShard/{n}"),
            TargetRef::Shard(n) => format!("Shard/{n}"),
            TargetRef::FrontProxy(n) => format!("FrontProxy/{n}"),
        }
    }
}

impl KubeconfigTarget {
    /// The target, by upstream's precedence; `None` when no reference is set.
    pub fn resolve(&self) -> Option<TargetRef<'_>> {
        if let Some(r) = &self.root_shard_ref {
            return Some(TargetRef::RootShard(&r.name));
        }
        if let Some(r) = &self.shard_ref {
            return Some(TargetRef::Shard(&r.name));
        }
        self.front_proxy_ref
            .as_ref()
            .map(|r| TargetRef::FrontProxy(&r.name))
    }
}

impl Kubeconfig {
    /// The name of the client Certificate and its Secret: `kubeconfig-cert-<name>`.
    pub fn certificate_name(&self) -> String {
        format!(
            "kubeconfig-cert-{}",
            self.metadata.name.as_deref().unwrap_or_default()
        )
    }

    /// The workspace of the kubeconfig URL: `spec.targetWorkspace`, else `root` (the
    /// deprecated `cluster` field never changes the URL).
    pub fn target_workspace(&self) -> &str {
        if self.spec.target_workspace.is_empty() {
            "root"
        } else {
            &self.spec.target_workspace
        }
    }

    /// The workspace of the RBAC grants: `spec.targetWorkspace`, else the deprecated
    /// `authorization.clusterRoleBindings.cluster`, else `root`.
    pub fn rbac_target_workspace(&self) -> &str {
        if !self.spec.target_workspace.is_empty() {
            return &self.spec.target_workspace;
        }
        match &self.spec.authorization {
            Some(a) if !a.cluster_role_bindings.cluster.is_empty() => {
                &a.cluster_role_bindings.cluster
            }
            _ => "root",
        }
    }
}
