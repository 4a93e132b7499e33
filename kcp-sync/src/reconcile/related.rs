//! Related resources (upstream §4.7), the I/O part: find the related objects of one primary
//! pair on the origin side, copy them to the destination side, keep them in step (last-known
//! state in the primary's state Secret, so local changes survive), forward their status with
//! `syncStatus`, point the kcp primary at service-origin copies with the
//! `related-resources.syncagent.kcp.io/<identifier>.<index>` annotation, and clean up on
//! deletion (`cleanup`, or always for kcp originals: their local copies go, the originals
//! stay and lose the finalizer).

use std::collections::BTreeMap;

use kcp_core::kube::api::GroupVersionKind;
use kcp_core::runtime::EventType;
use kcp_core::{
    DeleteOptions, ListOptions, ObjectClient, ObjectPatch, ObjectRef, PatchOptions, Subresource,
    TemplateEngine,
};
use serde_json::{Value, json};

use super::discovery::{ApiDocuments, kind_of_resource};
use super::dynamic_json::{from_json, get_json, to_json};
use super::finalizers::patch_finalizers;
use super::kcp_events::{
    ACCEPTED, CLEANUP, DELETED, KcpEvents, PLACED, STATUS_SUBRESOURCE_MISSING, SYNCED,
};
use super::spec_write::Destination;
use super::state_store::StateStore;
use super::sync::{api_version, object_ref};
use crate::api::{RelatedResourceObjectSpec, RelatedResourceOrigin, RelatedResourceSpec};
use crate::error::{Error, Result};
use crate::metadata::{has_finalizer, is_deleting, meta_map_str, meta_str, strip_metadata};
use crate::mutation::Mutator;
use crate::related::{
    Primaries, annotation_key, annotation_value, reference_pairs, rewrite_name, selector_string,
    template_pair,
};
use crate::related_namespaces::ExtraNamespaces;
use crate::schema::crd_gvk;
use crate::state;

/// One related resource of a PublishedResource, with both kinds resolved.
#[derive(Debug, Clone)]
pub struct RelatedSync {
    /// The spec.
    pub spec: RelatedResourceSpec,
    /// Its position in `spec.related` (for errors and the annotation).
    pub index: usize,
    /// The kind on the origin side.
    pub origin_gvk: GroupVersionKind,
    /// The kind on the destination side.
    pub dest_gvk: GroupVersionKind,
    /// The compiled `mutation`.
    pub mutator: Mutator,
    /// The service namespaces allowed besides the local copy's.
    pub extra_namespaces: ExtraNamespaces,
}

/// Kinds of the core group a related resource may name.
const CORE_KINDS: [(&str, &str); 8] = [
    ("configmaps", "ConfigMap"),
    ("secrets", "Secret"),
    ("services", "Service"),
    ("serviceaccounts", "ServiceAccount"),
    ("persistentvolumeclaims", "PersistentVolumeClaim"),
    ("pods", "Pod"),
    ("namespaces", "Namespace"),
    ("events", "Event"),
];

