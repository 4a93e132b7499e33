//! The bottom layer: objects per logical cluster, the global resourceVersion counter, the
//! history of changes and the watch fan-out.
//!
//! Objects are kept as their serialized JSON ([`Stored`]), so a GET or a watch event hands out the
//! stored bytes without re-encoding, and 100,000 ConfigMaps cost little more than their JSON.
//! Every write goes through [`State::put`] or [`State::remove`], which bump the one global
//! resourceVersion, append a [`Change`] to a bounded history and publish it to watchers. A watch
//! that asks for a resourceVersion older than the history gets `410 Gone`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::broadcast;

use crate::resource::{Flavor, GroupResource, Registry, ResourceType};
use crate::schema::CrdSchemas;
use crate::status::{ApiError, ApiResult};

/// The virtual workspaces, by key, that see an object besides its own logical cluster (kcp's
/// apiexport views of bound and claimed resources). Kept per object so that a watcher decides
/// from the change alone whether it saw the object before and after a write.
pub type Audience = Arc<[Arc<str>]>;

/// One stored object: its JSON (with `metadata.resourceVersion` set) and what the store indexes.
#[derive(Debug)]
pub struct Stored {
    /// The object as JSON bytes.
    pub json: Bytes,
    /// Its resourceVersion.
    pub rv: u64,
    /// The uids of its owners (from `metadata.ownerReferences`), for garbage collection.
    pub owners: Vec<Box<str>>,
    /// Its uid.
    pub uid: Box<str>,
    /// Whether it has a deletionTimestamp (it is being deleted).
    pub terminating: bool,
    /// Who else sees it, as its cluster's [`ClusterData::audiences`] said when it was stored.
    pub audience: Option<Audience>,
}

impl Stored {
    /// Encodes an object, whose resourceVersion the caller has set to `rv`.
    pub fn encode(obj: &Value, rv: u64) -> ApiResult<Self> {
        let json = serde_json::to_vec(obj)
            .map_err(|e| ApiError::internal(format!("encoding object: {e}")))?;
        // The serializer's buffer grows by doubling; keep only what the object needs.
        let json = json.into_boxed_slice();
        let owners = obj
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .map(|refs| {
                refs.iter()
                    .filter_map(|r| r.get("uid").and_then(Value::as_str))
                    .map(Box::from)
                    .collect()
            })
            .unwrap_or_default();
        let uid = obj
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .into();
        let terminating = obj.pointer("/metadata/deletionTimestamp").is_some();
        Ok(Self {
            json: Bytes::from(json),
            rv,
            owners,
            uid,
            terminating,
            audience: None,
        })
    }

    /// Decodes the object.
    pub fn value(&self) -> ApiResult<Value> {
        serde_json::from_slice(&self.json)
            .map_err(|e| ApiError::internal(format!("decoding stored object: {e}")))
    }

    /// Whether the virtual workspace `key` sees this object.
    pub fn seen_by(&self, key: &str) -> bool {
        self.audience
            .as_ref()
            .is_some_and(|a| a.iter().any(|k| &**k == key))
    }
}

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// Created.
    Added,
    /// Updated (including getting a deletionTimestamp).
    Modified,
    /// Removed from the store.
    Deleted,
}

impl ChangeKind {
    /// The watch event type.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Added => "ADDED",
            ChangeKind::Modified => "MODIFIED",
            ChangeKind::Deleted => "DELETED",
        }
    }
}

/// One write, as watchers see it.
#[derive(Debug)]
pub struct Change {
    /// The resourceVersion of this write.
    pub rv: u64,
    /// Logical cluster name.
    pub cluster: Arc<str>,
    /// The shard of that cluster.
    pub shard: usize,
    /// Resource written.
    pub resource: GroupResource,
    /// Namespace (empty for cluster-scoped objects).
    pub namespace: Box<str>,
    /// Object name.
    pub name: Box<str>,
    /// What happened.
    pub kind: ChangeKind,
    /// The object after the write (for a deletion: the object as it was removed).
    pub object: Arc<Stored>,
    /// The object before the write.
    pub previous: Option<Arc<Stored>>,
}

/// A receiver of every change published after it was created.
pub type ChangeReceiver = broadcast::Receiver<Arc<Change>>;

/// Objects of one resource in one cluster, keyed `namespace/name` (so they list in etcd order).
pub type ObjectMap = BTreeMap<String, Arc<Stored>>;

/// The storage key of an object.
pub fn object_key(namespace: &str, name: &str) -> String {
    let mut key = String::with_capacity(namespace.len() + name.len() + 1);
    key.push_str(namespace);
    key.push('/');
    key.push_str(name);
    key
}

