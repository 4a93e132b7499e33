//! The reconcile of one KINDCluster or KindCluster, over `&dyn ObjectClient` and a
//! [`Provisioner`]; returns the runtime's [`Outcome`].
//!
//! Flow: a deleted object is cleaned up (its cluster deleted if this object owns it, its
//! Secrets removed, the finalizer released); a CAPI KindCluster waits for its `Cluster` owner
//! and honours pause; the finalizer is added; then the cluster is provisioned: refused when the
//! name is claimed by another object or the existing cluster is not marked as ours, created in
//! the background when missing (phase `Provisioning`; a cluster that disappears later is
//! recreated), and once it exists its kubeconfig is exported into the Secrets, the endpoint
//! recorded and the object marked `Ready`. Ready objects are looked at again every `resync`
//! (drift and kubeconfig changes).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kcp_core::runtime::finalizer::{
    FinalizerState, add_finalizer, finalizer_state, remove_finalizer,
};
use kcp_core::runtime::{EventRecorder, EventType, Outcome, StatusWrite, write_status};
use kcp_core::typed::object_ref_for;
use kcp_core::{DeleteOptions, ObjectClient, ObjectClientExt as _, PatchOptions, capi};
use kube::ResourceExt as _;

use crate::api::Phase;
use crate::api::capi::ApiEndpoint;
use crate::creations::{Claims, Creations};
use crate::error::{Error, Result};
use crate::kind_config::render_kind_config;
use crate::kinds::KindObject;
use crate::plan::ClusterPlan;
use crate::provisioner::{CreateRequest, Provisioner, endpoint_of_kubeconfig};
use crate::status::{Observation, reason};

/// The field manager of every write.
pub const FIELD_MANAGER: &str = "capi-provider-kind";

/// How the reconciler behaves.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// How often a Ready cluster is checked (drift, kubeconfig changes).
    pub resync: Duration,
    /// How long `kind create` waits for the control plane (`--wait`).
    pub create_wait: Duration,
    /// How long a refused object (name in use, foreign cluster, paused) waits to look again.
    pub retry_refused: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            resync: Duration::from_secs(60),
            create_wait: Duration::from_secs(300),
            retry_refused: Duration::from_secs(30),
        }
    }
}

/// Wakes an object up for another reconcile: (namespace, name).
pub type Waker = Arc<dyn Fn(String, String) + Send + Sync>;

/// What every reconcile shares.
pub struct Context {
    /// The management cluster.
    pub client: Arc<dyn ObjectClient>,
    /// Where kind clusters come from.
    pub provisioner: Arc<dyn Provisioner>,
    /// Background creations.
    pub creations: Creations,
    /// Which object asked for which cluster name.
    pub claims: Claims,
    /// Events about the objects.
    pub events: EventRecorder,
    /// Timings.
    pub settings: Settings,
    /// Wakes KINDClusters after their creation finished.
    pub wake_upstream: Option<Waker>,
    /// Wakes KindClusters after their creation finished.
    pub wake_capi: Option<Waker>,
}

impl Context {
    /// A context over `client` and `provisioner`, with `max_concurrent_creates`.
    pub fn new(
        client: Arc<dyn ObjectClient>,
        provisioner: Arc<dyn Provisioner>,
        max_concurrent_creates: usize,
    ) -> Self {
        Context {
            client,
            creations: Creations::new(provisioner.clone(), max_concurrent_creates),
            provisioner,
            claims: Claims::default(),
            events: EventRecorder::new(FIELD_MANAGER),
            settings: Settings::default(),
            wake_upstream: None,
            wake_capi: None,
        }
    }

    fn waker<K: KindObject>(&self) -> Option<Waker> {
        if K::CAPI {
            self.wake_capi.clone()
        } else {
            self.wake_upstream.clone()
        }
    }
}

