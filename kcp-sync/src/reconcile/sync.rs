//! The sync of one kcp object (a "primary") and its local copy on the service cluster
//! (upstream §4.2–§4.5), for one (consumer cluster, PublishedResource) pair.
//!
//! [`sync_object`] runs one step and says whether another step is wanted ([`Step::Again`]),
//! exactly as upstream's `Process` asks for a requeue: add the finalizer, create (or adopt)
//! the local copy, patch the spec, copy the status back, and on deletion remove the local
//! copy, then the finalizer. A controller re-queues at once on `Again`.
//!
//! Better than upstream, each with a test in `tests/sync.rs`:
//! * the finalizer name is configurable per agent ([`SyncConfig::finalizer`], default the
//!   upstream `syncagent.kcp.io/cleanup`, #117/#172);
//! * an existing local object is adopted only when it is not linked to another kcp object
//!   or labelled for another agent (upstream adopts anything), and then takes kcp's spec;
//! * status goes back to kcp only when the kcp type has a status subresource (#130);
//! * local names come from the unmutated kcp object, are validated before sending, and the
//!   default works for cluster-scoped objects (#163);
//! * an object that stops matching the filter releases its finalizer (upstream keeps it, and
//!   deleting the object in kcp then hangs); its local copy is left in place;
//! * the state Secret is deleted when the primary's finalizer is removed.

use k8s_openapi::api::core::v1::Namespace;
use kcp_core::kcp::types::LogicalCluster;
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::runtime::{EventRecorder, EventType};
use kcp_core::{
    DeleteOptions, DeleteOutcome, ListOptions, ObjectClient, ObjectClientExt as _, ObjectRef,
    Subresource, TemplateEngine,
};
use serde_json::{Value, json};

use super::caches::{SyncCaches, object_key};
use super::discovery::ApiDocuments;
use super::dynamic_json::{from_json, get_json, to_json};
use super::finalizers::patch_finalizers;
use super::kcp_events::{ACCEPTED, CLEANUP, DELETED, KcpEvents, PLACED, STATUS_SYNCED, SYNCED};
use super::object_cache::Cached;
use super::related::{RelatedSides, RelatedSync, prune_primary_annotations, sync_related};
use super::schema::Projected;
use super::spec_write::Destination;
use super::state_store::StateStore;
use crate::api::{PublishedResource, RelatedResourceSpec};
use crate::error::{Error, Result};
use crate::filter;
use crate::metadata::{
    AGENT_NAME_LABEL, CLEANUP_FINALIZER, RemoteObjectKey, ensure_map_entries, has_finalizer,
    is_deleting, meta_map_str, strip_metadata,
};
use crate::mutation::Mutator;
use crate::naming::local_name;
use crate::related_namespaces::ExtraNamespaces;
use crate::schema::storage_gvk;
use crate::state;

/// Agent-wide settings of the object sync.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncConfig {
    /// The agent's name (`syncagent.kcp.io/agent-name` label on local copies).
    pub agent: String,
    /// Namespace of the state Secrets on the service cluster.
    pub state_namespace: String,
    /// The finalizer put on kcp objects (default `syncagent.kcp.io/cleanup`).
    pub finalizer: String,
}

impl SyncConfig {
    /// Settings with upstream's finalizer.
    pub fn new(agent: impl Into<String>, state_namespace: impl Into<String>) -> Self {
        Self {
            agent: agent.into(),
            state_namespace: state_namespace.into(),
            finalizer: CLEANUP_FINALIZER.to_owned(),
        }
    }

    /// The same settings with a per-agent finalizer `syncagent.kcp.io/cleanup-<agent>`.
    pub fn with_agent_finalizer(mut self) -> Self {
        self.finalizer = format!("{CLEANUP_FINALIZER}-{}", self.agent);
        self
    }
}

