//! Specification of the runtime's writes on their own, against an in-memory server that
//! enforces resourceVersion preconditions: the status writer (nothing sent when unchanged, a
//! conflict retried on the fresh object without undoing another writer), the Event recorder's
//! aggregation, the finalizer helpers on typed objects, and the single-cluster [`Harness`]
//! (metrics labels, the Warning Event of a permanent failure).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace};
use kcp_core::kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kcp_core::runtime::{
    Classify, ControllerMetrics, EventRecorder, EventType, Harness, Outcome, ReconcileResult,
    StatusWrite, add_finalizer, remove_finalizer, write_status,
};
use kcp_core::typed::{from_dynamic, object_ref_for, to_dynamic};
use kcp_core::{
    DeleteOptions, DeleteOutcome, Error, ListOptions, ObjectClient, ObjectList, ObjectPatch,
    ObjectRef, PatchOptions, ResourceInfo, Result, Subresource,
};
use serde_json::json;

type Key = (String, Option<String>, String);

/// Another writer that changes an object between our read and our write.
type Interloper = Box<dyn FnOnce(&mut DynamicObject) + Send>;

#[derive(Default)]
struct State {
    objects: BTreeMap<Key, DynamicObject>,
    resource_version: u64,
    replaces: Vec<String>,
    interloper: Option<Interloper>,
}

/// Keeps objects by kind, namespace and name; every write needs the stored resourceVersion
/// and bumps it; a status replace changes only the status, a main replace everything else.
#[derive(Default)]
struct Server {
    state: Mutex<State>,
}

fn key(r: &ObjectRef) -> Key {
    (r.gvk.kind.clone(), r.namespace.clone(), r.name.clone())
}

fn api_error(verb: &'static str, target: &ObjectRef, code: u16, reason: &str) -> Error {
    Error::Api {
        verb,
        object: target.to_string(),
        code,
        reason: reason.into(),
        message: format!("{reason} in the test server"),
    }
}

impl Server {
    fn put(&self, mut obj: DynamicObject) {
        let mut state = self.state.lock().unwrap();
        state.resource_version += 1;
        obj.metadata.resource_version = Some(state.resource_version.to_string());
        let target = ObjectRef::from_object(&obj).unwrap();
        state.objects.insert(key(&target), obj);
    }

    fn stored(&self, target: &ObjectRef) -> Option<DynamicObject> {
        self.state
            .lock()
            .unwrap()
            .objects
            .get(&key(target))
            .cloned()
    }

    fn replaces(&self) -> Vec<String> {
        self.state.lock().unwrap().replaces.clone()
    }

    /// The next write of any object is preceded by `change` made by someone else.
    fn interlope(&self, change: impl FnOnce(&mut DynamicObject) + Send + 'static) {
        self.state.lock().unwrap().interloper = Some(Box::new(change));
    }

    fn objects_of(&self, kind: &str) -> Vec<DynamicObject> {
        let state = self.state.lock().unwrap();
        state
            .objects
            .iter()
            .filter(|(k, _)| k.0 == kind)
            .map(|(_, o)| o.clone())
            .collect()
    }
}

#[async_trait]
impl ObjectClient for Server {
    async fn resolve(&self, gvk: &GroupVersionKind) -> Result<ResourceInfo> {
        Ok(ResourceInfo {
            resource: ApiResource::from_gvk(gvk),
            namespaced: gvk.kind != "Namespace",
            subresources: vec!["status".into()],
        })
    }

    async fn get(&self, target: &ObjectRef) -> Result<Option<DynamicObject>> {
        Ok(self.stored(target))
    }

    async fn list(
        &self,
        _: &GroupVersionKind,
        _: Option<&str>,
        _: &ListOptions,
    ) -> Result<ObjectList> {
        Ok(ObjectList::default())
    }

    async fn create(&self, obj: &DynamicObject) -> Result<DynamicObject> {
        let target = ObjectRef::from_object(obj)?;
        if self.stored(&target).is_some() {
            return Err(api_error("create", &target, 409, "AlreadyExists"));
        }
        self.put(obj.clone());
        Ok(self.stored(&target).unwrap())
    }

