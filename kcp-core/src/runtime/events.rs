//! An Event recorder that aggregates repeats.
//!
//! A controller retrying a failing object would otherwise write a new Event on every attempt.
//! Here the same (object, type, reason, message) always maps to one Event named
//! `<object name>.<hash>`; recording it again bumps its `count` and `lastTimestamp` (an update
//! with the resourceVersion read, retried once on a conflict), as kubelet and client-go's
//! correlator do. No state is kept in the process, so aggregation holds across restarts and
//! replicas.

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use sha2::{Digest, Sha256};

use crate::client::ObjectClient;
use crate::error::Result;
use crate::typed::{from_dynamic, object_ref_for, to_dynamic};

/// The type of an Event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Something happened as expected.
    Normal,
    /// Something needs attention.
    Warning,
}

impl EventType {
    /// `Normal` or `Warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// Records Events for one component (the Event's `source.component`).
#[derive(Debug, Clone)]
pub struct EventRecorder {
    component: String,
}

impl EventRecorder {
    /// A recorder for `component` (e.g. `kcp-init-agent`).
    pub fn new(component: impl Into<String>) -> Self {
        EventRecorder {
            component: component.into(),
        }
    }

    /// The name of the Event that aggregates this (object, type, reason, message).
    pub fn event_name(
        regarding: &ObjectReference,
        event_type: EventType,
        reason: &str,
        message: &str,
    ) -> String {
        let mut hash = Sha256::new();
        for part in [
            regarding.uid.as_deref().unwrap_or_default(),
            regarding.kind.as_deref().unwrap_or_default(),
            regarding.namespace.as_deref().unwrap_or_default(),
            regarding.name.as_deref().unwrap_or_default(),
            event_type.as_str(),
            reason,
            message,
        ] {
            hash.update(part.as_bytes());
            hash.update([0u8]);
        }
        let digest = hex::encode(hash.finalize());
        let name = regarding.name.as_deref().unwrap_or("object");
        format!("{name}.{}", &digest[..16])
    }

    /// Records an Event about `regarding` through `client` (in the object's namespace, or
    /// `default` for cluster-scoped objects): creates it, or bumps the count of the same Event.
    pub async fn record(
        &self,
        client: &dyn ObjectClient,
        regarding: &ObjectReference,
        event_type: EventType,
        reason: &str,
        message: &str,
    ) -> Result<Event> {
        let name = Self::event_name(regarding, event_type, reason, message);
        let namespace = regarding
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".to_string());
        let now = crate::runtime::conditions::now();
        for _ in 0..2 {
            let existing = client
                .get(&object_ref_for::<Event>(Some(&namespace), &name))
                .await?;
            let result = match existing {
                Some(found) => {
                    let mut event: Event = from_dynamic(found)?;
                    event.count = Some(event.count.unwrap_or(1).saturating_add(1));
                    event.last_timestamp = Some(now.clone());
                    client
                        .replace(&to_dynamic(&event)?, crate::client::Subresource::Main)
                        .await
                }
                None => {
                    let event = self.new_event(
                        regarding,
                        &namespace,
                        &name,
                        event_type,
                        reason,
                        message,
                        now.clone(),
                    );
                    client.create(&to_dynamic(&event)?).await
                }
            };
            match result {
                Ok(written) => return from_dynamic(written),
                // Someone else recorded or bumped it meanwhile: read again and bump.
                Err(err) if err.is_conflict() => continue,
                Err(err) => return Err(err),
            }
        }
        Err(crate::Error::Api {
            verb: "record",
            object: format!("v1 Event {namespace}/{name}"),
            code: 409,
            reason: "Conflict".into(),
            message: "the Event kept changing while its count was bumped".into(),
        })
    }

    /// Like [`EventRecorder::record`], for Events that are usually new (one per object and
    /// reason, such as a sync agent's lifecycle Events): creates the Event first, one request
    /// instead of a read and a create, and bumps the existing one when it already exists.
    pub async fn record_likely_new(
        &self,
        client: &dyn ObjectClient,
        regarding: &ObjectReference,
        event_type: EventType,
        reason: &str,
        message: &str,
    ) -> Result<Event> {
        let name = Self::event_name(regarding, event_type, reason, message);
        let namespace = regarding
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".to_string());
        let now = crate::runtime::conditions::now();
        let event = self.new_event(
            regarding, &namespace, &name, event_type, reason, message, now,
        );
        match client.create(&to_dynamic(&event)?).await {
            Ok(written) => from_dynamic(written),
            Err(err) if err.is_already_exists() => {
                self.record(client, regarding, event_type, reason, message)
                    .await
            }
            Err(err) => Err(err),
        }
    }

