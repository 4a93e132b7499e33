//! The VirtualWorkspace controllers (spec section 5.7): the config pass (target lookup,
//! `<vw>-client` and `<vw>-server` Certificates, the merged client CA, the
//! CompiledVirtualWorkspace) and the workload pass (Deployment and Service
//! `<vw>-virtual-workspace`).

use std::collections::BTreeMap;

use kcp_core::ObjectClient;
use kcp_core::ObjectClientExt as _;
use kcp_core::runtime::Outcome;
use kcp_core::runtime::conditions::ConditionUpdate;

use super::ensure::ensure;
use super::mounted::Mounted;
use super::pdb::ensure_pdb;
use super::phased::{compiled_available, write_phased};
use super::required::workload_available;
use super::workload::ensure_deployment;
use super::{core, ensure_certificates, ensure_merged_bundle, owner_ref};
use crate::api::*;
use crate::error::{Error, Result};
use crate::render::compiled::render_compiled_virtual_workspace;
use crate::render::names::{ROOT_SHARD_LABEL, VIRTUAL_WORKSPACE_LABEL};
use crate::render::pdb::render_virtual_workspace_pdb;
use crate::render::pki::{IntermediateCa, render_virtual_workspace_certificate};
use crate::render::virtualworkspace::{
    render_virtual_workspace_deployment, render_virtual_workspace_service,
};
use crate::validate;

/// The RootShard and (for a shard target) the Shard of a VirtualWorkspace.
async fn target(
    client: &dyn ObjectClient,
    ns: &str,
    vw: &VirtualWorkspace,
) -> Result<Option<(RootShard, Option<Shard>)>> {
    let get_rs = |name: String| async move {
        client
            .get_typed::<RootShard>(Some(ns), &name)
            .await
            .map_err(core(format!("reading RootShard {ns}/{name}")))
    };
    if let Some(r) = &vw.spec.target.root_shard_ref {
        return Ok(get_rs(r.name.clone()).await?.map(|rs| (rs, None)));
    }
    let Some(r) = &vw.spec.target.shard_ref else {
        return Ok(None);
    };
    let shard: Option<Shard> = client
        .get_typed(Some(ns), &r.name)
        .await
        .map_err(core(format!("reading Shard {ns}/{}", r.name)))?;
    let Some(shard) = shard else { return Ok(None) };
    let Some(rs_name) = shard.spec.root_shard.name().map(str::to_owned) else {
        return Ok(None);
    };
    Ok(get_rs(rs_name).await?.map(|rs| (rs, Some(shard))))
}

/// The error naming a VirtualWorkspace's target that does not exist (its Shard, or the
/// RootShard it or its Shard names).
fn missing_target(object: &str, ns: &str, vw: &VirtualWorkspace) -> Error {
    let (field, target) = match (&vw.spec.target.root_shard_ref, &vw.spec.target.shard_ref) {
        (Some(r), _) => (
            "spec.target.rootShardRef",
            format!("RootShard {ns}/{}", r.name),
        ),
        (None, Some(r)) => ("spec.target.shardRef", format!("Shard {ns}/{}", r.name)),
        (None, None) => ("spec.target", "a target".to_owned()),
    };
    Error::MissingReference {
        object: object.to_owned(),
        field: field.to_owned(),
        target,
    }
}

