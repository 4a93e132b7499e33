//! kcp-api-syncagent beside upstream's api-syncagent v0.7.0 (built from its Go module by the test
//! bed), on the same real kcp and kube-apiserver, with the same PublishedResource: what the Go
//! agent writes is the expected value. Each agent has its own provider workspace, consumer
//! workspace and state namespace, and picks its PublishedResource by label; the answers are
//! compared after replacing what necessarily differs (the consumer's logical cluster, the agent's
//! name, uids, resourceVersions, timestamps). Always the real backend.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kcp_core::apply::{Applier, ApplierConfig, ApplyPlan, RuleSet};
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::{KubeObjectClient, ListOptions, ObjectClient, ObjectRef, parse_manifests};
use kcp_testbed::{Endpoint, KcpBed};
use serde_json::{Value, json};
use support::process::{Running, free_port, ready};

const RS_AGENT: &str = env!("CARGO_BIN_EXE_kcp-api-syncagent");
const DATABASE_CRD: &str = include_str!("../../examples/playground/sync/01-service.yaml");
/// The PublishedResource CRD as upstream ships it, in its Go module.
const UPSTREAM_CRD: &str = "deploy/crd/kcp.io/syncagent.kcp.io_publishedresources.yaml";

/// Which agent a side of the comparison runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Go,
    Rs,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Go => "go",
            Side::Rs => "rs",
        }
    }
}

/// One side's workspaces, namespace and kubeconfigs.
struct Lane {
    side: Side,
    /// `<side>-<test>`: names on the shared service cluster are unique per test.
    tag: String,
    provider: Arc<dyn ObjectClient>,
    consumer: Arc<dyn ObjectClient>,
    consumer_cluster: String,
    provider_cluster: String,
    consumer_path: String,
    agent: String,
    kcp_kubeconfig: PathBuf,
    namespace: String,
}

/// The shared servers, the service cluster's client and the two lanes.
struct World {
    bed: KcpBed,
    service: Arc<dyn ObjectClient>,
    service_kubeconfig: PathBuf,
    dir: PathBuf,
}

fn write_kubeconfig(dir: &Path, name: &str, endpoint: &Endpoint) -> PathBuf {
    kcp_testbed::kubeconfig::write_file(dir, name, endpoint).unwrap()
}

async fn apply(client: &dyn ObjectClient, objects: Vec<DynamicObject>) {
    let plan = ApplyPlan::build(objects, &RuleSet::default()).unwrap();
    let report = Applier::new(client, ApplierConfig::new("oracle-test"))
        .apply_until_settled(&plan, Duration::from_secs(60))
        .await;
    assert!(report.is_complete(), "{report}: {report:?}");
}

async fn apply_yaml(client: &dyn ObjectClient, yaml: &str) {
    apply(client, parse_manifests("test.yaml", yaml).unwrap()).await;
}

fn object(value: Value) -> DynamicObject {
    serde_json::from_value(value).unwrap()
}

