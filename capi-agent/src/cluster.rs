//! The AgentCluster reconciler (spec 1.5, with the corrections of section 5).
//!
//! Flow: finalizer (the dot-less upstream name); pause (the annotation *or*
//! `Cluster.spec.paused`: orphan the ClusterDeployment, condition `Paused`); backup label;
//! ClusterDeployment found by label or created, and its reference recorded only *after* the
//! create succeeded (upstream records it first and can dangle forever); a dangling reference
//! goes back to "create"; the AgentClusterInstall created, and its ignition endpoint kept in line
//! with the AgentCluster; ready once the control-plane endpoint is known, with both contracts'
//! fields (`status.ready`, `status.initialization.provisioned`) and the conditions
//! `ClusterDeploymentReady`, `AgentClusterInstallReady`, `ControlPlaneEndpointReady`, `Ready`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;
use kcp_core::capi;
use kcp_core::runtime::conditions::now;
use kcp_core::runtime::finalizer::{add_finalizer, remove_finalizer};
use kcp_core::runtime::{ConditionStatus, ConditionUpdate, Outcome, set_condition, write_status};
use kcp_core::typed::{from_dynamic, object_ref_for, to_dynamic};
use kcp_core::{ListOptions, ObjectClient, ObjectClientExt, Subresource};
use serde::Serialize;
use tracing::Instrument;

use crate::api::v1beta1::{ClusterDeploymentReference, Initialization};
use crate::api::{AGENT_CLUSTER_FINALIZER, AGENT_CLUSTER_REF_LABEL, AgentCluster, BACKUP_LABEL};
use crate::conditions::{
    AGENT_CLUSTER_INSTALL_READY, CLUSTER_DEPLOYMENT_READY, CONTROL_PLANE_ENDPOINT_READY, PAUSED,
    READY, summary,
};
use crate::context::{
    CLUSTER_POLL, Context, LabelsPatch, get_cluster, merge_patch, paused, typed_ref, version_of,
};
use crate::error::{Error, Result};
use crate::foreign::{AgentClusterInstall, Cluster, ClusterDeployment, ControlPlane};
use crate::render::{
    key, owner_reference, render_agent_cluster_install, render_cluster_deployment,
};

/// What one reconcile found out, written to the status once at the end.
#[derive(Debug, Default)]
struct Observed {
    reference: Option<ClusterDeploymentReference>,
    conditions: Vec<ConditionUpdate>,
    provisioned: bool,
}

/// Reconciles the AgentCluster `namespace/name`.
pub async fn reconcile_agent_cluster(
    ctx: &Context,
    namespace: &str,
    name: &str,
) -> Result<Outcome> {
    let span = tracing::info_span!("reconcile", kind = "AgentCluster", namespace, name);
    reconcile(ctx, namespace, name).instrument(span).await
}

async fn reconcile(ctx: &Context, namespace: &str, name: &str) -> Result<Outcome> {
    let client = ctx.client.as_ref();
    let target = object_ref_for::<AgentCluster>(Some(namespace), name);
    let Some(raw) = client.get(&target).await? else {
        return Ok(Outcome::Done);
    };
    let ac: AgentCluster = from_dynamic(raw.clone())?;
    if capi::is_externally_managed(&ac.metadata) {
        return Ok(Outcome::Done);
    }
    let cluster = match capi::owner_of_kind(&ac.metadata, "Cluster") {
        Some(owner) => {
            get_cluster(
                client,
                namespace,
                &owner.name,
                version_of(&owner.api_version),
            )
            .await?
        }
        None => None,
    };
    let paused = paused(&ac.metadata, cluster.as_ref());
    if ac.metadata.deletion_timestamp.is_some() {
        if paused {
            orphan_cluster_deployment(client, &ac).await?;
        }
        remove_finalizer(client, &raw, AGENT_CLUSTER_FINALIZER).await?;
        return Ok(Outcome::Done);
    }
    add_finalizer(client, &raw, AGENT_CLUSTER_FINALIZER).await?;
    if paused {
        orphan_cluster_deployment(client, &ac).await?;
        let observed = Observed {
            conditions: vec![ConditionUpdate::new(PAUSED, true, "Paused")],
            ..Observed::default()
        };
        write(client, &ac, observed).await?;
        return Ok(Outcome::Done);
    }
    ensure_backup_label(client, &target, ac.metadata.labels.as_ref()).await?;
    let mut observed = Observed {
        conditions: vec![ConditionUpdate::new(PAUSED, false, "NotPaused")],
        ..Observed::default()
    };
    let outcome = converge(ctx, &ac, cluster.as_ref(), &mut observed).await;
    write(client, &ac, observed).await?;
    outcome
}

