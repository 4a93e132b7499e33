//! `capi-provider.agent-install.openshift.io/v1alpha1`: the deprecated version, served with a
//! schema identical to [`v1beta1`](super::v1beta1) and upstream's deprecation warning
//! ("v1alpha1 is a deprecated version for <Kind>"). There is no conversion webhook (strategy
//! None): both versions are the same JSON, so the API server converts by relabelling.
//!
//! Only the CRD versions are generated from these types; controllers read and write v1beta1.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::v1beta1;

/// The v1alpha1 AgentCluster spec: the v1beta1 one.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "capi-provider.agent-install.openshift.io",
    version = "v1alpha1",
    kind = "AgentCluster",
    plural = "agentclusters",
    singular = "agentcluster",
    namespaced,
    status = "v1beta1::AgentClusterStatus",
    deprecated = "v1alpha1 is a deprecated version for AgentCluster",
    storage = false,
    doc = "AgentCluster is the Schema for the agentclusters API."
)]
#[serde(transparent)]
pub struct AgentClusterSpec(pub v1beta1::AgentClusterSpec);

/// The v1alpha1 AgentMachine spec: the v1beta1 one.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "capi-provider.agent-install.openshift.io",
    version = "v1alpha1",
    kind = "AgentMachine",
    plural = "agentmachines",
    singular = "agentmachine",
    namespaced,
    status = "v1beta1::AgentMachineStatus",
    deprecated = "v1alpha1 is a deprecated version for AgentMachine",
    storage = false,
    doc = "AgentMachine is the Schema for the agentmachines API."
)]
#[serde(transparent)]
pub struct AgentMachineSpec(pub v1beta1::AgentMachineSpec);

/// The v1alpha1 AgentMachineTemplate spec: the v1beta1 one.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "capi-provider.agent-install.openshift.io",
    version = "v1alpha1",
    kind = "AgentMachineTemplate",
    plural = "agentmachinetemplates",
    singular = "agentmachinetemplate",
    shortname = "agentmt",
    category = "cluster-api",
    namespaced,
    deprecated = "v1alpha1 is a deprecated version for AgentMachineTemplate",
    storage = false,
    doc = "AgentMachineTemplate is the Schema for the agentmachinetemplates API."
)]
#[serde(transparent)]
pub struct AgentMachineTemplateSpec(pub v1beta1::AgentMachineTemplateSpec);