fn describe<K: KindObject>(obj: &K) -> String {
    format!(
        "{} {}/{}",
        K::KIND,
        obj.namespace().unwrap_or_default(),
        obj.name_any()
    )
}

/// Reconciles one object.
pub async fn reconcile<K: KindObject>(obj: &K, ctx: &Context) -> Result<Outcome> {
    let state = finalizer_state(obj, K::FINALIZER);
    match state {
        FinalizerState::Released => {
            if let Some(uid) = obj.meta().uid.as_deref() {
                ctx.claims.release_all(uid);
            }
            Ok(Outcome::Done)
        }
        FinalizerState::CleanupDue => cleanup(obj, ctx).await,
        FinalizerState::Missing | FinalizerState::Present => {
            if K::CAPI
                && let Some(outcome) = gate(obj, ctx).await?
            {
                return Ok(outcome);
            }
            if state == FinalizerState::Missing {
                add_finalizer(ctx.client.as_ref(), obj, K::FINALIZER)
                    .await
                    .map_err(|e| Error::core(describe(obj), "adding the finalizer", e))?;
                // The update triggers the next reconcile.
                return Ok(Outcome::Done);
            }
            provision(obj, ctx).await
        }
    }
}

/// Writes `obs` (with the object's generation) into the status; the object as written.
async fn observe<K: KindObject>(obj: &K, ctx: &Context, obs: Observation) -> Result<Option<K>> {
    let obs = obs.generation(obj.meta().generation);
    let now = kcp_core::runtime::conditions::now();
    let namespace = obj.namespace();
    let written = write_status::<K, _>(
        ctx.client.as_ref(),
        namespace.as_deref(),
        &obj.name_any(),
        |o| o.observe(&obs, now.clone()),
    )
    .await
    .map_err(|e| Error::core(describe(obj), "writing the status", e))?;
    Ok(match written {
        StatusWrite::Unchanged(o) | StatusWrite::Written(o) => Some(o),
        StatusWrite::Gone => None,
    })
}

async fn event<K: KindObject>(
    obj: &K,
    ctx: &Context,
    kind: EventType,
    reason: &str,
    message: &str,
) {
    let client = ctx.client.as_ref();
    ctx.events.publish(client, obj, kind, reason, message).await;
}

/// The CAPI rules before anything else: externally managed objects are left alone, objects
/// wait for their `Cluster` owner, and paused objects (annotation or `Cluster.spec.paused`) only
/// get their `Paused` condition. `None`: go on.
async fn gate<K: KindObject>(obj: &K, ctx: &Context) -> Result<Option<Outcome>> {
    let meta = obj.meta();
    if capi::is_externally_managed(meta) {
        tracing::debug!("externally managed; not touching it");
        return Ok(Some(Outcome::Done));
    }
    let Some(owner) = capi::cluster_owner(meta) else {
        let obs = Observation::new(
            Phase::Pending,
            reason::WAITING_FOR_CLUSTER_OWNER,
            "waiting for Cluster API to set the Cluster owner reference",
        );
        observe(obj, ctx, obs).await?;
        return Ok(Some(Outcome::Done));
    };
    let why = if capi::has_paused_annotation(meta) {
        Some(format!(
            "the object has the {} annotation",
            capi::PAUSED_ANNOTATION
        ))
    } else if cluster_paused(obj, ctx, owner).await? {
        Some(format!("Cluster {:?} has spec.paused", owner.name))
    } else {
        None
    };
    let Some(why) = why else { return Ok(None) };
    let now = kcp_core::runtime::conditions::now();
    write_status::<K, _>(
        ctx.client.as_ref(),
        obj.namespace().as_deref(),
        &obj.name_any(),
        |o| o.set_paused(true, &why, now.clone()),
    )
    .await
    .map_err(|e| Error::core(describe(obj), "writing the Paused condition", e))?;
    Ok(Some(Outcome::RequeueAfter(ctx.settings.retry_refused)))
}

