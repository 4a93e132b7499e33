//! What the operator does inside kcp, behind finalizers: a Shard's registration (the kcp
//! `core.kcp.io/v1alpha1` Shard object on the root shard, deleted with the Shard CR,
//! `operator.kcp.io/cleanup-shard`) and a Kubeconfig's ClusterRoleBindings in its target
//! workspace (`operator.kcp.io/cleanup-rbac`).
//!
//! Neither finalizer can hold its object forever: when the kcp side is gone (the RootShard or
//! the Kubeconfig's target deleted, or being deleted) the finalizer is dropped without cleanup,
//! since there is nothing left to clean (upstream's Kubeconfig finalizer gets stuck then and
//! keeps the namespace Terminating, spec section 9 item 12).

use std::collections::BTreeMap;

use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleRef, Subject};
use kcp_core::client::{DeleteOptions, ListOptions, ObjectRef};
use kcp_core::kube::api::GroupVersionKind;
use kcp_core::runtime::finalizer::{Finalized, add_finalizer, has_finalizer, remove_finalizer};
use kcp_core::{ObjectClient, ObjectClientExt as _};
use kube::Resource;

use super::ensure::ensure;
use super::{core, describe};
use crate::addresser::{Addresser, Endpoint};
use crate::api::*;
use crate::error::Result;
use crate::render::names::KUBECONFIG_LABEL;
use crate::render::pki::kubeconfig_group;

async fn add<K: Finalized + Resource<DynamicType = ()>>(
    client: &dyn ObjectClient,
    obj: &K,
    finalizer: &str,
) -> Result<()> {
    add_finalizer(client, obj, finalizer)
        .await
        .map_err(core(format!("adding {finalizer} to {}", describe(obj))))?;
    Ok(())
}

async fn remove<K: Finalized + Resource<DynamicType = ()>>(
    client: &dyn ObjectClient,
    obj: &K,
    finalizer: &str,
) -> Result<()> {
    remove_finalizer(client, obj, finalizer)
        .await
        .map_err(core(format!("removing {finalizer} from {}", describe(obj))))?;
    Ok(())
}

/// The Shard finalizer: added to a live Shard; on deletion the kcp Shard `<s>` is deleted on
/// the root shard (already gone is fine), then the finalizer removed. Returns whether the
/// Shard is being deleted (the pass ends then).
pub async fn shard_finalizer(
    client: &dyn ObjectClient,
    addresser: &dyn Addresser,
    shard: &Shard,
) -> Result<bool> {
    if shard.metadata.deletion_timestamp.is_none() {
        if !has_finalizer(shard, FINALIZER_CLEANUP_SHARD) {
            add(client, shard, FINALIZER_CLEANUP_SHARD).await?;
        }
        return Ok(false);
    }
    if !has_finalizer(shard, FINALIZER_CLEANUP_SHARD) {
        return Ok(true);
    }
    let ns = shard.metadata.namespace.as_deref().unwrap_or_default();
    let rs: Option<RootShard> = match shard.spec.root_shard.name() {
        Some(n) => client
            .get_typed(Some(ns), n)
            .await
            .map_err(core(format!("reading RootShard {ns}/{n}")))?,
        None => None,
    };
    if let Some(rs) = rs.filter(|r| r.metadata.deletion_timestamp.is_none()) {
        let kcp = addresser
            .client(client, &rs, Endpoint::RootShard, "root")
            .await?;
        let gvk = GroupVersionKind::gvk("core.kcp.io", "v1alpha1", "Shard");
        let name = shard.metadata.name.clone().unwrap_or_default();
        let target = ObjectRef::cluster_scoped(gvk, &name);
        match kcp.delete(&target, &DeleteOptions::default()).await {
            Ok(_) => {}
            Err(err)
                if err.is_not_found() || matches!(err, kcp_core::Error::KindNotServed { .. }) => {}
            Err(err) => return Err(core(format!("deleting the kcp Shard {name}"))(err)),
        }
    }
    remove(client, shard, FINALIZER_CLEANUP_SHARD).await?;
    Ok(true)
}

/// Where a Kubeconfig's grants are made: the client to its target endpoint in `workspace`.
pub struct RbacTarget<'a> {
    /// The RootShard of the target.
    pub root_shard: &'a RootShard,
    /// The endpoint.
    pub endpoint: Endpoint<'a>,
}