/// The kind of `group/version/resource`: core kinds from a table, other kinds from the CRD
/// `<resource>.<group>` on the service cluster or, for builtin kinds (no CRD), from its
/// discovery document when `docs` can read it.
pub async fn resolve_kind(
    service: &dyn ObjectClient,
    docs: Option<&dyn ApiDocuments>,
    (group, version, resource): (&str, &str, &str),
) -> Result<GroupVersionKind> {
    if group.is_empty()
        && let Some((_, kind)) = CORE_KINDS.iter().find(|(r, _)| *r == resource)
    {
        return Ok(GroupVersionKind::gvk("", version, kind));
    }
    let name = format!("{resource}.{group}");
    let crd = get_json(service, &ObjectRef::cluster_scoped(crd_gvk(), &name)).await?;
    let from_crd = crd
        .as_ref()
        .and_then(|c| c.pointer("/spec/names/kind"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let kind = match (from_crd, docs) {
        (Some(kind), _) => Some(kind),
        (None, Some(docs)) => kind_of_resource(docs, (group, version, resource)).await?,
        (None, None) => None,
    };
    let kind = kind.ok_or_else(|| Error::InvalidObject {
        object: format!("related resource {group}/{version}/{resource}"),
        field: "resource".into(),
        reason: format!(
            "neither a CustomResourceDefinition {name:?} nor the service cluster's discovery names its kind"
        ),
    })?;
    Ok(GroupVersionKind::gvk(group, version, &kind))
}

/// The kinds of a related resource on the service cluster and in kcp. The service side's is
/// looked up there; kcp's too when the service cluster serves it, else (a kind only kcp serves:
/// another PublishedResource's projection into a kcp group, another export's resource through
/// `identityHash`) it is the service side's kind under kcp's group and version, as upstream's
/// kcp-side REST mapping finds it when the resource keeps its name.
async fn resolve_sides(
    service: &dyn ObjectClient,
    docs: Option<&dyn ApiDocuments>,
    spec: &RelatedResourceSpec,
) -> Result<(GroupVersionKind, GroupVersionKind)> {
    let (origin, dest) = (spec.origin_gvr(), spec.destination_gvr());
    let ((sg, sv, sr), (kg, kv, kr)) = match spec.origin {
        RelatedResourceOrigin::Kcp => (dest, origin),
        RelatedResourceOrigin::Service => (origin, dest),
    };
    let service_gvk = resolve_kind(service, docs, (&sg, &sv, &sr)).await?;
    if (&kg, &kv, &kr) == (&sg, &sv, &sr) {
        // No projection: the same kind on both sides, looked up once.
        return Ok((service_gvk.clone(), service_gvk));
    }
    let kcp_gvk = match resolve_kind(service, docs, (&kg, &kv, &kr)).await {
        Ok(gvk) => gvk,
        Err(Error::InvalidObject { .. }) if kr == sr => {
            GroupVersionKind::gvk(&kg, &kv, &service_gvk.kind)
        }
        Err(e) => return Err(e),
    };
    Ok((service_gvk, kcp_gvk))
}

impl RelatedSync {
    /// Resolves and compiles `spec.related[index]` of PublishedResource `owner`, whose objects
    /// may live in the service namespaces `extra_namespaces` besides the local copy's.
    pub async fn new(
        service: &dyn ObjectClient,
        docs: Option<&dyn ApiDocuments>,
        (owner, extra_namespaces): (&str, ExtraNamespaces),
        index: usize,
        spec: &RelatedResourceSpec,
    ) -> Result<Self> {
        let (service_gvk, kcp_gvk) = resolve_sides(service, docs, spec).await?;
        let (origin_gvk, dest_gvk) = match spec.origin {
            RelatedResourceOrigin::Kcp => (kcp_gvk, service_gvk),
            RelatedResourceOrigin::Service => (service_gvk, kcp_gvk),
        };
        Ok(Self {
            origin_gvk,
            dest_gvk,
            mutator: Mutator::new(
                owner,
                &format!("spec.related[{index}].mutation"),
                spec.mutation.as_ref(),
            )?,
            spec: spec.clone(),
            index,
            extra_namespaces,
        })
    }

    fn location(&self) -> String {
        format!("spec.related[{}] ({})", self.index, self.spec.identifier)
    }
}

/// The two sides of one related sync.
pub struct RelatedSides<'a> {
    /// The consumer cluster in kcp.
    pub kcp: &'a dyn ObjectClient,
    /// The service cluster.
    pub service: &'a dyn ObjectClient,
    /// The primaries.
    pub primaries: Primaries<'a>,
    /// The primary's state Secret.
    pub store: &'a StateStore<'a>,
    /// The template engine.
    pub engine: &'a TemplateEngine,
    /// The finalizer on kcp originals.
    pub finalizer: &'a str,
    /// Events on the kcp side of each related object, as for primaries.
    pub events: KcpEvents<'a>,
}

impl RelatedSides<'_> {
    /// Records an Event on the kcp side of a related pair: the copy when the original is on the
    /// service cluster, else the original (upstream writes Events in kcp only).
    async fn event(&self, rel: &RelatedSync, pair: (&Value, &Value), reason: &str, message: &str) {
        self.record(rel, pair, EventType::Normal, (reason, message))
            .await;
    }

    /// [`Self::event`] of any type.
    async fn record(
        &self,
        rel: &RelatedSync,
        (origin, dest): (&Value, &Value),
        kind: EventType,
        (reason, message): (&str, &str),
    ) {
        let on = match rel.spec.origin {
            RelatedResourceOrigin::Service => dest,
            RelatedResourceOrigin::Kcp => origin,
        };
        self.events.record(on, kind, reason, message).await;
    }

    fn clients(&self, origin: RelatedResourceOrigin) -> (&dyn ObjectClient, &dyn ObjectClient) {
        match origin {
            RelatedResourceOrigin::Kcp => (self.kcp, self.service),
            RelatedResourceOrigin::Service => (self.service, self.kcp),
        }
    }
}

