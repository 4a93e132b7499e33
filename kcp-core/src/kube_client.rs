//! [`KubeObjectClient`]: the [`ObjectClient`] of a real API server, over `kube::Client`.
//!
//! Every request is built with kube's request builder ([`kube::core::Request`]) and sent with
//! [`kube::Client::send`], so the client's whole tower stack (base URI, auth, TLS, retries
//! configured by the caller) applies, while this module keeps full control of the answer: the
//! HTTP status code is always known, and every failure is mapped to one [`Error`] so that
//! [`Error::is_transient`] classifies it the same way as for any other [`ObjectClient`]:
//!
//! | server answer | error |
//! |---|---|
//! | group-version not served (404 on discovery), or kind missing after one refresh | [`Error::KindNotServed`] |
//! | 404 on a write whose `Status.details` name the object's namespace (`kind: namespaces`) | [`Error::NamespaceNotFound`] |
//! | any other failure (a `metav1.Status`, or a non-JSON body) | [`Error::Api`] with the HTTP code and the Status reason |
//! | connection, TLS or body-read failure | [`Error::Transport`] |
//!
//! `get` of a missing object is `Ok(None)` and `delete` of a missing object is
//! [`DeleteOutcome::AlreadyGone`], not errors.
//!
//! ## Discovery cache
//! [`ObjectClient::resolve`] looks a kind up in a cache of discovery documents, one per
//! group-version. On a miss it fetches only that group-version (`GET /api/<v>` for the core
//! group, `GET /apis/<group>/<version>` otherwise). A kind missing from a cached group-version
//! causes exactly one refresh of that group-version before the answer is
//! [`Error::KindNotServed`], so a CRD that becomes Established is usable without a restart.
//!
//! The cache is shared by all clones of a client and is safe to use concurrently: the map sits
//! behind a `std::sync::RwLock` that is never held across an `.await`, and fetches of one
//! group-version are serialised by a per-group-version async mutex. A task that waited for
//! another task's fetch uses that fresh result instead of fetching again, so a burst of
//! concurrent lookups costs one discovery request. [`KubeObjectClient::invalidate`] forgets
//! everything (e.g. after CRDs were deleted).
//!
//! ## Scope
//! Namespaced kinds require a namespace for everything except `list` (where `None` means all
//! namespaces); a missing namespace is [`Error::InvalidObject`] naming `metadata.namespace`.
//! For cluster-scoped kinds a namespace is **ignored**, on reads and on writes, and removed from
//! the body that is sent. This is what the Kubernetes API server itself does with
//! `metadata.namespace` of a cluster-scoped object, and what kubectl and Helm users rely on
//! (charts routinely set a namespace on ClusterRoles), so manifests written for the upstream
//! tools apply unchanged.
//!
//! ## Field managers
//! Server-side apply needs a field manager: [`PatchOptions::field_manager`], or else the
//! client's default ([`KubeObjectClient::with_default_field_manager`]). Without either, apply
//! fails with [`Error::Config`] naming the object. The default manager is also sent as
//! `fieldManager` on create, replace and the other patches, so managedFields name the
//! controller that wrote them. `force` only has a meaning for server-side apply and is ignored
//! for merge and JSON patches.
//!
//! Each request emits a `tracing` debug event with its verb and object, and one with the answer.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use async_trait::async_trait;
use kube::Resource;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GetParams, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams, Preconditions, PropagationPolicy, TypeMeta,
};
use kube::core::{Request as RequestBuilder, Status};
use serde::Deserialize;
use serde_json::Value;

use crate::client::{
    DeleteOptions, DeleteOutcome, ListOptions, ObjectClient, ObjectList, ObjectPatch, ObjectRef,
    PatchOptions, Propagation, ResourceInfo, Subresource, gvk_of,
};
use crate::error::{Error, Result, display_gvk};

/// The [`ObjectClient`] of a real API server (Kubernetes or kcp), over a `kube::Client`.
///
/// Cheap to clone; clones share the discovery cache. See the [module docs](self) for the error
/// mapping, the discovery cache and the scope rules.
#[derive(Clone)]
pub struct KubeObjectClient {
    client: kube::Client,
    default_field_manager: Option<String>,
    discovery: Arc<DiscoveryCache>,
}