/// What one PublishedResource generation syncs: both GVKs, scopes and compiled mutations.
#[derive(Debug, Clone)]
pub struct PrimarySync {
    /// The PublishedResource.
    pub pr: PublishedResource,
    /// The kind in kcp (projected storage version).
    pub remote_gvk: GroupVersionKind,
    /// The kind on the service cluster (the source CRD's storage version).
    pub local_gvk: GroupVersionKind,
    /// Whether the local type is namespaced.
    pub local_namespaced: bool,
    /// Subresource keys of the local type (`status`, `scale`), never part of the spec sync.
    pub subresources: Vec<&'static str>,
    /// The compiled `spec.mutation`.
    pub mutator: Mutator,
    /// The related resources, resolved ([`PrimarySync::resolve_related`]).
    pub related: Vec<RelatedSync>,
}

impl PrimarySync {
    /// Compiles `pr` with its projection.
    pub fn new(pr: &PublishedResource, projected: &Projected) -> Result<Self> {
        let missing = |what: &str| Error::InvalidCrd {
            crd: projected
                .source
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            field: "spec.versions".into(),
            reason: format!("{what} has no storage version"),
        };
        let remote = storage_gvk(&projected.projected).ok_or_else(|| missing("the projection"))?;
        let local = storage_gvk(&projected.source).ok_or_else(|| missing("the CRD"))?;
        let storage = projected
            .source
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .and_then(|vs| vs.iter().find(|v| v.get("storage") == Some(&json!(true))))
            .cloned()
            .unwrap_or_default();
        let subresources = ["status", "scale"]
            .into_iter()
            .filter(|s| storage.pointer(&format!("/subresources/{s}")).is_some())
            .collect();
        for (index, related) in pr.related().iter().enumerate() {
            references_in_schema(pr, index, related, &projected.source)?;
        }
        Ok(Self {
            pr: pr.clone(),
            remote_gvk: GroupVersionKind::gvk(&remote.group, &remote.version, &remote.kind),
            local_gvk: GroupVersionKind::gvk(&local.group, &local.version, &local.kind),
            local_namespaced: projected.source.pointer("/spec/scope") == Some(&json!("Namespaced")),
            subresources,
            mutator: Mutator::new(pr.name(), "spec.mutation", pr.spec.mutation.as_ref())?,
            related: Vec::new(),
        })
    }

    /// Resolves the kinds of the related resources (through the service cluster's CRDs, and
    /// its discovery documents through `docs` for builtin kinds).
    pub async fn resolve_related(
        &mut self,
        service: &dyn ObjectClient,
        docs: Option<&dyn ApiDocuments>,
    ) -> Result<()> {
        let mut related = Vec::new();
        let extra = ExtraNamespaces::of(&self.pr);
        for (index, spec) in self.pr.related().iter().enumerate() {
            let owner = (self.pr.name(), extra.clone());
            related.push(RelatedSync::new(service, docs, owner, index, spec).await?);
        }
        self.related = related;
        Ok(())
    }
}

/// Refuses a related resource whose `reference` paths (of the object, and of its namespace)
/// name a field the primary's CRD `crd` does not have in any version.
fn references_in_schema(
    pr: &PublishedResource,
    index: usize,
    related: &RelatedResourceSpec,
    crd: &Value,
) -> Result<()> {
    let locators = [
        ("object.reference.path", Some(&related.object.spec)),
        (
            "object.namespace.reference.path",
            related.object.namespace.as_ref(),
        ),
    ];
    for (field, locator) in locators {
        let Some(reference) = locator.and_then(|l| l.reference.as_ref()) else {
            continue;
        };
        crate::related::reference_in_schema(crd, &reference.path).map_err(|reason| {
            Error::InvalidSpec {
                published_resource: pr.name().to_owned(),
                field: format!("spec.related[{index}].{field}"),
                reason,
            }
        })?;
    }
    Ok(())
}

/// The two sides of one consumer cluster.
pub struct Sides<'a> {
    /// The consumer cluster through the APIExport virtual workspace.
    pub kcp: &'a dyn ObjectClient,
    /// The service cluster.
    pub service: &'a dyn ObjectClient,
    /// The consumer's logical cluster name.
    pub cluster: &'a str,
}

/// What a sync step asks for next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Nothing more to do until something changes.
    Done,
    /// Something was written; run another step at once.
    Again,
    /// The kcp object does not exist (or was just released after its deletion).
    Gone,
    /// Waiting for something others finish (the local copy's other finalizers): look again
    /// after a while, and when it changes.
    Waiting,
}

