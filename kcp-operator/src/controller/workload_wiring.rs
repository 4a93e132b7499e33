//! The workload group's wiring: one controller per Compiled* kind, owning the Deployment,
//! Service, ConfigMap and PodDisruptionBudget it writes, and woken by the Secrets its
//! Deployment may mount ([`secret_concerns`]).

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::runtime::Controller;

use super::{Context, Reconciled, controller, drive, refs};
use crate::api::*;
use crate::reconcile::mounted::MountStores;
use crate::render::names::KUBECONFIG_LABEL;
use crate::shared::{Hubs, Shared};

/// A Compiled* kind, and the installation (RootShard) its Deployment's Secrets belong to.
trait Compiled: Reconciled {
    /// The RootShard whose Secrets (labelled `operator.kcp.io/rootshard`) it mounts.
    fn root_shard(&self) -> Option<&str>;

    /// The Secrets its Deployment mounts (`spec.requiredSecrets`).
    fn required_secrets(&self) -> &[String];
}

impl Compiled for CompiledRootShard {
    fn root_shard(&self) -> Option<&str> {
        self.metadata.name.as_deref()
    }

    fn required_secrets(&self) -> &[String] {
        &self.spec.required_secrets
    }
}

impl Compiled for CompiledCacheServer {
    fn root_shard(&self) -> Option<&str> {
        None
    }

    fn required_secrets(&self) -> &[String] {
        &self.spec.required_secrets
    }
}

impl Compiled for CompiledShard {
    fn root_shard(&self) -> Option<&str> {
        Some(&self.spec.root_shard.name)
    }

    fn required_secrets(&self) -> &[String] {
        &self.spec.required_secrets
    }
}

impl Compiled for CompiledFrontProxy {
    fn root_shard(&self) -> Option<&str> {
        Some(&self.spec.root_shard.name)
    }

    fn required_secrets(&self) -> &[String] {
        &self.spec.required_secrets
    }
}

impl Compiled for CompiledVirtualWorkspace {
    fn root_shard(&self) -> Option<&str> {
        Some(&self.spec.root_shard.name)
    }

    fn required_secrets(&self) -> &[String] {
        &self.spec.required_secrets
    }
}

/// Whether a Secret event may concern `o`'s Deployment:
/// * a Secret it lists in `spec.requiredSecrets` does (a VirtualWorkspace mounts Kubeconfig
///   Secrets, so their renewal must roll it);
/// * a Secret a Compiled* object controls (a proxy's dynamic kubeconfig) concerns only it;
/// * a Secret of an installation (labelled `operator.kcp.io/rootshard`) concerns only the
///   Compiled* objects of that RootShard;
/// * other Kubeconfig Secrets (a client certificate, labelled `operator.kcp.io/kubeconfig`, or an
///   output, controlled by the Kubeconfig) are not mounted;
/// * any other Secret (a CacheServer's, or one a user provides) may be mounted by any of them.
fn secret_concerns<K: Compiled>(o: &K, secret: &kube::api::ObjectMeta) -> bool {
    if let Some(name) = secret.name.as_ref()
        && o.required_secrets().contains(name)
    {
        return true;
    }
    let controller = secret
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true));
    if let Some(owner) = controller {
        if owner.api_version.starts_with("deploy.operator.kcp.io/") {
            return owner.kind == K::kind(&()) && o.meta().name.as_deref() == Some(&owner.name);
        }
        if owner.api_version.starts_with("operator.kcp.io/") && owner.kind == "Kubeconfig" {
            return false;
        }
    }
    let labels = secret.labels.as_ref();
    match labels.and_then(|l| l.get(crate::render::names::ROOT_SHARD_LABEL)) {
        Some(rs) => o.root_shard() == Some(rs.as_str()),
        None => !labels.is_some_and(|l| l.contains_key(KUBECONFIG_LABEL)),
    }
}

/// A workload controller: owns Deployments, Services, ConfigMaps and PodDisruptionBudgets, and is woken by the
/// Secrets its Deployment may mount (see [`secret_concerns`]).
fn workload_controller<K: Compiled + Shared>(
    hubs: &mut Hubs,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) -> Controller<K> {
    let controller = controller::<K>(hubs)
        .owns_stream(hubs.meta::<Deployment>().metas_only())
        .owns_stream(hubs.meta::<Service>().metas_only())
        .owns_stream(hubs.meta::<ConfigMap>().metas_only())
        .owns_stream(hubs.meta::<PodDisruptionBudget>().metas_only());
    let store = controller.store();
    controller
        .watches_stream(hubs.meta::<Secret>().metas_only(), move |s| {
            refs(&store, s.metadata.namespace.as_deref(), |o: &K| {
                secret_concerns(o, &s.metadata)
            })
        })
        .graceful_shutdown_on(shutdown)
}