async fn cluster_paused<K: KindObject>(
    obj: &K,
    ctx: &Context,
    owner: &k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference,
) -> Result<bool> {
    let Some(gvk) = kcp_core::client::parse_api_version(&owner.api_version, "Cluster") else {
        return Ok(false);
    };
    let target =
        kcp_core::ObjectRef::namespaced(gvk, obj.namespace().unwrap_or_default(), &owner.name);
    let cluster = match ctx.client.get(&target).await {
        Ok(found) => found,
        // CAPI not installed (yet): nothing can pause us.
        Err(kcp_core::Error::KindNotServed { .. }) => None,
        Err(err) => return Err(Error::core(describe(obj), "reading the owner Cluster", err)),
    };
    let Some(cluster) = cluster else {
        return Ok(false);
    };
    let view: capi::ClusterView = serde_json::from_value(cluster.data).unwrap_or_default();
    Ok(view.paused())
}

/// Provisioning of a live object that carries the finalizer.
async fn provision<K: KindObject>(obj: &K, ctx: &Context) -> Result<Outcome> {
    let plan = match obj.plan() {
        Ok(plan) => plan,
        Err(err @ Error::InvalidSpec { .. }) => {
            refuse(
                obj,
                ctx,
                Phase::Failed,
                reason::INVALID_SPEC,
                err.to_string(),
                None,
            )
            .await?;
            return Ok(Outcome::Done);
        }
        Err(err) => return Err(err),
    };
    let name = plan.cluster_name.as_str();
    if let Err(holder) = ctx.claims.claim(name, &plan.owner_uid, &plan.object) {
        let message = format!("kind cluster {name:?} is already requested by {holder}");
        refuse(obj, ctx, Phase::Pending, reason::NAME_IN_USE, message, None).await?;
        return Ok(Outcome::RequeueAfter(ctx.settings.retry_refused));
    }
    if ctx.creations.running(name) {
        let message = format!("creating kind cluster {name:?}");
        let obs = Observation::new(Phase::Provisioning, reason::PROVISIONING, message);
        observe(obj, ctx, obs.cluster(name)).await?;
        return Ok(Outcome::Done);
    }
    let created_now = match ctx.creations.take_finished(name) {
        Some(Err(message)) => return creation_failed(obj, ctx, name, message).await,
        Some(Ok(())) => true,
        None => false,
    };
    if !ctx.provisioner.list().await?.iter().any(|c| c == name) {
        return start_creation(obj, ctx, &plan).await;
    }
    let owner = ctx.provisioner.owner(name).await?;
    if owner.is_none() && obj.provisioned_here() {
        adopt(obj, ctx, name, &plan.owner_uid).await?;
    } else if owner.as_deref() != Some(plan.owner_uid.as_str()) {
        // Whoever owns it may claim the name.
        ctx.claims.release(name, &plan.owner_uid);
        let message = format!(
            "a kind cluster named {name:?} exists but was not created for this object; it is neither adopted nor deleted"
        );
        refuse(
            obj,
            ctx,
            Phase::Failed,
            reason::NOT_OWNED,
            message,
            Some(name),
        )
        .await?;
        return Ok(Outcome::RequeueAfter(ctx.settings.retry_refused));
    }
    publish(obj, ctx, name, created_now).await
}

/// Takes over an unmarked cluster this object's provider made (the Go provider marks nothing):
/// marks it as this object's, from then on deleted with it.
async fn adopt<K: KindObject>(obj: &K, ctx: &Context, name: &str, owner_uid: &str) -> Result<()> {
    ctx.provisioner.mark_owner(name, owner_uid).await?;
    let message = format!("adopted kind cluster {name:?}, which this object's provider created");
    tracing::info!(cluster = name, "kind cluster adopted");
    event(obj, ctx, EventType::Normal, reason::ADOPTED, &message).await;
    Ok(())
}

