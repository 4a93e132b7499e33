//! The request layer shared by the HTTP server and the in-process client: where a request goes
//! (plain cluster, `/clusters/<x>`, `/clusters/*`, an initializingworkspaces or apiexport
//! view), which faults it suffers, and which operation of [`crate::semantics`] or
//! [`crate::query`] answers it.

use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::broadcast;

use crate::apiexport;
use crate::conversion;
use crate::faults::{Faults, Verb};
use crate::kcp;
use crate::managed_fields;
use crate::query::{self, ClusterScope, Filter, Page, Visibility, WatchFilter};
use crate::resource::{Flavor, GroupResource, Registry, ResourceType};
use crate::semantics::{
    self, DeleteRequest, Deleted, PatchKind, ScaleWrite, WriteOptions, Written,
};
use crate::status::{ApiError, ApiResult};
use crate::store::{Change, ChangeKind, State, Stored};
use crate::table;

/// How long kube-apiserver's watch cache waits for a revision a read asks for.
const FRESHNESS_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// The name of the single cluster of plain (Kubernetes) mode.
pub const PLAIN_CLUSTER: &str = "kubernetes";

/// Where a request is addressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// Plain mode: the one cluster, no `/clusters` prefix.
    Plain,
    /// `/clusters/<name or path>`.
    Cluster(String),
    /// `/clusters/*`.
    Wildcard,
    /// `/services/initializingworkspaces/<initializer>/clusters/<cluster or *>` and
    /// `/services/terminatingworkspaces/<terminator>/clusters/<cluster or *>`.
    Lifecycle {
        /// The view, with the initializer or terminator it serves.
        view: kcp::LifecycleView,
        /// A concrete cluster, or `None` for `*`.
        cluster: Option<String>,
        /// The shard whose URL was called (its view holds that shard's clusters only); `None`
        /// sees every shard.
        shard: Option<usize>,
    },
    /// `/services/apiexport/<export cluster>/<export name>/clusters/<cluster or *>`.
    ApiExport {
        /// Logical cluster name of the APIExport.
        export_cluster: String,
        /// Name of the APIExport.
        export: String,
        /// A consumer cluster, or `None` for `*`.
        cluster: Option<String>,
        /// The shard whose URL was called (its view holds that shard's consumers only); `None`
        /// sees every shard.
        shard: Option<usize>,
    },
}

impl Endpoint {
    /// Whether this is one of kcp's virtual workspaces (an export's view, an initializing or
    /// terminating view), whose discovery kcp serves without the aggregated form.
    pub fn is_virtual_workspace(&self) -> bool {
        matches!(
            self,
            Endpoint::Lifecycle { .. } | Endpoint::ApiExport { .. }
        )
    }

    fn apiexport_at(&self) -> Option<apiexport::view::At<'_>> {
        match self {
            Endpoint::ApiExport {
                export_cluster,
                export,
                cluster,
                shard,
            } => Some(apiexport::view::At {
                export_cluster,
                export,
                cluster: cluster.as_deref(),
                shard: *shard,
            }),
            _ => None,
        }
    }
}

/// A resource request: endpoint, resource, and optionally namespace, name and subresource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Where the request goes.
    pub endpoint: Endpoint,
    /// API group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Plural resource name.
    pub plural: String,
    /// Namespace, for namespaced resources.
    pub namespace: Option<String>,
    /// Object name (absent for collections).
    pub name: Option<String>,
    /// `status` or absent.
    pub subresource: Option<String>,
}

/// A target resolved against the state.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The resource type.
    pub rt: Arc<ResourceType>,
    /// The concrete cluster (absent for wildcard views).
    pub cluster: Option<String>,
    /// The clusters a read sees.
    pub scope: ClusterScope,
    /// The lifecycle view (initializing or terminating workspaces) a request came through.
    pub lifecycle: Option<kcp::LifecycleView>,
    /// What an apiexport view sees.
    pub visibility: Option<Visibility>,
    /// Whether the resource is a custom resource (a CRD's or a bound schema's) of the
    /// addressed cluster: its handler answers an unserved subresource of an object as the
    /// object not found, where a builtin kind has no such path at all.
    pub custom: bool,
}

impl Resolved {
    /// Narrows a read's filter to what the target and the view select: the namespace, the
    /// LogicalClusters of a lifecycle view, the visibility of an apiexport view.
    fn narrow(&self, filter: &mut Filter, target: &Target) {
        filter.namespace = target.namespace.clone().filter(|_| self.rt.namespaced);
        if let ClusterScope::Lifecycle { view, .. } = &self.scope {
            filter.lifecycle = Some(view.clone());
        }
        filter.visibility = self.visibility.clone();
    }

    fn cluster(&self) -> ApiResult<&str> {
        self.cluster.as_deref().ok_or_else(|| {
            ApiError::method_not_allowed(
                "writes must address one logical cluster, not the wildcard",
            )
        })
    }
}

