//! Specification of `ApplyPlan`: the default dependency rules, the upstream init-agent ordering
//! cases expressed as waves, the `depends-on` annotation, cycles, and the wave invariants.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use kcp_core::apply::{ApplyPlan, DEPENDS_ON_ANNOTATION, RuleSet};
use kcp_core::kube::api::DynamicObject;
use proptest::prelude::*;
use serde_json::{Value, json};

fn object(
    api_version: &str,
    kind: &str,
    namespace: Option<&str>,
    name: &str,
    rest: Value,
) -> DynamicObject {
    let mut v = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}});
    if let Some(ns) = namespace {
        v["metadata"]["namespace"] = ns.into();
    }
    if let (Some(obj), Value::Object(extra)) = (v.as_object_mut(), rest) {
        for (k, val) in extra {
            obj.insert(k, val);
        }
    }
    serde_json::from_value(v).expect("valid object")
}

fn ns(name: &str) -> DynamicObject {
    object("v1", "Namespace", None, name, json!({}))
}
fn cm(namespace: &str, name: &str) -> DynamicObject {
    object("v1", "ConfigMap", Some(namespace), name, json!({}))
}
fn crd(group: &str, kind: &str, plural: &str) -> DynamicObject {
    object(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        None,
        &format!("{plural}.{group}"),
        json!({"spec": {"group": group, "names": {"kind": kind, "plural": plural}, "scope": "Namespaced"}}),
    )
}
fn deployment(namespace: &str, name: &str, pod_spec: Value) -> DynamicObject {
    object(
        "apps/v1",
        "Deployment",
        Some(namespace),
        name,
        json!({"spec": {"template": {"spec": pod_spec}}}),
    )
}
fn export(name: &str, schemas: &[&str]) -> DynamicObject {
    object(
        "apis.kcp.io/v1alpha1",
        "APIExport",
        None,
        name,
        json!({"spec": {"latestResourceSchemas": schemas}}),
    )
}
fn binding(name: &str, export: &str) -> DynamicObject {
    object(
        "apis.kcp.io/v1alpha1",
        "APIBinding",
        None,
        name,
        json!({"spec": {"reference": {"export": {"name": export}}}}),
    )
}

/// The plan as `Kind/name` (or `Kind/ns/name`) labels, wave by wave.
fn waves(objects: Vec<DynamicObject>) -> Vec<Vec<String>> {
    let plan = ApplyPlan::build(objects, &RuleSet::default()).expect("plan builds");
    plan.waves()
        .iter()
        .map(|w| {
            w.iter()
                .map(|&i| {
                    let o = plan.object(i);
                    match o.namespace() {
                        Some(ns) => format!("{}/{ns}/{}", o.kind(), o.name()),
                        None => format!("{}/{}", o.kind(), o.name()),
                    }
                })
                .collect()
        })
        .collect()
}

fn labels(groups: &[&[&str]]) -> Vec<Vec<String>> {
    groups
        .iter()
        .map(|w| w.iter().map(|s| s.to_string()).collect())
        .collect()
}

// ---- default rules, one test each ----

#[test]
fn a_crd_precedes_its_custom_resources() {
    let widget = object("example.com/v1", "Widget", Some("a"), "w", json!({}));
    let gadget = object("example.com/v1", "Gadget", Some("a"), "g", json!({}));
    assert_eq!(
        waves(vec![
            widget,
            gadget,
            crd("example.com", "Widget", "widgets")
        ]),
        labels(&[
            &["Gadget/a/g", "CustomResourceDefinition/widgets.example.com"],
            &["Widget/a/w"]
        ])
    );
}

#[test]
fn a_crd_precedes_custom_resources_of_every_version() {
    let v1 = object("example.com/v1", "Widget", None, "one", json!({}));
    let v2 = object("example.com/v2", "Widget", None, "two", json!({}));
    assert_eq!(
        waves(vec![v1, v2, crd("example.com", "Widget", "widgets")]),
        labels(&[
            &["CustomResourceDefinition/widgets.example.com"],
            &["Widget/one", "Widget/two"]
        ])
    );
}

