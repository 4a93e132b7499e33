//! Bad input through the running agent, as a service-cluster admin would write it: each broken
//! PublishedResource gets a condition (and a `ReconcilingError` Event, as upstream) naming the
//! object, the field and the reason; a good PublishedResource beside them is served all along;
//! fixing the broken one clears its condition.
//!
//! A naming template is rendered per kcp object, so a name it renders invalid fails that object
//! only: the PublishedResource's `Ready` names the object and the field, the other objects sync,
//! and the kcp object gets upstream's generic Warning (service-side details stay off kcp). A
//! related `reference.path` is checked against the kind's schema: a path no version has is
//! refused; a path the schema has but an object leaves empty names nothing to sync, as upstream.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Env, STATE_NS, agent, create, crontab_crd, crontab_pr, eventually};
use kcp_core::kube::api::GroupVersionKind;
use kcp_core::{ListOptions, ObjectClient as _, ObjectRef};
use kcp_sync::api::{
    PublishedResource, ResourceCELMutation, ResourceMutation, ResourceMutationSpec, ResourceNaming,
    ResourceProjection, ResourceRegexMutation, ResourceTemplateMutation,
};
use kcp_sync::controller::run;
use serde_json::{Value, json};

/// A CRD like the CronTab one, of kind `kind`.
fn crd_of(kind: &str) -> Value {
    let plural = format!("{}s", kind.to_lowercase());
    let text = crontab_crd("x")
        .to_string()
        .replace("crontabs", &plural)
        .replace("CronTabList", &format!("{kind}List"))
        .replace("CronTab", kind)
        .replace("crontab", &kind.to_lowercase())
        .replace("[\"x\"]", "[]");
    serde_json::from_str(&text).unwrap()
}

fn pr_of(name: &str, kind: &str, mutation: Option<ResourceMutation>) -> PublishedResource {
    let mut pr = crontab_pr(name);
    pr.spec.resource.kind = kind.into();
    pr.spec.mutation = mutation.map(|m| ResourceMutationSpec {
        spec: vec![m],
        status: vec![],
    });
    pr
}

fn regex(pattern: &str) -> ResourceMutation {
    ResourceMutation {
        regex: Some(ResourceRegexMutation {
            path: "spec.image".into(),
            pattern: pattern.into(),
            replacement: "x".into(),
        }),
        ..Default::default()
    }
}

/// The condition `type_` of PublishedResource `name`: (status, reason, message).
async fn condition(env: &Env, name: &str, type_: &str) -> Option<(String, String, String)> {
    let pr = env.pr(name).await;
    let c = pr.status?.condition(type_).cloned()?;
    Some((
        c.status,
        c.reason.unwrap_or_default(),
        c.message.unwrap_or_default(),
    ))
}