impl fmt::Debug for KubeObjectClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubeObjectClient")
            .field("default_namespace", &self.client.default_namespace())
            .field("default_field_manager", &self.default_field_manager)
            .field("cached_group_versions", &self.discovery.len())
            .finish()
    }
}

impl KubeObjectClient {
    /// A client over `client` with an empty discovery cache and no default field manager.
    pub fn new(client: kube::Client) -> Self {
        KubeObjectClient {
            client,
            default_field_manager: None,
            discovery: Arc::new(DiscoveryCache::default()),
        }
    }

    /// Sets the field manager used when a write does not name one; it makes
    /// [`ObjectClient::apply`] usable with `PatchOptions::default()`.
    #[must_use]
    pub fn with_default_field_manager(mut self, name: impl Into<String>) -> Self {
        self.default_field_manager = Some(name.into());
        self
    }

    /// The default field manager, when one was set.
    pub fn default_field_manager(&self) -> Option<&str> {
        self.default_field_manager.as_deref()
    }

    /// The underlying `kube::Client`, e.g. for watches.
    pub fn kube_client(&self) -> &kube::Client {
        &self.client
    }

    /// Forgets every cached discovery document; the next lookup of each group-version fetches
    /// it again. Affects all clones of this client.
    pub fn invalidate(&self) {
        self.discovery.clear();
    }

    /// Forgets the cached discovery document of one group-version (`""` is the core group).
    pub fn invalidate_group_version(&self, group: &str, version: &str) {
        self.discovery
            .remove(&(group.to_string(), version.to_string()));
    }

    fn manager<'a>(&'a self, options: &'a PatchOptions) -> Option<&'a str> {
        options
            .field_manager
            .as_deref()
            .or(self.default_field_manager.as_deref())
    }

    /// Fetches the discovery document of one group-version. `Ok(None)`: not served (404).
    async fn fetch_group_version(
        &self,
        group: &str,
        version: &str,
    ) -> Result<Option<GroupVersion>> {
        let path = if group.is_empty() {
            format!("/api/{version}")
        } else {
            format!("/apis/{group}/{version}")
        };
        let object = format!("discovery {path}");
        let request = http::Request::get(path.as_str())
            .body(Vec::new())
            .map_err(|e| Error::Config(format!("{object}: {e}")))?;
        match self.call("discover", &object, request).await? {
            Answer::Success { body, .. } => {
                let doc: DiscoveryDocument =
                    serde_json::from_slice(&body).map_err(|source| Error::Serialization {
                        context: format!("decoding {object}"),
                        source,
                    })?;
                Ok(Some(GroupVersion::from_document(group, version, doc)))
            }
            Answer::Failure(failure) if failure.code == 404 => Ok(None),
            Answer::Failure(failure) => Err(failure.into_error("discover", object)),
        }
    }

    /// Sends one request and reads the whole answer. Transport problems are errors; server
    /// answers, successful or not, are returned for the caller to interpret.
    async fn call(
        &self,
        verb: &'static str,
        object: &str,
        request: http::Request<Vec<u8>>,
    ) -> Result<Answer> {
        tracing::debug!(verb, object, method = %request.method(), uri = %request.uri(), "kube request");
        let response = self
            .client
            .send(request.map(kube::client::Body::from))
            .await
            .map_err(|e| transport(verb, object, e))?;
        let code = response.status();
        let body = response
            .into_body()
            .collect_bytes()
            .await
            .map_err(|e| transport(verb, object, e))?
            .to_vec();
        tracing::debug!(verb, object, code = code.as_u16(), "kube response");
        if code.is_client_error() || code.is_server_error() {
            Ok(Answer::Failure(Failure::from_response(
                code.as_u16(),
                &body,
            )))
        } else {
            Ok(Answer::Success {
                accepted: code == http::StatusCode::ACCEPTED,
                body,
            })
        }
    }
}

/// Maps an error of `kube::Client::send` (or of reading the body).
fn transport(verb: &'static str, object: &str, error: kube::Error) -> Error {
    match error {
        // Middleware (auth exec plugins, for example) may already answer with a Status.
        kube::Error::Api(status) => {
            Failure::from_status(*status, 0).into_error(verb, object.into())
        }
        kube::Error::Auth(e) => Error::Config(format!("{verb} {object}: authentication: {e}")),
        other => Error::Transport {
            context: format!("{verb} {object}"),
            source: Box::new(other),
        },
    }
}

