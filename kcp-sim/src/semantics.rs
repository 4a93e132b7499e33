//! Kubernetes write semantics on top of the store: create (generateName, AlreadyExists,
//! namespace must exist), update (resourceVersion conflicts), merge / JSON / strategic / apply
//! patches, the status subresource, metadata.generation, finalizers and deletionTimestamp,
//! deletion with preconditions and ownerReference garbage collection, namespace and CRD
//! termination.
//!
//! Every function takes the whole [`State`] by `&mut`: a request is one critical section, so
//! what a write triggers (a CRD becoming served, a namespace's contents going away, a workspace's
//! logical cluster appearing) is visible to the very next request.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::admission_policies::{self, AdmissionRequest};
use crate::apiexport::{self, hooks as apis};
use crate::authorization::User;
use crate::conversion;
use crate::field_validation::{self, FieldValidation};
use crate::garbage_collector::{
    collect_dependents, find_by_uid, has_dependents, orphan_dependents,
};
use crate::last_applied;
use crate::managed_fields::{self, FieldManager};
use crate::object_meta::finalizers_of;
use crate::patch;
use crate::preconditions;
use crate::rbac_escalation::{self, RbacWrite};
use crate::rbac_validation;
use crate::resource::{GroupResource, ResourceType};
use crate::scale_fields;
use crate::schema::field::invalid_object;
use crate::status::{ApiError, ApiResult, StatusCause};
use crate::store::{State, Stored};
use crate::{
    api_services, batch, certificates, crd, daemon_sets, defaults, ephemeral_containers,
    flowcontrol, garbage_collector, ip_addresses, kcp, limit_range_checks, limit_ranges,
    object_meta, persistent_volumes, pods, resource_quotas, scheduling, schema, services,
    status_writes, validation, volume_claims,
};
use resource_quotas::QuotaWrite;

mod decoding;
mod graceful;

use decoding::{
    as_go_stores, check_declared, decode_body_as_go, decode_patched_as_go, warned_first,
    with_go_zero_fields,
};

/// Who writes and how: the options of a create, update or patch.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// `fieldManager`; when unset, the manager is derived from the client's user agent.
    pub field_manager: Option<String>,
    /// The manager used when `field_manager` is unset.
    pub default_manager: String,
    /// `force` (server-side apply only).
    pub force: bool,
    /// `dryRun=All`: validate and answer, but store nothing.
    pub dry_run: bool,
    /// Set when the write comes through a lifecycle view (initializing or terminating
    /// workspaces), which may only remove its own entry.
    pub lifecycle: Option<crate::kcp::LifecycleView>,
    /// Set when the write comes through the `/scale` subresource (recorded under it).
    pub scale: bool,
    /// Set when the write comes through a CertificateSigningRequest's `/approval`
    /// subresource (recorded under it).
    pub approval: bool,
    /// Set when the write comes through a Pod's `/ephemeralcontainers` subresource, which
    /// writes only the pod's ephemeral containers ([`crate::ephemeral_containers`]).
    pub ephemeral_containers: bool,
    /// Who writes: recorded where a strategy records its requester (a new
    /// CertificateSigningRequest's spec); `None` is kcp-sim's admin.
    pub requester: Option<User>,
    /// How a client's body is read (`fieldValidation`): as kube-apiserver decodes it into the
    /// kind's Go type ([`crate::builtin_decoding`]), its unknown and duplicate fields judged by
    /// this mode. `None` for kcp-sim's own writes, whose bodies are not decoded.
    pub field_validation: Option<FieldValidation>,
    /// The keys the request's JSON body repeats ([`field_validation::duplicate_fields`]).
    pub duplicates: Vec<String>,
}

impl WriteOptions {
    fn manager(&self) -> &str {
        self.field_manager
            .as_deref()
            .filter(|m| !m.is_empty())
            .unwrap_or(&self.default_manager)
    }
}

/// The patch types of `PATCH`, by content type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    /// `application/merge-patch+json`.
    Merge,
    /// `application/json-patch+json`.
    Json,
    /// `application/strategic-merge-patch+json` (see [`crate::patch`] for the supported subset).
    Strategic,
    /// `application/apply-patch+yaml`: server-side apply.
    Apply,
}

impl PatchKind {
    /// The patch kind of a request content type.
    pub fn from_content_type(content_type: &str) -> Option<Self> {
        let essence = content_type.split(';').next().unwrap_or("").trim();
        match essence {
            "application/merge-patch+json" => Some(Self::Merge),
            "application/json-patch+json" => Some(Self::Json),
            "application/strategic-merge-patch+json" => Some(Self::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+json" => Some(Self::Apply),
            _ => None,
        }
    }
}

/// The options of a delete.
#[derive(Debug, Clone, Default)]
pub struct DeleteRequest {
    /// `propagationPolicy`: `Orphan`, `Background` (the default) or `Foreground` (the HTTP
    /// layer refuses other values, as kube-apiserver's `ValidateDeleteOptions`).
    pub propagation: Option<String>,
    /// `preconditions.uid`.
    pub precondition_uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub precondition_resource_version: Option<String>,
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `gracePeriodSeconds`: how long a pod on a node is given to stop (its
    /// `terminationGracePeriodSeconds` when unset; a negative value counts as 1).
    pub grace_period_seconds: Option<i64>,
}

/// The outcome of a write.
#[derive(Debug, Clone)]
pub struct Written {
    /// The object as stored (or as it would be stored, for a dry run).
    pub object: Arc<Stored>,
    /// Whether the write created the object (201 rather than 200).
    pub created: bool,
    /// What the real server warns the writer of (`unknown field "spec.extra"` for a field
    /// pruning dropped).
    pub warnings: Vec<String>,
}

/// The warnings of the fields pruning dropped from a custom resource.
fn unknown_field_warnings(pruned: Vec<String>) -> Vec<String> {
    pruned
        .into_iter()
        .map(|field| format!("unknown field {field:?}"))
        .collect()
}

/// The outcome of a delete.
#[derive(Debug, Clone)]
pub struct Deleted {
    /// The object: as it was, when it went at once; else as it is now, or, when what it
    /// waited for was done inside the request, as it was stored terminating.
    pub object: Arc<Stored>,
    /// Whether it went at once, with nothing (finalizers, contents) to wait for first; for a
    /// dry run, whether it would have.
    pub at_once: bool,
}

/// The current time as the API server writes timestamps.
pub fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

pub(crate) fn new_uid() -> String {
    let a = fastrand::u64(..);
    let b = fastrand::u64(..);
    // A version 4 UUID, as the real server hands out.
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0x0fff,
        ((b >> 48) & 0x3fff) | 0x8000,
        b & 0xffff_ffff_ffff
    )
}

/// The characters of generated name suffixes (no vowels, no confusable digits).
const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

fn generated_suffix() -> String {
    (0..5)
        .map(|_| NAME_ALPHABET[fastrand::usize(..NAME_ALPHABET.len())] as char)
        .collect()
}

fn meta(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

fn meta_mut(obj: &mut Value) -> ApiResult<&mut Map<String, Value>> {
    let root = obj
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the object must be a JSON object"))?;
    let meta = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut()
        .ok_or_else(|| ApiError::bad_request("metadata must be an object"))
}

fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    meta(obj)?.get(field)?.as_str()
}

/// Whether the two objects differ in anything but metadata and status (a generation bump).
fn spec_changed(old: &Value, new: &Value) -> bool {
    let (Some(old), Some(new)) = (old.as_object(), new.as_object()) else {
        return old != new;
    };
    let skip = |k: &String| k != "metadata" && k != "status";
    let old_keys = old.iter().filter(|(k, _)| skip(k));
    let new_count = new.keys().filter(|k| skip(k)).count();
    old.keys().filter(|k| skip(k)).count() != new_count
        || old_keys.into_iter().any(|(k, v)| new.get(k) != Some(v))
}

/// A Deployment's annotations are copied to its ReplicaSets, so changing them bumps its
/// generation as a spec change does (kube's deployment strategy).
fn deployment_annotations_changed(rt: &ResourceType, old: &Value, new: &Value) -> bool {
    rt.group == "apps"
        && rt.kind == "Deployment"
        && old.pointer("/metadata/annotations") != new.pointer("/metadata/annotations")
}

/// Whether two versions of an object are the same write: equal apart from resourceVersion and the
/// timestamps of managedFields entries.
/// Whether a PUT of a missing object of this kind creates it (the kinds whose strategy's
/// `AllowCreateOnUpdate` is true in Kubernetes 1.34).
fn creates_on_update(rt: &ResourceType) -> bool {
    matches!(
        (rt.group.as_str(), rt.kind.as_str()),
        ("", "Endpoints" | "Event" | "LimitRange" | "Service")
            | ("events.k8s.io", "Event")
            | ("coordination.k8s.io", "Lease" | "LeaseCandidate")
            | ("node.k8s.io", "RuntimeClass")
            | (
                "rbac.authorization.k8s.io",
                "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding"
            )
    )
}

/// kube-apiserver's `versionCheckManager`: an apply's configuration names the version and kind
/// of its URL, or is refused with the group, version and kind it named.
fn check_applied_type(rt: &ResourceType, version: &str, body: &Value) -> ApiResult<()> {
    let text = |key: &str| body.get(key).and_then(Value::as_str).unwrap_or_default();
    if text("apiVersion") == rt.api_version(version) && text("kind") == rt.kind {
        return Ok(());
    }
    Err(ApiError::bad_request(format!(
        "invalid object type: {}",
        group_version_kind(body)
    )))
}

/// structured-merge-diff's typing of an applied configuration against its kind's schema (a
/// builtin kind's Go type, a custom resource's CRD): a value of the wrong type is its error as
/// it is, a 500 without a reason.
fn check_typed_configuration(
    state: &State,
    cluster: &str,
    rt: &ResourceType,
    body: &Value,
) -> ApiResult<()> {
    let errors = if state.is_custom(cluster, rt.group_resource()) {
        state
            .crd_schemas(cluster, rt.group_resource())
            .and_then(|schemas| schemas.for_object(body))
            .and_then(|root| managed_fields::typed_custom_configuration_errors(root, body))
    } else {
        managed_fields::typed_configuration_errors(body)
    };
    let Some(errors) = errors else {
        return Ok(());
    };
    let namespace = meta_str(body, "namespace").unwrap_or_default();
    let name = meta_str(body, "name").unwrap_or_default();
    Err(ApiError::new(
        500,
        "",
        format!(
            "failed to create typed patch object ({namespace}/{name}; {}): {errors}",
            group_version_kind(body)
        ),
    ))
}

/// The group, version and kind an object names, as Go's `GroupVersionKind` prints them
/// (`apps/v1, Kind=Deployment`, `/v1, Kind=ConfigMap`): Go's `ParseGroupVersion` reads `v1` as
/// the core group's, and an API version with more than one `/` as naming nothing.
fn group_version_kind(body: &Value) -> String {
    let text = |key: &str| body.get(key).and_then(Value::as_str).unwrap_or_default();
    let kind = text("kind");
    match text("apiVersion").split('/').collect::<Vec<_>>()[..] {
        [""] => format!("/, Kind={kind}"),
        [version] => format!("/{version}, Kind={kind}"),
        [group, version] => format!("{group}/{version}, Kind={kind}"),
        _ => "/, Kind=".to_owned(),
    }
}

fn same_object(old: &Value, new: &Value) -> bool {
    let (Some(old), Some(new)) = (old.as_object(), new.as_object()) else {
        return old == new;
    };
    if old.len() != new.len() {
        return false;
    }
    old.iter().all(|(k, v)| {
        let Some(nv) = new.get(k) else { return false };
        if k != "metadata" {
            return v == nv;
        }
        let (Some(om), Some(nm)) = (v.as_object(), nv.as_object()) else {
            return v == nv;
        };
        let keys = |m: &Map<String, Value>| {
            m.keys()
                .filter(|k| *k != "resourceVersion")
                .cloned()
                .collect::<Vec<_>>()
        };
        keys(om) == keys(nm)
            && om.iter().all(|(mk, mv)| match mk.as_str() {
                "resourceVersion" => true,
                "managedFields" => same_managed_fields(mv, &nm[mk]),
                _ => Some(mv) == nm.get(mk),
            })
    })
}

fn same_managed_fields(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| -> Value {
        match v {
            Value::Array(entries) => Value::Array(
                entries
                    .iter()
                    .map(|e| {
                        let mut e = e.clone();
                        if let Some(o) = e.as_object_mut() {
                            o.remove("time");
                        }
                        e
                    })
                    .collect(),
            ),
            other => other.clone(),
        }
    };
    strip(a) == strip(b)
}

/// The Go package of a kind's internal type in kube-apiserver's own scheme (`core` of
/// `core.ConfigMap`); `None` for kinds other servers serve (CRDs, kcp's kinds, custom resources).
pub(crate) fn internal_package(group: &str) -> Option<&'static str> {
    match group {
        "" | "events.k8s.io" => Some("core"),
        "apps" => Some("apps"),
        "batch" => Some("batch"),
        "policy" => Some("policy"),
        "networking.k8s.io" => Some("networking"),
        "autoscaling" => Some("autoscaling"),
        "scheduling.k8s.io" => Some("scheduling"),
        "rbac.authorization.k8s.io" => Some("rbac"),
        "coordination.k8s.io" => Some("coordination"),
        _ => None,
    }
}

