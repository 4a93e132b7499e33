//! The capi-kind section: the kind provider against the `kube` server (the management
//! cluster), workload clusters from the in-process provisioner (each a kcp-sim server kubectl
//! can use), upstream's KINDCluster sample and a Cluster API Cluster with its KindCluster. The
//! table shows the phases until Ready; the summary lists the kubeconfig Secrets and the
//! namespaces read through each one.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use capi_kind::api::{KINDCluster, KindCluster, Phase};
use capi_kind::provisioner::SimProvisioner;
use capi_kind::{ControllerConfig, run};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kcp_core::kube::api::DynamicObject;
use kcp_core::{ListOptions, ObjectClient, ObjectClientExt, parse_manifests};

use super::{
    Playground, PlaygroundError, Running, Section, SectionStatus, apply_objects, apply_yaml,
};

const CLUSTER_API: &str = include_str!("../../../examples/playground/kind/01-cluster-api.yaml");
const KIND_CLUSTERS: &str = include_str!("../../../examples/playground/kind/02-kindclusters.yaml");
const NAMESPACE: &str = "default";

/// The running provider and its workload clusters.
pub struct KindSection {
    controller: Option<Running<capi_kind::Error>>,
    provisioner: SimProvisioner,
    synced: Arc<AtomicBool>,
}

impl Default for KindSection {
    /// Workload clusters take a second and a half to "create", so the phases show.
    fn default() -> Self {
        KindSection {
            controller: None,
            provisioner: SimProvisioner::new().with_create_delay(Duration::from_millis(1500)),
            synced: Arc::default(),
        }
    }
}

fn failed(message: String) -> PlaygroundError {
    PlaygroundError::Section {
        section: "kind",
        message,
    }
}

fn core_error(context: &str) -> impl FnOnce(kcp_core::Error) -> PlaygroundError + '_ {
    move |source| PlaygroundError::Core {
        context: context.to_string(),
        source,
    }
}

/// One row of the table: kind, name, kind cluster, phase, ready.
struct Row {
    kind: &'static str,
    name: String,
    cluster: String,
    phase: Option<Phase>,
    secret: String,
}

#[async_trait]
impl Section for KindSection {
    fn name(&self) -> &'static str {
        "kind"
    }

    async fn start(&mut self, playground: &Playground) -> Result<(), PlaygroundError> {
        let kube = playground.kube.object_client("")?;
        let crds = capi_kind::api::crd_objects()
            .map_err(|e| failed(format!("the capi-kind CRDs: {e}")))?;
        apply_objects(kube.as_ref(), "the KINDCluster and KindCluster CRDs", crds).await?;
        apply_yaml(kube.as_ref(), "kind/01-cluster-api.yaml", CLUSTER_API).await?;
        let client = playground.kube.client("")?;
        let mut config = ControllerConfig::new(client, Arc::new(self.provisioner.clone()));
        config.max_concurrent_creates = 8;
        self.synced = config.ready.clone();
        self.controller = Some(Running::spawn(|shutdown| run(config, shutdown)));
        println!("capi-provider-kind running against kube (workload clusters: in-process kcp-sim)");
        let objects = parse_manifests("kind/02-kindclusters.yaml", KIND_CLUSTERS)
            .map_err(core_error("reading kind/02-kindclusters.yaml"))?;
        let (clusters, mut rest): (Vec<_>, Vec<_>) =
            objects.into_iter().partition(|o| kind_of(o) == "Cluster");
        apply_objects(
            kube.as_ref(),
            "kind/02-kindclusters.yaml (Clusters)",
            clusters,
        )
        .await?;
        for object in rest.iter_mut().filter(|o| kind_of(o) == "KindCluster") {
            set_cluster_owner(kube.as_ref(), object).await?;
        }
        apply_objects(kube.as_ref(), "kind/02-kindclusters.yaml", rest).await
    }

    async fn status(&mut self, playground: &Playground) -> Result<SectionStatus, PlaygroundError> {
        if let Some(controller) = &self.controller
            && controller.is_finished()
        {
            return Err(failed("the provider stopped early".into()));
        }
        let rows = rows(playground.kube.object_client("")?.as_ref()).await?;
        let converged = !rows.is_empty() && rows.iter().all(|r| r.phase == Some(Phase::Ready));
        Ok(SectionStatus {
            lines: table(&rows, self.synced.load(Ordering::SeqCst)),
            converged,
        })
    }

    async fn summary(&self, playground: &Playground) -> Result<Vec<String>, PlaygroundError> {
        let kube = playground.kube.object_client("")?;
        let mut lines =
            vec!["kubeconfig Secrets, and the namespaces read through each:".to_string()];
        for row in rows(kube.as_ref()).await? {
            lines.push(format!(
                "{}/{:<16} {}",
                NAMESPACE,
                row.secret,
                namespaces_through(kube.as_ref(), &row.secret).await
            ));
        }
        let kc = playground.kubeconfig.display();
        lines.push(format!("kubectl --kubeconfig {kc} --context kube get kc,kindclusters.infrastructure.cluster.x-k8s.io"));
        lines.push(format!(
            "kubectl --kubeconfig {kc} --context kube get secret test-1-config -o jsonpath='{{.data.config}}' | base64 -d > test-1.kubeconfig"
        ));
        lines.push("kubectl --kubeconfig test-1.kubeconfig get namespaces".into());
        lines.push(format!(
            "kubectl --kubeconfig {kc} --context kube delete kc test-cluster-1   # deletes the workload server and the Secret"
        ));
        Ok(lines)
    }

    async fn stop(&mut self) {
        if let Some(controller) = self.controller.take() {
            controller.stop().await;
        }
        for name in capi_kind::Provisioner::list(&self.provisioner)
            .await
            .unwrap_or_default()
        {
            let _ = capi_kind::Provisioner::delete(&self.provisioner, &name).await;
        }
    }
}