async fn converge(
    ctx: &Context,
    ac: &AgentCluster,
    cluster: Option<&Cluster>,
    observed: &mut Observed,
) -> Result<Outcome> {
    let client = ctx.client.as_ref();
    let Some(cd) = ensure_cluster_deployment(ctx, ac, cluster, observed).await? else {
        return Ok(Outcome::RequeueAfter(CLUSTER_POLL));
    };
    observed.conditions.push(ConditionUpdate::new(
        CLUSTER_DEPLOYMENT_READY,
        true,
        "Created",
    ));
    if let Some((reason, message)) = ignition_endpoint_problem(client, ac).await? {
        let c = ConditionUpdate::new(AGENT_CLUSTER_INSTALL_READY, false, reason).message(message);
        observed.conditions.push(c);
        return Ok(Outcome::RequeueAfter(CLUSTER_POLL));
    }
    ensure_agent_cluster_install(client, ac, cd.metadata.name.as_deref().unwrap_or_default())
        .await?;
    observed.conditions.push(ConditionUpdate::new(
        AGENT_CLUSTER_INSTALL_READY,
        true,
        "Created",
    ));
    if !ac.spec.control_plane_endpoint.is_valid() {
        observed.conditions.push(
            ConditionUpdate::new(
                CONTROL_PLANE_ENDPOINT_READY,
                false,
                "WaitingForControlPlaneEndpoint",
            )
            .message("spec.controlPlaneEndpoint has no host or no port yet"),
        );
        return Ok(Outcome::RequeueAfter(CLUSTER_POLL));
    }
    observed.conditions.push(ConditionUpdate::new(
        CONTROL_PLANE_ENDPOINT_READY,
        true,
        "EndpointKnown",
    ));
    observed.provisioned = true;
    Ok(Outcome::Done)
}

/// Finds, adopts or creates the ClusterDeployment; `None` when a prerequisite is missing (the
/// reason is in the conditions).
async fn ensure_cluster_deployment(
    ctx: &Context,
    ac: &AgentCluster,
    cluster: Option<&Cluster>,
    observed: &mut Observed,
) -> Result<Option<ClusterDeployment>> {
    let client = ctx.client.as_ref();
    let namespace = ac.metadata.namespace.as_deref().unwrap_or_default();
    let name = ac.metadata.name.as_deref().unwrap_or_default();
    let recorded = ac
        .status
        .as_ref()
        .map(|s| s.cluster_deployment_ref.clone())
        .unwrap_or_default();
    if !recorded.name.is_empty() {
        let ns = if recorded.namespace.is_empty() {
            namespace
        } else {
            &recorded.namespace
        };
        if let Some(cd) = client
            .get_typed::<ClusterDeployment>(Some(ns), &recorded.name)
            .await?
        {
            adopt(client, ac, &cd).await?;
            observed.reference = Some(recorded);
            return Ok(Some(cd));
        }
        // A dangling reference (upstream's quirk): go back to finding or creating one.
        observed.reference = Some(ClusterDeploymentReference::default());
    }
    let labelled: Vec<ClusterDeployment> = client
        .list_typed(
            ctx.config.namespace.as_deref(),
            &ListOptions::labels(format!("{AGENT_CLUSTER_REF_LABEL}={name}")),
        )
        .await?;
    if let Some(cd) = labelled.into_iter().next() {
        adopt(client, ac, &cd).await?;
        observed.reference = Some(reference(&cd));
        return Ok(Some(cd));
    }
    let Some(cd) = create_cluster_deployment(client, ac, cluster, observed).await? else {
        return Ok(None);
    };
    observed.reference = Some(reference(&cd));
    Ok(Some(cd))
}

fn reference(cd: &ClusterDeployment) -> ClusterDeploymentReference {
    ClusterDeploymentReference {
        name: cd.metadata.name.clone().unwrap_or_default(),
        namespace: cd.metadata.namespace.clone().unwrap_or_default(),
    }
}

fn waiting(observed: &mut Observed, reason: &str, message: String) -> Option<ClusterDeployment> {
    observed
        .conditions
        .push(ConditionUpdate::new(CLUSTER_DEPLOYMENT_READY, false, reason).message(message));
    None
}