/// kube-apiserver's answer to a body of another of its kinds: it decodes the body as that kind
/// and finds no conversion to the kind of the URL.
fn unknown_conversion(
    rt: &ResourceType,
    body_api_version: &str,
    body_kind: &str,
) -> Option<ApiError> {
    if body_kind == rt.kind {
        return None;
    }
    let target = internal_package(&rt.group)?;
    let (body_group, body_version) = body_api_version
        .rsplit_once('/')
        .unwrap_or(("", body_api_version));
    internal_package(body_group)?;
    let known = crate::resource::builtin_types(crate::resource::Flavor::Kubernetes)
        .iter()
        .any(|t| t.group == body_group && t.kind == body_kind && t.serves(body_version));
    if !known {
        return None;
    }
    Some(ApiError::bad_request(format!(
        "{body_kind} in version \"{body_version}\" cannot be handled as a {kind}: converting \
         ({body_version}.{body_kind}) to ({target}.{kind}): unknown conversion",
        kind = rt.kind
    )))
}

/// Sets apiVersion and kind, or rejects a body written for another type.
fn check_type(rt: &ResourceType, version: &str, obj: &mut Value) -> ApiResult<()> {
    let api_version = rt.api_version(version);
    let root = obj
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the object must be a JSON object"))?;
    if let (Some(v), Some(k)) = (
        root.get("apiVersion").and_then(Value::as_str),
        root.get("kind").and_then(Value::as_str),
    ) && let Some(err) = unknown_conversion(rt, v, k)
    {
        return Err(err);
    }
    match root.get("apiVersion").and_then(Value::as_str) {
        Some(v) if v != api_version => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({api_version})"
            )));
        }
        _ => {}
    }
    match root.get("kind").and_then(Value::as_str) {
        Some(k) if k != rt.kind => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                rt.kind
            )));
        }
        _ => {}
    }
    root.insert("apiVersion".into(), json!(api_version));
    root.insert("kind".into(), json!(rt.kind));
    Ok(())
}

/// The namespace an object is written to: the URL's, which the body may repeat but not contradict.
fn check_namespace(
    rt: &ResourceType,
    url_namespace: Option<&str>,
    obj: &mut Value,
) -> ApiResult<String> {
    let body_ns = meta_str(obj, "namespace").map(String::from);
    let meta = meta_mut(obj)?;
    if !rt.namespaced {
        meta.remove("namespace");
        return Ok(String::new());
    }
    let ns = match (url_namespace, body_ns.as_deref()) {
        (Some(u), Some(b)) if !b.is_empty() && u != b => {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        (Some(u), _) => u.to_string(),
        (None, Some(b)) if !b.is_empty() => b.to_string(),
        _ => {
            return Err(ApiError::bad_request(format!(
                "{} is namespaced: a namespace is required",
                rt.group_resource()
            )));
        }
    };
    meta.insert("namespace".into(), json!(ns));
    Ok(ns)
}

/// Checks that a namespace exists and accepts new objects.
fn namespace_accepts_objects(state: &State, cluster: &str, ns: &str) -> ApiResult<()> {
    let gr = GroupResource::new("", "namespaces");
    let found = state.clusters.get(cluster).and_then(|c| c.get(&gr, "", ns));
    let Some(found) = found else {
        return Err(ApiError::not_found("", "namespaces", ns));
    };
    if found.terminating {
        return Err(ApiError::forbidden(format!(
            "unable to create new content in namespace {ns} because it is being terminated"
        ))
        .about("", "namespaces", ns));
    }
    Ok(())
}

/// Creates a namespace unless it exists (clusters start with `default`).
pub fn ensure_namespace(state: &mut State, cluster: &str, name: &str) -> ApiResult<()> {
    let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    ensure_created(state, cluster, "namespaces", None, body, "kcp-sim")
}

/// Creates a core (`v1`) object of `plural` as `manager` writes it, unless `cluster` does not
/// serve the kind or the object already exists.
pub fn ensure_created(
    state: &mut State,
    cluster: &str,
    plural: &str,
    namespace: Option<&str>,
    body: Value,
    manager: &str,
) -> ApiResult<()> {
    let Some(rt) = state.served_type(cluster, &GroupResource::new("", plural)) else {
        return Ok(());
    };
    let opts = WriteOptions {
        default_manager: manager.into(),
        ..WriteOptions::default()
    };
    match create(state, cluster, &rt, "v1", namespace, body, &opts) {
        Err(e) if e.code != 409 => Err(e),
        _ => Ok(()),
    }
}

/// Reads one object.
pub fn get(
    state: &State,
    cluster: &str,
    rt: &ResourceType,
    namespace: &str,
    name: &str,
) -> ApiResult<Arc<Stored>> {
    state
        .lookup(cluster, rt.group_resource(), namespace, name)
        .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))
}

/// Whether new objects of a type start at `metadata.generation` 1: kinds with a status
/// subresource do, except the core kinds (Namespaces, Services, Nodes), whose kube-apiserver
/// strategies set no generation, but Pods (whose strategy has set one since Kubernetes 1.34);
/// custom resources (a CRD's or a bound schema's) and kcp's kinds (custom resources in kcp)
/// always do.
fn has_generation(state: &State, cluster: &str, rt: &ResourceType) -> bool {
    // Strategies that set a generation without a status subresource, or none with one.
    match (rt.group.as_str(), rt.kind.as_str()) {
        ("networking.k8s.io", "NetworkPolicy" | "IngressClass")
        | ("scheduling.k8s.io", "PriorityClass")
        | ("", "ReplicationController" | "PodTemplate")
        | ("discovery.k8s.io", "EndpointSlice")
        | ("admissionregistration.k8s.io", _) => return true,
        ("autoscaling", "HorizontalPodAutoscaler")
        | ("certificates.k8s.io", "CertificateSigningRequest") => return false,
        _ => {}
    }
    (rt.status && (!rt.group.is_empty() || rt.kind == "Pod"))
        || kcp::is_kcp_kind(rt)
        || state.is_custom(cluster, rt.group_resource())
}