/// The start of a watch: the events to send first and the live change stream.
#[derive(Debug)]
pub struct WatchStart {
    /// The resource watched.
    pub rt: Arc<ResourceType>,
    /// Events to send before the live ones.
    pub initial: Vec<(ChangeKind, Arc<Stored>)>,
    /// The live change stream.
    pub changes: broadcast::Receiver<Arc<Change>>,
    /// What the watcher sees of a change.
    pub filter: WatchFilter,
    /// Live changes at or below this resourceVersion were already covered.
    pub after_rv: u64,
    /// The resourceVersion the watcher has seen before the first event: the one it asked for,
    /// or the store's when its initial events cover it.
    pub seen_rv: u64,
}

/// Settings of the simulated installation.
#[derive(Debug, Clone)]
pub struct SimSettings {
    /// Kubernetes or kcp.
    pub flavor: Flavor,
    /// Changes kept for watches (older resourceVersions get 410 Gone).
    pub history: usize,
    /// Changes buffered per watcher before a slow watcher is cut off.
    pub watch_buffer: usize,
    /// The server's CA certificate (PEM), which kcp publishes in every namespace as
    /// `kube-root-ca.crt` ([`crate::kcp::root_ca`]).
    pub root_ca: Option<String>,
    /// Refuse a bearer token kcp-sim did not sign (nor its kubeconfig's) with kube's 401, as a
    /// real server does; otherwise such a token acts as the admin.
    pub refuse_unknown_tokens: bool,
}

/// The simulated installation: state plus faults.
#[derive(Debug)]
pub struct Sim {
    state: RwLock<State>,
    /// Fault injection.
    pub faults: Faults,
    /// Kubernetes or kcp.
    pub flavor: Flavor,
    /// HTTP requests answered, by verb and resource.
    pub requests: crate::requests::RequestStats,
}

impl Sim {
    /// A new installation: the plain cluster (with its `default`, `kube-node-lease`,
    /// `kube-public` and `kube-system` namespaces, system PriorityClasses and bootstrap RBAC), or
    /// kcp's `root` workspace with its builtin types.
    pub fn new(settings: &SimSettings, faults: Faults, shard_urls: Vec<String>) -> ApiResult<Self> {
        let mut state = State::new(settings.flavor, settings.history, settings.watch_buffer);
        state.shard_urls = shard_urls;
        state.root_ca = settings.root_ca.clone();
        state.refuse_unknown_tokens = settings.refuse_unknown_tokens;
        let first = match settings.flavor {
            Flavor::Kubernetes => {
                state.add_cluster(PLAIN_CLUSTER, "");
                PLAIN_CLUSTER
            }
            Flavor::Kcp => {
                kcp::bootstrap(&mut state)?;
                kcp::ROOT
            }
        };
        let sim = Self {
            state: RwLock::new(state),
            faults,
            flavor: settings.flavor,
            requests: crate::requests::RequestStats::default(),
        };
        {
            let mut state = sim.write();
            match settings.flavor {
                Flavor::Kubernetes => {
                    let port = state
                        .shard_urls
                        .first()
                        .and_then(|url| url.rsplit(':').next()?.parse::<u16>().ok())
                        .ok_or_else(|| {
                            ApiError::internal("kcp-sim's own URL names no port".to_string())
                        })?;
                    crate::kube_bootstrap::run(&mut state, first, port)?;
                }
                Flavor::Kcp => semantics::ensure_namespace(&mut state, first, "default")?,
            }
        }
        Ok(sim)
    }

    /// Read access to the state.
    pub fn read(&self) -> RwLockReadGuard<'_, State> {
        match self.state.read() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Write access to the state.
    pub fn write(&self) -> RwLockWriteGuard<'_, State> {
        match self.state.write() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// The registry that answers discovery at an endpoint.
    pub fn registry(&self, endpoint: &Endpoint) -> ApiResult<Registry> {
        self.with_registry(endpoint, |r| r.clone())
    }

    /// Which verbs the type `group`/`plural` allows at an endpoint, if it is served there.
    pub fn access_of(
        &self,
        endpoint: &Endpoint,
        group: &str,
        plural: &str,
    ) -> ApiResult<Option<crate::resource::Access>> {
        self.with_registry(endpoint, |r| {
            r.get(&GroupResource::new(group, plural)).map(|t| t.access)
        })
    }

    /// Whether any type of `group` is served at an endpoint (a wildcard endpoint sees the types
    /// of every cluster).
    pub fn serves_group(&self, endpoint: &Endpoint, group: &str) -> ApiResult<bool> {
        if matches!(
            endpoint,
            Endpoint::Wildcard | Endpoint::Lifecycle { cluster: None, .. }
        ) {
            let state = self.read();
            return Ok(state
                .clusters
                .values()
                .any(|c| c.registry.serves_group(group)));
        }
        self.with_registry(endpoint, |r| r.serves_group(group))
    }

    /// Looks up the type served for a group, version and kind at an endpoint.
    pub fn type_of_kind(
        &self,
        endpoint: &Endpoint,
        group: &str,
        version: &str,
        kind: &str,
    ) -> ApiResult<Option<Arc<ResourceType>>> {
        self.with_registry(endpoint, |r| r.by_kind(group, version, kind).cloned())
    }

