//! The config group: RootShard, Shard, FrontProxy and CacheServer -> cert-manager Issuers
//! and Certificates, kubeconfig and merged-CA Secrets, and the Compiled* object (written once
//! every Certificate of the pass is ready), then the source's status.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, OwnerReference};
use kcp_core::ObjectClient;
use kcp_core::ObjectClientExt as _;
use kcp_core::client::ListOptions;
use kcp_core::runtime::conditions::ConditionUpdate;
use kcp_core::runtime::{Outcome, write_status};

use super::ensure::ensure;
use super::phased::{compiled_available, write_deleting, write_phased};
use super::{
    CertificateState, PassContext, core, describe, ensure_certificates, ensure_merged_bundle,
    owner_ref, require_secrets, set_conditions,
};
use crate::api::*;
use crate::error::{Error, Result};
use crate::render::compiled::*;
use crate::render::kubeconfig::*;
use crate::render::names::{self, ROOT_SHARD_LABEL};
use crate::render::pki::{self, IntermediateCa, ProxyLeaf, ShardLeaf};
use crate::render::{labels, name_ns};
use crate::{status, validate};

/// The names of the Shards of root shard `rs` in `namespace`, sorted (from the Shard
/// controller's store when the pass has one, see [`PassContext::shards`]).
pub async fn shard_names(ctx: &PassContext<'_>, namespace: &str, rs: &str) -> Result<Vec<String>> {
    if let Some(store) = ctx.shards {
        return Ok(super::cached::shard_names_in(store, namespace, rs));
    }
    let shards: Vec<Shard> = ctx
        .client
        .list_typed(Some(namespace), &ListOptions::default())
        .await
        .map_err(core(format!("listing Shards in {namespace}")))?;
    let mut names: Vec<String> = shards
        .iter()
        .filter(|s| s.spec.root_shard.name() == Some(rs))
        .filter_map(|s| s.metadata.name.clone())
        .collect();
    names.sort();
    Ok(names)
}

/// The VirtualWorkspace a shard names in `kcpVirtualWorkspace`.
async fn kcp_virtual_workspace(
    client: &dyn ObjectClient,
    object: &str,
    namespace: &str,
    common: &CommonShardSpec,
) -> Result<Option<NamedVirtualWorkspaceSpec>> {
    let Some(reference) = &common.kcp_virtual_workspace else {
        return Ok(None);
    };
    let vw: Option<VirtualWorkspace> = client
        .get_typed(Some(namespace), &reference.name)
        .await
        .map_err(core(format!(
            "reading VirtualWorkspace {namespace}/{}",
            reference.name
        )))?;
    match vw {
        Some(vw) => Ok(Some(NamedVirtualWorkspaceSpec {
            name: reference.name.clone(),
            spec: vw.spec,
        })),
        None => Err(Error::MissingReference {
            object: object.to_owned(),
            field: "spec.kcpVirtualWorkspace".into(),
            target: format!("VirtualWorkspace {namespace}/{}", reference.name),
        }),
    }
}

/// The outcome of a pass whose Certificates are not all ready, or whose merged CA bundles
/// miss a source Secret: look again shortly (the Certificates' owner watch also wakes the
/// controller once they are all ready, but a source Secret appearing wakes nobody).
fn waiting(state: &CertificateState, bundles: bool) -> Outcome {
    if state.all_ready && bundles {
        Outcome::Done
    } else {
        Outcome::RequeueAfter(std::time::Duration::from_secs(5))
    }
}

fn bundle_sources(
    first: String,
    refs: &[Option<&k8s_openapi::api::core::v1::LocalObjectReference>],
) -> Vec<String> {
    std::iter::once(first)
        .chain(refs.iter().flatten().map(|r| r.name.clone()))
        .collect()
}

async fn ensure_issuers_and_kubeconfigs(
    client: &dyn ObjectClient,
    rs: &RootShard,
    owner: &OwnerReference,
) -> Result<()> {
    let (_, issuers) = pki::render_root_shard_pki(rs);
    for issuer in &issuers {
        ensure(client, issuer, Some(owner)).await?;
    }
    for which in [
        AdminKubeconfig::LogicalClusterAdmin,
        AdminKubeconfig::ExternalLogicalClusterAdmin,
    ] {
        ensure(
            client,
            &render_root_shard_kubeconfig_secret(rs, which)?,
            Some(owner),
        )
        .await?;
    }
    Ok(())
}

