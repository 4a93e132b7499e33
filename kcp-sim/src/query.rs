//! Reading many objects: which clusters a request sees (one, all, the ones an initializer
//! still initializes, or the consumers of an APIExport), LIST with selectors and pagination, and
//! the filter a WATCH applies to the change stream.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use serde_json::Value;

use crate::apiexport as kcp_apis;
use crate::continue_token::ContinueToken;
use crate::kcp;
use crate::resource::{GroupResource, ResourceType};
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::{ApiError, ApiResult};
use crate::store::{Change, ChangeKind, State, Stored};

/// The clusters a request sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterScope {
    /// One logical cluster (by name).
    One(String),
    /// Every logical cluster: `/clusters/*`.
    All,
    /// Every logical cluster a lifecycle view shows:
    /// `/services/initializingworkspaces/<initializer>/clusters/*` or
    /// `/services/terminatingworkspaces/<terminator>/clusters/*`.
    Lifecycle {
        /// The view.
        view: kcp::LifecycleView,
        /// Only clusters of this shard (the shard whose URL was called); `None` for all.
        shard: Option<usize>,
    },
    /// Every consumer of an APIExport: `/services/apiexport/<cluster>/<export>/clusters/*`
    /// (which objects it sees is a [`Visibility`]).
    Export {
        /// Only clusters of this shard (the shard whose URL was called); `None` for all.
        shard: Option<usize>,
    },
}

impl ClusterScope {
    fn includes_cluster(&self, cluster: &str, cluster_shard: usize) -> bool {
        match self {
            ClusterScope::One(c) => c == cluster,
            ClusterScope::All => true,
            ClusterScope::Lifecycle { shard, .. } | ClusterScope::Export { shard } => {
                shard.is_none_or(|s| s == cluster_shard)
            }
        }
    }
}

/// Which objects an apiexport virtual workspace sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Visibility {
    /// Objects whose [`Stored::audience`] holds this virtual workspace key (bound resources and
    /// resources of accepted permission claims).
    Audience(Arc<str>),
    /// Objects of a claimed resource: in the audience `key` and carrying the export's claim label
    /// with the claim's value (which the claim's selector decides), as kcp's view selects them.
    Claimed {
        /// The virtual workspace key.
        key: Arc<str>,
        /// The claim label's key.
        label: Arc<str>,
        /// The claim label's value.
        value: Arc<str>,
    },
    /// APIBindings of this APIExport (by logical cluster name and export name).
    BindingsOf {
        /// Logical cluster of the APIExport.
        cluster: String,
        /// Name of the APIExport.
        name: String,
    },
}

impl Visibility {
    fn sees(&self, obj: &Stored, value: Option<&Value>) -> bool {
        match self {
            Visibility::Audience(key) => obj.seen_by(key),
            Visibility::Claimed {
                key,
                label,
                value: wanted,
            } => {
                let labelled = value
                    .and_then(|v| v.pointer("/metadata/labels"))
                    .and_then(|l| l.get(&**label))
                    .and_then(Value::as_str);
                obj.seen_by(key) && labelled == Some(&**wanted)
            }
            Visibility::BindingsOf { cluster, name } => {
                value.is_some_and(|v| kcp_apis::binds_export(v, cluster, name))
            }
        }
    }
}

