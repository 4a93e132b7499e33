//! The Node provider-ID controller (spec 1.7): gives the workload cluster's Node of a ready
//! AgentMachine the AgentMachine's `providerID` (OpenShift's machine approver and CAPI find
//! Nodes by it, and there is no cloud provider to set it).
//!
//! Unlike upstream, which polls every unready AgentMachine every 30 s, this runs on watches: the
//! AgentMachine watch (an AgentMachine becoming ready) and one Node watch per workload cluster
//! (a Node appearing), started from the cluster's kubeconfig Secret and restarted when the
//! Secret changes. The Secret is `admin-kubeconfig` (key `kubeconfig`) in the AgentMachine's
//! namespace, HyperShift's convention, or else CAPI's `<cluster>-kubeconfig` (key `value`).

use std::collections::HashMap;
use std::sync::Mutex;

use futures::StreamExt;
use futures::channel::mpsc;
use k8s_openapi::api::core::v1::{Node, Secret};
use kcp_core::ObjectClientExt;
use kcp_core::runtime::EventType;
use kcp_core::runtime::Outcome;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use serde::Serialize;
use tracing::Instrument;

use crate::api::{AgentMachine, CLUSTER_NAME_LABEL, MachineAddressType};
use crate::cluster::label_secret_for_backup;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::machine::record;
use crate::render::key;

/// HyperShift's kubeconfig Secret name.
pub const ADMIN_KUBECONFIG: &str = "admin-kubeconfig";
/// HyperShift's kubeconfig key.
pub const ADMIN_KUBECONFIG_KEY: &str = "kubeconfig";

/// What to do with a Node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeAction {
    /// The AgentMachine is not ready (or has no providerID): nothing to do yet.
    NotReady,
    /// The Node already has the providerID.
    UpToDate,
    /// Set the Node's providerID to this.
    Set(String),
}

/// The Node name of a ready AgentMachine: its first `InternalDNS` address.
pub fn node_name(am: &AgentMachine) -> Result<Option<&str>> {
    let Some(status) = am.status.as_ref().filter(|s| s.ready) else {
        return Ok(None);
    };
    status
        .addresses
        .iter()
        .find(|a| a.type_ == MachineAddressType::InternalDns)
        .map(|a| Some(a.address.as_str()))
        .ok_or_else(|| {
            Error::invalid(
                format!("AgentMachine {}", key(&am.metadata)),
                "status.addresses",
                "has no InternalDNS address to name the Node",
            )
        })
}

/// What to do with `node_provider_id` (the Node's current `spec.providerID`) for `am`. A
/// different providerID is never overwritten: it is an error naming both.
pub fn node_action(
    am: &AgentMachine,
    node: &str,
    node_provider_id: Option<&str>,
) -> Result<NodeAction> {
    let Some(wanted) = am.spec.provider_id.as_deref().filter(|p| !p.is_empty()) else {
        return Ok(NodeAction::NotReady);
    };
    if am.status.as_ref().is_none_or(|s| !s.ready) {
        return Ok(NodeAction::NotReady);
    }
    match node_provider_id.filter(|p| !p.is_empty()) {
        None => Ok(NodeAction::Set(wanted.to_owned())),
        Some(current) if current == wanted => Ok(NodeAction::UpToDate),
        Some(current) => Err(Error::invalid(
            format!("Node {node}"),
            "spec.providerID",
            format!(
                "is {current:?}, but AgentMachine {} has {wanted:?}",
                key(&am.metadata)
            ),
        )),
    }
}

struct Workload {
    version: String,
    client: kube::Client,
    watch: tokio::task::AbortHandle,
}

/// The workload clusters known so far (one per namespace), each with a Node watch that wakes
/// the AgentMachines naming a Node.
pub struct Workloads {
    clusters: Mutex<HashMap<String, Workload>>,
    wake: mpsc::UnboundedSender<ObjectRef<AgentMachine>>,
    machines: Store<AgentMachine>,
}