/// Everything one step needs.
pub struct SyncContext<'a> {
    /// Agent settings.
    pub config: &'a SyncConfig,
    /// The shared template engine.
    pub engine: &'a TemplateEngine,
    /// Records Events on kcp objects (needs the `events` claim); `None` records none.
    pub recorder: Option<&'a EventRecorder>,
    /// The two sides.
    pub sides: Sides<'a>,
    /// The controller's caches, fed by its watches ([`SyncCaches`]); `None`: every step reads
    /// the server (and finds local copies by listing), as upstream does.
    pub caches: Option<&'a SyncCaches>,
}

impl SyncContext<'_> {
    /// Where this step's Events go.
    pub fn kcp_events(&self) -> KcpEvents<'_> {
        KcpEvents {
            recorder: self.recorder,
            caches: self.caches,
            kcp: self.sides.kcp,
            cluster: self.sides.cluster,
        }
    }
}

/// The state of one step: the objects as read.
struct Pair {
    remote: Value,
    local: Option<Value>,
    key: RemoteObjectKey,
}

/// One sync step for the kcp object `namespace/name` of `target` in `ctx.sides.cluster`.
pub async fn sync_object(
    ctx: &SyncContext<'_>,
    target: &PrimarySync,
    namespace: Option<&str>,
    name: &str,
) -> Result<Step> {
    // Instrumented, not entered: a guard held across `.await` leaks the span into whatever
    // else the thread polls, and a fault run crashed a watch task on it (a closed span cloned).
    let span = tracing::info_span!("reconcile", kind = %target.remote_gvk.kind, cluster = ctx.sides.cluster, namespace = namespace.unwrap_or_default(), name);
    tracing::Instrument::instrument(sync_step(ctx, target, namespace, name), span).await
}

/// [`sync_object`]'s step, inside its span.
async fn sync_step(
    ctx: &SyncContext<'_>,
    target: &PrimarySync,
    namespace: Option<&str>,
    name: &str,
) -> Result<Step> {
    let remote_ref = object_ref(&target.remote_gvk, namespace, name);
    let Some(remote) = read_remote(ctx, &remote_ref).await? else {
        return Ok(Step::Gone);
    };
    if !accepted(ctx, target, &remote, namespace).await? {
        return release_filtered(ctx, &remote_ref, &remote).await;
    }
    let path = workspace_path(ctx, target).await?;
    let key = RemoteObjectKey::of(&remote, ctx.sides.cluster, path.as_deref());
    let local = find_local(ctx, target, &key).await?;
    let store = StateStore::new(
        ctx.sides.service,
        &ctx.config.state_namespace,
        state::secret_name(&remote, ctx.sides.cluster),
        state::secret_labels(&key),
    )
    .cached(ctx.caches.map(|c| &c.state));
    let pair = Pair { remote, local, key };
    if is_deleting(&pair.remote) {
        return handle_deletion(ctx, target, &remote_ref, &pair, &store).await;
    }
    let inherited = inherits_shared_finalizer(ctx, &pair, &store).await?;
    if !has_finalizer(&pair.remote, &ctx.config.finalizer) || inherited {
        set_finalizers(ctx, &remote_ref, &pair.remote, true, inherited).await?;
        event(ctx, &pair.remote, EventType::Normal, ACCEPTED.0, ACCEPTED.1).await;
        return Ok(Step::Again);
    }
    sync_live(ctx, target, &remote_ref, pair, &store).await
}

/// Whether this agent, running with a per-agent finalizer, answers for upstream's shared
/// finalizer on the kcp object too: it is there, and the local copy carries this agent's name,
/// so the Go agent of the same name left it before this one took over. The shared finalizer is
/// then swapped for the agent's own, or removed on deletion, so nothing waits for an agent that
/// no longer runs. On deletion, once the local copy is gone (this agent deleted it a step
/// before), this agent's state Secret still holding the object stands for the copy.
async fn inherits_shared_finalizer(
    ctx: &SyncContext<'_>,
    pair: &Pair,
    store: &StateStore<'_>,
) -> Result<bool> {
    if ctx.config.finalizer == CLEANUP_FINALIZER || !has_finalizer(&pair.remote, CLEANUP_FINALIZER)
    {
        return Ok(false);
    }
    Ok(match &pair.local {
        Some(local) => {
            meta_map_str(local, "labels", AGENT_NAME_LABEL) == Some(ctx.config.agent.as_str())
        }
        None if is_deleting(&pair.remote) => store.get(&state_key(&pair.key)).await?.is_some(),
        None => false,
    })
}