/// The fields kube-apiserver's field label conversion of a kind knows besides `metadata.name`
/// and `metadata.namespace` (`None`: the default conversion, which knows only those two).
fn typed_field_labels(rt: &ResourceType) -> Option<&'static [&'static str]> {
    Some(match (rt.group.as_str(), rt.kind.as_str()) {
        ("", "Namespace") => &["metadata.name", "status.phase"],
        ("", "Node") => &["metadata.name", "spec.unschedulable"],
        ("", "Pod") => &[
            "metadata.name",
            "metadata.namespace",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
        ],
        ("", "Secret") => &["metadata.name", "metadata.namespace", "type"],
        ("", "Service") => &[
            "metadata.name",
            "metadata.namespace",
            "spec.clusterIP",
            "spec.type",
        ],
        ("", "Event") => &[
            "metadata.name",
            "metadata.namespace",
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        ("events.k8s.io", "Event") => &[
            "metadata.name",
            "metadata.namespace",
            "reason",
            "regarding.kind",
            "regarding.namespace",
            "regarding.name",
            "regarding.uid",
            "regarding.apiVersion",
            "regarding.resourceVersion",
            "regarding.fieldPath",
            "reportingController",
            "type",
        ],
        _ => return None,
    })
}

/// Refuses a field selector on a field the kind cannot be selected by, with kube-apiserver's
/// `400`: its own kinds know the fields of their field label conversion, custom resources
/// `metadata.name`, `metadata.namespace` (when namespaced) and their CRD version's
/// `selectableFields` (`selectable`, as `spec.color`).
pub fn check_field_selector(
    rt: &ResourceType,
    selectable: &[String],
    fields: &FieldSelector,
) -> ApiResult<()> {
    for field in fields.fields() {
        let refused = if rt.is_typed() {
            match typed_field_labels(rt) {
                Some(known) => (!known.contains(&field))
                    .then(|| format!("field label not supported: {field}")),
                None => (!matches!(field, "metadata.name" | "metadata.namespace")).then(|| {
                    format!(
                        "{field:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
                    )
                }),
            }
        } else {
            let known = field == "metadata.name"
                || (rt.namespaced && field == "metadata.namespace")
                || selectable.iter().any(|s| s == field);
            (!known).then(|| format!("field label not supported: {field}"))
        };
        if let Some(message) = refused {
            return Err(ApiError::bad_request(message));
        }
    }
    Ok(())
}

/// The filters of a LIST or WATCH.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only objects in this namespace.
    pub namespace: Option<String>,
    /// `labelSelector`.
    pub labels: Option<LabelSelector>,
    /// `fieldSelector`.
    pub fields: Option<FieldSelector>,
    /// Only the LogicalClusters a lifecycle view shows.
    pub lifecycle: Option<kcp::LifecycleView>,
    /// Only what an apiexport virtual workspace sees.
    pub visibility: Option<Visibility>,
    /// Whether the field selector reads a core Event's computed field labels
    /// ([`crate::event_apis::selectable`]).
    pub event_fields: bool,
}

impl Filter {
    fn needs_body(&self) -> bool {
        self.labels.as_ref().is_some_and(|l| !l.is_empty())
            || self.fields.is_some()
            || self.lifecycle.is_some()
            || matches!(
                self.visibility,
                Some(Visibility::BindingsOf { .. } | Visibility::Claimed { .. })
            )
    }

    /// Whether neither a label nor a field selector is given (kube's empty predicate).
    fn selector_is_empty(&self) -> bool {
        self.labels.as_ref().is_none_or(|l| l.is_empty()) && self.fields.is_none()
    }

    /// Whether the filter can drop objects at all.
    fn selective(&self) -> bool {
        self.needs_body() || self.visibility.is_some()
    }

    /// Whether an object passes the filter (the namespace is checked by the caller).
    pub fn matches(&self, obj: &Stored) -> bool {
        if !self.needs_body() {
            return self.visibility.as_ref().is_none_or(|v| v.sees(obj, None));
        }
        let Ok(value) = serde_json::from_slice::<Value>(&obj.json) else {
            return false;
        };
        self.visibility
            .as_ref()
            .is_none_or(|v| v.sees(obj, Some(&value)))
            && self.matches_value(&value)
    }

    fn matches_value(&self, value: &Value) -> bool {
        if let Some(labels) = &self.labels
            && !labels.matches_object(value)
        {
            return false;
        }
        if let Some(fields) = &self.fields {
            let matched = if self.event_fields {
                fields.matches_object(&crate::event_apis::selectable(value))
            } else {
                fields.matches_object(value)
            };
            if !matched {
                return false;
            }
        }
        if let Some(view) = &self.lifecycle
            && !view.sees(value)
        {
            return false;
        }
        true
    }
}

/// One page of a LIST.
#[derive(Debug)]
pub struct Page {
    /// The objects, in storage order (cluster, namespace, name).
    pub items: Vec<Arc<Stored>>,
    /// The resourceVersion of the list.
    pub resource_version: u64,
    /// The token of the next page.
    pub continue_token: Option<String>,
    /// How many matching objects are left after this page.
    pub remaining: Option<u64>,
}

fn encode_token(rv: u64, cluster: &str, key: &str) -> String {
    ContinueToken {
        revision: Some(rv),
        cluster: cluster.to_string(),
        key: key.to_string(),
    }
    .encode()
}

