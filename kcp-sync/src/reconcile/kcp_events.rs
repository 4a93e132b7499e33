//! Events on objects in a consumer workspace, as upstream's sync controller writes them: on the
//! kcp side only (a consumer sees them with `kubectl describe`), for primaries and related
//! objects alike, reported by the component `syncagent-sync`. Recording is best effort: a
//! failure is logged at warn and never fails the sync.
//!
//! [`involved_object`] is the one place kcp-sync builds an Event's object reference, for
//! objects it holds as JSON; a typed object's reference is kube's `object_ref`.

use k8s_openapi::api::core::v1::ObjectReference;
use kcp_core::ObjectClient;
use kcp_core::runtime::{EventRecorder, EventType};
use serde_json::Value;

use super::caches::SyncCaches;
use crate::metadata::meta_str;

/// The reporting component of sync Events: upstream's sync controller's name.
pub const SYNC_COMPONENT: &str = "syncagent-sync";

/// Upstream's Events (reason, message), for primaries and related objects alike.
pub const ACCEPTED: (&str, &str) = (
    "ObjectAccepted",
    "Object has been seen by the service provider.",
);
/// The copy was created.
pub const PLACED: (&str, &str) = ("ObjectPlaced", "Object has been placed.");
/// The copy's spec was brought up to date.
pub const SYNCED: (&str, &str) = (
    "ObjectSynced",
    "The current desired state of the object has been synchronized.",
);
/// The status came back into kcp.
pub const STATUS_SYNCED: (&str, &str) = (
    "ObjectStatusSynced",
    "The current object status has been updated.",
);
/// The copy's deletion was started.
pub const CLEANUP: (&str, &str) = (
    "ObjectCleanup",
    "Object deletion has been started and will progress in the background.",
);
/// The copy is gone and the original released.
pub const DELETED: (&str, &str) = (
    "ObjectDeleted",
    "Object deletion has been completed, finalizer has been removed.",
);
/// The Warning on a kcp object that could not be synced: upstream's generic text (the real
/// error stays on the service side, in the log and the PublishedResource's status).
pub const RECONCILING_ERROR: (&str, &str) = (
    "ReconcilingError",
    "Failed to process object: a provider-side issue has occurred.",
);
/// The Warning on the kcp side of a related pair whose status cannot be forwarded because the
/// copy's kind has no status subresource. Upstream writes it since after v0.7.0 (its
/// `internal/sync/object_syncer.go`, `syncObjectStatusForward`, read at kcp-dev/api-syncagent
/// 51995bd, the words copied from there), so it is not in [`ALL`], which v0.7.0's source is
/// checked against: the Go module proxy serves no later release.
pub const STATUS_SUBRESOURCE_MISSING: (&str, &str) = (
    "StatusSubresourceMissing",
    "Cannot sync status: the destination resource does not have a status subresource. Set syncStatus: false or add subresources.status to the CRD.",
);
/// Every (reason, message) the sync controllers write on kcp objects that upstream's v0.7.0
/// writes too.
pub const ALL: [(&str, &str); 7] = [
    ACCEPTED,
    PLACED,
    SYNCED,
    STATUS_SYNCED,
    CLEANUP,
    DELETED,
    RECONCILING_ERROR,
];

/// Where Events of one consumer cluster go.
#[derive(Clone, Copy)]
pub struct KcpEvents<'a> {
    /// The recorder; `None` records nothing.
    pub recorder: Option<&'a EventRecorder>,
    /// The controller's caches: an Event recorded before is counted up without a failed create.
    pub caches: Option<&'a SyncCaches>,
    /// The consumer cluster, through the virtual workspace.
    pub kcp: &'a dyn ObjectClient,
    /// Its logical cluster name.
    pub cluster: &'a str,
}

impl KcpEvents<'_> {
    /// Records an Event about `object` (a kcp object as JSON).
    pub async fn record(&self, object: &Value, kind: EventType, reason: &str, message: &str) {
        let Some(recorder) = self.recorder else {
            return;
        };
        let reference = involved_object(object);
        let name = EventRecorder::event_name(&reference, kind, reason, message);
        let key = format!(
            "{}/{}/{name}",
            self.cluster,
            reference.namespace.as_deref().unwrap_or_default()
        );
        let known = self.caches.is_some_and(|c| c.has_event(&key));
        let result = if known {
            recorder
                .record(self.kcp, &reference, kind, reason, message)
                .await
        } else {
            recorder
                .record_likely_new(self.kcp, &reference, kind, reason, message)
                .await
        };
        match result {
            Ok(_) => {
                if let Some(caches) = self.caches {
                    caches.add_event(key);
                }
            }
            Err(e) => tracing::warn!(
                error = %e,
                cluster = self.cluster,
                kind = reference.kind.as_deref().unwrap_or_default(),
                name = reference.name.as_deref().unwrap_or_default(),
                reason,
                "recording an Event failed"
            ),
        }
    }
}

/// The Event's `involvedObject` for an object as JSON (`apiVersion`, `kind`, and the name,
/// namespace and uid of its metadata, each left out when empty).
pub fn involved_object(object: &Value) -> ObjectReference {
    let field = |name: &str| Some(meta_str(object, name).to_owned()).filter(|s| !s.is_empty());
    let top = |name: &str| object.get(name).and_then(Value::as_str).map(str::to_owned);
    ObjectReference {
        api_version: top("apiVersion"),
        kind: top("kind"),
        name: field("name"),
        namespace: field("namespace"),
        uid: field("uid"),
        resource_version: None,
        field_path: None,
    }
}
