//! The workload group: Compiled* objects -> Deployments, Services, ConfigMaps, the proxies'
//! dynamic kubeconfig Secrets and the optional PodDisruptionBudgets, rendered from the
//! Compiled* object and the Secrets of its namespace alone (so this group can run on another
//! cluster than the config group).
//!
//! A Deployment whose mounted Secrets or ConfigMaps do not all exist yet is not written (its
//! pods could not start); the pass looks again shortly, and any Secret event in the namespace
//! wakes the controller too.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kcp_core::ObjectClient;
use kcp_core::ObjectClientExt as _;
use kcp_core::runtime::Outcome;

use super::ensure::ensure;
use super::mounted::Mounted;
use super::pdb::ensure_pdb;
use super::phased::write_phased;
use super::required::workload_available;
use super::{core, owner_ref};
use crate::api::*;
use crate::error::Result;
use crate::render::cacheserver::{
    cache_server_replicas, render_cache_server_deployment, render_cache_server_service,
};
use crate::render::frontproxy::*;
use crate::render::pdb::*;
use crate::render::revisions::{MountKind, apply_revision_labels};
use crate::render::rootshard::{render_root_shard_deployment, render_root_shard_service};
use crate::render::shard::{render_shard_deployment, render_shard_service};

/// Ensures a Deployment with its revision labels; `spec_replicas` unset keeps the live
/// replica count (HPA-friendly). Returns the live Deployment, or `None` when mounts are missing.
pub(crate) async fn ensure_deployment(
    client: &dyn ObjectClient,
    mut desired: Deployment,
    spec_replicas: Option<i32>,
    mounted: &Mounted,
    owner: &OwnerReference,
) -> Result<Option<Deployment>> {
    let ns = desired.metadata.namespace.clone().unwrap_or_default();
    let mut mounted = mounted.clone();
    mounted.fill(client, &ns, &desired).await?;
    let missing = apply_revision_labels(&mut desired, |kind, name| mounted.lookup(kind, name));
    let name = desired.metadata.name.clone().unwrap_or_default();
    let live: Option<Deployment> = client
        .get_typed(Some(&ns), &name)
        .await
        .map_err(core(format!("reading Deployment {ns}/{name}")))?;
    if !missing.is_empty() {
        tracing::debug!(deployment = %name, ?missing, "mounted objects missing, not writing the Deployment yet");
        return Ok(None);
    }
    if spec_replicas.is_none()
        && let (Some(spec), Some(live_replicas)) = (
            desired.spec.as_mut(),
            live.as_ref()
                .and_then(|d| d.spec.as_ref())
                .and_then(|s| s.replicas),
        )
    {
        spec.replicas = Some(live_replicas);
    }
    let (_, live) = ensure(client, &desired, Some(owner)).await?;
    Ok(Some(live))
}

/// Ensures the internal proxy or a front-proxy: ConfigMap, dynamic kubeconfig, Service,
/// Deployment.
async fn ensure_proxy(
    client: &dyn ObjectClient,
    input: &ProxyInput<'_>,
    spec_replicas: Option<i32>,
    mounted: &mut Mounted,
    owner: &OwnerReference,
) -> Result<Option<Deployment>> {
    let (_, cm) = ensure(client, &render_proxy_config_map(input)?, Some(owner)).await?;
    mounted.record(MountKind::ConfigMap, &cm.metadata);
    let (_, secret) = ensure(
        client,
        &render_proxy_dynamic_kubeconfig_secret(input)?,
        Some(owner),
    )
    .await?;
    mounted.record(MountKind::Secret, &secret.metadata);
    ensure(client, &render_proxy_service(input), Some(owner)).await?;
    let dep = render_proxy_deployment(input);
    let dep_name = dep.metadata.name.clone().unwrap_or_default();
    ensure_pdb(
        client,
        input.namespace,
        &dep_name,
        render_proxy_pdb(input),
        owner,
    )
    .await?;
    ensure_deployment(client, dep, spec_replicas, mounted, owner).await
}

fn outcome(deployments: &[&Option<Deployment>]) -> Outcome {
    if deployments.iter().all(|d| d.is_some()) {
        Outcome::Done
    } else {
        Outcome::RequeueAfter(Duration::from_secs(10))
    }
}