/// Creates an object.
pub fn create(
    state: &mut State,
    cluster: &str,
    rt: &ResourceType,
    version: &str,
    url_namespace: Option<&str>,
    mut obj: Value,
    opts: &WriteOptions,
) -> ApiResult<Written> {
    check_type(rt, version, &mut obj)?;
    let decoded = decode_body_as_go(state, cluster, rt, version, &mut obj, opts)?;
    object_meta::drop_empty_collections(&mut obj);
    decode_defaults(state, cluster, rt, &mut obj)?;
    let written = conversion::converts(rt, version).then(|| obj.clone());
    conversion::to_storage(rt, version, &mut obj)?;
    let ns = check_namespace(rt, url_namespace, &mut obj)?;
    let generate = meta_str(&obj, "generateName").map(String::from);
    let mut name = meta_str(&obj, "name").unwrap_or_default().to_string();
    if name.is_empty()
        && let Some(prefix) = generate.as_deref().filter(|p| !p.is_empty())
    {
        name = format!("{prefix}{}", generated_suffix());
    }
    let write = RbacWrite::new(cluster, rt, &ns, &name, None, &obj);
    rbac_escalation::check(state, &write, opts.requester.as_ref())?;
    let mut errors =
        object_meta::create_errors((&rt.group, &rt.kind), generate.as_deref(), &name, &obj);
    if !state.is_custom(cluster, rt.group_resource()) {
        errors.extend(validation::create_errors(&rt.group, &rt.kind, &obj));
    }
    if !errors.is_empty() {
        return Err(invalid_object(rt.stored_group(), &rt.kind, &name, &errors));
    }
    if rt.namespaced {
        namespace_accepts_objects(state, cluster, &ns)?;
    }
    if !opts.dry_run {
        preconditions::none_on_create(&obj)?;
    }
    let gr = rt.group_resource();
    let exists = state
        .clusters
        .get(cluster)
        .ok_or_else(|| ApiError::not_found("core.kcp.io", "logicalclusters", cluster))?
        .get(gr, &ns, &name)
        .is_some();
    if exists {
        return Err(ApiError::already_exists(&rt.group, &rt.plural, &name));
    }
    let now = now();
    {
        let meta = meta_mut(&mut obj)?;
        meta.insert("name".into(), json!(name));
        meta.insert("uid".into(), json!(new_uid()));
        meta.insert("creationTimestamp".into(), json!(now));
        meta.remove("deletionTimestamp");
        meta.remove("deletionGracePeriodSeconds");
        meta.remove("managedFields");
        meta.remove("selfLink");
        if has_generation(state, cluster, rt) {
            meta.insert("generation".into(), json!(1));
        } else {
            meta.remove("generation");
        }
    }
    if rt.status
        && let Some(root) = obj.as_object_mut()
    {
        root.remove("status");
    }
    // A custom resource is pruned and defaulted as it is decoded, before its writer's fields
    // are recorded (kube-apiserver's decoder does both).
    let pruned = admit_custom_resource(state, cluster, rt, &mut obj, None, schema::Part::Main)?;
    // With a status subresource, the create's strategy drops the status after decoding, so
    // what the schema defaults there (a Workspace's `status.phase`) is not the writer's: it
    // shows when the object is read, as kube-apiserver defaults a custom resource read back.
    let status_defaults = rt
        .status
        .then(|| obj.as_object_mut().and_then(|root| root.remove("status")))
        .flatten();
    if rt.group == "apps" && rt.kind == "DaemonSet" {
        daemon_sets::stamp_new_template_generation(&mut obj);
    }
    let who = FieldManager {
        manager: opts.manager(),
        subresource: None,
        time: &now,
        api_version: &rt.api_version(version),
    };
    if certificates::is_request(rt) {
        managed_fields::record_created_with_reset(&mut obj, &who, &["spec", "status"]);
        let requester = opts.requester.clone().unwrap_or_else(User::admin);
        certificates::admit_new(&mut obj, &requester);
    } else {
        conversion::record_created(rt, written, &mut obj, &who);
    }
    if let (Some(status), Some(root)) = (status_defaults, obj.as_object_mut()) {
        root.insert("status".into(), status);
    }
    finish_create(
        state,
        cluster,
        rt,
        &ns,
        &name,
        obj,
        opts.dry_run,
        Some(pruned),
    )
    .map(|written| warned_first(decoded, written))
}

/// Defaults, validation by kind and storage of a new object; shared by create and apply
/// (`admitted`: a custom resource was already pruned, defaulted and validated, dropping these
/// fields).
#[allow(clippy::too_many_arguments)]
fn finish_create(
    state: &mut State,
    cluster: &str,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    mut obj: Value,
    dry_run: bool,
    admitted: Option<Vec<String>>,
) -> ApiResult<Written> {
    let pruned = match admitted {
        Some(pruned) => pruned,
        None => admit_custom_resource(state, cluster, rt, &mut obj, None, schema::Part::Main)?,
    };
    let mut warnings = unknown_field_warnings(pruned);
    default_on_create(state, cluster, rt, &mut obj)?;
    check_limit_ranges(state, cluster, rt, ns, name, &obj)?;
    kcp::stamp_cluster(state, cluster, &mut obj)?;
    warnings.extend(admission_policies::admit(
        state,
        cluster,
        &AdmissionRequest {
            operation: "CREATE",
            rt,
            subresource: None,
            namespace: ns,
            name,
            object: Some(&obj),
            old_object: None,
            dry_run,
        },
    )?);
    let write = QuotaWrite {
        rt,
        namespace: ns,
        name,
        object: &obj,
        old: None,
        dry_run,
    };
    resource_quotas::admit(state, cluster, &write)?;
    with_go_zero_fields(state, cluster, rt, &mut obj);
    if dry_run {
        // Nothing is stored, so the answer has no resourceVersion.
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("resourceVersion");
        }
        return Ok(Written {
            object: Arc::new(Stored::encode(&obj, 0)?),
            created: true,
            warnings,
        });
    }
    let stored = state.encode_next(&mut obj)?;
    let gr = rt.group_resource();
    let object = state.put(cluster, gr, ns, name, stored)?;
    after_write(state, cluster, rt, None, &obj)?;
    Ok(Written {
        object,
        created: true,
        warnings,
    })
}

/// The LimitRanger's checks of a pod or claim (of the core group) against its namespace's
/// LimitRanges: `403 Forbidden` at the first that refuses it.
fn check_limit_ranges(
    state: &State,
    cluster: &str,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    obj: &Value,
) -> ApiResult<()> {
    if !rt.group.is_empty() || !matches!(rt.kind.as_str(), "Pod" | "PersistentVolumeClaim") {
        return Ok(());
    }
    let ranges = limit_ranges::ranges_in(state, cluster, ns);
    match limit_range_checks::refusal(&rt.kind, obj, &ranges) {
        Some(reason) => Err(ApiError::forbidden_object("", &rt.plural, name, &reason)),
        None => Ok(()),
    }
}

/// Prunes, defaults and validates a custom resource by its CRD's schema, and one of kcp's own
/// kinds by kcp's (nothing for other kinds).
fn admit_custom_resource(
    state: &State,
    cluster: &str,
    rt: &ResourceType,
    obj: &mut Value,
    old: Option<&Value>,
    part: schema::Part,
) -> ApiResult<Vec<String>> {
    if let Some(schemas) = state.crd_schemas(cluster, rt.group_resource()) {
        return schema::admit_reporting(schemas, rt, obj, old, part);
    }
    match kcp::own_schemas(state, rt) {
        Some(schemas) => kcp::admit_own_kind(schemas, rt, obj, old, part),
        None => Ok(Vec::new()),
    }
}

/// The schemas a write of `rt` is pruned, defaulted and validated by, as kube-apiserver's
/// apiextensions server admits a custom resource: its CRD's or bound schema's, or, for one of
/// kcp's own kinds (which kcp serves as CRDs), kcp's ([`kcp::own_schemas`]).
fn admission_schemas<'a>(
    state: &'a State,
    cluster: &str,
    rt: &ResourceType,
) -> Option<&'a schema::CrdSchemas> {
    state
        .crd_schemas(cluster, rt.group_resource())
        .map(Arc::as_ref)
        .or_else(|| kcp::own_schemas(state, rt))
}

/// Sets the `kubernetes.io/metadata.name` label of a named Namespace to its name.
fn label_namespace_name(obj: &mut Value) -> ApiResult<()> {
    let Some(name) = meta_str(obj, "name").filter(|n| !n.is_empty()) else {
        return Ok(());
    };
    let name = json!(name);
    let labels = meta_mut(obj)?.entry("labels").or_insert_with(|| json!({}));
    if !labels.is_object() {
        *labels = json!({});
    }
    labels["kubernetes.io/metadata.name"] = name;
    Ok(())
}

/// Moves a Secret's `stringData` into its `data`, base64-encoded, over the `data` entries of the
/// same keys (`Convert_v1_Secret_To_core_Secret`; the stored type has no `stringData`).
fn merge_string_data(obj: &mut Value) {
    use base64::Engine as _;
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let Some(Value::Object(strings)) = root.remove("stringData") else {
        return;
    };
    if strings.is_empty() {
        return;
    }
    let data = root.entry("data").or_insert_with(|| json!({}));
    if !data.is_object() {
        *data = json!({});
    }
    for (key, value) in strings {
        let text = value.as_str().unwrap_or_default();
        data[key.as_str()] = json!(base64::engine::general_purpose::STANDARD.encode(text));
    }
}

/// What kube-apiserver's decoding of a written body sets (its `SetDefaults_*` and conversion
/// functions), before the write's managed fields are recorded: a named Namespace's
/// `kubernetes.io/metadata.name` label, a Secret's `stringData` moved into `data` and its type
/// (`Opaque` when unset), a CRD's names and conversion, a Deployment's ([`defaults`]).
fn decode_defaults(
    state: &State,
    cluster: &str,
    rt: &ResourceType,
    obj: &mut Value,
) -> ApiResult<()> {
    if state.is_custom(cluster, rt.group_resource()) {
        // A CRD or bound schema of a builtin kind's name (kcp binding `deployments.apps`) gets
        // only its schema's defaults.
        return Ok(());
    }
    match (rt.group.as_str(), rt.kind.as_str()) {
        ("", "Namespace") => label_namespace_name(obj)?,
        ("", "Secret") => {
            merge_string_data(obj);
            // SetDefaults_Secret: a Secret without a type is Opaque.
            let typed = obj
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| !t.is_empty());
            if !typed && let Some(root) = obj.as_object_mut() {
                root.insert("type".into(), json!("Opaque"));
            }
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => crd_spec_defaults(obj),
        ("", "Pod") => defaults::pod(obj),
        ("", "Service") => services::defaults(obj),
        ("apps", "Deployment") => defaults::deployment(obj),
        ("apps", "ReplicaSet") => defaults::replica_set(obj),
        ("apps", "StatefulSet") => defaults::stateful_set(obj),
        ("apps", "DaemonSet") => defaults::daemon_set(obj),
        ("networking.k8s.io", "NetworkPolicy") => defaults::network_policy(obj),
        ("autoscaling", "HorizontalPodAutoscaler") => {
            if obj["apiVersion"] == "autoscaling/v1" {
                crate::autoscaling::v1_defaults(obj)
            } else {
                defaults::horizontal_pod_autoscaler(obj)
            }
        }
        ("", "PersistentVolumeClaim") => defaults::persistent_volume_claim(obj),
        ("scheduling.k8s.io", "PriorityClass") => defaults::priority_class(obj),
        ("batch", "Job") => defaults::job(obj),
        ("batch", "CronJob") => defaults::cron_job(obj),
        ("", "ReplicationController") => defaults::replication_controller(obj),
        ("", "PodTemplate") => defaults::pod_template_object(obj),
        ("", "LimitRange") => defaults::limit_range(obj),
        ("", "Endpoints") => defaults::endpoints(obj),
        ("discovery.k8s.io", "EndpointSlice") => defaults::endpoint_slice(obj),
        ("storage.k8s.io", "StorageClass") => defaults::storage_class(obj),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => flowcontrol::flow_schema_defaults(obj),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => {
            flowcontrol::priority_level_defaults(obj)
        }
        ("", "PersistentVolume") => defaults::persistent_volume(obj),
        (rbac_validation::GROUP, "RoleBinding" | "ClusterRoleBinding") => {
            rbac_validation::binding_defaults(obj);
        }
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => {
            defaults::webhook_configuration(obj, false);
        }
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => {
            defaults::webhook_configuration(obj, true);
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            defaults::validating_admission_policy(obj);
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            defaults::validating_admission_policy_binding(obj);
        }
        _ => {}
    }
    Ok(())
}