/// One logical cluster (or the single cluster of plain mode).
#[derive(Debug)]
pub struct ClusterData {
    /// Logical cluster name.
    pub name: Arc<str>,
    /// Canonical workspace path (kcp mode), e.g. `root:org`.
    pub path: String,
    /// The simulated shard the cluster lives on.
    pub shard: usize,
    /// What this cluster serves.
    pub registry: Registry,
    /// Objects per resource.
    pub objects: HashMap<GroupResource, ObjectMap>,
    /// Per resource, the virtual workspaces that see its objects (see [`Audience`]).
    pub audiences: HashMap<GroupResource, Audience>,
    /// The compiled schemas of the custom resources served, by resource.
    pub schemas: HashMap<GroupResource, Arc<CrdSchemas>>,
    /// Compiled schemas by CRD name, kept from validating a CRD to serving it.
    pub compiled_crds: HashMap<String, Arc<CrdSchemas>>,
}

impl ClusterData {
    /// An empty cluster serving the builtin kinds of `flavor`.
    pub fn new(name: &str, path: &str, flavor: Flavor, shard: usize) -> Self {
        Self {
            name: Arc::from(name),
            path: path.to_string(),
            shard,
            registry: Registry::with_builtins(flavor),
            objects: HashMap::new(),
            audiences: HashMap::new(),
            schemas: HashMap::new(),
            compiled_crds: HashMap::new(),
        }
    }

    /// Reads one object.
    pub fn get(&self, gr: &GroupResource, namespace: &str, name: &str) -> Option<&Arc<Stored>> {
        self.objects.get(gr)?.get(&object_key(namespace, name))
    }

    /// The objects of `gr` in `namespace`, in key order (a range of the `namespace/name` keys,
    /// not a scan of every namespace).
    pub fn in_namespace<'a>(
        &'a self,
        gr: &GroupResource,
        namespace: &str,
    ) -> impl Iterator<Item = &'a Arc<Stored>> + 'a {
        let prefix = format!("{namespace}/");
        self.objects
            .get(gr)
            .into_iter()
            .flat_map(move |objects| {
                let prefix = prefix.clone();
                objects
                    .range(prefix.clone()..)
                    .take_while(move |(key, _)| key.starts_with(&prefix))
            })
            .map(|(_, stored)| stored)
    }
}

/// The whole simulated installation: clusters, the resourceVersion counter and change history.
#[derive(Debug)]
pub struct State {
    /// The flavor of every cluster.
    pub flavor: Flavor,
    /// Clusters by logical cluster name.
    pub clusters: BTreeMap<String, ClusterData>,
    /// Workspace paths to logical cluster names (kcp mode).
    pub paths: HashMap<String, String>,
    /// The base URLs the server is reachable at, one per simulated shard (the first is the main
    /// URL). Workspace and virtual workspace URLs are built from them.
    pub shard_urls: Vec<String>,
    /// The last resourceVersion handed out.
    pub rv: u64,
    history: VecDeque<Arc<Change>>,
    history_limit: usize,
    clusters_added: usize,
    /// The resourceVersion of the oldest write still in the history minus one: a watch from this
    /// version or later can be served; older ones get 410 Gone.
    oldest_watchable: u64,
    events: broadcast::Sender<Arc<Change>>,
    /// What each apiexport virtual workspace serves, parsed once per export version.
    pub view_cache: crate::apiexport::view_cache::ViewCache,
    /// The server's CA certificate (PEM), published in kcp mode as `kube-root-ca.crt`.
    pub root_ca: Option<String>,
    /// Whether a bearer token kcp-sim did not sign is refused (401) rather than taken as the
    /// admin's ([`crate::token_review::request_user`]).
    pub refuse_unknown_tokens: bool,
}

impl State {
    /// An empty installation.
    pub fn new(flavor: Flavor, history_limit: usize, watch_buffer: usize) -> Self {
        let (events, _) = broadcast::channel(watch_buffer.max(16));
        Self {
            flavor,
            clusters: BTreeMap::new(),
            paths: HashMap::new(),
            shard_urls: Vec::new(),
            rv: 1,
            history: VecDeque::new(),
            clusters_added: 0,
            history_limit: history_limit.max(1),
            oldest_watchable: 1,
            events,
            view_cache: Default::default(),
            root_ca: None,
            refuse_unknown_tokens: false,
        }
    }

    /// Adds a cluster, placing it on the shards round-robin.
    pub fn add_cluster(&mut self, name: &str, path: &str) {
        let flavor = self.flavor;
        let shard = self.clusters_added % self.shard_urls.len().max(1);
        self.clusters_added += 1;
        self.clusters.insert(
            name.to_string(),
            ClusterData::new(name, path, flavor, shard),
        );
        if !path.is_empty() {
            self.paths.insert(path.to_string(), name.to_string());
        }
    }