/// A server answer.
enum Answer {
    /// 1xx-3xx: the body.
    Success { accepted: bool, body: Vec<u8> },
    /// 4xx or 5xx.
    Failure(Failure),
}

/// A failed server answer, normalised from a `metav1.Status` or from a bare HTTP error.
struct Failure {
    code: u16,
    reason: String,
    message: String,
    details_kind: String,
    details_name: String,
}

impl Failure {
    fn from_response(code: u16, body: &[u8]) -> Failure {
        let is_status = serde_json::from_slice::<Value>(body)
            .map(|v| v.get("kind").and_then(Value::as_str) == Some("Status"))
            .unwrap_or(false);
        if is_status && let Ok(status) = serde_json::from_slice::<Status>(body) {
            return Failure::from_status(status, code);
        }
        // Not a Status: a proxy, an ingress or a bare mux answered. Keep the text, bounded.
        let text = String::from_utf8_lossy(body);
        let mut message: String = text.trim().chars().take(512).collect();
        if message.is_empty() {
            message = http::StatusCode::from_u16(code)
                .ok()
                .and_then(|c| c.canonical_reason())
                .unwrap_or("no message")
                .to_string();
        }
        Failure {
            code,
            reason: reason_for_code(code).to_string(),
            message,
            details_kind: String::new(),
            details_name: String::new(),
        }
    }

    /// `http_code` wins over the Status' own code; 0 means "not known".
    fn from_status(status: Status, http_code: u16) -> Failure {
        let code = if http_code != 0 {
            http_code
        } else {
            status.code
        };
        let reason = if status.reason.is_empty() {
            reason_for_code(code).to_string()
        } else {
            status.reason
        };
        let (details_kind, details_name) =
            status.details.map(|d| (d.kind, d.name)).unwrap_or_default();
        Failure {
            code,
            reason,
            message: status.message,
            details_kind,
            details_name,
        }
    }

    /// Whether this 404 says that `namespace` does not exist.
    fn is_missing_namespace(&self, namespace: Option<&str>) -> bool {
        self.code == 404
            && self.details_kind == "namespaces"
            && namespace.is_some_and(|ns| ns == self.details_name)
    }

    fn into_error(self, verb: &'static str, object: String) -> Error {
        Error::Api {
            verb,
            object,
            code: self.code,
            reason: self.reason,
            message: self.message,
        }
    }

    /// For writes: a missing namespace is [`Error::NamespaceNotFound`], the rest [`Error::Api`].
    fn into_write_error(
        self,
        verb: &'static str,
        object: String,
        namespace: Option<&str>,
    ) -> Error {
        match namespace {
            Some(ns) if self.is_missing_namespace(Some(ns)) => Error::NamespaceNotFound {
                object,
                namespace: ns.to_string(),
            },
            _ => self.into_error(verb, object),
        }
    }
}

/// The `metav1.StatusReason` the API server uses for a code, for answers that carry none.
fn reason_for_code(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        406 => "NotAcceptable",
        409 => "Conflict",
        410 => "Expired",
        413 => "RequestEntityTooLarge",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "Unknown",
    }
}

// ------------------------------------------------------------------------------------------
// Discovery cache

type GroupVersionKey = (String, String);

/// The kinds served by one group-version.
#[derive(Debug)]
struct GroupVersion {
    kinds: HashMap<String, ResourceInfo>,
}

impl GroupVersion {
    fn from_document(group: &str, version: &str, doc: DiscoveryDocument) -> GroupVersion {
        let mut kind_of_plural: HashMap<String, String> = HashMap::new();
        let mut kinds: HashMap<String, ResourceInfo> = HashMap::new();
        // Main resources first; a kind served by two resources keeps the first one listed.
        for entry in doc.resources.iter().filter(|e| !e.name.contains('/')) {
            if entry.kind.is_empty() || kinds.contains_key(&entry.kind) {
                continue;
            }
            let gvk = GroupVersionKind::gvk(group, version, &entry.kind);
            kind_of_plural.insert(entry.name.clone(), entry.kind.clone());
            kinds.insert(
                entry.kind.clone(),
                ResourceInfo {
                    resource: ApiResource::from_gvk_with_plural(&gvk, &entry.name),
                    namespaced: entry.namespaced,
                    subresources: Vec::new(),
                },
            );
        }
        // Then `plural/subresource` entries attach to the kind of their plural.
        for entry in &doc.resources {
            let Some((plural, sub)) = entry.name.split_once('/') else {
                continue;
            };
            let info = kind_of_plural
                .get(plural)
                .and_then(|kind| kinds.get_mut(kind));
            if let Some(info) = info
                && !info.subresources.iter().any(|s| s == sub)
            {
                info.subresources.push(sub.to_string());
            }
        }
        for info in kinds.values_mut() {
            info.subresources.sort();
        }
        GroupVersion { kinds }
    }
}

