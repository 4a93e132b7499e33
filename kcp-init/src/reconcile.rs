//! Initializing one logical cluster: read the InitTarget fresh, render every source, build one
//! apply plan across all of them, apply it wave by wave with server-side apply, and remove the
//! initializer only when every object is in place.
//!
//! This is I/O over [`ObjectClient`]s and nothing else. [`initialize_cluster`] answers with
//! what it did or an [`Error`] that knows whether trying again can help
//! ([`Classify`](kcp_core::runtime::Classify)); the runtime's workers ([`crate::runner`]) decide
//! from that when to call it again.

use std::collections::BTreeMap;
use std::sync::PoisonError;

use kcp_core::apply::{Applier, ApplierConfig, ApplyPlan, RuleSet};
use kcp_core::kcp::{LOGICAL_CLUSTER_NAME, LogicalCluster};
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::runtime::Outcome;
use kcp_core::{ObjectClient, ObjectClientExt, ObjectRef, TemplateEngine};
use serde_json::Value;

use crate::api::{InitSource, InitTarget, InitTemplate};
use crate::error::Error;
use crate::objects::{Duplicate, GENERATED_ID_LABEL, first_source_wins, split_generated};
use crate::render::{TemplateContext, TemplateSource, render_template};

/// The field manager of everything the agent writes.
pub const FIELD_MANAGER: &str = "kcp-init-agent";

/// The reason of the Warning Events the agent records when it cannot initialize a cluster (on
/// the InitTarget; upstream's reason, so alerts written for the Go agent keep matching).
pub const EVENT_REASON: &str = "ReconcilingFailed";

/// Everything one cluster's initialization needs besides the cluster.
pub struct InitContext<'a> {
    /// Client of the config workspace (InitTargets and InitTemplates).
    pub config: &'a dyn ObjectClient,
    /// Name of the InitTarget this agent runs for.
    pub target: &'a str,
    /// The initializer this target removes (`<type cluster>:<type name>`).
    pub initializer: &'a str,
    /// Name of the WorkspaceType.
    pub workspace_type_name: &'a str,
    /// Path (or cluster name) of the WorkspaceType's workspace.
    pub workspace_type_path: &'a str,
    /// Template engine (with its parse cache).
    pub engine: &'a TemplateEngine,
    /// Applier settings (field manager, concurrency, readiness timeouts).
    pub applier: &'a ApplierConfig,
    /// InitTemplate sources kept current by a watch; a template not found there is read
    /// from the config workspace.
    pub templates: Option<&'a TemplateCache>,
}

/// InitTemplate sources by name, kept current by the agent's InitTemplate watch.
///
/// A writer that panicked while holding the lock leaves a map that is still a valid map, so a
/// poisoned lock is used as it is: an update is never dropped.
#[derive(Debug, Default)]
pub struct TemplateCache {
    sources: std::sync::RwLock<BTreeMap<String, TemplateSource>>,
}

impl TemplateCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the current source of a template ([`TemplateSource::of`] an InitTemplate).
    pub fn insert(&self, name: &str, source: TemplateSource) {
        let mut map = self.sources.write().unwrap_or_else(PoisonError::into_inner);
        map.insert(name.to_string(), source);
    }

    /// Replaces every entry (after the watch listed all templates again).
    pub fn replace_all(&self, sources: BTreeMap<String, TemplateSource>) {
        *self.sources.write().unwrap_or_else(PoisonError::into_inner) = sources;
    }

    /// Forgets a deleted template.
    pub fn remove(&self, name: &str) {
        let mut map = self.sources.write().unwrap_or_else(PoisonError::into_inner);
        map.remove(name);
    }

    /// The source of a template, if known.
    pub fn get(&self, name: &str) -> Option<TemplateSource> {
        let map = self.sources.read().unwrap_or_else(PoisonError::into_inner);
        map.get(name).cloned()
    }
}