/// The kcp object: from the watch cache when it has it, else from the server.
async fn read_remote(ctx: &SyncContext<'_>, remote_ref: &ObjectRef) -> Result<Option<Value>> {
    let Some(caches) = ctx.caches else {
        return get_json(ctx.sides.kcp, remote_ref).await;
    };
    let key = object_key(
        ctx.sides.cluster,
        remote_ref.namespace.as_deref(),
        &remote_ref.name,
    );
    match caches.remote.get(&key) {
        Cached::Live(object) => Ok(Some((*object).clone())),
        Cached::Deleted => Ok(None),
        Cached::Unknown => {
            let found = get_json(ctx.sides.kcp, remote_ref).await?;
            if let Some(object) = &found {
                caches.remote.upsert(&key, object.clone());
            }
            Ok(found)
        }
    }
}

/// Stores the server's answer to a write of the kcp object in the cache.
fn remember_remote(ctx: &SyncContext<'_>, written: &DynamicObject) {
    let Some(caches) = ctx.caches else {
        return;
    };
    if let Ok(object) = to_json(written) {
        let key = object_key(
            ctx.sides.cluster,
            written.metadata.namespace.as_deref(),
            written.metadata.name.as_deref().unwrap_or_default(),
        );
        caches.remote.upsert(&key, object);
    }
}

/// Stores the server's answer to a write of the local copy of `key` in the index.
fn remember_local(ctx: &SyncContext<'_>, key: &RemoteObjectKey, written: &DynamicObject) {
    if let (Some(caches), Ok(object)) = (ctx.caches, to_json(written)) {
        caches.local.insert(key, object);
    }
}

/// The reference of object `name` of kind `gvk`, in `namespace` unless that is empty.
pub(crate) fn object_ref(gvk: &GroupVersionKind, namespace: Option<&str>, name: &str) -> ObjectRef {
    match namespace.filter(|n| !n.is_empty()) {
        Some(ns) => ObjectRef::namespaced(gvk.clone(), ns, name),
        None => ObjectRef::cluster_scoped(gvk.clone(), name),
    }
}

async fn accepted(
    ctx: &SyncContext<'_>,
    target: &PrimarySync,
    remote: &Value,
    namespace: Option<&str>,
) -> Result<bool> {
    let ns_object = match namespace.filter(|n| !n.is_empty() && filter::needs_namespace(&target.pr))
    {
        Some(ns) => {
            let found: Option<Namespace> = ctx
                .sides
                .kcp
                .get_typed(None, ns)
                .await
                .map_err(|e| Error::core(format!("reading Namespace {ns:?} in kcp"), e))?;
            found.map(|n| serde_json::to_value(n).unwrap_or(Value::Null))
        }
        None => None,
    };
    filter::accepts(&target.pr, remote, ns_object.as_ref())
}

/// An object the filter no longer accepts keeps nothing of ours: the finalizer goes.
async fn release_filtered(
    ctx: &SyncContext<'_>,
    remote_ref: &ObjectRef,
    remote: &Value,
) -> Result<Step> {
    if has_finalizer(remote, &ctx.config.finalizer) {
        set_finalizers(ctx, remote_ref, remote, false, false).await?;
    }
    Ok(Step::Done)
}

async fn workspace_path(ctx: &SyncContext<'_>, target: &PrimarySync) -> Result<Option<String>> {
    if !target.pr.spec.enable_workspace_paths {
        return Ok(None);
    }
    let lc: Option<LogicalCluster> = ctx
        .sides
        .kcp
        .get_typed(None, kcp_core::kcp::LOGICAL_CLUSTER_NAME)
        .await
        .map_err(|e| {
            Error::core(
                "reading LogicalCluster \"cluster\" for the workspace path",
                e,
            )
        })?;
    Ok(lc
        .and_then(|lc| lc.metadata.annotations)
        .and_then(|a| a.get(kcp_core::kcp::PATH_ANNOTATION).cloned()))
}