async fn wait_for<T, F, Fut>(what: &str, within: Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(found) = probe().await {
            return found;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Upstream's module directory (downloaded by the peer's build).
fn upstream_module() -> PathBuf {
    let built = kcp_testbed::go_build::build("api-syncagent").unwrap();
    let module = format!("github.com/kcp-dev/api-syncagent@{}", built.pin.version);
    let out = Command::new(kcp_testbed::go_build::go_command())
        .args(["mod", "download", "-json", &module])
        .current_dir(built.binary.parent().unwrap().join("module"))
        .env("GOFLAGS", "-mod=mod")
        .env("GONOSUMDB", "github.com/kcp-dev")
        .env("GOTOOLCHAIN", "local")
        .output()
        .unwrap();
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    PathBuf::from(answer["Dir"].as_str().unwrap())
}

/// Every Event reason and message ours writes on kcp objects is written, in those words, by
/// upstream's agent: read in its source (`internal/`), not in ours.
#[test]
fn every_event_ours_writes_on_kcp_objects_is_worded_as_in_upstreams_source() {
    let internal = upstream_module().join("internal");
    let mut source = String::new();
    let mut dirs = vec![internal];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "go") {
                source.push_str(&std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    for (reason, message) in kcp_sync::reconcile::kcp_events::ALL {
        let written = format!("\"{reason}\", \"{message}\"");
        assert!(source.contains(&written), "upstream never writes {written}");
    }
}

impl World {
    async fn start() -> World {
        let bed = KcpBed::start_real().await.unwrap();
        let kube = tokio::task::spawn_blocking(kcp_testbed::shared_kube)
            .await
            .unwrap()
            .unwrap();
        let service: Arc<dyn ObjectClient> =
            Arc::new(KubeObjectClient::new(kube.admin.client().unwrap()));
        let crd = tokio::task::spawn_blocking(upstream_module).await.unwrap();
        apply_yaml(
            &*service,
            &std::fs::read_to_string(crd.join(UPSTREAM_CRD)).unwrap(),
        )
        .await;
        let crds: Vec<DynamicObject> = parse_manifests("service", DATABASE_CRD)
            .unwrap()
            .into_iter()
            .filter(|o| {
                o.types
                    .as_ref()
                    .is_some_and(|t| t.kind == "CustomResourceDefinition")
            })
            .collect();
        apply(&*service, crds).await;
        let dir = kcp_testbed::real::credentials()
            .unwrap()
            .dir
            .join(format!("oracle-{}", bed.root().rsplit(':').next().unwrap()));
        std::fs::create_dir_all(&dir).unwrap();
        let service_kubeconfig = write_kubeconfig(&dir, "service", &kube.admin);
        World {
            bed,
            service,
            service_kubeconfig,
            dir,
        }
    }

    /// The side's tag in this test: `<side>-<the test's workspace suffix>`.
    fn tag(&self, side: Side) -> String {
        let root = self.bed.root().rsplit(':').next().unwrap_or_default();
        format!("{}-{}", side.name(), root.trim_start_matches("e2e-"))
    }

    /// A lane: provider workspace with the APIExport `databases`, a consumer workspace, a state
    /// namespace on the service cluster and a PublishedResource labelled for the side.
    async fn lane(&self, side: Side, published: Value) -> Lane {
        let (provider_ws, consumer_ws) = (
            format!("provider-{}", side.name()),
            format!("consumer-{}", side.name()),
        );
        let root = self.bed.object_client(self.bed.root()).await.unwrap();
        let consumer_cluster = kcp_testbed::create_workspace(&*root, &consumer_ws, None)
            .await
            .unwrap();
        let provider_cluster = kcp_testbed::create_workspace(&*root, &provider_ws, None)
            .await
            .unwrap();
        let provider_path = self.bed.path(&provider_ws);
        let provider = self.bed.object_client(&provider_path).await.unwrap();
        apply(
            &*provider,
            vec![object(
                json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport",
                "metadata": {"name": "databases"}, "spec": {}}),
            )],
        )
        .await;
        // kcp adds the export's endpoint slice a moment later; upstream's agent exits without
        // it (ours waits), so both start only once it is there.
        let slice = ObjectRef::cluster_scoped(
            gvk("apis.kcp.io", "v1alpha1", "APIExportEndpointSlice"),
            "databases",
        );
        wait_for(
            "the export's endpoint slice",
            Duration::from_secs(60),
            || async { provider.get(&slice).await.ok()? },
        )
        .await;
        let tag = self.tag(side);
        let namespace = format!("sync-{tag}");
        let mut published = published;
        published["metadata"]["name"] = json!(format!("databases-{tag}"));
        published["metadata"]["labels"] = json!({"oracle": tag});
        apply(
            &*self.service,
            vec![
                object(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})),
                object(published),
            ],
        )
        .await;
        let consumer_path = self.bed.path(&consumer_ws);
        let kcp_kubeconfig = write_kubeconfig(
            &self.dir,
            &format!("kcp-{}", side.name()),
            &self.bed.real_endpoint(&provider_path).unwrap(),
        );
        Lane {
            side,
            provider,
            consumer_cluster,
            provider_cluster,
            agent: format!("oracle-{tag}"),
            tag,
            consumer: self.bed.object_client(&consumer_path).await.unwrap(),
            consumer_path,
            kcp_kubeconfig,
            namespace,
        }
    }

    /// Starts `binary` as the agent `agent_name` for `lane`, with upstream's e2e flags.
    async fn agent(&self, binary: &Path, lane: &Lane) -> Running {
        self.agent_with(binary, lane, &[]).await
    }

    /// [`World::agent`] with `extra` flags.
    async fn agent_with(&self, binary: &Path, lane: &Lane, extra: &[&str]) -> Running {
        self.agent_as(binary, lane, &self.service_kubeconfig, extra)
            .await
    }

    /// [`World::agent_with`] with the service cluster reached through `service_kubeconfig`.
    async fn agent_as(
        &self,
        binary: &Path,
        lane: &Lane,
        service_kubeconfig: &Path,
        extra: &[&str],
    ) -> Running {
        let agent_name = &lane.agent;
        let health = free_port();
        // Beside the peers' logs, which the test bed keeps for a day (not its data directories).
        let binary_name = binary.file_name().unwrap().to_string_lossy();
        let run = self.dir.file_name().unwrap().to_string_lossy();
        let log = self
            .dir
            .with_file_name(format!("{run}-{agent_name}-{binary_name}.log"));
        let child = Command::new(binary)
            .arg(format!("--agent-name={agent_name}"))
            .arg("--apiexportendpointslice-ref=databases")
            .arg("--enable-leader-election=false")
            .arg(format!("--kubeconfig={}", service_kubeconfig.display()))
            .arg(format!(
                "--kcp-kubeconfig={}",
                lane.kcp_kubeconfig.display()
            ))
            .arg(format!("--namespace={}", lane.namespace))
            .arg("--log-format=Console")
            .arg(format!("--health-address=127.0.0.1:{health}"))
            .arg(format!("--metrics-address=127.0.0.1:{}", free_port()))
            .arg(format!("--published-resource-selector=oracle={}", lane.tag))
            .args(extra)
            .env_remove("KUBECONFIG")
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
            .spawn()
            .unwrap();
        let running = Running(child);
        let deadline = Instant::now() + Duration::from_secs(90);
        // Upstream registers no readiness check (its /readyz answers 404): its probe server
        // listening is as far as it tells.
        let up = |side: Side| match side {
            Side::Go => std::net::TcpStream::connect(("127.0.0.1", health)).is_ok(),
            Side::Rs => ready(health),
        };
        while !up(lane.side) {
            assert!(
                Instant::now() < deadline,
                "{agent_name} not ready:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        running
    }
}

/// Both lanes of a fresh world, each with its agent running.
struct SideBySide {
    world: World,
    go: Lane,
    rs: Lane,
    _agents: [Running; 2],
}

impl SideBySide {
    async fn start(published: Value) -> SideBySide {
        let world = World::start().await;
        let (go, rs) = (
            world.lane(Side::Go, published.clone()).await,
            world.lane(Side::Rs, published).await,
        );
        let _agents = [
            world.agent(&go_agent_binary(), &go).await,
            world.agent(Path::new(RS_AGENT), &rs).await,
        ];
        SideBySide {
            world,
            go,
            rs,
            _agents,
        }
    }
}

fn go_agent_binary() -> PathBuf {
    kcp_testbed::go_build::build("api-syncagent")
        .unwrap()
        .binary
}

/// The example PublishedResource of the playground: Databases, with their credentials Secret
/// coming back from the service cluster.
fn databases_published() -> Value {
    let docs = parse_manifests("service", DATABASE_CRD).unwrap();
    let pr = docs
        .into_iter()
        .find(|o| {
            o.types
                .as_ref()
                .is_some_and(|t| t.kind == "PublishedResource")
        })
        .unwrap();
    serde_json::to_value(pr).unwrap()
}

fn gvk(group: &str, version: &str, kind: &str) -> GroupVersionKind {
    GroupVersionKind::gvk(group, version, kind)
}

/// The lane's APIExport as `apis.kcp.io/v1alpha2`, once it lists a resource.
async fn filled_export(lane: &Lane) -> DynamicObject {
    filled_export_within(lane, Duration::from_secs(120)).await
}

/// [`filled_export`], waiting `within` at most.
async fn filled_export_within(lane: &Lane, within: Duration) -> DynamicObject {
    let at = ObjectRef::cluster_scoped(gvk("apis.kcp.io", "v1alpha2", "APIExport"), "databases");
    wait_for(
        &format!("the {} agent's APIExport resources", lane.side.name()),
        within,
        || async {
            let export = lane.provider.get(&at).await.ok()??;
            let resources = export.data["spec"]["resources"].as_array()?;
            (!resources.is_empty()).then_some(export)
        },
    )
    .await
}

/// The claims of an export, sorted, as comparable values.
fn claims(export: &DynamicObject) -> Vec<Value> {
    let mut claims: Vec<Value> = export.data["spec"]["permissionClaims"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut c| {
            if let Some(verbs) = c["verbs"].as_array_mut() {
                verbs.sort_by_key(|v| v.to_string());
            }
            c
        })
        .collect();
    claims.sort_by_key(|c| c.to_string());
    claims
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_agents_publish_the_same_schema_and_the_same_claims() {
    let SideBySide {
        world: _,
        go,
        rs,
        _agents,
    } = SideBySide::start(databases_published()).await;
    let (go_export, rs_export) = (filled_export(&go).await, filled_export(&rs).await);
    assert_eq!(
        rs_export.data["spec"]["resources"], go_export.data["spec"]["resources"],
        "the schema's name (a hash of its spec) and the export's resource entry"
    );
    assert_eq!(claims(&rs_export), claims(&go_export));
    // A consumer accepting the claims as read at v1alpha1 (upstream's e2e utilities do) needs
    // `all: true` on each: kcp gives it only from its annotation of the v1alpha1 form.
    let at_v1alpha1 =
        ObjectRef::cluster_scoped(gvk("apis.kcp.io", "v1alpha1", "APIExport"), "databases");
    let (go_v1, rs_v1) = (
        go.provider.get(&at_v1alpha1).await.unwrap().unwrap(),
        rs.provider.get(&at_v1alpha1).await.unwrap().unwrap(),
    );
    assert_eq!(
        claims(&rs_v1),
        claims(&go_v1),
        "the claims read at v1alpha1"
    );
    let schema = go_export.data["spec"]["resources"][0]["schema"]
        .as_str()
        .unwrap()
        .to_string();
    let at =
        ObjectRef::cluster_scoped(gvk("apis.kcp.io", "v1alpha1", "APIResourceSchema"), &schema);
    let (go_ars, rs_ars) = (
        go.provider.get(&at).await.unwrap().unwrap(),
        rs.provider.get(&at).await.unwrap().unwrap(),
    );
    assert_eq!(rs_ars.data["spec"], go_ars.data["spec"]);
    assert_eq!(
        normalized(&rs, &rs_ars)["metadata"],
        normalized(&go, &go_ars)["metadata"]
    );
}

/// Both agents watch their APIExport: a resource removed from it by hand is back within
/// seconds (the resync of either is minutes away), and both write back the same entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_edited_apiexport_is_repaired_at_once_as_upstream_repairs_it() {
    let SideBySide {
        world: _,
        go,
        rs,
        _agents,
    } = SideBySide::start(databases_published()).await;
    let mut repaired = Vec::new();
    for lane in [&go, &rs] {
        let mut export = filled_export(lane).await;
        let before = export.data["spec"]["resources"].clone();
        export.data["spec"]["resources"] = json!([]);
        lane.provider
            .replace(&export, kcp_core::Subresource::Main)
            .await
            .unwrap();
        let after = filled_export_within(lane, Duration::from_secs(20)).await;
        assert_eq!(after.data["spec"]["resources"], before);
        repaired.push(after.data["spec"]["resources"].clone());
    }
    assert_eq!(repaired[1], repaired[0]);
}

/// `object` with what necessarily differs between the lanes replaced by placeholders (logical
/// clusters, agent name, the side's suffix) and what every write changes removed.
fn normalized(lane: &Lane, object: &impl serde::Serialize) -> Value {
    let side = lane.side.name();
    let text = serde_json::to_string(object)
        .unwrap()
        .replace(&lane.consumer_cluster, "<consumer>")
        .replace(&lane.provider_cluster, "<provider>")
        .replace(&lane.consumer_path, "<consumer-path>")
        .replace(&lane.agent, "<agent>")
        .replace(&lane.tag, "<side>")
        .replace(&format!("-{side}\""), "-<side>\"");
    let mut value: Value = serde_json::from_str(&text).unwrap();
    strip_volatile(&mut value);
    value
}

/// Removes uids, resourceVersions, timestamps, generations and managedFields, at any depth, and
/// names kcp's claim labels (whose key hashes the export's cluster) by their prefix only.
fn strip_volatile(value: &mut Value) {
    const CLAIMED: &str = "claimed.internal.apis.kcp.io/";
    match value {
        Value::Object(map) => {
            let claimed: Vec<String> = map
                .keys()
                .filter(|k| k.starts_with(CLAIMED))
                .cloned()
                .collect();
            for key in claimed {
                if let Some(label) = map.remove(&key) {
                    map.insert(format!("{CLAIMED}<export>"), label);
                }
            }
            for key in [
                "uid",
                "resourceVersion",
                "creationTimestamp",
                "managedFields",
                "generation",
                "firstTimestamp",
                "lastTimestamp",
                "eventTime",
            ] {
                map.remove(key);
            }
            map.values_mut().for_each(strip_volatile);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_volatile),
        _ => {}
    }
}

/// The two ways upstream documents binding an export and accepting its claims.
#[derive(Debug, Clone, Copy)]
enum Binding {
    /// `apis.kcp.io/v1alpha1`, every claim accepted with `all: true`.
    V1alpha1All,
    /// `apis.kcp.io/v1alpha2`, every claim accepted with `verbs: ["*"]`.
    V1alpha2AllVerbs,
}

impl Binding {
    fn object(self, provider_path: &str) -> DynamicObject {
        let claims = [
            ("", "events"),
            ("", "namespaces"),
            ("", "secrets"),
            ("", "configmaps"),
        ];
        let (api_version, accepted): (&str, Vec<Value>) = match self {
            Binding::V1alpha1All => (
                "apis.kcp.io/v1alpha1",
                claims
                    .iter()
                    .map(|(g, r)| json!({"group": g, "resource": r, "all": true, "state": "Accepted"}))
                    .collect(),
            ),
            Binding::V1alpha2AllVerbs => (
                "apis.kcp.io/v1alpha2",
                claims
                    .iter()
                    .map(|(g, r)| json!({"group": g, "resource": r, "verbs": ["*"],
                        "selector": {"matchAll": true}, "state": "Accepted"}))
                    .collect(),
            ),
        };
        object(json!({"apiVersion": api_version, "kind": "APIBinding",
            "metadata": {"name": "databases"},
            "spec": {"reference": {"export": {"path": provider_path, "name": "databases"}},
                "permissionClaims": accepted}}))
    }
}

/// Binds the lane's consumer to its provider's export (v1alpha1, every claim accepted with
/// `all: true`, as upstream's e2e does) and creates the Database `orders` in `default`.
async fn order_a_database(lane: &Lane) {
    order_a_database_bound(lane, Binding::V1alpha1All).await;
}

/// [`order_a_database`] with the binding made `binding`'s way.
async fn order_a_database_bound(lane: &Lane, binding: Binding) {
    bind(lane, binding).await;
    order(lane).await;
}

/// Binds the lane's consumer to its provider's export.
async fn bind(lane: &Lane, binding: Binding) {
    let provider_path = lane.consumer_path.replace(
        &format!("consumer-{}", lane.side.name()),
        &format!("provider-{}", lane.side.name()),
    );
    apply(&*lane.consumer, vec![binding.object(&provider_path)]).await;
}

/// Creates the Database `orders` in `default` of the lane's consumer.
async fn order(lane: &Lane) {
    apply(
        &*lane.consumer,
        vec![object(
            json!({"apiVersion": "db.example.com/v1", "kind": "Database",
            "metadata": {"name": "orders", "namespace": "default"},
            "spec": {"size": "small", "secretName": "orders-credentials"}}),
        )],
    )
    .await;
}

fn database() -> GroupVersionKind {
    gvk("db.example.com", "v1", "Database")
}

/// The lane's local copies of consumer objects on the service cluster (by its agent's label).
async fn local_copies(world: &World, lane: &Lane) -> Vec<DynamicObject> {
    let options = ListOptions {
        label_selector: Some(format!("syncagent.kcp.io/agent-name={}", lane.agent)),
        ..ListOptions::default()
    };
    world
        .service
        .list(&database(), None, &options)
        .await
        .unwrap()
        .items
}

/// Waits for the lane's local copy and provisions it as the service's operator would.
async fn provision_local_copy(world: &World, lane: &Lane) {
    let local = wait_for("a local copy", Duration::from_secs(120), || async {
        local_copies(world, lane).await.into_iter().next()
    })
    .await;
    provision(world, &local).await;
}

/// Plays the database operator on the service cluster: the local copy gets a status and its
/// credentials Secret (owned by it).
async fn provision(world: &World, local: &DynamicObject) {
    let namespace = local.metadata.namespace.clone().unwrap();
    let mut ready = local.clone();
    ready.data["status"] = json!({"phase": "Ready", "endpoint": "db:5432"});
    world.service.update_status(&ready).await.unwrap();
    let owner = json!([{"apiVersion": "db.example.com/v1", "kind": "Database",
        "name": local.metadata.name, "uid": local.metadata.uid, "controller": true}]);
    world
        .service
        .create(&object(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "orders-credentials", "namespace": namespace,
                "ownerReferences": owner},
            "stringData": {"password": "s3cret"}})))
        .await
        .unwrap();
}