/// Merged bundles of a root shard and its internal proxy; `false` while a source is missing.
async fn ensure_root_shard_bundles(
    client: &dyn ObjectClient,
    rs: &RootShard,
    owner: &OwnerReference,
) -> Result<bool> {
    let (name, ns) = name_ns(&rs.metadata);
    let common = &rs.spec.common;
    let server_ca = IntermediateCa::Server.name(name);
    let client_ca = IntermediateCa::Client.name(name);
    let lbl = labels(&[(ROOT_SHARD_LABEL, name)]);
    let mut complete = true;
    let client_sources = bundle_sources(client_ca, &[common.client_ca_bundle_ref.as_ref()]);
    if common.client_ca_bundle_ref.is_some() {
        complete &= ensure_merged_bundle(
            client,
            ns,
            &format!("{name}-merged-client-ca"),
            lbl.clone(),
            &client_sources,
            owner,
        )
        .await?;
    }
    complete &= ensure_merged_bundle(
        client,
        ns,
        &format!("{name}-proxy-merged-client-ca"),
        lbl.clone(),
        &client_sources,
        owner,
    )
    .await?;
    if let Some(bundle) = &common.ca_bundle_secret_ref {
        let sources = vec![server_ca, bundle.name.clone()];
        complete &= ensure_merged_bundle(
            client,
            ns,
            &format!("{name}-merged-ca-bundle"),
            lbl.clone(),
            &sources,
            owner,
        )
        .await?;
        complete &= ensure_merged_bundle(
            client,
            ns,
            &format!("{name}-proxy-merged-ca-bundle"),
            lbl,
            &sources,
            owner,
        )
        .await?;
    }
    Ok(complete)
}

/// One pass over a RootShard (spec section 5.1).
pub async fn reconcile_root_shard(ctx: &PassContext<'_>, rs: &RootShard) -> Result<Outcome> {
    let client = ctx.client;
    if write_deleting(client, rs).await?.is_some() {
        return Ok(Outcome::Done);
    }
    let (name, ns) = name_ns(&rs.metadata);
    let object = describe(rs);
    validate::root_shard(&object, &rs.spec)?;
    require_user_secrets(client, &object, ns, &rs.spec.common).await?;
    let vw = kcp_virtual_workspace(client, &object, ns, &rs.spec.common).await?;
    let owner = owner_ref(rs)?;
    let (mut certs, _) = pki::render_root_shard_pki(rs);
    certs.extend(
        ProxyLeaf::ALL
            .iter()
            .map(|leaf| pki::render_proxy_certificate(rs, None, *leaf)),
    );
    let state = ensure_certificates(client, &certs, &owner).await?;
    ensure_issuers_and_kubeconfigs(client, rs, &owner).await?;
    let bundles = ensure_root_shard_bundles(client, rs, &owner).await?;
    let shards = shard_names(ctx, ns, name).await?;
    if state.all_ready && bundles {
        let compiled = render_compiled_root_shard(rs, vw, shards.clone(), &state.revisions);
        ensure(client, &compiled, Some(&owner)).await?;
    }
    let available = compiled_available::<CompiledRootShard>(client, ns, name).await?;
    let generation = rs.metadata.generation;
    write_status::<RootShard, _>(client, Some(ns), name, |obj| {
        let s = obj.status.get_or_insert_with(Default::default);
        apply_status(
            &mut s.conditions,
            &mut s.phase,
            &mut s.observed_generation,
            std::slice::from_ref(&available),
            generation,
            false,
        );
        s.shards = shards
            .iter()
            .map(|n| ShardReference { name: n.clone() })
            .collect();
    })
    .await
    .map_err(core(format!("writing the status of {}", describe(rs))))?;
    Ok(waiting(&state, bundles))
}

