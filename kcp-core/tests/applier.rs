//! Specification of `Applier`: wave order, readiness gates, unchanged detection, error
//! classification, bounded concurrency and reverse-order deletion, against an in-memory fake
//! API server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use kcp_core::apply::{Applier, ApplierConfig, ApplyPlan, Outcome, RuleSet};
use kcp_core::kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kcp_core::{
    DeleteOptions, DeleteOutcome, Error, ListOptions, ObjectClient, ObjectList, ObjectPatch,
    ObjectRef, PatchOptions, ResourceInfo, Result, Subresource,
};
use serde_json::{Value, json};

type Key = (String, String, Option<String>, String);

fn key(r: &ObjectRef) -> Key {
    (
        r.gvk.group.clone(),
        r.gvk.kind.clone(),
        r.namespace.clone(),
        r.name.clone(),
    )
}

#[derive(Default)]
struct FakeState {
    objects: BTreeMap<Key, DynamicObject>,
    resource_version: u64,
    /// GETs of a CRD before it reports Established (`u32::MAX`: never).
    crd_gets_until_established: u32,
    crd_gets: HashMap<String, u32>,
    /// CRDs report `NamesAccepted` but stay `Installing` until an update touches them (as kcp
    /// v0.30.0 leaves a CRD made while it starts); then they are Established.
    crds_installing_until_touched: bool,
    /// CRDs (by name) that a merge patch touched.
    touched: HashSet<String>,
    /// Objects (by name) whose writes fail with this HTTP code.
    failures: HashMap<String, u16>,
    /// Objects (by name) that get a finalizer and disappear after this many GETs once deleted.
    finalizer_gets: HashMap<String, u32>,
    log: Vec<String>,
}

/// Serves builtin kinds plus kinds of applied CRDs that are Established; namespaced writes
/// need their Namespace; Namespaces are Active at once.
#[derive(Default)]
struct FakeServer {
    state: Mutex<FakeState>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    write_delay: Option<Duration>,
}