/// One origin object and where its copy goes.
struct Located {
    origin: Value,
    dest_namespace: String,
    dest_name: String,
}

/// What one related resource did for a primary pair.
#[derive(Debug, Default)]
pub struct RelatedPass {
    /// Whether anything was written (the caller runs another step).
    pub wrote: bool,
    /// The `related-resources.syncagent.kcp.io/*` annotations the kcp primary should carry
    /// for this related resource (one per service-origin copy).
    pub annotations: Vec<String>,
}

/// Syncs every object of `rel` for the primary pair; `deleting` runs the deletion mode.
pub async fn sync_related(
    sides: &RelatedSides<'_>,
    rel: &RelatedSync,
    deleting: bool,
) -> Result<RelatedPass> {
    let located = locate(sides, rel).await?;
    let mut pass = RelatedPass::default();
    for (index, item) in located.iter().enumerate() {
        pass.wrote |= if deleting {
            delete_copy(sides, rel, item).await?
        } else {
            sync_copy(sides, rel, item).await?
        };
        if !deleting && rel.spec.origin == RelatedResourceOrigin::Service {
            pass.wrote |= annotate_primary(sides, rel, index, item).await?;
            pass.annotations
                .push(annotation_key(&rel.spec.identifier, index));
        }
    }
    Ok(pass)
}

/// Removes the `related-resources.syncagent.kcp.io/*` annotations of the kcp primary that no
/// related copy backs any more (a copy gone, a related resource removed from the
/// PublishedResource); upstream leaves them pointing at nothing. Returns whether it patched.
pub async fn prune_primary_annotations(
    sides: &RelatedSides<'_>,
    wanted: &[String],
) -> Result<bool> {
    let remote = sides.primaries.remote;
    let stale = crate::related::stale_annotations(remote, wanted);
    if stale.is_empty() {
        return Ok(false);
    }
    let removals: BTreeMap<String, Value> = stale.into_iter().map(|k| (k, Value::Null)).collect();
    patch_primary_annotations(
        sides,
        removals,
        "pruning the related-resource annotations of",
    )
    .await?;
    Ok(true)
}

/// The reference of the kcp primary.
fn primary_ref(remote: &Value) -> Result<ObjectRef> {
    let gvk = kcp_core::gvk_of(&from_json(remote.clone())?)
        .map_err(|e| Error::core("reading the kcp primary's kind", e))?;
    let (ns, name) = (meta_str(remote, "namespace"), meta_str(remote, "name"));
    Ok(if ns.is_empty() {
        ObjectRef::cluster_scoped(gvk, name)
    } else {
        ObjectRef::namespaced(gvk, ns, name)
    })
}

async fn locate(sides: &RelatedSides<'_>, rel: &RelatedSync) -> Result<Vec<Located>> {
    let origin = rel.spec.origin;
    let (origin_client, _) = sides.clients(origin);
    let namespaces = namespace_pairs(sides, rel).await?;
    let mut found = Vec::new();
    for (origin_ns, dest_ns) in namespaces {
        let service_ns = match origin {
            RelatedResourceOrigin::Service => &origin_ns,
            RelatedResourceOrigin::Kcp => &dest_ns,
        };
        check_service_namespace(sides, rel, service_ns)?;
        for (name, dest_name) in name_pairs(sides, rel, &origin_ns).await? {
            let target = if origin_ns.is_empty() {
                ObjectRef::cluster_scoped(rel.origin_gvk.clone(), &name)
            } else {
                ObjectRef::namespaced(rel.origin_gvk.clone(), &origin_ns, &name)
            };
            if let Some(obj) = get_json(origin_client, &target).await? {
                found.push(Located {
                    origin: obj,
                    dest_namespace: dest_ns.clone(),
                    dest_name,
                });
            }
        }
    }
    found.sort_by(|a, b| {
        (
            meta_str(&a.origin, "namespace"),
            meta_str(&a.origin, "name"),
        )
            .cmp(&(
                meta_str(&b.origin, "namespace"),
                meta_str(&b.origin, "name"),
            ))
    });
    Ok(found)
}