    fn with_registry<T>(
        &self,
        endpoint: &Endpoint,
        f: impl FnOnce(&Registry) -> T,
    ) -> ApiResult<T> {
        let state = self.read();
        if let Some(at) = endpoint.apiexport_at() {
            let (_, registry) = state.view_cache.view(&state, &at)?;
            return Ok(f(&registry));
        }
        let cluster = registry_cluster(&state, endpoint)?;
        state
            .clusters
            .get(cluster)
            .map(|c| f(&c.registry))
            .ok_or_else(|| cluster_not_found(cluster))
    }

    /// Every kind and version served at an endpoint, with the OpenAPI schema of the custom ones
    /// (from their CRD, the APIResourceSchema an APIBinding bound, or an export's schema).
    pub fn openapi_types(&self, endpoint: &Endpoint) -> ApiResult<Vec<crate::openapi::TypeSchema>> {
        let state = self.read();
        if let Some(at) = endpoint.apiexport_at() {
            let (export, registry) = state.view_cache.view(&state, &at)?;
            return Ok(crate::openapi::served_types(&registry, |rt, version| {
                apiexport::view::exported_schema(&state, &export, rt, version)
            }));
        }
        let cluster = registry_cluster(&state, endpoint)?;
        let data = state
            .clusters
            .get(cluster)
            .ok_or_else(|| cluster_not_found(cluster))?;
        Ok(crate::openapi::served_types(
            &data.registry,
            |rt, version| crate::openapi::custom_schema(&state, cluster, rt, version),
        ))
    }

    /// Resolves a target for a verb (the apiexport view allows verbs per resource).
    pub fn resolve(&self, state: &State, target: &Target, verb: Verb) -> ApiResult<Resolved> {
        if let Some(at) = target.endpoint.apiexport_at() {
            return resolve_in_view(state, &at, target, verb);
        }
        let (cluster, scope, lifecycle) =
            addressed(state, &target.endpoint).map_err(|e| match &target.endpoint {
                Endpoint::Cluster(c) if state.resolve_cluster(c).is_none() => {
                    access_denied(target, verb)
                }
                _ => e,
            })?;
        let lookup = |c: &str| {
            state
                .clusters
                .get(c)
                .and_then(|d| {
                    d.registry
                        .by_plural(&target.group, &target.version, &target.plural)
                })
                .cloned()
        };
        let rt = match &cluster {
            Some(c) => lookup(c),
            None => state.clusters.keys().find_map(|c| lookup(c)),
        }
        .ok_or_else(|| unknown_resource(&target.group))?;
        // A lifecycle view lists LogicalClusters across clusters; in one cluster it serves
        // what its kind of view serves.
        let served = match (&scope, &lifecycle) {
            (ClusterScope::Lifecycle { .. }, _) => {
                rt.group == "core.kcp.io" && rt.plural == "logicalclusters"
            }
            (_, Some(view)) => view.serves(&rt.group, &rt.plural),
            _ => true,
        };
        if !served {
            return Err(ApiError::path_not_found());
        }
        let custom = cluster
            .as_deref()
            .is_some_and(|c| state.is_custom(c, rt.group_resource()));
        check_shape(&rt, target, custom)?;
        Ok(Resolved {
            rt: rt.at_version(&target.version),
            cluster,
            scope,
            lifecycle,
            visibility: None,
            custom,
        })
    }

    fn name(target: &Target) -> ApiResult<&str> {
        target
            .name
            .as_deref()
            .ok_or_else(|| ApiError::method_not_allowed("this operation needs an object name"))
    }

    /// GET one object.
    pub async fn get(&self, target: &Target) -> ApiResult<(Arc<ResourceType>, Arc<Stored>)> {
        self.faults
            .before(Verb::Get, &target.group, &target.plural)
            .await?;
        let state = self.read();
        let r = self.resolve(&state, target, Verb::Get)?;
        let name = Self::name(target)?;
        let ns = target.namespace.as_deref().unwrap_or("");
        let obj = semantics::get(&state, r.cluster()?, &r.rt, ns, name)?;
        let filter = Filter {
            visibility: r.visibility.clone(),
            ..Filter::default()
        };
        if !filter.matches(&obj) {
            return Err(ApiError::not_found(&r.rt.group, &r.rt.plural, name));
        }
        Ok((r.rt, obj))
    }

    /// Waits until the store has reached resourceVersion `rv`, as kube-apiserver's watch cache
    /// waits for a read that asks for a revision it has not seen yet (at least or exactly that
    /// one): for up to 3 s, then `504 Timeout` with the `ResourceVersionTooLarge` cause that
    /// client-go's reflector reads.
    pub async fn wait_for_revision(&self, rv: u64) -> ApiResult<()> {
        // Nearly every read asks for no revision or one already reached: no subscription then.
        if self.read().rv >= rv {
            return Ok(());
        }
        let deadline = tokio::time::Instant::now() + FRESHNESS_WAIT;
        // Subscribed before the revision is read, so that no write is missed in between.
        let mut changes = self.read().subscribe();
        loop {
            let current = self.read().rv;
            if current >= rv {
                return Ok(());
            }
            match tokio::time::timeout_at(deadline, changes.recv()).await {
                Ok(Ok(_)) | Ok(Err(broadcast::error::RecvError::Lagged(_))) => {}
                Ok(Err(broadcast::error::RecvError::Closed)) | Err(_) => {
                    return Err(ApiError::resource_version_too_large(rv, current));
                }
            }
        }
    }