#[test]
fn an_apiexport_precedes_its_apibindings() {
    assert_eq!(
        waves(vec![
            binding("b", "widgets"),
            binding("other", "elsewhere"),
            export("widgets", &[])
        ]),
        labels(&[
            &["APIBinding/other", "APIExport/widgets"],
            &["APIBinding/b"]
        ])
    );
}

#[test]
fn an_apibinding_precedes_objects_of_the_groups_its_export_serves() {
    let widget = object("example.com/v1", "Widget", None, "w", json!({}));
    let other = object("other.io/v1", "Thing", None, "t", json!({}));
    let objects = vec![
        widget,
        other,
        binding("b", "e"),
        export("e", &["v1.widgets.example.com"]),
    ];
    assert_eq!(
        waves(objects),
        labels(&[
            &["Thing/t", "APIExport/e"],
            &["APIBinding/b"],
            &["Widget/w"]
        ])
    );
}

#[test]
fn an_apibinding_of_unknown_groups_precedes_objects_no_builtin_or_crd_serves() {
    let widget = object("example.com/v1", "Widget", None, "w", json!({}));
    let crd_served = object("crd.io/v1", "Thing", None, "t", json!({}));
    let objects = vec![
        widget,
        crd_served,
        cm("default", "c"),
        binding("b", "external"),
        crd("crd.io", "Thing", "things"),
    ];
    assert_eq!(
        waves(objects),
        labels(&[
            &[
                "ConfigMap/default/c",
                "APIBinding/b",
                "CustomResourceDefinition/things.crd.io"
            ],
            &["Widget/w", "Thing/t"],
        ])
    );
}

#[test]
fn a_namespace_precedes_its_members_only() {
    assert_eq!(
        waves(vec![cm("team", "a"), cm("other", "b"), ns("team")]),
        labels(&[
            &["ConfigMap/other/b", "Namespace/team"],
            &["ConfigMap/team/a"]
        ])
    );
}

#[test]
fn a_role_precedes_the_rolebindings_that_reference_it() {
    let role = object(
        "rbac.authorization.k8s.io/v1",
        "Role",
        Some("a"),
        "reader",
        json!({}),
    );
    let same_name_elsewhere = object(
        "rbac.authorization.k8s.io/v1",
        "Role",
        Some("b"),
        "reader",
        json!({}),
    );
    let rb = object(
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        Some("a"),
        "read",
        json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"}}),
    );
    assert_eq!(
        waves(vec![rb, same_name_elsewhere, role]),
        labels(&[&["Role/b/reader", "Role/a/reader"], &["RoleBinding/a/read"]])
    );
}

#[test]
fn a_clusterrole_precedes_role_and_cluster_role_bindings_to_it() {
    let role = object(
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        None,
        "admin",
        json!({}),
    );
    let refs = json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"}});
    let crb = object(
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        None,
        "all",
        refs.clone(),
    );
    let rb = object(
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        Some("a"),
        "local",
        refs,
    );
    assert_eq!(
        waves(vec![crb, rb, role]),
        labels(&[
            &["ClusterRole/admin"],
            &["ClusterRoleBinding/all", "RoleBinding/a/local"]
        ])
    );
}

#[test]
fn a_serviceaccount_precedes_bindings_and_workloads_that_use_it() {
    let sa = object("v1", "ServiceAccount", Some("a"), "robot", json!({}));
    let crb = object(
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        None,
        "robot-admin",
        json!({"roleRef": {"kind": "ClusterRole", "name": "x"},
               "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "a"}]}),
    );
    let web = deployment("a", "web", json!({"serviceAccountName": "robot"}));
    let elsewhere = deployment("b", "web", json!({"serviceAccountName": "robot"}));
    let cron = object(
        "batch/v1",
        "CronJob",
        Some("a"),
        "tick",
        json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"serviceAccountName": "robot"}}}}}}),
    );
    assert_eq!(
        waves(vec![crb, web, elsewhere, cron, sa]),
        labels(&[
            &["Deployment/b/web", "ServiceAccount/a/robot"],
            &[
                "ClusterRoleBinding/robot-admin",
                "Deployment/a/web",
                "CronJob/a/tick"
            ],
        ])
    );
}