/// One pass over a CompiledRootShard: `<rs>-kcp` and the internal proxy `<rs>-proxy`.
pub async fn reconcile_compiled_root_shard(
    ctx: &super::PassContext<'_>,
    crs: &CompiledRootShard,
) -> Result<Outcome> {
    let client = ctx.client;
    let owner = owner_ref(crs)?;
    let ns = crs.metadata.namespace.clone().unwrap_or_default();
    let mut mounted = Mounted::new(ctx.mounts);
    ensure(client, &render_root_shard_service(crs), Some(&owner)).await?;
    let dep = render_root_shard_deployment(crs);
    let dep_name = dep.metadata.name.clone().unwrap_or_default();
    ensure_pdb(client, &ns, &dep_name, render_root_shard_pdb(crs), &owner).await?;
    let shard = ensure_deployment(
        client,
        dep,
        crs.spec.root_shard.common.replicas,
        &mounted,
        &owner,
    )
    .await?;
    let proxy_replicas = crs.spec.root_shard.proxy.as_ref().and_then(|p| p.replicas);
    let proxy = ensure_proxy(
        client,
        &ProxyInput::internal(crs),
        proxy_replicas,
        &mut mounted,
        &owner,
    )
    .await?;
    let cond = workload_available(client, &ns, &dep_name, shard.as_ref(), crs).await?;
    write_phased(client, crs, std::slice::from_ref(&cond)).await?;
    Ok(outcome(&[&shard, &proxy]))
}

/// One pass over a CompiledShard: `<s>-shard-kcp`.
pub async fn reconcile_compiled_shard(
    ctx: &super::PassContext<'_>,
    cs: &CompiledShard,
) -> Result<Outcome> {
    let client = ctx.client;
    let owner = owner_ref(cs)?;
    let ns = cs.metadata.namespace.clone().unwrap_or_default();
    let mounted = Mounted::new(ctx.mounts);
    ensure(client, &render_shard_service(cs), Some(&owner)).await?;
    let dep = render_shard_deployment(cs);
    let dep_name = dep.metadata.name.clone().unwrap_or_default();
    ensure_pdb(client, &ns, &dep_name, render_shard_pdb(cs), &owner).await?;
    let live =
        ensure_deployment(client, dep, cs.spec.shard.common.replicas, &mounted, &owner).await?;
    let cond = workload_available(client, &ns, &dep_name, live.as_ref(), cs).await?;
    write_phased(client, cs, std::slice::from_ref(&cond)).await?;
    Ok(outcome(&[&live]))
}

/// One pass over a CompiledFrontProxy: `<fp>-front-proxy` and its ConfigMap and Secret.
pub async fn reconcile_compiled_front_proxy(
    ctx: &super::PassContext<'_>,
    cfp: &CompiledFrontProxy,
) -> Result<Outcome> {
    let client = ctx.client;
    let owner = owner_ref(cfp)?;
    let ns = cfp.metadata.namespace.clone().unwrap_or_default();
    let name = cfp.metadata.name.clone().unwrap_or_default();
    let mut mounted = Mounted::new(ctx.mounts);
    let live = ensure_proxy(
        client,
        &ProxyInput::front_proxy(cfp),
        cfp.spec.front_proxy.replicas,
        &mut mounted,
        &owner,
    )
    .await?;
    let dep_name = format!("{name}-front-proxy");
    let cond = workload_available(client, &ns, &dep_name, live.as_ref(), cfp).await?;
    write_phased(client, cfp, std::slice::from_ref(&cond)).await?;
    Ok(outcome(&[&live]))
}

/// One pass over a CompiledCacheServer: `<cs>-cache-server`.
pub async fn reconcile_compiled_cache_server(
    ctx: &super::PassContext<'_>,
    ccs: &CompiledCacheServer,
) -> Result<Outcome> {
    let client = ctx.client;
    let owner = owner_ref(ccs)?;
    let ns = ccs.metadata.namespace.clone().unwrap_or_default();
    let mounted = Mounted::new(ctx.mounts);
    ensure(client, &render_cache_server_service(ccs), Some(&owner)).await?;
    let mut dep = render_cache_server_deployment(ccs);
    let dep_name = dep.metadata.name.clone().unwrap_or_default();
    let existing: Option<Deployment> = client
        .get_typed(Some(&ns), &dep_name)
        .await
        .map_err(core("reading the cache Deployment"))?;
    let live_replicas = existing.and_then(|d| d.spec).and_then(|s| s.replicas);
    if let Some(spec) = dep.spec.as_mut() {
        spec.replicas = Some(cache_server_replicas(ccs, live_replicas));
    }
    ensure_pdb(client, &ns, &dep_name, render_cache_server_pdb(ccs), &owner).await?;
    let live = ensure_deployment(client, dep, Some(0), &mounted, &owner).await?;
    let cond = workload_available(client, &ns, &dep_name, live.as_ref(), ccs).await?;
    write_phased(client, ccs, std::slice::from_ref(&cond)).await?;
    Ok(outcome(&[&live]))
}
