//! The built-in issuer's controller (with `--pki=builtin`): one controller over every
//! Certificate, signing it with [`crate::pki::reconcile::reconcile_certificate`], woken by
//! the Issuers, ClusterIssuers and CA Secrets a waiting Certificate depends on.

use std::future::Future;
use std::sync::Arc;

use futures::StreamExt;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Secret;
use kcp_core::runtime::{Harness, drain_controller};
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};

use super::own_writes::{OwnWrites, RecordingSecretWrites};
use super::{Context, timed};
use crate::error::{Error, Result};
use crate::metrics::Metrics;
use crate::pki::BuiltinPki;
use crate::reconcile::reads::CachedGets;
use crate::reconcile::retry::RetryingReads;
use crate::render::certmanager::{Certificate, ClusterIssuer, Issuer};
use crate::shared::Hubs;

/// The built-in issuer's context.
struct PkiContext {
    ctx: Arc<Context>,
    own: Arc<OwnWrites>,
    harness: Harness,
    pki: BuiltinPki,
    metrics: Metrics,
}

/// One pass of the built-in issuer over `cert`, inside the controller's harness.
async fn reconcile_certificate(cert: Arc<Certificate>, ctx: Arc<PkiContext>) -> Result<Action> {
    let reads = RetryingReads(ctx.ctx.client.as_ref());
    let gets = CachedGets {
        inner: &reads,
        cache: ctx.ctx.reads.get(),
        synced: ctx.ctx.caches.is_synced(),
    };
    let client = RecordingSecretWrites {
        inner: &gets,
        own: &ctx.own,
    };
    let issue = crate::pki::reconcile::reconcile_certificate(&client, &ctx.pki, &cert);
    let passed = timed(&ctx.metrics, ctx.harness.controller(), issue);
    ctx.harness.reconcile(cert.as_ref(), passed).await
}

/// The harness's error policy.
fn certificate_error_policy(cert: Arc<Certificate>, err: &Error, ctx: Arc<PkiContext>) -> Action {
    ctx.harness.error_policy(cert.as_ref(), err)
}

/// Certificates in `store` not ready yet that `pick` selects.
fn waiting_certificates(
    store: &Store<Certificate>,
    pick: impl Fn(&Certificate) -> bool,
) -> Vec<ObjectRef<Certificate>> {
    store
        .state_filter(|c| !c.is_ready() && pick(c))
        .iter()
        .map(|c| ObjectRef::from_obj(c.as_ref()))
        .collect()
}

/// Whether `c` names the issuer `kind` `name` (in `namespace`, for an Issuer); an empty
/// kind is an Issuer.
fn names_issuer(c: &Certificate, kind: &str, namespace: Option<&str>, name: &str) -> bool {
    let r = &c.spec.issuer_ref;
    let kind_matches = r.kind == kind || (r.kind.is_empty() && kind == "Issuer");
    kind_matches
        && r.name == name
        && (namespace.is_none() || c.metadata.namespace.as_deref() == namespace)
}