/// `metav1.APIResourceList`, read leniently (only what resolving needs).
#[derive(Deserialize)]
struct DiscoveryDocument {
    #[serde(default)]
    resources: Vec<DiscoveryEntry>,
}

#[derive(Deserialize)]
struct DiscoveryEntry {
    name: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    namespaced: bool,
}

#[derive(Default)]
struct DiscoveryCache {
    entries: RwLock<HashMap<GroupVersionKey, Arc<GroupVersion>>>,
    /// One async mutex per group-version, serialising its fetches.
    fetching: Mutex<HashMap<GroupVersionKey, Arc<tokio::sync::Mutex<()>>>>,
}

impl DiscoveryCache {
    fn get(&self, key: &GroupVersionKey) -> Option<Arc<GroupVersion>> {
        let entries = self.entries.read().unwrap_or_else(PoisonError::into_inner);
        entries.get(key).cloned()
    }

    fn insert(&self, key: GroupVersionKey, value: Arc<GroupVersion>) {
        let mut entries = self.entries.write().unwrap_or_else(PoisonError::into_inner);
        entries.insert(key, value);
    }

    fn remove(&self, key: &GroupVersionKey) {
        let mut entries = self.entries.write().unwrap_or_else(PoisonError::into_inner);
        entries.remove(key);
    }

    fn clear(&self) {
        let mut entries = self.entries.write().unwrap_or_else(PoisonError::into_inner);
        entries.clear();
    }

    fn len(&self) -> usize {
        let entries = self.entries.read().unwrap_or_else(PoisonError::into_inner);
        entries.len()
    }

    fn fetch_lock(&self, key: &GroupVersionKey) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.fetching.lock().unwrap_or_else(PoisonError::into_inner);
        locks.entry(key.clone()).or_default().clone()
    }
}

fn same_entry(a: Option<&Arc<GroupVersion>>, b: Option<&Arc<GroupVersion>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

fn lookup(gvk: &GroupVersionKind, entry: Option<&Arc<GroupVersion>>) -> Result<ResourceInfo> {
    entry
        .and_then(|gv| gv.kinds.get(&gvk.kind))
        .cloned()
        .ok_or_else(|| Error::KindNotServed { gvk: gvk.clone() })
}

// ------------------------------------------------------------------------------------------
// Request helpers

/// Rejects names and namespaces that cannot be a URL path segment (kube does not escape them).
fn check_segment(value: &str, field: &str, object: &str) -> Result<()> {
    let bad = value.is_empty()
        || value == "."
        || value == ".."
        || value.contains(['/', '%', '?', '#'])
        || value.chars().any(|c| c.is_whitespace() || c.is_control());
    if bad {
        return Err(Error::InvalidObject {
            object: object.to_string(),
            field: field.to_string(),
            reason: format!("{value:?} is not a valid name for a URL path segment"),
        });
    }
    Ok(())
}

/// The namespace to put in the URL: required for namespaced kinds, ignored for cluster-scoped.
fn url_namespace<'a>(
    info: &ResourceInfo,
    namespace: Option<&'a str>,
    object: &str,
) -> Result<Option<&'a str>> {
    let namespace = namespace.filter(|ns| !ns.is_empty());
    if !info.namespaced {
        if let Some(ns) = namespace {
            tracing::debug!(
                object,
                namespace = ns,
                "namespace ignored for a cluster-scoped kind"
            );
        }
        return Ok(None);
    }
    match namespace {
        Some(ns) => {
            check_segment(ns, "metadata.namespace", object)?;
            Ok(Some(ns))
        }
        None => Err(Error::InvalidObject {
            object: object.to_string(),
            field: "metadata.namespace".into(),
            reason: format!(
                "is required for namespaced kind {}",
                display_gvk(&gvk_of_info(info))
            ),
        }),
    }
}

fn gvk_of_info(info: &ResourceInfo) -> GroupVersionKind {
    GroupVersionKind::gvk(
        &info.resource.group,
        &info.resource.version,
        &info.resource.kind,
    )
}

