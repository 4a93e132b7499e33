//! The APIExport's resource schemas and permission claims (upstream §3.2), written as
//! `apis.kcp.io/v1alpha2`.
//!
//! Upstream writes v1alpha1 (`spec.latestResourceSchemas`, claims without verbs, meaning all
//! verbs). kcp stores v1alpha2, where resources are `{name, group, schema, storage: {crd: {}}}`
//! and claims carry explicit `verbs`. kcp-sync writes v1alpha2 natively and asks only for the
//! verbs it uses (see [`wanted_claims`]).
//!
//! The merge keeps upstream's rules: every ready schema is exported; an existing resource is
//! replaced only by a ready schema for the same group and resource, so unmanaged schemas and
//! those of deleted PublishedResources stay; resources are sorted by `resource.group`.
//! Claims are added (an existing claim for the same group, resource and identity hash gains
//! missing verbs) and sorted stably by group, then resource.
//!
//! Better than upstream, which never removes a claim (its FAQ says claims are overwritten):
//! kcp-sync records the claims it added itself in the annotation
//! [`ADDED_CLAIMS_ANNOTATION`] on the APIExport, and prunes exactly those once no
//! PublishedResource needs them ([`prune_claims`]). Claims someone else added, claims the Go
//! agent added before, and claims that existed when kcp-sync only extended their verbs are
//! never recorded, so never removed.
//!
//! Claims are written as v1alpha2, and kcp's annotation of their v1alpha1 form is kept beside
//! them, so a v1alpha1 reader sees `all: true` as after upstream's write
//! ([`v1alpha1_claims_annotation`]).
//!
//! [`plan_export`] puts these together into one reconcile's patch, report and Events.

mod plan;
mod v1alpha1_claims;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::PublishedResource;

pub use plan::{ExportPatch, ExportPlan, ExportReport, PatchMetadata, PatchSpec, plan_export};
pub use v1alpha1_claims::{
    ResourceSelector, V1ALPHA1_CLAIMS_ANNOTATION, V1alpha1Claim, v1alpha1_claims_annotation,
};

/// The APIExport annotation listing the claims kcp-sync added itself (a JSON list of
/// `{group?, resource, identityHash?}`): the only claims it ever prunes.
pub const ADDED_CLAIMS_ANNOTATION: &str = "sync.kcp-rs.io/added-claims";

/// A permission claim as kcp-sync wants it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WantedClaim {
    /// API group (empty for core).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// Resource (plural).
    pub resource: String,
    /// Identity hash of the providing APIExport (empty for builtin resources).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub identity_hash: String,
}

/// The claims recorded in [`ADDED_CLAIMS_ANNOTATION`]; an absent or unreadable value records
/// none (so nothing is pruned).
pub fn parse_added_claims(value: Option<&str>) -> BTreeSet<WantedClaim> {
    value
        .and_then(|v| serde_json::from_str::<Vec<WantedClaim>>(v).ok())
        .map(|claims| claims.into_iter().collect())
        .unwrap_or_default()
}

/// The [`ADDED_CLAIMS_ANNOTATION`] value for `claims` (sorted).
pub fn format_added_claims(claims: &BTreeSet<WantedClaim>) -> String {
    serde_json::to_string(&claims.iter().collect::<Vec<_>>()).unwrap_or_else(|_| "[]".into())
}

/// Removes from `claims` the ones kcp-sync added (`recorded`) that are no longer `wanted`.
/// Returns the claims kept and the ones removed.
pub fn prune_claims(
    claims: Vec<Value>,
    wanted: &BTreeMap<WantedClaim, BTreeSet<String>>,
    recorded: &BTreeSet<WantedClaim>,
) -> (Vec<Value>, Vec<WantedClaim>) {
    let mut removed = Vec::new();
    let kept = claims
        .into_iter()
        .filter(|c| {
            let key = claim_key(c);
            let prune = recorded.contains(&key) && !wanted.contains_key(&key);
            if prune {
                removed.push(key);
            }
            !prune
        })
        .collect();
    (kept, removed)
}

/// The claims to record after a merge: those recorded before or just `added`, that are still
/// wanted.
pub fn record_added_claims(
    recorded: &BTreeSet<WantedClaim>,
    added: &[WantedClaim],
    wanted: &BTreeMap<WantedClaim, BTreeSet<String>>,
) -> BTreeSet<WantedClaim> {
    recorded
        .iter()
        .chain(added)
        .filter(|c| wanted.contains_key(*c))
        .cloned()
        .collect()
}

impl std::fmt::Display for WantedClaim {
    /// `resource` or `group/resource`, as upstream's events print claims.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.resource)
        } else {
            write!(f, "{}/{}", self.group, self.resource)
        }
    }
}