fn kind_of(object: &DynamicObject) -> &str {
    object
        .types
        .as_ref()
        .map(|t| t.kind.as_str())
        .unwrap_or_default()
}

/// Plays CAPI core: the KindCluster gets its Cluster (same name) as owner.
async fn set_cluster_owner(
    client: &dyn ObjectClient,
    object: &mut DynamicObject,
) -> Result<(), PlaygroundError> {
    let name = object.metadata.name.clone().unwrap_or_default();
    let target = kcp_core::ObjectRef::namespaced(
        kcp_core::kube::api::GroupVersionKind::gvk("cluster.x-k8s.io", "v1beta2", "Cluster"),
        NAMESPACE,
        &name,
    );
    let cluster = client
        .get(&target)
        .await
        .map_err(core_error("reading the Cluster"))?
        .ok_or_else(|| failed(format!("Cluster {NAMESPACE}/{name} was not created")))?;
    let owner = kcp_core::runtime::owner::controller_reference(&cluster)
        .map_err(core_error("the Cluster owner reference"))?;
    object.metadata.owner_references = Some(vec![owner]);
    Ok(())
}

async fn rows(client: &dyn ObjectClient) -> Result<Vec<Row>, PlaygroundError> {
    let options = ListOptions::default();
    let upstream: Vec<KINDCluster> = client
        .list_typed(Some(NAMESPACE), &options)
        .await
        .map_err(core_error("listing KINDClusters"))?;
    let capi: Vec<KindCluster> = client
        .list_typed(Some(NAMESPACE), &options)
        .await
        .map_err(core_error("listing KindClusters"))?;
    let mut rows: Vec<Row> = upstream
        .iter()
        .map(|o| Row {
            kind: "KINDCluster",
            name: o.metadata.name.clone().unwrap_or_default(),
            cluster: o.spec.cluster_name.clone(),
            phase: o.status.as_ref().and_then(|s| s.phase),
            secret: capi_kind::secrets::upstream_secret_name(&o.spec.cluster_name),
        })
        .collect();
    rows.extend(capi.iter().map(|o| Row {
        kind: "KindCluster",
        name: o.metadata.name.clone().unwrap_or_default(),
        cluster: capi_kind::plan::kind_cluster_name(o),
        phase: o.status.as_ref().and_then(|s| s.phase),
        secret: kcp_core::capi::kubeconfig_secret_name(
            kcp_core::capi::cluster_owner(&o.metadata).map_or("-", |r| r.name.as_str()),
        ),
    }));
    Ok(rows)
}

fn table(rows: &[Row], synced: bool) -> Vec<String> {
    let mut lines = vec![
        format!(
            "capi-provider-kind {}",
            if synced { "synced" } else { "starting" }
        ),
        format!(
            "{:<12} {:<15} {:<14} {:<13} SECRET",
            "KIND", "NAME", "KIND CLUSTER", "PHASE"
        ),
    ];
    for row in rows {
        let phase = row.phase.map_or("-", Phase::as_str);
        let secret = if row.phase == Some(Phase::Ready) {
            row.secret.as_str()
        } else {
            "-"
        };
        lines.push(format!(
            "{:<12} {:<15} {:<14} {:<13} {secret}",
            row.kind, row.name, row.cluster, phase
        ));
    }
    lines
}

/// The namespaces of the workload cluster, read with the kubeconfig in Secret `secret` (what
/// `kubectl --kubeconfig <decoded secret> get namespaces` shows).
async fn namespaces_through(client: &dyn ObjectClient, secret: &str) -> String {
    let read = async {
        let secret: Secret = client
            .get_typed(Some(NAMESPACE), secret)
            .await
            .map_err(|e| e.to_string())?
            .ok_or("no such Secret")?;
        let data = secret.data.unwrap_or_default();
        let bytes = data
            .get("config")
            .or_else(|| data.get("value"))
            .ok_or("no kubeconfig key")?;
        let text = std::str::from_utf8(&bytes.0).map_err(|e| e.to_string())?;
        let kubeconfig =
            kcp_core::kube::config::Kubeconfig::from_yaml(text).map_err(|e| e.to_string())?;
        let config =
            kcp_core::kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
                .await
                .map_err(|e| e.to_string())?;
        let workload = kcp_core::kube::Client::try_from(config).map_err(|e| e.to_string())?;
        let list = kcp_core::kube::Api::<Namespace>::all(workload)
            .list(&Default::default())
            .await
            .map_err(|e| e.to_string())?;
        let names: Vec<String> = list
            .items
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect();
        Ok::<_, String>(format!("namespaces: {}", names.join(", ")))
    };
    read.await.unwrap_or_else(|e| format!("unreadable: {e}"))
}