    /// LIST a collection.
    pub async fn list(
        &self,
        target: &Target,
        filter: Filter,
        limit: Option<usize>,
        continue_token: Option<&str>,
    ) -> ApiResult<(Arc<ResourceType>, Page)> {
        self.faults
            .before(Verb::List, &target.group, &target.plural)
            .await?;
        let state = self.read();
        let r = self
            .resolve(&state, target, Verb::List)
            .map_err(|e| refusal_naming(e, target, Verb::List, &filter))?;
        let page = page_of(&state, &r, target, filter, (limit, continue_token))?;
        Ok((r.rt, page))
    }

    /// LIST a collection as it was at resourceVersion `rv` (`resourceVersionMatch=Exact`).
    pub async fn list_at(
        &self,
        target: &Target,
        mut filter: Filter,
        limit: Option<usize>,
        rv: u64,
    ) -> ApiResult<(Arc<ResourceType>, Page)> {
        self.faults
            .before(Verb::List, &target.group, &target.plural)
            .await?;
        let state = self.read();
        let r = self
            .resolve(&state, target, Verb::List)
            .map_err(|e| refusal_naming(e, target, Verb::List, &filter))?;
        admit_field_selector(&state, &r, target, &mut filter)?;
        r.narrow(&mut filter, target);
        let page = query::list_at(&state, &r.scope, r.rt.group_resource(), &filter, limit, rv)?;
        Ok((r.rt, page))
    }

    /// The Table columns of a resource type at a target: kube's or kcp's for builtin kinds,
    /// the `additionalPrinterColumns` of the target version of the CRD or bound
    /// APIResourceSchema, else NAME and AGE.
    pub fn printer_columns(&self, target: &Target, rt: &ResourceType) -> Vec<table::Column> {
        if let Some(columns) = table::builtin_columns(rt) {
            return columns;
        }
        let state = self.read();
        let cluster = self
            .resolve(&state, target, Verb::Get)
            .ok()
            .and_then(|r| r.cluster);
        // A CRD's and a bound schema's columns are kept with their compiled schemas; a wildcard
        // request takes them from any cluster that serves the resource.
        let compiled = match cluster.as_deref() {
            Some(c) => state.crd_schemas(c, rt.group_resource()),
            None => state
                .clusters
                .values()
                .find_map(|c| c.schemas.get(rt.group_resource())),
        };
        let columns = compiled
            .and_then(|s| s.printer_columns.get(&target.version).cloned())
            .unwrap_or_default();
        table::crd_columns(&columns)
    }

    /// Starts a WATCH: from `resource_version`, or (when absent or `0`) with every current
    /// object as ADDED first.
    pub async fn watch(
        &self,
        target: &Target,
        mut filter: Filter,
        resource_version: Option<&str>,
    ) -> ApiResult<WatchStart> {
        self.faults
            .before(Verb::Watch, &target.group, &target.plural)
            .await?;
        if self.faults.take_forced_gone() {
            return Err(ApiError::gone("too old resource version (injected fault)"));
        }
        let state = self.read();
        let r = self
            .resolve(&state, target, Verb::Watch)
            .map_err(|e| refusal_naming(e, target, Verb::Watch, &filter))?;
        admit_field_selector(&state, &r, target, &mut filter)?;
        r.narrow(&mut filter, target);
        let watch_filter = WatchFilter {
            scope: r.scope.clone(),
            resource: r.rt.group_resource().clone(),
            filter: filter.clone(),
        };
        let from = resource_version.filter(|rv| !rv.is_empty() && *rv != "0");
        match from {
            Some(rv) => {
                // kube-apiserver answers a version that is no number with its versioner's
                // error as it is: a 500 without a reason.
                let rv = crate::query::parse_resource_version(rv)
                    .map_err(|why| ApiError::new(500, "", why))?;
                let (replay, changes) = state.watch_from(rv)?;
                let initial = replay.iter().filter_map(|c| watch_filter.view(c)).collect();
                let after_rv = replay.last().map(|c| c.rv).unwrap_or(rv).max(state.rv);
                Ok(WatchStart {
                    rt: r.rt,
                    initial,
                    changes,
                    filter: watch_filter,
                    after_rv,
                    seen_rv: rv,
                })
            }
            None => {
                let page =
                    query::list(&state, &r.scope, r.rt.group_resource(), &filter, None, None)?;
                Ok(WatchStart {
                    rt: r.rt,
                    initial: page
                        .items
                        .into_iter()
                        .map(|o| (ChangeKind::Added, o))
                        .collect(),
                    changes: state.subscribe(),
                    filter: watch_filter,
                    after_rv: state.rv,
                    seen_rv: state.rv,
                })
            }
        }
    }

