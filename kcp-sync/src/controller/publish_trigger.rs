//! Which PublishedResource watch events re-run publishing.
//!
//! Publishing reads a PublishedResource's spec (and whether it is being deleted), never its
//! status. The sync controllers write that status every few seconds while objects change, so
//! enqueueing on every event re-ran the whole publish (the CRD or OpenAPI read, the schema
//! comparison, the export) for nothing. A PublishedResource is enqueued when it is new to the
//! watch, its uid or generation changed, its deletion started, or it went away.
//!
//! CRDs likewise: a CRD event re-runs the publishing of the PublishedResources of its group
//! and kind, and only when the CRD's uid or generation changed (not on status updates, and not
//! every PublishedResource for any CRD of the cluster).

use std::collections::HashMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kcp_core::kube::api::DynamicObject;
use kcp_core::kube::runtime::watcher;

use crate::api::PublishedResource;

/// What of a PublishedResource publishing depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fingerprint {
    uid: Option<String>,
    generation: Option<i64>,
    deleting: bool,
}

impl Fingerprint {
    fn of(pr: &PublishedResource) -> Self {
        Fingerprint {
            uid: pr.metadata.uid.clone(),
            generation: pr.metadata.generation,
            deleting: pr.metadata.deletion_timestamp.is_some(),
        }
    }
}

/// The fingerprints last enqueued, per PublishedResource name, and per CRD name.
#[derive(Debug, Default)]
pub struct PublishTriggers {
    seen: HashMap<String, Fingerprint>,
    /// PublishedResource name -> the (group, kind) it publishes.
    publishes: HashMap<String, (String, String)>,
    crds: HashMap<String, (Option<String>, Option<i64>)>,
}

impl PublishTriggers {
    /// The name to enqueue for `event`, if publishing must look at it again.
    pub fn admit(&mut self, event: &watcher::Event<PublishedResource>) -> Option<String> {
        match event {
            watcher::Event::Apply(pr) | watcher::Event::InitApply(pr) => {
                let name = pr.metadata.name.clone()?;
                let print = Fingerprint::of(pr);
                if self.seen.get(&name) == Some(&print) {
                    return None;
                }
                self.seen.insert(name.clone(), print);
                let resource = &pr.spec.resource;
                let published = (resource.api_group.clone(), resource.kind.clone());
                self.publishes.insert(name.clone(), published);
                Some(name)
            }
            watcher::Event::Delete(pr) => {
                let name = pr.metadata.name.clone()?;
                self.seen.remove(&name);
                self.publishes.remove(&name);
                Some(name)
            }
            watcher::Event::Init | watcher::Event::InitDone => None,
        }
    }

    /// The PublishedResources to enqueue for a CRD event (the CRD's group and kind, when its
    /// uid or generation changed or it went away).
    pub fn admit_crd(&mut self, event: &watcher::Event<CustomResourceDefinition>) -> Vec<String> {
        let (crd, gone) = match event {
            watcher::Event::Apply(crd) | watcher::Event::InitApply(crd) => (crd, false),
            watcher::Event::Delete(crd) => (crd, true),
            watcher::Event::Init | watcher::Event::InitDone => return Vec::new(),
        };
        let Some(name) = crd.metadata.name.clone() else {
            return Vec::new();
        };
        let print = (crd.metadata.uid.clone(), crd.metadata.generation);
        if gone {
            self.crds.remove(&name);
        } else if self.crds.get(&name) == Some(&print) {
            return Vec::new();
        } else {
            self.crds.insert(name, print);
        }
        let (group, kind) = (&crd.spec.group, &crd.spec.names.kind);
        let mut names: Vec<String> = self
            .publishes
            .iter()
            .filter(|(_, (g, k))| g == group && k == kind)
            .map(|(name, _)| name.clone())
            .collect();
        names.sort();
        names
    }
}

/// Whether an event of the agent's APIExport asks for the export to be reconciled: a new
/// object, a spec change (the generation), or its deletion; not a status update by kcp.
#[derive(Debug, Default)]
pub struct ExportTrigger {
    seen: Option<(Option<String>, Option<i64>)>,
}