const BUILTIN: &[(&str, &str)] = &[
    ("", "Namespace"),
    ("", "ConfigMap"),
    ("", "Secret"),
    ("apps", "Deployment"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
];

fn api_error(code: u16, object: &ObjectRef) -> Error {
    Error::Api {
        verb: "apply",
        object: object.to_string(),
        code,
        reason: match code {
            403 => "Forbidden",
            503 => "ServiceUnavailable",
            _ => "Error",
        }
        .into(),
        message: "injected".into(),
    }
}

impl FakeServer {
    fn with(f: impl FnOnce(&mut FakeState)) -> Self {
        let server = FakeServer::default();
        f(&mut server.state.lock().unwrap());
        server
    }

    fn log(&self) -> Vec<String> {
        self.state.lock().unwrap().log.clone()
    }

    /// A merge patch of annotations: logged, applied, and the object counted as touched.
    fn merge(&self, target: &ObjectRef, merge: &Value) -> DynamicObject {
        let mut state = self.state.lock().unwrap();
        let annotations = &merge["metadata"]["annotations"];
        state.log.push(format!("merge {target} {annotations}"));
        state.touched.insert(target.name.clone());
        state.resource_version += 1;
        let version = state.resource_version.to_string();
        let object = state.objects.get_mut(&key(target)).unwrap();
        let mut current = object.metadata.annotations.take().unwrap_or_default();
        for (name, value) in annotations.as_object().unwrap() {
            match value.as_str() {
                Some(v) => current.insert(name.clone(), v.to_string()),
                None => current.remove(name),
            };
        }
        object.metadata.annotations = Some(current).filter(|a| !a.is_empty());
        object.metadata.resource_version = Some(version);
        object.clone()
    }

    fn served(state: &FakeState, gvk: &GroupVersionKind) -> bool {
        BUILTIN.contains(&(gvk.group.as_str(), gvk.kind.as_str()))
            || state.objects.values().any(|crd| {
                crd.data["spec"]["group"] == gvk.group.as_str()
                    && crd.data["spec"]["names"]["kind"] == gvk.kind.as_str()
                    && crd.data["status"]["conditions"][0]["status"] == "True"
            })
    }
}

#[async_trait]
impl ObjectClient for FakeServer {
    async fn resolve(&self, gvk: &GroupVersionKind) -> Result<ResourceInfo> {
        let state = self.state.lock().unwrap();
        if !Self::served(&state, gvk) {
            return Err(Error::KindNotServed { gvk: gvk.clone() });
        }
        Ok(ResourceInfo {
            resource: ApiResource::from_gvk(gvk),
            namespaced: gvk.kind != "Namespace" && gvk.kind != "CustomResourceDefinition",
            subresources: vec![],
        })
    }

    async fn get(&self, target: &ObjectRef) -> Result<Option<DynamicObject>> {
        let mut state = self.state.lock().unwrap();
        let k = key(target);
        if state.crds_installing_until_touched
            && target.gvk.kind == "CustomResourceDefinition"
            && let Some(mut crd) = state.objects.get(&k).cloned()
        {
            let established = state.touched.contains(&target.name);
            crd.data["status"] = json!({"conditions": [
                {"type": "Established", "status": if established { "True" } else { "False" },
                 "reason": if established { "InitialNamesAccepted" } else { "Installing" }},
                {"type": "NamesAccepted", "status": "True"}]});
            state.objects.insert(k.clone(), crd);
        } else if target.gvk.kind == "CustomResourceDefinition" && state.objects.contains_key(&k) {
            let gets = state.crd_gets.entry(target.name.clone()).or_default();
            *gets += 1;
            if *gets >= state.crd_gets_until_established
                && let Some(crd) = state.objects.get_mut(&k)
            {
                crd.data["status"] =
                    json!({"conditions": [{"type": "Established", "status": "True"}]});
            }
        }
        let deleting = state
            .objects
            .get(&k)
            .is_some_and(|o| o.metadata.deletion_timestamp.is_some());
        if deleting && let Some(left) = state.finalizer_gets.get_mut(&target.name) {
            *left = left.saturating_sub(1);
            if *left == 0 {
                state.objects.remove(&k);
            }
        }
        Ok(state.objects.get(&k).cloned())
    }

    async fn list(
        &self,
        _: &GroupVersionKind,
        _: Option<&str>,
        _: &ListOptions,
    ) -> Result<ObjectList> {
        Ok(ObjectList::default())
    }

    async fn create(&self, _: &DynamicObject) -> Result<DynamicObject> {
        unreachable!("the applier only uses server-side apply")
    }

    async fn replace(&self, _: &DynamicObject, _: Subresource) -> Result<DynamicObject> {
        unreachable!("the applier only uses server-side apply")
    }

    async fn patch(
        &self,
        target: &ObjectRef,
        _: Subresource,
        patch: &ObjectPatch,
        options: &PatchOptions,
    ) -> Result<DynamicObject> {
        assert_eq!(options.field_manager.as_deref(), Some("test-manager"));
        if let ObjectPatch::Merge(merge) = patch {
            return Ok(self.merge(target, merge));
        }
        let ObjectPatch::Apply(body) = patch else {
            panic!("expected apply or merge")
        };
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        if let Some(d) = self.write_delay {
            tokio::time::sleep(d).await;
        }
        self.in_flight.fetch_sub(1, Ordering::SeqCst);

        let mut state = self.state.lock().unwrap();
        state.log.push(format!("apply {target}"));
        if let Some(&code) = state.failures.get(&target.name) {
            return Err(api_error(code, target));
        }
        if !Self::served(&state, &target.gvk) {
            return Err(Error::KindNotServed {
                gvk: target.gvk.clone(),
            });
        }
        if let Some(ns) = &target.namespace {
            let ns_key = (String::new(), "Namespace".to_string(), None, ns.clone());
            if !state.objects.contains_key(&ns_key) {
                return Err(Error::NamespaceNotFound {
                    object: target.to_string(),
                    namespace: ns.clone(),
                });
            }
        }
        let mut desired: DynamicObject = serde_json::from_value(body.clone()).unwrap();
        let k = key(target);
        let existing = state.objects.get(&k).cloned();
        let unchanged = existing.as_ref().is_some_and(|e| {
            let mut spec_only = e.data.clone();
            if let Value::Object(m) = &mut spec_only {
                m.remove("status");
            }
            spec_only == desired.data
        });
        if unchanged {
            return Ok(existing.unwrap_or(desired));
        }
        state.resource_version += 1;
        desired.metadata.resource_version = Some(state.resource_version.to_string());
        if let Some(status) = existing.and_then(|e| e.data.get("status").cloned()) {
            desired.data["status"] = status;
        } else if target.gvk.kind == "Namespace" {
            desired.data["status"] = json!({"phase": "Active"});
        }
        state.objects.insert(k, desired.clone());
        Ok(desired)
    }

    async fn delete(&self, target: &ObjectRef, _: &DeleteOptions) -> Result<DeleteOutcome> {
        let mut state = self.state.lock().unwrap();
        state.log.push(format!("delete {target}"));
        let k = key(target);
        if state.finalizer_gets.contains_key(&target.name)
            && let Some(o) = state.objects.get_mut(&k)
        {
            o.metadata.deletion_timestamp =
                Some(serde_json::from_value(json!("2026-11-22T10:00:00Z")).unwrap());
            o.metadata.finalizers = Some(vec!["example.com/cleanup".into()]);
            return Ok(DeleteOutcome::Terminating(Box::new(o.clone())));
        }
        Ok(match state.objects.remove(&k) {
            Some(_) => DeleteOutcome::Deleted,
            None => DeleteOutcome::AlreadyGone,
        })
    }
}

fn obj(v: Value) -> DynamicObject {
    serde_json::from_value(v).unwrap()
}
fn ns(name: &str) -> DynamicObject {
    obj(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}))
}
fn cm(namespace: &str, name: &str) -> DynamicObject {
    obj(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace}, "data": {"k": "v"}}))
}
fn crd() -> DynamicObject {
    obj(
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "names": {"kind": "Widget", "plural": "widgets"}, "scope": "Namespaced"}}),
    )
}
fn widget(namespace: &str, name: &str) -> DynamicObject {
    obj(json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name, "namespace": namespace}, "spec": {"size": 1}}))
}

