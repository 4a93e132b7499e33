//! What the reconcilers share: their [`Context`], the provider's settings, and small typed
//! helpers over [`ObjectClient`] (merge patches of owned fields, CAPI objects read at the
//! version an owner reference names).
//!
//! The reconcilers themselves are [`crate::cluster`] (AgentCluster, spec 1.5) and
//! [`crate::machine`] (AgentMachine, spec 1.6). Both are plain async functions over
//! `&dyn ObjectClient`, so they run the same on a real API server and on kcp-sim in-process.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kcp_core::capi;
use kcp_core::runtime::EventRecorder;
use kcp_core::typed::{from_dynamic, gvk_for};
use kcp_core::{ObjectClient, ObjectPatch, ObjectRef, PatchOptions, Subresource};
use kube::api::GroupVersionKind;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::agent_cache::AgentCache;
use crate::claims::ClaimsInFlight;
use crate::deletion::DEFAULT_UNBIND_TIMEOUT;
use crate::error::{Error, Result};
use crate::foreign::{Cluster, Machine, capi_gvk};
use crate::metrics::Metrics;
use crate::select::InventoryPreference;

/// How long the AgentCluster waits before looking again at something it does not watch
/// (upstream's 5 s).
pub const CLUSTER_POLL: Duration = Duration::from_secs(5);

/// The provider's settings.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// Where Agents are read from (`--agent-namespace`); `None`: every namespace.
    pub agent_namespace: Option<String>,
    /// Where the provider's own objects, Machines and Clusters are read from (`--namespace`).
    pub namespace: Option<String>,
    /// The bound on the unbind wait during deletion.
    pub unbind_timeout: Duration,
    /// Which hosts selection prefers.
    pub inventory_preference: InventoryPreference,
}

impl Default for ProviderConfig {
    fn default() -> Self {
        ProviderConfig {
            agent_namespace: None,
            namespace: None,
            unbind_timeout: DEFAULT_UNBIND_TIMEOUT,
            inventory_preference: InventoryPreference::None,
        }
    }
}

/// What every reconcile gets.
pub struct Context {
    /// The management cluster.
    pub client: Arc<dyn ObjectClient>,
    /// Settings.
    pub config: ProviderConfig,
    /// Selection and unbind metrics.
    pub metrics: Arc<Metrics>,
    /// Event recorder (component `capi-provider-agent`).
    pub events: EventRecorder,
    /// The Agent cache selection reads; `None`: list the free Agents on each claim.
    pub agents: Option<AgentCache>,
    /// The Agents this process's workers are claiming right now.
    pub claims: ClaimsInFlight,
}

impl Context {
    /// A context over `client` with `config`, unregistered metrics and the provider's recorder.
    pub fn new(client: Arc<dyn ObjectClient>, config: ProviderConfig) -> Self {
        Context {
            client,
            config,
            metrics: Arc::new(Metrics::unregistered()),
            events: EventRecorder::new("capi-provider-agent"),
            agents: None,
            claims: ClaimsInFlight::default(),
        }
    }
}

/// Sends a merge patch (a typed value) to `target`.
pub async fn merge_patch<P: Serialize>(
    client: &dyn ObjectClient,
    target: &ObjectRef,
    subresource: Subresource,
    patch: &P,
) -> Result<()> {
    let body = serde_json::to_value(patch).map_err(|e| Error::Serialization {
        context: format!("encoding a patch of {target}"),
        message: e.to_string(),
    })?;
    client
        .patch(
            target,
            subresource,
            &ObjectPatch::Merge(body),
            &PatchOptions::default(),
        )
        .await?;
    Ok(())
}

/// A reference to a typed object.
pub fn typed_ref<K: kube::Resource<DynamicType = ()>>(namespace: &str, name: &str) -> ObjectRef {
    ObjectRef::namespaced(gvk_for::<K>(), namespace, name)
}

