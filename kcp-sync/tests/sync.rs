//! The object sync of one (consumer cluster, PublishedResource) pair against two kcp-sim
//! servers, in-process: the kcp side through the APIExport virtual workspace, as the agent
//! sees it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;

use common::{Env, create, crontab_pr};
use k8s_openapi::api::core::v1::Secret;
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::runtime::EventRecorder;
use kcp_core::{
    DeleteOptions, ListOptions, ObjectClient, ObjectClientExt as _, ObjectRef, Subresource,
    TemplateEngine,
};
use kcp_sim::{Endpoint, SimClient};
use kcp_sync::api::{
    PublishedResource, RelatedResourceKind, RelatedResourceObject, RelatedResourceObjectReference,
    RelatedResourceObjectSpec, RelatedResourceOrigin, RelatedResourceSpec, ResourceMutation,
    ResourceMutationSpec, ResourceRegexMutation,
};
use kcp_sync::reconcile::export::reconcile_export;
use kcp_sync::reconcile::kcp_events::{STATUS_SUBRESOURCE_MISSING, SYNC_COMPONENT};
use kcp_sync::reconcile::schema::reconcile_schema;
use kcp_sync::reconcile::sync::{PrimarySync, Sides, Step, SyncConfig, SyncContext, sync_object};
use serde_json::{Value, json};

const AGENT: &str = "test-agent";
const STATE_NS: &str = "kcp-system";

struct Harness {
    env: Env,
    target: PrimarySync,
    engine: TemplateEngine,
    config: SyncConfig,
    /// Events are recorded only when a test asks ([`Harness::recording_events`]).
    recorder: Option<EventRecorder>,
}

struct Consumer {
    cluster: String,
    /// The user's view of the workspace.
    user: SimClient,
    /// The agent's view through the virtual workspace.
    agent: SimClient,
}

fn crontab_gvk() -> GroupVersionKind {
    GroupVersionKind::gvk("example.com", "v1", "CronTab")
}

impl Harness {
    async fn start(pr: PublishedResource) -> Harness {
        Self::start_with(pr, SyncConfig::new(AGENT, STATE_NS)).await
    }

    async fn start_with(pr: PublishedResource, config: SyncConfig) -> Harness {
        Self::start_beside(pr, config, Vec::new()).await
    }

    /// [`Harness::start_with`], the CRDs `crds` created on the service cluster first.
    async fn start_beside(pr: PublishedResource, config: SyncConfig, crds: Vec<Value>) -> Harness {
        let env = Env::start().await;
        for crd in crds {
            create(&env.service, crd).await;
        }
        create(
            &env.service,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": STATE_NS}}),
        )
        .await;
        env.publish(&pr).await;
        let pr = env.pr(pr.name()).await;
        let projected = reconcile_schema(&env.service, None, &env.provider, AGENT, &pr)
            .await
            .unwrap()
            .unwrap();
        let ready = BTreeSet::from([projected.schema_name.clone()]);
        reconcile_export(
            &env.provider,
            None,
            AGENT,
            "crontabs",
            std::slice::from_ref(&pr),
            &ready,
            &ready,
        )
        .await
        .unwrap();
        let mut target = PrimarySync::new(&pr, &projected).unwrap();
        target.resolve_related(&env.service, None).await.unwrap();
        Harness {
            env,
            target,
            engine: TemplateEngine::new(),
            config,
            recorder: None,
        }
    }

    /// The harness recording Events in kcp, as the agent's sync controller does.
    fn recording_events(mut self) -> Harness {
        self.recorder = Some(EventRecorder::new(SYNC_COMPONENT));
        self
    }