fn plan(objects: Vec<DynamicObject>) -> ApplyPlan {
    ApplyPlan::build(objects, &RuleSet::default()).unwrap()
}

fn config() -> ApplierConfig {
    ApplierConfig {
        readiness_timeout: Duration::from_secs(5),
        ..ApplierConfig::new("test-manager")
    }
}

fn outcome_names(report: &kcp_core::apply::ApplyReport) -> Vec<(String, String)> {
    report
        .results
        .iter()
        .map(|r| {
            let what = match &r.outcome {
                Outcome::Applied => "applied".to_string(),
                Outcome::Unchanged => "unchanged".to_string(),
                Outcome::Deleted => "deleted".to_string(),
                Outcome::Pending { reason } => format!("pending: {reason}"),
                Outcome::Failed { error } => format!("failed: {error}"),
            };
            (r.object.name.clone(), what)
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn objects_listed_before_their_crd_and_namespace_still_apply() {
    let server = FakeServer::with(|s| s.crd_gets_until_established = 1);
    let p = plan(vec![
        widget("team", "w"),
        cm("team", "c"),
        ns("team"),
        crd(),
    ]);
    let report = Applier::new(&server, config()).apply(&p).await;
    assert!(report.is_complete(), "{:?}", outcome_names(&report));
    assert_eq!(
        server.log(),
        vec![
            "apply v1 Namespace team",
            "apply apiextensions.k8s.io/v1 CustomResourceDefinition widgets.example.com",
            "apply example.com/v1 Widget team/w",
            "apply v1 ConfigMap team/c",
        ]
    );
    assert_eq!(
        report.to_string(),
        "4 applied, 0 unchanged, 0 deleted, 0 pending, 0 failed"
    );
}

#[tokio::test(start_paused = true)]
async fn custom_resources_wait_until_their_crd_is_established() {
    let server = FakeServer::with(|s| s.crd_gets_until_established = 4);
    let p = plan(vec![ns("team"), crd(), widget("team", "w")]);
    let report = Applier::new(&server, config()).apply(&p).await;
    assert!(report.is_complete(), "{:?}", outcome_names(&report));
    let gets = server.state.lock().unwrap().crd_gets["widgets.example.com"];
    assert!(gets >= 4, "the applier polled the CRD {gets} times");
}

#[tokio::test(start_paused = true)]
async fn a_crd_that_never_becomes_established_leaves_its_resources_pending_with_the_reason() {
    let server = FakeServer::with(|s| s.crd_gets_until_established = u32::MAX);
    let p = plan(vec![ns("team"), crd(), widget("team", "w")]);
    let report = Applier::new(&server, config()).apply(&p).await;
    assert!(!report.is_complete() && !report.has_failures());
    let (pending, reason) = report.pending().next().unwrap();
    assert_eq!(pending.object.name, "w");
    assert_eq!(
        reason,
        "waiting for apiextensions.k8s.io/v1 CustomResourceDefinition widgets.example.com: \
         CustomResourceDefinition is not Established after 5s"
    );
    assert!(
        !server.log().iter().any(|l| l.contains("Widget")),
        "the CR was never attempted"
    );
}

#[tokio::test(start_paused = true)]
async fn a_crd_left_installing_is_touched_once_and_its_resources_then_apply() {
    let server = FakeServer::with(|s| s.crds_installing_until_touched = true);
    let config = ApplierConfig {
        establish_nudge_after: Some(Duration::from_secs(2)),
        ..config()
    };
    let p = plan(vec![ns("team"), crd(), widget("team", "w")]);
    let report = Applier::new(&server, config).apply(&p).await;
    assert!(report.is_complete(), "{:?}", outcome_names(&report));
    let touches: Vec<String> = server
        .log()
        .into_iter()
        .filter(|l| l.starts_with("merge"))
        .collect();
    assert_eq!(
        touches,
        [
            "merge apiextensions.k8s.io/v1 CustomResourceDefinition widgets.example.com \
             {\"apply.kcp-rs.io/establish-requested\":\"true\"}",
            "merge apiextensions.k8s.io/v1 CustomResourceDefinition widgets.example.com \
             {\"apply.kcp-rs.io/establish-requested\":null}",
        ]
    );
    let key = (
        "apiextensions.k8s.io".to_string(),
        "CustomResourceDefinition".to_string(),
        None,
        "widgets.example.com".to_string(),
    );
    let crd = server.state.lock().unwrap().objects[&key].clone();
    assert_eq!(
        crd.metadata.annotations, None,
        "the touch leaves nothing behind"
    );
}

#[tokio::test(start_paused = true)]
async fn a_crd_without_accepted_names_is_never_touched() {
    let server = FakeServer::with(|s| s.crd_gets_until_established = u32::MAX);
    let config = ApplierConfig {
        establish_nudge_after: Some(Duration::from_secs(1)),
        ..config()
    };
    let p = plan(vec![ns("team"), crd(), widget("team", "w")]);
    let report = Applier::new(&server, config).apply(&p).await;
    assert!(!report.is_complete());
    assert!(!server.log().iter().any(|l| l.starts_with("merge")));
}

#[tokio::test(start_paused = true)]
async fn applying_the_same_plan_twice_reports_unchanged_objects() {
    let server = FakeServer::with(|s| s.crd_gets_until_established = 1);
    let p = plan(vec![ns("team"), cm("team", "c")]);
    let applier = Applier::new(&server, config());
    assert!(applier.apply(&p).await.is_complete());
    let second = applier.apply(&p).await;
    assert_eq!(
        second.to_string(),
        "0 applied, 2 unchanged, 0 deleted, 0 pending, 0 failed"
    );
}

#[tokio::test(start_paused = true)]
async fn a_permanent_error_fails_the_object_and_holds_back_its_dependents_only() {
    let server = FakeServer::with(|s| {
        s.failures.insert("locked".into(), 403);
    });
    let p = plan(vec![
        ns("locked"),
        cm("locked", "inside"),
        ns("open"),
        cm("open", "fine"),
    ]);
    let report = Applier::new(&server, config()).apply(&p).await;
    let outcomes = outcome_names(&report);
    assert_eq!(
        outcomes,
        vec![
            (
                "locked".into(),
                "failed: apply v1 Namespace locked: 403 Forbidden: injected".into()
            ),
            (
                "inside".into(),
                "pending: waiting for v1 Namespace locked, which failed".into()
            ),
            ("open".into(), "applied".into()),
            ("fine".into(), "applied".into()),
        ]
    );
    assert!(report.has_failures());
}

#[tokio::test(start_paused = true)]
async fn a_transient_error_leaves_the_object_pending_not_failed() {
    let server = FakeServer::with(|s| {
        s.failures.insert("c".into(), 503);
    });
    let p = plan(vec![ns("team"), cm("team", "c")]);
    let report = Applier::new(&server, config()).apply(&p).await;
    assert!(!report.has_failures());
    let (r, reason) = report.pending().next().unwrap();
    assert_eq!(r.object.name, "c");
    assert!(reason.contains("503 ServiceUnavailable"), "{reason}");
}

#[tokio::test(start_paused = true)]
async fn an_unserved_kind_without_a_crd_in_the_plan_is_pending() {
    let server = FakeServer::default();
    let p = plan(vec![ns("team"), widget("team", "w")]);
    let report = Applier::new(&server, config()).apply(&p).await;
    let (_, reason) = report.pending().next().unwrap();
    assert_eq!(
        reason,
        "kind example.com/v1 Widget is not served by the API server"
    );
}

#[tokio::test(start_paused = true)]
async fn writes_inside_a_wave_are_bounded_by_the_concurrency() {
    let server = FakeServer {
        write_delay: Some(Duration::from_millis(10)),
        ..FakeServer::with(|s| {
            s.objects.insert(
                (String::new(), "Namespace".into(), None, "team".into()),
                ns("team"),
            );
        })
    };
    let p = plan((0..20).map(|i| cm("team", &format!("c{i}"))).collect());
    let report = Applier::new(
        &server,
        ApplierConfig {
            concurrency: 3,
            ..config()
        },
    )
    .apply(&p)
    .await;
    assert!(report.is_complete());
    assert_eq!(server.max_in_flight.load(Ordering::SeqCst), 3);
}

#[tokio::test(start_paused = true)]
async fn delete_removes_dependents_before_what_they_depend_on() {
    let server = FakeServer::with(|s| s.crd_gets_until_established = 1);
    let p = plan(vec![
        widget("team", "w"),
        ns("team"),
        crd(),
        cm("team", "c"),
    ]);
    let applier = Applier::new(&server, config());
    assert!(applier.apply(&p).await.is_complete());
    server.state.lock().unwrap().log.clear();
    let report = applier.delete(&p).await;
    assert_eq!(
        report.to_string(),
        "0 applied, 0 unchanged, 4 deleted, 0 pending, 0 failed"
    );
    assert_eq!(
        server.log(),
        vec![
            "delete v1 ConfigMap team/c",
            "delete example.com/v1 Widget team/w",
            "delete apiextensions.k8s.io/v1 CustomResourceDefinition widgets.example.com",
            "delete v1 Namespace team",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn delete_waits_for_finalizers_before_deleting_what_the_object_depends_on() {
    let server = FakeServer::with(|s| {
        s.finalizer_gets.insert("c".into(), 3);
    });
    let p = plan(vec![ns("team"), cm("team", "c")]);
    let applier = Applier::new(&server, config());
    assert!(applier.apply(&p).await.is_complete());
    let report = applier.delete(&p).await;
    assert!(report.is_complete(), "{:?}", outcome_names(&report));
    assert_eq!(
        server.log().last().map(String::as_str),
        Some("delete v1 Namespace team")
    );
}

#[tokio::test(start_paused = true)]
async fn an_object_stuck_on_finalizers_keeps_its_dependencies_in_place() {
    let server = FakeServer::with(|s| {
        s.finalizer_gets.insert("c".into(), u32::MAX);
    });
    let p = plan(vec![ns("team"), cm("team", "c")]);
    let applier = Applier::new(&server, config());
    assert!(applier.apply(&p).await.is_complete());
    let report = applier.delete(&p).await;
    let outcomes = outcome_names(&report);
    assert_eq!(
        outcomes,
        vec![
            (
                "team".into(),
                "pending: waiting for v1 ConfigMap team/c to be deleted".into()
            ),
            (
                "c".into(),
                "pending: still terminating after 5s, finalizers: [example.com/cleanup]".into()
            ),
        ]
    );
    assert!(
        !server
            .log()
            .contains(&"delete v1 Namespace team".to_string())
    );
}

#[tokio::test(start_paused = true)]
async fn deleting_objects_that_are_already_gone_reports_them_unchanged() {
    let server = FakeServer::default();
    let report = Applier::new(&server, config())
        .delete(&plan(vec![ns("gone")]))
        .await;
    assert_eq!(
        report.to_string(),
        "0 applied, 1 unchanged, 0 deleted, 0 pending, 0 failed"
    );
}