fn builder(info: &ResourceInfo, namespace: Option<&str>) -> RequestBuilder {
    RequestBuilder::new(DynamicObject::url_path(&info.resource, namespace))
}

fn build_error(object: &str, error: kube::core::request::Error) -> Error {
    Error::InvalidObject {
        object: object.to_string(),
        field: "request".into(),
        reason: error.to_string(),
    }
}

fn encode<T: serde::Serialize>(value: &T, object: &str) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(|source| Error::Serialization {
        context: format!("encoding {object}"),
        source,
    })
}

/// Decodes an object from a response and makes sure it carries `apiVersion` and `kind`.
fn decode_object(body: &[u8], gvk: &GroupVersionKind, object: &str) -> Result<DynamicObject> {
    let mut obj: DynamicObject =
        serde_json::from_slice(body).map_err(|source| Error::Serialization {
            context: format!("decoding the answer for {object}"),
            source,
        })?;
    fill_types(&mut obj, gvk);
    Ok(obj)
}

fn fill_types(obj: &mut DynamicObject, gvk: &GroupVersionKind) {
    let complete = obj
        .types
        .as_ref()
        .is_some_and(|t| !t.api_version.is_empty() && !t.kind.is_empty());
    if !complete {
        obj.types = Some(TypeMeta {
            api_version: gvk.api_version(),
            kind: gvk.kind.clone(),
        });
    }
}

/// A LIST answer, read leniently (`items: null` and missing metadata are accepted).
#[derive(Deserialize)]
struct RawList {
    #[serde(default)]
    metadata: RawListMeta,
    #[serde(default)]
    items: Option<Vec<DynamicObject>>,
}

#[derive(Deserialize, Default)]
struct RawListMeta {
    #[serde(default, rename = "resourceVersion")]
    resource_version: Option<String>,
    #[serde(default, rename = "continue")]
    continue_token: Option<String>,
}

/// Describes an object that may not have a name yet (`generateName`).
fn describe_new(gvk: &GroupVersionKind, obj: &DynamicObject) -> String {
    let name = match (&obj.metadata.name, &obj.metadata.generate_name) {
        (Some(n), _) => n.clone(),
        (None, Some(prefix)) => format!("{prefix}*"),
        (None, None) => "(unnamed)".to_string(),
    };
    ObjectRef {
        gvk: gvk.clone(),
        namespace: obj.metadata.namespace.clone(),
        name,
    }
    .to_string()
}

/// The body of a write: the object with its type, and without a namespace when cluster-scoped.
fn write_body(obj: &DynamicObject, info: &ResourceInfo, gvk: &GroupVersionKind) -> DynamicObject {
    let mut body = obj.clone();
    fill_types(&mut body, gvk);
    if !info.namespaced {
        body.metadata.namespace = None;
    }
    body
}

/// The body of a server-side apply: the intent with `apiVersion`, `kind` and `metadata.name`,
/// without `metadata.managedFields` (and without a namespace for cluster-scoped kinds).
fn apply_body(
    intent: &Value,
    target: &ObjectRef,
    info: &ResourceInfo,
    object: &str,
) -> Result<Value> {
    let Value::Object(map) = intent else {
        return Err(Error::InvalidObject {
            object: object.to_string(),
            field: "(body)".into(),
            reason: "a server-side apply body must be a JSON object".into(),
        });
    };
    let mut map = map.clone();
    map.entry("apiVersion")
        .or_insert_with(|| Value::String(target.gvk.api_version()));
    map.entry("kind")
        .or_insert_with(|| Value::String(target.gvk.kind.clone()));
    let metadata = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Value::Object(meta) = metadata {
        meta.entry("name")
            .or_insert_with(|| Value::String(target.name.clone()));
        // The API server rejects apply bodies that carry managedFields ("must be nil"), which
        // an object read back from the server always does.
        meta.remove("managedFields");
        if !info.namespaced {
            meta.remove("namespace");
        }
    }
    Ok(Value::Object(map))
}

fn propagation_policy(p: Propagation) -> PropagationPolicy {
    match p {
        Propagation::Orphan => PropagationPolicy::Orphan,
        Propagation::Background => PropagationPolicy::Background,
        Propagation::Foreground => PropagationPolicy::Foreground,
    }
}

