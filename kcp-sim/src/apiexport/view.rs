//! The apiexport virtual workspace, `/services/apiexport/<export cluster>/<export name>`: what it
//! serves (the exported resources, the claimed resources and APIBindings), which consumer
//! clusters a request may reach, and what it sees of them.
//!
//! As in kcp: the export is addressed by its logical cluster name, consumers by theirs (a
//! workspace path is not accepted); a consumer is reachable only through an APIBinding to the
//! export; bound resources are fully accessible, claimed ones only where the claim is accepted
//! and with the claimed verbs (the objects carrying the export's claim label, which the claim's
//! selector decides), APIBindings of the export read-only; everything else is `403` (unknown
//! resources `404`).

use std::sync::{Arc, OnceLock};

use serde_json::Value;

use super::export::{Claim, Export};
use super::{bindings, labels, schema, str_at};
use crate::query::{ClusterScope, Visibility};
use crate::resource::{Flavor, GroupResource, Registry, ResourceType};
use crate::status::{ApiError, ApiResult};
use crate::store::State;

/// Where an apiexport virtual workspace request goes.
#[derive(Debug, Clone, Copy)]
pub struct At<'a> {
    /// Logical cluster name of the APIExport.
    pub export_cluster: &'a str,
    /// Name of the APIExport.
    pub export: &'a str,
    /// A consumer cluster (by logical cluster name), or `None` for `*`.
    pub cluster: Option<&'a str>,
    /// The shard whose URL was called; `None` sees every shard.
    pub shard: Option<usize>,
}

/// A resource request resolved inside the virtual workspace.
#[derive(Debug, Clone)]
pub struct ViewTarget {
    /// The resource type.
    pub rt: Arc<ResourceType>,
    /// The consumer cluster, or `None` for the wildcard.
    pub cluster: Option<String>,
    /// The clusters a read sees.
    pub scope: ClusterScope,
    /// The objects a read sees.
    pub visibility: Visibility,
}

/// The export behind a virtual workspace URL: it must exist and have its identity.
pub fn export_at(state: &State, at: &At<'_>) -> ApiResult<Export> {
    if !state.clusters.contains_key(at.export_cluster) {
        return Err(ApiError::path_not_found());
    }
    Export::load(state, at.export_cluster, at.export)
        .filter(|e| !e.identity_hash.is_empty())
        .ok_or_else(ApiError::path_not_found)
}

/// What the virtual workspace of an export serves: its resources, its claimed resources, and
/// APIBindings.
pub fn registry(state: &State, export: &Export) -> Registry {
    let mut reg = Registry::default();
    for r in &export.resources {
        if let Some(t) = schema::load(state, &export.cluster, &r.schema)
            .as_ref()
            .and_then(schema::type_of)
        {
            reg.insert(t);
        }
    }
    let builtins = kcp_builtins();
    for claim in &export.claims {
        for gr in claimed_resources(claim) {
            if reg.get(&gr).is_some() {
                continue;
            }
            if let Some(t) = claimed_type(state, builtins, claim, &gr) {
                reg.insert(t);
            }
        }
    }
    if let Some(t) = builtins.get(&bindings()) {
        reg.insert((**t).clone());
    }
    reg
}

/// The OpenAPI schema (`openAPIV3Schema`) of an exported or claimed custom resource at a
/// version, from its APIResourceSchema; `None` for builtin kinds.
pub fn exported_schema(
    state: &State,
    export: &Export,
    rt: &ResourceType,
    version: &str,
) -> Option<Value> {
    let gr = rt.group_resource();
    let same = |group: &str, resource: &str| group == gr.group && resource == gr.resource;
    let own = export
        .resources
        .iter()
        .find(|r| same(&r.group, &r.resource))
        .and_then(|r| schema::load(state, &export.cluster, &r.schema));
    let stored = own.or_else(|| {
        export
            .claims
            .iter()
            .filter(|c| !c.identity_hash.is_empty() && same(&c.group, &c.resource))
            .flat_map(|c| Export::with_identity(state, &c.identity_hash))
            .find_map(|e| {
                let r = e.resources.iter().find(|r| same(&r.group, &r.resource))?;
                schema::load(state, &e.cluster, &r.schema)
            })
    })?;
    crate::openapi::version_schema(&stored, version, "/schema")
}

/// The builtin kinds of a kcp logical cluster, built once.
fn kcp_builtins() -> &'static Registry {
    static BUILTINS: OnceLock<Registry> = OnceLock::new();
    BUILTINS.get_or_init(|| Registry::with_builtins(Flavor::Kcp))
}

/// The resources a claim makes available: Events in both groups for either.
pub fn claimed_resources(claim: &Claim) -> Vec<GroupResource> {
    let gr = GroupResource::new(&claim.group, &claim.resource);
    match event_twin(&gr) {
        Some(twin) => vec![gr, twin],
        None => vec![gr],
    }
}

/// Core and `events.k8s.io` Events are one claim.
pub fn event_twin(gr: &GroupResource) -> Option<GroupResource> {
    match (gr.group.as_str(), gr.resource.as_str()) {
        ("", "events") => Some(GroupResource::new("events.k8s.io", "events")),
        ("events.k8s.io", "events") => Some(GroupResource::new("", "events")),
        _ => None,
    }
}

