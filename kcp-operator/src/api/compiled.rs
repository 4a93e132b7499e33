//! The `deploy.operator.kcp.io/v1alpha1` Compiled* kinds: the fully resolved input of the
//! workload controllers, written by the config controllers (upstream marks them EXPERIMENTAL).
//!
//! Each embeds the source spec and whatever it refers to (the RootShard spec, the shard names,
//! the VirtualWorkspace spec), so the workload group can render Deployments, Services and
//! ConfigMaps from this object and the Secrets of its namespace alone, possibly on another
//! cluster.
//!
//! # The contract between the two sides
//!
//! kcp-rs treats these kinds as a versioned interface, so that a syncer or a remote workload
//! operator can be written against it without reading this crate:
//!
//! * **Version.** The schema is `deploy.operator.kcp.io/v1alpha1`. Within `v1alpha1` changes
//!   are additive only (new optional fields, ignored by older readers); a field is never
//!   renamed, retyped or given a new meaning. Anything else would be `v1alpha2`, served next to
//!   `v1alpha1`.
//! * **Identity.** A Compiled* object has the name and namespace of its source, the source's
//!   labels and annotations, the identity labels `operator.kcp.io/rootshard`, `.../shard`,
//!   `.../front-proxy`, `.../cache-server`, `.../virtual-workspace` as applicable, and one
//!   `operator.kcp.io/cert-<certificate>-revision` annotation per Certificate it was rendered
//!   with (a renewal changes the object, so the workload side rolls its pods).
//! * **Spec.** The source spec verbatim (upstream's `operator.kcp.io/v1alpha1` types), the
//!   resolved references (`rootShard`, `shard`, `virtualWorkspace`, `shards`), and
//!   `requiredSecrets`: the names of the Secrets, in the object's namespace, the workload's
//!   Deployments mount (certificates, kubeconfigs, merged CA bundles and any Secret the user
//!   mounts). The config side writes every one of them (or the user does); whoever moves a
//!   Compiled* object to another cluster moves those Secrets with it. The workload side does not
//!   create a Deployment before all of them exist, and says which are missing in the
//!   `Available` condition (reason `RequiredSecretsMissing`).
//! * **Status.** Written by the workload side only: `phase`, `observedGeneration`, and the
//!   conditions `Available` (from the Deployment) and `Ready`. The config side copies
//!   `Available` into the source's status.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::frontproxy::{CacheServerSpec, CacheServerStatus, FrontProxySpec, FrontProxyStatus};
use super::shard::{RootShardSpec, RootShardStatus, ShardSpec, ShardStatus};
use super::virtualworkspace::{VirtualWorkspaceSpec, VirtualWorkspaceStatus};

/// The API group of the Compiled* kinds.
pub const DEPLOY_GROUP: &str = "deploy.operator.kcp.io";

/// A resolved RootShard spec with its name.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NamedRootShardSpec {
    /// The RootShard's name.
    pub name: String,
    /// Its spec.
    pub spec: RootShardSpec,
}

/// A resolved Shard spec with its name.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NamedShardSpec {
    /// The Shard's name.
    pub name: String,
    /// Its spec.
    pub spec: ShardSpec,
}

/// A resolved VirtualWorkspace spec with its name.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NamedVirtualWorkspaceSpec {
    /// The VirtualWorkspace's name.
    pub name: String,
    /// Its spec.
    pub spec: VirtualWorkspaceSpec,
}

/// The render input of a root shard.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "deploy.operator.kcp.io",
    version = "v1alpha1",
    kind = "CompiledRootShard",
    plural = "compiledrootshards",
    singular = "compiledrootshard",
    namespaced,
    status = "RootShardStatus",
    derive = "PartialEq",
    doc = "CompiledRootShard is the fully resolved render input of a kcp root shard (EXPERIMENTAL).",
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct CompiledRootShardSpec {
    /// The RootShard's spec.
    pub root_shard: RootShardSpec,
    /// The VirtualWorkspace named by `kcpVirtualWorkspace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_workspace: Option<NamedVirtualWorkspaceSpec>,
    /// The names of all Shards of the root shard.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<String>,
    /// The Secrets of this namespace the workload needs before it can start (mounted by its
    /// Deployments; those the workload group writes itself are not listed), sorted: the config
    /// side writes them, a syncer copies them next to this object (a kcp-rs addition).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_secrets: Vec<String>,
}