/// What a successful [`initialize_cluster`] did.
///
/// Failures are [`Error`]s, which the runtime classifies: a transient one (a kind not served
/// yet, a 409/429/5xx, [`Error::Pending`]) is retried with backoff; a permanent one (a template
/// error, an invalid object, a 403) is recorded as a Warning Event and a `TemplateError`
/// condition, and trying again only helps once something is changed.
///
/// A success is always the runtime's [`Outcome::Done`] ([`Initialization::outcome`]): nothing
/// to look at again until something changes. This type says more than `Outcome` only because
/// the runner counts the clusters initialized and reports duplicate objects in the
/// InitTarget's status.
#[derive(Debug)]
pub enum Initialization {
    /// Every object is applied and the initializer was removed.
    Completed {
        /// How many objects were applied.
        objects: usize,
        /// Objects two sources rendered differently (the first source's was applied).
        duplicates: Vec<Duplicate>,
    },
    /// Nothing to do: the cluster is gone or no longer carries the initializer.
    NotOurs,
}

impl Initialization {
    /// The runtime's outcome of a successful initialization: done, whichever it was.
    pub fn outcome(&self) -> Outcome {
        Outcome::Done
    }
}

fn logical_cluster_ref() -> ObjectRef {
    ObjectRef::cluster_scoped(
        GroupVersionKind::gvk("core.kcp.io", "v1alpha1", "LogicalCluster"),
        LOGICAL_CLUSTER_NAME,
    )
}

fn carries(lc: &LogicalCluster, initializer: &str) -> bool {
    lc.status
        .as_ref()
        .and_then(|s| s.initializers.as_ref())
        .is_some_and(|i| i.iter().any(|x| x == initializer))
}

/// A kcp-core error met while initializing; it keeps its classification.
fn initializing(source: kcp_core::Error) -> Error {
    Error::Core {
        context: "initializing".into(),
        source,
    }
}

/// Why an attempt waits when the view announces a cluster but will not show its LogicalCluster.
const VIEW_LOST_CLUSTER: &str =
    "the view still announces the cluster but does not serve its LogicalCluster (yet or any more)";

/// Initializes the cluster `cluster` reached through `vw` (a client of
/// `<virtual workspace>/clusters/<cluster>`): load its sources, render them, apply the
/// objects, then finish (create the `generateName` objects, remove the initializer).
///
/// `seen` is the cluster's LogicalCluster as a watch last delivered it, if the caller has one:
/// it saves a read, and the initializer's removal still uses its resourceVersion, so a stale
/// copy only costs a retry.
pub async fn initialize_cluster(
    ctx: &InitContext<'_>,
    cluster: &str,
    vw: &dyn ObjectClient,
    seen: Option<DynamicObject>,
) -> Result<Initialization, Error> {
    let Some((read_at_start, lc)) = read_logical_cluster(ctx, cluster, vw, seen).await? else {
        return Ok(Initialization::NotOurs);
    };
    let Some(sources) = load_sources(ctx, vw).await? else {
        return Ok(Initialization::NotOurs);
    };
    let Rendered {
        mut objects,
        mut generated,
        duplicates,
    } = render_all(ctx, &lc, &sources)?;
    default_namespaces(vw, &mut objects).await?;
    default_namespaces(vw, &mut generated).await?;
    add_missing_default_namespace(vw, &mut objects, &generated).await?;
    let count = objects.len() + generated.len();
    apply(ctx, cluster, vw, objects).await?;
    create_generated(vw, &generated).await?;
    remove_initializer(vw, ctx.initializer, read_at_start).await?;
    tracing::info!(cluster, objects = count, "cluster initialized");
    Ok(Initialization::Completed {
        objects: count,
        duplicates,
    })
}