fn subresource_name(subresource: Subresource) -> Option<&'static str> {
    match subresource {
        Subresource::Main => None,
        Subresource::Status => Some("status"),
    }
}

// ------------------------------------------------------------------------------------------
// The trait

#[async_trait]
impl ObjectClient for KubeObjectClient {
    async fn resolve(&self, gvk: &GroupVersionKind) -> Result<ResourceInfo> {
        if gvk.version.is_empty()
            || gvk.kind.is_empty()
            || gvk.version.contains('/')
            || gvk.group.contains('/')
        {
            return Err(Error::InvalidObject {
                object: display_gvk(gvk),
                field: "apiVersion".into(),
                reason: "group, version and kind must be non-empty path segments".into(),
            });
        }
        let key = (gvk.group.clone(), gvk.version.clone());
        let seen = self.discovery.get(&key);
        if let Some(info) = seen.as_ref().and_then(|gv| gv.kinds.get(&gvk.kind)) {
            return Ok(info.clone());
        }

        // A miss: fetch (or refresh) this group-version, once, under its fetch lock.
        let lock = self.discovery.fetch_lock(&key);
        let _guard = lock.lock().await;
        let current = self.discovery.get(&key);
        if !same_entry(current.as_ref(), seen.as_ref()) {
            // Another task fetched while we waited: its answer is fresher than our miss.
            return lookup(gvk, current.as_ref());
        }
        match self.fetch_group_version(&gvk.group, &gvk.version).await? {
            Some(gv) => {
                let gv = Arc::new(gv);
                self.discovery.insert(key, gv.clone());
                lookup(gvk, Some(&gv))
            }
            None => {
                self.discovery.remove(&key);
                Err(Error::KindNotServed { gvk: gvk.clone() })
            }
        }
    }

    async fn get(&self, target: &ObjectRef) -> Result<Option<DynamicObject>> {
        let object = target.to_string();
        let info = self.resolve(&target.gvk).await?;
        let namespace = url_namespace(&info, target.namespace.as_deref(), &object)?;
        check_segment(&target.name, "metadata.name", &object)?;
        let request = builder(&info, namespace)
            .get(&target.name, &GetParams::default())
            .map_err(|e| build_error(&object, e))?;
        match self.call("get", &object, request).await? {
            Answer::Success { body, .. } => decode_object(&body, &target.gvk, &object).map(Some),
            Answer::Failure(f) if f.code == 404 => Ok(None),
            Answer::Failure(f) => Err(f.into_error("get", object)),
        }
    }

    async fn list(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        options: &ListOptions,
    ) -> Result<ObjectList> {
        let info = self.resolve(gvk).await?;
        let namespace = if info.namespaced {
            namespace.filter(|ns| !ns.is_empty())
        } else {
            None
        };
        let object = match namespace {
            Some(ns) => format!("{} in namespace {ns}", display_gvk(gvk)),
            None => format!("{} in all namespaces", display_gvk(gvk)),
        };
        if let Some(ns) = namespace {
            check_segment(ns, "namespace", &object)?;
        }
        let params = ListParams {
            label_selector: options.label_selector.clone(),
            field_selector: options.field_selector.clone(),
            limit: options.limit,
            continue_token: options.continue_token.clone(),
            ..ListParams::default()
        };
        let request = builder(&info, namespace)
            .list(&params)
            .map_err(|e| build_error(&object, e))?;
        let body = match self.call("list", &object, request).await? {
            Answer::Success { body, .. } => body,
            Answer::Failure(f) => return Err(f.into_error("list", object)),
        };
        let raw: RawList =
            serde_json::from_slice(&body).map_err(|source| Error::Serialization {
                context: format!("decoding the list of {object}"),
                source,
            })?;
        let mut items = raw.items.unwrap_or_default();
        for item in &mut items {
            fill_types(item, gvk);
        }
        Ok(ObjectList {
            items,
            resource_version: raw.metadata.resource_version.filter(|s| !s.is_empty()),
            continue_token: raw.metadata.continue_token.filter(|s| !s.is_empty()),
        })
    }