/// Reads an object of `gvk` and decodes it as `K` (for kinds served at several versions).
pub async fn get_as<K: DeserializeOwned + kube::Resource<DynamicType = ()>>(
    client: &dyn ObjectClient,
    gvk: GroupVersionKind,
    namespace: &str,
    name: &str,
) -> Result<Option<K>> {
    let target = ObjectRef::namespaced(gvk, namespace, name);
    match client.get(&target).await? {
        Some(obj) => Ok(Some(from_dynamic(obj)?)),
        None => Ok(None),
    }
}

/// The version part of an `apiVersion`.
pub fn version_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or(api_version, |(_, v)| v)
}

/// Reads the Machine named by an owner reference, at the reference's version.
pub async fn get_machine(
    client: &dyn ObjectClient,
    namespace: &str,
    owner: &OwnerReference,
) -> Result<Option<Machine>> {
    let gvk = capi_gvk(version_of(&owner.api_version), "Machine");
    get_as(client, gvk, namespace, &owner.name).await
}

/// Reads a CAPI Cluster, at v1beta2 or (when that is not served) v1beta1.
pub async fn get_cluster(
    client: &dyn ObjectClient,
    namespace: &str,
    name: &str,
    version: &str,
) -> Result<Option<Cluster>> {
    match get_as(client, capi_gvk(version, "Cluster"), namespace, name).await {
        Err(Error::Client(kcp_core::Error::KindNotServed { .. })) if version != "v1beta1" => {
            get_as(client, capi_gvk("v1beta1", "Cluster"), namespace, name).await
        }
        other => other,
    }
}

/// Whether reconciliation of an object with `meta` is paused: its own pause annotation (value
/// `"true"`, as upstream's provider reads it) or its Cluster's `spec.paused` (Cluster API's
/// contract; upstream's provider ignores it). The Cluster's own annotations do not pause its
/// objects, as in Cluster API's `annotations.IsPaused`.
pub fn paused(meta: &kube::api::ObjectMeta, cluster: Option<&Cluster>) -> bool {
    capi::has_paused_annotation(meta) || cluster.is_some_and(|c| c.spec.paused == Some(true))
}

/// A merge patch of `metadata.labels` (and the resourceVersion precondition when given).
#[derive(Serialize, Debug, Default)]
pub struct LabelsPatch {
    /// The metadata part.
    pub metadata: crate::binding::MetadataPatch,
}

impl LabelsPatch {
    /// A patch setting one label, unconditionally.
    pub fn set(key: &str, value: &str) -> Self {
        let mut patch = LabelsPatch::default();
        patch
            .metadata
            .labels
            .insert(key.to_owned(), Some(value.to_owned()));
        patch
    }

    /// A patch setting (`Some`) or deleting (`None`) one annotation.
    pub fn annotation(key: &str, value: Option<&str>) -> Self {
        let mut patch = LabelsPatch::default();
        patch
            .metadata
            .annotations
            .insert(key.to_owned(), value.map(str::to_owned));
        patch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_is_paused_by_its_own_annotation_or_its_clusters_spec() {
        let annotated = |v: &str| kube::api::ObjectMeta {
            annotations: Some([(capi::PAUSED_ANNOTATION.to_string(), v.to_string())].into()),
            ..Default::default()
        };
        let cluster = |spec_paused: Option<bool>, annotation: Option<&str>| {
            let mut c = Cluster::new("hc", Default::default());
            c.spec.paused = spec_paused;
            c.metadata.annotations =
                annotation.map(|v| [(capi::PAUSED_ANNOTATION.to_string(), v.to_string())].into());
            c
        };
        let plain = kube::api::ObjectMeta::default();
        assert!(paused(&annotated("true"), None));
        assert!(!paused(&annotated("True"), None));
        assert!(!paused(&plain, None));
        assert!(paused(&plain, Some(&cluster(Some(true), None))));
        assert!(!paused(&plain, Some(&cluster(Some(false), Some("true")))));
    }
}