/// `SetDefaults_CustomResourceDefinitionSpec`: a singular name and a list kind from the kind,
/// and conversion strategy `None`.
fn crd_spec_defaults(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let unset = |v: Option<&Value>| v.and_then(Value::as_str).is_none_or(str::is_empty);
        if unset(names.get("singular")) {
            names.insert("singular".into(), json!(kind.to_lowercase()));
        }
        if unset(names.get("listKind")) && !kind.is_empty() {
            names.insert("listKind".into(), json!(format!("{kind}List")));
        }
    }
    if spec.get("conversion").is_none_or(Value::is_null) {
        spec.insert("conversion".into(), json!({"strategy": "None"}));
    }
}

/// Kind-specific defaults of a new object (what the real server's strategies and controllers set).
fn default_on_create(
    state: &mut State,
    cluster: &str,
    rt: &ResourceType,
    obj: &mut Value,
) -> ApiResult<()> {
    if state.is_custom(cluster, rt.group_resource()) {
        return apis::on_create(state, cluster, rt, obj);
    }
    let name = meta_str(obj, "name").unwrap_or_default().to_string();
    match (rt.group.as_str(), rt.kind.as_str()) {
        ("", "Namespace") => {
            // The strategy labels a namespace named from its generateName.
            label_namespace_name(obj)?;
            obj["spec"] = json!({"finalizers": ["kubernetes"]});
            obj["status"] = json!({"phase": "Active"});
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            // Stored unaccepted; its controllers accept it in a write of their own.
            crd::check(state, cluster, obj)?;
            obj["status"] = crd::initial_status(obj);
        }
        ("", "Pod") => {
            let namespace = meta_str(obj, "namespace").unwrap_or_default().to_string();
            let ranges = limit_ranges::ranges_in(state, cluster, &namespace);
            limit_ranges::admit_pod(obj, &ranges);
            pods::admit_new(&name, obj, |class| {
                scheduling::priority(state, cluster, class)
            })?
        }
        ("", "Service") => services::allocate(state, cluster, &name, obj)?,
        ("", "Node") => crate::nodes::admit_new(obj),
        // The strategy empties a new Deployment's status, which Go writes `{}`.
        ("apps", "Deployment") => obj["status"] = json!({}),
        // A ReplicaSet's replica count is written without omitempty.
        ("apps", "ReplicaSet") => obj["status"] = json!({"replicas": 0}),
        ("batch", "Job") => batch::admit_new_job(obj),
        ("batch", "CronJob") => batch::admit_new_cron_job(&name, obj)?,
        ("", "ResourceQuota") => obj["status"] = json!({}),
        // A new PodDisruptionBudget's counts, which Go writes without omitempty.
        ("policy", "PodDisruptionBudget") => {
            obj["status"] = json!({"currentHealthy": 0, "desiredHealthy": 0,
                "disruptionsAllowed": 0, "expectedPods": 0});
        }
        // A new StatefulSet's status keeps the counts Go writes without omitempty.
        ("apps", "StatefulSet") => obj["status"] = json!({"replicas": 0, "availableReplicas": 0}),
        ("apps", "DaemonSet") => daemon_sets::admit_new(obj),
        // The strategy keeps a new Ingress's load balancer status, which Go writes `{}`.
        ("networking.k8s.io", "Ingress") => obj["status"] = json!({"loadBalancer": {}}),
        // A new autoscaler's status: no metrics yet, and a desired count without omitempty.
        ("autoscaling", "HorizontalPodAutoscaler") => {
            obj["status"] = json!({"currentMetrics": null, "desiredReplicas": 0});
        }
        ("", "PersistentVolumeClaim") => {
            let classes = GroupResource::new("storage.k8s.io", "storageclasses");
            let classes = crate::apiexport::objects_of(state, cluster, &classes);
            volume_claims::admit_new(obj, volume_claims::default_class(&classes).as_deref());
        }
        ("", "PersistentVolume") => persistent_volumes::admit_new(obj, &now()),
        // A new policy's status is empty until kube-apiserver type-checks it.
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => obj["status"] = json!({}),
        // A ReplicationController's replica count is written without omitempty.
        ("", "ReplicationController") => obj["status"] = json!({"replicas": 0}),
        // The strategies empty a new flow-control object's status, which Go writes `{}`.
        ("flowcontrol.apiserver.k8s.io", "FlowSchema" | "PriorityLevelConfiguration") => {
            obj["status"] = json!({})
        }
        ("scheduling.k8s.io", "PriorityClass") => {
            scheduling::admit_new_class(state, cluster, &name, obj)?;
        }
        ("tenancy.kcp.io", "Workspace") => kcp::schedule_workspace(state, cluster, obj)?,
        _ => apis::on_create(state, cluster, rt, obj)?,
    }
    Ok(())
}

/// What a stored write sets off: CRDs become served, finished initializations move phases, a
/// dependent whose every owner is gone is collected.
fn after_write(
    state: &mut State,
    cluster: &str,
    rt: &ResourceType,
    old: Option<&Value>,
    new: &Value,
) -> ApiResult<()> {
    match (rt.group.as_str(), rt.kind.as_str()) {
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            match old {
                None => crd::accept(state, cluster, new)?,
                Some(_) => crd::serve(state, cluster, new)?,
            }
            api_services::sync(state, cluster)
        }
        ("", "Service") => ip_addresses::follow_service(state, cluster, new),
        ("", "Namespace") if old.is_none() && state.flavor == crate::resource::Flavor::Kcp => {
            kcp::default_service_account(state, cluster, new)?;
            kcp::root_ca::publish(state, cluster, meta_str(new, "name").unwrap_or(""))
        }
        ("flowcontrol.apiserver.k8s.io", "FlowSchema" | "PriorityLevelConfiguration") => {
            flowcontrol::mark_dangling(state, cluster)
        }
        ("tenancy.kcp.io", "Workspace") if old.is_none() => {
            kcp::create_logical_cluster(state, cluster, new)
        }
        ("core.kcp.io", "LogicalCluster") => {
            kcp::logical_cluster_changed(state, cluster, new)?;
            kcp::termination::released(state, new)
        }
        ("tenancy.kcp.io", "WorkspaceType") if old.is_none() => {
            kcp::workspace_type_created(state, cluster, new)
        }
        _ => apis::after_write(state, cluster, rt, old, new),
    }?;
    let namespace = meta_str(new, "namespace").unwrap_or("");
    if rt.namespaced {
        resource_quotas::sync_namespace(state, cluster, namespace)?;
    }
    if kcp::root_ca::is_published(rt.group_resource(), meta_str(new, "name").unwrap_or("")) {
        kcp::root_ca::publish(state, cluster, namespace)?;
    }
    garbage_collector::collect_if_every_owner_is_gone(state, cluster, rt, new)
}

/// Replaces an object (`PUT`), or its status.
#[allow(clippy::too_many_arguments)]
pub fn update(
    state: &mut State,
    cluster: &str,
    rt: &ResourceType,
    version: &str,
    namespace: &str,
    name: &str,
    status: bool,
    mut obj: Value,
    opts: &WriteOptions,
) -> ApiResult<Written> {
    check_type(rt, version, &mut obj)?;
    let decoded = decode_body_as_go(state, cluster, rt, version, &mut obj, opts)?;
    decode_defaults(state, cluster, rt, &mut obj)?;
    conversion::to_storage(rt, version, &mut obj)?;
    let body_name = meta_str(&obj, "name").unwrap_or_default();
    if !body_name.is_empty() && body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    check_namespace(rt, (!namespace.is_empty()).then_some(namespace), &mut obj)?;
    let current = match get(state, cluster, rt, namespace, name) {
        Ok(current) => current,
        Err(missing) if missing.code == 404 && creates_on_update(rt) && !status => {
            let url_namespace = (!namespace.is_empty()).then_some(namespace);
            return create(state, cluster, rt, version, url_namespace, obj, opts);
        }
        Err(err) => return Err(err),
    };
    let old = current.value()?;
    preconditions::uid(
        rt,
        state.is_custom(cluster, rt.group_resource()),
        (namespace, name),
        meta_str(&obj, "uid"),
        meta_str(&old, "uid").unwrap_or_default(),
    )?;
    let write = RbacWrite::new(cluster, rt, namespace, name, Some(&old), &obj);
    rbac_escalation::check(state, &write, opts.requester.as_ref())?;
    preconditions::update_revision(rt, name, meta_str(&obj, "resourceVersion"), current.rv)?;
    write_update(
        state, cluster, rt, version, namespace, name, status, old, obj, opts, false,
    )
    .map(|written| warned_first(decoded, written))
}

/// The object a write's field bookkeeping is recorded from. kube-apiserver's field manager sees
/// the decoded request, before the kind's strategy drops what that write may not change.
enum SeenByManager {
    /// The object stored.
    Stored,
    /// A custom resource's status write: the object stored, with the metadata the write sent
    /// ([`status_writes::seen_by_field_manager`]).
    SentMetadata(Value),
    /// A write through a pod's `/ephemeralcontainers`: the whole pod it sent, with the stored
    /// object's field entries.
    Sent(Value),
}

impl SeenByManager {
    /// The object to record from, `None` for the object stored.
    fn object(self, stored: &Value) -> Option<Value> {
        match self {
            Self::Stored => None,
            Self::SentMetadata(sent) => Some(status_writes::seen_by_field_manager(stored, &sent)),
            Self::Sent(mut sent) => {
                object_meta::take_metadata(&mut sent, stored, &["managedFields"]);
                Some(sent)
            }
        }
    }
}