fn uid(kc: &Kubeconfig) -> String {
    kc.metadata.uid.clone().unwrap_or_default()
}

async fn bindings(kcp: &dyn ObjectClient, kc: &Kubeconfig) -> Result<Vec<ClusterRoleBinding>> {
    kcp.list_typed(
        None,
        &ListOptions::labels(format!("{KUBECONFIG_LABEL}={}", uid(kc))),
    )
    .await
    .map_err(core(format!(
        "listing the ClusterRoleBindings of {}",
        describe(kc)
    )))
}

async fn delete_binding(kcp: &dyn ObjectClient, binding: &ClusterRoleBinding) -> Result<()> {
    let name = binding.metadata.name.clone().unwrap_or_default();
    let target = kcp_core::typed::object_ref_for::<ClusterRoleBinding>(None, &name);
    match kcp.delete(&target, &DeleteOptions::default()).await {
        Ok(_) => Ok(()),
        Err(err) if err.is_not_found() => Ok(()),
        Err(err) => Err(core(format!("deleting ClusterRoleBinding {name}"))(err)),
    }
}

/// The binding `<uid>:<role>` of ClusterRole `role` to the group `kubeconfig:<kc>`.
pub fn render_cluster_role_binding(kc: &Kubeconfig, role: &str) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: kube::api::ObjectMeta {
            name: Some(format!("{}:{role}", uid(kc))),
            labels: Some(BTreeMap::from([(KUBECONFIG_LABEL.to_owned(), uid(kc))])),
            ..Default::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: role.to_owned(),
        },
        subjects: Some(vec![Subject {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "Group".into(),
            name: kubeconfig_group(kc),
            namespace: None,
        }]),
    }
}

/// Brings the Kubeconfig's grants in line and returns the workspace they now live in
/// (`status.authorization.provisionedCluster`). `target` is `None` when the target is gone:
/// while the Kubeconfig lives that may be momentary (a FrontProxy recreated), so the finalizer
/// and the grants stay; once it is deleted there is nothing left to reach them through, and
/// the finalizer goes rather than hold the object forever.
pub async fn kubeconfig_rbac(
    client: &dyn ObjectClient,
    addresser: &dyn Addresser,
    kc: &Kubeconfig,
    target: Option<RbacTarget<'_>>,
) -> Result<Option<String>> {
    let deleting = kc.metadata.deletion_timestamp.is_some();
    let desired = (!deleting && kc.spec.authorization.is_some())
        .then(|| kc.rbac_target_workspace().to_owned());
    let provisioned = kc
        .status
        .as_ref()
        .and_then(|s| s.authorization.as_ref())
        .map(|a| a.provisioned_cluster.clone());
    let Some(target) = target else {
        if deleting {
            remove(client, kc, FINALIZER_CLEANUP_RBAC).await?;
            return Ok(None);
        }
        return Ok(provisioned);
    };
    if let Some(old) = provisioned
        .as_ref()
        .filter(|old| Some(*old) != desired.as_ref())
    {
        let kcp = addresser
            .client(client, target.root_shard, target.endpoint, old)
            .await?;
        for binding in bindings(kcp.as_ref(), kc).await? {
            delete_binding(kcp.as_ref(), &binding).await?;
        }
    }
    let Some(workspace) = desired else {
        remove(client, kc, FINALIZER_CLEANUP_RBAC).await?;
        return Ok(None);
    };
    add(client, kc, FINALIZER_CLEANUP_RBAC).await?;
    let kcp = addresser
        .client(client, target.root_shard, target.endpoint, &workspace)
        .await?;
    let roles: Vec<String> = kc
        .spec
        .authorization
        .iter()
        .flat_map(|a| a.cluster_role_bindings.cluster_roles.clone())
        .collect();
    for binding in bindings(kcp.as_ref(), kc).await? {
        if !roles.contains(&binding.role_ref.name) {
            delete_binding(kcp.as_ref(), &binding).await?;
        }
    }
    for role in &roles {
        ensure(kcp.as_ref(), &render_cluster_role_binding(kc, role), None).await?;
    }
    Ok(Some(workspace))
}
