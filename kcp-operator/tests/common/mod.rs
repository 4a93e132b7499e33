//! Shared test helpers: a kcp-sim with the CRDs and the spec's example installation, and the
//! controllers kcp-sim lacks, played by the tests (cert-manager and the Deployment controller).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kcp_core::apply::{Applier, ApplierConfig, ApplyPlan, RuleSet};
use kcp_core::client::ListOptions;
use kcp_core::{ObjectClient, ObjectClientExt as _, parse_manifests};
use kcp_operator::addresser::{Addresser, Endpoint};
use kcp_operator::api::*;
use kcp_operator::controller::{ControllerGroup, run_with};
use kcp_operator::reconcile::{PassContext, config, kubeconfig, virtualworkspace, workload};
use kcp_operator::render::certmanager::{self, Certificate, CertificateStatus};
use kcp_sim::{Config, Server};
use kube::api::ObjectMeta;
use std::sync::Arc;

pub const NS: &str = "kcp";

pub async fn setup() -> (Server, kcp_sim::SimClient, Kcp) {
    let (sim, client) = setup_with(Config::default(), true).await;
    (sim, client, Kcp::start().await)
}

/// The kcp of the installation, played by a kcp-sim in kcp mode with the workspace
/// `root:team-a` (the example Kubeconfig's target), reached through [`Kcp`] as the operator's
/// [`Addresser`].
pub struct Kcp {
    pub server: Arc<Server>,
}

impl Kcp {
    pub async fn start() -> Self {
        let server = Server::start(Config::kcp()).await.unwrap();
        let kcp = Kcp {
            server: Arc::new(server),
        };
        kcp.add_workspace("team-a").await;
        kcp
    }