/// A request's `resourceVersion` as kube-apiserver's versioner reads it: empty and `0` are 0,
/// anything else a decimal `u64`. The error is Go's field error, e.g. `resourceVersion: Invalid
/// value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`.
pub fn parse_resource_version(rv: &str) -> Result<u64, String> {
    if rv.is_empty() {
        return Ok(0);
    }
    rv.parse::<u64>().map_err(|e| {
        let why = match e.kind() {
            std::num::IntErrorKind::PosOverflow => "value out of range",
            _ => "invalid syntax",
        };
        let quoted = serde_json::to_string(rv).unwrap_or_default();
        format!(
            "resourceVersion: Invalid value: {quoted}: strconv.ParseUint: parsing {quoted}: {why}"
        )
    })
}

/// kube-apiserver's answer to an exact list at a revision etcd no longer holds.
const LIST_EXPIRED: &str = "The resourceVersion for the provided list is too old.";

/// kube-apiserver's answer to a continue token whose revision etcd no longer holds; the answer
/// carries a token that continues at the latest revision instead.
const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a \
     consistent list result. You can start a new list without the continue parameter, or use \
     the continue token in this response to retrieve the remainder of the results. Continuing \
     with the provided token results in an inconsistent list - objects that were created, \
     modified, or deleted between the time the first chunk was returned and now may show up in \
     the list.";

/// Lists the objects of a resource that `scope` and `filter` select, one page at a time. The
/// pages after the first are read as the objects were at the first page's revision (the
/// continue token's), as kube-apiserver reads them from etcd: what was written between two
/// pages does not show. A token whose revision the history no longer reaches is `410 Expired`,
/// with a token that continues at the latest revision in the answer; a token without a revision
/// reads the latest.
pub fn list(
    state: &State,
    scope: &ClusterScope,
    gr: &GroupResource,
    filter: &Filter,
    limit: Option<usize>,
    continue_token: Option<&str>,
) -> ApiResult<Page> {
    let namespace = filter.namespace.as_deref();
    let Some(token) = continue_token.map(ContinueToken::decode).transpose()? else {
        let entries = current_entries(state, scope, gr, namespace, None);
        return Ok(page(entries, filter, limit, state.rv));
    };
    let after = (token.cluster.as_str(), token.key.as_str());
    match token.revision {
        Some(rv) if rv < state.rv => {
            let snapshot = snapshot_at(state, scope, gr, rv).map_err(|_| {
                let mut expired = ApiError::gone(CONTINUE_EXPIRED);
                expired.continue_token = Some(
                    ContinueToken {
                        revision: None,
                        ..token.clone()
                    }
                    .encode(),
                );
                expired
            })?;
            let entries = snapshot_entries(&snapshot, namespace, Some(after));
            Ok(page(entries, filter, limit, rv))
        }
        revision => {
            let entries = current_entries(state, scope, gr, namespace, Some(after));
            Ok(page(entries, filter, limit, revision.unwrap_or(state.rv)))
        }
    }
}

/// Lists the objects of a resource as they were at resourceVersion `rv`
/// (`resourceVersionMatch=Exact`). `410 Expired` when the history no longer reaches back to
/// `rv`.
pub fn list_at(
    state: &State,
    scope: &ClusterScope,
    gr: &GroupResource,
    filter: &Filter,
    limit: Option<usize>,
    rv: u64,
) -> ApiResult<Page> {
    let snapshot = snapshot_at(state, scope, gr, rv).map_err(|_| ApiError::gone(LIST_EXPIRED))?;
    let entries = snapshot_entries(&snapshot, filter.namespace.as_deref(), None);
    Ok(page(entries, filter, limit, rv))
}

/// One object of a list: its logical cluster, storage key and value.
type Entry<'a> = (&'a str, &'a str, &'a Arc<Stored>);

/// The objects of a resource as they were at `rv`, by logical cluster and storage key: the
/// current objects with the later changes of the history undone.
fn snapshot_at(
    state: &State,
    scope: &ClusterScope,
    gr: &GroupResource,
    rv: u64,
) -> ApiResult<BTreeMap<(String, String), Arc<Stored>>> {
    let changes = state.changes_after(rv)?;
    let mut snapshot = BTreeMap::new();
    for (cluster_name, cluster) in &state.clusters {
        if !scope.includes_cluster(cluster_name, cluster.shard) {
            continue;
        }
        for (key, obj) in cluster.objects.get(gr).into_iter().flatten() {
            snapshot.insert((cluster_name.clone(), key.clone()), obj.clone());
        }
    }
    for change in changes.iter().rev() {
        if &change.resource != gr || !scope.includes_cluster(&change.cluster, change.shard) {
            continue;
        }
        let key = (
            change.cluster.to_string(),
            format!("{}/{}", change.namespace, change.name),
        );
        match &change.previous {
            Some(previous) => snapshot.insert(key, previous.clone()),
            None => snapshot.remove(&key),
        };
    }
    Ok(snapshot)
}

