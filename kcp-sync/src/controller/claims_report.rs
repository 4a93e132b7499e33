//! The publisher's report of whether consumers accepted the claims each PublishedResource
//! needs (see [`crate::claims_acceptance`]): after every export reconcile (a PublishedResource
//! change, an APIExport edit, and every resync), the APIBindings to the export are read
//! through the virtual workspace, once per URL, and each PublishedResource gets its
//! `ClaimsAccepted` condition; a Warning Event `ClaimsNotAccepted` when it turns False.
//! Best effort: a failed read is logged and changes nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kcp_core::ListOptions;
use kcp_core::cluster::EngagedCluster;
use kcp_core::kcp::CLUSTER_ANNOTATION;
use kcp_core::kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams};
use kcp_core::runtime::EventType;
use serde_json::Value;

use super::Publisher;
use crate::api::PublishedResource;
use crate::claims_acceptance::{self, CLAIMS_NOT_ACCEPTED, CONDITION_CLAIMS_ACCEPTED};
use crate::error::{Error, Result};
use crate::export::{WantedClaim, wanted_claims};

fn binding_gvk() -> GroupVersionKind {
    GroupVersionKind::gvk("apis.kcp.io", "v1alpha1", "APIBinding")
}

impl Publisher {
    /// Writes each of `prs`' `ClaimsAccepted` condition, given the claims the export holds
    /// (`exported`).
    pub(super) async fn report_claims(
        &self,
        prs: &[PublishedResource],
        exported: &BTreeSet<WantedClaim>,
    ) {
        let bindings = match consumer_bindings(&self.shared.clusters.all()).await {
            Ok(bindings) => bindings,
            Err(e) => {
                tracing::warn!(error = %e, "reading the consumers' APIBindings failed; claim acceptance not reported");
                return;
            }
        };
        for pr in prs {
            let needed: BTreeSet<WantedClaim> =
                wanted_claims(std::slice::from_ref(pr), &BTreeSet::new())
                    .into_keys()
                    .filter(|claim| exported.contains(claim))
                    .collect();
            let missing = claims_acceptance::unaccepted(&needed, &bindings);
            let update = claims_acceptance::condition(&missing).generation(pr.metadata.generation);
            let was_false = pr
                .status
                .as_ref()
                .and_then(|s| s.condition(CONDITION_CLAIMS_ACCEPTED))
                .is_some_and(|c| c.status == "False");
            if !missing.is_empty() && !was_false {
                let service = self.agent.service.as_ref();
                self.recorder
                    .publish(
                        service,
                        pr,
                        EventType::Warning,
                        CLAIMS_NOT_ACCEPTED,
                        &update.message,
                    )
                    .await;
            }
            self.write_condition(pr.name(), update).await;
        }
    }
}

/// Every consumer's APIBindings to the export (as JSON), by logical cluster: one wildcard list
/// per virtual-workspace URL, or, for a cluster engaged without a view, a list in it.
async fn consumer_bindings(clusters: &[EngagedCluster]) -> Result<BTreeMap<String, Vec<Value>>> {
    let mut bindings: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    // Every cluster of a URL carries a client of the same view: one list per URL.
    let mut views: BTreeMap<String, Arc<kcp_core::kube::Client>> = BTreeMap::new();
    for cluster in clusters {
        match (&cluster.view, &cluster.base_url) {
            (Some(view), Some(url)) => {
                views.entry(url.clone()).or_insert_with(|| view.clone());
            }
            _ => {
                let listed = cluster
                    .client
                    .list(&binding_gvk(), None, &ListOptions::default())
                    .await
                    .map_err(|e| {
                        Error::core(
                            format!("listing APIBindings in {}", cluster.name.as_str()),
                            e,
                        )
                    })?;
                let entry = bindings
                    .entry(cluster.name.as_str().to_owned())
                    .or_default();
                entry.extend(listed.items.iter().map(json));
            }
        }
    }
    for view in views.into_values() {
        let api = kcp_core::kube::Api::<DynamicObject>::all_with(
            (*view).clone(),
            &ApiResource::from_gvk_with_plural(&binding_gvk(), "apibindings"),
        );
        let listed = api.list(&ListParams::default()).await.map_err(|e| {
            Error::core(
                "listing APIBindings through the virtual workspace",
                list_error(e),
            )
        })?;
        for binding in &listed.items {
            let cluster = binding
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(CLUSTER_ANNOTATION))
                .cloned()
                .unwrap_or_default();
            bindings.entry(cluster).or_default().push(json(binding));
        }
    }
    Ok(bindings)
}

/// A failed wildcard list as kcp-core's error: the server's answer, or the transport's.
fn list_error(error: kcp_core::kube::Error) -> kcp_core::Error {
    match error {
        kcp_core::kube::Error::Api(status) => kcp_core::Error::Api {
            verb: "list",
            object: "apis.kcp.io/v1alpha1 APIBinding (every cluster)".into(),
            code: status.code,
            reason: status.reason.clone(),
            message: status.message.clone(),
        },
        other => kcp_core::Error::Transport {
            context: "listing APIBindings".into(),
            source: Box::new(other),
        },
    }
}

fn json(object: &DynamicObject) -> Value {
    serde_json::to_value(object).unwrap_or(Value::Null)
}
