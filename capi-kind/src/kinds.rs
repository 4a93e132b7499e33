//! What the reconciler needs to know about each of the two kinds ([`KindObject`]): its
//! finalizer, its plan, how an observation lands in its status, and its kubeconfig Secrets.

use std::fmt::Debug;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kcp_core::capi;
use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::api::capi::ApiEndpoint;
use crate::api::{KINDCluster, KindCluster, Phase};
use crate::error::Result;
use crate::plan::{ClusterPlan, plan_capi, plan_upstream};
use crate::secrets::{
    render_capi_kubeconfig_secret, render_upstream_kubeconfig_secret, upstream_secret_name,
};
use crate::status::{Observation, observe_capi, observe_upstream, set_paused};

/// One of the kinds capi-kind reconciles.
pub trait KindObject:
    Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + Debug + Send + Sync + 'static
{
    /// The kind's name, for logs and messages.
    const KIND: &'static str;
    /// The finalizer guarding the kind cluster and Secrets.
    const FINALIZER: &'static str;
    /// Whether the CAPI contract applies (owner gating, pause, endpoint in spec).
    const CAPI: bool;

    /// The validated plan.
    fn plan(&self) -> Result<ClusterPlan>;
    /// Writes `obs` into the status.
    fn observe(&mut self, obs: &Observation, now: Time);
    /// The phase last written.
    fn phase(&self) -> Option<Phase>;
    /// The kubeconfig Secrets for `kubeconfig` (`cluster`: the owning CAPI Cluster's name).
    fn kubeconfig_secrets(&self, cluster: Option<&str>, kubeconfig: &str) -> Result<Vec<Secret>>;
    /// The names of the kubeconfig Secrets, for deletion.
    fn kubeconfig_secret_names(&self, cluster: Option<&str>) -> Vec<String>;
    /// Records the API endpoint in the spec; returns whether it changed.
    fn set_endpoint(&mut self, _endpoint: &ApiEndpoint) -> bool {
        false
    }
    /// Sets the `Paused` condition (CAPI only).
    fn set_paused(&mut self, _paused: bool, _why: &str, _now: Time) {}
    /// Whether a provider (this one or the Go provider before it) created, tried to create or
    /// took this object's kind cluster, by what its status keeps for good: then an unmarked
    /// cluster of that name is this object's (the Go provider marks nothing) and is adopted,
    /// and one whose marker cannot be read is still deleted with the object.
    fn provisioned_here(&self) -> bool;
}

/// The history entries a provider writes when it created, or tried to create, the cluster
/// (the Go provider's wording, kept by this one).
const CREATION_HISTORY: [&str; 2] = [
    "Cluster was successfully created",
    "Cluster cannot be created",
];

impl KindObject for KINDCluster {
    const KIND: &'static str = "KINDCluster";
    const FINALIZER: &'static str = crate::api::upstream::FINALIZER;
    const CAPI: bool = false;

    fn plan(&self) -> Result<ClusterPlan> {
        plan_upstream(self)
    }
    fn observe(&mut self, obs: &Observation, now: Time) {
        observe_upstream(self.status.get_or_insert_with(Default::default), obs, now);
    }
    fn phase(&self) -> Option<Phase> {
        self.status.as_ref().and_then(|s| s.phase)
    }
    fn kubeconfig_secrets(&self, _: Option<&str>, kubeconfig: &str) -> Result<Vec<Secret>> {
        Ok(vec![render_upstream_kubeconfig_secret(self, kubeconfig)?])
    }
    fn kubeconfig_secret_names(&self, _: Option<&str>) -> Vec<String> {
        vec![upstream_secret_name(&self.spec.cluster_name)]
    }
    fn provisioned_here(&self) -> bool {
        // The Go provider also calls a cluster that already existed ready, without history.
        self.status.as_ref().is_some_and(|s| {
            s.ready == Some(true)
                || s.conditions
                    .iter()
                    .any(|e| CREATION_HISTORY.contains(&e.message.as_str()))
        })
    }
}

impl KindObject for KindCluster {
    const KIND: &'static str = "KindCluster";
    const FINALIZER: &'static str = crate::api::capi::FINALIZER;
    const CAPI: bool = true;

    fn plan(&self) -> Result<ClusterPlan> {
        plan_capi(self)
    }
    fn observe(&mut self, obs: &Observation, now: Time) {
        let status = self.status.get_or_insert_with(Default::default);
        observe_capi(status, obs, now.clone());
        set_paused(status, false, "", now);
    }
    fn phase(&self) -> Option<Phase> {
        self.status.as_ref().and_then(|s| s.phase)
    }
    fn kubeconfig_secrets(&self, cluster: Option<&str>, kubeconfig: &str) -> Result<Vec<Secret>> {
        match cluster {
            Some(cluster) => Ok(vec![render_capi_kubeconfig_secret(
                self, cluster, kubeconfig,
            )?]),
            None => Ok(vec![]),
        }
    }
    fn kubeconfig_secret_names(&self, cluster: Option<&str>) -> Vec<String> {
        cluster
            .map(capi::kubeconfig_secret_name)
            .into_iter()
            .collect()
    }
    fn provisioned_here(&self) -> bool {
        self.status
            .as_ref()
            .and_then(|s| s.initialization.as_ref())
            .is_some_and(|i| i.provisioned == Some(true))
    }
    fn set_endpoint(&mut self, endpoint: &ApiEndpoint) -> bool {
        if self.spec.control_plane_endpoint.as_ref() == Some(endpoint) {
            return false;
        }
        self.spec.control_plane_endpoint = Some(endpoint.clone());
        true
    }
    fn set_paused(&mut self, paused: bool, why: &str, now: Time) {
        set_paused(
            self.status.get_or_insert_with(Default::default),
            paused,
            why,
            now,
        );
    }
}