    async fn consumer(&self, name: &str) -> Consumer {
        let root = self.env.kcp_sim.object_client("root");
        create(
            &root,
            json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace",
            "metadata": {"name": name}, "spec": {}}),
        )
        .await;
        let path = format!("root:{name}");
        let cluster = self.env.kcp_sim.logical_cluster(&path).unwrap();
        let user = self.env.kcp_sim.object_client(&path);
        let claims: Vec<Value> = ["events", "namespaces", "secrets", "configmaps"]
            .iter()
            .map(|r| json!({"group": "", "resource": r, "all": true, "state": "Accepted"}))
            .collect();
        create(&user, json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding",
            "metadata": {"name": "crontabs"},
            "spec": {"reference": {"export": {"path": "root:provider", "name": "crontabs"}}, "permissionClaims": claims}})).await;
        let agent = self.env.kcp_sim.object_client_at(Endpoint::ApiExport {
            export_cluster: self.env.provider_cluster.clone(),
            export: "crontabs".into(),
            cluster: Some(cluster.clone()),
            shard: None,
        });
        Consumer {
            cluster,
            user,
            agent,
        }
    }

    fn ctx<'a>(&'a self, c: &'a Consumer) -> SyncContext<'a> {
        SyncContext {
            config: &self.config,
            engine: &self.engine,
            recorder: self.recorder.as_ref(),
            caches: None,
            sides: Sides {
                kcp: &c.agent,
                service: &self.env.service,
                cluster: &c.cluster,
            },
        }
    }

    /// Runs sync steps until one says Done (at most 20, as upstream's test harness).
    async fn sync(&self, c: &Consumer, name: &str) {
        for _ in 0..20 {
            let step = sync_object(&self.ctx(c), &self.target, Some("default"), name)
                .await
                .unwrap();
            if step != Step::Again {
                return;
            }
        }
        panic!("sync of {name} did not settle in 20 steps");
    }

    /// The consumer `team-1` with the CronTab `my-crontab` (empty spec), synced.
    async fn synced_crontab(&self) -> Consumer {
        let c = self.consumer("team-1").await;
        crontab(&c, "my-crontab", json!({})).await;
        self.sync(&c, "my-crontab").await;
        c
    }

    async fn locals(&self) -> Vec<DynamicObject> {
        self.env
            .service
            .list(&crontab_gvk(), None, &ListOptions::default())
            .await
            .unwrap()
            .items
    }

    async fn local(&self) -> DynamicObject {
        let mut all = self.locals().await;
        assert_eq!(all.len(), 1, "expected one local copy");
        all.remove(0)
    }
}

async fn crontab(c: &Consumer, name: &str, spec: Value) -> DynamicObject {
    create(
        &c.user,
        json!({"apiVersion": "example.com/v1", "kind": "CronTab",
        "metadata": {"name": name, "namespace": "default"}, "spec": spec}),
    )
    .await
}