/// The local copy: from the index when it is authoritative (the local watch listed
/// everything), else through its link labels.
async fn find_local(
    ctx: &SyncContext<'_>,
    target: &PrimarySync,
    key: &RemoteObjectKey,
) -> Result<Option<Value>> {
    match ctx.caches.map(|c| &c.local).filter(|i| i.is_synced()) {
        Some(index) => match index.get(key) {
            Cached::Live(local) => Ok(Some((*local).clone())),
            Cached::Deleted | Cached::Unknown => Ok(None),
        },
        None => list_local(ctx, target, key).await,
    }
}

/// The local copy, found by listing with its link labels (at most one may exist).
async fn list_local(
    ctx: &SyncContext<'_>,
    target: &PrimarySync,
    key: &RemoteObjectKey,
) -> Result<Option<Value>> {
    let list = ctx
        .sides
        .service
        .list(
            &target.local_gvk,
            None,
            &ListOptions::labels(key.local_selector()),
        )
        .await
        .map_err(|e| Error::core(format!("finding the local copy of {key}"), e))?;
    match list.items.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(to_json(one)?)),
        _ => Err(Error::InvalidObject {
            object: key.to_string(),
            field: "local copy".into(),
            reason: format!(
                "{} local objects carry its link labels; expected one",
                list.items.len()
            ),
        }),
    }
}

/// Adds or removes our finalizer (see [`patch_finalizers`]); an `inherited` shared finalizer
/// goes either way.
async fn set_finalizers(
    ctx: &SyncContext<'_>,
    target: &ObjectRef,
    remote: &Value,
    add: bool,
    inherited: bool,
) -> Result<()> {
    let ours = ctx.config.finalizer.as_str();
    let (added, mut removed) = if add {
        (vec![ours], vec![])
    } else {
        (vec![], vec![ours])
    };
    if inherited {
        removed.push(CLEANUP_FINALIZER);
    }
    let written = patch_finalizers(ctx.sides.kcp, target, remote, &added, &removed).await?;
    remember_remote(ctx, &written);
    Ok(())
}

async fn handle_deletion(
    ctx: &SyncContext<'_>,
    target: &PrimarySync,
    remote_ref: &ObjectRef,
    pair: &Pair,
    store: &StateStore<'_>,
) -> Result<Step> {
    let inherited = inherits_shared_finalizer(ctx, pair, store).await?;
    if !has_finalizer(&pair.remote, &ctx.config.finalizer) && !inherited {
        return Ok(Step::Done);
    }
    if let Some(local) = &pair.local {
        if related_step(ctx, target, &pair.remote, local, &pair.key, store, true).await? {
            return Ok(Step::Again);
        }
        if !is_deleting(local) {
            let local_ref = object_ref(
                &target.local_gvk,
                meta_opt(local, "namespace"),
                meta(local, "name"),
            );
            event(ctx, &pair.remote, EventType::Normal, CLEANUP.0, CLEANUP.1).await;
            let outcome = ctx
                .sides
                .service
                .delete(&local_ref, &DeleteOptions::default())
                .await
                .map_err(|e| Error::core(format!("deleting the local copy of {}", pair.key), e))?;
            if let DeleteOutcome::Terminating(deleting) = outcome {
                remember_local(ctx, &pair.key, &deleting);
                // Its final deletion (a watched event) brings the primary back; a look now and
                // then covers a missed event.
                return Ok(Step::Waiting);
            }
            if let Some(caches) = ctx.caches {
                caches.local.remove(&pair.key, local);
            }
        } else {
            return Ok(Step::Waiting);
        }
    }
    set_finalizers(ctx, remote_ref, &pair.remote, false, inherited).await?;
    store.delete().await?;
    event(ctx, &pair.remote, EventType::Normal, DELETED.0, DELETED.1).await;
    Ok(Step::Gone)
}