/// Everything an agent wrote for one consumer object, normalized: the kcp object, the local
/// copy, the credentials Secret that came back, the state Secrets and the Events in kcp.
async fn footprint(world: &World, lane: &Lane) -> Value {
    let at = |gvk, name: &str| ObjectRef::namespaced(gvk, "default", name);
    let kcp_object = lane.consumer.get(&at(database(), "orders")).await.unwrap();
    let secret = lane
        .consumer
        .get(&at(gvk("", "v1", "Secret"), "orders-credentials"))
        .await
        .unwrap();
    let locals = local_copies(world, lane).await;
    let settings = lane
        .consumer
        .get(&at(gvk("", "v1", "ConfigMap"), "orders-settings"))
        .await
        .unwrap();
    let mut local_settings = Vec::new();
    for namespace in locals
        .iter()
        .filter_map(|l| l.metadata.namespace.as_deref())
    {
        let copy = world
            .service
            .get(&ObjectRef::namespaced(
                gvk("", "v1", "ConfigMap"),
                namespace,
                "orders-settings",
            ))
            .await
            .unwrap();
        local_settings.extend(copy);
    }
    let state_options = ListOptions::default();
    let mut states: Vec<DynamicObject> = world
        .service
        .list(
            &gvk("", "v1", "Secret"),
            Some(&lane.namespace),
            &state_options,
        )
        .await
        .unwrap()
        .items;
    states.retain(|s| {
        s.metadata
            .name
            .as_deref()
            .is_some_and(|n| n.starts_with("obj-state-"))
    });
    let states: Vec<Value> = states.iter().map(decoded_state).collect();
    let mut events: Vec<Value> = lane
        .consumer
        .list(
            &gvk("", "v1", "Event"),
            Some("default"),
            &ListOptions::default(),
        )
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|e| {
            json!({"reason": e.data["reason"], "type": e.data["type"],
                "message": e.data["message"], "object": e.data["involvedObject"]["kind"],
                "source": e.data["source"], "reportingComponent": e.data["reportingComponent"]})
        })
        .collect();
    events.sort_by_key(|e| e.to_string());
    events.dedup();
    normalized(
        lane,
        &json!({"kcp": kcp_object, "secret": secret, "locals": locals, "states": states,
            "events": events, "settings": settings, "local_settings": local_settings}),
    )
}

