//! Upstream's `KINDCluster` (`infrastructure.cluster-k8s.io/v1alpha1`, short name `kc`).
//!
//! Group, version, kind, plural, short name, printer columns and every upstream field are kept
//! exactly (note the group lacks the `x` of `cluster.x-k8s.io`: that is upstream's), so the
//! upstream sample manifests apply unchanged. Additions, all optional: `status.phase`,
//! `status.observedGeneration`, a `Phase` printer column, and a CEL rule making
//! `spec.clusterName` immutable (upstream only assumed it). The event history in
//! `status.conditions` is capped at [`HISTORY_LIMIT`] entries (upstream's grows without bound).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use crate::api::Phase;

/// The finalizer upstream puts on every KINDCluster (kept verbatim).
pub const FINALIZER: &str = "kindclusters.infrastructure.cluster-k8s.io/cluster-finalizer";

/// How many history entries `status.conditions` keeps (the newest).
pub const HISTORY_LIMIT: usize = 10;

/// The desired state of a KINDCluster.
// Several printer columns share `type_ = "string"`, which clippy takes for a repeated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "infrastructure.cluster-k8s.io",
    version = "v1alpha1",
    kind = "KINDCluster",
    plural = "kindclusters",
    singular = "kindcluster",
    shortname = "kc",
    namespaced,
    status = "KINDClusterStatus",
    derive = "PartialEq",
    doc = "KINDCluster is the Schema for the kindclusters API",
    printcolumn(
        name = "KubernetesVersion",
        type_ = "string",
        description = "KubernetesVersion of the resource",
        json_path = ".spec.kubernetesVersion"
    ),
    printcolumn(
        name = "ClusterName",
        type_ = "string",
        description = "ClusterName of the resource",
        json_path = ".spec.clusterName"
    ),
    printcolumn(
        name = "Ready",
        type_ = "string",
        description = "Status of the resource",
        json_path = ".status.ready"
    ),
    printcolumn(
        name = "Phase",
        type_ = "string",
        description = "Where provisioning stands",
        json_path = ".status.phase"
    )
)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = require_cluster_name)]
pub struct KINDClusterSpec {
    /// Specifies the cluster name, the KIND Cluster will be created with this name. Required,
    /// at most 64 characters, immutable.
    #[serde(default)]
    #[schemars(length(max = 64))]
    #[x_kube(validation = Rule::new("self == oldSelf").message("clusterName is immutable"))]
    pub cluster_name: String,
    /// Specifies the kubernetes version, the KIND Cluster will be created with this version.
    #[serde(default = "default_version")]
    #[schemars(extend("enum" = ["1.22", "1.21", "1.20", "1.19", "1.18", "1.17", "1.16", "1.15", "1.14"]))]
    pub kubernetes_version: String,
}

// Both fields deserialize leniently (a missing name is empty, any version string is kept), so
// an object the API server did not validate (written before the CRD, or on a server without
// validation) still reaches the reconciler, which refuses it with a clear status, instead of
// breaking the watch of every KINDCluster.

/// Upstream's schema requires `clusterName` (it has no `omitempty`) and gives it no default,
/// whatever serde accepts.
fn require_cluster_name(schema: &mut schemars::Schema) {
    if let Some(object) = schema.as_object_mut() {
        object.insert("required".into(), serde_json::json!(["clusterName"]));
        if let Some(name) = object
            .get_mut("properties")
            .and_then(|p| p.get_mut("clusterName"))
            .and_then(|n| n.as_object_mut())
        {
            name.remove("default");
        }
    }
}

fn default_version() -> String {
    KubernetesVersion::default().as_str().to_string()
}

