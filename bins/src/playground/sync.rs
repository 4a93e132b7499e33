//! The kcp-sync section: the api-syncagent between the `kube` server (the service cluster)
//! and `kcp`. A Database CRD on the service cluster is published through a PublishedResource
//! (with its credentials Secret as a related resource) into the APIExport of
//! `root:db-provider`; `root:db-consumer` binds it and orders a Database; a small database
//! operator on the service cluster (part of this section) fills the local copy's status and
//! creates the Secret, and both come back to the consumer. The agent serves every
//! PublishedResource: publish another CRD with kubectl and it appears in the export.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use kcp_core::cluster::{ApiExportConsumers, ClusterClients};
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::{ListOptions, ObjectClient, ObjectRef, Subresource};
use kcp_sim::PLAIN_CLUSTER;
use kcp_sync::controller::{Agent, Metrics, run};
use kcp_sync::reconcile::sync::SyncConfig;
use serde_json::json;

use super::{
    Playground, PlaygroundError, Running, Section, SectionStatus, apply_yaml, apply_yaml_once,
    wait_workspaces_ready,
};

const SERVICE: &str = include_str!("../../../examples/playground/sync/01-service.yaml");
const WORKSPACES: &str = include_str!("../../../examples/playground/sync/02-provider.yaml");
const EXPORT: &str = include_str!("../../../examples/playground/sync/03-export.yaml");
const CONSUMER: &str = include_str!("../../../examples/playground/sync/04-consumer.yaml");
const DATABASE: &str = include_str!("../../../examples/playground/sync/05-database.yaml");

const PROVIDER: &str = "root:db-provider";
const CONSUMER_WS: &str = "root:db-consumer";

/// The running agent and database operator.
#[derive(Default)]
pub struct SyncSection {
    agent: Option<Running<kcp_sync::Error>>,
    operator: Option<Running<kcp_core::Error>>,
    ready: Arc<AtomicBool>,
    bound: bool,
    ordered: bool,
}

fn database_gvk() -> GroupVersionKind {
    GroupVersionKind::gvk("db.example.com", "v1", "Database")
}

fn secret_gvk() -> GroupVersionKind {
    GroupVersionKind::gvk("", "v1", "Secret")
}

fn section_error(message: impl Into<String>) -> PlaygroundError {
    PlaygroundError::Section {
        section: "sync",
        message: message.into(),
    }
}

