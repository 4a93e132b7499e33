//! Upstream's e2e cases of related resources whose kind the service cluster does not have in
//! kcp's group (api-syncagent v0.7.0, `test/e2e/sync/related_test.go`:
//! `TestSyncNonStandardRelatedResources` and `...MultipleAPIExports`), run with the
//! `kcp-api-syncagent` binary on both backends: a ConfigMap copied into kcp as a Secret; a
//! Backup projected into the agent's own export; and a Backup another provider exports,
//! claimed through its `identityHash` (two providers, each with its APIExport and agent, a
//! consumer bound to both).
//!
//! Each expected copy is upstream's `expectedSyncedRelatedObject`, compared as upstream's
//! `compareUnstructured` compares: everything but the claim labels, the `kcp.io/cluster`
//! annotation and the server-set fields.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kcp_core::apply::{Applier, ApplierConfig, ApplyPlan, RuleSet};
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::{ListOptions, ObjectClient, ObjectPatch, ObjectRef, PatchOptions, Subresource};
use kcp_testbed::{KcpBed, KubeBed};
use serde_json::{Value, json};
use support::process::{Running, free_port, ready};

const AGENT: &str = env!("CARGO_BIN_EXE_kcp-api-syncagent");
/// Upstream's export names, which are also the projected groups.
const INITECH: &str = "initech.example.com";
const INITROID: &str = "initroid.example.com";

/// kcp, the service cluster and a directory for kubeconfigs and logs.
struct World {
    kcp: KcpBed,
    kube: KubeBed,
    service: Arc<dyn ObjectClient>,
    service_kubeconfig: PathBuf,
    dir: PathBuf,
}

fn object(value: Value) -> DynamicObject {
    serde_json::from_value(value).unwrap()
}

async fn apply(client: &dyn ObjectClient, objects: Vec<Value>) {
    let objects = objects.into_iter().map(object).collect();
    let plan = ApplyPlan::build(objects, &RuleSet::default()).unwrap();
    let report = Applier::new(client, ApplierConfig::new("e2e-foreign-export"))
        .apply_until_settled(&plan, Duration::from_secs(60))
        .await;
    assert!(report.is_complete(), "{report}: {report:?}");
}

async fn wait_for<T, F, Fut>(what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(found) = probe().await {
            return found;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn gvk(group: &str, version: &str, kind: &str) -> GroupVersionKind {
    GroupVersionKind::gvk(group, version, kind)
}

/// A namespaced CRD of `group`/v1 whose spec keeps whatever it is given.
fn crd(group: &str, plural: &str, kind: &str) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind,
                "listKind": format!("{kind}List")},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}})
}

impl World {
    async fn start() -> World {
        let kcp = KcpBed::start().await.unwrap();
        let kube = KubeBed::start().await.unwrap();
        let service = kube.object_client().await.unwrap();
        let mut crds: Vec<Value> = kcp_sync::api::crds()
            .iter()
            .map(|c| serde_json::to_value(c).unwrap())
            .collect();
        crds.push(crd("example.com", "crontabs", "CronTab"));
        crds.push(crd("eksempel.no", "backups", "Backup"));
        apply(&*service, crds).await;
        let dir = std::env::temp_dir().join(format!(
            "kcp-rs-foreign-export-{}-{:08x}",
            std::process::id(),
            fastrand::u32(..)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let service_kubeconfig = kube.write_kubeconfig(&dir, "service").unwrap();
        World {
            kcp,
            kube,
            service,
            service_kubeconfig,
            dir,
        }
    }

    /// Upstream's `CreateOrganization` for one provider: the workspace `org` with the APIExport
    /// `export`, once kcp has made its endpoint slice; answers the export as it reads then.
    async fn organization(&self, org: &str, export: &str) -> DynamicObject {
        let root = self.kcp.object_client(self.kcp.root()).await.unwrap();
        kcp_testbed::create_workspace(&*root, org, None)
            .await
            .unwrap();
        let client = self.kcp.object_client(&self.kcp.path(org)).await.unwrap();
        apply(
            &*client,
            vec![
                json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport",
                "metadata": {"name": export}, "spec": {}}),
            ],
        )
        .await;
        let slice = ObjectRef::cluster_scoped(
            gvk("apis.kcp.io", "v1alpha1", "APIExportEndpointSlice"),
            export,
        );
        wait_for("the export's endpoint slice", || async {
            client.get(&slice).await.ok()?
        })
        .await;
        let at = ObjectRef::cluster_scoped(gvk("apis.kcp.io", "v1alpha1", "APIExport"), export);
        wait_for("the export's identity hash", || async {
            let export = client.get(&at).await.ok()??;
            let hash = export.data["status"]["identityHash"].as_str()?;
            (!hash.is_empty()).then_some(export)
        })
        .await
    }