/// A snapshot's objects in `namespace` (all when `None`), in storage order, after `after`.
fn snapshot_entries<'a>(
    snapshot: &'a BTreeMap<(String, String), Arc<Stored>>,
    namespace: Option<&'a str>,
    after: Option<(&str, &str)>,
) -> impl Iterator<Item = Entry<'a>> {
    let lower = match after {
        Some((cluster, key)) => Bound::Excluded((cluster.to_owned(), key.to_owned())),
        None => Bound::Unbounded,
    };
    snapshot
        .range((lower, Bound::Unbounded))
        .filter(move |((_, key), _)| in_namespace(key, namespace))
        .map(|((cluster, key), obj)| (cluster.as_str(), key.as_str(), obj))
}

/// The current objects of a resource in `scope` and `namespace` (all when `None`), in storage
/// order, after `after`.
fn current_entries<'a>(
    state: &'a State,
    scope: &'a ClusterScope,
    gr: &'a GroupResource,
    namespace: Option<&'a str>,
    after: Option<(&'a str, &'a str)>,
) -> impl Iterator<Item = Entry<'a>> {
    state
        .clusters
        .iter()
        .filter(move |(name, cluster)| {
            scope.includes_cluster(name, cluster.shard)
                && after.is_none_or(|(from, _)| name.as_str() >= from)
        })
        .filter_map(move |(name, cluster)| cluster.objects.get(gr).map(|objects| (name, objects)))
        .flat_map(move |(name, objects)| {
            let lower = match (after, namespace) {
                (Some((from, key)), _) if from == name.as_str() => Bound::Excluded(key.to_owned()),
                (_, Some(ns)) => Bound::Included(format!("{ns}/")),
                _ => Bound::Unbounded,
            };
            objects
                .range::<String, _>((lower, Bound::Unbounded))
                .take_while(move |(key, _)| in_namespace(key, namespace))
                .map(move |(key, obj)| (name.as_str(), key.as_str(), obj))
        })
}

/// Whether a storage key (`<namespace>/<name>`, `/<name>` for a cluster-scoped object) is in
/// `namespace` (every key is when `None`).
fn in_namespace(key: &str, namespace: Option<&str>) -> bool {
    namespace.is_none_or(|ns| {
        key.strip_prefix(ns)
            .is_some_and(|rest| rest.starts_with('/'))
    })
}

/// The page of `entries` that `filter` selects, at most `limit` objects (all when `None` or
/// 0), read at `rv`, as kube-apiserver reads a page from etcd: a full page continues after its
/// last object whenever any object follows it, selected or not (so a selective list may end
/// with an empty page), and says how many objects remain only when no label or field selector
/// is given (kube counts etcd's keys, so it cannot count what a selector would keep).
fn page<'a>(
    entries: impl Iterator<Item = Entry<'a>>,
    filter: &Filter,
    limit: Option<usize>,
    rv: u64,
) -> Page {
    let limit = limit.filter(|l| *l > 0);
    let mut entries = entries.peekable();
    let mut items = Vec::new();
    let mut last = None;
    while let Some((cluster, key, obj)) = entries.next_if(|_| limit.is_none_or(|l| items.len() < l))
    {
        if filter.matches(obj) {
            items.push(obj.clone());
            last = Some((cluster, key));
        }
    }
    let continue_token = match last {
        Some((cluster, key)) if entries.peek().is_some() => Some(encode_token(rv, cluster, key)),
        _ => None,
    };
    let remaining = match continue_token {
        None => None,
        Some(_) if !filter.selective() => Some(entries.count() as u64),
        // A virtual workspace's own filter: what it would show.
        Some(_) if filter.selector_is_empty() => {
            Some(entries.filter(|(_, _, obj)| filter.matches(obj)).count() as u64)
        }
        Some(_) => None,
    };
    Page {
        items,
        resource_version: rv,
        remaining,
        continue_token,
    }
}

/// The filter of one watch over the change stream.
#[derive(Debug, Clone)]
pub struct WatchFilter {
    /// Clusters watched.
    pub scope: ClusterScope,
    /// Resource watched.
    pub resource: GroupResource,
    /// Name, namespace, label and initializer filters.
    pub filter: Filter,
}