/// Refuses a service namespace the PublishedResource does not allow (see
/// [`crate::related_namespaces`]): a tenant's object must not steer the agent elsewhere.
fn check_service_namespace(
    sides: &RelatedSides<'_>,
    rel: &RelatedSync,
    namespace: &str,
) -> Result<()> {
    let primary = meta_str(sides.primaries.local, "namespace");
    if rel.extra_namespaces.allows(primary, namespace) {
        return Ok(());
    }
    let remote = sides.primaries.remote;
    Err(Error::InvalidObject {
        object: format!(
            "{} of {} {}/{} in cluster {}",
            rel.location(),
            remote["kind"].as_str().unwrap_or_default(),
            meta_str(remote, "namespace"),
            meta_str(remote, "name"),
            sides.primaries.cluster
        ),
        field: "object.namespace".into(),
        reason: rel.extra_namespaces.refusal(primary, namespace),
    })
}

async fn namespace_pairs(
    sides: &RelatedSides<'_>,
    rel: &RelatedSync,
) -> Result<Vec<(String, String)>> {
    let (origin_primary, dest_primary) = sides.primaries.by_origin(rel.spec.origin);
    let location = format!("{}.object.namespace", rel.location());
    let Some(spec) = &rel.spec.object.namespace else {
        let (o, d) = (
            meta_str(origin_primary, "namespace"),
            meta_str(dest_primary, "namespace"),
        );
        if o.is_empty() || d.is_empty() {
            return Err(Error::InvalidSpec {
                published_resource: rel.location(),
                field: "object.namespace".into(),
                reason: "a cluster-scoped primary needs object.namespace".into(),
            });
        }
        return Ok(vec![(o.to_owned(), d.to_owned())]);
    };
    locate_pairs(sides, rel, spec, &location, None).await
}

async fn name_pairs(
    sides: &RelatedSides<'_>,
    rel: &RelatedSync,
    origin_ns: &str,
) -> Result<Vec<(String, String)>> {
    let location = format!("{}.object", rel.location());
    locate_pairs(
        sides,
        rel,
        &rel.spec.object.spec,
        &location,
        Some(origin_ns),
    )
    .await
}

/// Pairs from one locator; `namespace` is `Some` for names (the selector then lists the
/// related kind in it) and `None` for namespaces (the selector lists Namespaces).
async fn locate_pairs(
    sides: &RelatedSides<'_>,
    rel: &RelatedSync,
    spec: &RelatedResourceObjectSpec,
    location: &str,
    namespace: Option<&str>,
) -> Result<Vec<(String, String)>> {
    let (origin_primary, dest_primary) = sides.primaries.by_origin(rel.spec.origin);
    if let Some(reference) = &spec.reference {
        return reference_pairs(location, reference, origin_primary, dest_primary);
    }
    if let Some(template) = &spec.template {
        let pair = template_pair(
            sides.engine,
            location,
            &template.template,
            rel.spec.origin,
            &sides.primaries,
        )?;
        return Ok(pair.into_iter().collect());
    }
    let Some(selector) = &spec.selector else {
        return Err(Error::InvalidSpec {
            published_resource: location.to_owned(),
            field: "selector/reference/template".into(),
            reason: "one locator must be set".into(),
        });
    };
    let labels = selector_string(sides.engine, location, selector, &sides.primaries)?;
    let (origin_client, _) = sides.clients(rel.spec.origin);
    let (gvk, ns) = match namespace {
        Some(ns) => (rel.origin_gvk.clone(), Some(ns).filter(|n| !n.is_empty())),
        None => (GroupVersionKind::gvk("", "v1", "Namespace"), None),
    };
    let list = origin_client
        .list(&gvk, ns, &ListOptions::labels(labels))
        .await
        .map_err(|e| Error::core(format!("{location}: listing {}", gvk.kind), e))?;
    let mut pairs = Vec::new();
    for item in &list.items {
        let value = to_json(item)?;
        let name = meta_str(&value, "name").to_owned();
        let related = namespace.is_some().then_some(&value);
        let dest = rewrite_name(
            sides.engine,
            location,
            selector,
            &name,
            related,
            &sides.primaries,
        )?;
        if !dest.is_empty() {
            pairs.push((name, dest));
        }
    }
    Ok(pairs)
}

fn dest_ref(rel: &RelatedSync, item: &Located) -> ObjectRef {
    if item.dest_namespace.is_empty() {
        ObjectRef::cluster_scoped(rel.dest_gvk.clone(), &item.dest_name)
    } else {
        ObjectRef::namespaced(rel.dest_gvk.clone(), &item.dest_namespace, &item.dest_name)
    }
}

fn state_key(sides: &RelatedSides<'_>, rel: &RelatedSync, origin: &Value) -> String {
    let cluster = match rel.spec.origin {
        RelatedResourceOrigin::Kcp => sides.primaries.cluster,
        RelatedResourceOrigin::Service => "",
    };
    state::object_key(
        cluster,
        meta_str(origin, "namespace"),
        meta_str(origin, "name"),
    )
}