async fn remote(c: &Consumer, name: &str) -> Option<DynamicObject> {
    c.user
        .get(&ObjectRef::namespaced(crontab_gvk(), "default", name))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_consumer_object_is_synced_down_with_link_metadata_and_a_finalizer() {
    let h = Harness::start(crontab_pr("crontabs")).await;
    let c = h.consumer("team-1").await;
    crontab(&c, "my-crontab", json!({"cronSpec": "* * * *"})).await;
    h.sync(&c, "my-crontab").await;
    let local = h.local().await;
    assert_eq!(
        local.metadata.namespace.as_deref(),
        Some(c.cluster.as_str())
    );
    assert_eq!(local.data["spec"], json!({"cronSpec": "* * * *"}));
    let labels = local.metadata.labels.unwrap();
    assert_eq!(labels["syncagent.kcp.io/agent-name"], AGENT);
    assert_eq!(labels["syncagent.kcp.io/remote-object-cluster"], c.cluster);
    assert_eq!(
        local.metadata.annotations.unwrap()["syncagent.kcp.io/remote-object-name"],
        "my-crontab"
    );
    let remote = remote(&c, "my-crontab").await.unwrap();
    assert_eq!(
        remote.metadata.finalizers,
        Some(vec!["syncagent.kcp.io/cleanup".to_owned()])
    );
}

#[tokio::test]
async fn the_state_secret_has_upstreams_name_and_key() {
    let h = Harness::start(crontab_pr("crontabs")).await;
    let c = h.consumer("team-1").await;
    let obj = crontab(&c, "my-crontab", json!({"cronSpec": "x"})).await;
    h.sync(&c, "my-crontab").await;
    let value = serde_json::to_value(&obj).unwrap();
    let name = kcp_sync::state::secret_name(&value, &c.cluster);
    let secret: Secret = h
        .env
        .service
        .get_typed(Some(STATE_NS), &name)
        .await
        .unwrap()
        .unwrap();
    let key = kcp_sync::state::object_key(&c.cluster, "default", "my-crontab");
    let stored: Value = serde_json::from_slice(&secret.data.unwrap()[&key].0).unwrap();
    assert_eq!(stored["spec"], json!({"cronSpec": "x"}));
    assert_eq!(
        secret.metadata.labels.unwrap()["syncagent.kcp.io/object-state"],
        "true"
    );
}

#[tokio::test]
async fn the_local_status_is_synced_up_to_kcp() {
    let h = Harness::start(crontab_pr("crontabs")).await;
    let c = h.consumer("team-1").await;
    crontab(&c, "my-crontab", json!({"cronSpec": "x"})).await;
    h.sync(&c, "my-crontab").await;
    let mut local = h.local().await;
    local.data["status"] = json!({"phase": "Running"});
    h.env
        .service
        .replace(&local, Subresource::Status)
        .await
        .unwrap();
    h.sync(&c, "my-crontab").await;
    assert_eq!(
        remote(&c, "my-crontab").await.unwrap().data["status"],
        json!({"phase": "Running"})
    );
}

#[tokio::test]
async fn a_spec_change_in_kcp_is_patched_onto_the_local_copy() {
    let h = Harness::start(crontab_pr("crontabs")).await;
    let c = h.consumer("team-1").await;
    crontab(&c, "my-crontab", json!({"cronSpec": "x", "image": "a"})).await;
    h.sync(&c, "my-crontab").await;
    let mut obj = remote(&c, "my-crontab").await.unwrap();
    obj.data["spec"]["image"] = json!("b");
    c.user.replace(&obj, Subresource::Main).await.unwrap();
    h.sync(&c, "my-crontab").await;
    assert_eq!(
        h.local().await.data["spec"],
        json!({"cronSpec": "x", "image": "b"})
    );
}

#[tokio::test]
async fn local_changes_are_kept_until_kcp_changes_the_same_field() {
    let h = Harness::start(crontab_pr("crontabs")).await;
    let c = h.consumer("team-1").await;
    crontab(&c, "my-crontab", json!({"cronSpec": "x", "image": "a"})).await;
    h.sync(&c, "my-crontab").await;
    let mut local = h.local().await;
    local.data["spec"]["cronSpec"] = json!("local");
    local.data["spec"]["extra"] = json!(true);
    h.env
        .service
        .replace(&local, Subresource::Main)
        .await
        .unwrap();
    let mut obj = remote(&c, "my-crontab").await.unwrap();
    obj.data["spec"]["image"] = json!("b");
    c.user.replace(&obj, Subresource::Main).await.unwrap();
    h.sync(&c, "my-crontab").await;
    assert_eq!(
        h.local().await.data["spec"],
        json!({"cronSpec": "local", "image": "b", "extra": true})
    );
    let mut obj = remote(&c, "my-crontab").await.unwrap();
    obj.data["spec"]["cronSpec"] = json!("kcp");
    c.user.replace(&obj, Subresource::Main).await.unwrap();
    h.sync(&c, "my-crontab").await;
    assert_eq!(h.local().await.data["spec"]["cronSpec"], "kcp");
}

#[tokio::test]
async fn deletion_in_kcp_removes_the_local_copy_then_the_finalizer_and_the_state_secret() {
    let h = Harness::start(crontab_pr("crontabs")).await;
    let c = h.consumer("team-1").await;
    let obj = crontab(&c, "my-crontab", json!({"cronSpec": "x"})).await;
    h.sync(&c, "my-crontab").await;
    c.user
        .delete(
            &ObjectRef::namespaced(crontab_gvk(), "default", "my-crontab"),
            &Default::default(),
        )
        .await
        .unwrap();
    assert!(
        remote(&c, "my-crontab").await.is_some(),
        "the finalizer holds the kcp object"
    );
    h.sync(&c, "my-crontab").await;
    assert!(h.locals().await.is_empty());
    assert!(remote(&c, "my-crontab").await.is_none());
    let name = kcp_sync::state::secret_name(&serde_json::to_value(&obj).unwrap(), &c.cluster);
    let secret: Option<Secret> = h
        .env
        .service
        .get_typed(Some(STATE_NS), &name)
        .await
        .unwrap();
    assert!(
        secret.is_none(),
        "state Secret garbage-collected with its primary"
    );
}

#[tokio::test]
async fn under_upstreams_chart_rules_state_secrets_are_updated_and_kept() {
    // Upstream's Helm chart grants get/list/watch/create/update on Secrets: no patch, no delete.
    let h = Harness::start(crontab_pr("crontabs")).await;
    h.env.service_sim.faults().add_error(
        kcp_sim::ErrorRule::new(403, 1.0)
            .verbs([kcp_sim::Verb::Patch, kcp_sim::Verb::Delete])
            .resources(["secrets"]),
    );
    let c = h.consumer("team-1").await;
    let obj = crontab(&c, "my-crontab", json!({"cronSpec": "a"})).await;
    h.sync(&c, "my-crontab").await;
    let mut changed = remote(&c, "my-crontab").await.unwrap();
    changed.data["spec"]["cronSpec"] = json!("b");
    c.user.replace(&changed, Subresource::Main).await.unwrap();
    h.sync(&c, "my-crontab").await;
    assert_eq!(h.local().await.data["spec"]["cronSpec"], "b");
    let name = kcp_sync::state::secret_name(&serde_json::to_value(&obj).unwrap(), &c.cluster);
    let secret: Secret = h
        .env
        .service
        .get_typed(Some(STATE_NS), &name)
        .await
        .unwrap()
        .unwrap();
    let stored = secret.data.unwrap().into_values().next().unwrap();
    assert!(
        String::from_utf8(stored.0).unwrap().contains("\"b\""),
        "the new state was written by an update"
    );
    c.user
        .delete(
            &ObjectRef::namespaced(crontab_gvk(), "default", "my-crontab"),
            &Default::default(),
        )
        .await
        .unwrap();
    h.sync(&c, "my-crontab").await;
    assert!(
        remote(&c, "my-crontab").await.is_none(),
        "released all the same"
    );
    let kept: Option<Secret> = h
        .env
        .service
        .get_typed(Some(STATE_NS), &name)
        .await
        .unwrap();
    assert!(kept.is_some(), "kept, as upstream keeps every state Secret");
}

#[tokio::test]
async fn a_local_copy_held_by_another_finalizer_is_looked_at_again_not_only_on_events() {
    let h = Harness::start(crontab_pr("crontabs")).await;
    let c = h.synced_crontab().await;
    let mut local = h.local().await;
    local.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    h.env
        .service
        .replace(&local, Subresource::Main)
        .await
        .unwrap();
    c.user
        .delete(
            &ObjectRef::namespaced(crontab_gvk(), "default", "my-crontab"),
            &Default::default(),
        )
        .await
        .unwrap();
    let mut step = Step::Again;
    for _ in 0..5 {
        step = sync_object(&h.ctx(&c), &h.target, Some("default"), "my-crontab")
            .await
            .unwrap();
        if step != Step::Again {
            break;
        }
    }
    assert_eq!(
        step,
        Step::Waiting,
        "the controller requeues it after a while"
    );
    assert_eq!(
        sync_object(&h.ctx(&c), &h.target, Some("default"), "my-crontab")
            .await
            .unwrap(),
        Step::Waiting,
        "still terminating: still waiting"
    );
}

#[tokio::test]
async fn the_same_name_in_two_workspaces_gives_two_local_objects() {
    let h = Harness::start(crontab_pr("crontabs")).await;
    let c1 = h.consumer("team-1").await;
    let c2 = h.consumer("team-2").await;
    crontab(&c1, "same", json!({"n": 1})).await;
    crontab(&c2, "same", json!({"n": 2})).await;
    h.sync(&c1, "same").await;
    h.sync(&c2, "same").await;
    let mut specs: Vec<Value> = h
        .locals()
        .await
        .into_iter()
        .map(|o| o.data["spec"].clone())
        .collect();
    specs.sort_by_key(|s| s["n"].as_i64());
    assert_eq!(specs, [json!({"n": 1}), json!({"n": 2})]);
}

#[tokio::test]
async fn an_unlinked_local_object_of_the_wanted_name_is_adopted() {
    let mut pr = crontab_pr("crontabs");
    pr.spec.naming = Some(kcp_sync::api::ResourceNaming {
        namespace: "synced".into(),
        name: "$remoteName".into(),
    });
    let h = Harness::start(pr).await;
    let c = h.consumer("team-1").await;
    create(
        &h.env.service,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "synced"}}),
    )
    .await;
    create(
        &h.env.service,
        json!({"apiVersion": "example.com/v1", "kind": "CronTab",
        "metadata": {"name": "my-crontab", "namespace": "synced"}, "spec": {"old": true}}),
    )
    .await;
    crontab(&c, "my-crontab", json!({"cronSpec": "x"})).await;
    h.sync(&c, "my-crontab").await;
    let local = h.local().await;
    assert_eq!(
        local.metadata.labels.unwrap()["syncagent.kcp.io/remote-object-cluster"],
        c.cluster
    );
    assert_eq!(local.data["spec"]["cronSpec"], "x");
}

