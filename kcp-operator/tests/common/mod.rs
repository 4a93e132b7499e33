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
use kcp_operator::reconcile::{config, kubeconfig, virtualworkspace, workload};
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
        let root = server.object_client("root");
        let ws = "apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata: {name: team-a}\n";
        apply_objects(&root, parse_manifests("ws.yaml", ws).unwrap()).await;
        for _ in 0..200 {
            let w: Option<kcp_core::kcp::Workspace> = root.get_typed(None, "team-a").await.unwrap();
            if w.and_then(|w| w.status).and_then(|s| s.phase).as_deref() == Some("Ready") {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        Kcp {
            server: Arc::new(server),
        }
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
    let mut crds: Vec<_> = crds().into_iter().chain(certmanager::crds()).collect();
    crds.sort_by_key(|c| c.metadata.name.clone());
    let objects: Vec<kube::api::DynamicObject> = crds
        .iter()
        .map(|c| serde_json::from_value(serde_json::to_value(c).unwrap()).unwrap())
        .collect();
    apply_objects(&client, objects).await;
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(NS.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    client.create_typed(&ns).await.unwrap();
    // The CacheServer's external etcd client certificate, which the user provides.
    let etcd = Secret {
        metadata: ObjectMeta {
            name: Some("cache-etcd-client".into()),
            namespace: Some(NS.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    client.create_typed(&etcd).await.unwrap();
    if examples {
        apply_examples(&client).await;
    }
    (sim, client)
}

pub async fn apply_objects(client: &dyn ObjectClient, objects: Vec<kube::api::DynamicObject>) {
    let plan = ApplyPlan::build(objects, &RuleSet::default()).unwrap();
    let report = Applier::new(client, ApplierConfig::new("test"))
        .apply(&plan)
        .await;
    assert!(report.is_complete(), "{report}");
}

pub async fn all<K>(client: &dyn ObjectClient) -> Vec<K>
where
    K: kube::Resource<DynamicType = ()>
        + serde::de::DeserializeOwned
        + serde::Serialize
        + Clone
        + Send
        + Sync,
{
    client
        .list_typed(Some(NS), &ListOptions::default())
        .await
        .unwrap()
}

/// Like [`all`], but empty on errors (for the helpers playing controllers under faults).
pub async fn try_all<K>(client: &dyn ObjectClient) -> Vec<K>
where
    K: kube::Resource<DynamicType = ()>
        + serde::de::DeserializeOwned
        + serde::Serialize
        + Clone
        + Send
        + Sync,
{
    client
        .list_typed(Some(NS), &ListOptions::default())
        .await
        .unwrap_or_default()
}

/// One pass of every config and workload reconciler over every object.
pub async fn reconcile_all(client: &dyn ObjectClient, kcp: &Kcp) {
    for o in all::<CacheServer>(client).await {
        config::reconcile_cache_server(client, &o).await.unwrap();
    }
    for o in all::<RootShard>(client).await {
        config::reconcile_root_shard(client, &o).await.unwrap();
    }
    for o in all::<Shard>(client).await {
        config::reconcile_shard(client, kcp, &o).await.unwrap();
    }
    for o in all::<FrontProxy>(client).await {
        config::reconcile_front_proxy(client, &o).await.unwrap();
    }
    for o in all::<Kubeconfig>(client).await {
        kubeconfig::reconcile_kubeconfig(client, kcp, &o)
            .await
            .unwrap();
    }
    for o in all::<VirtualWorkspace>(client).await {
        virtualworkspace::reconcile_virtual_workspace(client, &o)
            .await
            .unwrap();
    }
    for o in all::<CompiledVirtualWorkspace>(client).await {
        virtualworkspace::reconcile_compiled_virtual_workspace(client, &o)
            .await
            .unwrap();
    }
    for o in all::<CompiledCacheServer>(client).await {
        workload::reconcile_compiled_cache_server(client, &o)
            .await
            .unwrap();
    }
    for o in all::<CompiledRootShard>(client).await {
        workload::reconcile_compiled_root_shard(client, &o)
            .await
            .unwrap();
    }
    for o in all::<CompiledShard>(client).await {
        workload::reconcile_compiled_shard(client, &o)
            .await
            .unwrap();
    }
    for o in all::<CompiledFrontProxy>(client).await {
        workload::reconcile_compiled_front_proxy(client, &o)
            .await
            .unwrap();
    }
}

/// Plays cert-manager: every Certificate not ready gets its Secret and `Ready=True`.
pub async fn issue_certificates(client: &dyn ObjectClient, revision: i64) {
    for mut cert in try_all::<Certificate>(client).await {
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
                namespace: Some(NS.into()),
                labels,
                ..Default::default()
            },
            data: Some(data),
            ..Default::default()
        };
        let written = match client.get_typed::<Secret>(Some(NS), &name).await {
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
pub async fn run_deployments(client: &dyn ObjectClient) {
    for mut dep in try_all::<Deployment>(client).await {
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

/// Reconciles, issues and runs until nothing changes any more.
pub async fn converge(sim: &Server, client: &dyn ObjectClient, kcp: &Kcp) {
    let mut last = 0;
    for _ in 0..12 {
        reconcile_all(client, kcp).await;
        issue_certificates(client, 1).await;
        run_deployments(client).await;
        let now = sim.resource_version();
        if now == last {
            return;
        }
        last = now;
    }
    panic!("the installation did not converge");
}

/// Converges, then asserts that one more pass over the unchanged installation writes nothing.
pub async fn assert_a_second_pass_writes_nothing(
    sim: &Server,
    client: &dyn ObjectClient,
    kcp: &Kcp,
) {
    converge(sim, client, kcp).await;
    let before = sim.resource_version();
    reconcile_all(client, kcp).await;
    assert_eq!(
        sim.resource_version(),
        before,
        "a no-op pass must not write"
    );
}

/// Applies the spec's example manifests.
pub async fn apply_examples(client: &dyn ObjectClient) {
    let examples = include_str!("../fixtures/examples.yaml");
    apply_objects(client, parse_manifests("examples.yaml", examples).unwrap()).await;
}