fn meta<'a>(obj: &'a Value, field: &str) -> &'a str {
    crate::metadata::meta_str(obj, field)
}

fn meta_opt<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    Some(meta(obj, field)).filter(|s| !s.is_empty())
}

async fn sync_live(
    ctx: &SyncContext<'_>,
    target: &PrimarySync,
    remote_ref: &ObjectRef,
    pair: Pair,
    store: &StateStore<'_>,
) -> Result<Step> {
    let dest_template = match &pair.local {
        Some(local) => local.clone(),
        None => new_local(ctx, target, &pair)?,
    };
    let source = target
        .mutator
        .mutate_spec(ctx.engine, &pair.remote, Some(&dest_template))?;
    let Some(local) = pair.local.clone() else {
        if create_local(ctx, target, &pair, &source, dest_template).await? {
            store
                .put(&state_key(&pair.key), &source, &target.subresources)
                .await?;
        }
        event(ctx, &pair.remote, EventType::Normal, PLACED.0, PLACED.1).await;
        return Ok(Step::Again);
    };
    if is_deleting(&local) {
        return Ok(Step::Done);
    }
    let local = target
        .mutator
        .mutate_status(ctx.engine, &local, Some(&source))?;
    if sync_spec(ctx, target, &pair.key, &source, &local, store).await? {
        event(ctx, &pair.remote, EventType::Normal, SYNCED.0, SYNCED.1).await;
        return Ok(Step::Again);
    }
    sync_status_back(ctx, target, remote_ref, &pair.remote, &source, &local).await?;
    if related_step(ctx, target, &pair.remote, &local, &pair.key, store, false).await? {
        return Ok(Step::Again);
    }
    Ok(Step::Done)
}

/// Runs every related resource of the pair; whether any wrote.
async fn related_step(
    ctx: &SyncContext<'_>,
    target: &PrimarySync,
    remote: &Value,
    local: &Value,
    key: &RemoteObjectKey,
    store: &StateStore<'_>,
    deleting: bool,
) -> Result<bool> {
    let sides = RelatedSides {
        kcp: ctx.sides.kcp,
        service: ctx.sides.service,
        primaries: crate::related::Primaries {
            local,
            remote,
            cluster: ctx.sides.cluster,
            path: key.workspace_path.as_deref().unwrap_or_default(),
        },
        store,
        engine: ctx.engine,
        finalizer: &ctx.config.finalizer,
        events: ctx.kcp_events(),
    };
    let (mut wrote, mut wanted) = (false, Vec::new());
    for rel in &target.related {
        let pass = sync_related(&sides, rel, deleting).await?;
        wrote |= pass.wrote;
        wanted.extend(pass.annotations);
    }
    if !deleting {
        wrote |= prune_primary_annotations(&sides, &wanted).await?;
    }
    Ok(wrote)
}

fn state_key(key: &RemoteObjectKey) -> String {
    state::object_key(&key.cluster, &key.namespace, &key.name)
}

/// The local copy as it would be created: the remote object with the local GVK, the
/// rendered name and namespace, stripped metadata, link labels and annotations.
fn new_local(ctx: &SyncContext<'_>, target: &PrimarySync, pair: &Pair) -> Result<Value> {
    let name = local_name(
        ctx.engine,
        target.pr.spec.naming.as_ref(),
        &pair.remote,
        ctx.sides.cluster,
        pair.key.workspace_path.as_deref(),
        target.local_namespaced,
    )?;
    let mut local = pair.remote.clone();
    strip_metadata(&mut local);
    local["apiVersion"] = json!(api_version(&target.local_gvk));
    local["kind"] = json!(target.local_gvk.kind);
    local["metadata"]["name"] = json!(name.name);
    match name.namespace {
        Some(ns) => local["metadata"]["namespace"] = json!(ns),
        None => {
            if let Some(m) = local["metadata"].as_object_mut() {
                m.remove("namespace");
            }
        }
    }
    link(ctx, &mut local, &pair.key);
    Ok(local)
}

fn link(ctx: &SyncContext<'_>, local: &mut Value, key: &RemoteObjectKey) {
    let mut labels = key.labels();
    labels.insert(AGENT_NAME_LABEL.to_owned(), ctx.config.agent.clone());
    ensure_map_entries(local, "labels", &labels);
    ensure_map_entries(local, "annotations", &key.annotations());
}