#[tokio::test]
async fn a_local_object_linked_to_another_kcp_object_is_not_adopted() {
    let mut pr = crontab_pr("crontabs");
    pr.spec.naming = Some(kcp_sync::api::ResourceNaming {
        namespace: "synced".into(),
        name: "fixed".into(),
    });
    let h = Harness::start(pr).await;
    let c = h.consumer("team-1").await;
    crontab(&c, "first", json!({})).await;
    crontab(&c, "second", json!({})).await;
    h.sync(&c, "first").await;
    let err = async {
        for _ in 0..5 {
            sync_object(&h.ctx(&c), &h.target, Some("default"), "second").await?;
        }
        Ok::<_, kcp_sync::Error>(())
    }
    .await
    .unwrap_err();
    assert!(err.to_string().contains("not adopting"), "{err}");
    let local = h.local().await;
    assert_eq!(
        local.metadata.annotations.unwrap()["syncagent.kcp.io/remote-object-name"],
        "first"
    );
}

#[tokio::test]
async fn spec_mutations_apply_on_the_way_down() {
    let mut pr = crontab_pr("crontabs");
    pr.spec.mutation = Some(ResourceMutationSpec {
        spec: vec![ResourceMutation {
            regex: Some(ResourceRegexMutation {
                path: "spec.secretName".into(),
                pattern: "^(.+)$".into(),
                replacement: "tls-$1".into(),
            }),
            ..Default::default()
        }],
        status: vec![],
    });
    let h = Harness::start(pr).await;
    let c = h.consumer("team-1").await;
    crontab(&c, "my-crontab", json!({"secretName": "creds"})).await;
    h.sync(&c, "my-crontab").await;
    assert_eq!(h.local().await.data["spec"]["secretName"], "tls-creds");
    assert_eq!(
        remote(&c, "my-crontab").await.unwrap().data["spec"]["secretName"],
        "creds"
    );
}