/// Merges a requested new version onto the stored one by the status-subresource rules, does the
/// field bookkeeping, and stores it unless nothing changed.
#[allow(clippy::too_many_arguments)]
fn write_update(
    state: &mut State,
    cluster: &str,
    rt: &ResourceType,
    version: &str,
    namespace: &str,
    name: &str,
    status: bool,
    old: Value,
    mut requested: Value,
    opts: &WriteOptions,
    applied: bool,
) -> ApiResult<Written> {
    let sent_managed_fields = (!applied && !status)
        .then(|| requested.pointer("/metadata/managedFields").cloned())
        .flatten();
    object_meta::drop_empty_collections(&mut requested);
    let deletion_sent = requested.pointer("/metadata/deletionTimestamp").cloned();
    let csr = certificates::part(rt, status, opts.approval);
    // What the field manager records a write from, where that is not the object stored.
    let mut seen = SeenByManager::Stored;
    let mut new = if let Some(part) = csr {
        certificates::merge_update(part, &old, requested)
    } else if opts.ephemeral_containers {
        let stored = ephemeral_containers::stored(&old, &requested);
        seen = SeenByManager::Sent(requested);
        stored
    } else if status {
        let custom = state.is_custom(cluster, rt.group_resource());
        let mut merged = status_writes::stored(rt, custom, &old, &requested);
        if custom {
            seen = SeenByManager::SentMetadata(requested.clone());
        }
        if applied && let Some(mf) = requested.pointer("/metadata/managedFields") {
            meta_mut(&mut merged)?.insert("managedFields".into(), mf.clone());
        }
        merged
    } else {
        let mut merged = requested;
        if rt.status {
            match old.get("status") {
                Some(s) => merged["status"] = s.clone(),
                None => {
                    if let Some(root) = merged.as_object_mut() {
                        root.remove("status");
                    }
                }
            }
        }
        merged
    };
    // What the client cannot change.
    {
        let old_meta = meta(&old).cloned().unwrap_or_default();
        let meta = meta_mut(&mut new)?;
        // A uid the write sends is kept for validation to refuse (kube's `BeforeUpdate` fills
        // only a missing one).
        let sends_uid = meta
            .get("uid")
            .and_then(Value::as_str)
            .is_some_and(|u| !u.is_empty());
        for key in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "name",
            "namespace",
        ] {
            if key == "uid" && sends_uid {
                continue;
            }
            match old_meta.get(key) {
                Some(v) => meta.insert(key.into(), v.clone()),
                None => meta.remove(key),
            };
        }
        if !applied {
            // What a status write sends there is never read; what a write to the main
            // resource sends may replace or reset the live entries.
            let base = managed_fields::entries_to_update(
                old_meta.get("managedFields"),
                sent_managed_fields.as_ref(),
            );
            match base {
                Some(v) => meta.insert("managedFields".into(), v),
                None => meta.remove("managedFields"),
            };
        }
        meta.insert(
            "resourceVersion".into(),
            old_meta
                .get("resourceVersion")
                .cloned()
                .unwrap_or(Value::Null),
        );
    }
    let mut errors = object_meta::update_errors((&rt.group, &rt.kind), status, &old, &new);
    if !status {
        errors.extend(object_meta::deletion_timestamp_errors(
            &old,
            deletion_sent.as_ref(),
        ));
    }
    if !status && !state.is_custom(cluster, rt.group_resource()) {
        errors.extend(validation::update_errors(&rt.group, &rt.kind, &old, &new));
    }
    if status && rt.group.is_empty() && rt.kind == "Service" {
        services::default_load_balancer_status(&mut new);
        errors.extend(services::load_balancer_status_errors(&new));
    }
    if opts.ephemeral_containers {
        errors.extend(ephemeral_containers::update_errors(&old, &new));
    }
    if let Some(part) = csr {
        certificates::stamp_condition_times(&old, &mut new, &now());
        errors.extend(certificates::update_errors(part, &old, &new));
    }
    if !errors.is_empty() {
        return Err(invalid_object(rt.stored_group(), &rt.kind, name, &errors));
    }
    let part = if status {
        schema::Part::Status
    } else {
        schema::Part::Main
    };
    let warnings = unknown_field_warnings(admit_custom_resource(
        state,
        cluster,
        rt,
        &mut new,
        Some(&old),
        part,
    )?);
    kcp::stamp_cluster(state, cluster, &mut new)?;
    kcp::check_update(rt, &old, &new, opts.lifecycle.as_ref())?;
    apis::check_update(rt, &old, &new)?;
    let subresource = match (status, opts.scale) {
        (true, _) if opts.approval => Some("approval"),
        (true, _) if opts.ephemeral_containers => Some(ephemeral_containers::SUBRESOURCE),
        (true, _) => Some("status"),
        (false, true) => Some("scale"),
        (false, false) => None,
    };
    let mut warnings = warnings;
    warnings.extend(admission_policies::admit(
        state,
        cluster,
        &AdmissionRequest {
            operation: "UPDATE",
            rt,
            subresource,
            namespace,
            name,
            object: Some(&new),
            old_object: Some(&old),
            dry_run: opts.dry_run,
        },
    )?);
    if subresource.is_none() && rt.kind == "PersistentVolumeClaim" {
        check_limit_ranges(state, cluster, rt, namespace, name, &new)?;
    }
    if subresource.is_none() {
        let write = QuotaWrite {
            rt,
            namespace,
            name,
            object: &new,
            old: Some(&old),
            dry_run: opts.dry_run,
        };
        resource_quotas::admit(state, cluster, &write)?;
    }
    if rt.group.is_empty() && rt.kind == "Service" && !status {
        services::keep_allocations(&old, &mut new);
    }
    if rt.group == "apps" && rt.kind == "DaemonSet" && !status {
        daemon_sets::on_update(&old, &mut new);
    }
    with_go_zero_fields(state, cluster, rt, &mut new);
    if same_object(&old, &new) {
        let object = get(state, cluster, rt, namespace, name)?;
        return Ok(Written {
            object,
            created: false,
            warnings,
        });
    }
    if old
        .get("metadata")
        .and_then(|m| m.get("generation"))
        .is_some()
        && (spec_changed(&old, &new)
            || (!status && deployment_annotations_changed(rt, &old, &new))
            || (!rt.status
                && state.is_custom(cluster, rt.group_resource())
                && old.get("status") != new.get("status")))
    {
        let generation = old
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        meta_mut(&mut new)?.insert("generation".into(), json!(generation + 1));
    }
    let now = now();
    // As kube-apiserver's skipNonAppliedManager: an object nobody owns fields of (created with
    // nothing to own, or whose entries this write reset) stays untracked by writes other than
    // applies.
    let base = new.pointer("/metadata/managedFields").cloned();
    let tracked = base
        .as_ref()
        .and_then(Value::as_array)
        .is_some_and(|entries| !entries.is_empty());
    if !applied && tracked {
        let who = FieldManager {
            manager: opts.manager(),
            subresource,
            time: &now,
            api_version: &rt.api_version(version),
        };
        match seen.object(&new) {
            Some(mut seen) => {
                managed_fields::record_update(Some(&old), &mut seen, &who);
                if let Some(entries) = seen.pointer("/metadata/managedFields") {
                    meta_mut(&mut new)?.insert("managedFields".into(), entries.clone());
                }
            }
            None => managed_fields::record_update_over(base.as_ref(), Some(&old), &mut new, &who),
        }
    }
    if rt.kind == "CustomResourceDefinition" && rt.group == "apiextensions.k8s.io" {
        crd::establish(state, cluster, &mut new)?;
    }
    let stored_rv = meta_str(&old, "resourceVersion")
        .and_then(|rv| rv.parse().ok())
        .unwrap_or_default();
    let last_finalizer_gone =
        new.pointer("/metadata/deletionTimestamp").is_some() && finalizers_of(&new).is_empty();
    if opts.dry_run || last_finalizer_gone {
        // Nothing is stored: the answer keeps the stored resourceVersion. An update that takes
        // the last finalizer away deletes the object without writing it again.
        if last_finalizer_gone && !opts.dry_run {
            remove_now(state, cluster, rt, namespace, name)?;
        }
        return Ok(Written {
            object: Arc::new(Stored::encode(&new, stored_rv)?),
            created: false,
            warnings,
        });
    }
    let stored = state.encode_next(&mut new)?;
    let gr = rt.group_resource();
    let object = state.put(cluster, gr, namespace, name, stored)?;
    after_write(state, cluster, rt, Some(&old), &new)?;
    if new.pointer("/metadata/deletionTimestamp").is_some() {
        // What is left may be the garbage collector's own finalizers, done with: the object
        // goes, and the answer is what was stored, as the real server answers before its
        // collector acts.
        try_finish_termination(state, cluster, rt, namespace, name)?;
    }
    Ok(Written {
        object,
        created: false,
        warnings,
    })
}

/// Patches an object (`PATCH`), or its status. A server-side apply of a missing object creates it.
#[allow(clippy::too_many_arguments)]
pub fn patch(
    state: &mut State,
    cluster: &str,
    rt: &ResourceType,
    version: &str,
    namespace: &str,
    name: &str,
    status: bool,
    kind: PatchKind,
    body: &Value,
    opts: &WriteOptions,
) -> ApiResult<Written> {
    let current = state.lookup(cluster, rt.group_resource(), namespace, name);
    if kind == PatchKind::Apply {
        return apply(
            state, cluster, rt, version, namespace, name, status, current, body, opts,
        );
    }
    let current = current.ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
    let old = current.value()?;
    let mut new = old.clone();
    // The patch applies to the object as read at the request's version.
    conversion::to_version(rt, version, &mut new);
    if let Some(root) = new.as_object_mut() {
        root.insert("apiVersion".into(), json!(rt.api_version(version)));
    }
    let invalid = |e: patch::PatchError| ApiError::new(422, "Invalid", e.to_string());
    let not_applied = |e: patch::PatchError| match e {
        patch::PatchError::JsonPatchFailed(why) => {
            tracing::debug!(%why, "a JSON patch could not be applied");
            ApiError::unprocessable()
        }
        other => invalid(other),
    };
    match kind {
        PatchKind::Merge => patch::merge_patch(&mut new, body),
        PatchKind::Json => patch::json_patch(&mut new, body).map_err(not_applied)?,
        PatchKind::Strategic => patch::strategic_merge_patch(&mut new, body).map_err(invalid)?,
        PatchKind::Apply => {}
    }
    // The patched object must still be the one the URL names (kube-apiserver's `checkName`).
    let patched_name = meta_str(&new, "name").unwrap_or_default();
    if patched_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({patched_name}) does not match the name on the URL ({name})"
        )));
    }
    let patched_namespace = meta_str(&new, "namespace").unwrap_or_default();
    if !namespace.is_empty() && !patched_namespace.is_empty() && patched_namespace != namespace {
        return Err(ApiError::bad_request(format!(
            "the namespace of the object ({patched_namespace}) does not match the namespace on the request ({namespace})"
        )));
    }
    let write = RbacWrite::new(cluster, rt, namespace, name, Some(&old), &new);
    rbac_escalation::check(state, &write, opts.requester.as_ref())?;
    // A resourceVersion the patch sets is a precondition; one it removes makes the update
    // unconditional, which a kind that does not allow that refuses as a PUT without one.
    preconditions::update_revision(rt, name, meta_str(&new, "resourceVersion"), current.rv)?;
    check_type(rt, version, &mut new)?;
    let decoded = if kind == PatchKind::Strategic {
        decode_patched_as_go(state, cluster, rt, version, &mut new, opts, |_| {
            field_validation::go_fmt(body)
        })?
    } else {
        decode_patched_as_go(state, cluster, rt, version, &mut new, opts, |patched| {
            serde_json::to_string(patched).unwrap_or_default()
        })?
    };
    decode_defaults(state, cluster, rt, &mut new)?;
    conversion::to_storage(rt, version, &mut new)?;
    write_update(
        state, cluster, rt, version, namespace, name, status, old, new, opts, false,
    )
    .map(|written| warned_first(decoded, written))
}