#[test]
fn configmaps_and_secrets_precede_workloads_that_read_them() {
    let pod = object(
        "v1",
        "Pod",
        Some("a"),
        "p",
        json!({"spec": {
            "volumes": [{"name": "v", "configMap": {"name": "settings"}}],
            "containers": [{"name": "c", "envFrom": [{"secretRef": {"name": "token"}}]}]}}),
    );
    let secret = object("v1", "Secret", Some("a"), "token", json!({}));
    assert_eq!(
        waves(vec![pod, cm("a", "settings"), secret, cm("a", "unused")]),
        labels(&[
            &[
                "ConfigMap/a/settings",
                "Secret/a/token",
                "ConfigMap/a/unused"
            ],
            &["Pod/a/p"]
        ])
    );
}

#[test]
fn classes_precede_the_objects_that_name_them() {
    let pc = object(
        "scheduling.k8s.io/v1",
        "PriorityClass",
        None,
        "high",
        json!({}),
    );
    let sc = object("storage.k8s.io/v1", "StorageClass", None, "fast", json!({}));
    let ic = object(
        "networking.k8s.io/v1",
        "IngressClass",
        None,
        "nginx",
        json!({}),
    );
    let rc = object("node.k8s.io/v1", "RuntimeClass", None, "gvisor", json!({}));
    let web = deployment(
        "a",
        "web",
        json!({"priorityClassName": "high", "runtimeClassName": "gvisor"}),
    );
    let pvc = object(
        "v1",
        "PersistentVolumeClaim",
        Some("a"),
        "data",
        json!({"spec": {"storageClassName": "fast"}}),
    );
    let ing = object(
        "networking.k8s.io/v1",
        "Ingress",
        Some("a"),
        "web",
        json!({"spec": {"ingressClassName": "nginx"}}),
    );
    assert_eq!(
        waves(vec![web, pvc, ing, pc, sc, ic, rc]),
        labels(&[
            &[
                "PriorityClass/high",
                "StorageClass/fast",
                "IngressClass/nginx",
                "RuntimeClass/gvisor"
            ],
            &[
                "Deployment/a/web",
                "PersistentVolumeClaim/a/data",
                "Ingress/a/web"
            ],
        ])
    );
}

#[test]
fn admission_webhooks_come_after_everything_else() {
    let hook = object(
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        None,
        "check",
        json!({}),
    );
    assert_eq!(
        waves(vec![hook, ns("a"), cm("a", "c")]),
        labels(&[
            &["Namespace/a"],
            &["ConfigMap/a/c"],
            &["ValidatingWebhookConfiguration/check"]
        ])
    );
}

#[test]
fn the_depends_on_annotation_adds_edges() {
    let mut late = cm("a", "late");
    late.metadata.annotations = Some(
        [(
            DEPENDS_ON_ANNOTATION.to_string(),
            "ConfigMap/early, Deployment.apps/a/web".to_string(),
        )]
        .into(),
    );
    assert_eq!(
        waves(vec![
            late,
            cm("a", "early"),
            deployment("a", "web", json!({}))
        ]),
        labels(&[
            &["ConfigMap/a/early", "Deployment/a/web"],
            &["ConfigMap/a/late"]
        ])
    );
}

#[test]
fn a_depends_on_annotation_naming_an_absent_object_is_an_error() {
    let mut o = cm("a", "c");
    o.metadata.annotations = Some(
        [(
            DEPENDS_ON_ANNOTATION.to_string(),
            "Secret/missing".to_string(),
        )]
        .into(),
    );
    let err = ApplyPlan::build(vec![o], &RuleSet::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid object v1 ConfigMap a/c: field metadata.annotations[apply.kcp-rs.io/depends-on]: \"Secret/missing\" names no object of this plan"
    );
}

#[test]
fn a_malformed_depends_on_annotation_is_an_error() {
    let mut o = cm("a", "c");
    o.metadata.annotations =
        Some([(DEPENDS_ON_ANNOTATION.to_string(), "a/b/c/d".to_string())].into());
    let err = ApplyPlan::build(vec![o], &RuleSet::default()).unwrap_err();
    assert!(
        err.to_string()
            .contains("is not of the form Kind[.group]/[namespace/]name"),
        "{err}"
    );
}