/// One config pass over a VirtualWorkspace.
pub async fn reconcile_virtual_workspace(
    ctx: &super::PassContext<'_>,
    vw: &VirtualWorkspace,
) -> Result<Outcome> {
    let client = ctx.client;
    if super::phased::write_deleting(client, vw).await?.is_some() {
        return Ok(Outcome::Done);
    }
    let ns = vw.metadata.namespace.clone().unwrap_or_default();
    let name = vw.metadata.name.clone().unwrap_or_default();
    let object = super::describe(vw);
    validate::virtual_workspace(&object, &vw.spec)?;
    let refs = [(
        "spec.clientCABundleRef",
        vw.spec.client_ca_bundle_ref.as_ref(),
    )];
    super::require_secrets(client, &object, &ns, &refs).await?;
    let resolved = target(client, &ns, vw).await?;
    let mut outcome = Outcome::Done;
    let reference = match &resolved {
        None => ConditionUpdate::new(CONDITION_REFERENCE_VALID, false, "ReferenceNotFound")
            .message(format!("{}.", missing_target(&object, &ns, vw))),
        Some((rs, shard)) => {
            outcome = children(client, vw, rs, shard.as_ref()).await?;
            ConditionUpdate::new(CONDITION_REFERENCE_VALID, true, "ReferenceValid")
                .message("The target exists.")
        }
    };
    let available = compiled_available::<CompiledVirtualWorkspace>(client, &ns, &name).await?;
    write_phased(client, vw, &[reference.clone(), available.clone()]).await?;
    Ok(outcome)
}

async fn children(
    client: &dyn ObjectClient,
    vw: &VirtualWorkspace,
    rs: &RootShard,
    shard: Option<&Shard>,
) -> Result<Outcome> {
    let owner = owner_ref(vw)?;
    let ns = vw.metadata.namespace.clone().unwrap_or_default();
    let name = vw.metadata.name.clone().unwrap_or_default();
    let rs_name = rs.metadata.name.clone().unwrap_or_default();
    let certs = [
        render_virtual_workspace_certificate(vw, &rs_name, false),
        render_virtual_workspace_certificate(vw, &rs_name, true),
    ];
    let state = ensure_certificates(client, &certs, &owner).await?;
    let mut bundles = true;
    if rs.spec.common.client_ca_bundle_ref.is_some() || vw.spec.client_ca_bundle_ref.is_some() {
        let sources: Vec<String> = std::iter::once(IntermediateCa::Client.name(&rs_name))
            .chain(
                [
                    &rs.spec.common.client_ca_bundle_ref,
                    &vw.spec.client_ca_bundle_ref,
                ]
                .into_iter()
                .flatten()
                .map(|r| r.name.clone()),
            )
            .collect();
        let labels = BTreeMap::from([
            (ROOT_SHARD_LABEL.to_owned(), rs_name.clone()),
            (VIRTUAL_WORKSPACE_LABEL.to_owned(), name.clone()),
        ]);
        bundles = ensure_merged_bundle(
            client,
            &ns,
            &format!("{name}-merged-client-ca"),
            labels,
            &sources,
            &owner,
        )
        .await?;
    }
    if !(state.all_ready && bundles) {
        return Ok(Outcome::RequeueAfter(std::time::Duration::from_secs(5)));
    }
    ensure(
        client,
        &render_compiled_virtual_workspace(vw, rs, shard, &state.revisions),
        Some(&owner),
    )
    .await?;
    Ok(Outcome::Done)
}

/// One workload pass over a CompiledVirtualWorkspace.
pub async fn reconcile_compiled_virtual_workspace(
    ctx: &super::PassContext<'_>,
    cvw: &CompiledVirtualWorkspace,
) -> Result<Outcome> {
    let client = ctx.client;
    let owner = owner_ref(cvw)?;
    let ns = cvw.metadata.namespace.clone().unwrap_or_default();
    let mounted = Mounted::new(ctx.mounts);
    ensure(client, &render_virtual_workspace_service(cvw), Some(&owner)).await?;
    let dep = render_virtual_workspace_deployment(cvw);
    let dep_name = dep.metadata.name.clone().unwrap_or_default();
    let pdb = render_virtual_workspace_pdb(cvw);
    ensure_pdb(client, &ns, &dep_name, pdb, &owner).await?;
    let live = ensure_deployment(
        client,
        dep,
        cvw.spec.virtual_workspace.replicas,
        &mounted,
        &owner,
    )
    .await?;
    let cond = workload_available(client, &ns, &dep_name, live.as_ref(), cvw).await?;
    write_phased(client, cvw, std::slice::from_ref(&cond)).await?;
    Ok(if live.is_some() {
        Outcome::Done
    } else {
        Outcome::RequeueAfter(std::time::Duration::from_secs(10))
    })
}