    /// Starts our agent `name` for the export `export` of workspace `org`, publishing the
    /// PublishedResources labelled `agent=<name>`.
    async fn agent(&self, name: &str, org: &str, export: &str) -> Running {
        let kcp_kubeconfig = self
            .kcp
            .write_kubeconfig(&self.dir, &format!("kcp-{name}"), &self.kcp.path(org))
            .unwrap();
        let namespace = self.kube.namespace(&format!("state-{name}"));
        apply(
            &*self.service,
            vec![json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})],
        )
        .await;
        let health = free_port();
        let log = self.dir.join(format!("{name}.log"));
        let child = Command::new(AGENT)
            .arg(format!("--agent-name={name}"))
            .arg(format!("--apiexportendpointslice-ref={export}"))
            .arg("--enable-leader-election=false")
            .arg(format!(
                "--kubeconfig={}",
                self.service_kubeconfig.display()
            ))
            .arg(format!("--kcp-kubeconfig={}", kcp_kubeconfig.display()))
            .arg(format!("--namespace={namespace}"))
            .arg("--log-format=Console")
            .arg(format!("--health-address=127.0.0.1:{health}"))
            .arg(format!("--metrics-address=127.0.0.1:{}", free_port()))
            .arg(format!(
                "--published-resource-selector=agent={}",
                self.label(name)
            ))
            .env_remove("KUBECONFIG")
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
            .spawn()
            .unwrap();
        let running = Running(child);
        wait_for(&format!("agent {name} ready"), || async {
            ready(health).then_some(())
        })
        .await;
        running
    }

    /// The consumer workspace `team-1`: its logical cluster and an admin client of it.
    async fn consumer(&self) -> (String, Arc<dyn ObjectClient>) {
        let root = self.kcp.object_client(self.kcp.root()).await.unwrap();
        let cluster = kcp_testbed::create_workspace(&*root, "team-1", None)
            .await
            .unwrap();
        let client = self
            .kcp
            .object_client(&self.kcp.path("team-1"))
            .await
            .unwrap();
        (cluster, client)
    }

    /// The label value of agent `name`, unique on a shared service cluster.
    fn label(&self, name: &str) -> String {
        self.kube.namespace(name)
    }

    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("{name}.log"))).unwrap_or_default()
    }
}

/// Upstream's `BindToAPIExport`: a v1alpha1 binding of `export` (in workspace `org`) accepting
/// the claims the agent nearly always needs, each with `all: true`.
fn binding(export: &str, org_path: &str) -> Value {
    let claims: Vec<Value> = ["namespaces", "events", "secrets", "configmaps"]
        .iter()
        .map(|r| json!({"group": "", "resource": r, "all": true, "state": "Accepted"}))
        .collect();
    json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding",
        "metadata": {"name": export},
        "spec": {"reference": {"export": {"path": org_path, "name": export}},
            "permissionClaims": claims}})
}