    async fn create(&self, obj: &DynamicObject) -> Result<DynamicObject> {
        let gvk = gvk_of(obj)?;
        let object = describe_new(&gvk, obj);
        let info = self.resolve(&gvk).await?;
        let namespace = url_namespace(&info, obj.metadata.namespace.as_deref(), &object)?;
        match (&obj.metadata.name, &obj.metadata.generate_name) {
            (Some(name), _) => check_segment(name, "metadata.name", &object)?,
            (None, Some(prefix)) if !prefix.is_empty() => {}
            _ => {
                return Err(Error::InvalidObject {
                    object,
                    field: "metadata.name".into(),
                    reason: "metadata.name or metadata.generateName is required".into(),
                });
            }
        }
        let body = encode(&write_body(obj, &info, &gvk), &object)?;
        let params = PostParams {
            field_manager: self.default_field_manager.clone(),
            ..PostParams::default()
        };
        let request = builder(&info, namespace)
            .create(&params, body)
            .map_err(|e| build_error(&object, e))?;
        match self.call("create", &object, request).await? {
            Answer::Success { body, .. } => decode_object(&body, &gvk, &object),
            Answer::Failure(f) => Err(f.into_write_error("create", object, namespace)),
        }
    }

    async fn replace(
        &self,
        obj: &DynamicObject,
        subresource: Subresource,
    ) -> Result<DynamicObject> {
        let target = ObjectRef::from_object(obj)?;
        let object = target.to_string();
        let verb = match subresource {
            Subresource::Main => "update",
            Subresource::Status => "update status",
        };
        let info = self.resolve(&target.gvk).await?;
        let namespace = url_namespace(&info, target.namespace.as_deref(), &object)?;
        check_segment(&target.name, "metadata.name", &object)?;
        let body = encode(&write_body(obj, &info, &target.gvk), &object)?;
        let params = PostParams {
            field_manager: self.default_field_manager.clone(),
            ..PostParams::default()
        };
        let requests = builder(&info, namespace);
        let request = match subresource_name(subresource) {
            None => requests.replace(&target.name, &params, body),
            Some(sub) => requests.replace_subresource(sub, &target.name, &params, body),
        }
        .map_err(|e| build_error(&object, e))?;
        match self.call(verb, &object, request).await? {
            Answer::Success { body, .. } => decode_object(&body, &target.gvk, &object),
            Answer::Failure(f) => Err(f.into_write_error(verb, object, namespace)),
        }
    }

    async fn patch(
        &self,
        target: &ObjectRef,
        subresource: Subresource,
        patch: &ObjectPatch,
        options: &PatchOptions,
    ) -> Result<DynamicObject> {
        let object = target.to_string();
        let is_apply = matches!(patch, ObjectPatch::Apply(_));
        let verb = match (is_apply, subresource) {
            (true, Subresource::Main) => "apply",
            (true, Subresource::Status) => "apply status",
            (false, Subresource::Main) => "patch",
            (false, Subresource::Status) => "patch status",
        };
        let manager = self.manager(options);
        if is_apply && manager.is_none() {
            return Err(Error::Config(format!(
                "{verb} {object}: server-side apply needs a field manager; set \
                 PatchOptions::field_manager or KubeObjectClient::with_default_field_manager"
            )));
        }
        let info = self.resolve(&target.gvk).await?;
        let namespace = url_namespace(&info, target.namespace.as_deref(), &object)?;
        check_segment(&target.name, "metadata.name", &object)?;
        let params = PatchParams {
            field_manager: manager.map(str::to_string),
            force: is_apply && options.force,
            ..PatchParams::default()
        };
        let body = match patch {
            ObjectPatch::Apply(intent) => Patch::Apply(apply_body(intent, target, &info, &object)?),
            ObjectPatch::Merge(value) => Patch::Merge(value.clone()),
            ObjectPatch::Json(ops) => Patch::Json(ops.clone()),
        };
        let requests = builder(&info, namespace);
        let request = match subresource_name(subresource) {
            None => requests.patch(&target.name, &params, &body),
            Some(sub) => requests.patch_subresource(sub, &target.name, &params, &body),
        }
        .map_err(|e| build_error(&object, e))?;
        match self.call(verb, &object, request).await? {
            Answer::Success { body, .. } => decode_object(&body, &target.gvk, &object),
            Answer::Failure(f) => Err(f.into_write_error(verb, object, namespace)),
        }
    }

