//! Desired state as pure functions, one per child object (`render_*`).
//!
//! Nothing here does I/O: every function takes the source (or Compiled*) object and returns
//! the typed child, with the exact names, labels, arguments, mounts and certificate layout of
//! upstream kcp-operator (spec sections 3 to 5), except where upstream has a defect, which the
//! function's docs name.
//!
//! * [`names`]: object names, labels, in-cluster hosts and URLs;
//! * [`pki`]: cert-manager Issuers and Certificates (section 4), templates applied;
//! * [`kubeconfig`]: the kubeconfig files the shards and proxies read;
//! * [`deployment`]: the Deployment mutations shared by all workloads;
//! * [`rootshard`], [`shard`], [`frontproxy`], [`cacheserver`], [`virtualworkspace`]: the
//!   workloads (Deployments, Services, ConfigMaps, Secrets) per kind;
//! * [`pdb`]: the optional PodDisruptionBudgets of the workloads;
//! * [`revisions`]: the pod-template revision labels that roll a Deployment when a mounted
//!   Secret or ConfigMap changes.

pub mod cacheserver;
pub mod certmanager;
pub mod compiled;
pub mod deployment;
pub mod duration;
pub mod frontproxy;
pub mod kubeconfig;
pub mod names;
pub mod pdb;
pub mod pki;
pub mod revisions;
pub mod rootshard;
pub mod service;
pub mod shard;
pub mod virtualworkspace;

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Metadata of a child object: name, namespace and labels.
pub(crate) fn meta(name: &str, namespace: &str, labels: BTreeMap<String, String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some(namespace.to_owned()),
        labels: Some(labels),
        ..ObjectMeta::default()
    }
}

/// An object's name and namespace, each empty when unset.
pub(crate) fn name_ns(meta: &ObjectMeta) -> (&str, &str) {
    (
        meta.name.as_deref().unwrap_or_default(),
        meta.namespace.as_deref().unwrap_or_default(),
    )
}

/// A label map from `(key, value)` pairs.
pub(crate) fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// `base` with every key of `extra` that `base` lacks: the operator's keys win.
pub(crate) fn merge_maps(
    base: Option<BTreeMap<String, String>>,
    extra: &BTreeMap<String, String>,
) -> Option<BTreeMap<String, String>> {
    if extra.is_empty() {
        return base;
    }
    let mut out = extra.clone();
    out.extend(base.unwrap_or_default());
    Some(out)
}

/// The sorted union of two string lists.
pub(crate) fn union_sorted(a: &[String], b: &[String]) -> Vec<String> {
    let mut out: Vec<String> = a.iter().chain(b).cloned().collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
pub(crate) mod fixtures;

#[cfg(test)]
mod tests;