    /// Removes a cluster and everything in it; watchers see every object deleted.
    pub fn remove_cluster(&mut self, name: &str) {
        let Some(cluster) = self.clusters.remove(name) else {
            return;
        };
        self.paths.remove(&cluster.path);
        for (gr, objects) in cluster.objects {
            for (key, obj) in objects {
                let (ns, n) = key.split_once('/').unwrap_or(("", key.as_str()));
                self.rv += 1;
                let change = Change {
                    rv: self.rv,
                    cluster: cluster.name.clone(),
                    shard: cluster.shard,
                    resource: gr.clone(),
                    namespace: ns.into(),
                    name: n.into(),
                    kind: ChangeKind::Deleted,
                    object: obj.clone(),
                    previous: Some(obj),
                };
                self.publish(change);
            }
        }
    }

    /// Whether `cluster` serves `gr` as a custom resource (a CRD's or a bound schema's),
    /// whatever its name: kcp binds kinds named as Kubernetes' builtins (`deployments.apps`).
    pub fn is_custom(&self, cluster: &str, gr: &GroupResource) -> bool {
        self.crd_schemas(cluster, gr).is_some()
    }

    /// The compiled schemas `cluster` serves the custom resource `gr` with (none for a builtin
    /// kind).
    pub fn crd_schemas(&self, cluster: &str, gr: &GroupResource) -> Option<&Arc<CrdSchemas>> {
        self.clusters.get(cluster)?.schemas.get(gr)
    }

    /// The logical cluster name a name-or-path refers to.
    pub fn resolve_cluster(&self, name_or_path: &str) -> Option<&str> {
        if let Some((name, _)) = self.clusters.get_key_value(name_or_path) {
            return Some(name.as_str());
        }
        self.paths.get(name_or_path).map(String::as_str)
    }

    /// The next resourceVersion (not yet used by any write).
    pub fn next_rv(&self) -> u64 {
        self.rv + 1
    }

    /// Encodes an object at the next resourceVersion (setting `metadata.resourceVersion`),
    /// without storing it.
    pub fn encode_next(&self, obj: &mut Value) -> ApiResult<Stored> {
        let rv = self.next_rv();
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        Stored::encode(obj, rv)
    }

    /// Stores an object at the next resourceVersion (setting `metadata.resourceVersion`) and
    /// publishes the change.
    pub fn store(
        &mut self,
        cluster: &str,
        gr: &GroupResource,
        namespace: &str,
        name: &str,
        obj: &mut Value,
    ) -> ApiResult<Arc<Stored>> {
        let stored = self.encode_next(obj)?;
        self.put(cluster, gr, namespace, name, stored)
    }

    /// The resource type `gr` is served as in `cluster`, which kcp-sim's own writes rely on
    /// (an internal error where it is not).
    pub fn required_type(&self, cluster: &str, gr: &GroupResource) -> ApiResult<ResourceType> {
        self.served_type(cluster, gr)
            .ok_or_else(|| ApiError::internal(format!("{gr} is not served in cluster {cluster}")))
    }

    /// The resource type `gr` is served as in `cluster`, if it is served there.
    pub fn served_type(&self, cluster: &str, gr: &GroupResource) -> Option<ResourceType> {
        self.clusters
            .get(cluster)?
            .registry
            .get(gr)
            .map(|t| (**t).clone())
    }