#[tokio::test]
async fn a_per_agent_finalizer_is_used_when_configured() {
    let h = Harness::start_with(
        crontab_pr("crontabs"),
        SyncConfig::new(AGENT, STATE_NS).with_agent_finalizer(),
    )
    .await;
    let c = h.synced_crontab().await;
    let remote = remote(&c, "my-crontab").await.unwrap();
    assert_eq!(
        remote.metadata.finalizers,
        Some(vec![format!("syncagent.kcp.io/cleanup-{AGENT}")])
    );
}

#[tokio::test]
async fn a_per_agent_finalizer_replaces_the_shared_one_the_go_agent_of_the_same_name_left() {
    let mut h = Harness::start(crontab_pr("crontabs")).await;
    let c = h.synced_crontab().await;
    h.config = h.config.clone().with_agent_finalizer();
    h.sync(&c, "my-crontab").await;
    let remote = remote(&c, "my-crontab").await.unwrap();
    assert_eq!(
        remote.metadata.finalizers,
        Some(vec![format!("syncagent.kcp.io/cleanup-{AGENT}")])
    );
}

#[tokio::test]
async fn a_per_agent_finalizer_releases_an_object_deleted_under_the_shared_one() {
    let mut h = Harness::start(crontab_pr("crontabs")).await;
    let c = h.synced_crontab().await;
    let target = ObjectRef::namespaced(crontab_gvk(), "default", "my-crontab");
    c.user.delete(&target, &Default::default()).await.unwrap();
    h.config = h.config.clone().with_agent_finalizer();
    h.sync(&c, "my-crontab").await;
    assert!(h.locals().await.is_empty(), "the local copy is deleted");
    assert!(
        remote(&c, "my-crontab").await.is_none(),
        "the shared finalizer no longer holds the kcp object"
    );
}

#[tokio::test]
async fn objects_outside_the_resource_filter_are_not_synced() {
    let mut pr = crontab_pr("crontabs");
    pr.spec.filter = Some(kcp_sync::api::ResourceFilter {
        namespace: None,
        resource: Some(kcp_sync::api::LabelSelector {
            match_labels: Some([("sync".to_owned(), "yes".to_owned())].into()),
            match_expressions: None,
        }),
    });
    let h = Harness::start(pr).await;
    let c = h.synced_crontab().await;
    assert!(h.locals().await.is_empty());
    assert_eq!(
        remote(&c, "my-crontab").await.unwrap().metadata.finalizers,
        None
    );
}

#[tokio::test]
async fn an_object_leaving_the_filter_releases_its_finalizer() {
    let mut pr = crontab_pr("crontabs");
    pr.spec.filter = Some(kcp_sync::api::ResourceFilter {
        namespace: None,
        resource: Some(kcp_sync::api::LabelSelector {
            match_labels: Some([("sync".to_owned(), "yes".to_owned())].into()),
            match_expressions: None,
        }),
    });
    let h = Harness::start(pr).await;
    let c = h.consumer("team-1").await;
    create(&c.user, json!({"apiVersion": "example.com/v1", "kind": "CronTab",
        "metadata": {"name": "my-crontab", "namespace": "default", "labels": {"sync": "yes"}}, "spec": {}})).await;
    h.sync(&c, "my-crontab").await;
    assert_eq!(h.locals().await.len(), 1);
    let mut obj = remote(&c, "my-crontab").await.unwrap();
    obj.metadata.labels = None;
    c.user.replace(&obj, Subresource::Main).await.unwrap();
    h.sync(&c, "my-crontab").await;
    let finalizers = remote(&c, "my-crontab").await.unwrap().metadata.finalizers;
    assert!(finalizers.unwrap_or_default().is_empty());
}

#[tokio::test]
async fn a_missing_kcp_object_needs_nothing() {
    let h = Harness::start(crontab_pr("crontabs")).await;
    let c = h.consumer("team-1").await;
    let step = sync_object(&h.ctx(&c), &h.target, Some("default"), "absent")
        .await
        .unwrap();
    assert_eq!(step, Step::Gone);
}