/// The cluster's LogicalCluster (as read, and parsed) when it still carries our initializer;
/// `None` when it does not.
///
/// The view answers 403 once the cluster is initialized, and a restarted kcp answers 404 or
/// 403 for a moment for clusters it has not indexed again. Only the view's own list decides
/// that a cluster is gone (the provider then disengages it, which ends the retries), so while
/// it is engaged both answers are [`Error::Pending`], never taken as "not ours".
async fn read_logical_cluster(
    ctx: &InitContext<'_>,
    cluster: &str,
    vw: &dyn ObjectClient,
    seen: Option<DynamicObject>,
) -> Result<Option<(DynamicObject, LogicalCluster)>, Error> {
    let view_lost_cluster = || Error::Pending {
        reason: VIEW_LOST_CLUSTER.into(),
    };
    let raw = match seen {
        Some(lc) => lc,
        None => match vw.get(&logical_cluster_ref()).await {
            Ok(Some(lc)) => lc,
            Ok(None) | Err(kcp_core::Error::Api { code: 403, .. }) => {
                return Err(view_lost_cluster());
            }
            Err(err) => return Err(initializing(err)),
        },
    };
    let lc: LogicalCluster = serde_json::to_value(&raw)
        .and_then(serde_json::from_value)
        .map_err(|e| Error::Serialization {
            context: format!("reading LogicalCluster \"cluster\" of {cluster:?}"),
            message: e.to_string(),
        })?;
    Ok(carries(&lc, ctx.initializer).then_some((raw, lc)))
}

/// The InitTarget's sources, read fresh on every attempt so source changes apply at once, each
/// under the name the InitTarget gives it; `None` when the InitTarget is gone.
///
/// The cluster's core discovery, which applying will need, is fetched at the same time.
async fn load_sources(
    ctx: &InitContext<'_>,
    vw: &dyn ObjectClient,
) -> Result<Option<Vec<TemplateSource>>, Error> {
    let core = GroupVersionKind::gvk("", "v1", "Namespace");
    let (target, _) = tokio::join!(
        ctx.config.get_typed::<InitTarget>(None, ctx.target),
        vw.resolve(&core)
    );
    let Some(target) = target.map_err(initializing)? else {
        return Ok(None);
    };
    let mut sources = Vec::with_capacity(target.spec.sources.len());
    for (index, source) in target.spec.sources.iter().enumerate() {
        sources.push(load_source(ctx, index, source).await?);
    }
    Ok(Some(sources))
}

/// The template of source `index`: from the watched cache, or else read from the config
/// workspace.
async fn load_source(
    ctx: &InitContext<'_>,
    index: usize,
    source: &InitSource,
) -> Result<TemplateSource, Error> {
    let invalid = |reason: String| Error::InvalidSource {
        target: ctx.target.to_string(),
        index,
        reason,
    };
    let Some(template) = &source.template else {
        return Err(invalid(
            "no known source configured (only `template` sources exist)".into(),
        ));
    };
    let cached = ctx.templates.and_then(|c| c.get(&template.name));
    let found = match cached {
        Some(found) => found,
        None => match ctx
            .config
            .get_typed::<InitTemplate>(None, &template.name)
            .await
            .map_err(initializing)?
        {
            Some(read) => TemplateSource::of(&read),
            None => {
                return Err(invalid(format!(
                    "InitTemplate {:?} does not exist",
                    template.name
                )));
            }
        },
    };
    Ok(TemplateSource {
        name: template.name.clone(),
        ..found
    })
}

/// The objects of every source, after the first source won each object two render.
struct Rendered {
    /// The named objects, applied as one plan.
    objects: Vec<DynamicObject>,
    /// The `generateName` objects, created once each after the plan is applied.
    generated: Vec<DynamicObject>,
    /// Objects two sources rendered differently.
    duplicates: Vec<Duplicate>,
}

/// Renders every source for the cluster `lc`; a failure names the source's index and template
/// ([`Error::Source`]).
fn render_all(
    ctx: &InitContext<'_>,
    lc: &LogicalCluster,
    sources: &[TemplateSource],
) -> Result<Rendered, Error> {
    let context = TemplateContext::from_logical_cluster(
        lc,
        ctx.workspace_type_name,
        ctx.workspace_type_path,
    )?;
    let mut rendered = Vec::with_capacity(sources.len());
    for (index, source) in sources.iter().enumerate() {
        let objects =
            render_template(ctx.engine, source, &context).map_err(|err| Error::Source {
                index,
                template: source.name.clone(),
                source: Box::new(err),
            })?;
        rendered.push((source.name.clone(), objects));
    }
    let (objects, duplicates) = first_source_wins(rendered);
    let (objects, generated) = split_generated(ctx.target, objects);
    Ok(Rendered {
        objects,
        generated,
        duplicates,
    })
}