#[allow(clippy::too_many_arguments)]
fn apply(
    state: &mut State,
    cluster: &str,
    rt: &ResourceType,
    version: &str,
    namespace: &str,
    name: &str,
    status: bool,
    current: Option<Arc<Stored>>,
    body: &Value,
    opts: &WriteOptions,
) -> ApiResult<Written> {
    // The HTTP layer checked every option; a library caller gets the same refusal.
    check_apply_options(opts)?;
    let manager = opts.field_manager.as_deref().unwrap_or_default();
    check_applied_type(rt, version, body)?;
    refuse_sent_managed_fields(body)?;
    check_typed_configuration(state, cluster, rt, body)?;
    let mut applied = body.clone();
    check_type(rt, version, &mut applied)?;
    if opts.field_validation.is_some() {
        check_declared(state, cluster, rt, version, name, &applied, opts)?;
    }
    let body_name = meta_str(&applied, "name").unwrap_or_default();
    if body_name.is_empty() {
        // As kube-apiserver: an apply body without a name takes the URL's (kube-lease-manager
        // and other clients send only the fields they own).
        if let Some(meta) = applied.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("name".into(), Value::String(name.to_string()));
        } else if let Some(obj) = applied.as_object_mut() {
            obj.insert("metadata".into(), serde_json::json!({ "name": name }));
        }
    } else if body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    check_namespace(
        rt,
        (!namespace.is_empty()).then_some(namespace),
        &mut applied,
    )?;
    {
        let meta = meta_mut(&mut applied)?;
        for key in [
            "managedFields",
            "resourceVersion",
            "uid",
            "creationTimestamp",
            "generation",
            "deletionTimestamp",
            "selfLink",
        ] {
            meta.remove(key);
        }
    }
    // The status subresource sees only the status; the main resource never writes it.
    if let Some(root) = applied.as_object_mut() {
        if status {
            root.retain(|k, _| matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "status"));
            if let Some(meta) = root.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.retain(|k, _| k == "name" || k == "namespace");
            }
        } else if rt.status {
            root.remove("status");
        }
    }
    let now = now();
    let api_version = rt.api_version(version);
    let who = FieldManager {
        manager,
        subresource: status.then_some("status"),
        time: &now,
        api_version: &api_version,
    };
    let conflict = apply_conflict;
    match current {
        None => {
            if status {
                return Err(ApiError::not_found(&rt.group, &rt.plural, name));
            }
            let write = RbacWrite::new(cluster, rt, namespace, name, None, &applied);
            rbac_escalation::check(state, &write, opts.requester.as_ref())?;
            let errors = object_meta::create_errors((&rt.group, &rt.kind), None, name, &applied);
            if !errors.is_empty() {
                return Err(invalid_object(rt.stored_group(), &rt.kind, name, &errors));
            }
            if rt.namespaced {
                namespace_accepts_objects(state, cluster, namespace)?;
            }
            let mut obj =
                managed_fields::apply(None, &applied, &who, opts.force).map_err(conflict)?;
            as_go_stores(state, cluster, rt, version, &mut obj);
            decode_defaults(state, cluster, rt, &mut obj)?;
            if !state.is_custom(cluster, rt.group_resource()) {
                let errors = validation::create_errors(&rt.group, &rt.kind, &obj);
                if !errors.is_empty() {
                    return Err(invalid_object(rt.stored_group(), &rt.kind, name, &errors));
                }
            }
            conversion::to_storage(rt, version, &mut obj)?;
            let meta = meta_mut(&mut obj)?;
            meta.insert("uid".into(), json!(new_uid()));
            meta.insert("creationTimestamp".into(), json!(now));
            if has_generation(state, cluster, rt) {
                meta.insert("generation".into(), json!(1));
            }
            finish_create(state, cluster, rt, namespace, name, obj, opts.dry_run, None)
        }
        Some(current) => {
            // A resourceVersion in the configuration is a precondition.
            preconditions::resource_version(
                rt,
                name,
                meta_str(body, "resourceVersion"),
                current.rv,
            )?;
            let old = current.value()?;
            let mut seen = old.clone();
            conversion::to_version(rt, version, &mut seen);
            if managed_entries(&seen).is_empty() {
                claim_before_first_apply(rt, status, &mut seen, &who)?;
            }
            let mut new =
                last_applied::apply(&seen, body, &applied, &who, opts.force).map_err(conflict)?;
            as_go_stores(state, cluster, rt, version, &mut new);
            decode_defaults(state, cluster, rt, &mut new)?;
            conversion::to_storage(rt, version, &mut new)?;
            let write = RbacWrite::new(cluster, rt, namespace, name, Some(&old), &new);
            rbac_escalation::check(state, &write, opts.requester.as_ref())?;
            write_update(
                state, cluster, rt, version, namespace, name, status, old, new, opts, true,
            )
        }
    }
}

/// kube's skipNonApplied manager: the fields of an object nobody owns anything of are first
/// claimed by `before-first-apply` (an update from nothing to the live object, through the
/// subresource being applied), which the apply may then conflict with. What that subresource
/// does not write (a main resource's status, a status write's spec) is not claimed.
fn claim_before_first_apply(
    rt: &ResourceType,
    status: bool,
    seen: &mut Value,
    who: &FieldManager,
) -> ApiResult<()> {
    let mut written = seen.clone();
    if let Some(root) = written.as_object_mut() {
        if status {
            root.retain(|k, _| matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "status"));
        } else if rt.status {
            root.remove("status");
        }
    }
    let claim = FieldManager {
        manager: managed_fields::BEFORE_FIRST_APPLY,
        ..*who
    };
    managed_fields::record_update(None, &mut written, &claim);
    if let Some(entries) = written.pointer("/metadata/managedFields") {
        meta_mut(seen)?.insert("managedFields".into(), entries.clone());
    }
    Ok(())
}

/// An apply's options as kube's `ValidatePatchOptions` checks them (a field manager is
/// required).
fn check_apply_options(opts: &WriteOptions) -> ApiResult<()> {
    crate::write_options::check(&crate::write_options::WriteQuery {
        options_kind: "PatchOptions",
        apply: true,
        field_manager: opts.field_manager.as_deref(),
        ..Default::default()
    })
}

/// An applied configuration may not carry managedFields.
fn refuse_sent_managed_fields(body: &Value) -> ApiResult<()> {
    match body.pointer("/metadata/managedFields") {
        Some(entries) if !entries.is_null() => {
            Err(ApiError::bad_request("metadata.managedFields must be nil"))
        }
        _ => Ok(()),
    }
}

/// kube-apiserver's apply conflict: one cause per field, no object in the details.
fn apply_conflict(c: managed_fields::ApplyConflicts) -> ApiError {
    let causes = c
        .conflicts
        .iter()
        .map(|one| StatusCause {
            reason: "FieldManagerConflict".to_string(),
            message: format!("conflict with {}", one.manager_description()),
            field: one.field.clone(),
        })
        .collect();
    ApiError::new(409, "Conflict", c.to_string()).with_causes(causes)
}

/// A write through an object's `/scale` subresource.
#[derive(Debug, Clone)]
pub enum ScaleWrite {
    /// A server-side apply: the applied `autoscaling/v1` Scale.
    Apply(Value),
    /// A PUT or another patch: the Scale it makes.
    Update(Value),
}

/// Server-side apply of an object's Scale (`PATCH .../scale` with an apply body), as
/// kube-apiserver runs it: the owners of the object's replicas are seen on the Scale
/// ([`scale_fields`]), the Scale is applied with subresource `scale` at `autoscaling/v1`, and the
/// new owners go back to the object with its new replicas.
#[allow(clippy::too_many_arguments)]
pub fn apply_scale(
    state: &mut State,
    cluster: &str,
    rt: &ResourceType,
    version: &str,
    (namespace, name): (&str, &str),
    paths: &crate::scale::ScalePaths,
    body: &Value,
    opts: &WriteOptions,
) -> ApiResult<Written> {
    check_apply_options(opts)?;
    let text = |key: &str| body.get(key).and_then(Value::as_str).unwrap_or_default();
    if (text("apiVersion"), text("kind")) != ("autoscaling/v1", "Scale") {
        return Err(ApiError::bad_request(format!(
            "invalid object type: {}",
            group_version_kind(body)
        )));
    }
    refuse_sent_managed_fields(body)?;
    let current = get(state, cluster, rt, namespace, name)?;
    let old = current.value()?;
    let mut view = ScaleView::of(rt, paths, &old);
    if view.entries.is_empty() {
        if state.is_custom(cluster, rt.group_resource()) {
            // kube's converter cannot make a custom resource of a Scale (seen on v1.34.2).
            return Err(ApiError::new(
                500,
                "",
                "failed to create manager for existing fields: failed to convert live object (/; autoscaling/v1, Kind=Scale) to proper version: request to convert CR to an invalid group/version: autoscaling/v1",
            ));
        }
        view.entries
            .extend(scale_fields::before_first_apply(&view.scale));
    }
    let now = now();
    let who = view.writer(opts, &now);
    let applied = managed_fields::apply(Some(&view.tracked()?), body, &who, opts.force)
        .map_err(apply_conflict)?;
    preconditions::resource_version(rt, name, meta_str(body, "resourceVersion"), current.rv)?;
    let owners = view.owners_after(&applied, &rt.api_version(version));
    let new = view.object_with(&applied, owners)?;
    write_update(
        state, cluster, rt, version, namespace, name, false, old, new, opts, true,
    )
}