async fn create_cluster_deployment(
    client: &dyn ObjectClient,
    ac: &AgentCluster,
    cluster: Option<&Cluster>,
    observed: &mut Observed,
) -> Result<Option<ClusterDeployment>> {
    let namespace = ac.metadata.namespace.as_deref().unwrap_or_default();
    let Some(cluster) = cluster else {
        let has_owner = capi::owner_of_kind(&ac.metadata, "Cluster").is_some();
        let what = if has_owner {
            "the owner Cluster does not exist yet"
        } else {
            "no Cluster owner reference yet"
        };
        return Ok(waiting(observed, "WaitingForCluster", what.into()));
    };
    let Some(cp_ref) = cluster
        .spec
        .control_plane_ref
        .clone()
        .filter(|r| !r.name.is_empty())
    else {
        return Ok(waiting(
            observed,
            "WaitingForControlPlane",
            "Cluster.spec.controlPlaneRef is not set".into(),
        ));
    };
    let Some(control_plane) = get_control_plane(client, namespace, &cp_ref).await? else {
        let message = missing_control_plane(ac, cluster, &cp_ref);
        return Ok(waiting(observed, "WaitingForControlPlane", message));
    };
    let cluster_uid = cluster.metadata.uid.clone().unwrap_or_default();
    let cd = match render_cluster_deployment(ac, &cluster_uid, &cp_ref.name, &control_plane) {
        Ok(cd) => cd,
        Err(Error::Waiting { what, .. }) => {
            return Ok(waiting(observed, "WaitingForControlPlane", what));
        }
        Err(err) => return Err(err),
    };
    label_secrets_for_backup(client, namespace, &control_plane).await;
    match client.create_typed(&cd).await {
        Ok(created) => Ok(Some(created)),
        Err(err) if err.is_already_exists() => {
            let existing = client
                .get_typed::<ClusterDeployment>(
                    Some(namespace),
                    cd.metadata.name.as_deref().unwrap_or_default(),
                )
                .await?;
            Ok(existing)
        }
        Err(err) => Err(err.into()),
    }
}

/// Why an AgentCluster waits for the control plane its Cluster names and that does not exist.
fn missing_control_plane(
    ac: &AgentCluster,
    cluster: &Cluster,
    cp_ref: &crate::foreign::ContractRef,
) -> String {
    let namespace = ac.metadata.namespace.as_deref().unwrap_or_default();
    let cp_namespace = Some(cp_ref.namespace.as_str()).filter(|n| !n.is_empty());
    format!(
        "AgentCluster {}: Cluster {} names in spec.controlPlaneRef {} {}/{}, which does not exist yet",
        key(&ac.metadata),
        key(&cluster.metadata),
        cp_ref.kind,
        cp_namespace.unwrap_or(namespace),
        cp_ref.name
    )
}

/// The control plane, read at `<group>/v1beta1`, then `<group>/v1beta2` (upstream's order).
async fn get_control_plane(
    client: &dyn ObjectClient,
    namespace: &str,
    cp_ref: &crate::foreign::ContractRef,
) -> Result<Option<ControlPlane>> {
    let cp_namespace = if cp_ref.namespace.is_empty() {
        namespace
    } else {
        &cp_ref.namespace
    };
    for version in ["v1beta1", "v1beta2"] {
        let gvk = kube::api::GroupVersionKind::gvk(cp_ref.group(), version, &cp_ref.kind);
        let target = kcp_core::ObjectRef::namespaced(gvk, cp_namespace, &cp_ref.name);
        match client.get(&target).await {
            Ok(Some(obj)) => {
                let value =
                    serde_json::Value::Object(obj.data.as_object().cloned().unwrap_or_default());
                let cp = serde_json::from_value(value).map_err(|e| {
                    Error::invalid(
                        format!("{target}"),
                        "spec/status",
                        format!("not a HostedControlPlane shape: {e}"),
                    )
                })?;
                return Ok(Some(cp));
            }
            Ok(None) | Err(kcp_core::Error::KindNotServed { .. }) => continue,
            Err(err) => return Err(err.into()),
        }
    }
    Ok(None)
}

/// Adds the backup label to the control plane's Secrets; failures are logged, never fatal.
async fn label_secrets_for_backup(client: &dyn ObjectClient, namespace: &str, cp: &ControlPlane) {
    let names = [
        cp.spec.pull_secret.as_ref().map(|s| s.name.clone()),
        cp.status.kube_config.as_ref().map(|s| s.name.clone()),
        cp.status
            .kubeadmin_password
            .as_ref()
            .map(|s| s.name.clone()),
    ];
    for name in names.into_iter().flatten().filter(|n| !n.is_empty()) {
        if let Err(err) = label_secret_for_backup(client, namespace, &name).await {
            tracing::warn!(secret = %name, error = %err, "could not add the backup label");
        }
    }
}