/// The built-in issuer: one controller over every Certificate, woken by changes of its spec or
/// metadata (not its status, see [`crate::triggers::spec_fingerprint`]), by its Secret (by the
/// `cert-manager.io/certificate-name` annotation; not by the event of the issuer's own write,
/// see [`OwnWrites`]), by its Issuer or ClusterIssuer, and, while waiting, by the CA Secret of
/// its issuer.
fn certificate_controller(
    hubs: &mut Hubs,
    pki: &BuiltinPki,
    own: Arc<OwnWrites>,
) -> Controller<Certificate> {
    let hub = hubs.of::<Certificate>();
    let changes = hub.changes(crate::triggers::spec_fingerprint::<Certificate>);
    let controller = Controller::for_stream(changes, hub.store());
    let issuers = hubs.of::<Issuer>().store();
    let cluster_issuers = hubs.of::<ClusterIssuer>().store();
    let certs = controller.store();
    let (by_issuer, by_cluster_issuer) = (certs.clone(), certs.clone());
    let resource_ns = pki.cluster_resource_namespace.clone();
    controller
        .watches_stream(hubs.of::<Issuer>().objects(), move |i| {
            let name = i.metadata.name.clone().unwrap_or_default();
            waiting_certificates(&by_issuer, |c| {
                names_issuer(c, "Issuer", i.metadata.namespace.as_deref(), &name)
            })
        })
        .watches_stream(hubs.of::<ClusterIssuer>().objects(), move |i| {
            let name = i.metadata.name.clone().unwrap_or_default();
            waiting_certificates(&by_cluster_issuer, |c| {
                names_issuer(c, "ClusterIssuer", None, &name)
            })
        })
        .watches_stream(hubs.meta::<Secret>().metas_only(), move |s| {
            let ns = s.metadata.namespace.clone().unwrap_or_default();
            let owner = s
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(crate::pki::plan::CERTIFICATE_NAME_ANNOTATION))
                .filter(|_| !own.is_echo(&s.metadata))
                .map(|c| ObjectRef::new(c).within(&ns));
            let signing = signing_with(&issuers, &cluster_issuers, &resource_ns, &s.metadata);
            // Most Secrets are no issuer's CA: no scan of every Certificate for them.
            let waiting = if signing.is_empty() {
                Vec::new()
            } else {
                waiting_certificates(&certs, |c| {
                    signing.iter().any(|(issuer, ns)| match ns {
                        Some(ns) => names_issuer(c, "Issuer", Some(ns), issuer),
                        None => names_issuer(c, "ClusterIssuer", None, issuer),
                    })
                })
            };
            owner.into_iter().chain(waiting)
        })
}

/// The Issuers (name, namespace) and ClusterIssuers (name, `None`; their CA Secrets live in
/// `resource_ns`) whose CA is `secret`.
fn signing_with(
    issuers: &Store<Issuer>,
    cluster_issuers: &Store<ClusterIssuer>,
    resource_ns: &str,
    secret: &kube::api::ObjectMeta,
) -> Vec<(String, Option<String>)> {
    let (name, ns) = crate::render::name_ns(secret);
    let signs_with = |ca: Option<&crate::render::certmanager::CaIssuer>| {
        ca.is_some_and(|ca| ca.secret_name == name)
    };
    issuers
        .state_filter(|i| {
            i.metadata.namespace.as_deref() == Some(ns) && signs_with(i.spec.ca.as_ref())
        })
        .iter()
        .map(|i| {
            (
                i.metadata.name.clone().unwrap_or_default(),
                Some(ns.to_owned()),
            )
        })
        .chain(
            cluster_issuers
                .state_filter(|i| ns == resource_ns && signs_with(i.spec.ca.as_ref()))
                .iter()
                .map(|i| (i.metadata.name.clone().unwrap_or_default(), None)),
        )
        .collect()
}

/// The built-in issuer's controller, tracked for readiness, as a task that runs it to
/// completion after `shutdown` (see [`drain_controller`]).
pub(super) fn pki_controllers(
    hubs: &mut Hubs,
    ctx: &Arc<Context>,
    pki: &BuiltinPki,
    shutdown: impl Future<Output = ()> + Clone + Send + Sync + 'static,
) -> Vec<BoxFuture<'static, ()>> {
    let own = Arc::new(OwnWrites::default());
    let controller = certificate_controller(hubs, pki, own.clone()).graceful_shutdown_on(shutdown);
    let store = controller.store();
    ctx.caches.track(store.clone());
    // The Issuers and ClusterIssuers a pass looks up, and the Certificates whose status it
    // writes, are read from the context's shared read cache.
    ctx.caches.track(hubs.of::<Issuer>().store());
    ctx.caches.track(hubs.of::<ClusterIssuer>().store());
    let stop = ctx.stop.clone();
    let pki_ctx = Arc::new(PkiContext {
        ctx: ctx.clone(),
        own,
        harness: Harness::new("certificate", ctx.metrics.controllers(), 0),
        pki: pki.clone(),
        metrics: ctx.metrics.clone(),
    });
    let run = async move {
        let run = controller
            .run(reconcile_certificate, certificate_error_policy, pki_ctx)
            .for_each(|_| async {});
        drain_controller(run, store, stop).await;
    };
    vec![Box::pin(run)]
}