/// A write through an object's Scale other than an apply (a PUT, or a merge, JSON or strategic
/// patch of it; `scale` is the Scale it makes), recorded as kube-apiserver's ScaleHandler records
/// it: an update by the writer with subresource `scale` when somebody owns the object's
/// replicas, and nothing when nobody does (kube's skipNonApplied manager).
#[allow(clippy::too_many_arguments)]
pub fn update_scale(
    state: &mut State,
    cluster: &str,
    rt: &ResourceType,
    version: &str,
    (namespace, name): (&str, &str),
    paths: &crate::scale::ScalePaths,
    scale: Value,
    opts: &WriteOptions,
) -> ApiResult<Written> {
    let current = get(state, cluster, rt, namespace, name)?;
    preconditions::resource_version(rt, name, meta_str(&scale, "resourceVersion"), current.rv)?;
    let old = current.value()?;
    let view = ScaleView::of(rt, paths, &old);
    let owners = if view.entries.is_empty() {
        view.parent_entries.clone()
    } else {
        // The Scale as Go holds it after the write (replicas 0 are omitted).
        let mut written = crate::scale::render(paths, &view.object_with(&scale, Vec::new())?);
        let now = now();
        managed_fields::record_update(
            Some(&view.tracked()?),
            &mut written,
            &view.writer(opts, &now),
        );
        view.owners_after(&written, &rt.api_version(version))
    };
    let new = view.object_with(&scale, owners)?;
    write_update(
        state, cluster, rt, version, namespace, name, false, old, new, opts, true,
    )
}

/// An object seen through its Scale, with the owners of its replicas.
struct ScaleView<'a> {
    paths: &'a crate::scale::ScalePaths,
    object: &'a Value,
    /// The object's managedFields.
    parent_entries: Vec<Value>,
    /// The object's replicas path as managedFields keys.
    replicas: Vec<String>,
    /// The Scale as read.
    scale: Value,
    /// The Scale's managedFields.
    entries: Vec<Value>,
}

impl<'a> ScaleView<'a> {
    fn of(rt: &ResourceType, paths: &'a crate::scale::ScalePaths, object: &'a Value) -> Self {
        let parent_entries = managed_entries(object);
        let replicas = scale_fields::field_keys(&paths.spec_replicas);
        let entries = scale_fields::to_subresource(&parent_entries, &replicas, &rt.group);
        ScaleView {
            paths,
            object,
            parent_entries,
            replicas,
            scale: crate::scale::render(paths, object),
            entries,
        }
    }

    /// The Scale with its managedFields.
    fn tracked(&self) -> ApiResult<Value> {
        let mut scale = self.scale.clone();
        meta_mut(&mut scale)?.insert("managedFields".into(), Value::Array(self.entries.clone()));
        Ok(scale)
    }

    /// Who writes through the Scale.
    fn writer<'w>(&self, opts: &'w WriteOptions, time: &'w str) -> FieldManager<'w> {
        FieldManager {
            manager: opts.manager(),
            subresource: Some("scale"),
            time,
            api_version: "autoscaling/v1",
        }
    }

    /// The object's managedFields after the write left the Scale `written`.
    fn owners_after(&self, written: &Value, api_version: &str) -> Vec<Value> {
        scale_fields::to_parent(
            &self.parent_entries,
            &managed_entries(written),
            &self.replicas,
            api_version,
        )
    }

    /// The object with the replicas of `scale` and the managedFields `owners`.
    fn object_with(&self, scale: &Value, owners: Vec<Value>) -> ApiResult<Value> {
        let mut new = crate::scale::with_replicas(self.paths, self.object, scale)?;
        let meta = meta_mut(&mut new)?;
        meta.remove("resourceVersion");
        if owners.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields".into(), Value::Array(owners));
        }
        Ok(new)
    }
}

/// An object's `metadata.managedFields` entries.
fn managed_entries(object: &Value) -> Vec<Value> {
    object
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Deletes an object: at once when it has no finalizers, otherwise by setting its
/// deletionTimestamp. Dependents are garbage collected by the propagation policy.
pub fn delete(
    state: &mut State,
    cluster: &str,
    rt: &ResourceType,
    namespace: &str,
    name: &str,
    req: &DeleteRequest,
) -> ApiResult<Deleted> {
    let current = get(state, cluster, rt, namespace, name)?;
    if let Some(uid) = req.precondition_uid.as_deref()
        && uid != &*current.uid
    {
        // kube-apiserver's BeforeDelete names the kind, not the resource, in this conflict.
        return Err(ApiError::conflict(
            &rt.group,
            &rt.kind,
            name,
            &format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                current.uid
            ),
        ));
    }
    if let Some(rv) = req.precondition_resource_version.as_deref()
        && rv != current.rv.to_string()
    {
        return Err(ApiError::conflict(
            &rt.group,
            &rt.kind,
            name,
            &format!(
                "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified",
                current.rv
            ),
        ));
    }
    kcp::check_delete(rt, name)?;
    let mut obj = current.value()?;
    admission_policies::admit(
        state,
        cluster,
        &AdmissionRequest {
            operation: "DELETE",
            rt,
            subresource: None,
            namespace,
            name,
            object: None,
            old_object: Some(&obj),
            dry_run: req.dry_run,
        },
    )?;
    let policy = req.propagation.as_deref().unwrap_or("Background");
    let is_namespace = rt.group.is_empty() && rt.kind == "Namespace";
    let is_crd = rt.group == "apiextensions.k8s.io" && rt.kind == "CustomResourceDefinition";
    let is_binding = apis::is_binding(rt);
    let existing = finalizers_of(&obj);
    let fins = garbage_collection_finalizers(&existing, req.propagation.as_deref());
    let needs_cleanup = is_namespace || is_crd || is_binding;
    let is_custom = state.is_custom(cluster, rt.group_resource());
    let at_once = fins.is_empty() && !needs_cleanup;
    if req.dry_run {
        // The answer is what would be stored: an object that waits is answered marked.
        let object = if at_once || obj.pointer("/metadata/deletionTimestamp").is_some() {
            current
        } else {
            mark_deleting(&mut obj, &fins, is_namespace)?;
            Arc::new(Stored::encode(&obj, current.rv)?)
        };
        return Ok(Deleted { object, at_once });
    }
    if policy == "Orphan" {
        orphan_dependents(state, cluster, &current.uid)?;
    }
    let is_pod = rt.group.is_empty() && rt.kind == "Pod" && !is_custom;
    if is_pod {
        let outcome = graceful::delete_pod(
            state, cluster, rt, namespace, name, &current, &mut obj, &fins, req,
        )?;
        if let graceful::Outcome::Answered(deleted) = outcome {
            return Ok(deleted);
        }
    }
    if at_once {
        let removed = remove_now(state, cluster, rt, namespace, name)?;
        return Ok(Deleted {
            object: removed.unwrap_or(current),
            at_once,
        });
    }
    // Terminating: mark, then clean up what the object waits for.
    let already = obj.pointer("/metadata/deletionTimestamp").is_some();
    let mut terminating = None;
    if !already {
        mark_deleting(&mut obj, &fins, is_namespace)?;
        terminating = Some(state.store(cluster, rt.group_resource(), namespace, name, &mut obj)?);
    } else if fins != existing {
        // Deleted again with another propagation: its garbage collector's finalizers change.
        meta_mut(&mut obj)?.insert("finalizers".into(), json!(fins));
        terminating = Some(state.store(cluster, rt.group_resource(), namespace, name, &mut obj)?);
    }
    if is_namespace {
        delete_namespace_contents(state, cluster, name)?;
    }
    if is_crd {
        crd::delete_custom_resources(state, cluster, &obj)?;
    }
    if is_binding {
        apiexport::binding::delete_bound_objects(state, cluster, &obj)?;
    }
    if policy == "Foreground" || fins.iter().any(|f| f == "foregroundDeletion") {
        collect_dependents(state, cluster, &current.uid)?;
    }
    try_finish_termination(state, cluster, rt, namespace, name)?;
    // Answered as the delete left it, before any controller acted on it (kcp-sim's act inside
    // the request), as the real server answers: terminating.
    let object = match terminating {
        Some(marked) => marked,
        None => state
            .lookup(cluster, rt.group_resource(), namespace, name)
            .unwrap_or(current),
    };
    Ok(Deleted { object, at_once })
}

/// The finalizers a delete leaves an object with, as kube's
/// `deletionFinalizersForGarbageCollection` computes them: the garbage collector's two
/// (`orphan`, `foregroundDeletion`) are replaced by the one the propagation policy asks for
/// (none for `Background`); without a policy, the first of them the object already has stays.
/// An unchanged set keeps its order.
fn garbage_collection_finalizers(existing: &[String], propagation: Option<&str>) -> Vec<String> {
    const ORPHAN: &str = "orphan";
    const FOREGROUND: &str = "foregroundDeletion";
    let first_collector_finalizer = existing
        .iter()
        .find(|f| *f == ORPHAN || *f == FOREGROUND)
        .map(String::as_str);
    let wanted = match propagation {
        Some("Orphan") => Some(ORPHAN),
        Some("Foreground") => Some(FOREGROUND),
        Some(_) => None,
        None => first_collector_finalizer,
    };
    let mut out: Vec<String> = existing
        .iter()
        .filter(|f| *f != ORPHAN && *f != FOREGROUND)
        .cloned()
        .collect();
    out.extend(wanted.map(String::from));
    let new_set: std::collections::BTreeSet<&String> = out.iter().collect();
    if new_set == existing.iter().collect() {
        return existing.to_vec();
    }
    out
}

/// Marks an object deleted that waits for `finalizers` (kube's `markAsDeleting`): a deletion
/// timestamp, a generation moved on, a zero grace period (a Namespace's storage sets only the
/// timestamp and its phase).
fn mark_deleting(obj: &mut Value, finalizers: &[String], is_namespace: bool) -> ApiResult<()> {
    let meta = meta_mut(obj)?;
    meta.insert("deletionTimestamp".into(), json!(now()));
    if let Some(generation) = meta.get("generation").and_then(Value::as_i64)
        && generation > 0
    {
        meta.insert("generation".into(), json!(generation + 1));
    }
    if !is_namespace {
        meta.insert("deletionGracePeriodSeconds".into(), json!(0));
    }
    if finalizers.is_empty() {
        meta.remove("finalizers");
    } else {
        meta.insert("finalizers".into(), json!(finalizers));
    }
    if is_namespace {
        obj["status"]["phase"] = json!("Terminating");
    }
    Ok(())
}