impl ExportTrigger {
    /// Whether to reconcile the export after `event`.
    pub fn admit(&mut self, event: &watcher::Event<DynamicObject>) -> bool {
        match event {
            watcher::Event::Apply(export) | watcher::Event::InitApply(export) => {
                let print = (export.metadata.uid.clone(), export.metadata.generation);
                let changed = self.seen.as_ref() != Some(&print);
                self.seen = Some(print);
                changed
            }
            watcher::Event::Delete(_) => {
                self.seen = None;
                true
            }
            watcher::Event::Init | watcher::Event::InitDone => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::PublishedResourceStatus;

    fn pr(uid: &str, generation: i64) -> PublishedResource {
        let mut pr: PublishedResource = serde_json::from_value(serde_json::json!({
            "apiVersion": "syncagent.kcp.io/v1alpha1",
            "kind": "PublishedResource",
            "metadata": {"name": "databases", "uid": uid, "generation": generation},
            "spec": {"resource": {"apiGroup": "example.com", "version": "v1", "kind": "Database"}},
        }))
        .unwrap();
        pr.metadata.resource_version = Some("1".into());
        pr
    }

    #[test]
    fn a_published_resource_seen_first_is_enqueued() {
        let mut triggers = PublishTriggers::default();
        let event = watcher::Event::InitApply(pr("u1", 1));
        assert_eq!(triggers.admit(&event).as_deref(), Some("databases"));
    }

    #[test]
    fn a_status_write_does_not_rerun_publishing() {
        let mut triggers = PublishTriggers::default();
        triggers.admit(&watcher::Event::Apply(pr("u1", 1)));
        let mut written = pr("u1", 1);
        written.metadata.resource_version = Some("2".into());
        written.status = Some(PublishedResourceStatus {
            resource_schema_name: Some("v1.databases.example.com".into()),
            observed_generation: Some(1),
            ..PublishedResourceStatus::default()
        });
        assert_eq!(triggers.admit(&watcher::Event::Apply(written)), None);
    }

    #[test]
    fn a_spec_change_is_enqueued() {
        let mut triggers = PublishTriggers::default();
        triggers.admit(&watcher::Event::Apply(pr("u1", 1)));
        let next = watcher::Event::Apply(pr("u1", 2));
        assert_eq!(triggers.admit(&next).as_deref(), Some("databases"));
    }

    #[test]
    fn a_recreated_published_resource_is_enqueued() {
        let mut triggers = PublishTriggers::default();
        triggers.admit(&watcher::Event::Apply(pr("u1", 1)));
        let again = watcher::Event::Apply(pr("u2", 1));
        assert_eq!(triggers.admit(&again).as_deref(), Some("databases"));
    }

    #[test]
    fn the_start_of_a_deletion_is_enqueued() {
        let mut triggers = PublishTriggers::default();
        triggers.admit(&watcher::Event::Apply(pr("u1", 1)));
        let mut deleting = pr("u1", 1);
        deleting.metadata.deletion_timestamp = Some(kcp_core::runtime::conditions::now());
        let event = watcher::Event::Apply(deleting);
        assert_eq!(triggers.admit(&event).as_deref(), Some("databases"));
    }

    fn crd(generation: i64, kind: &str) -> CustomResourceDefinition {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {
                "name": format!("{}s.example.com", kind.to_lowercase()),
                "uid": kind,
                "generation": generation,
            },
            "spec": {
                "group": "example.com", "scope": "Namespaced",
                "names": {"kind": kind, "plural": "things"},
                "versions": [],
            },
        }))
        .unwrap()
    }

    #[test]
    fn a_crd_change_enqueues_only_the_published_resources_of_its_kind() {
        let mut triggers = PublishTriggers::default();
        triggers.admit(&watcher::Event::Apply(pr("u1", 1)));
        assert!(
            triggers
                .admit_crd(&watcher::Event::Apply(crd(1, "Thing")))
                .is_empty()
        );
        let ours = triggers.admit_crd(&watcher::Event::Apply(crd(1, "Database")));
        assert_eq!(ours, vec!["databases".to_string()]);
    }

    #[test]
    fn a_crd_status_update_does_not_rerun_publishing() {
        let mut triggers = PublishTriggers::default();
        triggers.admit(&watcher::Event::Apply(pr("u1", 1)));
        triggers.admit_crd(&watcher::Event::Apply(crd(1, "Database")));
        let again = triggers.admit_crd(&watcher::Event::Apply(crd(1, "Database")));
        assert!(again.is_empty());
        let changed = triggers.admit_crd(&watcher::Event::Apply(crd(2, "Database")));
        assert_eq!(changed, vec!["databases".to_string()]);
        let gone = triggers.admit_crd(&watcher::Event::Delete(crd(2, "Database")));
        assert_eq!(gone, vec!["databases".to_string()]);
    }

    fn export(generation: i64) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIExport",
            "metadata": {"name": "things", "uid": "e1", "generation": generation},
        }))
        .unwrap()
    }

    #[test]
    fn an_edited_or_deleted_export_is_reconciled_and_a_status_update_is_not() {
        let mut trigger = ExportTrigger::default();
        assert!(trigger.admit(&watcher::Event::InitApply(export(1))));
        assert!(!trigger.admit(&watcher::Event::Apply(export(1))));
        assert!(trigger.admit(&watcher::Event::Apply(export(2))));
        assert!(trigger.admit(&watcher::Event::Delete(export(2))));
        assert!(trigger.admit(&watcher::Event::Apply(export(2))));
    }

    #[test]
    fn a_deletion_is_enqueued_and_forgotten() {
        let mut triggers = PublishTriggers::default();
        triggers.admit(&watcher::Event::Apply(pr("u1", 1)));
        let gone = watcher::Event::Delete(pr("u1", 1));
        assert_eq!(triggers.admit(&gone).as_deref(), Some("databases"));
        let back = watcher::Event::Apply(pr("u1", 1));
        assert_eq!(triggers.admit(&back).as_deref(), Some("databases"));
    }
}