fn related(
    origin: RelatedResourceOrigin,
    kind: RelatedResourceKind,
    path: &str,
    cleanup: bool,
) -> RelatedResourceSpec {
    RelatedResourceSpec {
        identifier: "creds".into(),
        origin,
        group: String::new(),
        version: String::new(),
        resource: String::new(),
        kind: Some(kind),
        identity_hash: String::new(),
        cleanup,
        projection: None,
        object: RelatedResourceObject {
            spec: RelatedResourceObjectSpec {
                reference: Some(RelatedResourceObjectReference {
                    path: path.into(),
                    regex: None,
                }),
                ..Default::default()
            },
            namespace: None,
        },
        mutation: None,
        watch: None,
        sync_status: false,
    }
}

#[tokio::test]
async fn a_related_resource_projected_into_a_group_only_kcp_serves_resolves_to_its_kind() {
    // Upstream's e2e "use a resource from the same APIExport as a related resource": Backups of
    // eksempel.no on the service cluster, projected into kcp.example.com, which only kcp serves.
    let env = Env::start().await;
    create(
        &env.service,
        schemaless_crd("eksempel.no", ("backups", "Backup")),
    )
    .await;
    let mut spec = related_of(
        RelatedResourceOrigin::Service,
        ("eksempel.no", "v1", "backups"),
        "spec.backup",
    );
    spec.projection = Some(kcp_sync::api::RelatedResourceProjection {
        group: "kcp.example.com".into(),
        ..Default::default()
    });
    let rel = kcp_sync::reconcile::related::RelatedSync::new(
        &env.service,
        None,
        ("crontabs", Default::default()),
        0,
        &spec,
    )
    .await
    .unwrap();
    assert_eq!(
        rel.origin_gvk,
        GroupVersionKind::gvk("eksempel.no", "v1", "Backup")
    );
    assert_eq!(
        rel.dest_gvk,
        GroupVersionKind::gvk("kcp.example.com", "v1", "Backup")
    );
}

/// A related resource of `origin` named by group, version and resource (not by kind), found
/// through `path`.
fn related_of(
    origin: RelatedResourceOrigin,
    (group, version, resource): (&str, &str, &str),
    path: &str,
) -> RelatedResourceSpec {
    let mut spec = related(origin, RelatedResourceKind::Secret, path, false);
    spec.kind = None;
    (spec.group, spec.version, spec.resource) = (group.into(), version.into(), resource.into());
    spec
}

/// A namespaced CRD of `group`/v1 whose objects keep every field.
fn schemaless_crd(group: &str, (plural, kind): (&str, &str)) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind,
                "listKind": format!("{kind}List")},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})
}

fn pr_with(related: RelatedResourceSpec) -> PublishedResource {
    let mut pr = crontab_pr("crontabs");
    pr.spec.related = Some(vec![related]);
    pr
}

fn secret_gvk() -> GroupVersionKind {
    GroupVersionKind::gvk("", "v1", "Secret")
}

/// CronTab `db` of consumer `team-1` synced, with the related service-side Secret `db-creds`
/// created in the local copy's namespace and synced too; answers that namespace.
async fn synced_with_service_secret() -> (Harness, Consumer, String) {
    let h = Harness::start(pr_with(related(
        RelatedResourceOrigin::Service,
        RelatedResourceKind::Secret,
        "spec.secretName",
        false,
    )))
    .await;
    let c = h.consumer("team-1").await;
    crontab(&c, "db", json!({"secretName": "db-creds"})).await;
    h.sync(&c, "db").await;
    let local_ns = h.local().await.metadata.namespace.unwrap();
    create(
        &h.env.service,
        json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "db-creds", "namespace": local_ns}, "data": {"password": "c2VjcmV0"}}),
    )
    .await;
    h.sync(&c, "db").await;
    (h, c, local_ns)
}