    async fn replace(
        &self,
        obj: &DynamicObject,
        subresource: Subresource,
    ) -> Result<DynamicObject> {
        let target = ObjectRef::from_object(obj)?;
        let mut state = self.state.lock().unwrap();
        let part = match subresource {
            Subresource::Main => "main",
            Subresource::Status => "status",
        };
        state.replaces.push(format!("{part} {}", target.name));
        if let Some(change) = state.interloper.take()
            && let Some(stored) = state.objects.get_mut(&key(&target))
        {
            change(stored);
            state.resource_version += 1;
            let rv = state.resource_version.to_string();
            if let Some(stored) = state.objects.get_mut(&key(&target)) {
                stored.metadata.resource_version = Some(rv);
            }
        }
        let Some(stored) = state.objects.get(&key(&target)).cloned() else {
            return Err(api_error("update", &target, 404, "NotFound"));
        };
        if obj.metadata.resource_version != stored.metadata.resource_version {
            return Err(api_error("update", &target, 409, "Conflict"));
        }
        let mut written = stored;
        if subresource == Subresource::Status {
            written.data["status"] = obj.data["status"].clone();
        } else {
            let status = written.data.get("status").cloned();
            written.data = obj.data.clone();
            if let Some(status) = status {
                written.data["status"] = status;
            }
            written.metadata = obj.metadata.clone();
        }
        state.resource_version += 1;
        written.metadata.resource_version = Some(state.resource_version.to_string());
        state.objects.insert(key(&target), written.clone());
        Ok(written)
    }

    async fn patch(
        &self,
        target: &ObjectRef,
        _: Subresource,
        _: &ObjectPatch,
        _: &PatchOptions,
    ) -> Result<DynamicObject> {
        Err(api_error("patch", target, 405, "MethodNotAllowed"))
    }

    async fn delete(&self, target: &ObjectRef, _: &DeleteOptions) -> Result<DeleteOutcome> {
        Err(api_error("delete", target, 405, "MethodNotAllowed"))
    }
}

fn namespace_with_phase(name: &str, phase: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name},
        "status": {"phase": phase},
    }))
    .unwrap()
}

fn config_map(finalizers: &[&str]) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("settings".into());
    cm.metadata.namespace = Some("team".into());
    cm.metadata.finalizers = Some(finalizers.iter().map(|f| f.to_string()).collect());
    cm
}

/// The ConfigMap as the server holds it (with its resourceVersion).
fn stored_config_map(server: &Server, finalizers: &[&str]) -> ConfigMap {
    server.put(to_dynamic(&config_map(finalizers)).unwrap());
    read_config_map(server)
}

fn read_config_map(server: &Server) -> ConfigMap {
    let stored = server.stored(&object_ref_for::<ConfigMap>(Some("team"), "settings"));
    from_dynamic(stored.unwrap()).unwrap()
}

fn finalizers(cm: &ConfigMap) -> Vec<String> {
    cm.metadata.finalizers.clone().unwrap_or_default()
}

fn set_phase(phase: &'static str) -> impl Fn(&mut Namespace) + Send + Sync {
    move |ns| ns.status.get_or_insert_with(Default::default).phase = Some(phase.into())
}

#[tokio::test]
async fn a_status_already_as_wanted_is_not_written() {
    let server = Server::default();
    server.put(namespace_with_phase("team", "Active"));
    let written = write_status::<Namespace, _>(&server, None, "team", set_phase("Active"))
        .await
        .unwrap();
    assert!(matches!(written, StatusWrite::Unchanged(_)));
    assert_eq!(server.replaces(), Vec::<String>::new());
}

#[tokio::test]
async fn a_changed_status_is_written_to_the_status_subresource() {
    let server = Server::default();
    server.put(namespace_with_phase("team", "Active"));
    let written = write_status::<Namespace, _>(&server, None, "team", set_phase("Terminating"))
        .await
        .unwrap();
    let StatusWrite::Written(ns) = written else {
        panic!("expected a write, got {written:?}")
    };
    assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Terminating"));
    assert_eq!(server.replaces(), vec!["status team".to_string()]);
}