fn subresources(rel: &RelatedSync) -> Vec<&'static str> {
    if rel.spec.sync_status {
        vec!["status"]
    } else {
        vec![]
    }
}

/// Copies one origin object to its destination: a kcp original gets the finalizer first, then
/// the copy is created, or its spec brought up to date, or else (with `syncStatus`) its status
/// forwarded. Returns whether it wrote.
async fn sync_copy(sides: &RelatedSides<'_>, rel: &RelatedSync, item: &Located) -> Result<bool> {
    let (_, dest_client) = sides.clients(rel.spec.origin);
    if rel.spec.origin == RelatedResourceOrigin::Kcp
        && !has_finalizer(&item.origin, sides.finalizer)
    {
        set_finalizer(sides, rel, &item.origin, true).await?;
        sides
            .event(rel, (&item.origin, &Value::Null), ACCEPTED.0, ACCEPTED.1)
            .await;
        return Ok(true);
    }
    let target = dest_ref(rel, item);
    // Any error reading the destination counts as "not found", as upstream.
    let dest = get_json(dest_client, &target).await.unwrap_or_default();
    let source = rel
        .mutator
        .mutate_spec(sides.engine, &item.origin, dest.as_ref())?;
    let Some(dest) = dest else {
        create_copy(sides, rel, item, &target, &source).await?;
        return Ok(true);
    };
    if is_deleting(&dest) {
        return Ok(false);
    }
    let wrote = update_copy(sides, rel, item, &target, &source, &dest).await?;
    if rel.spec.sync_status && source.get("status") != dest.get("status") && !wrote {
        forward_status(sides, rel, &target, &source, &dest).await?;
    }
    Ok(wrote)
}

/// Creates the copy `target` of the (mutated) origin `source` and stores its state.
async fn create_copy(
    sides: &RelatedSides<'_>,
    rel: &RelatedSync,
    item: &Located,
    target: &ObjectRef,
    source: &Value,
) -> Result<()> {
    let (_, dest_client) = sides.clients(rel.spec.origin);
    let mut copy = source.clone();
    strip_metadata(&mut copy);
    copy["apiVersion"] = json!(api_version(&rel.dest_gvk));
    copy["kind"] = json!(rel.dest_gvk.kind);
    copy["metadata"]["name"] = json!(item.dest_name);
    if !item.dest_namespace.is_empty() {
        copy["metadata"]["namespace"] = json!(item.dest_namespace);
        super::sync::ensure_namespace(dest_client, &item.dest_namespace).await?;
    }
    let created = dest_client
        .create(&from_json(copy)?)
        .await
        .map_err(|e| Error::core(format!("{}: creating {target}", rel.location()), e))?;
    sides
        .event(rel, (&item.origin, &to_json(&created)?), PLACED.0, PLACED.1)
        .await;
    let key = state_key(sides, rel, &item.origin);
    sides.store.put(&key, source, &subresources(rel)).await
}

/// Brings the spec of the existing copy `dest` to the (mutated) origin `source` with the
/// three-way merge, as for primaries but keeping the copy's labels and annotations on a full
/// update. Returns whether it wrote.
async fn update_copy(
    sides: &RelatedSides<'_>,
    rel: &RelatedSync,
    item: &Located,
    target: &ObjectRef,
    source: &Value,
    dest: &Value,
) -> Result<bool> {
    let (_, dest_client) = sides.clients(rel.spec.origin);
    let mut current = source.clone();
    strip_metadata(&mut current);
    let (key, subs) = (state_key(sides, rel, &item.origin), subresources(rel));
    let context = format!("{}: ", rel.location());
    let destination = Destination {
        client: dest_client,
        target,
        subresources: &subs,
        carry_labels: false,
        context: &context,
    };
    let last = sides.store.get(&key).await?;
    if destination
        .write_spec(last, &current, dest)
        .await?
        .is_none()
    {
        return Ok(false);
    }
    sides.store.put(&key, &current, &subs).await?;
    sides
        .event(rel, (&item.origin, dest), SYNCED.0, SYNCED.1)
        .await;
    Ok(true)
}