/// Upstream's `AcceptAllPermissionClaims`: the binding of `export` accepts every claim the
/// export lists (read as v1alpha1), once the export claims the related resource by `identity`.
async fn accept_all_claims(world: &World, consumer: &dyn ObjectClient, identity: &str) {
    let org = world
        .kcp
        .object_client(&world.kcp.path("initech"))
        .await
        .unwrap();
    let at = ObjectRef::cluster_scoped(gvk("apis.kcp.io", "v1alpha1", "APIExport"), INITECH);
    let claims = wait_for("the claim on the foreign Backups", || async {
        let export = org.get(&at).await.ok()??;
        let claims = export.data["spec"]["permissionClaims"].as_array()?.clone();
        claims
            .iter()
            .any(|c| c["resource"] == "backups" && c["identityHash"] == identity)
            .then_some(claims)
    })
    .await;
    let accepted: Vec<Value> = claims
        .into_iter()
        .map(|mut claim| {
            claim["state"] = json!("Accepted");
            claim
        })
        .collect();
    consumer
        .patch(
            &ObjectRef::cluster_scoped(gvk("apis.kcp.io", "v1alpha1", "APIBinding"), INITECH),
            Subresource::Main,
            &ObjectPatch::Merge(json!({"spec": {"permissionClaims": accepted}})),
            &PatchOptions::default(),
        )
        .await
        .unwrap();
}

/// Waits until the `ClaimsAccepted` condition of PublishedResource `name` satisfies `holds`
/// (status, message).
async fn claims_accepted(world: &World, name: &str, holds: impl Fn(&str, &str) -> bool) {
    let at = ObjectRef::cluster_scoped(
        gvk("syncagent.kcp.io", "v1alpha1", "PublishedResource"),
        name,
    );
    wait_for(
        &format!("the ClaimsAccepted condition of {name}"),
        || async {
            let pr = world.service.get(&at).await.ok()??;
            let conditions = pr.data["status"]["conditions"].as_array()?.clone();
            let condition = conditions.iter().find(|c| c["type"] == "ClaimsAccepted")?;
            let (status, message) = (
                condition["status"].as_str().unwrap_or_default(),
                condition["message"].as_str().unwrap_or_default(),
            );
            holds(status, message).then_some(())
        },
    )
    .await;
}

/// Waits until the consumer's workspace serves `kind` (upstream's `WaitForBoundAPI`).
async fn bound(consumer: &dyn ObjectClient, kind: GroupVersionKind) {
    wait_for(&format!("{kind:?} served to the consumer"), || async {
        consumer
            .list(&kind, Some("default"), &ListOptions::default())
            .await
            .ok()
            .map(|_| ())
    })
    .await;
}

/// Upstream's CronTabs PublishedResource, for agent `agent`: projected into `group`, naming the
/// copy as upstream's test does (under this test's namespace prefix), relating `related`.
fn crontabs_published(world: &World, agent: &str, group: &str, related: Value) -> Value {
    let synced = world.kube.namespace("synced");
    json!({"apiVersion": "syncagent.kcp.io/v1alpha1", "kind": "PublishedResource",
        "metadata": {"name": world.kube.namespace("publish-crontabs"),
            "labels": {"agent": world.label(agent)}},
        "spec": {
            "resource": {"apiGroup": "example.com", "version": "v1", "kind": "CronTab"},
            "naming": {"name": "{{ .Object.metadata.name }}",
                "namespace": format!("{synced}-{{{{ .Object.metadata.namespace }}}}")},
            "projection": {"group": group},
            "related": [related]}})
}

/// Upstream's Backups PublishedResource, for agent `agent`: projected into `group`, published
/// to be related only (no sync).
fn backups_published(world: &World, agent: &str, group: &str) -> Value {
    json!({"apiVersion": "syncagent.kcp.io/v1alpha1", "kind": "PublishedResource",
        "metadata": {"name": world.kube.namespace("publish-backups"),
            "labels": {"agent": world.label(agent)}},
        "spec": {
            "resource": {"apiGroup": "eksempel.no", "version": "v1", "kind": "Backup"},
            "projection": {"group": group},
            "synchronization": {"enabled": false}}})
}

/// The related Backup `my-backup` of upstream's cases, projected into `group` (with the
/// `identity` of the export providing it, when that is another one).
fn related_backup(group: &str, identity: Option<&str>) -> Value {
    let mut related = json!({"identifier": "the-backup", "origin": "service",
        "resource": "backups", "group": "eksempel.no", "version": "v1",
        "projection": {"group": group},
        "object": {"template": {"template": "my-backup"}}});
    if let Some(identity) = identity {
        related["identityHash"] = json!(identity);
    }
    related
}