#[test]
fn a_cycle_through_annotations_names_every_object_on_it() {
    let mut a = cm("x", "a");
    let mut b = cm("x", "b");
    a.metadata.annotations =
        Some([(DEPENDS_ON_ANNOTATION.to_string(), "ConfigMap/b".to_string())].into());
    b.metadata.annotations =
        Some([(DEPENDS_ON_ANNOTATION.to_string(), "ConfigMap/a".to_string())].into());
    let err = ApplyPlan::build(vec![ns("x"), a, b], &RuleSet::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "dependency cycle between v1 ConfigMap x/a, v1 ConfigMap x/b"
    );
    assert!(!err.is_transient());
}

#[test]
fn custom_rules_run_after_the_defaults() {
    use kcp_core::apply::{DependencyRule, EdgeSink, ObjectSet};
    /// Services before Deployments of the same namespace and name.
    struct ServiceFirst;
    impl DependencyRule for ServiceFirst {
        fn name(&self) -> &str {
            "service first"
        }
        fn add_edges(&self, set: &ObjectSet<'_>, sink: &mut EdgeSink) -> kcp_core::Result<()> {
            for &d in set.of_kind("apps", "Deployment") {
                let Some(o) = set.get(d) else { continue };
                for s in set.find("", "Service", o.namespace(), o.name()) {
                    sink.add(s, d);
                }
            }
            Ok(())
        }
    }
    let svc = object("v1", "Service", Some("a"), "web", json!({}));
    let plan = ApplyPlan::build(
        vec![deployment("a", "web", json!({})), svc],
        &RuleSet::default().with(ServiceFirst),
    )
    .unwrap();
    assert_eq!(plan.waves(), &[vec![1], vec![0]]);
}

// ---- the upstream init-agent sort cases (specs/init-agent.md §6), as waves ----
// Upstream sorts CRD < APIExport < APIBinding < Namespace < everything else. We keep only the
// real dependencies, so unrelated objects share a wave; the upstream relationships that are real
// (namespace before its members, export before its binding) hold.

fn upstream_fixture() -> [DynamicObject; 6] {
    [
        ns("app"),
        cm("app", "cfg"),
        crd("example.com", "Widget", "widgets"),
        deployment("app", "web", json!({})),
        binding("widgets", "widgets"),
        export("widgets", &["v1.widgets.example.com"]),
    ]
}

#[test]
fn upstream_case_empty_input_gives_no_waves() {
    assert!(waves(vec![]).is_empty());
}

#[test]
fn upstream_case_single_object_gives_one_wave() {
    assert_eq!(waves(vec![cm("a", "x")]), labels(&[&["ConfigMap/a/x"]]));
}

#[test]
fn upstream_case_already_sorted_input_keeps_its_order() {
    let [ns, cm, crd, deploy, binding, export] = upstream_fixture();
    assert_eq!(
        waves(vec![crd, export, binding, ns, cm, deploy]),
        labels(&[
            &[
                "CustomResourceDefinition/widgets.example.com",
                "APIExport/widgets",
                "Namespace/app"
            ],
            &[
                "APIBinding/widgets",
                "ConfigMap/app/cfg",
                "Deployment/app/web"
            ],
        ])
    );
}

#[test]
fn upstream_case_fully_reversed_input_gives_the_same_waves_in_input_order() {
    let [ns, cm, crd, deploy, binding, export] = upstream_fixture();
    assert_eq!(
        waves(vec![deploy, cm, ns, binding, export, crd]),
        labels(&[
            &[
                "Namespace/app",
                "APIExport/widgets",
                "CustomResourceDefinition/widgets.example.com"
            ],
            &[
                "Deployment/app/web",
                "ConfigMap/app/cfg",
                "APIBinding/widgets"
            ],
        ])
    );
}

#[test]
fn upstream_case_mixed_input_orders_real_dependencies() {
    let [ns, cm, crd, deploy, binding, export] = upstream_fixture();
    assert_eq!(
        waves(vec![ns, cm, crd, deploy, binding, export]),
        labels(&[
            &[
                "Namespace/app",
                "CustomResourceDefinition/widgets.example.com",
                "APIExport/widgets"
            ],
            &[
                "ConfigMap/app/cfg",
                "Deployment/app/web",
                "APIBinding/widgets"
            ],
        ])
    );
}

