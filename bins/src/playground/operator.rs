//! The kcp-operator section: the operator against the `kube` server (the management cluster),
//! both controller groups, with its built-in PKI (`--pki=builtin`) standing in for cert-manager
//! (only cert-manager's CRDs are installed) and kcp-sim's workload simulation making
//! Deployments available. It applies the spec's example (a RootShard, a Shard, a FrontProxy, a
//! CacheServer and a Kubeconfig) and shows every installation object of the server, so a
//! RootShard applied with kubectl shows up and is reconciled the same way.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kcp_core::{ListOptions, ObjectClient, ObjectClientExt, parse_manifests};
use kcp_operator::addresser::InCluster;
use kcp_operator::api::{CacheServer, FrontProxy, Kubeconfig, RootShard, Shard};
use kcp_operator::controller::{ControllerGroup, run_with};
use kcp_operator::metrics::Metrics;
use kcp_operator::pki::{BuiltinPki, Pki};
use kcp_operator::render::certmanager::Certificate;

use super::{
    Playground, PlaygroundError, Running, Section, SectionStatus, apply_objects, apply_yaml,
};

const CERT_MANAGER_CRDS: &str =
    include_str!("../../../examples/playground/operator/00-cert-manager-crds.yaml");
const ISSUER: &str = include_str!("../../../examples/playground/operator/01-issuer.yaml");
const INSTALLATION: &str =
    include_str!("../../../examples/playground/operator/02-installation.yaml");

/// The running operator.
#[derive(Default)]
pub struct OperatorSection {
    operator: Option<Running<kcp_operator::Error>>,
    synced: Arc<AtomicBool>,
}

fn failed(context: &str) -> impl FnOnce(kcp_core::Error) -> PlaygroundError + '_ {
    move |source| PlaygroundError::Core {
        context: context.to_string(),
        source,
    }
}

fn section_error(message: String) -> PlaygroundError {
    PlaygroundError::Section {
        section: "operator",
        message,
    }
}

/// One line of the table: an installation object.
struct Row {
    kind: &'static str,
    namespace: String,
    name: String,
    phase: String,
    ready: bool,
}

fn row<K: kube::Resource<DynamicType = ()>>(
    kind: &'static str,
    o: &K,
    phase: Option<&str>,
    conditions: Option<&[Condition]>,
) -> Row {
    let ready =
        conditions.is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    Row {
        kind,
        namespace: o.meta().namespace.clone().unwrap_or_default(),
        name: o.meta().name.clone().unwrap_or_default(),
        phase: phase.filter(|p| !p.is_empty()).unwrap_or("-").to_owned(),
        ready,
    }
}

async fn list<K>(client: &dyn ObjectClient, what: &str) -> Result<Vec<K>, PlaygroundError>
where
    K: kube::Resource<DynamicType = ()>
        + serde::de::DeserializeOwned
        + serde::Serialize
        + Clone
        + Send
        + Sync,
{
    client
        .list_typed(None, &ListOptions::default())
        .await
        .map_err(failed(what))
}

async fn rows(client: &dyn ObjectClient) -> Result<Vec<Row>, PlaygroundError> {
    let mut rows = Vec::new();
    for o in list::<RootShard>(client, "listing RootShards").await? {
        let s = o.status.as_ref();
        rows.push(row(
            "RootShard",
            &o,
            s.map(|s| s.phase.as_str()),
            s.map(|s| &s.conditions[..]),
        ));
    }
    for o in list::<Shard>(client, "listing Shards").await? {
        let s = o.status.as_ref();
        rows.push(row(
            "Shard",
            &o,
            s.map(|s| s.phase.as_str()),
            s.map(|s| &s.conditions[..]),
        ));
    }
    for o in list::<FrontProxy>(client, "listing FrontProxies").await? {
        let s = o.status.as_ref();
        rows.push(row(
            "FrontProxy",
            &o,
            s.map(|s| s.phase.as_str()),
            s.map(|s| &s.conditions[..]),
        ));
    }
    for o in list::<CacheServer>(client, "listing CacheServers").await? {
        let s = o.status.as_ref();
        rows.push(row(
            "CacheServer",
            &o,
            s.map(|s| s.phase.as_str()),
            s.map(|s| &s.conditions[..]),
        ));
    }
    for o in list::<Kubeconfig>(client, "listing Kubeconfigs").await? {
        let s = o.status.as_ref();
        rows.push(row(
            "Kubeconfig",
            &o,
            s.map(|s| s.phase.as_str()),
            s.map(|s| &s.conditions[..]),
        ));
    }
    Ok(rows)
}