/// The namespace the CronTab `default/my-crontab`'s local copy goes to.
fn local_namespace(world: &World) -> String {
    format!("{}-default", world.kube.namespace("synced"))
}

/// The fake operator's related object, in the namespace the local copy goes to. Upstream's
/// tests create it right after the CronTab, racing the agent's first sync (no `watch` is
/// configured, so no agent looks for it later); here it is there before.
async fn create_related_original(world: &World, original: Value) {
    let namespace = local_namespace(world);
    let mut original = original;
    original["metadata"]["namespace"] = json!(namespace);
    apply(
        &*world.service,
        vec![
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
            original,
        ],
    )
    .await;
}

/// Creates upstream's CronTab `default/my-crontab` of group `group` in the consumer.
async fn create_crontab(consumer: &dyn ObjectClient, group: &str) {
    apply(
        consumer,
        vec![
            json!({"apiVersion": format!("{group}/v1"), "kind": "CronTab",
            "metadata": {"name": "my-crontab", "namespace": "default"},
            "spec": {"cronSpec": "* * *", "image": "ubuntu:latest"}}),
        ],
    )
    .await;
}

/// Waits for the copy `at` in the consumer and compares it with upstream's `expected`.
async fn assert_copied_as_upstream(
    world: &World,
    consumer: &dyn ObjectClient,
    at: ObjectRef,
    expected: Value,
    agent: &str,
) {
    let copy = wait_for("the related object copied into kcp", || async {
        consumer.get(&at).await.ok()?
    })
    .await;
    assert_eq!(
        comparable(&copy),
        expected,
        "agent {agent}'s log:\n{}",
        world.log(agent)
    );
}