/// Removes an object for good, and lets what waited on it move on.
pub(crate) fn remove_now(
    state: &mut State,
    cluster: &str,
    rt: &ResourceType,
    namespace: &str,
    name: &str,
) -> ApiResult<Option<Arc<Stored>>> {
    let gr = rt.group_resource();
    let removed = state.remove(cluster, gr, namespace, name)?;
    let Some(removed) = removed else {
        return Ok(None);
    };
    // The namespace or CRD this object was holding up may finish terminating now.
    if rt.namespaced
        && let Some(ns_type) = type_in(state, cluster, "", "namespaces")
    {
        try_finish_termination(state, cluster, &ns_type, "", namespace)?;
    }
    if let Some(crd_type) = type_in(
        state,
        cluster,
        "apiextensions.k8s.io",
        "customresourcedefinitions",
    ) {
        let crd_name = format!("{}.{}", rt.plural, rt.group);
        if state
            .clusters
            .get(cluster)
            .and_then(|c| c.get(crd_type.group_resource(), "", &crd_name))
            .is_some()
        {
            try_finish_termination(state, cluster, &crd_type, "", &crd_name)?;
        }
    }
    if kcp::is_workspace(rt) {
        kcp::workspace_removed(state, &removed)?;
    }
    if rt.namespaced {
        resource_quotas::sync_namespace(state, cluster, namespace)?;
    }
    if kcp::root_ca::is_published(gr, name) {
        kcp::root_ca::publish(state, cluster, namespace)?;
    }
    let value = removed.value()?;
    match (rt.group.as_str(), rt.kind.as_str()) {
        ("", "Service") => ip_addresses::release(state, cluster, &value)?,
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => {
            flowcontrol::mark_dangling(state, cluster)?
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => api_services::sync(state, cluster)?,
        _ => {}
    }
    apis::removed(state, cluster, rt, &value)?;
    if let Some(binding) =
        apiexport::binding::terminating_binding_of(state, cluster, rt.group_resource())
        && let Some(binding_type) = type_in(state, cluster, apiexport::GROUP, "apibindings")
    {
        try_finish_termination(state, cluster, &binding_type, "", &binding)?;
    }
    // Owners in foreground deletion waiting for this dependent.
    if let Some(refs) = value
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
    {
        let owner_uids: Vec<String> = refs
            .iter()
            .filter_map(|r| r.get("uid").and_then(Value::as_str).map(String::from))
            .collect();
        for uid in owner_uids {
            if let Some((owner_rt, ns, n)) = find_by_uid(state, cluster, &uid) {
                try_finish_termination(state, cluster, &owner_rt, &ns, &n)?;
            }
        }
    }
    // However the object went (deleted at once, its last finalizer removed, its namespace
    // emptied), dependents whose every owner is now gone follow it. Orphaned dependents no
    // longer reference it, and foreground deletion already took the rest.
    collect_dependents(state, cluster, &removed.uid)?;
    Ok(Some(removed))
}

fn type_in(state: &State, cluster: &str, group: &str, plural: &str) -> Option<ResourceType> {
    state
        .clusters
        .get(cluster)?
        .registry
        .get(&GroupResource::new(group, plural))
        .map(|t| (**t).clone())
}

/// Finishes the deletion of a terminating object whose system finalizers have nothing left to
/// wait for (namespace contents, custom resources, foreground dependents).
pub(crate) fn try_finish_termination(
    state: &mut State,
    cluster: &str,
    rt: &ResourceType,
    namespace: &str,
    name: &str,
) -> ApiResult<()> {
    let Some(current) = state.lookup(cluster, rt.group_resource(), namespace, name) else {
        return Ok(());
    };
    let mut obj = current.value()?;
    if obj.pointer("/metadata/deletionTimestamp").is_none() {
        return Ok(());
    }
    // A pod's grace period is its kubelet's to end.
    let grace = obj
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64);
    if grace.is_some_and(|seconds| seconds > 0) {
        return Ok(());
    }
    let is_namespace = rt.group.is_empty() && rt.kind == "Namespace";
    let is_crd = rt.group == "apiextensions.k8s.io" && rt.kind == "CustomResourceDefinition";
    if is_namespace && namespace_has_contents(state, cluster, name) {
        return Ok(());
    }
    if is_crd && crd::has_custom_resources(state, cluster, &obj) {
        return Ok(());
    }
    if apis::is_binding(rt) && apiexport::binding::has_bound_objects(state, cluster, &obj) {
        return Ok(());
    }
    if kcp::is_workspace(rt) && kcp::termination::holds(state, cluster, &obj)? {
        return Ok(());
    }
    let mut fins = finalizers_of(&obj);
    // kcp's controllers remove their own finalizers once their cleanup (done above) is over.
    fins.retain(|f| !kcp::own_finalizers(rt).contains(&f.as_str()));
    if fins.iter().any(|f| f == "foregroundDeletion") {
        if has_dependents(state, cluster, &current.uid) {
            return Ok(());
        }
        fins.retain(|f| f != "foregroundDeletion");
        if !fins.is_empty() {
            meta_mut(&mut obj)?.insert("finalizers".into(), json!(fins));
            state.store(cluster, rt.group_resource(), namespace, name, &mut obj)?;
            return Ok(());
        }
    }
    // The garbage collector's `orphan` finalizer holds nothing: the dependents were orphaned
    // when the delete came. It stays while other finalizers hold the object, and goes with it.
    if !fins.iter().all(|f| f == "orphan") {
        return Ok(());
    }
    if is_crd {
        crd::unserve(state, cluster, &obj);
    }
    remove_now(state, cluster, rt, namespace, name)?;
    Ok(())
}

fn namespace_has_contents(state: &State, cluster: &str, ns: &str) -> bool {
    let prefix = format!("{ns}/");
    state.clusters.get(cluster).is_some_and(|c| {
        c.objects.values().any(|objects| {
            objects
                .range(prefix.clone()..)
                .next()
                .is_some_and(|(k, _)| k.starts_with(&prefix))
        })
    })
}

fn delete_namespace_contents(state: &mut State, cluster: &str, ns: &str) -> ApiResult<()> {
    let prefix = format!("{ns}/");
    let Some(data) = state.clusters.get(cluster) else {
        return Ok(());
    };
    let mut victims = Vec::new();
    for (gr, objects) in &data.objects {
        let Some(rt) = data.registry.get(gr) else {
            continue;
        };
        if !rt.namespaced {
            continue;
        }
        for (key, _) in objects.range(prefix.clone()..) {
            let Some(name) = key.strip_prefix(&prefix) else {
                break;
            };
            victims.push(((**rt).clone(), name.to_string()));
        }
    }
    for (rt, name) in victims {
        match delete(state, cluster, &rt, ns, &name, &DeleteRequest::default()) {
            Ok(_) => {}
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|f| f.to_string()).collect()
    }

    #[test]
    fn deleting_again_with_another_policy_swaps_the_collectors_finalizer() {
        // As kube-apiserver v1.34.2 answered (finalizer-edges/deleting-again-with-orphan-adds-the-orphan-finalizer).
        let held = names(&["example.com/hold"]);
        assert_eq!(
            garbage_collection_finalizers(&held, Some("Orphan")),
            names(&["example.com/hold", "orphan"])
        );
        let orphaned = names(&["orphan", "example.com/hold"]);
        assert_eq!(
            garbage_collection_finalizers(&orphaned, Some("Foreground")),
            names(&["example.com/hold", "foregroundDeletion"])
        );
        assert_eq!(
            garbage_collection_finalizers(&orphaned, Some("Background")),
            held
        );
    }

    #[test]
    fn without_a_policy_the_collectors_finalizer_stays_in_its_place() {
        let orphaned = names(&["orphan", "example.com/hold"]);
        assert_eq!(garbage_collection_finalizers(&orphaned, None), orphaned);
        assert!(garbage_collection_finalizers(&[], None).is_empty());
    }

    #[test]
    fn generated_uids_look_like_version_4_uuids() {
        let uid = new_uid();
        assert_eq!(uid.len(), 36);
        assert_eq!(&uid[14..15], "4");
    }

    #[test]
    fn a_body_of_another_builtin_kind_has_no_conversion() {
        let types = crate::resource::builtin_types(crate::resource::Flavor::Kubernetes);
        let of = |plural: &str| types.iter().find(|t| t.plural == plural).cloned().unwrap();
        let err = unknown_conversion(&of("configmaps"), "v1", "Secret").unwrap();
        assert_eq!(
            err.message,
            "Secret in version \"v1\" cannot be handled as a ConfigMap: converting (v1.Secret) \
             to (core.ConfigMap): unknown conversion"
        );
        let err = unknown_conversion(&of("roles"), "apps/v1", "Deployment").unwrap();
        assert!(
            err.message
                .ends_with("(v1.Deployment) to (rbac.Role): unknown conversion")
        );
        assert!(unknown_conversion(&of("configmaps"), "v1", "ConfigMap").is_none());
        assert!(unknown_conversion(&of("configmaps"), "v1", "Widget").is_none());
        assert!(unknown_conversion(&of("customresourcedefinitions"), "v1", "Secret").is_none());
    }

    #[test]
    fn string_data_is_merged_into_data_base64_encoded() {
        let mut secret =
            json!({"data": {"a": "eA==", "b": "eQ=="}, "stringData": {"b": "hunter2"}});
        merge_string_data(&mut secret);
        assert_eq!(secret, json!({"data": {"a": "eA==", "b": "aHVudGVyMg=="}}));
    }

    #[test]
    fn a_generation_bump_ignores_metadata_and_status() {
        let a = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"x": 1}, "status": {"y": 1}});
        let b = json!({"metadata": {"labels": {"a": "2"}}, "spec": {"x": 1}, "status": {"y": 2}});
        let c = json!({"metadata": {}, "spec": {"x": 2}});
        assert!(!spec_changed(&a, &b));
        assert!(spec_changed(&a, &c));
    }

    #[test]
    fn objects_differing_only_in_resource_version_and_field_times_are_the_same_write() {
        let a = json!({"metadata": {"name": "a", "resourceVersion": "1",
            "managedFields": [{"manager": "m", "time": "t1"}]}, "data": {"k": "v"}});
        let b = json!({"metadata": {"name": "a", "resourceVersion": "2",
            "managedFields": [{"manager": "m", "time": "t2"}]}, "data": {"k": "v"}});
        assert!(same_object(&a, &b));
    }
}