/// Adds the backup label to Secret `namespace/name` when it exists and lacks it.
pub async fn label_secret_for_backup(
    client: &dyn ObjectClient,
    namespace: &str,
    name: &str,
) -> Result<()> {
    let Some(secret) = client.get_typed::<Secret>(Some(namespace), name).await? else {
        return Ok(());
    };
    ensure_backup_label(
        client,
        &typed_ref::<Secret>(namespace, name),
        secret.metadata.labels.as_ref(),
    )
    .await
}

/// Adds the backup label to `target` when its `labels` lack it.
pub async fn ensure_backup_label(
    client: &dyn ObjectClient,
    target: &kcp_core::ObjectRef,
    labels: Option<&BTreeMap<String, String>>,
) -> Result<()> {
    if labels
        .and_then(|l| l.get(BACKUP_LABEL))
        .is_some_and(|v| v == "true")
    {
        return Ok(());
    }
    merge_patch(
        client,
        target,
        Subresource::Main,
        &LabelsPatch::set(BACKUP_LABEL, "true"),
    )
    .await
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OwnersPatch {
    metadata: OwnersMeta,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OwnersMeta {
    resource_version: Option<String>,
    owner_references: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference>,
    labels: BTreeMap<String, String>,
}

/// Makes `ac` an owner of `cd` and sets the `agentClusterRef` label (one patch, only if needed).
async fn adopt(client: &dyn ObjectClient, ac: &AgentCluster, cd: &ClusterDeployment) -> Result<()> {
    let owner = owner_reference(ac)?;
    let name = ac.metadata.name.clone().unwrap_or_default();
    let mut owners = cd.metadata.owner_references.clone().unwrap_or_default();
    let owned = owners.iter().any(|o| o.uid == owner.uid);
    let labelled = cd
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(AGENT_CLUSTER_REF_LABEL))
        == Some(&name);
    if owned && labelled {
        return Ok(());
    }
    if !owned {
        owners.push(owner);
    }
    let patch = OwnersPatch {
        metadata: OwnersMeta {
            resource_version: cd.metadata.resource_version.clone(),
            owner_references: owners,
            labels: [(AGENT_CLUSTER_REF_LABEL.to_owned(), name)].into(),
        },
    };
    let target = typed_ref::<ClusterDeployment>(
        cd.metadata.namespace.as_deref().unwrap_or_default(),
        cd.metadata.name.as_deref().unwrap_or_default(),
    );
    merge_patch(client, &target, Subresource::Main, &patch).await
}

/// Removes `ac` from the owners of its ClusterDeployment (if it is one), so that deleting the
/// AgentCluster while paused (backup/restore) keeps the ClusterDeployment.
async fn orphan_cluster_deployment(client: &dyn ObjectClient, ac: &AgentCluster) -> Result<()> {
    let Some(reference) = ac
        .status
        .as_ref()
        .map(|s| &s.cluster_deployment_ref)
        .filter(|r| !r.name.is_empty())
    else {
        return Ok(());
    };
    let namespace = if reference.namespace.is_empty() {
        ac.metadata.namespace.as_deref().unwrap_or_default()
    } else {
        &reference.namespace
    };
    let Some(cd) = client
        .get_typed::<ClusterDeployment>(Some(namespace), &reference.name)
        .await?
    else {
        return Ok(());
    };
    let uid = ac.metadata.uid.clone().unwrap_or_default();
    let owners = cd.metadata.owner_references.clone().unwrap_or_default();
    if !owners.iter().any(|o| o.uid == uid) {
        return Ok(());
    }
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Meta {
        resource_version: Option<String>,
        owner_references: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference>,
    }
    #[derive(Serialize)]
    struct Patch {
        metadata: Meta,
    }
    let patch = Patch {
        metadata: Meta {
            resource_version: cd.metadata.resource_version.clone(),
            owner_references: owners.into_iter().filter(|o| o.uid != uid).collect(),
        },
    };
    merge_patch(
        client,
        &typed_ref::<ClusterDeployment>(namespace, &reference.name),
        Subresource::Main,
        &patch,
    )
    .await
}

/// Why `spec.ignitionEndpoint` cannot go into the AgentClusterInstall yet, as (reason,
/// message): a URL that is not an http(s) URL with a host, or a CA Secret that does not exist.
/// Nothing is written to the AgentClusterInstall until it is fixed.
async fn ignition_endpoint_problem(
    client: &dyn ObjectClient,
    ac: &AgentCluster,
) -> Result<Option<(&'static str, String)>> {
    let Some(endpoint) = &ac.spec.ignition_endpoint else {
        return Ok(None);
    };
    let object = format!("AgentCluster {}", key(&ac.metadata));
    if !endpoint.url.is_empty() && !is_http_url(&endpoint.url) {
        let message = format!(
            "{object}: field spec.ignitionEndpoint.url: {:?} is not an http or https URL with a host",
            endpoint.url
        );
        return Ok(Some(("InvalidIgnitionEndpoint", message)));
    }
    let Some(ca) = &endpoint.ca_certificate_reference else {
        return Ok(None);
    };
    if client
        .get_typed::<Secret>(Some(&ca.namespace), &ca.name)
        .await?
        .is_some()
    {
        return Ok(None);
    }
    let message = format!(
        "{object}: spec.ignitionEndpoint.caCertificateReference names Secret {}/{}, which does not exist",
        ca.namespace, ca.name
    );
    Ok(Some(("IgnitionCASecretNotFound", message)))
}

/// `http://` or `https://`, then a host (no spaces anywhere).
fn is_http_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    let host = rest.map(|r| r.split(['/', '?', '#']).next().unwrap_or_default());
    host.is_some_and(|h| !h.is_empty() && !h.starts_with(':')) && !url.contains(char::is_whitespace)
}