#[tokio::test]
async fn a_service_side_secret_is_copied_to_kcp_and_announced_on_the_primary() {
    let (_h, c, _) = synced_with_service_secret().await;
    let copy = c
        .user
        .get(&ObjectRef::namespaced(secret_gvk(), "default", "db-creds"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(copy.data["data"], json!({"password": "c2VjcmV0"}));
    let annotations = remote(&c, "db")
        .await
        .unwrap()
        .metadata
        .annotations
        .unwrap();
    assert_eq!(
        annotations["related-resources.syncagent.kcp.io/creds.0"],
        r#"{"namespace":"default","name":"db-creds","apiVersion":"v1","kind":"Secret"}"#
    );
}

#[tokio::test]
async fn an_announcement_no_related_copy_backs_any_more_is_removed_from_the_primary() {
    let (h, c, local_ns) = synced_with_service_secret().await;
    let key = "related-resources.syncagent.kcp.io/creds.0";
    let annotations = |obj: Option<DynamicObject>| obj.unwrap().metadata.annotations.unwrap();
    assert!(annotations(remote(&c, "db").await).contains_key(key));
    h.env
        .service
        .delete(
            &ObjectRef::namespaced(secret_gvk(), &local_ns, "db-creds"),
            &DeleteOptions::default(),
        )
        .await
        .unwrap();
    h.sync(&c, "db").await;
    assert!(!annotations(remote(&c, "db").await).contains_key(key));
}

#[tokio::test]
async fn a_kcp_side_configmap_is_copied_to_the_service_cluster_with_a_finalizer_on_the_original() {
    let h = Harness::start(pr_with(related(
        RelatedResourceOrigin::Kcp,
        RelatedResourceKind::ConfigMap,
        "spec.configName",
        false,
    )))
    .await;
    let c = h.consumer("team-1").await;
    create(&c.user, json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "default"}, "data": {"k": "v"}})).await;
    crontab(&c, "db", json!({"configName": "settings"})).await;
    h.sync(&c, "db").await;
    let local_ns = h.local().await.metadata.namespace.unwrap();
    let gvk = GroupVersionKind::gvk("", "v1", "ConfigMap");
    let copy = h
        .env
        .service
        .get(&ObjectRef::namespaced(gvk.clone(), &local_ns, "settings"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(copy.data["data"], json!({"k": "v"}));
    let original = c
        .user
        .get(&ObjectRef::namespaced(gvk, "default", "settings"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        original.metadata.finalizers,
        Some(vec!["syncagent.kcp.io/cleanup".to_owned()])
    );
}

#[tokio::test]
async fn deleting_the_primary_removes_kcp_originals_copies_and_their_finalizers() {
    let h = Harness::start(pr_with(related(
        RelatedResourceOrigin::Kcp,
        RelatedResourceKind::ConfigMap,
        "spec.configName",
        false,
    )))
    .await;
    let c = h.consumer("team-1").await;
    create(&c.user, json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "default"}, "data": {"k": "v"}})).await;
    crontab(&c, "db", json!({"configName": "settings"})).await;
    h.sync(&c, "db").await;
    let local_ns = h.local().await.metadata.namespace.unwrap();
    c.user
        .delete(
            &ObjectRef::namespaced(crontab_gvk(), "default", "db"),
            &Default::default(),
        )
        .await
        .unwrap();
    h.sync(&c, "db").await;
    let gvk = GroupVersionKind::gvk("", "v1", "ConfigMap");
    assert!(
        h.env
            .service
            .get(&ObjectRef::namespaced(gvk.clone(), &local_ns, "settings"))
            .await
            .unwrap()
            .is_none()
    );
    let original = c
        .user
        .get(&ObjectRef::namespaced(gvk, "default", "settings"))
        .await
        .unwrap()
        .unwrap();
    assert!(
        original.metadata.finalizers.unwrap_or_default().is_empty(),
        "the kcp original stays, without finalizer"
    );
    assert!(remote(&c, "db").await.is_none());
}

#[tokio::test]
async fn with_cleanup_the_kcp_copy_of_a_service_secret_goes_with_the_primary() {
    let h = Harness::start(pr_with(related(
        RelatedResourceOrigin::Service,
        RelatedResourceKind::Secret,
        "spec.secretName",
        true,
    )))
    .await;
    let c = h.consumer("team-1").await;
    crontab(&c, "db", json!({"secretName": "db-creds"})).await;
    h.sync(&c, "db").await;
    let local_ns = h.local().await.metadata.namespace.unwrap();
    create(
        &h.env.service,
        json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "db-creds", "namespace": local_ns}, "data": {"p": "eA=="}}),
    )
    .await;
    h.sync(&c, "db").await;
    c.user
        .delete(
            &ObjectRef::namespaced(crontab_gvk(), "default", "db"),
            &Default::default(),
        )
        .await
        .unwrap();
    h.sync(&c, "db").await;
    assert!(
        c.user
            .get(&ObjectRef::namespaced(secret_gvk(), "default", "db-creds"))
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        h.env
            .service
            .get(&ObjectRef::namespaced(secret_gvk(), &local_ns, "db-creds"))
            .await
            .unwrap()
            .is_some(),
        "the service original stays"
    );
}

