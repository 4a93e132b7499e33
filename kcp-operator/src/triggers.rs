//! Watch streams that wake an owner only when a child changed in a way its pass reads.
//!
//! The built-in issuer (like cert-manager) writes each Certificate's status as it signs it,
//! and an installation has dozens of Certificates: with a plain `owns` watch every one of
//! those writes re-runs the owner. The owner's pass reads a Certificate's spec and metadata
//! (to keep them as rendered), whether it is `Ready`, its `revision` and its `notAfter`;
//! [`changes`] passes an object on only when such a [`fingerprint`](certificate_fingerprint)
//! changed, when it is new, or when it is deleted (so the owner recreates it).
//!
//! Likewise a controller's own kind, and the kinds it follows (a RootShard's Shards, a Shard's
//! RootShard), wake it when their spec or metadata change ([`spec_fingerprint`]), not when
//! their status is written: no pass reads another object's status but a Certificate's and a
//! Compiled* object's (whose owner watches see every change).

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use futures::{Stream, StreamExt as _};
use kube::Resource;
use kube::runtime::watcher;

use crate::render::certmanager::Certificate;

/// An object's spec (its generation) and metadata, hashed: labels, annotations, finalizers,
/// owner references and deletion. What a controller of the kind, or one following it, reacts
/// to; status writes (the controller's own, or the issuer's) leave it unchanged.
pub fn spec_fingerprint<K: Resource>(o: &K) -> u64 {
    let mut h = DefaultHasher::new();
    hash_meta(o.meta(), &mut h);
    h.finish()
}

fn hash_meta(m: &kube::api::ObjectMeta, h: &mut DefaultHasher) {
    m.generation.hash(h);
    m.labels.hash(h);
    m.annotations.hash(h);
    m.finalizers.hash(h);
    m.deletion_timestamp.as_ref().map(|t| t.0).hash(h);
    for r in m.owner_references.iter().flatten() {
        (&r.uid, &r.kind, &r.name, r.controller).hash(h);
    }
}

/// What a Certificate's owner reads of it, hashed: [`spec_fingerprint`], readiness, revision
/// and expiry.
pub fn certificate_fingerprint(c: &Certificate) -> u64 {
    let mut h = DefaultHasher::new();
    hash_meta(&c.metadata, &mut h);
    c.is_ready().hash(&mut h);
    let status = c.status.as_ref();
    status.and_then(|s| s.revision).hash(&mut h);
    status.and_then(|s| s.not_after.as_deref()).hash(&mut h);
    h.finish()
}

type Key = (Option<String>, String, Option<String>);

fn key<K: Resource>(o: &K) -> Key {
    let m = o.meta();
    (
        m.namespace.clone(),
        m.name.clone().unwrap_or_default(),
        m.uid.clone(),
    )
}

/// The objects of `events` whose `fingerprint` changed since they were last passed on, new
/// ones, and deleted ones; watch errors pass through.
pub fn changes<K, S>(
    events: S,
    fingerprint: fn(&K) -> u64,
) -> impl Stream<Item = Result<K, watcher::Error>> + Send + 'static
where
    K: Resource + Send + 'static,
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
{
    let mut seen: HashMap<Key, u64> = HashMap::new();
    events.filter_map(move |event| {
        let out = match event {
            Err(e) => Some(Err(e)),
            Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => {
                let print = fingerprint(&o);
                (seen.insert(key(&o), print) != Some(print)).then_some(Ok(o))
            }
            Ok(watcher::Event::Delete(o)) => {
                seen.remove(&key(&o));
                Some(Ok(o))
            }
            Ok(watcher::Event::Init | watcher::Event::InitDone) => None,
        };
        futures::future::ready(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::certmanager::{CertificateSpec, CertificateStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
    use watcher::Event;

    fn cert(ready: bool, revision: Option<i64>, renewal: &str) -> Certificate {
        let mut c = Certificate::new("server", CertificateSpec::default());
        c.metadata.namespace = Some("kcp".into());
        c.metadata.uid = Some("u1".into());
        c.status = Some(CertificateStatus {
            conditions: vec![Condition {
                type_: "Ready".into(),
                status: if ready { "True" } else { "False" }.into(),
                reason: "Ready".into(),
                message: String::new(),
                last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    Default::default(),
                ),
                observed_generation: None,
            }],
            revision,
            renewal_time: Some(renewal.into()),
            ..CertificateStatus::default()
        });
        c
    }

    async fn passed(events: Vec<Event<Certificate>>) -> Vec<Option<i64>> {
        let stream = futures::stream::iter(events.into_iter().map(Ok));
        changes(stream, certificate_fingerprint)
            .map(|r| r.map(|c| c.status.and_then(|s| s.revision)).unwrap_or(None))
            .collect()
            .await
    }

    #[tokio::test]
    async fn a_status_write_that_leaves_readiness_and_revision_alone_wakes_nobody() {
        let out = passed(vec![
            Event::Apply(cert(false, None, "a")),
            Event::Apply(cert(false, None, "b")),
            Event::Apply(cert(true, Some(1), "b")),
            Event::Apply(cert(true, Some(1), "c")),
        ])
        .await;
        assert_eq!(out, [None, Some(1)]);
    }

    #[tokio::test]
    async fn the_issuer_is_not_woken_by_status_writes() {
        let stream = futures::stream::iter(
            [cert(false, None, "a"), cert(true, Some(1), "b")].map(|c| Ok(Event::Apply(c))),
        );
        let passed = changes(stream, spec_fingerprint::<Certificate>)
            .count()
            .await;
        assert_eq!(passed, 1);
    }

    #[tokio::test]
    async fn a_renewal_and_a_deletion_wake_the_owner() {
        let out = passed(vec![
            Event::InitApply(cert(true, Some(1), "a")),
            Event::InitDone,
            Event::Apply(cert(true, Some(2), "a")),
            Event::Delete(cert(true, Some(2), "a")),
            Event::Apply(cert(false, None, "a")),
        ])
        .await;
        assert_eq!(out, [Some(1), Some(2), Some(2), None]);
    }
}