#[test]
fn upstream_case_duplicates_stay_in_input_order_after_their_dependencies() {
    let w = |n: &str| object("example.com/v1", "Widget", Some("app"), n, json!({}));
    let crd_a = crd("example.com", "Widget", "widgets");
    let crd_b = crd("other.com", "Gizmo", "gizmos");
    assert_eq!(
        waves(vec![w("one"), crd_a, w("two"), crd_b]),
        labels(&[
            &[
                "CustomResourceDefinition/widgets.example.com",
                "CustomResourceDefinition/gizmos.other.com"
            ],
            &["Widget/app/one", "Widget/app/two"],
        ])
    );
}

#[test]
fn upstream_case_only_regular_objects_keep_their_order() {
    let svc = object("v1", "Service", Some("a"), "s", json!({}));
    assert_eq!(
        waves(vec![svc, cm("a", "c"), deployment("a", "d", json!({}))]),
        labels(&[&["Service/a/s", "ConfigMap/a/c", "Deployment/a/d"]])
    );
}

// ---- invariants ----

/// A random mix over a small name space, so that rules connect objects.
fn arbitrary_object() -> impl Strategy<Value = DynamicObject> {
    let names = prop::sample::select(vec!["a", "b", "c"]);
    (0..8u8, names.clone(), names).prop_map(|(k, ns_name, name)| match k {
        0 => ns(ns_name),
        1 => cm(ns_name, name),
        2 => crd("example.com", "Widget", "widgets"),
        3 => object("example.com/v1", "Widget", Some(ns_name), name, json!({})),
        4 => object("v1", "ServiceAccount", Some(ns_name), name, json!({})),
        5 => deployment(
            ns_name,
            name,
            json!({"serviceAccountName": name,
                "volumes": [{"name": "v", "configMap": {"name": name}}]}),
        ),
        6 => object(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            None,
            name,
            json!({}),
        ),
        _ => object(
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
            Some(ns_name),
            name,
            json!({"roleRef": {"kind": "ClusterRole", "name": name},
                   "subjects": [{"kind": "ServiceAccount", "name": name}]}),
        ),
    })
}

proptest! {
    #[test]
    fn every_edge_runs_from_an_earlier_wave_to_a_later_one(objects in prop::collection::vec(arbitrary_object(), 0..40)) {
        let plan = ApplyPlan::build(objects, &RuleSet::default()).unwrap();
        for (before, after) in plan.edges() {
            prop_assert!(plan.wave_of(before) < plan.wave_of(after), "edge {before}->{after}");
        }
    }

    #[test]
    fn waves_partition_the_input_and_keep_input_order(objects in prop::collection::vec(arbitrary_object(), 0..40)) {
        let n = objects.len();
        let plan = ApplyPlan::build(objects, &RuleSet::default()).unwrap();
        let mut seen: Vec<usize> = plan.waves().iter().flatten().copied().collect();
        for wave in plan.waves() {
            prop_assert!(!wave.is_empty());
            prop_assert!(wave.windows(2).all(|w| w[0] < w[1]), "wave not in input order: {wave:?}");
        }
        seen.sort_unstable();
        prop_assert_eq!(seen, (0..n).collect::<Vec<_>>());
    }

    #[test]
    fn every_object_after_wave_zero_has_a_dependency_in_the_wave_before(objects in prop::collection::vec(arbitrary_object(), 0..40)) {
        let plan = ApplyPlan::build(objects, &RuleSet::default()).unwrap();
        for i in 0..plan.len() {
            let wave = plan.wave_of(i).unwrap();
            if wave > 0 {
                prop_assert!(plan.dependencies(i).iter().any(|&d| plan.wave_of(d) == Some(wave - 1)));
            }
        }
    }

    #[test]
    fn building_twice_gives_the_same_plan(objects in prop::collection::vec(arbitrary_object(), 0..40)) {
        let a = ApplyPlan::build(objects.clone(), &RuleSet::default()).unwrap();
        let b = ApplyPlan::build(objects, &RuleSet::default()).unwrap();
        prop_assert_eq!(a.waves(), b.waves());
        prop_assert_eq!(a.edges(), b.edges());
    }
}
