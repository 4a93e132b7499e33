//! The kcp-operator section: the operator against the `kube` server (the management cluster),
//! both controller groups, with its built-in PKI (`--pki=builtin`) standing in for cert-manager
//! (only cert-manager's CRDs are installed) and kcp-sim's workload simulation making
//! Deployments available. It applies the spec's example (a RootShard, a Shard, a FrontProxy, a
//! CacheServer and a Kubeconfig) and shows every installation object of the server, so a
//! RootShard applied with kubectl shows up and is reconciled the same way.
//!
//! No kcp of the installation runs (its Deployments are simulated), so the operator's
//! [`Addresser`] is the playground's own kcp server (context `kcp`): the Kubeconfig's
//! `authorization` grants land there, in workspace `root`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kcp_core::{KubeObjectClient, ListOptions, ObjectClient, ObjectClientExt, parse_manifests};
use kcp_operator::addresser::{Addresser, Endpoint};
use kcp_operator::api::{CacheServer, FrontProxy, Kubeconfig, RootShard, Shard};
use kcp_operator::controller::{ControllerGroup, run_with};
use kcp_operator::metrics::Metrics;
use kcp_operator::pki::{BuiltinPki, Pki};
use kcp_operator::render::certmanager::Certificate;

use super::{
    Playground, PlaygroundError, Running, Section, SectionStatus, Side, apply_objects, apply_yaml,
};

const CERT_MANAGER_CRDS: &str =
    include_str!("../../../examples/playground/operator/00-cert-manager-crds.yaml");
const ISSUER: &str = include_str!("../../../examples/playground/operator/01-issuer.yaml");
const INSTALLATION: &str =
    include_str!("../../../examples/playground/operator/02-installation.yaml");

/// The operator's way into kcp: every endpoint of every installation is the playground's kcp
/// server (`base`, its URL), in the workspace asked for; on the real backend as kcp's admin
/// (`admin`: the CA and token of the test bed's kcp).
struct PlaygroundKcp {
    base: String,
    admin: Option<kcp_testbed::Endpoint>,
}

#[async_trait]
impl Addresser for PlaygroundKcp {
    async fn client(
        &self,
        _management: &dyn ObjectClient,
        root_shard: &RootShard,
        _endpoint: Endpoint<'_>,
        workspace: &str,
    ) -> kcp_operator::Result<Arc<dyn ObjectClient>> {
        let url = format!("{}/clusters/{workspace}", self.base);
        let invalid = |reason: String| kcp_operator::Error::InvalidField {
            object: format!(
                "RootShard {}/{}",
                root_shard.metadata.namespace.as_deref().unwrap_or_default(),
                root_shard.metadata.name.as_deref().unwrap_or_default()
            ),
            field: "the playground's kcp URL".into(),
            reason,
        };
        let client = match &self.admin {
            Some(admin) => admin.at(url).client().map_err(|e| invalid(e.to_string()))?,
            None => {
                let uri = url
                    .parse()
                    .map_err(|e| invalid(format!("{url} is not a valid URL: {e}")))?;
                kube::Client::try_from(kube::Config::new(uri))
                    .map_err(|e| invalid(e.to_string()))?
            }
        };
        Ok(Arc::new(KubeObjectClient::new(client)))
    }
}

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
        let kube = playground.kube.object_client("")?;
        let mut crds = kcp_operator::api::crd_objects()
            .map_err(|e| section_error(format!("the kcp-operator CRDs: {e}")))?;
        crds.extend(
            parse_manifests("00-cert-manager-crds.yaml", CERT_MANAGER_CRDS)
                .map_err(failed("00-cert-manager-crds.yaml"))?,
        );
        apply_objects(
            kube.as_ref(),
            "the kcp-operator and cert-manager CRDs",
            crds,
        )
        .await?;
        let client = playground.kube.client("")?;
        let synced = self.synced.clone();
        let addresser = Arc::new(PlaygroundKcp {
            base: playground.kcp.url().to_owned(),
            admin: match &playground.kcp {
                Side::Real { admin, .. } => Some(admin.clone()),
                Side::Sim(_) => None,
            },
        });
        self.operator = Some(Running::spawn(|shutdown| async move {
            let groups = [ControllerGroup::Config, ControllerGroup::Workload].into();
            let pki = Pki::Builtin(BuiltinPki::default());
            run_with(
                client,
                &groups,
                &pki,
                addresser,
                Metrics::unregistered(),
                synced,
                shutdown,
            )
            .await;
            Ok(())
        }));
        println!("kcp-operator running against kube (--pki=builtin)");
        apply_yaml(kube.as_ref(), "01-issuer.yaml", ISSUER).await?;
        apply_yaml(kube.as_ref(), "02-installation.yaml", INSTALLATION).await
    }

    async fn status(&mut self, playground: &Playground) -> Result<SectionStatus, PlaygroundError> {
        if self.operator.as_ref().is_some_and(Running::is_finished) {
            return Err(section_error("the operator stopped early".into()));
        }
        let kube = playground.kube.object_client("")?;
        let rows = rows(kube.as_ref()).await?;
        let certs = list::<Certificate>(kube.as_ref(), "listing Certificates").await?;
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
        let kube = playground.kube.object_client("")?;
        let kc = playground.kubeconfig.display();
        let certs = list::<Certificate>(kube.as_ref(), "listing Certificates").await?;
        let secrets = list::<Secret>(kube.as_ref(), "listing Secrets").await?;
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
            list(kube.as_ref(), "listing Deployments").await?;
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
        let grants: Vec<ClusterRoleBinding> = playground
            .kcp
            .object_client("root")?
            .list_typed(None, &ListOptions::default())
            .await
            .map_err(failed("listing ClusterRoleBindings in kcp workspace root"))?;
        let granted: Vec<String> = grants
            .iter()
            .filter_map(|b| b.metadata.name.clone())
            .filter(|n| n.ends_with(":cluster-admin"))
            .collect();
        lines.push(format!(
            "the Kubeconfig's grants in kcp workspace root: {}",
            granted.join(", ")
        ));
        lines.push(format!(
            "kubectl --kubeconfig {kc} --context kcp get clusterrolebindings"
        ));
        Ok(lines)
    }

    async fn stop(&mut self) {
        if let Some(operator) = self.operator.take() {
            operator.stop().await;
        }
    }
}