fn claimed_type(
    state: &State,
    builtins: &Registry,
    claim: &Claim,
    gr: &GroupResource,
) -> Option<ResourceType> {
    if claim.identity_hash.is_empty() {
        return builtins.get(gr).map(|t| (**t).clone());
    }
    Export::with_identity(state, &claim.identity_hash)
        .iter()
        .flat_map(|e| e.resources.iter().map(move |r| (e, r)))
        .filter(|(_, r)| r.group == gr.group && r.resource == gr.resource)
        .find_map(|(e, r)| schema::type_of(&schema::load(state, &e.cluster, &r.schema)?))
}

/// Resolves a resource request in the virtual workspace, for a verb.
pub fn resolve(
    state: &State,
    at: &At<'_>,
    group: &str,
    version: &str,
    plural: &str,
    verb: &str,
) -> ApiResult<ViewTarget> {
    let (export, registry) = state.view_cache.view(state, at)?;
    // kcp's virtual workspace leaves a resource it does not serve to its mux.
    let rt = registry
        .by_plural(group, version, plural)
        .cloned()
        .ok_or_else(ApiError::page_not_found)?;
    let visibility = visibility_of(&export, rt.group_resource());
    let Some(cluster) = at.cluster else {
        return Ok(ViewTarget {
            rt,
            cluster: None,
            scope: ClusterScope::Export { shard: at.shard },
            visibility,
        });
    };
    if cluster.contains(':') {
        return Err(ApiError::path_not_found());
    }
    authorize(state, &export, cluster, at.shard, &rt, verb)?;
    Ok(ViewTarget {
        rt,
        cluster: Some(cluster.to_string()),
        scope: ClusterScope::One(cluster.to_string()),
        visibility,
    })
}

/// What the view of an export sees of a resource: the export's APIBindings; the objects of a
/// claimed resource that carry the export's claim label (kcp's selection, which the claim's
/// selector decides); every object of an exported resource in its audience.
fn visibility_of(export: &Export, gr: &GroupResource) -> Visibility {
    if *gr == bindings() {
        return Visibility::BindingsOf {
            cluster: export.cluster.clone(),
            name: export.name.clone(),
        };
    }
    let claimed = match event_twin(gr) {
        Some(core) if gr.group == "events.k8s.io" => core,
        _ => gr.clone(),
    };
    match export.claim_on(&claimed.group, &claimed.resource) {
        Some(claim) => Visibility::Claimed {
            key: Arc::from(export.key()),
            label: Arc::from(labels::claim_label_key(&export.cluster, &export.name)),
            value: Arc::from(labels::claim_label_value(
                &claimed.group,
                &claimed.resource,
                &claim.identity_hash,
            )),
        },
        None => Visibility::Audience(Arc::from(export.key())),
    }
}

fn forbidden(rt: &ResourceType, verb: &str, why: &str) -> ApiError {
    ApiError::forbidden(format!(
        "{} is forbidden: User \"kcp-sim\" cannot {verb} resource \"{}\" in API group \"{}\": {why}",
        rt.served_resource(),
        rt.plural,
        rt.group
    ))
}

/// kcp's rules for a request reaching one consumer cluster through the virtual workspace.
fn authorize(
    state: &State,
    export: &Export,
    cluster: &str,
    shard: Option<usize>,
    rt: &ResourceType,
    verb: &str,
) -> ApiResult<()> {
    let no_binding = "could not find suitable APIBinding in target logical cluster";
    let on_shard = state
        .clusters
        .get(cluster)
        .is_some_and(|c| shard.is_none_or(|s| s == c.shard));
    if !on_shard {
        return Err(forbidden(rt, verb, no_binding));
    }
    let binding = super::objects_of(state, cluster, &bindings())
        .into_iter()
        .find(|b| super::binds_export(b, &export.cluster, &export.name))
        .ok_or_else(|| forbidden(rt, verb, no_binding))?;
    let gr = rt.group_resource();
    let bound = binding
        .pointer("/status/boundResources")
        .and_then(Value::as_array)
        .is_some_and(|l| {
            l.iter()
                .any(|b| str_at(b, "/group") == gr.group && str_at(b, "/resource") == gr.resource)
        });
    if bound || claim_allows(export, &binding, gr, verb) {
        return Ok(());
    }
    if *gr == bindings() {
        if matches!(verb, "get" | "list" | "watch") {
            return Ok(());
        }
        return Err(forbidden(
            rt,
            verb,
            "write access to APIBinding is not allowed from virtual workspace",
        ));
    }
    Err(forbidden(
        rt,
        verb,
        "failed to find suitable reason to allow access in APIBinding",
    ))
}

/// Whether the binding accepted a claim of the export on this resource that allows the verb
/// (`events.k8s.io` Events count as core Events, as in kcp).
fn claim_allows(export: &Export, binding: &Value, gr: &GroupResource, verb: &str) -> bool {
    let normalized = match event_twin(gr) {
        Some(core) if gr.group == "events.k8s.io" => core,
        _ => gr.clone(),
    };
    accepted_claims(binding)
        .iter()
        .filter(|c| c.group == normalized.group && c.resource == normalized.resource)
        .any(|c| {
            export
                .claim_on(&c.group, &c.resource)
                .filter(|e| e.same_resource(c))
                .is_some_and(|e| e.allows_with(c, verb))
        })
}

/// The claims a binding accepted (`spec.permissionClaims[]` with `state: Accepted`).
pub fn accepted_claims(binding: &Value) -> Vec<Claim> {
    binding
        .pointer("/spec/permissionClaims")
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .filter(|c| str_at(c, "/state") == "Accepted")
                .map(Claim::from_value)
                .collect()
        })
        .unwrap_or_default()
}