impl Workloads {
    /// Workloads that wake AgentMachines of `machines` through `wake`.
    pub fn new(
        machines: Store<AgentMachine>,
        wake: mpsc::UnboundedSender<ObjectRef<AgentMachine>>,
    ) -> Self {
        Workloads {
            clusters: Mutex::new(HashMap::new()),
            wake,
            machines,
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, Workload>) -> T) -> T {
        match self.clusters.lock() {
            Ok(mut g) => f(&mut g),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }

    /// The client of the workload cluster of `am`, built from its kubeconfig Secret (and the
    /// Node watch started) on first use or after the Secret changed.
    async fn client(&self, ctx: &Context, am: &AgentMachine) -> Result<kube::Client> {
        let namespace = am.metadata.namespace.clone().unwrap_or_default();
        let object = format!("AgentMachine {}", key(&am.metadata));
        let (secret, data_key) =
            kubeconfig_secret(ctx, am)
                .await?
                .ok_or_else(|| Error::Waiting {
                    object: object.clone(),
                    what: format!(
                        "kubeconfig Secret {namespace}/{ADMIN_KUBECONFIG} (or <cluster>-kubeconfig)"
                    ),
                })?;
        let version = secret.metadata.resource_version.clone().unwrap_or_default();
        if let Some(client) = self.with(|c| {
            c.get(&namespace)
                .filter(|w| w.version == version)
                .map(|w| w.client.clone())
        }) {
            return Ok(client);
        }
        let bytes = secret
            .data
            .as_ref()
            .and_then(|d| d.get(data_key))
            .map(|b| b.0.clone())
            .unwrap_or_default();
        let origin = format!(
            "Secret {namespace}/{} key {data_key}",
            secret.metadata.name.as_deref().unwrap_or_default()
        );
        let client = workload_client(&object, &origin, &bytes).await?;
        let watch = tokio::spawn(watch_nodes(
            client.clone(),
            namespace.clone(),
            self.machines.clone(),
            self.wake.clone(),
        ))
        .abort_handle();
        let old = self.with(|c| {
            c.insert(
                namespace,
                Workload {
                    version,
                    client: client.clone(),
                    watch,
                },
            )
        });
        if let Some(old) = old {
            old.watch.abort();
        }
        Ok(client)
    }
}

impl Drop for Workloads {
    fn drop(&mut self) {
        self.with(|c| c.values().for_each(|w| w.watch.abort()));
    }
}

async fn kubeconfig_secret(
    ctx: &Context,
    am: &AgentMachine,
) -> Result<Option<(Secret, &'static str)>> {
    let client = ctx.client.as_ref();
    let namespace = am.metadata.namespace.as_deref().unwrap_or_default();
    if let Some(secret) = client
        .get_typed::<Secret>(Some(namespace), ADMIN_KUBECONFIG)
        .await?
    {
        if let Err(err) = label_secret_for_backup(client, namespace, ADMIN_KUBECONFIG).await {
            tracing::warn!(error = %err, "could not add the backup label to the kubeconfig Secret");
        }
        return Ok(Some((secret, ADMIN_KUBECONFIG_KEY)));
    }
    let Some(cluster) = am
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(CLUSTER_NAME_LABEL))
    else {
        return Ok(None);
    };
    let capi = client
        .get_typed::<Secret>(Some(namespace), &format!("{cluster}-kubeconfig"))
        .await?;
    Ok(capi.map(|s| (s, "value")))
}

/// A client of the workload cluster from the kubeconfig in `origin` (a Secret tenants can
/// write): only inline server, CA and credentials are accepted (see
/// [`kcp_core::untrusted_kubeconfig`]); anything else is refused naming the field.
async fn workload_client(object: &str, origin: &str, kubeconfig: &[u8]) -> Result<kube::Client> {
    let text = std::str::from_utf8(kubeconfig)
        .map_err(|e| Error::invalid(object, origin, format!("the kubeconfig is not UTF-8: {e}")))?;
    let config = kcp_core::untrusted_kubeconfig::config(origin, text)
        .await
        .map_err(|e| match e {
            kcp_core::Error::InvalidObject { field, reason, .. } => {
                Error::invalid(object, &format!("{origin} {field}"), reason)
            }
            other => Error::WorkloadCluster {
                object: object.to_owned(),
                message: other.to_string(),
            },
        })?;
    kube::Client::try_from(config).map_err(|e| Error::WorkloadCluster {
        object: object.to_owned(),
        message: format!("building a client: {e}"),
    })
}

/// Wakes the AgentMachines of `namespace` whose Node name is a Node that changed.
async fn watch_nodes(
    client: kube::Client,
    namespace: String,
    machines: Store<AgentMachine>,
    wake: mpsc::UnboundedSender<ObjectRef<AgentMachine>>,
) {
    let span = tracing::info_span!("node-watch", namespace = %namespace);
    let nodes = watcher(Api::<Node>::all(client), watcher::Config::default())
        .default_backoff()
        .applied_objects();
    let mut nodes = std::pin::pin!(nodes);
    async move {
        while let Some(node) = nodes.next().await {
            let Ok(node) = node else { continue };
            let name = node.metadata.name.unwrap_or_default();
            for am in machines.state() {
                let named = am.metadata.namespace.as_deref() == Some(namespace.as_str())
                    && node_name(&am).ok().flatten() == Some(name.as_str());
                if named
                    && wake
                        .unbounded_send(ObjectRef::from_obj(am.as_ref()))
                        .is_err()
                {
                    return;
                }
            }
        }
    }
    .instrument(span)
    .await;
}