fn table(rows: &[Row], certificates: (usize, usize), synced: bool) -> Vec<String> {
    let mut lines = vec![
        format!(
            "kcp-operator (built-in PKI) {}; certificates issued: {} of {}",
            if synced { "synced" } else { "starting" },
            certificates.0,
            certificates.1
        ),
        format!(
            "{:<12} {:<10} {:<8} {:<13} READY",
            "KIND", "NAMESPACE", "NAME", "PHASE"
        ),
    ];
    lines.extend(rows.iter().map(|r| {
        format!(
            "{:<12} {:<10} {:<8} {:<13} {}",
            r.kind, r.namespace, r.name, r.phase, r.ready
        )
    }));
    lines
}

#[async_trait]
impl Section for OperatorSection {
    fn name(&self) -> &'static str {
        "operator"
    }

    async fn start(&mut self, playground: &Playground) -> Result<(), PlaygroundError> {
        let kube = playground.kube.object_client("");
        let mut crds = kcp_operator::api::crd_objects()
            .map_err(|e| section_error(format!("the kcp-operator CRDs: {e}")))?;
        crds.extend(
            parse_manifests("00-cert-manager-crds.yaml", CERT_MANAGER_CRDS)
                .map_err(failed("00-cert-manager-crds.yaml"))?,
        );
        apply_objects(&kube, "the kcp-operator and cert-manager CRDs", crds).await?;
        let client = playground.kube.client("")?;
        let synced = self.synced.clone();
        self.operator = Some(Running::spawn(|shutdown| async move {
            let groups = [ControllerGroup::Config, ControllerGroup::Workload].into();
            let pki = Pki::Builtin(BuiltinPki::default());
            run_with(
                client,
                &groups,
                &pki,
                Arc::new(InCluster),
                Metrics::unregistered(),
                synced,
                shutdown,
            )
            .await;
            Ok(())
        }));
        println!("kcp-operator running against kube (--pki=builtin)");
        apply_yaml(&kube, "01-issuer.yaml", ISSUER).await?;
        apply_yaml(&kube, "02-installation.yaml", INSTALLATION).await
    }

    async fn status(&mut self, playground: &Playground) -> Result<SectionStatus, PlaygroundError> {
        if self.operator.as_ref().is_some_and(Running::is_finished) {
            return Err(section_error("the operator stopped early".into()));
        }
        let kube = playground.kube.object_client("");
        let rows = rows(&kube).await?;
        let certs = list::<Certificate>(&kube, "listing Certificates").await?;
        let issued = certs.iter().filter(|c| c.is_ready()).count();
        Ok(SectionStatus {
            lines: table(
                &rows,
                (issued, certs.len()),
                self.synced.load(Ordering::SeqCst),
            ),
            converged: rows.len() >= 5 && rows.iter().all(|r| r.ready),
        })
    }

    async fn summary(&self, playground: &Playground) -> Result<Vec<String>, PlaygroundError> {
        let kube = playground.kube.object_client("");
        let kc = playground.kubeconfig.display();
        let certs = list::<Certificate>(&kube, "listing Certificates").await?;
        let secrets = list::<Secret>(&kube, "listing Secrets").await?;
        let kubeconfigs: Vec<String> = secrets
            .iter()
            .filter(|s| {
                s.data
                    .as_ref()
                    .is_some_and(|d| d.contains_key("kubeconfig"))
            })
            .filter_map(|s| s.metadata.name.clone())
            .collect();
        let deployments: Vec<k8s_openapi::api::apps::v1::Deployment> =
            list(&kube, "listing Deployments").await?;
        let mut lines = vec![
            format!(
                "what the operator created: {} Certificates signed by its built-in PKI (ECDSA P-256), {} Deployments, kubeconfig Secrets:",
                certs.len(),
                deployments.len()
            ),
            format!("  {}", kubeconfigs.join(", ")),
        ];
        lines.push(format!(
            "kubectl --kubeconfig {kc} --context kube -n kcp get rootshards,shards,frontproxies,cacheservers,kubeconfigs"
        ));
        lines.push(format!(
            "kubectl --kubeconfig {kc} --context kube -n kcp get certificates,deployments"
        ));
        lines.push(format!(
            "kubectl --kubeconfig {kc} --context kube -n kcp get secret admin-kubeconfig -o jsonpath='{{.data.kubeconfig}}' | base64 -d"
        ));
        Ok(lines)
    }

    async fn stop(&mut self) {
        if let Some(operator) = self.operator.take() {
            operator.stop().await;
        }
    }
}