    /// Creates the workspace `root:<name>` and waits until it is Ready.
    pub async fn add_workspace(&self, name: &str) {
        let root = self.server.object_client("root");
        let ws = format!(
            "apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}}}\n"
        );
        apply_objects(&root, parse_manifests("ws.yaml", &ws).unwrap()).await;
        for _ in 0..200 {
            let w: Option<kcp_core::kcp::Workspace> = root.get_typed(None, name).await.unwrap();
            if w.and_then(|w| w.status).and_then(|s| s.phase).as_deref() == Some("Ready") {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("workspace root:{name} did not become ready");
    }

    /// The ClusterRoleBindings in a workspace.
    pub async fn bindings(&self, workspace: &str) -> Vec<ClusterRoleBinding> {
        let client = self.server.object_client(workspace);
        client
            .list_typed(None, &ListOptions::default())
            .await
            .unwrap()
    }
}

#[async_trait::async_trait]
impl Addresser for Kcp {
    async fn client(
        &self,
        _management: &dyn ObjectClient,
        _root_shard: &RootShard,
        _endpoint: Endpoint<'_>,
        workspace: &str,
    ) -> kcp_operator::Result<Arc<dyn ObjectClient>> {
        Ok(Arc::new(self.server.object_client(workspace)))
    }
}

/// A sim with the CRDs and the namespace, and the examples when `examples`.
pub async fn setup_with(config: Config, examples: bool) -> (Server, kcp_sim::SimClient) {
    let sim = Server::start(config).await.unwrap();
    let client = sim.object_client("");
    prepare(&client, NS).await;
    if examples {
        apply_examples(&client).await;
    }
    (sim, client)
}

/// The management cluster of one test on the backend `KCP_RS_BACKEND` names (a kcp-sim of its
/// own, or a namespace of its own on the shared real kube-apiserver), prepared as
/// [`prepare`] does, with the spec's examples in [`Bed::ns`]. The installation's kcp is
/// kcp-sim on both backends ([`Kcp`]).
pub struct Bed {
    pub kube: kcp_testbed::KubeBed,
    pub client: Arc<dyn ObjectClient>,
    pub ns: String,
    pub kcp: Kcp,
}

pub async fn setup_bed() -> Bed {
    let bed = bare_bed().await;
    apply_examples_in(bed.client.as_ref(), &bed.ns).await;
    bed
}

/// A [`Bed`] without the examples.
pub async fn bare_bed() -> Bed {
    bed_on(kcp_testbed::KubeBed::start().await.unwrap()).await
}

/// A [`Bed`] without the examples on kcp-sim, whatever `KCP_RS_BACKEND` says (for tests of
/// the fast suite that run the controllers in parallel, each on its own server).
pub async fn bare_sim_bed() -> Bed {
    let sim = Server::start(Config::default()).await.unwrap();
    bed_on(kcp_testbed::KubeBed::Sim(sim)).await
}

async fn bed_on(kube: kcp_testbed::KubeBed) -> Bed {
    let client = kube.object_client().await.unwrap();
    let ns = kube.namespace(NS);
    prepare(client.as_ref(), &ns).await;
    Bed {
        kube,
        client,
        ns,
        kcp: Kcp::start().await,
    }
}

/// The CRDs (the operator's and cert-manager's), namespace `ns`, and the CacheServer's
/// external etcd client certificate, which the user provides.
pub async fn prepare(client: &dyn ObjectClient, ns: &str) {
    let mut crds: Vec<_> = crds().into_iter().chain(certmanager::crds()).collect();
    crds.sort_by_key(|c| c.metadata.name.clone());
    let mut objects: Vec<kube::api::DynamicObject> = crds
        .iter()
        .map(|c| serde_json::from_value(serde_json::to_value(c).unwrap()).unwrap())
        .collect();
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(ns.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let etcd = Secret {
        metadata: ObjectMeta {
            name: Some("cache-etcd-client".into()),
            namespace: Some(ns.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    objects.push(kcp_core::typed::to_dynamic(&namespace).unwrap());
    objects.push(kcp_core::typed::to_dynamic(&etcd).unwrap());
    apply_objects(client, objects).await;
}

pub async fn apply_objects(client: &dyn ObjectClient, objects: Vec<kube::api::DynamicObject>) {
    let plan = ApplyPlan::build(objects, &RuleSet::default()).unwrap();
    let report = Applier::new(client, ApplierConfig::new("test"))
        .apply_until_settled(&plan, std::time::Duration::from_secs(60))
        .await;
    assert!(report.is_complete(), "{report}: {report:?}");
}

/// A typed Kubernetes object the helpers read and write.
pub trait Typed:
    kube::Resource<DynamicType = ()>
    + serde::de::DeserializeOwned
    + serde::Serialize
    + Clone
    + Send
    + Sync
{
}

impl<K> Typed for K where
    K: kube::Resource<DynamicType = ()>
        + serde::de::DeserializeOwned
        + serde::Serialize
        + Clone
        + Send
        + Sync
{
}

pub async fn all<K>(client: &dyn ObjectClient, ns: &str) -> Vec<K>
where
    K: Typed,
{
    client
        .list_typed(Some(ns), &ListOptions::default())
        .await
        .unwrap()
}

/// Like [`all`], but empty on errors (for the helpers playing controllers under faults).
pub async fn try_all<K>(client: &dyn ObjectClient, ns: &str) -> Vec<K>
where
    K: Typed,
{
    client
        .list_typed(Some(ns), &ListOptions::default())
        .await
        .unwrap_or_default()
}

/// One pass of every config and workload reconciler over every object in `ns`.
pub async fn reconcile_all(client: &dyn ObjectClient, ns: &str, kcp: &Kcp) {
    let ctx = PassContext::new(client, kcp);
    for o in all::<CacheServer>(client, ns).await {
        config::reconcile_cache_server(&ctx, &o).await.unwrap();
    }
    for o in all::<RootShard>(client, ns).await {
        config::reconcile_root_shard(&ctx, &o).await.unwrap();
    }
    for o in all::<Shard>(client, ns).await {
        config::reconcile_shard(&ctx, &o).await.unwrap();
    }
    for o in all::<FrontProxy>(client, ns).await {
        config::reconcile_front_proxy(&ctx, &o).await.unwrap();
    }
    for o in all::<Kubeconfig>(client, ns).await {
        kubeconfig::reconcile_kubeconfig(&ctx, &o).await.unwrap();
    }
    for o in all::<VirtualWorkspace>(client, ns).await {
        virtualworkspace::reconcile_virtual_workspace(&ctx, &o)
            .await
            .unwrap();
    }
    for o in all::<CompiledVirtualWorkspace>(client, ns).await {
        virtualworkspace::reconcile_compiled_virtual_workspace(&ctx, &o)
            .await
            .unwrap();
    }
    for o in all::<CompiledCacheServer>(client, ns).await {
        workload::reconcile_compiled_cache_server(&ctx, &o)
            .await
            .unwrap();
    }
    for o in all::<CompiledRootShard>(client, ns).await {
        workload::reconcile_compiled_root_shard(&ctx, &o)
            .await
            .unwrap();
    }
    for o in all::<CompiledShard>(client, ns).await {
        workload::reconcile_compiled_shard(&ctx, &o).await.unwrap();
    }
    for o in all::<CompiledFrontProxy>(client, ns).await {
        workload::reconcile_compiled_front_proxy(&ctx, &o)
            .await
            .unwrap();
    }
}

/// Plays cert-manager: every Certificate not ready gets its Secret and `Ready=True`.
pub async fn issue_certificates(client: &dyn ObjectClient, ns: &str, revision: i64) {
    for mut cert in try_all::<Certificate>(client, ns).await {
        if cert.is_ready() && revision == 1 {
            continue;
        }
        let name = cert.spec.secret_name.clone();
        let pem = |kind: &str| {
            ByteString(
                format!("-----BEGIN {kind}-----\n{name}-{revision}\n-----END {kind}-----\n")
                    .into_bytes(),
            )
        };
        let data = BTreeMap::from([
            ("tls.crt".to_owned(), pem("CERTIFICATE")),
            ("tls.key".to_owned(), pem("PRIVATE KEY")),
            ("ca.crt".to_owned(), pem("CERTIFICATE")),
        ]);
        let labels = cert.spec.secret_template.as_ref().map(|t| t.labels.clone());
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(ns.into()),
                labels,
                ..Default::default()
            },
            data: Some(data),
            ..Default::default()
        };
        let written = match client.get_typed::<Secret>(Some(ns), &name).await {
            Ok(None) => client.create_typed(&secret).await.is_ok(),
            Ok(Some(mut live)) => {
                live.data = secret.data;
                client.replace_typed(&live).await.is_ok()
            }
            Err(_) => false,
        };
        if !written {
            continue;
        }
        cert.status = Some(CertificateStatus {
            conditions: vec![condition("Ready", "True")],
            revision: Some(revision),
            not_after: Some("2027-11-23T00:00:00Z".into()),
            ..Default::default()
        });
        let dynamic = kcp_core::typed::to_dynamic(&cert).unwrap();
        let _ = client.update_status(&dynamic).await;
    }
}

pub fn condition(
    type_: &str,
    status: &str,
) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
    k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
        type_: type_.into(),
        status: status.into(),
        reason: "Test".into(),
        message: String::new(),
        observed_generation: None,
        last_transition_time: kcp_core::runtime::conditions::now(),
    }
}

/// Plays the Deployment controller: every Deployment gets all replicas updated and ready.
pub async fn run_deployments(client: &dyn ObjectClient, ns: &str) {
    for mut dep in try_all::<Deployment>(client, ns).await {
        let replicas = dep.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        let wanted = DeploymentStatus {
            replicas: Some(replicas),
            updated_replicas: Some(replicas),
            ready_replicas: Some(replicas),
            available_replicas: Some(replicas),
            ..Default::default()
        };
        if dep.status.as_ref() == Some(&wanted) {
            continue;
        }
        dep.status = Some(wanted);
        let _ = client
            .update_status(&kcp_core::typed::to_dynamic(&dep).unwrap())
            .await;
    }
}

/// The resourceVersion of every object the installation in `ns` consists of, by kind and
/// name: equal before and after a pass when the pass wrote nothing (on either backend).
pub async fn versions(client: &dyn ObjectClient, ns: &str) -> BTreeMap<String, String> {
    async fn of<K>(client: &dyn ObjectClient, ns: &str, out: &mut BTreeMap<String, String>)
    where
        K: Typed,
    {
        for o in all::<K>(client, ns).await {
            let meta = o.meta();
            out.insert(
                format!("{} {}", K::kind(&()), meta.name.clone().unwrap_or_default()),
                meta.resource_version.clone().unwrap_or_default(),
            );
        }
    }
    let mut out = BTreeMap::new();
    of::<RootShard>(client, ns, &mut out).await;
    of::<Shard>(client, ns, &mut out).await;
    of::<FrontProxy>(client, ns, &mut out).await;
    of::<CacheServer>(client, ns, &mut out).await;
    of::<Kubeconfig>(client, ns, &mut out).await;
    of::<VirtualWorkspace>(client, ns, &mut out).await;
    of::<CompiledRootShard>(client, ns, &mut out).await;
    of::<CompiledShard>(client, ns, &mut out).await;
    of::<CompiledFrontProxy>(client, ns, &mut out).await;
    of::<CompiledCacheServer>(client, ns, &mut out).await;
    of::<CompiledVirtualWorkspace>(client, ns, &mut out).await;
    of::<Certificate>(client, ns, &mut out).await;
    of::<certmanager::Issuer>(client, ns, &mut out).await;
    of::<Secret>(client, ns, &mut out).await;
    of::<k8s_openapi::api::core::v1::ConfigMap>(client, ns, &mut out).await;
    of::<k8s_openapi::api::core::v1::Service>(client, ns, &mut out).await;
    of::<Deployment>(client, ns, &mut out).await;
    of::<k8s_openapi::api::policy::v1::PodDisruptionBudget>(client, ns, &mut out).await;
    out
}

/// Reconciles, issues and runs until nothing changes any more.
pub async fn converge(client: &dyn ObjectClient, ns: &str, kcp: &Kcp) {
    let mut last = BTreeMap::new();
    for _ in 0..12 {
        reconcile_all(client, ns, kcp).await;
        issue_certificates(client, ns, 1).await;
        run_deployments(client, ns).await;
        let now = versions(client, ns).await;
        if now == last {
            return;
        }
        last = now;
    }
    panic!("the installation did not converge");
}

/// Converges, then asserts that one more pass over the unchanged installation writes nothing.
pub async fn assert_a_second_pass_writes_nothing(client: &dyn ObjectClient, ns: &str, kcp: &Kcp) {
    converge(client, ns, kcp).await;
    let before = versions(client, ns).await;
    reconcile_all(client, ns, kcp).await;
    let after = versions(client, ns).await;
    let changed: Vec<_> = after
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(*v))
        .map(|(k, _)| k)
        .collect();
    assert!(
        changed.is_empty(),
        "a no-op pass must not write: {changed:?}"
    );
}

/// Applies the spec's example manifests.
pub async fn apply_examples(client: &dyn ObjectClient) {
    apply_examples_in(client, NS).await;
}

/// Applies the spec's example manifests into namespace `ns`.
pub async fn apply_examples_in(client: &dyn ObjectClient, ns: &str) {
    apply_objects(client, examples_in(ns)).await;
}

/// The spec's example manifests, in namespace `ns`.
pub fn examples_in(ns: &str) -> Vec<kube::api::DynamicObject> {
    let examples = include_str!("../fixtures/examples.yaml")
        .replace("namespace: kcp}", &format!("namespace: {ns}}}"));
    parse_manifests("examples.yaml", &examples).unwrap()
}

/// Both controller groups of the operator (`run_with`), running until stopped.
pub struct Operator {
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
    /// Set by the controllers once every cache synced.
    pub synced: Arc<std::sync::atomic::AtomicBool>,
}

impl Operator {
    /// Runs `groups` against `client`, reaching the installation's kcp through `kcp`.
    pub fn start(client: kube::Client, groups: &[ControllerGroup], kcp: &Kcp) -> Operator {
        let addresser: Arc<dyn Addresser> = Arc::new(Kcp {
            server: kcp.server.clone(),
        });
        let groups: std::collections::BTreeSet<_> = groups.iter().copied().collect();
        let (stop, mut rx) = tokio::sync::watch::channel(false);
        let synced = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = synced.clone();
        let task = tokio::spawn(async move {
            run_with(
                client,
                &groups,
                &kcp_operator::pki::Pki::CertManager,
                addresser,
                kcp_operator::metrics::Metrics::unregistered(),
                flag,
                async move {
                    let _ = rx.wait_for(|s| *s).await;
                },
            )
            .await;
        });
        Operator { stop, task, synced }
    }

    /// Both groups against the bed's management cluster.
    pub async fn on(bed: &Bed) -> Operator {
        let client = kube::Client::try_from(bed.kube.config().await.unwrap()).unwrap();
        let groups = [ControllerGroup::Config, ControllerGroup::Workload];
        Operator::start(client, &groups, &bed.kcp)
    }

    /// Stops the controllers and waits until they drained.
    pub async fn stop(self) {
        self.stop.send(true).unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(30), self.task)
            .await
            .expect("controllers drain")
            .unwrap();
    }
}

/// Plays cert-manager and the Deployment controller in `bed` until `done` holds (60 s at most).
pub async fn wait_until<F, Fut>(bed: &Bed, what: &str, done: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        issue_certificates(bed.client.as_ref(), &bed.ns, 1).await;
        run_deployments(bed.client.as_ref(), &bed.ns).await;
        if done().await {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("{what} did not happen within 60 s");
}