    /// Runs a write against the one cluster a target addresses, after the faults of `verb`.
    async fn write_op<T>(
        &self,
        verb: Verb,
        target: &Target,
        op: impl FnOnce(&mut State, &Resolved, &str) -> ApiResult<T>,
    ) -> ApiResult<(Arc<ResourceType>, T)> {
        self.faults
            .before(verb, &target.group, &target.plural)
            .await?;
        let mut state = self.write();
        let r = self.resolve(&state, target, verb)?;
        let cluster = r.cluster()?.to_string();
        // A custom resource's fields are owned as its CRD's schema declares them.
        let schemas = state.crd_schemas(&cluster, r.rt.group_resource()).cloned();
        let out = managed_fields::with_custom_schemas(&r.rt.group, &r.rt.kind, schemas, || {
            op(&mut state, &r, &cluster)
        })?;
        drop(state);
        self.faults.after(verb, &target.group, &target.plural)?;
        Ok((r.rt, out))
    }

    /// POST: create.
    pub async fn create(
        &self,
        target: &Target,
        body: Value,
        opts: &WriteOptions,
    ) -> ApiResult<(Arc<ResourceType>, Written)> {
        self.write_op(Verb::Create, target, |state, r, cluster| {
            semantics::create(
                state,
                cluster,
                &r.rt,
                &target.version,
                target.namespace.as_deref(),
                body,
                &with_lifecycle(opts, r),
            )
        })
        .await
    }

    /// PUT: replace an object or its status.
    pub async fn update(
        &self,
        target: &Target,
        body: Value,
        opts: &WriteOptions,
    ) -> ApiResult<(Arc<ResourceType>, Written)> {
        let name = Self::name(target)?;
        self.write_op(Verb::Update, target, |state, r, cluster| {
            semantics::update(
                state,
                cluster,
                &r.rt,
                &target.version,
                target.namespace.as_deref().unwrap_or(""),
                name,
                target.subresource.is_some(),
                body,
                &with_lifecycle(opts, r),
            )
        })
        .await
    }

    /// PATCH (merge, JSON, strategic or apply).
    pub async fn patch(
        &self,
        target: &Target,
        kind: PatchKind,
        body: &Value,
        opts: &WriteOptions,
    ) -> ApiResult<(Arc<ResourceType>, Written)> {
        let name = Self::name(target)?;
        self.write_op(Verb::Patch, target, |state, r, cluster| {
            semantics::patch(
                state,
                cluster,
                &r.rt,
                &target.version,
                target.namespace.as_deref().unwrap_or(""),
                name,
                target.subresource.is_some(),
                kind,
                body,
                &with_lifecycle(opts, r),
            )
        })
        .await
    }

    /// A write through the Scale of the object `target` names: a server-side apply of an
    /// `autoscaling/v1` Scale ([`semantics::apply_scale`]) or any other write, given as the
    /// Scale it makes ([`semantics::update_scale`]).
    pub async fn write_scale(
        &self,
        target: &Target,
        write: ScaleWrite,
        opts: &WriteOptions,
    ) -> ApiResult<(Arc<ResourceType>, Written)> {
        let name = Self::name(target)?;
        let verb = match write {
            ScaleWrite::Apply(_) => Verb::Patch,
            ScaleWrite::Update(_) => Verb::Update,
        };
        self.write_op(verb, target, |state, r, cluster| {
            let paths = r.rt.scale.clone().ok_or_else(|| {
                ApiError::not_found(&r.rt.group, &format!("{}/scale", r.rt.plural), name)
            })?;
            let at = (target.namespace.as_deref().unwrap_or(""), name);
            let opts = with_lifecycle(opts, r);
            match write {
                ScaleWrite::Apply(body) => semantics::apply_scale(
                    state,
                    cluster,
                    &r.rt,
                    &target.version,
                    at,
                    &paths,
                    &body,
                    &opts,
                ),
                ScaleWrite::Update(scale) => semantics::update_scale(
                    state,
                    cluster,
                    &r.rt,
                    &target.version,
                    at,
                    &paths,
                    scale,
                    &opts,
                ),
            }
        })
        .await
    }

    /// DELETE one object.
    pub async fn delete(
        &self,
        target: &Target,
        req: &DeleteRequest,
    ) -> ApiResult<(Arc<ResourceType>, Deleted)> {
        let name = Self::name(target)?;
        self.write_op(Verb::Delete, target, |state, r, cluster| {
            semantics::delete(
                state,
                cluster,
                &r.rt,
                target.namespace.as_deref().unwrap_or(""),
                name,
                req,
            )
        })
        .await
    }