/// Applies `objects` as one plan, wave by wave; an object not ready yet is
/// [`Error::Pending`], one refused is [`Error::Apply`].
async fn apply(
    ctx: &InitContext<'_>,
    cluster: &str,
    vw: &dyn ObjectClient,
    objects: Vec<DynamicObject>,
) -> Result<(), Error> {
    let plan = ApplyPlan::build(objects, &RuleSet::default()).map_err(|source| Error::Core {
        context: format!("planning the objects for cluster {cluster:?}"),
        source,
    })?;
    let report = Applier::new(vw, ctx.applier.clone()).apply(&plan).await;
    if let Some((object, err)) = report.failed().next() {
        return Err(Error::Apply {
            cluster: cluster.to_string(),
            object: object.object.to_string(),
            reason: err.to_string(),
        });
    }
    if let Some((object, reason)) = report.pending().next() {
        return Err(Error::Pending {
            reason: format!("{}: {reason}", object.object),
        });
    }
    Ok(())
}

/// Creates each `generateName` object unless one with its generated-id label exists already
/// (an earlier attempt created it), so every one is created exactly once per cluster.
async fn create_generated(vw: &dyn ObjectClient, objects: &[DynamicObject]) -> Result<(), Error> {
    for obj in objects {
        let gvk = kcp_core::client::gvk_of(obj).map_err(initializing)?;
        let id = obj
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(GENERATED_ID_LABEL))
            .cloned()
            .unwrap_or_default();
        let selector = kcp_core::ListOptions::labels(format!("{GENERATED_ID_LABEL}={id}"));
        let existing = vw
            .list(&gvk, obj.metadata.namespace.as_deref(), &selector)
            .await
            .map_err(initializing)?;
        if existing.items.is_empty() {
            vw.create(obj).await.map_err(initializing)?;
        }
    }
    Ok(())
}

/// Namespaced objects written without a namespace go to `default`. The scope of a kind comes
/// from a CRD among the objects, or else from discovery; a kind nobody serves yet is left alone
/// (the apply reports it pending).
async fn default_namespaces(
    vw: &dyn ObjectClient,
    objects: &mut [DynamicObject],
) -> Result<(), Error> {
    let mut crd_scopes: BTreeMap<(String, String), bool> = BTreeMap::new();
    for obj in objects.iter() {
        let is_crd = obj.types.as_ref().is_some_and(|t| {
            t.kind == "CustomResourceDefinition"
                && t.api_version.starts_with("apiextensions.k8s.io/")
        });
        if !is_crd {
            continue;
        }
        let spec = obj.data.get("spec");
        let group = spec.and_then(|s| s.get("group")).and_then(Value::as_str);
        let kind = spec
            .and_then(|s| s.pointer("/names/kind"))
            .and_then(Value::as_str);
        let scope = spec.and_then(|s| s.get("scope")).and_then(Value::as_str);
        if let (Some(g), Some(k), Some(s)) = (group, kind, scope) {
            crd_scopes.insert((g.to_string(), k.to_string()), s == "Namespaced");
        }
    }
    for obj in objects.iter_mut() {
        if obj
            .metadata
            .namespace
            .as_deref()
            .is_some_and(|n| !n.is_empty())
        {
            continue;
        }
        let Ok(gvk) = kcp_core::client::gvk_of(obj) else {
            continue;
        };
        let namespaced = match crd_scopes.get(&(gvk.group.clone(), gvk.kind.clone())) {
            Some(n) => *n,
            None => match vw.resolve(&gvk).await {
                Ok(info) => info.namespaced,
                Err(kcp_core::Error::KindNotServed { .. }) => continue,
                Err(err) => return Err(initializing(err)),
            },
        };
        if namespaced {
            obj.metadata.namespace = Some("default".to_string());
        }
    }
    Ok(())
}