#[tokio::test]
async fn a_status_conflict_is_retried_on_the_fresh_object_keeping_the_other_writers_field() {
    let server = Server::default();
    server.put(namespace_with_phase("team", "Active"));
    let theirs = json!([{"type": "WrittenBySomeoneElse", "status": "True"}]);
    let condition = theirs.clone();
    server.interlope(move |ns| ns.data["status"]["conditions"] = condition);
    let written = write_status::<Namespace, _>(&server, None, "team", set_phase("Terminating"))
        .await
        .unwrap();
    assert!(matches!(written, StatusWrite::Written(_)));
    let stored = server
        .stored(&object_ref_for::<Namespace>(None, "team"))
        .unwrap();
    assert_eq!(
        stored.data["status"],
        json!({"phase": "Terminating", "conditions": theirs})
    );
    assert_eq!(server.replaces().len(), 2, "one conflict, one write");
}

#[tokio::test]
async fn the_status_of_an_object_that_does_not_exist_is_gone() {
    let written =
        write_status::<Namespace, _>(&Server::default(), None, "nowhere", set_phase("Active"))
            .await
            .unwrap();
    assert!(matches!(written, StatusWrite::Gone));
}

fn regarding() -> k8s_openapi::api::core::v1::ObjectReference {
    k8s_openapi::api::core::v1::ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("ConfigMap".into()),
        namespace: Some("team".into()),
        name: Some("settings".into()),
        uid: Some("uid-1".into()),
        ..Default::default()
    }
}

fn events(server: &Server) -> Vec<Event> {
    server
        .objects_of("Event")
        .into_iter()
        .map(|e| from_dynamic(e).unwrap())
        .collect()
}

#[tokio::test]
async fn the_same_event_recorded_twice_is_one_event_counted_twice() {
    let server = Server::default();
    let recorder = EventRecorder::new("test-controller");
    for _ in 0..2 {
        recorder
            .record(
                &server,
                &regarding(),
                EventType::Warning,
                "Broken",
                "it broke",
            )
            .await
            .unwrap();
    }
    let events = events(&server);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].count, Some(2));
    assert_eq!(events[0].reason.as_deref(), Some("Broken"));
    assert_eq!(events[0].metadata.namespace.as_deref(), Some("team"));
}

#[tokio::test]
async fn an_event_bumped_by_someone_else_meanwhile_is_read_again_and_bumped_once_more() {
    let server = Server::default();
    let recorder = EventRecorder::new("test-controller");
    recorder
        .record(&server, &regarding(), EventType::Normal, "Synced", "done")
        .await
        .unwrap();
    server.interlope(|event| event.data["count"] = 5.into());
    recorder
        .record(&server, &regarding(), EventType::Normal, "Synced", "done")
        .await
        .unwrap();
    assert_eq!(events(&server)[0].count, Some(6));
}

#[tokio::test]
async fn a_different_message_is_a_separate_event() {
    let server = Server::default();
    let recorder = EventRecorder::new("test-controller");
    for message in ["first", "second"] {
        recorder
            .record(&server, &regarding(), EventType::Warning, "Broken", message)
            .await
            .unwrap();
    }
    assert_eq!(events(&server).len(), 2);
}

#[tokio::test]
async fn a_finalizer_is_added_to_a_typed_object_beside_the_others() {
    let server = Server::default();
    let cm = stored_config_map(&server, &["others/keep"]);
    let updated = add_finalizer(&server, &cm, "mine/cleanup").await.unwrap();
    let updated: ConfigMap = updated.expect("the finalizer was added");
    assert_eq!(finalizers(&updated), ["others/keep", "mine/cleanup"]);
    assert_eq!(
        finalizers(&read_config_map(&server)),
        ["others/keep", "mine/cleanup"]
    );
}

#[tokio::test]
async fn adding_a_finalizer_already_there_writes_nothing() {
    let server = Server::default();
    let cm = stored_config_map(&server, &["mine/cleanup"]);
    assert_eq!(
        add_finalizer(&server, &cm, "mine/cleanup").await.unwrap(),
        None
    );
    assert_eq!(server.replaces(), Vec::<String>::new());
}

#[tokio::test]
async fn no_finalizer_is_added_to_an_object_being_deleted() {
    let server = Server::default();
    let mut cm = stored_config_map(&server, &["others/keep"]);
    cm.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
    ));
    assert_eq!(
        add_finalizer(&server, &cm, "mine/cleanup").await.unwrap(),
        None
    );
    assert_eq!(server.replaces(), Vec::<String>::new());
}