    /// Reads one object.
    pub fn lookup(
        &self,
        cluster: &str,
        gr: &GroupResource,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<Stored>> {
        self.clusters
            .get(cluster)?
            .get(gr, namespace, name)
            .cloned()
    }

    /// Stores an object already encoded at [`Self::next_rv`], and publishes the change.
    pub fn put(
        &mut self,
        cluster: &str,
        gr: &GroupResource,
        namespace: &str,
        name: &str,
        mut stored: Stored,
    ) -> ApiResult<Arc<Stored>> {
        let data = self
            .clusters
            .get_mut(cluster)
            .ok_or_else(|| ApiError::not_found("core.kcp.io", "logicalclusters", cluster))?;
        debug_assert_eq!(stored.rv, self.rv + 1);
        self.rv = stored.rv;
        stored.audience = data.audiences.get(gr).cloned();
        let stored = Arc::new(stored);
        let previous = data
            .objects
            .entry(gr.clone())
            .or_default()
            .insert(object_key(namespace, name), stored.clone());
        let change = Change {
            rv: self.rv,
            cluster: data.name.clone(),
            shard: data.shard,
            resource: gr.clone(),
            namespace: namespace.into(),
            name: name.into(),
            kind: if previous.is_some() {
                ChangeKind::Modified
            } else {
                ChangeKind::Added
            },
            object: stored.clone(),
            previous,
        };
        self.publish(change);
        Ok(stored)
    }

    /// Removes an object and publishes its deletion. The object in the DELETED event carries a
    /// new resourceVersion, as the real server's does.
    pub fn remove(
        &mut self,
        cluster: &str,
        gr: &GroupResource,
        namespace: &str,
        name: &str,
    ) -> ApiResult<Option<Arc<Stored>>> {
        let Some(data) = self.clusters.get_mut(cluster) else {
            return Ok(None);
        };
        let Some(previous) = data
            .objects
            .get_mut(gr)
            .and_then(|m| m.remove(&object_key(namespace, name)))
        else {
            return Ok(None);
        };
        let cluster_name = data.name.clone();
        let shard = data.shard;
        let rv = self.rv + 1;
        let mut last = previous.value()?;
        if let Some(meta) = last.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        let mut stored = Stored::encode(&last, rv)?;
        stored.audience = previous.audience.clone();
        let stored = Arc::new(stored);
        self.rv = rv;
        self.publish(Change {
            rv,
            cluster: cluster_name,
            shard,
            resource: gr.clone(),
            namespace: namespace.into(),
            name: name.into(),
            kind: ChangeKind::Deleted,
            object: stored.clone(),
            previous: Some(previous),
        });
        Ok(Some(stored))
    }

    fn publish(&mut self, change: Change) {
        let change = Arc::new(change);
        if self.history.len() == self.history_limit
            && let Some(dropped) = self.history.pop_front()
        {
            self.oldest_watchable = dropped.rv;
        }
        self.history.push_back(change.clone());
        // No receivers is fine: nobody is watching.
        let _ = self.events.send(change);
    }

    /// Starts a watch from `rv`: the changes after it that are still in the history, and a
    /// receiver for every later one. `410 Gone` when `rv` is older than the history.
    pub fn watch_from(&self, rv: u64) -> ApiResult<(Vec<Arc<Change>>, ChangeReceiver)> {
        Ok((self.changes_after(rv)?, self.events.subscribe()))
    }

    /// The changes after `rv`, oldest first. `410 Gone` when `rv` is older than the history.
    pub fn changes_after(&self, rv: u64) -> ApiResult<Vec<Arc<Change>>> {
        if rv < self.oldest_watchable {
            return Err(ApiError::gone(format!(
                "too old resource version: {rv} ({})",
                self.oldest_watchable
            )));
        }
        Ok(self.history.iter().filter(|c| c.rv > rv).cloned().collect())
    }

    /// A receiver for every change after now.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
        self.events.subscribe()
    }

    /// The oldest resourceVersion a watch can start from.
    pub fn oldest_watchable(&self) -> u64 {
        self.oldest_watchable
    }

    /// Forgets the history, so that every watch from an older resourceVersion gets 410 Gone.
    pub fn compact(&mut self) {
        self.history.clear();
        self.oldest_watchable = self.rv;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn state() -> State {
        let mut s = State::new(Flavor::Kubernetes, 3, 64);
        s.add_cluster("c", "");
        s
    }

    fn put(s: &mut State, name: &str) -> u64 {
        let rv = s.next_rv();
        let obj = json!({"metadata": {"name": name, "resourceVersion": rv.to_string()}});
        let gr = GroupResource::new("", "configmaps");
        s.put("c", &gr, "default", name, Stored::encode(&obj, rv).unwrap())
            .unwrap()
            .rv
    }

    #[test]
    fn every_write_takes_the_next_global_resource_version() {
        let mut s = state();
        let a = put(&mut s, "a");
        let b = put(&mut s, "b");
        assert_eq!(b, a + 1);
    }

    #[test]
    fn a_watch_older_than_the_history_is_gone() {
        let mut s = state();
        let first = put(&mut s, "a");
        for n in ["b", "c", "d", "e"] {
            put(&mut s, n);
        }
        let err = s.watch_from(first).unwrap_err();
        assert_eq!(err.code, 410);
    }

    #[test]
    fn a_watch_replays_the_changes_after_its_version() {
        let mut s = state();
        let first = put(&mut s, "a");
        put(&mut s, "b");
        let (replay, _) = s.watch_from(first).unwrap();
        assert_eq!(replay.len(), 1);
        assert_eq!(&*replay[0].name, "b");
    }

    #[test]
    fn removal_publishes_the_object_with_a_new_resource_version() {
        let mut s = state();
        let rv = put(&mut s, "a");
        let gr = GroupResource::new("", "configmaps");
        let removed = s.remove("c", &gr, "default", "a").unwrap().unwrap();
        assert_eq!(removed.rv, rv + 1);
        assert_eq!(
            removed.value().unwrap()["metadata"]["resourceVersion"],
            json!((rv + 1).to_string())
        );
    }
}