/// One `spec.resources` entry of a v1alpha2 APIExport.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportResource {
    /// Resource (plural).
    pub name: String,
    /// API group.
    pub group: String,
    /// The APIResourceSchema's name.
    pub schema: String,
    /// Where objects are stored (`{crd: {}}`).
    pub storage: ResourceStorage,
}

/// Storage of an exported resource.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceStorage {
    /// CRD-like storage (no settings).
    pub crd: BTreeMap<String, Value>,
}

/// One `spec.permissionClaims` entry of a v1alpha2 APIExport.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ExportClaim {
    /// API group (absent for core).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// Resource (plural).
    pub resource: String,
    /// Identity hash of the providing export.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub identity_hash: String,
    /// The verbs claimed.
    pub verbs: Vec<String>,
}

/// The group and resource named by an APIResourceSchema name `<version>.<resource>.<group>`
/// (split on the first two dots), as `resource.group` (or `resource` for core).
pub fn schema_group_resource(schema: &str) -> (String, String) {
    let mut parts = schema.splitn(3, '.');
    let _version = parts.next();
    let resource = parts.next().unwrap_or_default().to_owned();
    let group = parts.next().unwrap_or_default().to_owned();
    (group, resource)
}

fn group_resource_string((group, resource): &(String, String)) -> String {
    if group.is_empty() {
        resource.clone()
    } else {
        format!("{resource}.{group}")
    }
}

/// The verbs of every claim: `*`. kcp's apiexport virtual workspace allows a claimed request only
/// for a verb in the literal intersection of the binding's and the export's verb lists, `*`
/// matching only `*` (measured on kcp v0.30.0: export `[get,list,watch,create]` with a binding
/// `["*"]` refuses `get`; export `["*"]` with a binding `[get]` refuses `get` too). Consumers bind
/// as upstream documents (v1alpha1 `all: true`, which kcp converts to `["*"]`, or v1alpha2
/// `["*"]`), so the export claims `["*"]` too, as upstream's v1alpha1 claims do; and the verbs
/// never change when a PublishedResource does, so no consumer has to accept again.
fn all_verbs() -> BTreeSet<String> {
    BTreeSet::from(["*".to_owned()])
}

/// The claims the PublishedResources need (each for all verbs, `*`):
/// `events` (always), `namespaces` (a namespace filter or any related resource),
/// `core.kcp.io/logicalclusters` (`enableWorkspacePaths`), and the kcp-side resource of every
/// related resource not provided by the export itself (`own`: group and resource pairs).
pub fn wanted_claims(
    prs: &[PublishedResource],
    own: &BTreeSet<(String, String)>,
) -> BTreeMap<WantedClaim, BTreeSet<String>> {
    let mut claims: BTreeMap<WantedClaim, BTreeSet<String>> = BTreeMap::new();
    let mut add = |group: &str, resource: &str, identity: &str, verbs: BTreeSet<String>| {
        claims
            .entry(WantedClaim {
                group: group.to_owned(),
                resource: resource.to_owned(),
                identity_hash: identity.to_owned(),
            })
            .or_default()
            .extend(verbs);
    };
    add("", "events", "", all_verbs());
    for pr in prs {
        let namespace_filter = pr
            .spec
            .filter
            .as_ref()
            .is_some_and(|f| f.namespace.is_some());
        if namespace_filter || !pr.related().is_empty() {
            add("", "namespaces", "", all_verbs());
        }
        if pr.spec.enable_workspace_paths {
            add("core.kcp.io", "logicalclusters", "", all_verbs());
        }
        for related in pr.related() {
            let (group, _, resource) = related.kcp_gvr();
            if own.contains(&(group.clone(), resource.clone())) {
                continue;
            }
            add(&group, &resource, &related.identity_hash, all_verbs());
        }
    }
    claims
}

/// Upstream's schema merge over v1alpha2 resources: the ready schemas, plus every existing
/// resource whose group and resource no ready schema covers; sorted by `resource.group`.
/// Existing entries are kept verbatim (unknown fields included).
pub fn merge_resources(existing: &[Value], ready: &BTreeSet<String>) -> Vec<Value> {
    let ready_grs: BTreeSet<(String, String)> =
        ready.iter().map(|s| schema_group_resource(s)).collect();
    let mut result: Vec<(String, Value)> = ready
        .iter()
        .map(|schema| {
            let (group, name) = schema_group_resource(schema);
            let entry = ExportResource {
                name: name.clone(),
                group: group.clone(),
                schema: schema.clone(),
                storage: ResourceStorage::default(),
            };
            let value = serde_json::to_value(entry).unwrap_or(Value::Null);
            (group_resource_string(&(group, name)), value)
        })
        .collect();
    for entry in existing {
        let gr = resource_group_of(entry);
        if !ready_grs.contains(&gr) {
            result.push((group_resource_string(&gr), entry.clone()));
        }
    }
    result.sort_by(|a, b| a.0.cmp(&b.0));
    result.into_iter().map(|(_, v)| v).collect()
}