#[tokio::test]
async fn removing_a_finalizer_keeps_the_others() {
    let server = Server::default();
    let cm = stored_config_map(&server, &["others/keep", "mine/cleanup"]);
    let updated = remove_finalizer(&server, &cm, "mine/cleanup")
        .await
        .unwrap();
    assert_eq!(finalizers(&updated.unwrap()), ["others/keep"]);
    assert_eq!(finalizers(&read_config_map(&server)), ["others/keep"]);
}

#[tokio::test]
async fn a_finalizer_write_on_a_stale_object_conflicts_and_changes_nothing() {
    let server = Server::default();
    let cm = stored_config_map(&server, &["mine/cleanup"]);
    server.interlope(|cm| {
        cm.metadata.finalizers = Some(vec!["mine/cleanup".into(), "new/one".into()])
    });
    let err = remove_finalizer(&server, &cm, "mine/cleanup")
        .await
        .unwrap_err();
    assert!(err.is_conflict(), "{err}");
    assert_eq!(
        finalizers(&read_config_map(&server)),
        ["mine/cleanup", "new/one"]
    );
}

#[tokio::test]
async fn removing_the_finalizer_of_an_object_already_gone_is_done() {
    let server = Server::default();
    let cm = config_map(&["mine/cleanup"]);
    assert_eq!(
        remove_finalizer(&server, &cm, "mine/cleanup")
            .await
            .unwrap(),
        None
    );
}

/// A reconcile error whose class the test chooses.
#[derive(Debug)]
struct Failure {
    transient: bool,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "settings: spec.value: not a number")
    }
}

impl Classify for Failure {
    fn is_transient(&self) -> bool {
        self.transient
    }
    fn reason(&self) -> &str {
        "InvalidSpec"
    }
}

fn harness(server: &Arc<Server>, metrics: &ControllerMetrics) -> Harness {
    Harness::new("configmap", metrics.clone(), 0)
        .with_warnings(EventRecorder::new("test-controller"), server.clone())
}

#[tokio::test]
async fn a_permanent_failure_records_one_warning_event_with_the_errors_reason_and_message() {
    let server = Arc::new(Server::default());
    let metrics = ControllerMetrics::unregistered();
    let cm = config_map(&[]);
    let result = harness(&server, &metrics)
        .reconcile(&cm, async {
            Err::<Outcome, _>(Failure { transient: false })
        })
        .await;
    assert!(result.is_err());
    let events = events(&server);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].type_.as_deref(), Some("Warning"));
    assert_eq!(events[0].reason.as_deref(), Some("InvalidSpec"));
    assert_eq!(
        events[0].message.as_deref(),
        Some("settings: spec.value: not a number")
    );
    assert_eq!(events[0].involved_object.name.as_deref(), Some("settings"));
    assert_eq!(metrics.reconciles("configmap", ReconcileResult::Error), 1);
}

#[tokio::test]
async fn a_transient_failure_records_no_event_and_backs_off() {
    let server = Arc::new(Server::default());
    let metrics = ControllerMetrics::unregistered();
    let harness = harness(&server, &metrics);
    let cm = config_map(&[]);
    let err = harness
        .reconcile(&cm, async {
            Err::<Outcome, _>(Failure { transient: true })
        })
        .await
        .unwrap_err();
    harness.error_policy(&cm, &err);
    assert!(events(&server).is_empty());
    assert_eq!(harness.errors().failures(&cm), 1);
}

#[tokio::test]
async fn a_requeue_after_is_counted_as_controller_runtime_counts_it_and_resets_the_backoff() {
    let server = Arc::new(Server::default());
    let metrics = ControllerMetrics::unregistered();
    let harness = harness(&server, &metrics);
    let cm = config_map(&[]);
    harness.error_policy(&cm, &Failure { transient: true });
    let delay = std::time::Duration::from_secs(30);
    let action = harness
        .reconcile(&cm, async {
            Ok::<_, Failure>(Outcome::RequeueAfter(delay))
        })
        .await
        .unwrap();
    assert_eq!(action, kube::runtime::controller::Action::requeue(delay));
    assert_eq!(
        metrics.reconciles("configmap", ReconcileResult::RequeueAfter),
        1
    );
    assert_eq!(harness.errors().failures(&cm), 0);
}