    async fn delete(&self, target: &ObjectRef, options: &DeleteOptions) -> Result<DeleteOutcome> {
        let object = target.to_string();
        let info = self.resolve(&target.gvk).await?;
        let namespace = url_namespace(&info, target.namespace.as_deref(), &object)?;
        check_segment(&target.name, "metadata.name", &object)?;
        let preconditions = (options.precondition_uid.is_some()
            || options.precondition_resource_version.is_some())
        .then(|| Preconditions {
            uid: options.precondition_uid.clone(),
            resource_version: options.precondition_resource_version.clone(),
        });
        let params = DeleteParams {
            grace_period_seconds: options.grace_period_seconds,
            propagation_policy: options.propagation.map(propagation_policy),
            preconditions,
            ..DeleteParams::default()
        };
        let request = builder(&info, namespace)
            .delete(&target.name, &params)
            .map_err(|e| build_error(&object, e))?;
        let (accepted, body) = match self.call("delete", &object, request).await? {
            Answer::Success { accepted, body } => (accepted, body),
            Answer::Failure(f) if f.code == 404 => return Ok(DeleteOutcome::AlreadyGone),
            Answer::Failure(f) => return Err(f.into_error("delete", object)),
        };
        // The server answers with a Status when the object is gone, and with the object when
        // it still exists (finalizers or a grace period pending). Some kinds return the last
        // state of an object that is already gone: that one has no deletionTimestamp.
        let is_status = body.is_empty()
            || serde_json::from_slice::<Value>(&body)
                .map(|v| v.get("kind").and_then(Value::as_str) == Some("Status"))
                .map_err(|source| Error::Serialization {
                    context: format!("decoding the answer for {object}"),
                    source,
                })?;
        if is_status {
            return Ok(DeleteOutcome::Deleted);
        }
        let obj = decode_object(&body, &target.gvk, &object)?;
        let pending = accepted
            || obj.metadata.deletion_timestamp.is_some()
            || obj
                .metadata
                .finalizers
                .as_ref()
                .is_some_and(|f| !f.is_empty());
        if pending {
            Ok(DeleteOutcome::Terminating(Box::new(obj)))
        } else {
            Ok(DeleteOutcome::Deleted)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(v: Value) -> DiscoveryDocument {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn discovery_skips_subresource_entries_and_attaches_them_to_their_kind() {
        let gv = GroupVersion::from_document(
            "apps",
            "v1",
            doc(json!({"resources": [
                {"name": "deployments", "kind": "Deployment", "namespaced": true},
                {"name": "deployments/status", "kind": "Deployment", "namespaced": true},
                {"name": "deployments/scale", "kind": "Scale", "group": "autoscaling", "namespaced": true},
            ]})),
        );
        assert_eq!(gv.kinds.len(), 1, "{gv:?}");
        let info = &gv.kinds["Deployment"];
        assert_eq!(info.resource.plural, "deployments");
        assert_eq!(info.resource.api_version, "apps/v1");
        assert!(info.namespaced);
        assert_eq!(info.subresources, ["scale", "status"]);
        assert!(!gv.kinds.contains_key("Scale"));
    }

    #[test]
    fn a_kind_served_by_two_resources_keeps_the_first() {
        let gv = GroupVersion::from_document(
            "",
            "v1",
            doc(json!({"resources": [
                {"name": "configmaps", "kind": "ConfigMap", "namespaced": true},
                {"name": "legacyconfigmaps", "kind": "ConfigMap", "namespaced": true},
            ]})),
        );
        assert_eq!(gv.kinds["ConfigMap"].resource.plural, "configmaps");
        assert_eq!(gv.kinds["ConfigMap"].resource.api_version, "v1");
    }

    #[test]
    fn non_status_error_bodies_keep_the_http_code_and_get_a_reason() {
        let f = Failure::from_response(404, b"404 page not found\n");
        assert_eq!((f.code, f.reason.as_str()), (404, "NotFound"));
        assert_eq!(f.message, "404 page not found");
    }

    #[test]
    fn status_bodies_without_a_code_take_the_http_code() {
        let f = Failure::from_response(
            409,
            br#"{"kind":"Status","reason":"Conflict","message":"m"}"#,
        );
        assert_eq!(
            (f.code, f.reason.as_str(), f.message.as_str()),
            (409, "Conflict", "m")
        );
    }

    #[test]
    fn names_that_are_not_path_segments_are_rejected() {
        for bad in ["", ".", "..", "a/b", "a%2F", "a?b", "a b"] {
            assert!(check_segment(bad, "metadata.name", "o").is_err(), "{bad:?}");
        }
        assert!(check_segment("web-1.example", "metadata.name", "o").is_ok());
    }
}