/// The workload group's controllers, as tasks that run them to completion after `shutdown`.
pub(super) fn workload_controllers(
    hubs: &mut Hubs,
    ctx: &Arc<Context>,
    shutdown: impl Future<Output = ()> + Clone + Send + Sync + 'static,
) -> Vec<BoxFuture<'static, ()>> {
    let mounts = MountStores {
        secrets: hubs.meta::<Secret>().store(),
        config_maps: hubs.meta::<ConfigMap>().store(),
    };
    ctx.caches.track(mounts.secrets.clone());
    ctx.caches.track(mounts.config_maps.clone());
    let _ = ctx.mounts.set(mounts);
    vec![
        Box::pin(drive(
            workload_controller::<CompiledRootShard>(hubs, shutdown.clone()),
            ctx.clone(),
            None,
        )),
        Box::pin(drive(
            workload_controller::<CompiledShard>(hubs, shutdown.clone()),
            ctx.clone(),
            None,
        )),
        Box::pin(drive(
            workload_controller::<CompiledFrontProxy>(hubs, shutdown.clone()),
            ctx.clone(),
            None,
        )),
        Box::pin(drive(
            workload_controller::<CompiledCacheServer>(hubs, shutdown.clone()),
            ctx.clone(),
            None,
        )),
        Box::pin(drive(
            workload_controller::<CompiledVirtualWorkspace>(hubs, shutdown),
            ctx.clone(),
            None,
        )),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(labels: &[(&str, &str)], owner: Option<(&str, &str, &str)>) -> kube::api::ObjectMeta {
        kube::api::ObjectMeta {
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            owner_references: owner.map(|(api_version, kind, name)| {
                vec![
                    k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                        api_version: api_version.into(),
                        kind: kind.into(),
                        name: name.into(),
                        controller: Some(true),
                        ..Default::default()
                    },
                ]
            }),
            ..Default::default()
        }
    }

    #[test]
    fn an_installation_secret_wakes_only_the_compiled_objects_of_its_root_shard() {
        let mut shard = CompiledShard::new("s1", CompiledShardSpec::default());
        shard.spec.root_shard.name = "r1".into();
        let root = CompiledRootShard::new("r2", CompiledRootShardSpec::default());
        let of_r1 = secret(&[(crate::render::names::ROOT_SHARD_LABEL, "r1")], None);
        assert!(secret_concerns(&shard, &of_r1));
        assert!(!secret_concerns(&root, &of_r1));
        assert!(
            secret_concerns(&root, &secret(&[], None)),
            "an unlabelled Secret may be mounted by anyone"
        );
    }

    #[test]
    fn kubeconfig_secrets_wake_no_workload_and_a_compiled_objects_secret_only_it() {
        let root = CompiledRootShard::new("r1", CompiledRootShardSpec::default());
        let fp = CompiledFrontProxy::new("f1", CompiledFrontProxySpec::default());
        let cert = secret(&[(KUBECONFIG_LABEL, "admin")], None);
        let output = secret(
            &[],
            Some(("operator.kcp.io/v1alpha1", "Kubeconfig", "admin")),
        );
        assert!(!secret_concerns(&root, &cert) && !secret_concerns(&root, &output));
        let dynamic = secret(
            &[],
            Some((
                "deploy.operator.kcp.io/v1alpha1",
                "CompiledFrontProxy",
                "f1",
            )),
        );
        assert!(secret_concerns(&fp, &dynamic));
        assert!(!secret_concerns(&root, &dynamic));
    }

    #[test]
    fn a_kubeconfig_secret_a_virtual_workspace_mounts_wakes_it() {
        let mut vw = CompiledVirtualWorkspace::new("vw", CompiledVirtualWorkspaceSpec::default());
        vw.spec.required_secrets = vec!["vw-server-kubeconfig".into()];
        let mut output = secret(
            &[],
            Some(("operator.kcp.io/v1alpha1", "Kubeconfig", "vw-server")),
        );
        assert!(!secret_concerns(&vw, &output));
        output.name = Some("vw-server-kubeconfig".into());
        assert!(secret_concerns(&vw, &output));
    }
}