/// Copies the origin's status onto its copy (`syncStatus`). A copy whose kind has no status
/// subresource gets upstream's Warning `StatusSubresourceMissing` instead, and the sync goes on.
async fn forward_status(
    sides: &RelatedSides<'_>,
    rel: &RelatedSync,
    target: &ObjectRef,
    source: &Value,
    dest: &Value,
) -> Result<()> {
    let (_, dest_client) = sides.clients(rel.spec.origin);
    let mut updated = dest.clone();
    updated["status"] = source.get("status").cloned().unwrap_or(Value::Null);
    match dest_client
        .replace(&from_json(updated)?, Subresource::Status)
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.is_not_found() => {
            tracing::warn!(related = %rel.location(), "the destination has no status subresource; status not synced");
            sides
                .record(
                    rel,
                    (source, dest),
                    EventType::Warning,
                    STATUS_SUBRESOURCE_MISSING,
                )
                .await;
            Ok(())
        }
        Err(e) => Err(Error::core(
            format!("{}: updating the status of {target}", rel.location()),
            e,
        )),
    }
}

/// Deletion mode: forced objects (`cleanup`, or kcp originals) lose their destination copy,
/// then the finalizer on the original.
async fn delete_copy(sides: &RelatedSides<'_>, rel: &RelatedSync, item: &Located) -> Result<bool> {
    let force = rel.spec.cleanup || rel.spec.origin == RelatedResourceOrigin::Kcp;
    if !force {
        return Ok(false);
    }
    let (_, dest_client) = sides.clients(rel.spec.origin);
    let target = dest_ref(rel, item);
    if let Some(dest) = get_json(dest_client, &target).await? {
        if !is_deleting(&dest) {
            sides
                .event(rel, (&item.origin, &dest), CLEANUP.0, CLEANUP.1)
                .await;
            dest_client
                .delete(&target, &DeleteOptions::default())
                .await
                .map_err(|e| Error::core(format!("{}: deleting {target}", rel.location()), e))?;
        }
        return Ok(true);
    }
    if has_finalizer(&item.origin, sides.finalizer) {
        set_finalizer(sides, rel, &item.origin, false).await?;
        // The copy is gone: with a service original there is no kcp object left to tell.
        if rel.spec.origin == RelatedResourceOrigin::Kcp {
            sides
                .event(rel, (&item.origin, &Value::Null), DELETED.0, DELETED.1)
                .await;
        }
        return Ok(true);
    }
    Ok(false)
}

/// Adds (or removes) the agent's finalizer on the kcp original `origin` (see
/// [`patch_finalizers`]).
async fn set_finalizer(
    sides: &RelatedSides<'_>,
    rel: &RelatedSync,
    origin: &Value,
    add: bool,
) -> Result<()> {
    let (origin_client, _) = sides.clients(rel.spec.origin);
    let (ns, name) = (meta_str(origin, "namespace"), meta_str(origin, "name"));
    let target = object_ref(&rel.origin_gvk, Some(ns), name);
    let ours = [sides.finalizer];
    let (added, removed): (&[&str], &[&str]) = if add { (&ours, &[]) } else { (&[], &ours) };
    patch_finalizers(origin_client, &target, origin, added, removed).await?;
    Ok(())
}

/// Points the kcp primary at a service-origin copy; returns whether it was patched.
async fn annotate_primary(
    sides: &RelatedSides<'_>,
    rel: &RelatedSync,
    index: usize,
    item: &Located,
) -> Result<bool> {
    let remote = sides.primaries.remote;
    let key = annotation_key(&rel.spec.identifier, index);
    let origin_version = item
        .origin
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let origin_kind = item
        .origin
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let value = annotation_value(
        &item.dest_namespace,
        &item.dest_name,
        origin_version,
        origin_kind,
    );
    if meta_map_str(remote, "annotations", &key) == Some(value.as_str()) {
        return Ok(false);
    }
    let annotation = BTreeMap::from([(key, Value::String(value))]);
    patch_primary_annotations(sides, annotation, "annotating").await?;
    Ok(true)
}

/// Merge-patches `annotations` (a null removes one) onto the kcp primary; `doing` says what,
/// in front of the object, in errors.
async fn patch_primary_annotations(
    sides: &RelatedSides<'_>,
    annotations: BTreeMap<String, Value>,
    doing: &str,
) -> Result<()> {
    let target = primary_ref(sides.primaries.remote)?;
    let patch = json!({"metadata": {"annotations": annotations}});
    sides
        .kcp
        .patch(
            &target,
            Subresource::Main,
            &ObjectPatch::Merge(patch),
            &PatchOptions::default(),
        )
        .await
        .map_err(|e| Error::core(format!("{doing} {target}"), e))?;
    Ok(())
}