/// Creates the AgentClusterInstall when missing; keeps its ignition endpoint in line with the
/// AgentCluster when it exists (upstream freezes it at creation).
async fn ensure_agent_cluster_install(
    client: &dyn ObjectClient,
    ac: &AgentCluster,
    name: &str,
) -> Result<()> {
    let namespace = ac.metadata.namespace.as_deref().unwrap_or_default();
    let desired = render_agent_cluster_install(ac, name);
    if let Some(ca) = desired
        .spec
        .ignition_endpoint
        .as_ref()
        .and_then(|e| e.ca_certificate_reference.as_ref())
        && let Err(err) = label_secret_for_backup(client, &ca.namespace, &ca.name).await
    {
        tracing::warn!(secret = %ca.name, error = %err, "could not add the backup label");
    }
    let Some(existing) = client
        .get_typed::<AgentClusterInstall>(Some(namespace), name)
        .await?
    else {
        match client.create(&to_dynamic(&desired)?).await {
            Ok(_) => return Ok(()),
            Err(err) if err.is_already_exists() => return Ok(()),
            Err(err) => return Err(err.into()),
        }
    };
    if existing.spec.ignition_endpoint == desired.spec.ignition_endpoint
        || desired.spec.ignition_endpoint.is_none()
    {
        return Ok(());
    }
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Spec {
        ignition_endpoint: Option<crate::foreign::AciIgnitionEndpoint>,
    }
    #[derive(Serialize)]
    struct Patch {
        spec: Spec,
    }
    let patch = Patch {
        spec: Spec {
            ignition_endpoint: desired.spec.ignition_endpoint,
        },
    };
    merge_patch(
        client,
        &typed_ref::<AgentClusterInstall>(namespace, name),
        Subresource::Main,
        &patch,
    )
    .await
}

async fn write(client: &dyn ObjectClient, ac: &AgentCluster, observed: Observed) -> Result<()> {
    let namespace = ac.metadata.namespace.as_deref().unwrap_or_default();
    let name = ac.metadata.name.as_deref().unwrap_or_default();
    let generation = ac.metadata.generation;
    let paused = observed
        .conditions
        .iter()
        .any(|c| c.type_ == PAUSED && c.status == ConditionStatus::True);
    let mut conditions = observed.conditions;
    if !paused {
        let parts: Vec<_> = conditions
            .iter()
            .filter(|c| c.type_ != PAUSED)
            .cloned()
            .collect();
        let mut ready = summary(&parts);
        if !observed.provisioned && ready.status == ConditionStatus::True {
            ready = ConditionUpdate::new(READY, false, "Provisioning");
        }
        conditions.push(ready);
    }
    let stamp = now();
    write_status::<AgentCluster, _>(client, Some(namespace), name, |obj| {
        let status = obj.status.get_or_insert_with(Default::default);
        if let Some(reference) = &observed.reference {
            status.cluster_deployment_ref = reference.clone();
        }
        // `ready` never goes back to false: CAPI's v1beta1 contract treats it as one-way.
        if observed.provisioned {
            status.ready = true;
            status.initialization = Some(Initialization {
                provisioned: Some(true),
            });
        }
        for c in &conditions {
            set_condition(
                &mut status.conditions,
                c.clone().generation(generation),
                stamp.clone(),
            );
        }
    })
    .await?;
    tracing::debug!(object = %key(&ac.metadata), "status written");
    Ok(())
}
