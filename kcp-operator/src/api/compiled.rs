//! The `deploy.operator.kcp.io/v1alpha1` Compiled* kinds: the fully resolved input of the
//! workload controllers, written by the config controllers (upstream marks them EXPERIMENTAL).
//!
//! Each embeds the source spec and whatever it refers to (the RootShard spec, the shard names,
//! the VirtualWorkspace spec), so the workload group can render Deployments, Services and
//! ConfigMaps from this object and the Secrets of its namespace alone, possibly on another
//! cluster.

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
}