async fn refused(env: &Env, name: &str, type_: &str, words: &[&str]) {
    eventually(
        &format!("{name}: {type_}=False naming {words:?}"),
        || async {
            condition(env, name, type_)
                .await
                .is_some_and(|(status, _, message)| {
                    status == "False" && words.iter().all(|w| message.contains(w))
                })
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_published_resources_say_what_is_wrong_and_the_good_one_is_served() {
    let env = Env::start().await;
    create(
        &env.service,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": STATE_NS}}),
    )
    .await;
    for kind in ["Regexed", "Templated", "Celled"] {
        create(&env.service, crd_of(kind)).await;
    }
    let template = ResourceMutation {
        template: Some(ResourceTemplateMutation {
            path: "spec.image".into(),
            template: "{{ .Value | noSuchFunction }}".into(),
        }),
        ..Default::default()
    };
    let cel = ResourceMutation {
        cel: Some(ResourceCELMutation {
            path: "spec.image".into(),
            expression: "self.value +".into(),
        }),
        ..Default::default()
    };
    for pr in [
        crontab_pr("good"),
        pr_of("bad-regex", "Regexed", Some(regex("("))),
        pr_of("bad-template", "Templated", Some(template)),
        pr_of("bad-cel", "Celled", Some(cel)),
        pr_of("unknown-kind", "NoSuchKind", None),
    ] {
        env.publish(&pr).await;
    }
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(run(agent(&env), async {
        let _ = stopped.await;
    }));

    refused(
        &env,
        "bad-regex",
        "Syncing",
        &["bad-regex", "spec.mutation", "regex"],
    )
    .await;
    refused(
        &env,
        "bad-template",
        "Syncing",
        &["bad-template", "spec.mutation", "noSuchFunction"],
    )
    .await;
    refused(&env, "bad-cel", "Syncing", &["bad-cel", "spec.mutation"]).await;
    refused(
        &env,
        "unknown-kind",
        "SchemaReady",
        &["spec.resource", "NoSuchKind"],
    )
    .await;
    eventually("the good PublishedResource served", || async {
        condition(&env, "good", "Syncing")
            .await
            .is_some_and(|(status, _, _)| status == "True")
    })
    .await;

    edit(&env, "bad-regex", |pr| {
        pr.spec.mutation = Some(ResourceMutationSpec {
            spec: vec![regex("^(.*)$")],
            status: vec![],
        });
    })
    .await;
    eventually("the fixed PublishedResource syncing", || async {
        condition(&env, "bad-regex", "Syncing")
            .await
            .is_some_and(|(status, _, _)| status == "True")
    })
    .await;
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}

/// Starts the agent on `env`; stop it by sending on the returned switch.
fn start(
    env: &Env,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<kcp_sync::Result<()>>,
) {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(run(agent(env), async {
        let _ = stopped.await;
    }));
    (stop, task)
}

async fn state_namespace(env: &Env) {
    create(
        &env.service,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": STATE_NS}}),
    )
    .await;
}

/// Replaces PublishedResource `name` with `change` applied to it, as `kubectl edit` does;
/// when the agent's status write got there first (409), the edit is made again on the latest
/// copy, as a user re-runs `kubectl edit`.
async fn edit(env: &Env, name: &str, change: impl Fn(&mut PublishedResource)) {
    for _ in 0..20 {
        let mut pr = env.pr(name).await;
        change(&mut pr);
        pr.status = None;
        let object = serde_json::from_value(serde_json::to_value(&pr).unwrap()).unwrap();
        match env
            .service
            .replace(&object, kcp_core::Subresource::Main)
            .await
        {
            Ok(_) => return,
            Err(error) if error.is_conflict() => continue,
            Err(error) => panic!("editing PublishedResource {name}: {error}"),
        }
    }
    panic!("editing PublishedResource {name}: still conflicting after 20 tries");
}

async fn syncing(env: &Env, name: &str) {
    eventually(&format!("{name} syncing"), || async {
        condition(env, name, "Syncing")
            .await
            .is_some_and(|(status, _, _)| status == "True")
    })
    .await;
}

/// The resources of the APIExport `crontabs`, as `(name, schema)`.
async fn exported(env: &Env) -> Vec<(String, String)> {
    let gvk = GroupVersionKind::gvk("apis.kcp.io", "v1alpha2", "APIExport");
    let export = env
        .provider
        .get(&ObjectRef::cluster_scoped(gvk, "crontabs"))
        .await
        .unwrap()
        .unwrap();
    let resources = export.data["spec"]["resources"].as_array().cloned();
    resources
        .unwrap_or_default()
        .iter()
        .map(|r| {
            let field = |f: &str| r[f].as_str().unwrap_or_default().to_owned();
            (
                format!("{}.{}", field("name"), field("group")),
                field("schema"),
            )
        })
        .collect()
}

/// A Warning `ReconcilingError` Event on PublishedResource `name` holding `words`.
async fn reconciling_error(env: &Env, name: &str, words: &[&str]) {
    let gvk = GroupVersionKind::gvk("", "v1", "Event");
    eventually(&format!("a ReconcilingError Event on {name}"), || async {
        let events = env
            .service
            .list(&gvk, None, &ListOptions::default())
            .await
            .unwrap()
            .items;
        events.iter().any(|e| {
            e.data["involvedObject"]["name"] == name
                && e.data["reason"] == "ReconcilingError"
                && e.data["type"] == "Warning"
                && words
                    .iter()
                    .all(|w| e.data["message"].as_str().unwrap_or_default().contains(w))
        })
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projection_onto_a_resource_another_published_resource_publishes_is_refused() {
    let env = Env::start().await;
    state_namespace(&env).await;
    create(&env.service, crd_of("Other")).await;
    env.publish(&crontab_pr("crontabs")).await;
    let mut clash = pr_of("other-as-crontabs", "Other", None);
    clash.spec.projection = Some(ResourceProjection {
        kind: "CronTab".into(),
        ..Default::default()
    });
    env.publish(&clash).await;
    let (stop, task) = start(&env);

    let words = [
        "other-as-crontabs",
        "spec.projection",
        "publishes crontabs.example.com, which PublishedResource \"crontabs\" already publishes",
    ];
    refused(&env, "other-as-crontabs", "Syncing", &words).await;
    refused(&env, "other-as-crontabs", "Ready", &words).await;
    reconciling_error(&env, "other-as-crontabs", &words).await;
    syncing(&env, "crontabs").await;
    let first = env.pr("crontabs").await.status.unwrap();
    let first = first.resource_schema_name.unwrap();
    eventually(
        "only the first PublishedResource's schema exported",
        || async { exported(&env).await == [("crontabs.example.com".to_owned(), first.clone())] },
    )
    .await;

    edit(&env, "other-as-crontabs", |pr| {
        pr.spec.projection = Some(ResourceProjection {
            kind: "OtherTab".into(),
            ..Default::default()
        });
    })
    .await;
    syncing(&env, "other-as-crontabs").await;
    eventually("both resources exported", || async {
        let names: Vec<String> = exported(&env).await.into_iter().map(|r| r.0).collect();
        names == ["crontabs.example.com", "othertabs.example.com"]
    })
    .await;
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}

/// A CRD `Database` (`databases.example.com`) whose schema has `spec.secretName` and no
/// other field.
fn database_crd() -> Value {
    let mut crd = crd_of("Database");
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = json!({
        "type": "object", "properties": {"secretName": {"type": "string"}}});
    crd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_related_reference_path_that_matches_no_field_is_refused_naming_it() {
    let env = Env::start().await;
    state_namespace(&env).await;
    create(&env.service, database_crd()).await;
    let mut databases = pr_of("databases", "Database", None);
    let related = |path: &str| -> Vec<kcp_sync::api::RelatedResourceSpec> {
        vec![
            serde_json::from_value(json!({
                "identifier": "credentials", "origin": "service", "kind": "Secret",
                "object": {"reference": {"path": path}}}))
            .unwrap(),
        ]
    };
    databases.spec.related = Some(related("spec.credentials.secretName"));
    env.publish(&crontab_pr("crontabs")).await;
    env.publish(&databases).await;
    let (stop, task) = start(&env);

    let words = [
        "databases",
        "spec.related[0].object.reference.path",
        "\"spec.credentials.secretName\" matches nothing: Database has no field spec.credentials",
    ];
    refused(&env, "databases", "Syncing", &words).await;
    reconciling_error(&env, "databases", &words).await;
    syncing(&env, "crontabs").await;

    edit(&env, "databases", |pr| {
        pr.spec.related = Some(related("spec.secretName"));
    })
    .await;
    syncing(&env, "databases").await;
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_naming_template_that_renders_an_invalid_name_marks_the_object_failing_and_syncs_the_others()
 {
    let env = Env::start().await;
    state_namespace(&env).await;
    let mut pr = crontab_pr("crontabs");
    pr.spec.naming = Some(ResourceNaming {
        name: "{{ .Object.spec.localName }}".into(),
        namespace: String::new(),
    });
    env.publish(&pr).await;
    let (stop, task) = start(&env);
    let team = bound_consumer(&env).await;
    for (name, local) in [("good", "fine-name"), ("bad", "Not_A_Name")] {
        create(
            &team,
            json!({"apiVersion": "example.com/v1", "kind": "CronTab",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"localName": local}}),
        )
        .await;
    }

    let words = [
        "1 of 2 objects failing",
        "default/bad",
        "rendered spec.naming.name \"Not_A_Name\" is invalid",
    ];
    refused(&env, "crontabs", "Ready", &words).await;
    eventually("the good object's local copy", || async {
        local_names(&env).await == ["fine-name"]
    })
    .await;

    edit(&env, "crontabs", |pr| {
        pr.spec.naming = Some(ResourceNaming {
            name: "{{ .Object.metadata.name }}".into(),
            namespace: String::new(),
        });
    })
    .await;
    eventually("Ready once every object syncs", || async {
        condition(&env, "crontabs", "Ready")
            .await
            .is_some_and(|(status, _, message)| status == "True" && message == "2 objects synced")
    })
    .await;
    assert!(local_names(&env).await.contains(&"bad".to_owned()));
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}

/// A workspace `root:team-1` bound to the export `crontabs`, once the export serves CronTabs.
async fn bound_consumer(env: &Env) -> kcp_sim::SimClient {
    eventually("the schema in the export", || async {
        !exported(env).await.is_empty()
    })
    .await;
    let root = env.kcp_sim.object_client("root");
    create(
        &root,
        json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace",
        "metadata": {"name": "team-1"}, "spec": {}}),
    )
    .await;
    let team = env.kcp_sim.object_client("root:team-1");
    let claims: Vec<Value> = ["events", "namespaces"]
        .iter()
        .map(|r| json!({"group": "", "resource": r, "all": true, "state": "Accepted"}))
        .collect();
    create(
        &team,
        json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding",
        "metadata": {"name": "crontabs"},
        "spec": {"reference": {"export": {"path": "root:provider", "name": "crontabs"}},
                 "permissionClaims": claims}}),
    )
    .await;
    let gvk = GroupVersionKind::gvk("example.com", "v1", "CronTab");
    eventually("CronTabs served in the consumer", || async {
        team.list(&gvk, None, &ListOptions::default()).await.is_ok()
    })
    .await;
    team
}

/// The names of the local copies of CronTabs on the service cluster, sorted.
async fn local_names(env: &Env) -> Vec<String> {
    let gvk = GroupVersionKind::gvk("example.com", "v1", "CronTab");
    let mut names: Vec<String> = env
        .service
        .list(&gvk, None, &ListOptions::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|o| o.metadata.name)
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn once_the_first_publisher_of_a_resource_is_deleted_the_refused_one_publishes_it() {
    let env = Env::start().await;
    state_namespace(&env).await;
    create(&env.service, crd_of("Other")).await;
    env.publish(&crontab_pr("crontabs")).await;
    let mut clash = pr_of("other-as-crontabs", "Other", None);
    clash.spec.projection = Some(ResourceProjection {
        kind: "CronTab".into(),
        ..Default::default()
    });
    env.publish(&clash).await;
    let (stop, task) = start(&env);
    refused(&env, "other-as-crontabs", "Syncing", &["already publishes"]).await;

    let gvk = GroupVersionKind::gvk("syncagent.kcp.io", "v1alpha1", "PublishedResource");
    env.service
        .delete(
            &ObjectRef::cluster_scoped(gvk, "crontabs"),
            &kcp_core::DeleteOptions::default(),
        )
        .await
        .unwrap();
    syncing(&env, "other-as-crontabs").await;
    let schema = env.pr("other-as-crontabs").await.status.unwrap();
    let schema = schema.resource_schema_name.unwrap();
    eventually("the second PublishedResource's schema exported", || async {
        exported(&env).await == [("crontabs.example.com".to_owned(), schema.clone())]
    })
    .await;
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}