    /// DELETE a collection: every object the filter selects, or (with `limit`) one page of
    /// them, as kube-apiserver's `DeleteCollection` lists and then deletes. The answer is the
    /// page as it was listed, before the deletions (an object a finalizer holds shows no
    /// `deletionTimestamp` in it); a kind that does not list `deletecollection` among its
    /// verbs (Namespaces) is a 405.
    pub async fn delete_collection(
        &self,
        target: &Target,
        filter: Filter,
        page: (Option<usize>, Option<&str>),
        req: &DeleteRequest,
    ) -> ApiResult<(Arc<ResourceType>, Page)> {
        self.write_op(Verb::Delete, target, |state, r, cluster| {
            if !r.rt.verbs().contains(&"deletecollection") {
                return Err(ApiError::method_not_allowed(
                    "the server does not allow this method on the requested resource",
                ));
            }
            let listed = page_of(state, r, target, filter, page)?;
            for obj in &listed.items {
                let value = obj.value()?;
                let field = |f: &str| {
                    value
                        .pointer(&format!("/metadata/{f}"))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                };
                match semantics::delete(
                    state,
                    cluster,
                    &r.rt,
                    &field("namespace"),
                    &field("name"),
                    req,
                ) {
                    Ok(_) => {}
                    Err(e) if e.code == 404 => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(listed)
        })
        .await
    }
}

/// The page of `target` that `filter` selects (`page`: the list's `limit` and continue token),
/// its field selector admitted and the filter narrowed to what the resolved target reaches.
fn page_of(
    state: &State,
    r: &Resolved,
    target: &Target,
    mut filter: Filter,
    (limit, continue_token): (Option<usize>, Option<&str>),
) -> ApiResult<Page> {
    admit_field_selector(state, r, target, &mut filter)?;
    r.narrow(&mut filter, target);
    query::list(
        state,
        &r.scope,
        r.rt.group_resource(),
        &filter,
        limit,
        continue_token,
    )
}

/// Refuses a field selector on a field the target's kind cannot be selected by; a selector of
/// a kind stored as another (`events.k8s.io`'s Events) is put onto the stored fields.
fn admit_field_selector(
    state: &State,
    r: &Resolved,
    target: &Target,
    filter: &mut Filter,
) -> ApiResult<()> {
    let Some(fields) = &filter.fields else {
        return Ok(());
    };
    let selectable = if r.rt.is_typed() {
        Vec::new()
    } else {
        selectable_fields(state, r.cluster.as_deref(), &r.rt, &target.version)
    };
    query::check_field_selector(&r.rt, &selectable, fields)?;
    // Only a selector on `source` needs the Event's computed fields (a copy per object).
    filter.event_fields = r.rt.group.is_empty()
        && r.rt.kind == "Event"
        && fields.fields().any(|field| field == "source");
    if crate::event_apis::converts(&r.rt) {
        filter.fields = Some(fields.with_fields_renamed(crate::event_apis::stored_field));
    }
    Ok(())
}

/// The `selectableFields` of a custom resource's CRD version, as field paths (`spec.color`);
/// none when no CRD in the cluster (any cluster, for a wildcard) defines the resource.
fn selectable_fields(
    state: &State,
    cluster: Option<&str>,
    rt: &ResourceType,
    version: &str,
) -> Vec<String> {
    let crds = GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");
    let crd_name = format!("{}.{}", rt.plural, rt.group);
    let crd = match cluster {
        Some(c) => state.lookup(c, &crds, "", &crd_name),
        None => state
            .clusters
            .keys()
            .find_map(|c| state.lookup(c, &crds, "", &crd_name)),
    };
    let Some(crd) = crd.and_then(|crd| crd.value().ok()) else {
        return Vec::new();
    };
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|versions| {
            versions
                .iter()
                .find(|v| v.get("name").and_then(Value::as_str) == Some(version))
        })
        .and_then(|v| v.get("selectableFields"))
        .and_then(Value::as_array)
        .map(|fields| {
            fields
                .iter()
                .filter_map(|f| f.get("jsonPath").and_then(Value::as_str))
                .map(|path| path.trim_start_matches('.').to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Write options with the lifecycle view a request came through. kcp's lifecycle views
/// forward a LogicalCluster write with their own client, so the write is recorded as kcp's
/// unless it names its `fieldManager` (seen on kcp v0.30.0).
fn with_lifecycle(opts: &WriteOptions, r: &Resolved) -> WriteOptions {
    let mut opts = opts.clone();
    opts.lifecycle = r.lifecycle.clone();
    if opts.lifecycle.is_some() && r.rt.group == "core.kcp.io" && r.rt.plural == "logicalclusters" {
        opts.default_manager = kcp::CONTROLLER_MANAGER.to_string();
    }
    opts
}

/// kcp's answer to a request into a workspace that does not exist (or that the user may not
/// see): its authorizer denies access, worded as RBAC denies a verb on a resource, to kcp's
/// admin user (every request of kcp-sim is taken to come from it).
fn access_denied(target: &Target, verb: Verb) -> ApiError {
    let verb = match (verb, target.name.is_some()) {
        (Verb::Delete, false) => "deletecollection",
        (verb, _) => verb.as_str(),
    };
    let mut resource = target.plural.clone();
    if let Some(sub) = &target.subresource {
        resource = format!("{resource}/{sub}");
    }
    let scope = match &target.namespace {
        Some(ns) => format!("in the namespace {ns:?}"),
        None => "at the cluster scope".to_string(),
    };
    let qualified = if target.group.is_empty() {
        target.plural.clone()
    } else {
        format!("{}.{}", target.plural, target.group)
    };
    let object = match &target.name {
        Some(name) => format!("{qualified} {name:?}"),
        None => qualified,
    };
    ApiError::forbidden(format!(
        "{object} is forbidden: User {:?} cannot {verb} resource {resource:?} in API group {:?} {scope}: access denied",
        kcp::ADMIN_USER,
        target.group
    ))
    .about(
        &target.group,
        &target.plural,
        target.name.as_deref().unwrap_or(""),
    )
}

/// kube-apiserver's request info takes the object name of a list or watch from a
/// `metadata.name` field selector, so an authorizer's refusal ([`access_denied`]) names it.
fn refusal_naming(error: ApiError, target: &Target, verb: Verb, filter: &Filter) -> ApiError {
    let unnamed_refusal = error.code == 403
        && error.details.as_ref().is_some_and(|d| {
            d.kind.as_deref() == Some(target.plural.as_str())
                && d.name.as_deref().is_none_or(str::is_empty)
        });
    let name = filter
        .fields
        .as_ref()
        .and_then(|f| f.exact_value("metadata.name"));
    match name {
        Some(name) if unnamed_refusal => {
            let named = Target {
                name: Some(name.to_string()),
                ..target.clone()
            };
            access_denied(&named, verb)
        }
        _ => error,
    }
}

fn cluster_not_found(cluster: &str) -> ApiError {
    ApiError::forbidden(format!(
        "logical cluster {cluster:?} does not exist or is not accessible"
    ))
}

/// The cluster whose registry answers discovery at a non-view endpoint.
fn registry_cluster<'a>(state: &'a State, endpoint: &Endpoint) -> ApiResult<&'a str> {
    Ok(match endpoint {
        Endpoint::Plain => PLAIN_CLUSTER,
        Endpoint::Cluster(c) => concrete(state, c)?,
        Endpoint::Wildcard | Endpoint::Lifecycle { cluster: None, .. } => state
            .clusters
            .keys()
            .next()
            .map(String::as_str)
            .unwrap_or_default(),
        Endpoint::Lifecycle {
            view,
            cluster: Some(c),
            shard,
        } => {
            let name = concrete(state, c)?;
            kcp::lifecycle_views::admit(state, name, view, *shard)?;
            name
        }
        Endpoint::ApiExport { .. } => return Err(ApiError::path_not_found()),
    })
}

fn concrete<'a>(state: &'a State, name_or_path: &str) -> ApiResult<&'a str> {
    state
        .resolve_cluster(name_or_path)
        .ok_or_else(|| cluster_not_found(name_or_path))
}

/// The one cluster `endpoint` addresses (`None` for wildcards, views of many clusters and
/// unknown names).
pub fn addressed_cluster(state: &State, endpoint: &Endpoint) -> Option<String> {
    addressed(state, endpoint).ok()?.0
}

/// The cluster a request on a plain, cluster, wildcard or lifecycle view endpoint addresses
/// (none for wildcards), the clusters it sees, and the lifecycle view it came through.
fn addressed(
    state: &State,
    endpoint: &Endpoint,
) -> ApiResult<(Option<String>, ClusterScope, Option<kcp::LifecycleView>)> {
    let addressed = match endpoint {
        Endpoint::Plain => (
            Some(PLAIN_CLUSTER.to_string()),
            ClusterScope::One(PLAIN_CLUSTER.to_string()),
            None,
        ),
        Endpoint::Cluster(c) => {
            let name = concrete(state, c)?.to_string();
            (Some(name.clone()), ClusterScope::One(name), None)
        }
        Endpoint::Wildcard => (None, ClusterScope::All, None),
        Endpoint::Lifecycle {
            view,
            cluster: None,
            shard,
        } => (
            None,
            ClusterScope::Lifecycle {
                view: view.clone(),
                shard: *shard,
            },
            Some(view.clone()),
        ),
        Endpoint::Lifecycle {
            view,
            cluster: Some(c),
            shard,
        } => {
            let name = concrete(state, c)?.to_string();
            kcp::lifecycle_views::admit(state, &name, view, *shard)?;
            (
                Some(name.clone()),
                ClusterScope::One(name),
                Some(view.clone()),
            )
        }
        Endpoint::ApiExport { .. } => return Err(ApiError::path_not_found()),
    };
    Ok(addressed)
}

/// Rejects subresources that are not served (for a custom resource's object, as the object
/// not found, as the apiextensions handler answers) and named requests for namespaced
/// resources without a namespace.
fn check_shape(rt: &ResourceType, target: &Target, custom: bool) -> ApiResult<()> {
    let served = |sub: &str| match sub {
        "status" => rt.has_status(&target.version),
        "approval" => crate::certificates::is_request(rt),
        crate::ephemeral_containers::SUBRESOURCE => rt.group.is_empty() && rt.plural == "pods",
        _ => false,
    };
    if let Some(sub) = &target.subresource
        && !served(sub)
    {
        return Err(unserved_subresource(rt, target, custom));
    }
    if rt.namespaced && target.name.is_some() && target.namespace.is_none() {
        return Err(ApiError::path_not_found());
    }
    Ok(())
}

/// The answer to a resource a served group does not have: kube-apiserver's own groups answer a
/// 404 `Status`; a group of custom resources (kcp's own groups are custom resources too) is
/// the apiextensions handler's, which leaves an unknown resource to the mux's plain-text 404.
fn unknown_resource(group: &str) -> ApiError {
    if crate::api_services::is_builtin_group(group) {
        ApiError::path_not_found()
    } else {
        ApiError::page_not_found()
    }
}

/// The answer to a subresource `rt` does not serve.
pub fn unserved_subresource(rt: &ResourceType, target: &Target, custom: bool) -> ApiError {
    match (&target.name, custom) {
        (Some(name), true) => ApiError::not_found(&rt.group, &rt.plural, name),
        _ => ApiError::path_not_found(),
    }
}

/// Resolves a target inside an apiexport virtual workspace.
fn resolve_in_view(
    state: &State,
    at: &apiexport::view::At<'_>,
    target: &Target,
    verb: Verb,
) -> ApiResult<Resolved> {
    let verb_name = match (verb, &target.name) {
        (Verb::Delete, None) => "deletecollection",
        (v, _) => v.as_str(),
    };
    // kcp words every refusal of the virtual workspace's authorizers as RBAC does, with the
    // reason "access denied" (conformance kcp-views, kcp-claims).
    let t = apiexport::view::resolve(
        state,
        at,
        &target.group,
        &target.version,
        &target.plural,
        verb_name,
    )
    .map_err(|e| {
        if e.code == 403 {
            access_denied(target, verb)
        } else {
            e
        }
    })?;
    check_shape(&t.rt, target, false)?;
    Ok(Resolved {
        rt: t.rt.at_version(&target.version),
        cluster: t.cluster,
        scope: t.scope,
        lifecycle: None,
        visibility: Some(t.visibility),
        custom: false,
    })
}

/// The JSON of an object as served at `version`: objects of a CRD with several versions are
/// stored once and read under any served version (no conversion, as with strategy `None`);
/// APIExports are converted as kcp converts them.
pub fn render(rt: &ResourceType, version: &str, obj: &Stored) -> Bytes {
    if rt.versions.len() < 2 && !rt.stored_as_other_group() {
        return obj.json.clone();
    }
    let api_version = rt.api_version(version);
    let Ok(mut value) = serde_json::from_slice::<Value>(&obj.json) else {
        return obj.json.clone();
    };
    if value.get("apiVersion").and_then(Value::as_str) == Some(api_version.as_str()) {
        return obj.json.clone();
    }
    conversion::to_version(rt, version, &mut value);
    value["apiVersion"] = Value::String(api_version);
    serde_json::to_vec(&value)
        .map(Bytes::from)
        .unwrap_or_else(|_| obj.json.clone())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn kube_sim() -> Arc<Sim> {
        let settings = SimSettings {
            flavor: Flavor::Kubernetes,
            history: 100,
            watch_buffer: 100,
            root_ca: None,
            refuse_unknown_tokens: false,
        };
        let faults = Faults::new(crate::faults::FaultConfig::default());
        let urls = vec!["http://127.0.0.1:6443".to_owned()];
        Arc::new(Sim::new(&settings, faults, urls).unwrap())
    }

    async fn create_config_map(sim: &Sim, name: &str) {
        let target = Target {
            endpoint: Endpoint::Plain,
            group: String::new(),
            version: "v1".into(),
            plural: "configmaps".into(),
            namespace: Some("default".into()),
            name: None,
            subresource: None,
        };
        let body = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
        sim.create(&target, body, &WriteOptions::default())
            .await
            .unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_revision_not_reached_within_three_seconds_is_too_large() {
        let sim = kube_sim();
        let next = sim.read().rv + 1;
        let started = tokio::time::Instant::now();
        let error = sim.wait_for_revision(next).await.unwrap_err();
        assert_eq!((error.code, error.reason), (504, "Timeout"));
        assert_eq!(started.elapsed(), FRESHNESS_WAIT);
    }

    #[tokio::test(start_paused = true)]
    async fn a_read_waits_for_the_write_that_reaches_its_revision() {
        let sim = kube_sim();
        let next = sim.read().rv + 1;
        let waiting = tokio::spawn({
            let sim = sim.clone();
            async move { sim.wait_for_revision(next).await }
        });
        tokio::time::sleep(FRESHNESS_WAIT / 2).await;
        assert!(!waiting.is_finished());
        create_config_map(&sim, "a").await;
        assert!(waiting.await.unwrap().is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn a_revision_already_reached_is_not_waited_for() {
        let sim = kube_sim();
        let current = sim.read().rv;
        let started = tokio::time::Instant::now();
        sim.wait_for_revision(current).await.unwrap();
        assert_eq!(started.elapsed(), std::time::Duration::ZERO);
    }
}
