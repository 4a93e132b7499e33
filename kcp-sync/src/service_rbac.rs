//! The service-cluster rules for what the PublishedResources publish.
//!
//! The agent's fixed needs on the service cluster (CRDs, PublishedResources, Namespaces, Events,
//! its state Secrets and Lease) are in `deploy/kcp-api-syncagent/rbac-service.yaml`. What else it
//! touches depends on the PublishedResources: the published kind (local copies are created,
//! updated, patched and deleted) and, for each related resource, its kind on the service side
//! (the origin's for `origin: service`, the destination's for `origin: kcp`, plus `/status`
//! with `syncStatus`). Upstream's examples grant `*/*` for that, which on a cluster shared with
//! anything else is cluster-admin. [`service_role`] computes exactly those rules, so an admin
//! grants them (`kcp-api-syncagent rbac | kubectl apply -f -`) instead of everything.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

use crate::api::{PublishedResource, RelatedResourceOrigin};
use crate::error::Result;
use crate::reconcile::discovery::ApiDocuments;
use crate::reconcile::schema::find_source_crd;

/// What the agent does with objects it syncs.
const SYNC_VERBS: [&str; 7] = [
    "get", "list", "watch", "create", "update", "patch", "delete",
];

/// The ClusterRole `name` granting what `prs` need on the service cluster: one rule per API
/// group, with the resources sorted, so the output is stable.
pub async fn service_role(
    service: &dyn kcp_core::ObjectClient,
    docs: Option<&dyn ApiDocuments>,
    prs: &[PublishedResource],
    name: &str,
) -> Result<ClusterRole> {
    let mut resources: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for pr in prs {
        let crd = find_source_crd(service, docs, pr).await?;
        let group = crd.pointer("/spec/group").and_then(Value::as_str);
        let plural = crd.pointer("/spec/names/plural").and_then(Value::as_str);
        if let (Some(group), Some(plural)) = (group, plural) {
            resources
                .entry(group.to_owned())
                .or_default()
                .insert(plural.to_owned());
        }
        for (group, resource) in related_resources(pr) {
            resources.entry(group).or_default().insert(resource);
        }
    }
    Ok(role(name, resources))
}

/// The service-side `(group, resource)` of each related resource of `pr`, and its `/status`
/// where status is synced.
pub fn related_resources(pr: &PublishedResource) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for related in pr.related() {
        let (group, _, resource) = match related.origin {
            RelatedResourceOrigin::Service => related.origin_gvr(),
            RelatedResourceOrigin::Kcp => related.destination_gvr(),
        };
        if related.sync_status {
            out.push((group.clone(), format!("{resource}/status")));
        }
        out.push((group, resource));
    }
    out
}

fn role(name: &str, resources: BTreeMap<String, BTreeSet<String>>) -> ClusterRole {
    let rules = resources
        .into_iter()
        .map(|(group, resources)| PolicyRule {
            api_groups: Some(vec![group]),
            resources: Some(resources.into_iter().collect()),
            verbs: SYNC_VERBS.iter().map(|v| (*v).to_owned()).collect(),
            ..PolicyRule::default()
        })
        .collect();
    ClusterRole {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        rules: Some(rules),
        ..ClusterRole::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{
        RelatedResourceKind, RelatedResourceObject, RelatedResourceProjection, RelatedResourceSpec,
    };

    fn related(
        origin: RelatedResourceOrigin,
        kind: Option<RelatedResourceKind>,
        sync_status: bool,
    ) -> RelatedResourceSpec {
        RelatedResourceSpec {
            identifier: "x".into(),
            origin,
            group: "certs.example.com".into(),
            version: "v1".into(),
            resource: "certificates".into(),
            kind,
            identity_hash: String::new(),
            cleanup: false,
            projection: None,
            object: RelatedResourceObject::default(),
            mutation: None,
            watch: None,
            sync_status,
        }
    }

    fn pr_with(related: Vec<RelatedResourceSpec>) -> PublishedResource {
        let mut pr = PublishedResource::new("p", Default::default());
        pr.spec.related = Some(related);
        pr
    }

    #[test]
    fn a_service_origin_related_resource_needs_its_origin_kind_and_status_when_synced() {
        let pr = pr_with(vec![
            related(
                RelatedResourceOrigin::Service,
                Some(RelatedResourceKind::Secret),
                false,
            ),
            related(RelatedResourceOrigin::Service, None, true),
        ]);
        assert_eq!(
            related_resources(&pr),
            vec![
                ("".into(), "secrets".into()),
                ("certs.example.com".into(), "certificates/status".into()),
                ("certs.example.com".into(), "certificates".into()),
            ]
        );
    }

    #[test]
    fn a_kcp_origin_related_resource_needs_its_projected_kind_on_the_service_side() {
        let mut spec = related(RelatedResourceOrigin::Kcp, None, false);
        spec.projection = Some(RelatedResourceProjection {
            group: "local.example.com".into(),
            version: String::new(),
            resource: "localcerts".into(),
        });
        assert_eq!(
            related_resources(&pr_with(vec![spec])),
            vec![("local.example.com".into(), "localcerts".into())]
        );
    }
}