    /// Records an Event about the object `about` (its reference built from the object itself)
    /// and never fails the caller: a failure to record is logged as a warning. The way a
    /// reconcile reports what it did.
    pub async fn publish<K>(
        &self,
        client: &dyn ObjectClient,
        about: &K,
        event_type: EventType,
        reason: &str,
        message: &str,
    ) where
        K: kube::Resource,
        K::DynamicType: Default,
    {
        let regarding = about.object_ref(&K::DynamicType::default());
        self.publish_about(client, &regarding, event_type, reason, message)
            .await;
    }

    /// [`EventRecorder::publish`] for an object of kind `K` known by name only (a failure
    /// handler that holds a key, not the object): the reference carries `K`'s apiVersion and
    /// kind, the namespace and the name, and no uid.
    pub async fn publish_named<K>(
        &self,
        client: &dyn ObjectClient,
        namespace: Option<&str>,
        name: &str,
        event_type: EventType,
        reason: &str,
        message: &str,
    ) where
        K: kube::Resource<DynamicType = ()>,
    {
        let regarding = ObjectReference {
            api_version: Some(K::api_version(&()).into_owned()),
            kind: Some(K::kind(&()).into_owned()),
            namespace: namespace.map(str::to_owned),
            name: Some(name.to_owned()),
            ..ObjectReference::default()
        };
        self.publish_about(client, &regarding, event_type, reason, message)
            .await;
    }

    /// [`EventRecorder::record`] that logs a failure as a warning instead of returning it.
    pub async fn publish_about(
        &self,
        client: &dyn ObjectClient,
        regarding: &ObjectReference,
        event_type: EventType,
        reason: &str,
        message: &str,
    ) {
        if let Err(err) = self
            .record(client, regarding, event_type, reason, message)
            .await
        {
            tracing::warn!(
                error = %err,
                kind = regarding.kind.as_deref().unwrap_or_default(),
                namespace = regarding.namespace.as_deref().unwrap_or_default(),
                name = regarding.name.as_deref().unwrap_or_default(),
                reason,
                "recording an Event failed"
            );
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn new_event(
        &self,
        regarding: &ObjectReference,
        namespace: &str,
        name: &str,
        event_type: EventType,
        reason: &str,
        message: &str,
        now: Time,
    ) -> Event {
        Event {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                namespace: Some(namespace.to_string()),
                ..ObjectMeta::default()
            },
            involved_object: regarding.clone(),
            reason: Some(reason.to_string()),
            message: Some(message.to_string()),
            type_: Some(event_type.as_str().to_string()),
            source: Some(EventSource {
                component: Some(self.component.clone()),
                host: None,
            }),
            reporting_component: Some(self.component.clone()),
            first_timestamp: Some(now.clone()),
            last_timestamp: Some(now),
            count: Some(1),
            ..Event::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regarding(uid: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("core.kcp.io/v1alpha1".into()),
            kind: Some("LogicalCluster".into()),
            name: Some("cluster".into()),
            uid: Some(uid.into()),
            ..ObjectReference::default()
        }
    }

    #[test]
    fn the_same_event_always_gets_the_same_name() {
        let a = EventRecorder::event_name(&regarding("u"), EventType::Warning, "R", "m");
        let b = EventRecorder::event_name(&regarding("u"), EventType::Warning, "R", "m");
        assert_eq!(a, b);
        assert!(
            a.starts_with("cluster.") && a.len() == "cluster.".len() + 16,
            "{a}"
        );
    }

    #[test]
    fn another_message_or_object_is_another_event() {
        let base = EventRecorder::event_name(&regarding("u"), EventType::Warning, "R", "m");
        assert_ne!(
            base,
            EventRecorder::event_name(&regarding("u"), EventType::Warning, "R", "n")
        );
        assert_ne!(
            base,
            EventRecorder::event_name(&regarding("v"), EventType::Warning, "R", "m")
        );
        assert_ne!(
            base,
            EventRecorder::event_name(&regarding("u"), EventType::Normal, "R", "m")
        );
    }
}