/// Records a refusal: the status (`phase`, `reason`, `message`) and a Warning Event.
async fn refuse<K: KindObject>(
    obj: &K,
    ctx: &Context,
    phase: Phase,
    reason: &'static str,
    message: String,
    cluster: Option<&str>,
) -> Result<()> {
    let mut obs = Observation::new(phase, reason, &message);
    if let Some(cluster) = cluster {
        obs = obs.cluster(cluster);
    }
    observe(obj, ctx, obs).await?;
    event(obj, ctx, EventType::Warning, reason, &message).await;
    Ok(())
}

async fn creation_failed<K: KindObject>(
    obj: &K,
    ctx: &Context,
    name: &str,
    message: String,
) -> Result<Outcome> {
    let obs = Observation::new(Phase::Failed, reason::CREATE_FAILED, &message)
        .cluster(name)
        .history("Cluster cannot be created", &message);
    observe(obj, ctx, obs).await?;
    event(
        obj,
        ctx,
        EventType::Warning,
        reason::CREATE_FAILED,
        &message,
    )
    .await;
    // Retried with the error policy's backoff.
    Err(Error::provisioner(name, "create", message))
}

async fn start_creation<K: KindObject>(
    obj: &K,
    ctx: &Context,
    plan: &ClusterPlan,
) -> Result<Outcome> {
    let name = plan.cluster_name.as_str();
    let was_up = matches!(obj.phase(), Some(Phase::Ready | Phase::Provisioned));
    let request = CreateRequest {
        name: name.to_string(),
        image: plan.image.clone(),
        config: render_kind_config(&plan.config)?,
        owner_uid: plan.owner_uid.clone(),
        wait: ctx.settings.create_wait,
    };
    let waker = ctx.waker::<K>();
    let (namespace, object_name) = (obj.namespace().unwrap_or_default(), obj.name_any());
    ctx.creations.start(request, move || {
        if let Some(wake) = waker {
            wake(namespace, object_name);
        }
    });
    let obs = if was_up {
        let message = format!("kind cluster {name:?} disappeared; creating it again");
        event(obj, ctx, EventType::Warning, reason::MISSING, &message).await;
        Observation::new(Phase::Provisioning, reason::MISSING, &message)
            .history("Cluster was deleted out of band; recreating", "")
    } else {
        Observation::new(
            Phase::Provisioning,
            reason::PROVISIONING,
            format!("creating kind cluster {name:?}"),
        )
    };
    observe(obj, ctx, obs.cluster(name)).await?;
    Ok(Outcome::Done)
}

/// The cluster exists and is ours: Secrets, endpoint, Ready.
async fn publish<K: KindObject>(
    obj: &K,
    ctx: &Context,
    name: &str,
    created_now: bool,
) -> Result<Outcome> {
    let endpoint = match export(obj, ctx, name).await {
        Ok(endpoint) => endpoint,
        Err(err) => {
            // The cluster exists but is not usable yet: Provisioned, not Ready.
            let obs = Observation::new(Phase::Provisioned, reason::PROVISIONED, err.to_string())
                .cluster(name)
                .kubeconfig(false);
            observe(obj, ctx, obs).await?;
            return Err(err);
        }
    };
    let message = format!(
        "kind cluster {name:?} is ready at {}:{}",
        endpoint.host, endpoint.port
    );
    let mut obs = Observation::new(Phase::Ready, reason::READY, &message)
        .cluster(name)
        .kubeconfig(true);
    if created_now {
        obs = obs.history("Cluster was successfully created", "");
        event(obj, ctx, EventType::Normal, reason::READY, &message).await;
    }
    observe(obj, ctx, obs).await?;
    Ok(Outcome::RequeueAfter(ctx.settings.resync))
}