/// Upstream's `compareUnstructured`: the claim labels, `kcp.io/cluster` and the fields the
/// server sets are not compared.
fn comparable(copy: &DynamicObject) -> Value {
    let mut value = serde_json::to_value(copy).unwrap();
    let metadata = value["metadata"].as_object_mut().unwrap();
    for field in [
        "creationTimestamp",
        "generation",
        "resourceVersion",
        "managedFields",
        "uid",
    ] {
        metadata.remove(field);
    }
    if let Some(labels) = metadata.get_mut("labels").and_then(Value::as_object_mut) {
        labels.retain(|k, _| !k.starts_with("claimed.internal.apis.kcp.io/"));
    }
    if let Some(annotations) = metadata
        .get_mut("annotations")
        .and_then(Value::as_object_mut)
    {
        annotations.remove("kcp.io/cluster");
    }
    for map in ["labels", "annotations"] {
        if metadata
            .get(map)
            .and_then(Value::as_object)
            .is_some_and(|m| m.is_empty())
        {
            metadata.remove(map);
        }
    }
    value
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_of_another_apiexport_is_synced_as_a_related_resource() {
    let world = World::start().await;
    world.organization("initech", INITECH).await;
    let initroid = world.organization("initroid", INITROID).await;
    let identity = initroid.data["status"]["identityHash"]
        .as_str()
        .unwrap()
        .to_owned();
    let (team, consumer) = world.consumer().await;
    // Initech's consumers consume Initroid's API too, so they bind both exports.
    apply(
        &*consumer,
        vec![
            binding(INITROID, &world.kcp.path("initroid")),
            binding(INITECH, &world.kcp.path("initech")),
        ],
    )
    .await;
    apply(
        &*world.service,
        vec![
            crontabs_published(
                &world,
                "initech",
                INITECH,
                related_backup(INITROID, Some(&identity)),
            ),
            backups_published(&world, "initroid", INITROID),
        ],
    )
    .await;
    let _agents = [
        world.agent("initech", "initech", INITECH).await,
        world.agent("initroid", "initroid", INITROID).await,
    ];
    bound(&*consumer, gvk(INITECH, "v1", "CronTab")).await;
    bound(&*consumer, gvk(INITROID, "v1", "Backup")).await;
    // Beyond upstream: until the consumer accepts the claim on Initroid's Backups, the
    // PublishedResource says so, naming the consumer and the claim; then it says all is well.
    let crontabs = world.kube.namespace("publish-crontabs");
    claims_accepted(&world, &crontabs, |status, message| {
        status == "False" && message.contains(&format!("{team} ({INITROID}/backups)"))
    })
    .await;
    accept_all_claims(&world, &*consumer, &identity).await;
    claims_accepted(&world, &crontabs, |status, _| status == "True").await;

    backup_is_copied_as_upstream(&world, &*consumer, (INITECH, INITROID), "initech").await;
}

/// Upstream's Backup case: the fake operator's Backup `my-backup` appears beside the local
/// copy of a CronTab (of group `crontabs`) created in the consumer, and agent `agent` copies it
/// into kcp under the group `backups`, as upstream expects it.
async fn backup_is_copied_as_upstream(
    world: &World,
    consumer: &dyn ObjectClient,
    (crontabs, backups): (&str, &str),
    agent: &str,
) {
    create_related_original(
        world,
        json!({"apiVersion": "eksempel.no/v1", "kind": "Backup",
            "metadata": {"name": "my-backup"}, "spec": {"source": "", "destination": ""}}),
    )
    .await;
    create_crontab(consumer, crontabs).await;
    let at = ObjectRef::namespaced(gvk(backups, "v1", "Backup"), "default", "my-backup");
    let expected = json!({"apiVersion": format!("{backups}/v1"), "kind": "Backup",
        "metadata": {"name": "my-backup", "namespace": "default"},
        "spec": {"source": "", "destination": ""}});
    assert_copied_as_upstream(world, consumer, at, expected, agent).await;
}

/// The export of upstream's `TestSyncNonStandardRelatedResources`, also the projected group.
const KCP_EXAMPLE: &str = "kcp.example.com";

/// Upstream's `TestSyncNonStandardRelatedResources` set-up: the provider `org` with its export,
/// the agent `bob` publishing CronTabs (relating `related`) and Backups, and the consumer
/// `team-1` bound as upstream binds it; answers the consumer once it is served CronTabs, and
/// the running agent.
async fn one_export_relating(world: &World, related: Value) -> (Arc<dyn ObjectClient>, Running) {
    world.organization("org", KCP_EXAMPLE).await;
    let (_, consumer) = world.consumer().await;
    apply(
        &*consumer,
        vec![binding(KCP_EXAMPLE, &world.kcp.path("org"))],
    )
    .await;
    apply(
        &*world.service,
        vec![
            crontabs_published(world, "bob", KCP_EXAMPLE, related),
            backups_published(world, "bob", KCP_EXAMPLE),
        ],
    )
    .await;
    let agent = world.agent("bob", "org", KCP_EXAMPLE).await;
    bound(&*consumer, gvk(KCP_EXAMPLE, "v1", "CronTab")).await;
    (consumer, agent)
}

/// Upstream's case "turn a related ConfigMap into a Secret".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_related_configmap_is_copied_into_kcp_as_a_secret() {
    let world = World::start().await;
    let related = json!({"identifier": "credentials", "origin": "service",
        "resource": "configmaps", "version": "v1",
        "projection": {"resource": "secrets"},
        "object": {"template": {"template": "my-credentials"}}});
    let (consumer, _agent) = one_export_relating(&world, related).await;
    create_related_original(
        &world,
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "my-credentials"}, "data": {"password": "aHVudGVyMg=="}}),
    )
    .await;
    create_crontab(&*consumer, KCP_EXAMPLE).await;
    let at = ObjectRef::namespaced(gvk("", "v1", "Secret"), "default", "my-credentials");
    // Upstream's expected Secret: data {"password": []byte("hunter2")}, type Opaque.
    let expected = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "my-credentials", "namespace": "default"},
        "data": {"password": "aHVudGVyMg=="}, "type": "Opaque"});
    assert_copied_as_upstream(&world, &*consumer, at, expected, "bob").await;
}

/// Upstream's case "use a resource from the same APIExport as a related resource".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_of_the_same_apiexport_is_synced_as_a_related_resource() {
    let world = World::start().await;
    let (consumer, _agent) = one_export_relating(&world, related_backup(KCP_EXAMPLE, None)).await;
    backup_is_copied_as_upstream(&world, &*consumer, (KCP_EXAMPLE, KCP_EXAMPLE), "bob").await;
}