/// The `apiVersion` of `gvk`.
pub(crate) fn api_version(gvk: &GroupVersionKind) -> String {
    if gvk.group.is_empty() {
        gvk.version.clone()
    } else {
        format!("{}/{}", gvk.group, gvk.version)
    }
}

/// Creates the local copy; `false` when an existing object was adopted instead (it then
/// gets a full update in the next step, as no state is stored for it; upstream stores the
/// state on adoption, so an adopted object keeps its old spec).
async fn create_local(
    ctx: &SyncContext<'_>,
    target: &PrimarySync,
    pair: &Pair,
    source: &Value,
    template: Value,
) -> Result<bool> {
    // The copy carries the mutated content under the name and link of the template.
    let mut local = source.clone();
    strip_metadata(&mut local);
    local["apiVersion"] = template["apiVersion"].clone();
    local["kind"] = template["kind"].clone();
    local["metadata"] = template["metadata"].clone();
    for key in &target.subresources {
        if let Some(m) = local.as_object_mut() {
            m.remove(*key);
        }
    }
    if let Some(ns) = meta_opt(&local, "namespace") {
        ensure_known_namespace(ctx, ns).await?;
    }
    match ctx.sides.service.create(&from_json(local.clone())?).await {
        Ok(created) => {
            remember_local(ctx, &pair.key, &created);
            Ok(true)
        }
        Err(e @ kcp_core::Error::NamespaceNotFound { .. }) => {
            if let (Some(caches), Some(ns)) = (ctx.caches, meta_opt(&local, "namespace")) {
                caches.forget_namespace(ns);
            }
            Err(Error::core(
                format!("creating the local copy of {}", pair.key),
                e,
            ))
        }
        Err(e) if e.is_already_exists() => adopt(ctx, target, pair, &local).await.map(|()| false),
        Err(e) => Err(Error::core(
            format!("creating the local copy of {}", pair.key),
            e,
        )),
    }
}

/// Creates Namespace `name` unless the caches or the server know it exists.
async fn ensure_known_namespace(ctx: &SyncContext<'_>, name: &str) -> Result<()> {
    if ctx.caches.is_some_and(|c| c.has_namespace(name)) {
        return Ok(());
    }
    ensure_namespace(ctx.sides.service, name).await?;
    if let Some(caches) = ctx.caches {
        caches.add_namespace(name);
    }
    Ok(())
}

/// Creates Namespace `name` unless it exists.
pub(crate) async fn ensure_namespace(service: &dyn ObjectClient, name: &str) -> Result<()> {
    let found: Option<Namespace> = service
        .get_typed(None, name)
        .await
        .map_err(|e| Error::core(format!("reading Namespace {name:?}"), e))?;
    if found.is_some() {
        return Ok(());
    }
    let ns = Namespace {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        },
        ..Default::default()
    };
    match service.create_typed(&ns).await {
        Ok(_) => Ok(()),
        Err(e) if e.is_already_exists() => Ok(()),
        Err(e) => Err(Error::core(format!("creating Namespace {name:?}"), e)),
    }
}

/// Takes over an existing local object of the wanted name, unless it belongs to another kcp
/// object or another agent.
async fn adopt(
    ctx: &SyncContext<'_>,
    target: &PrimarySync,
    pair: &Pair,
    wanted: &Value,
) -> Result<()> {
    let local_ref = object_ref(
        &target.local_gvk,
        meta_opt(wanted, "namespace"),
        meta(wanted, "name"),
    );
    let Some(existing) = get_json(ctx.sides.service, &local_ref).await? else {
        return Ok(());
    };
    if is_deleting(&existing) {
        return Ok(());
    }
    let owner_agent = meta_map_str(&existing, "labels", AGENT_NAME_LABEL);
    let linked = RemoteObjectKey::from_local(&existing);
    let foreign_agent = owner_agent.is_some_and(|a| a != ctx.config.agent);
    let foreign_link = linked.is_some_and(|k| {
        k.cluster != pair.key.cluster
            || k.namespace != pair.key.namespace
            || k.name != pair.key.name
    });
    if foreign_agent || foreign_link {
        return Err(Error::InvalidObject {
            object: pair.key.to_string(),
            field: "local copy".into(),
            reason: format!(
                "{local_ref} already exists and belongs to another kcp object or agent; not adopting it"
            ),
        });
    }
    let mut adopted = existing;
    link(ctx, &mut adopted, &pair.key);
    let written = ctx
        .sides
        .service
        .replace(&from_json(adopted)?, Subresource::Main)
        .await
        .map_err(|e| Error::core(format!("adopting {local_ref}"), e))?;
    remember_local(ctx, &pair.key, &written);
    Ok(())
}