/// A service-origin Secret whose namespace the tenant's object names
/// (`object.namespace.reference: spec.secretNamespace`), with `annotation` on the
/// PublishedResource when given; the Secret `stolen` exists in `kube-system`.
async fn tenant_steered_secret(annotation: Option<&str>) -> (Harness, Consumer) {
    let mut spec = related(
        RelatedResourceOrigin::Service,
        RelatedResourceKind::Secret,
        "spec.secretName",
        false,
    );
    spec.object.namespace = Some(RelatedResourceObjectSpec {
        reference: Some(RelatedResourceObjectReference {
            path: "spec.secretNamespace".into(),
            regex: None,
        }),
        ..Default::default()
    });
    let mut pr = pr_with(spec);
    if let Some(value) = annotation {
        pr.metadata.annotations = Some(
            [(
                kcp_sync::related_namespaces::RELATED_NAMESPACES_ANNOTATION.to_owned(),
                value.to_owned(),
            )]
            .into(),
        );
    }
    let h = Harness::start(pr).await;
    create(
        &h.env.service,
        json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "stolen", "namespace": "kube-system"}, "data": {"token": "YWRtaW4="}}),
    )
    .await;
    let c = h.consumer("team-1").await;
    crontab(
        &c,
        "db",
        json!({"secretName": "stolen", "secretNamespace": "kube-system"}),
    )
    .await;
    (h, c)
}

async fn kcp_copy_of_stolen(c: &Consumer) -> Option<DynamicObject> {
    c.user
        .get(&ObjectRef::namespaced(
            secret_gvk(),
            "kube-system",
            "stolen",
        ))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_tenant_cannot_have_a_secret_of_another_service_namespace_copied_to_kcp() {
    let (h, c) = tenant_steered_secret(None).await;
    let mut refusal = None;
    for _ in 0..20 {
        match sync_object(&h.ctx(&c), &h.target, Some("default"), "db").await {
            Ok(Step::Again) => continue,
            Ok(_) => break,
            Err(err) => {
                refusal = Some(err.to_string());
                break;
            }
        }
    }
    let refusal = refusal.expect("the sync is refused");
    assert!(
        refusal.contains("object.namespace") && refusal.contains("\"kube-system\""),
        "{refusal}"
    );
    assert!(kcp_copy_of_stolen(&c).await.is_none(), "the Secret leaked");
}

#[tokio::test]
async fn a_namespace_the_published_resource_lists_may_be_used() {
    let (h, c) = tenant_steered_secret(Some("kube-system")).await;
    h.sync(&c, "db").await;
    let copy = kcp_copy_of_stolen(&c).await.expect("copied as listed");
    assert_eq!(copy.data["data"], json!({"token": "YWRtaW4="}));
}

/// A related CronTab of the consumer (kcp origin) copied as a service-side Widget, whose CRD has
/// no status subresource, with `syncStatus`.
async fn synced_with_widget_copy() -> (Harness, Consumer) {
    let widget_crd = schemaless_crd("example.com", ("widgets", "Widget"));
    let mut spec = related_of(
        RelatedResourceOrigin::Kcp,
        ("example.com", "v1", "crontabs"),
        "spec.settings",
    );
    spec.projection = Some(kcp_sync::api::RelatedResourceProjection {
        resource: "widgets".into(),
        ..Default::default()
    });
    spec.sync_status = true;
    let pr = pr_with(spec);
    let h = Harness::start_beside(pr, SyncConfig::new(AGENT, STATE_NS), vec![widget_crd])
        .await
        .recording_events();
    let c = h.consumer("team-1").await;
    crontab(&c, "settings", json!({"size": 1})).await;
    crontab(&c, "db", json!({"settings": "settings"})).await;
    h.sync(&c, "db").await;
    (h, c)
}

/// The Event's words are kcp-sync's constant, transcribed from upstream's source after v0.7.0
/// (no upstream build has them): this test checks that the Event is written, not its words.
#[tokio::test]
async fn a_status_that_cannot_be_forwarded_gets_a_status_subresource_missing_warning() {
    let (h, c) = synced_with_widget_copy().await;
    let at = ObjectRef::namespaced(crontab_gvk(), "default", "settings");
    let mut settings = c.user.get(&at).await.unwrap().unwrap();
    settings.data["status"] = json!({"phase": "Ready"});
    c.user
        .replace(&settings, Subresource::Status)
        .await
        .unwrap();
    h.sync(&c, "db").await;
    let events = c
        .user
        .list(
            &GroupVersionKind::gvk("", "v1", "Event"),
            Some("default"),
            &ListOptions::default(),
        )
        .await
        .unwrap()
        .items;
    let warning = events
        .iter()
        .find(|e| e.data["reason"] == STATUS_SUBRESOURCE_MISSING.0)
        .expect("a StatusSubresourceMissing Event");
    assert_eq!(warning.data["type"], "Warning");
    assert_eq!(warning.data["message"], STATUS_SUBRESOURCE_MISSING.1);
    assert_eq!(warning.data["involvedObject"]["name"], "settings");
    assert_eq!(warning.data["involvedObject"]["kind"], "CronTab");
}