fn resource_group_of(entry: &Value) -> (String, String) {
    let s = |k: &str| {
        entry
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    (s("group"), s("name"))
}

/// The schema names of v1alpha2 resources.
pub fn resource_schemas(resources: &[Value]) -> BTreeSet<String> {
    resources
        .iter()
        .filter_map(|r| r.get("schema").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

/// Upstream's claim merge over v1alpha2 claims: existing claims stay (in place, unknown
/// fields kept); a wanted claim that exists gains missing verbs unless it has `*`; missing
/// claims are appended; then a stable sort by group and resource. Returns the claims and
/// the ones added.
pub fn merge_claims(
    existing: &[Value],
    wanted: &BTreeMap<WantedClaim, BTreeSet<String>>,
) -> (Vec<Value>, Vec<WantedClaim>) {
    let mut result: Vec<Value> = existing.to_vec();
    let mut added = Vec::new();
    for (claim, verbs) in wanted {
        match result.iter_mut().find(|c| claim_key(c) == *claim) {
            Some(entry) => extend_verbs(entry, verbs),
            None => {
                let new = ExportClaim {
                    group: claim.group.clone(),
                    resource: claim.resource.clone(),
                    identity_hash: claim.identity_hash.clone(),
                    verbs: verbs.iter().cloned().collect(),
                };
                result.push(serde_json::to_value(new).unwrap_or(Value::Null));
                added.push(claim.clone());
            }
        }
    }
    result.sort_by(|a, b| {
        let (ka, kb) = (claim_key(a), claim_key(b));
        ka.group.cmp(&kb.group).then(ka.resource.cmp(&kb.resource))
    });
    (result, added)
}

/// The (group, resource, identity hash) of a claim as JSON.
pub(crate) fn claim_key(claim: &Value) -> WantedClaim {
    let s = |k: &str| {
        claim
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    WantedClaim {
        group: s("group"),
        resource: s("resource"),
        identity_hash: s("identityHash"),
    }
}

fn extend_verbs(claim: &mut Value, wanted: &BTreeSet<String>) {
    let mut verbs: Vec<String> = claim
        .get("verbs")
        .and_then(Value::as_array)
        .map(|v| {
            v.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if verbs.iter().any(|v| v == "*") {
        return;
    }
    let before = verbs.len();
    for verb in wanted {
        if !verbs.contains(verb) {
            verbs.push(verb.clone());
        }
    }
    if verbs.len() != before {
        claim["verbs"] = Value::from(verbs);
    }
}

/// The Events upstream sends on the APIExport for a schema change: `(type, reason, message)`.
pub fn schema_events(
    old: &BTreeSet<String>,
    new: &BTreeSet<String>,
) -> Vec<(bool, &'static str, String)> {
    let mut events = Vec::new();
    let added: Vec<&str> = new.difference(old).map(String::as_str).collect();
    if !added.is_empty() {
        events.push((
            true,
            "AddingResourceSchemas",
            format!("Added new resource schema(s) {}.", added.join(", ")),
        ));
    }
    let removed: Vec<&str> = old.difference(new).map(String::as_str).collect();
    if !removed.is_empty() {
        events.push((
            false,
            "RemovingResourceSchemas",
            format!("Removed resource schema(s) {}.", removed.join(", ")),
        ));
    }
    events
}

/// The Event for pruned claims: `Removed permission claim(s) for all ...` (kcp-sync only).
pub fn removed_claims_event(removed: &[WantedClaim]) -> Option<String> {
    (!removed.is_empty()).then(|| {
        let names: Vec<String> = removed.iter().map(ToString::to_string).collect();
        format!(
            "Removed permission claim(s) for all {}, no PublishedResource needs them.",
            names.join(", ")
        )
    })
}

/// The Event upstream sends for added claims: `Added new permission claim(s) for all ...`.
pub fn claims_event(added: &[WantedClaim]) -> Option<String> {
    (!added.is_empty()).then(|| {
        let names: Vec<String> = added.iter().map(ToString::to_string).collect();
        format!(
            "Added new permission claim(s) for all {}.",
            names.join(", ")
        )
    })
}

#[cfg(test)]
mod tests;