/// Exports the kubeconfig into the Secrets and records the endpoint.
async fn export<K: KindObject>(obj: &K, ctx: &Context, name: &str) -> Result<ApiEndpoint> {
    let kubeconfig = ctx.provisioner.kubeconfig(name).await?;
    let endpoint = endpoint_of_kubeconfig(name, &kubeconfig)?;
    let capi_cluster = capi::cluster_owner(obj.meta()).map(|o| o.name.clone());
    for secret in obj.kubeconfig_secrets(capi_cluster.as_deref(), &kubeconfig)? {
        ensure_secret(ctx.client.as_ref(), &secret).await?;
    }
    let api_endpoint = ApiEndpoint {
        host: endpoint.host,
        port: i32::from(endpoint.port),
    };
    let mut with_endpoint = obj.clone();
    if with_endpoint.set_endpoint(&api_endpoint) {
        ctx.client
            .replace_typed(&with_endpoint)
            .await
            .map_err(|e| Error::core(describe(obj), "recording spec.controlPlaneEndpoint", e))?;
    }
    Ok(api_endpoint)
}

/// Creates or updates `secret` (server-side apply) unless it already holds the same data.
async fn ensure_secret(client: &dyn ObjectClient, secret: &Secret) -> Result<()> {
    let name = secret.name_any();
    let namespace = secret.namespace();
    let object = format!("Secret {}/{name}", namespace.as_deref().unwrap_or_default());
    let current: Option<Secret> = client
        .get_typed(namespace.as_deref(), &name)
        .await
        .map_err(|e| Error::core(&object, "reading", e))?;
    if let Some(current) = current {
        let same = current.data == secret.data && current.type_ == secret.type_;
        let foreign_controller = current.metadata.owner_references.iter().flatten().any(|r| {
            r.controller == Some(true)
                && secret
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .all(|o| o.uid != r.uid)
        });
        if foreign_controller {
            return Err(Error::InvalidSpec {
                object,
                field: "metadata.ownerReferences".into(),
                reason: "the Secret is controlled by another object; refusing to overwrite it"
                    .into(),
            });
        }
        if same {
            return Ok(());
        }
    }
    let mut options = PatchOptions::apply(FIELD_MANAGER);
    options.force = true;
    client
        .apply_typed(secret, &options)
        .await
        .map_err(|e| Error::core(&object, "applying", e))?;
    tracing::info!(secret = %object, "kubeconfig Secret written");
    Ok(())
}

/// Deletion: wait for a running create, delete the cluster if it is ours, delete the Secrets,
/// release the name, remove the finalizer.
async fn cleanup<K: KindObject>(obj: &K, ctx: &Context) -> Result<Outcome> {
    let object = describe(obj);
    let plan = obj.plan().ok();
    let cluster = plan.as_ref().map(|p| p.cluster_name.clone());
    let deleting = Observation::new(
        Phase::Deleting,
        reason::DELETING,
        "deleting the kind cluster",
    );
    // The finalizer is removed from the object as written here (its resourceVersion).
    let Some(current) = observe(obj, ctx, deleting).await? else {
        return Ok(Outcome::Done);
    };
    if let Some(plan) = &plan {
        let name = plan.cluster_name.as_str();
        if ctx.creations.running(name) {
            // The creation's wake-up brings us back.
            return Ok(Outcome::Done);
        }
        ctx.creations.take_finished(name);
        let ours = ctx
            .claims
            .claim(name, &plan.owner_uid, &plan.object)
            .is_ok();
        if ours && ctx.provisioner.list().await?.iter().any(|c| c == name) {
            let look = look_at_owner(ctx, name, &plan.owner_uid).await;
            if deletes(look, obj.provisioned_here()) {
                ctx.provisioner.delete(name).await?;
                tracing::info!(cluster = name, ?look, "kind cluster deleted");
            } else {
                tracing::info!(
                    cluster = name,
                    ?look,
                    "not deleting a kind cluster this object does not own"
                );
            }
        }
    }
    let capi_cluster = capi::cluster_owner(obj.meta()).map(|o| o.name.clone());
    for secret in obj.kubeconfig_secret_names(capi_cluster.as_deref()) {
        delete_own_secret(ctx.client.as_ref(), obj, &secret).await?;
    }
    if let (Some(name), Some(uid)) = (cluster, obj.meta().uid.as_deref()) {
        ctx.claims.release(&name, uid);
    }
    remove_finalizer(ctx.client.as_ref(), &current, K::FINALIZER)
        .await
        .map_err(|e| Error::core(&object, "removing the finalizer", e))?;
    Ok(Outcome::Done)
}