/// Sets conditions, the summary `Ready`, the phase and `observedGeneration`.
pub(crate) fn apply_status(
    conditions: &mut Vec<Condition>,
    phase: &mut String,
    observed: &mut Option<i64>,
    updates: &[ConditionUpdate],
    generation: Option<i64>,
    deleting: bool,
) {
    // A `Ready` among the updates (a pass that stopped, saying why) is kept as it is.
    let (explicit, mut all): (Vec<ConditionUpdate>, Vec<ConditionUpdate>) = updates
        .iter()
        .cloned()
        .partition(|u| u.type_ == CONDITION_READY);
    let refs: Vec<&ConditionUpdate> = all.iter().collect();
    let ready = explicit
        .into_iter()
        .next()
        .unwrap_or_else(|| status::ready(&refs));
    let available = all
        .iter()
        .find(|u| u.type_ == CONDITION_AVAILABLE)
        .is_none_or(|u| u.status == kcp_core::runtime::ConditionStatus::True);
    all.push(ready);
    set_conditions(conditions, &all, generation);
    *phase = status::phase(deleting, available).to_owned();
    *observed = generation;
}

/// The Secrets a RootShard or Shard names (etcd client certificate, CA bundles), required
/// before a pass writes.
async fn require_user_secrets(
    client: &dyn ObjectClient,
    object: &str,
    ns: &str,
    common: &CommonShardSpec,
) -> Result<()> {
    let etcd = common.etcd.tls_config.as_ref().map(|t| &t.secret_ref);
    let refs = [
        ("spec.etcd.tlsConfig.secretRef", etcd),
        (
            "spec.caBundleSecretRef",
            common.ca_bundle_secret_ref.as_ref(),
        ),
        (
            "spec.clientCABundleRef",
            common.client_ca_bundle_ref.as_ref(),
        ),
    ];
    require_secrets(client, object, ns, &refs).await
}

/// Looks up the RootShard of a Shard or FrontProxy (`object`), and the `RootShard` condition.
async fn root_shard_of(
    client: &dyn ObjectClient,
    object: &str,
    namespace: &str,
    config: &RootShardConfig,
) -> Result<(Option<RootShard>, ConditionUpdate)> {
    let Some(rs_name) = config.name() else {
        let c = ConditionUpdate::new(CONDITION_ROOT_SHARD, false, "InvalidReference")
            .message("spec.rootShard.ref is not set.");
        return Ok((None, c));
    };
    let rs: Option<RootShard> = client
        .get_typed(Some(namespace), rs_name)
        .await
        .map_err(core(format!("reading RootShard {namespace}/{rs_name}")))?;
    let c = match &rs {
        Some(_) => ConditionUpdate::new(CONDITION_ROOT_SHARD, true, "Valid")
            .message("RootShard reference is valid."),
        None => {
            let missing = Error::MissingReference {
                object: object.to_owned(),
                field: "spec.rootShard.ref".into(),
                target: format!("RootShard {namespace}/{rs_name}"),
            };
            ConditionUpdate::new(CONDITION_ROOT_SHARD, false, "InvalidReference")
                .message(format!("{missing}."))
        }
    };
    Ok((rs, c))
}

/// One pass over a Shard (spec section 5.3); `ctx.addresser` reaches the root shard to remove the
/// kcp Shard when the Shard is deleted.
pub async fn reconcile_shard(ctx: &PassContext<'_>, shard: &Shard) -> Result<Outcome> {
    let (client, addresser) = (ctx.client, ctx.addresser);
    if let Some(deleting) = write_deleting(client, shard).await? {
        super::cleanup::shard_finalizer(client, addresser, &deleting).await?;
        return Ok(Outcome::Done);
    }
    super::cleanup::shard_finalizer(client, addresser, shard).await?;
    let (name, ns) = name_ns(&shard.metadata);
    let object = describe(shard);
    validate::shard(&object, &shard.spec)?;
    require_user_secrets(client, &object, ns, &shard.spec.common).await?;
    let (rs, rs_condition) = root_shard_of(client, &object, ns, &shard.spec.root_shard).await?;
    let mut outcome = Outcome::Done;
    if let Some(rs) = &rs {
        outcome = shard_children(ctx, shard, rs).await?;
    }
    let available = compiled_available::<CompiledShard>(client, ns, name).await?;
    write_phased(client, shard, &[rs_condition.clone(), available.clone()]).await?;
    Ok(outcome)
}