#[async_trait]
impl Section for SyncSection {
    fn name(&self) -> &'static str {
        "sync"
    }

    async fn start(&mut self, playground: &Playground) -> Result<(), PlaygroundError> {
        let kube = playground.kube.object_client(PLAIN_CLUSTER)?;
        let crds = kcp_sync::api::crds_yaml().map_err(|e| section_error(e.to_string()))?;
        apply_yaml(kube.as_ref(), "the PublishedResource CRD", &crds).await?;
        apply_yaml(kube.as_ref(), "sync/01-service.yaml", SERVICE).await?;
        apply_yaml(
            playground.kcp.object_client("root")?.as_ref(),
            "sync/02-provider.yaml",
            WORKSPACES,
        )
        .await?;
        wait_workspaces_ready(
            playground.kcp.object_client("root")?.as_ref(),
            &["db-provider", "db-consumer"],
            Duration::from_secs(60),
        )
        .await?;
        apply_yaml(
            playground.kcp.object_client(PROVIDER)?.as_ref(),
            "sync/03-export.yaml",
            EXPORT,
        )
        .await?;
        let agent = agent(playground, self.ready.clone())?;
        self.agent = Some(Running::spawn(|shutdown| run(agent, shutdown)));
        let operator = kube;
        self.operator = Some(Running::spawn(move |shutdown| {
            database_operator(operator, shutdown)
        }));
        println!("kcp-api-syncagent running between kube and kcp ({PROVIDER}, export databases)");
        Ok(())
    }

    async fn status(&mut self, playground: &Playground) -> Result<SectionStatus, PlaygroundError> {
        for running in [
            self.agent.as_ref().map(|r| r.is_finished()),
            self.operator.as_ref().map(|r| r.is_finished()),
        ] {
            if running == Some(true) {
                return Err(section_error(
                    "the agent or the database operator stopped early",
                ));
            }
        }
        let consumer = playground.kcp.object_client(CONSUMER_WS)?;
        if !self.bound && self.ready.load(Ordering::SeqCst) {
            apply_yaml(consumer.as_ref(), "sync/04-consumer.yaml", CONSUMER).await?;
            self.bound = true;
        }
        if self.bound && !self.ordered {
            // The binding serves Databases a moment after it was created: until then the
            // apply stays pending, and is tried again on the next tick.
            match apply_yaml_once(consumer.as_ref(), "sync/05-database.yaml", DATABASE).await {
                Ok(()) => self.ordered = true,
                Err(PlaygroundError::Apply { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        let databases = list(consumer.as_ref(), &database_gvk()).await;
        let locals = list(
            playground.kube.object_client(PLAIN_CLUSTER)?.as_ref(),
            &database_gvk(),
        )
        .await;
        let mut lines = vec![
            format!(
                "kcp-api-syncagent {}",
                if self.ready.load(Ordering::SeqCst) {
                    "synced"
                } else {
                    "starting"
                }
            ),
            format!(
                "{:<22} {:<8} {:<60} {}",
                "DATABASE (kcp)", "PHASE", "LOCAL COPY (kube)", "SECRET IN KCP"
            ),
        ];
        let mut converged = self.ordered && !databases.is_empty();
        for db in &databases {
            let (ns, name) = (
                db.metadata.namespace.clone().unwrap_or_default(),
                db.metadata.name.clone().unwrap_or_default(),
            );
            let phase = db.data["status"]["phase"]
                .as_str()
                .unwrap_or("-")
                .to_owned();
            let local = locals
                .iter()
                .find(|l| {
                    l.metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get("syncagent.kcp.io/remote-object-name"))
                        == Some(&name)
                })
                .map(|l| {
                    format!(
                        "{}/{}",
                        l.metadata.namespace.as_deref().unwrap_or(""),
                        l.metadata.name.as_deref().unwrap_or("")
                    )
                })
                .unwrap_or_else(|| "-".into());
            let secret_name = db.data["spec"]["secretName"].as_str().unwrap_or_default();
            let secret = consumer
                .get(&ObjectRef::namespaced(secret_gvk(), &ns, secret_name))
                .await
                .ok()
                .flatten()
                .is_some();
            converged &= phase == "Ready" && secret;
            lines.push(format!(
                "{:<22} {:<8} {:<60} {}",
                format!("{ns}/{name}"),
                phase,
                local,
                if secret { "yes" } else { "no" }
            ));
        }
        Ok(SectionStatus { lines, converged })
    }

    async fn summary(&self, playground: &Playground) -> Result<Vec<String>, PlaygroundError> {
        let kc = playground.kubeconfig.display();
        let kcp = playground.kcp.url();
        Ok(vec![
            "the Database orders/default in root:db-consumer has a local copy on kube, its status and its Secret came back".into(),
            format!("kubectl --kubeconfig {kc} --context kube get publishedresources"),
            format!("kubectl --kubeconfig {kc} --context kube get databases -A"),
            format!("kubectl --kubeconfig {kc} --server {kcp}/clusters/{CONSUMER_WS} -n default get databases,secrets"),
            format!("kubectl --kubeconfig {kc} --server {kcp}/clusters/{PROVIDER} get apiexport databases -o yaml"),
            "publish another CRD on kube with a PublishedResource, and it appears in the export".into(),
        ])
    }

    async fn stop(&mut self) {
        for running in [
            self.agent.take().map(|r| Box::new(r) as Box<dyn Stoppable>),
            self.operator
                .take()
                .map(|r| Box::new(r) as Box<dyn Stoppable>),
        ]
        .into_iter()
        .flatten()
        {
            running.stop_boxed().await;
        }
    }
}

/// Stops a [`Running`] of any error type.
#[async_trait]
trait Stoppable: Send {
    async fn stop_boxed(self: Box<Self>);
}

#[async_trait]
impl<E: Send + 'static> Stoppable for Running<E> {
    async fn stop_boxed(self: Box<Self>) {
        (*self).stop().await;
    }
}

async fn list(client: &dyn ObjectClient, gvk: &GroupVersionKind) -> Vec<DynamicObject> {
    client
        .list(gvk, None, &ListOptions::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
}

/// The agent: every PublishedResource on kube, the APIExport `databases` of root:db-provider.
fn agent(playground: &Playground, ready: Arc<AtomicBool>) -> Result<Agent, PlaygroundError> {
    let clients = Arc::new(ClusterClients::new(playground.kcp.kube_config(PROVIDER)?));
    let provider = ApiExportConsumers::from_endpoint_slice(
        clients,
        playground.kcp.client(PROVIDER)?,
        "databases",
    );
    Ok(Agent {
        sync: SyncConfig::new("playground-syncagent", "kcp-api-syncagent"),
        export_name: "databases".into(),
        selector: String::new(),
        disabled: Default::default(),
        service: playground.kube.object_client(PLAIN_CLUSTER)?,
        service_kube: Some(playground.kube.client(PLAIN_CLUSTER)?),
        kcp: playground.kcp.object_client(PROVIDER)?,
        kcp_kube: Some(playground.kcp.client(PROVIDER)?),
        provider: Arc::new(provider),
        resync: Duration::from_secs(300),
        workers: 4,
        metrics: Metrics::default(),
        ready,
        status_interval: Duration::from_secs(1),
    })
}

/// The playground's database operator on the service cluster: every Database gets its
/// credentials Secret (owned by the Database) and the status `Ready`.
async fn database_operator(
    kube: Arc<dyn ObjectClient>,
    shutdown: BoxFuture<'static, ()>,
) -> Result<(), kcp_core::Error> {
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => return Ok(()),
            () = tokio::time::sleep(Duration::from_millis(200)) => {}
        }
        for db in list(kube.as_ref(), &database_gvk()).await {
            if db.data["status"]["phase"] == "Ready" {
                continue;
            }
            if let Err(e) = provision(kube.as_ref(), db).await {
                tracing::debug!(error = %e, "database operator");
            }
        }
    }
}

async fn provision(kube: &dyn ObjectClient, mut db: DynamicObject) -> Result<(), kcp_core::Error> {
    let ns = db.metadata.namespace.clone().unwrap_or_default();
    let name = db.metadata.name.clone().unwrap_or_default();
    let secret_name = db.data["spec"]["secretName"]
        .as_str()
        .unwrap_or("credentials")
        .to_owned();
    let secret: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": secret_name, "namespace": ns,
            "ownerReferences": [{"apiVersion": "db.example.com/v1", "kind": "Database", "name": name, "uid": db.metadata.uid}]},
        "data": {"username": "YXBw", "password": "cGxheWdyb3VuZA=="},
    }))
    .map_err(|source| kcp_core::Error::Serialization { context: "the database Secret".into(), source })?;
    match kube.create(&secret).await {
        Ok(_) => {}
        Err(e) if e.is_already_exists() => {}
        Err(e) => return Err(e),
    }
    db.data["status"] = json!({"phase": "Ready", "endpoint": format!("{name}.{ns}.svc:5432")});
    kube.replace(&db, Subresource::Status).await.map(|_| ())
}