#[derive(Serialize, Debug)]
struct NodePatch {
    spec: NodeSpecPatch,
}

#[derive(Serialize, Debug)]
struct NodeSpecPatch {
    #[serde(rename = "providerID")]
    provider_id: String,
}

/// Reconciles the Node of AgentMachine `am`.
pub async fn reconcile_node_provider_id(
    ctx: &Context,
    workloads: &Workloads,
    am: &AgentMachine,
) -> Result<Outcome> {
    let span = tracing::info_span!(
        "reconcile",
        kind = "AgentMachine",
        controller = "node-provider-id",
        namespace = am.metadata.namespace.as_deref().unwrap_or_default(),
        name = am.metadata.name.as_deref().unwrap_or_default()
    );
    async move {
        let Some(node_name) = node_name(am)? else {
            return Ok(Outcome::Done);
        };
        if am.spec.provider_id.is_none() {
            return Ok(Outcome::Done);
        }
        let client = match workloads.client(ctx, am).await {
            Err(refused @ Error::InvalidObject { .. }) => {
                let message = refused.to_string();
                record(ctx, am, EventType::Warning, "KubeconfigRefused", &message).await;
                return Err(refused);
            }
            other => other?,
        };
        let nodes: Api<Node> = Api::all(client);
        let node = nodes
            .get_opt(node_name)
            .await
            .map_err(|e| Error::WorkloadCluster {
                object: format!("AgentMachine {}", key(&am.metadata)),
                message: format!("reading Node {node_name}: {e}"),
            })?;
        // A missing Node is not an error: the Node watch wakes us when it registers.
        let Some(node) = node else {
            return Ok(Outcome::Done);
        };
        let current = node.spec.as_ref().and_then(|s| s.provider_id.as_deref());
        if let NodeAction::Set(provider_id) = node_action(am, node_name, current)? {
            let patch = NodePatch {
                spec: NodeSpecPatch { provider_id },
            };
            nodes
                .patch(node_name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(|e| Error::WorkloadCluster {
                    object: format!("AgentMachine {}", key(&am.metadata)),
                    message: format!("setting spec.providerID of Node {node_name}: {e}"),
                })?;
        }
        Ok(Outcome::Done)
    }
    .instrument(span)
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::AgentMachineSpec;
    use crate::api::v1beta1::{AgentMachineStatus, MachineAddress};

    fn am(ready: bool, addresses: Vec<MachineAddress>) -> AgentMachine {
        let mut am = AgentMachine::new(
            "m",
            AgentMachineSpec {
                provider_id: Some("agent://a".into()),
                agent_label_selector: None,
            },
        );
        am.metadata.namespace = Some("ns".into());
        am.status = Some(AgentMachineStatus {
            ready,
            addresses,
            ..AgentMachineStatus::default()
        });
        am
    }

    fn dns(name: &str) -> MachineAddress {
        MachineAddress {
            type_: MachineAddressType::InternalDns,
            address: name.into(),
        }
    }

    #[test]
    fn an_unready_machine_names_no_node() {
        assert_eq!(node_name(&am(false, vec![dns("n")])).unwrap(), None);
    }

    #[test]
    fn the_node_is_the_first_internal_dns_address() {
        let ip = MachineAddress {
            type_: MachineAddressType::ExternalIp,
            address: "1.2.3.4".into(),
        };
        assert_eq!(
            node_name(&am(true, vec![ip, dns("n1"), dns("n2")])).unwrap(),
            Some("n1")
        );
    }

    #[test]
    fn a_ready_machine_without_internal_dns_is_an_error_naming_the_field() {
        let err = node_name(&am(true, vec![])).unwrap_err().to_string();
        assert_eq!(
            err,
            "AgentMachine ns/m: field status.addresses: has no InternalDNS address to name the Node"
        );
    }

    #[test]
    fn an_empty_provider_id_is_set() {
        assert_eq!(
            node_action(&am(true, vec![]), "n", None).unwrap(),
            NodeAction::Set("agent://a".into())
        );
    }

    #[test]
    fn an_equal_provider_id_is_left_alone() {
        assert_eq!(
            node_action(&am(true, vec![]), "n", Some("agent://a")).unwrap(),
            NodeAction::UpToDate
        );
    }

    #[test]
    fn a_different_provider_id_is_never_overwritten() {
        let err = node_action(&am(true, vec![]), "n", Some("aws://x"))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("Node n: field spec.providerID: is \"aws://x\""),
            "{err}"
        );
    }
}