/// The Kubernetes versions upstream offers, each with its kind node image.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KubernetesVersion {
    /// `kindest/node:v1.22.0`
    V1_22,
    /// `kindest/node:v1.21.1` (the default)
    #[default]
    V1_21,
    /// `kindest/node:v1.20.7`
    V1_20,
    /// `kindest/node:v1.19.11`
    V1_19,
    /// `kindest/node:v1.18.19`
    V1_18,
    /// `kindest/node:v1.17.17`
    V1_17,
    /// `kindest/node:v1.16.15`
    V1_16,
    /// `kindest/node:v1.15.12`
    V1_15,
    /// `kindest/node:v1.14.10`
    V1_14,
}

impl KubernetesVersion {
    /// Every version, newest first (the CRD's enum order).
    pub const ALL: [KubernetesVersion; 9] = [
        KubernetesVersion::V1_22,
        KubernetesVersion::V1_21,
        KubernetesVersion::V1_20,
        KubernetesVersion::V1_19,
        KubernetesVersion::V1_18,
        KubernetesVersion::V1_17,
        KubernetesVersion::V1_16,
        KubernetesVersion::V1_15,
        KubernetesVersion::V1_14,
    ];

    /// The version as written in `spec.kubernetesVersion` (`1.21`).
    pub fn as_str(self) -> &'static str {
        match self {
            KubernetesVersion::V1_22 => "1.22",
            KubernetesVersion::V1_21 => "1.21",
            KubernetesVersion::V1_20 => "1.20",
            KubernetesVersion::V1_19 => "1.19",
            KubernetesVersion::V1_18 => "1.18",
            KubernetesVersion::V1_17 => "1.17",
            KubernetesVersion::V1_16 => "1.16",
            KubernetesVersion::V1_15 => "1.15",
            KubernetesVersion::V1_14 => "1.14",
        }
    }

    /// The version written as `text`, if upstream offers it.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == text)
    }

    /// The kind node image upstream maps this version to (a tag, no digest).
    pub fn node_image(self) -> &'static str {
        match self {
            KubernetesVersion::V1_22 => "kindest/node:v1.22.0",
            KubernetesVersion::V1_21 => "kindest/node:v1.21.1",
            KubernetesVersion::V1_20 => "kindest/node:v1.20.7",
            KubernetesVersion::V1_19 => "kindest/node:v1.19.11",
            KubernetesVersion::V1_18 => "kindest/node:v1.18.19",
            KubernetesVersion::V1_17 => "kindest/node:v1.17.17",
            KubernetesVersion::V1_16 => "kindest/node:v1.16.15",
            KubernetesVersion::V1_15 => "kindest/node:v1.15.12",
            KubernetesVersion::V1_14 => "kindest/node:v1.14.10",
        }
    }
}

/// The observed state of a KINDCluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KINDClusterStatus {
    /// Represents the state of cluster: true for a ready cluster, false for an unready or
    /// uncreated one; absent until the first decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
    /// Represents the failure reason of the cluster creation.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub failure_message: String,
    /// The event history (newest last, at most 10 entries): upstream's "conditions", which
    /// are not Kubernetes conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<HistoryEntry>,
    /// Where provisioning stands (a kcp-rs addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// The generation this status describes (a kcp-rs addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// One entry of upstream's event history.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    /// Represents the time when the event occurred.
    pub timestamp: Time,
    /// Represents the specific message for the event.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Represents the detailed reason for the event.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

impl KINDClusterStatus {
    /// Appends a history entry unless the newest one says the same (message and reason), and
    /// drops the oldest beyond [`HISTORY_LIMIT`]. Returns whether an entry was added.
    pub fn record(&mut self, message: &str, reason: &str, now: Time) -> bool {
        if self
            .conditions
            .last()
            .is_some_and(|last| last.message == message && last.reason == reason)
        {
            return false;
        }
        self.conditions.push(HistoryEntry {
            timestamp: now,
            message: message.to_string(),
            reason: reason.to_string(),
        });
        let excess = self.conditions.len().saturating_sub(HISTORY_LIMIT);
        self.conditions.drain(..excess);
        true
    }
}
