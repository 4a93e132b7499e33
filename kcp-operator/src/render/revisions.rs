//! Pod-template revision labels: for every Secret and ConfigMap a Deployment's pods mount,
//! the pod template carries `operator.kcp.io/<secret|configmap>-<first 20 hex chars of
//! SHA3-256(name)>-rev = <resourceVersion>`, so a renewed certificate or changed ConfigMap
//! rolls the Deployment (spec section 3).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use sha3::{Digest, Sha3_256};

/// A mounted object kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MountKind {
    /// A Secret.
    Secret,
    /// A ConfigMap.
    ConfigMap,
}

impl MountKind {
    fn as_str(self) -> &'static str {
        match self {
            MountKind::Secret => "secret",
            MountKind::ConfigMap => "configmap",
        }
    }
}

/// The revision label key of a mounted object.
pub fn revision_label(kind: MountKind, name: &str) -> String {
    let digest = hex::encode(Sha3_256::digest(name.as_bytes()));
    format!("operator.kcp.io/{}-{}-rev", kind.as_str(), &digest[..20])
}

/// The Secrets and ConfigMaps the pods of `deployment` reference (volumes and env), sorted.
pub fn referenced_objects(deployment: &Deployment) -> Vec<(MountKind, String)> {
    let mut out = Vec::new();
    let Some(pod) = deployment
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
    else {
        return out;
    };
    for volume in pod.volumes.iter().flatten() {
        if let Some(name) = volume.secret.as_ref().and_then(|s| s.secret_name.clone()) {
            out.push((MountKind::Secret, name));
        }
        if let Some(cm) = &volume.config_map {
            out.push((MountKind::ConfigMap, cm.name.clone()));
        }
    }
    let containers = pod
        .containers
        .iter()
        .chain(pod.init_containers.iter().flatten());
    for container in containers {
        for from in container.env_from.iter().flatten() {
            if let Some(s) = &from.secret_ref {
                out.push((MountKind::Secret, s.name.clone()));
            }
            if let Some(c) = &from.config_map_ref {
                out.push((MountKind::ConfigMap, c.name.clone()));
            }
        }
        for var in container.env.iter().flatten() {
            let Some(source) = &var.value_from else {
                continue;
            };
            if let Some(s) = &source.secret_key_ref {
                out.push((MountKind::Secret, s.name.clone()));
            }
            if let Some(c) = &source.config_map_key_ref {
                out.push((MountKind::ConfigMap, c.name.clone()));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Adds the revision labels to the pod template, reading resourceVersions through `lookup`;
/// returns the objects that do not exist (the Deployment must not be written then: its pods
/// could not start).
pub fn apply_revision_labels(
    deployment: &mut Deployment,
    lookup: impl Fn(MountKind, &str) -> Option<String>,
) -> Vec<(MountKind, String)> {
    let mut labels = BTreeMap::new();
    let mut missing = Vec::new();
    for (kind, name) in referenced_objects(deployment) {
        match lookup(kind, &name) {
            Some(rv) => {
                labels.insert(revision_label(kind, &name), rv);
            }
            None => missing.push((kind, name)),
        }
    }
    if let Some(spec) = deployment.spec.as_mut() {
        let meta = spec.template.metadata.get_or_insert_with(Default::default);
        meta.labels.get_or_insert_with(BTreeMap::new).extend(labels);
    }
    missing
}