impl WatchFilter {
    /// What a watcher sees of a change: an event type and object, or nothing. An object that
    /// starts matching is ADDED and one that stops matching is DELETED, as with the real server.
    pub fn view(&self, change: &Change) -> Option<(ChangeKind, Arc<Stored>)> {
        if change.resource != self.resource
            || !self.scope.includes_cluster(&change.cluster, change.shard)
        {
            return None;
        }
        if let Some(ns) = &self.filter.namespace
            && &*change.namespace != ns.as_str()
        {
            return None;
        }
        let now = self.filter.matches(&change.object);
        if !self.filter.selective() {
            return Some((change.kind, change.object.clone()));
        }
        let before = change
            .previous
            .as_ref()
            .is_some_and(|p| self.filter.matches(p));
        let kind = match (change.kind, before, now) {
            (ChangeKind::Deleted, true, _) => ChangeKind::Deleted,
            (ChangeKind::Deleted, false, _) => return None,
            (_, false, true) => ChangeKind::Added,
            (_, true, true) => ChangeKind::Modified,
            (_, true, false) => {
                let previous = change.previous.as_ref()?;
                return Some((ChangeKind::Deleted, left_at(previous, change.rv)));
            }
            (_, false, false) => return None,
        };
        Some((kind, change.object.clone()))
    }
}

/// What a watcher whose filter an object left sees in the `DELETED` event: the object as it was
/// before the change, at the change's resourceVersion (as kube-apiserver's watch cache sends it).
fn left_at(previous: &Arc<Stored>, rv: u64) -> Arc<Stored> {
    let Ok(mut value) = previous.value() else {
        return previous.clone();
    };
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
    }
    match Stored::encode(&value, rv) {
        Ok(mut stored) => {
            stored.audience = previous.audience.clone();
            Arc::new(stored)
        }
        Err(_) => previous.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::Flavor;
    use serde_json::json;

    fn state_with(names: &[&str]) -> State {
        let mut s = State::new(Flavor::Kubernetes, 100, 64);
        s.add_cluster("c", "");
        let gr = GroupResource::new("", "configmaps");
        for n in names {
            let rv = s.next_rv();
            let obj = json!({"metadata": {"name": n, "namespace": "default",
                "labels": {"app": if n.starts_with('a') { "a" } else { "b" }}}});
            s.put("c", &gr, "default", n, Stored::encode(&obj, rv).unwrap())
                .unwrap();
        }
        s
    }

    fn names(page: &Page) -> Vec<String> {
        page.items
            .iter()
            .map(|o| {
                o.value().unwrap()["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn pages_continue_where_the_previous_one_ended() {
        let s = state_with(&["a1", "a2", "b1", "b2", "b3"]);
        let gr = GroupResource::new("", "configmaps");
        let scope = ClusterScope::One("c".into());
        let first = list(&s, &scope, &gr, &Filter::default(), Some(2), None).unwrap();
        assert_eq!(names(&first), ["a1", "a2"]);
        assert_eq!(first.remaining, Some(3));
        let token = first.continue_token.unwrap();
        let second = list(&s, &scope, &gr, &Filter::default(), Some(2), Some(&token)).unwrap();
        assert_eq!(names(&second), ["b1", "b2"]);
        let third = list(
            &s,
            &scope,
            &gr,
            &Filter::default(),
            Some(2),
            second.continue_token.as_deref(),
        )
        .unwrap();
        assert_eq!(names(&third), ["b3"]);
        assert!(third.continue_token.is_none());
    }

    #[test]
    fn label_selectors_filter_lists() {
        let s = state_with(&["a1", "b1", "a2"]);
        let gr = GroupResource::new("", "configmaps");
        let filter = Filter {
            labels: Some(LabelSelector::parse("app=a").unwrap()),
            ..Filter::default()
        };
        let page = list(&s, &ClusterScope::One("c".into()), &gr, &filter, None, None).unwrap();
        assert_eq!(names(&page), ["a1", "a2"]);
    }

    #[test]
    fn a_garbled_continue_token_is_a_bad_request() {
        let s = state_with(&["a1"]);
        let gr = GroupResource::new("", "configmaps");
        let err = list(
            &s,
            &ClusterScope::All,
            &gr,
            &Filter::default(),
            None,
            Some("zz"),
        )
        .unwrap_err();
        assert_eq!(err.code, 400);
    }
}