/// kcp creates a workspace's `default` namespace only once the workspace is Ready, so while it
/// initializes there is none: when an object goes to `default` and nothing else creates it, the
/// namespace is added to the objects (it is applied before its members, like any Namespace).
async fn add_missing_default_namespace(
    vw: &dyn ObjectClient,
    objects: &mut Vec<DynamicObject>,
    generated: &[DynamicObject],
) -> Result<(), Error> {
    let in_default = |o: &DynamicObject| o.metadata.namespace.as_deref() == Some("default");
    let is_default_namespace = |o: &DynamicObject| {
        o.types
            .as_ref()
            .is_some_and(|t| t.kind == "Namespace" && t.api_version == "v1")
            && o.metadata.name.as_deref() == Some("default")
    };
    if !objects.iter().chain(generated).any(in_default) || objects.iter().any(is_default_namespace)
    {
        return Ok(());
    }
    let gvk = kcp_core::kube::api::GroupVersionKind::gvk("", "v1", "Namespace");
    if vw
        .get(&ObjectRef::cluster_scoped(gvk, "default"))
        .await
        .map_err(initializing)?
        .is_some()
    {
        return Ok(());
    }
    objects.push(DynamicObject {
        types: Some(kcp_core::kube::api::TypeMeta {
            api_version: "v1".into(),
            kind: "Namespace".into(),
        }),
        metadata: kcp_core::kube::api::ObjectMeta {
            name: Some("default".into()),
            ..Default::default()
        },
        data: serde_json::json!({}),
    });
    Ok(())
}

/// Removes this initializer from `status.initializers` with an optimistic-concurrency update:
/// a concurrent removal by another initializer makes the write fail with 409, and the next
/// try starts from the fresh list, so it is never restored.
/// Whether a removal whose answer was an error landed all the same (the server took the write
/// and the answer was lost): the LogicalCluster, read again, no longer lists `initializer`, or
/// has left the initializing view (kcp then answers 403: the cluster "is not initializing"
/// with it). Only this agent removes its initializer, so the removal was ours, and counting it
/// keeps the initialized count exact. Any other failed read says nothing.
async fn removal_landed(vw: &dyn ObjectClient, initializer: &str) -> bool {
    match vw.get(&logical_cluster_ref()).await {
        Ok(Some(lc)) => !lc
            .data
            .pointer("/status/initializers")
            .and_then(Value::as_array)
            .is_some_and(|list| list.iter().any(|i| i.as_str() == Some(initializer))),
        Ok(None) => true,
        Err(err) => err.is_status(403),
    }
}

async fn remove_initializer(
    vw: &dyn ObjectClient,
    initializer: &str,
    read_at_start: DynamicObject,
) -> Result<(), Error> {
    let lc_ref = logical_cluster_ref();
    // First try with the copy read at the start of the attempt; after a conflict, read again.
    let mut current = Some(read_at_start);
    for _ in 0..5 {
        let mut lc = match current.take() {
            Some(lc) => lc,
            None => match vw.get(&lc_ref).await.map_err(initializing)? {
                Some(lc) => lc,
                None => return Ok(()),
            },
        };
        let Some(list) = lc
            .data
            .pointer_mut("/status/initializers")
            .and_then(Value::as_array_mut)
        else {
            return Ok(());
        };
        let before = list.len();
        list.retain(|i| i.as_str() != Some(initializer));
        if list.len() == before {
            return Ok(());
        }
        // `replace` carries the resourceVersion read: a stale copy is refused with 409.
        match vw.update_status(&lc).await {
            Ok(_) => return Ok(()),
            Err(err) if err.is_conflict() => continue,
            Err(err) if removal_landed(vw, initializer).await => {
                tracing::debug!(error = %err, "the initializer's removal landed; its answer was lost");
                return Ok(());
            }
            Err(err) => return Err(initializing(err)),
        }
    }
    Err(Error::Pending {
        reason: "the LogicalCluster kept changing while removing the initializer".to_string(),
    })
}