/// The spec sync: the three-way merge from the last-known state to the source (see
/// [`Destination::write_spec`]). Returns whether anything was written.
async fn sync_spec(
    ctx: &SyncContext<'_>,
    target: &PrimarySync,
    key: &RemoteObjectKey,
    source: &Value,
    local: &Value,
    store: &StateStore<'_>,
) -> Result<bool> {
    let mut current = source.clone();
    strip_metadata(&mut current);
    let local_ref = object_ref(
        &target.local_gvk,
        meta_opt(local, "namespace"),
        meta(local, "name"),
    );
    let last = store.get(&state_key(key)).await?;
    if last.is_some() {
        repair_link_metadata(ctx, &mut current, local, key);
    }
    let destination = Destination {
        client: ctx.sides.service,
        target: &local_ref,
        subresources: &target.subresources,
        carry_labels: true,
        context: "",
    };
    let Some(written) = destination.write_spec(last, &current, local).await? else {
        return Ok(false);
    };
    remember_local(ctx, key, &written);
    store
        .put(&state_key(key), &current, &target.subresources)
        .await?;
    Ok(true)
}

/// Adds the link labels and annotations the local copy lacks to the source copy, so that the
/// patch repairs them.
fn repair_link_metadata(
    ctx: &SyncContext<'_>,
    current: &mut Value,
    local: &Value,
    key: &RemoteObjectKey,
) {
    let mut labels = key.labels();
    labels.insert(AGENT_NAME_LABEL.to_owned(), ctx.config.agent.clone());
    for (field, wanted) in [("labels", labels), ("annotations", key.annotations())] {
        let missing = wanted
            .into_iter()
            .filter(|(k, v)| meta_map_str(local, field, k) != Some(v.as_str()))
            .collect();
        ensure_map_entries(current, field, &missing);
    }
}

/// Copies the local status to kcp when it differs and kcp's type has a status subresource.
async fn sync_status_back(
    ctx: &SyncContext<'_>,
    target: &PrimarySync,
    remote_ref: &ObjectRef,
    remote: &Value,
    source: &Value,
    local: &Value,
) -> Result<()> {
    if source.get("status") == local.get("status") || local.get("status").is_none() {
        return Ok(());
    }
    let info = ctx
        .sides
        .kcp
        .resolve(&target.remote_gvk)
        .await
        .map_err(|e| Error::core(format!("resolving {} in kcp", target.remote_gvk.kind), e))?;
    if !info.has_status() {
        tracing::debug!("the kcp type has no status subresource; status is not synced back");
        return Ok(());
    }
    let mut updated = source.clone();
    updated["status"] = local["status"].clone();
    updated["metadata"]["resourceVersion"] = remote["metadata"]["resourceVersion"].clone();
    let written = ctx
        .sides
        .kcp
        .replace(&from_json(updated)?, Subresource::Status)
        .await
        .map_err(|e| Error::core(format!("updating the status of {remote_ref}"), e))?;
    remember_remote(ctx, &written);
    event(
        ctx,
        remote,
        EventType::Normal,
        STATUS_SYNCED.0,
        STATUS_SYNCED.1,
    )
    .await;
    Ok(())
}

/// Records an Event on the kcp object; failures are logged, never fatal.
async fn event(
    ctx: &SyncContext<'_>,
    remote: &Value,
    kind: EventType,
    reason: &str,
    message: &str,
) {
    ctx.kcp_events().record(remote, kind, reason, message).await;
}