async fn shard_children(ctx: &PassContext<'_>, shard: &Shard, rs: &RootShard) -> Result<Outcome> {
    let client = ctx.client;
    let ns = shard.metadata.namespace.clone().unwrap_or_default();
    let common = &shard.spec.common;
    let vw = kcp_virtual_workspace(client, &describe(shard), &ns, common).await?;
    let owner = owner_ref(shard)?;
    let rs_name = rs.metadata.name.clone().unwrap_or_default();
    let certs: Vec<_> = ShardLeaf::ALL
        .iter()
        .map(|l| pki::render_shard_certificate(shard, &rs_name, *l))
        .collect();
    let state = ensure_certificates(client, &certs, &owner).await?;
    for which in [
        ShardKubeconfig::Client,
        ShardKubeconfig::LogicalClusterAdmin,
        ShardKubeconfig::ExternalLogicalClusterAdmin,
    ] {
        ensure(
            client,
            &render_shard_kubeconfig_secret(shard, rs, which)?,
            Some(&owner),
        )
        .await?;
    }
    let bundles = ensure_shard_bundles(client, shard, rs, &owner).await?;
    if state.all_ready && bundles {
        let shards = shard_names(ctx, &ns, &rs_name).await?;
        ensure(
            client,
            &render_compiled_shard(shard, rs, vw, shards, &state.revisions),
            Some(&owner),
        )
        .await?;
    }
    Ok(waiting(&state, bundles))
}

/// Merged bundles of a shard; `false` while a source is missing.
async fn ensure_shard_bundles(
    client: &dyn ObjectClient,
    shard: &Shard,
    rs: &RootShard,
    owner: &OwnerReference,
) -> Result<bool> {
    let (name, ns) = name_ns(&shard.metadata);
    let rs_name = rs.metadata.name.clone().unwrap_or_default();
    let common = &shard.spec.common;
    let lbl = labels(&[(ROOT_SHARD_LABEL, &rs_name), (names::SHARD_LABEL, name)]);
    let mut bundles = true;
    if rs.spec.common.client_ca_bundle_ref.is_some() || common.client_ca_bundle_ref.is_some() {
        let sources = bundle_sources(
            IntermediateCa::Client.name(&rs_name),
            &[
                rs.spec.common.client_ca_bundle_ref.as_ref(),
                common.client_ca_bundle_ref.as_ref(),
            ],
        );
        bundles &= ensure_merged_bundle(
            client,
            ns,
            &format!("{name}-merged-client-ca"),
            lbl.clone(),
            &sources,
            owner,
        )
        .await?;
    }
    if let Some(bundle) = &common.ca_bundle_secret_ref {
        // The server CA, not the shard's own serving certificate (spec section 9 item 3).
        let sources = vec![IntermediateCa::Server.name(&rs_name), bundle.name.clone()];
        bundles &= ensure_merged_bundle(
            client,
            ns,
            &format!("{name}-merged-ca-bundle"),
            lbl,
            &sources,
            owner,
        )
        .await?;
    }
    Ok(bundles)
}

/// One pass over a FrontProxy (spec section 5.4).
pub async fn reconcile_front_proxy(ctx: &PassContext<'_>, fp: &FrontProxy) -> Result<Outcome> {
    let client = ctx.client;
    if write_deleting(client, fp).await?.is_some() {
        return Ok(Outcome::Done);
    }
    let (name, ns) = name_ns(&fp.metadata);
    let object = describe(fp);
    validate::front_proxy(&object, &fp.spec)?;
    let refs = [
        (
            "spec.caBundleSecretRef",
            fp.spec.ca_bundle_secret_ref.as_ref(),
        ),
        (
            "spec.clientCABundleRef",
            fp.spec.client_ca_bundle_ref.as_ref(),
        ),
    ];
    require_secrets(client, &object, ns, &refs).await?;
    let (rs, rs_condition) = root_shard_of(client, &object, ns, &fp.spec.root_shard).await?;
    let mut outcome = Outcome::Done;
    if let Some(rs) = &rs {
        outcome = front_proxy_children(ctx, fp, rs).await?;
    }
    let available = compiled_available::<CompiledFrontProxy>(client, ns, name).await?;
    write_phased(client, fp, &[rs_condition.clone(), available.clone()]).await?;
    Ok(outcome)
}