/// The render input of a shard.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "deploy.operator.kcp.io",
    version = "v1alpha1",
    kind = "CompiledShard",
    plural = "compiledshards",
    singular = "compiledshard",
    namespaced,
    status = "ShardStatus",
    derive = "PartialEq",
    doc = "CompiledShard is the fully resolved render input of a kcp shard (EXPERIMENTAL).",
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct CompiledShardSpec {
    /// The Shard's spec.
    pub shard: ShardSpec,
    /// Its RootShard.
    pub root_shard: NamedRootShardSpec,
    /// The VirtualWorkspace named by `kcpVirtualWorkspace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_workspace: Option<NamedVirtualWorkspaceSpec>,
    /// The names of all Shards of the root shard.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<String>,
    /// The Secrets of this namespace the workload needs before it can start (mounted by its
    /// Deployments; those the workload group writes itself are not listed), sorted: the config
    /// side writes them, a syncer copies them next to this object (a kcp-rs addition).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_secrets: Vec<String>,
}

/// The render input of a front-proxy.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "deploy.operator.kcp.io",
    version = "v1alpha1",
    kind = "CompiledFrontProxy",
    plural = "compiledfrontproxies",
    singular = "compiledfrontproxy",
    namespaced,
    status = "FrontProxyStatus",
    derive = "PartialEq",
    doc = "CompiledFrontProxy is the fully resolved render input of a kcp front-proxy (EXPERIMENTAL).",
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct CompiledFrontProxySpec {
    /// The FrontProxy's spec.
    pub front_proxy: FrontProxySpec,
    /// Its RootShard.
    pub root_shard: NamedRootShardSpec,
    /// The names of all Shards of the root shard.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<String>,
    /// The Secrets of this namespace the workload needs before it can start (mounted by its
    /// Deployments; those the workload group writes itself are not listed), sorted: the config
    /// side writes them, a syncer copies them next to this object (a kcp-rs addition).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_secrets: Vec<String>,
}

/// The render input of a cache server.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "deploy.operator.kcp.io",
    version = "v1alpha1",
    kind = "CompiledCacheServer",
    plural = "compiledcacheservers",
    singular = "compiledcacheserver",
    namespaced,
    status = "CacheServerStatus",
    derive = "PartialEq",
    doc = "CompiledCacheServer is the fully resolved render input of a kcp cache server (EXPERIMENTAL).",
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct CompiledCacheServerSpec {
    /// The CacheServer's spec.
    pub cache_server: CacheServerSpec,
    /// The Secrets of this namespace the workload needs before it can start (mounted by its
    /// Deployments; those the workload group writes itself are not listed), sorted: the config
    /// side writes them, a syncer copies them next to this object (a kcp-rs addition).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_secrets: Vec<String>,
}

/// The render input of a virtual workspace server.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "deploy.operator.kcp.io",
    version = "v1alpha1",
    kind = "CompiledVirtualWorkspace",
    plural = "compiledvirtualworkspaces",
    singular = "compiledvirtualworkspace",
    namespaced,
    status = "VirtualWorkspaceStatus",
    derive = "PartialEq",
    doc = "CompiledVirtualWorkspace is the fully resolved render input of a virtual workspace server (EXPERIMENTAL).",
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct CompiledVirtualWorkspaceSpec {
    /// The VirtualWorkspace's spec.
    pub virtual_workspace: VirtualWorkspaceSpec,
    /// The RootShard it belongs to.
    pub root_shard: NamedRootShardSpec,
    /// The Shard it belongs to, for a shard target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<NamedShardSpec>,
    /// The Secrets of this namespace the workload needs before it can start (mounted by its
    /// Deployments; those the workload group writes itself are not listed), sorted: the config
    /// side writes them, a syncer copies them next to this object (a kcp-rs addition).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_secrets: Vec<String>,
}