/// A state Secret with its data as the decoded snapshots, sorted: the keys hash the consumer's
/// cluster with the object, so they cannot be compared across lanes (the takeover test
/// compares them on one consumer).
fn decoded_state(secret: &DynamicObject) -> Value {
    use base64::Engine as _;
    let mut value = serde_json::to_value(secret).unwrap();
    let data = value["data"].as_object().cloned().unwrap_or_default();
    let mut snapshots: Vec<Value> = data
        .values()
        .map(|encoded| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded.as_str().unwrap())
                .unwrap();
            serde_json::from_slice(&bytes).unwrap()
        })
        .collect();
    snapshots.sort_by_key(|s| s.to_string());
    value["data"] = Value::Array(snapshots);
    value
}

/// Asserts each named part of our footprint equals upstream's, printing both when not.
fn assert_same_parts(ours: &Value, upstream: &Value, parts: &[&str]) {
    for part in parts {
        assert_eq!(
            ours[part],
            upstream[part],
            "{part} differs from upstream's:\nours:     {}\nupstream: {}",
            serde_json::to_string_pretty(&ours[part]).unwrap(),
            serde_json::to_string_pretty(&upstream[part]).unwrap()
        );
    }
}

/// Waits until the lane's Database is Ready in kcp and its Secret came back.
async fn settled(lane: &Lane) {
    let at = |gvk, name: &str| ObjectRef::namespaced(gvk, "default", name);
    wait_for(
        &format!("the {} agent's status and Secret in kcp", lane.side.name()),
        Duration::from_secs(120),
        || async {
            let db = lane.consumer.get(&at(database(), "orders")).await.ok()??;
            let secret = lane
                .consumer
                .get(&at(gvk("", "v1", "Secret"), "orders-credentials"))
                .await
                .ok()??;
            (db.data["status"]["phase"] == "Ready").then_some(secret)
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_object_syncs_down_and_back_as_upstream_syncs_it() {
    syncs_down_and_back_alike(Binding::V1alpha1All).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_bound_with_v1alpha2_all_verbs_is_served_as_upstream_serves_it() {
    syncs_down_and_back_alike(Binding::V1alpha2AllVerbs).await;
}

async fn syncs_down_and_back_alike(binding: Binding) {
    let SideBySide {
        world,
        go,
        rs,
        _agents,
    } = SideBySide::start(databases_published()).await;
    for lane in [&go, &rs] {
        filled_export(lane).await;
        order_a_database_bound(lane, binding).await;
        provision_local_copy(&world, lane).await;
    }
    settled(&go).await;
    settled(&rs).await;
    // Let the Events and the last status writes land on both sides.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (go_footprint, rs_footprint) = (footprint(&world, &go).await, footprint(&world, &rs).await);
    assert_same_parts(
        &rs_footprint,
        &go_footprint,
        &[
            "kcp",
            "locals",
            "secret",
            "states",
            "events",
            "settings",
            "local_settings",
        ],
    );
}

/// Every object an agent wrote or keeps for the lane, by a readable key: (uid, resourceVersion).
async fn versions(
    world: &World,
    lane: &Lane,
) -> std::collections::BTreeMap<String, (String, String)> {
    let mut seen = std::collections::BTreeMap::new();
    let mut note = |side: &str, items: Vec<DynamicObject>| {
        for o in items {
            let kind = o.types.as_ref().map(|t| t.kind.clone()).unwrap_or_default();
            let key = format!(
                "{side} {kind} {}/{}",
                o.metadata.namespace.clone().unwrap_or_default(),
                o.metadata.name.clone().unwrap_or_default()
            );
            let stamp = (
                o.metadata.uid.clone().unwrap_or_default(),
                o.metadata.resource_version.clone().unwrap_or_default(),
            );
            seen.insert(key, stamp);
        }
    };
    let all = ListOptions::default();
    let secret = gvk("", "v1", "Secret");
    note(
        "kcp",
        lane.consumer
            .list(&database(), None, &all)
            .await
            .unwrap()
            .items,
    );
    note(
        "kcp",
        lane.consumer
            .list(&secret, Some("default"), &all)
            .await
            .unwrap()
            .items,
    );
    let export = gvk("apis.kcp.io", "v1alpha2", "APIExport");
    note(
        "kcp",
        lane.provider.list(&export, None, &all).await.unwrap().items,
    );
    let schemas = gvk("apis.kcp.io", "v1alpha1", "APIResourceSchema");
    note(
        "kcp",
        lane.provider
            .list(&schemas, None, &all)
            .await
            .unwrap()
            .items,
    );
    let locals = local_copies(world, lane).await;
    let local_namespaces: std::collections::BTreeSet<String> = locals
        .iter()
        .filter_map(|l| l.metadata.namespace.clone())
        .collect();
    note("service", locals);
    for namespace in local_namespaces.iter().chain([&lane.namespace]) {
        let secrets = world
            .service
            .list(&secret, Some(namespace), &all)
            .await
            .unwrap()
            .items;
        note("service", secrets);
    }
    seen
}

/// The keys of the state Secrets in the lane's namespace, per Secret.
async fn state_keys(world: &World, lane: &Lane) -> Vec<(String, Vec<String>)> {
    let secrets = world
        .service
        .list(
            &gvk("", "v1", "Secret"),
            Some(&lane.namespace),
            &ListOptions::default(),
        )
        .await
        .unwrap()
        .items;
    secrets
        .into_iter()
        .filter(|s| {
            s.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("obj-state-"))
        })
        .map(|s| {
            let keys = s.data["data"]
                .as_object()
                .map(|d| d.keys().cloned().collect())
                .unwrap_or_default();
            (s.metadata.name.unwrap_or_default(), keys)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ours_takes_over_from_the_go_agent_without_recreating_or_orphaning_anything() {
    const DATABASES: usize = 5;
    let world = World::start().await;
    let lane = world.lane(Side::Go, databases_published()).await;
    let go_agent = world.agent(&go_agent_binary(), &lane).await;
    filled_export(&lane).await;
    order_a_database(&lane).await;
    for i in 1..DATABASES {
        lane.consumer
            .create(&object(
                json!({"apiVersion": "db.example.com/v1", "kind": "Database",
                "metadata": {"name": format!("orders-{i}"), "namespace": "default"},
                "spec": {"size": "small", "secretName": format!("orders-{i}-credentials")}}),
            ))
            .await
            .unwrap();
    }
    let locals = wait_for("every local copy", Duration::from_secs(120), || async {
        let locals = local_copies(&world, &lane).await;
        (locals.len() == DATABASES).then_some(locals)
    })
    .await;
    provision(
        &world,
        locals
            .iter()
            .find(|l| l.data["spec"]["secretName"] == "orders-credentials")
            .unwrap(),
    )
    .await;
    settled(&lane).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (before, keys_before) = (
        versions(&world, &lane).await,
        state_keys(&world, &lane).await,
    );
    drop(go_agent);

    // Ours, with the Go agent's name, namespace, kubeconfigs and selector.
    let _ours = world.agent(Path::new(RS_AGENT), &lane).await;
    // One change after the takeover, to see ours is at work.
    let at = ObjectRef::namespaced(database(), "default", "orders-1");
    let mut changed = lane.consumer.get(&at).await.unwrap().unwrap();
    changed.data["spec"]["size"] = json!("large");
    lane.consumer
        .replace(&changed, kcp_core::Subresource::Main)
        .await
        .unwrap();
    wait_for(
        "the change in the local copy",
        Duration::from_secs(60),
        || async {
            local_copies(&world, &lane).await.into_iter().find(|l| {
                l.data["spec"]["secretName"] == "orders-1-credentials"
                    && l.data["spec"]["size"] == "large"
            })
        },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (after, keys_after) = (
        versions(&world, &lane).await,
        state_keys(&world, &lane).await,
    );

    let recreated: Vec<&String> = before
        .iter()
        .filter(|(key, (uid, _))| after.get(*key).is_some_and(|(u, _)| u != uid))
        .map(|(key, _)| key)
        .collect();
    let gone: Vec<&String> = before.keys().filter(|k| !after.contains_key(*k)).collect();
    let added: Vec<&String> = after.keys().filter(|k| !before.contains_key(*k)).collect();
    let written: Vec<&String> = before
        .iter()
        .filter(|(key, (uid, rv))| after.get(*key).is_some_and(|(u, r)| u == uid && r != rv))
        .map(|(key, _)| key)
        .collect();
    eprintln!(
        "takeover of {} objects: {} written {written:#?}, {} added {added:#?}",
        before.len(),
        written.len(),
        added.len()
    );
    assert!(recreated.is_empty(), "re-created: {recreated:#?}");
    assert!(gone.is_empty(), "gone: {gone:#?}");
    assert!(added.is_empty(), "added: {added:#?}");
    // Only what the one change touches is written: the kcp object (by the test), its local
    // copy and its state Secret; the export, the schema and every other object stay as they were.
    let state_prefix = format!("service Secret {}/obj-state-", lane.namespace);
    assert_eq!(written.len(), 3, "{written:#?}");
    assert!(written.contains(&&"kcp Database default/orders-1".to_string()));
    assert!(written.iter().any(|k| k.starts_with("service Database ")));
    assert!(written.iter().any(|k| k.starts_with(&state_prefix)));
    assert_eq!(keys_after.len(), keys_before.len(), "state Secrets");
    for ((name, before), (_, after)) in keys_before.iter().zip(&keys_after) {
        assert_eq!(
            after, before,
            "the keys of {name}: ours reads what the Go agent wrote"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_per_agent_finalizer_objects_the_go_agent_held_are_released_on_deletion() {
    let world = World::start().await;
    let lane = world.lane(Side::Go, databases_published()).await;
    let go_agent = world.agent(&go_agent_binary(), &lane).await;
    filled_export(&lane).await;
    order_a_database(&lane).await;
    lane.consumer
        .create(&object(
            json!({"apiVersion": "db.example.com/v1", "kind": "Database",
            "metadata": {"name": "kept", "namespace": "default"},
            "spec": {"size": "small", "secretName": "kept-credentials"}}),
        ))
        .await
        .unwrap();
    wait_for("both local copies", Duration::from_secs(120), || async {
        (local_copies(&world, &lane).await.len() == 2).then_some(())
    })
    .await;
    drop(go_agent);
    // Deleted while no agent runs: upstream's shared finalizer holds it.
    let orders = ObjectRef::namespaced(database(), "default", "orders");
    lane.consumer
        .delete(&orders, &kcp_core::DeleteOptions::default())
        .await
        .unwrap();
    let _ours = world
        .agent_with(Path::new(RS_AGENT), &lane, &["--per-agent-finalizer"])
        .await;
    wait_for(
        "the deleted object gone from kcp",
        Duration::from_secs(60),
        || async {
            lane.consumer
                .get(&orders)
                .await
                .unwrap()
                .is_none()
                .then_some(())
        },
    )
    .await;
    let kept = ObjectRef::namespaced(database(), "default", "kept");
    let own = format!("syncagent.kcp.io/cleanup-{}", lane.agent);
    wait_for(
        "the shared finalizer swapped for ours",
        Duration::from_secs(60),
        || async {
            let live = lane.consumer.get(&kept).await.unwrap()?;
            (live.metadata.finalizers == Some(vec![own.clone()])).then_some(())
        },
    )
    .await;
    assert_eq!(
        local_copies(&world, &lane).await.len(),
        1,
        "the deleted one's copy went too"
    );
}

/// The playground's PublishedResource of a built-in kind (ConfigMaps as KubeConfigMaps), and one
/// of Deployments, whose schema from OpenAPI v3 real kcp refused (empty defaults of enums).
fn builtins_published() -> [Value; 2] {
    let docs = parse_manifests(
        "configmaps",
        include_str!("../../examples/playground/sync/publish-configmaps.yaml"),
    )
    .unwrap();
    let configmaps = serde_json::to_value(&docs[0]).unwrap();
    let mut deployments = configmaps.clone();
    deployments["spec"] = json!({
        "resource": {"apiGroup": "apps", "kind": "Deployment", "version": "v1"},
        "projection": {"group": "kcp.example.com", "kind": "KubeDeployment", "plural": "kubedeployments"}});
    [configmaps, deployments]
}

/// The lane's export once it lists `count` resources.
async fn export_with(lane: &Lane, count: usize) -> DynamicObject {
    let at = ObjectRef::cluster_scoped(gvk("apis.kcp.io", "v1alpha2", "APIExport"), "databases");
    wait_for(
        &format!(
            "{count} resources in the {} agent's APIExport",
            lane.side.name()
        ),
        Duration::from_secs(120),
        || async {
            let export = lane.provider.get(&at).await.ok()??;
            let resources = export.data["spec"]["resources"].as_array()?;
            (resources.len() == count).then_some(export)
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn builtin_kinds_get_the_schemas_upstream_gives_them() {
    let [configmaps, deployments] = builtins_published();
    let SideBySide {
        world,
        go,
        rs,
        _agents,
    } = SideBySide::start(configmaps).await;
    for side in [Side::Go, Side::Rs] {
        let mut second = deployments.clone();
        second["metadata"]["name"] = json!(format!("deployments-{}", world.tag(side)));
        second["metadata"]["labels"] = json!({"oracle": world.tag(side)});
        apply(&*world.service, vec![object(second)]).await;
    }
    let (go_export, rs_export) = (export_with(&go, 2).await, export_with(&rs, 2).await);
    let sorted = |export: &DynamicObject| {
        let mut resources = export.data["spec"]["resources"].as_array().unwrap().clone();
        resources.sort_by_key(|r| r["name"].to_string());
        resources
    };
    assert_eq!(
        sorted(&rs_export),
        sorted(&go_export),
        "schema names: hashes of the schemas"
    );
    for resource in sorted(&go_export) {
        let at = ObjectRef::cluster_scoped(
            gvk("apis.kcp.io", "v1alpha1", "APIResourceSchema"),
            resource["schema"].as_str().unwrap(),
        );
        let go_ars = go.provider.get(&at).await.unwrap().unwrap();
        let rs_ars = rs.provider.get(&at).await.unwrap().unwrap();
        assert_eq!(rs_ars.data["spec"], go_ars.data["spec"]);
    }
}

/// The Databases PublishedResource with a second related resource: a ConfigMap the consumer
/// writes in kcp, copied to the local copy's namespace. Its name is a fixed template, as in
/// upstream's e2e: a template is rendered on each side against that side's primary, so
/// `{{ .Object.metadata.name }}` would name the copy after the local copy's hashed name.
fn databases_with_settings_published() -> Value {
    let mut published = databases_published();
    let related = published["spec"]["related"].as_array_mut().unwrap();
    related.push(
        json!({"identifier": "settings", "origin": "kcp", "kind": "ConfigMap",
        "object": {"template": {"template": "orders-settings"}}}),
    );
    published
}

/// Beyond upstream: a related kcp object created after its primary was synced (and labelled
/// into the virtual workspace by kcp a moment later) is copied without any `watch` configured;
/// upstream's agent looks again only when the primary changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_related_object_from_kcp_created_after_its_primary_is_copied_by_ours() {
    let world = World::start().await;
    let rs = world
        .lane(Side::Rs, databases_with_settings_published())
        .await;
    let _agent = world.agent(Path::new(RS_AGENT), &rs).await;
    filled_export(&rs).await;
    bind(&rs, Binding::V1alpha1All).await;
    order(&rs).await;
    provision_local_copy(&world, &rs).await;
    settled(&rs).await;
    create_settings(&rs).await;
    settings_copied(&world, &rs, Duration::from_secs(60)).await;
}

/// The related ConfigMap `orders-settings` of `databases_with_settings_published`, in kcp.
async fn create_settings(lane: &Lane) {
    lane.consumer
        .create(&object(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "orders-settings", "namespace": "default"},
            "data": {"tier": "gold"}})))
        .await
        .unwrap();
}

/// Waits until the lane's agent copied `orders-settings` to the service cluster.
async fn settings_copied(world: &World, lane: &Lane, within: Duration) {
    let what = format!("the {} agent's copy of the ConfigMap", lane.side.name());
    wait_for(&what, within, || async {
        let footprint = footprint(world, lane).await;
        footprint["local_settings"]
            .as_array()
            .is_some_and(|c| !c.is_empty())
            .then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_related_object_from_kcp_is_copied_as_upstream_copies_it() {
    let SideBySide {
        world,
        go,
        rs,
        _agents,
    } = SideBySide::start(databases_with_settings_published()).await;
    for lane in [&go, &rs] {
        filled_export(lane).await;
        bind(lane, Binding::V1alpha1All).await;
        // Before the Database, as upstream's e2e creates it: kcp labels claimed objects for the
        // virtual workspace a moment after they are written.
        create_settings(lane).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        order(lane).await;
        provision_local_copy(&world, lane).await;
    }
    for lane in [&rs, &go] {
        settled(lane).await;
        settings_copied(&world, lane, Duration::from_secs(120)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (go_footprint, rs_footprint) = (footprint(&world, &go).await, footprint(&world, &rs).await);
    assert_same_parts(
        &rs_footprint,
        &go_footprint,
        &["kcp", "settings", "local_settings", "events"],
    );
}

/// The kcp user `kcp-api-syncagent`, bound only by `deploy/kcp-api-syncagent/rbac-kcp.yaml`
/// (for the export `databases`) in the lane's provider workspace.
async fn restricted_kcp_kubeconfig(world: &World, lane: &Lane) -> PathBuf {
    let rbac = support::service_account::deploy_file("kcp-api-syncagent", "rbac-kcp.yaml");
    assert!(
        rbac.contains("my-api"),
        "the shipped kcp RBAC names its export my-api"
    );
    support::service_account::apply(
        &*lane.provider,
        "rbac-kcp.yaml",
        &rbac.replace("my-api", "databases"),
    )
    .await;
    let ids = &kcp_testbed::real::credentials().unwrap().identities;
    let token = &ids.user("kcp-api-syncagent").unwrap().token;
    let provider_path = world.bed.path(&format!("provider-{}", lane.side.name()));
    let endpoint = world
        .bed
        .real_endpoint(&provider_path)
        .unwrap()
        .with_token(token);
    write_kubeconfig(&world.dir, "kcp-restricted", &endpoint)
}

/// The ServiceAccount `kcp-api-syncagent` of the lane's namespace, bound only by
/// `deploy/kcp-api-syncagent/rbac-service.yaml` and the rules our `rbac` subcommand prints for
/// the lane's PublishedResource.
async fn restricted_service_kubeconfig(world: &World, lane: &Lane) -> PathBuf {
    let ns = &lane.namespace;
    let rbac = support::service_account::deploy_file("kcp-api-syncagent", "rbac-service.yaml")
        .replace(
            "namespace: kcp-api-syncagent}",
            &format!("namespace: {ns}}}"),
        );
    let mut objects = parse_manifests("rbac-service.yaml", &rbac).unwrap();
    for o in &mut objects {
        let kind = o
            .types
            .as_ref()
            .map(|t| t.kind.as_str())
            .unwrap_or_default();
        if matches!(kind, "ServiceAccount" | "Role" | "RoleBinding") {
            o.metadata.namespace = Some(ns.clone());
        }
    }
    let options = kcp_core::PatchOptions::apply("real-rbac-test");
    for o in objects {
        world.service.apply(&o, &options).await.unwrap();
    }
    let printed = Command::new(RS_AGENT)
        .arg(format!(
            "--kubeconfig={}",
            world.service_kubeconfig.display()
        ))
        .arg(format!("--namespace={ns}"))
        .arg(format!("--published-resource-selector=oracle={}", lane.tag))
        .arg("rbac")
        .env_remove("KUBECONFIG")
        .output()
        .unwrap();
    assert!(
        printed.status.success(),
        "rbac: {}",
        String::from_utf8_lossy(&printed.stderr)
    );
    let published = String::from_utf8(printed.stdout).unwrap();
    support::service_account::apply(&*world.service, "printed rbac", &published).await;
    let kube = tokio::task::spawn_blocking(kcp_testbed::shared_kube)
        .await
        .unwrap()
        .unwrap();
    let path = world.dir.join("service-restricted.kubeconfig");
    support::service_account::kubeconfig(&kube.admin, ns, "kcp-api-syncagent", &path).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ours_syncs_down_and_back_with_only_the_shipped_rbac_on_both_sides() {
    let world = World::start().await;
    let mut lane = world.lane(Side::Rs, databases_published()).await;
    lane.kcp_kubeconfig = restricted_kcp_kubeconfig(&world, &lane).await;
    let service_kubeconfig = restricted_service_kubeconfig(&world, &lane).await;
    let _agent = world
        .agent_as(Path::new(RS_AGENT), &lane, &service_kubeconfig, &[])
        .await;
    filled_export(&lane).await;
    order_a_database(&lane).await;
    provision_local_copy(&world, &lane).await;
    settled(&lane).await;
}