async fn front_proxy_children(
    ctx: &PassContext<'_>,
    fp: &FrontProxy,
    rs: &RootShard,
) -> Result<Outcome> {
    let client = ctx.client;
    let owner = owner_ref(fp)?;
    let (name, ns) = name_ns(&fp.metadata);
    let rs_name = rs.metadata.name.clone().unwrap_or_default();
    let shards = shard_names(ctx, ns, &rs_name).await?;
    let lbl = labels(&[
        (ROOT_SHARD_LABEL, &rs_name),
        (names::FRONT_PROXY_LABEL, name),
    ]);
    let sources = bundle_sources(
        IntermediateCa::Client.name(&rs_name),
        &[
            rs.spec.common.client_ca_bundle_ref.as_ref(),
            fp.spec.client_ca_bundle_ref.as_ref(),
        ],
    );
    let mut bundles = ensure_merged_bundle(
        client,
        ns,
        &format!("{name}-merged-client-ca"),
        lbl.clone(),
        &sources,
        &owner,
    )
    .await?;
    if let Some(bundle) = &fp.spec.ca_bundle_secret_ref {
        let sources = vec![IntermediateCa::Server.name(&rs_name), bundle.name.clone()];
        bundles &= ensure_merged_bundle(
            client,
            ns,
            &format!("{name}-merged-ca-bundle"),
            lbl,
            &sources,
            &owner,
        )
        .await?;
    }
    let certs: Vec<_> = ProxyLeaf::ALL
        .iter()
        .map(|l| pki::render_proxy_certificate(rs, Some(fp), *l))
        .collect();
    let state = ensure_certificates(client, &certs, &owner).await?;
    if state.all_ready && bundles {
        ensure(
            client,
            &render_compiled_front_proxy(fp, rs, shards, &state.revisions),
            Some(&owner),
        )
        .await?;
    }
    Ok(waiting(&state, bundles))
}

/// One pass over a CacheServer (spec section 5.6); unlike upstream it reports a status.
pub async fn reconcile_cache_server(ctx: &PassContext<'_>, cs: &CacheServer) -> Result<Outcome> {
    let client = ctx.client;
    if write_deleting(client, cs).await?.is_some() {
        return Ok(Outcome::Done);
    }
    let (name, ns) = name_ns(&cs.metadata);
    let object = describe(cs);
    validate::cache_server(&object, &cs.spec)?;
    let etcd = cs.spec.etcd.as_ref().and_then(|e| e.tls_config.as_ref());
    let refs = [("spec.etcd.tlsConfig.secretRef", etcd.map(|t| &t.secret_ref))];
    require_secrets(client, &object, ns, &refs).await?;
    let owner = owner_ref(cs)?;
    let mut certs: Vec<_> = pki::render_cache_server_ca_certificate(cs)
        .into_iter()
        .collect();
    certs.push(pki::render_cache_server_certificate(cs, true));
    certs.push(pki::render_cache_server_certificate(cs, false));
    let state = ensure_certificates(client, &certs, &owner).await?;
    ensure(client, &pki::render_cache_server_issuer(cs), Some(&owner)).await?;
    ensure(
        client,
        &render_cache_server_kubeconfig_secret(cs)?,
        Some(&owner),
    )
    .await?;
    if state.all_ready {
        ensure(
            client,
            &render_compiled_cache_server(cs, &state.revisions),
            Some(&owner),
        )
        .await?;
    }
    let available = compiled_available::<CompiledCacheServer>(client, ns, name).await?;
    write_phased(client, cs, std::slice::from_ref(&available)).await?;
    Ok(waiting(&state, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ready_among_the_updates_is_kept_and_otherwise_ready_is_computed() {
        let (mut conditions, mut phase, mut observed) = (Vec::new(), String::new(), None);
        let reference = ConditionUpdate::new(CONDITION_REFERENCE_VALID, false, "ReferenceNotFound")
            .message("the target does not exist");
        let stopped = status::stopped("ReferenceNotFound", "Kubeconfig kcp/a: spec.target ...");
        let updates = [reference.clone(), stopped];
        apply_status(
            &mut conditions,
            &mut phase,
            &mut observed,
            &updates,
            Some(2),
            false,
        );
        let ready = |c: &[Condition]| {
            let r = c.iter().find(|c| c.type_ == CONDITION_READY).unwrap();
            (r.status.clone(), r.message.clone())
        };
        assert_eq!(
            ready(&conditions),
            ("False".into(), "Kubeconfig kcp/a: spec.target ...".into())
        );
        assert_eq!(conditions.len(), 2);

        apply_status(
            &mut conditions,
            &mut phase,
            &mut observed,
            &[reference],
            Some(2),
            false,
        );
        assert_eq!(
            ready(&conditions),
            (
                "False".into(),
                "ReferenceValid: the target does not exist".into()
            )
        );
    }
}