/// What a look at a cluster's ownership marker found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnerLook {
    /// Marked as this object's.
    Ours,
    /// Marked as another object's.
    Theirs,
    /// Running, without a marker.
    Unmarked,
    /// Not readable in time: stopped, broken or half-created.
    Unreadable,
}

/// How long deletion looks at a cluster's ownership marker before it decides without it.
pub const OWNER_LOOK: std::time::Duration = std::time::Duration::from_secs(30);

async fn look_at_owner(ctx: &Context, name: &str, owner_uid: &str) -> OwnerLook {
    match tokio::time::timeout(OWNER_LOOK, ctx.provisioner.owner(name)).await {
        Ok(Ok(Some(uid))) if uid == owner_uid => OwnerLook::Ours,
        Ok(Ok(Some(_))) => OwnerLook::Theirs,
        Ok(Ok(None)) => OwnerLook::Unmarked,
        Ok(Err(err)) => {
            tracing::info!(cluster = name, error = %err, "ownership marker unreadable");
            OwnerLook::Unreadable
        }
        Err(_) => OwnerLook::Unreadable,
    }
}

/// Whether deleting the object deletes its kind cluster: when marked as its own, or, unmarked
/// or unreadable (a stopped or half-created cluster, a Go provider's), when its status shows
/// its provider made it. Never one marked as another object's.
pub fn deletes(look: OwnerLook, provisioned_here: bool) -> bool {
    match look {
        OwnerLook::Ours => true,
        OwnerLook::Theirs => false,
        OwnerLook::Unmarked | OwnerLook::Unreadable => provisioned_here,
    }
}

/// Deletes Secret `name` in the object's namespace if this object controls it, or nothing
/// does (upstream wrote its Secret without owner); a missing Secret is fine.
async fn delete_own_secret<K: KindObject>(
    client: &dyn ObjectClient,
    obj: &K,
    name: &str,
) -> Result<()> {
    let namespace = obj.namespace();
    let object = format!("Secret {}/{name}", namespace.as_deref().unwrap_or_default());
    let current: Option<Secret> = client
        .get_typed(namespace.as_deref(), name)
        .await
        .map_err(|e| Error::core(&object, "reading", e))?;
    let Some(current) = current else {
        return Ok(());
    };
    let uid = obj.meta().uid.clone().unwrap_or_default();
    let controllers: Vec<_> = current
        .metadata
        .owner_references
        .iter()
        .flatten()
        .filter(|r| r.controller == Some(true))
        .collect();
    if !controllers.is_empty() && controllers.iter().all(|r| r.uid != uid) {
        return Ok(());
    }
    let target = object_ref_for::<Secret>(namespace.as_deref(), name);
    match client.delete(&target, &DeleteOptions::default()).await {
        Ok(_) => Ok(()),
        Err(err) if err.is_not_found() => Ok(()),
        Err(err) => Err(Error::core(&object, "deleting", err)),
    }
}

#[cfg(test)]
mod tests {
    use super::{OwnerLook, deletes};

    #[test]
    fn deletion_takes_an_unmarked_or_unreadable_cluster_only_when_the_object_made_it() {
        assert!(deletes(OwnerLook::Ours, false));
        assert!(!deletes(OwnerLook::Theirs, true));
        for look in [OwnerLook::Unmarked, OwnerLook::Unreadable] {
            assert!(deletes(look, true), "{look:?}");
            assert!(!deletes(look, false), "{look:?}");
        }
    }
}
