//! Reconcile functions, each `reconcile_*(ctx: &PassContext, obj)`: the config group (sources -> Issuers,
//! Certificates, Secrets, Compiled* objects) in [`config`], the workload group (Compiled* ->
//! Deployments, Services, ConfigMaps) in [`workload`], and the Kubeconfig in [`kubeconfig`].
//!
//! Every function renders the desired children with [`crate::render`], [`ensure::ensure`]s
//! each (create if absent, update when different, controller-owned by the source), then writes
//! the status through kcp-core's `write_status` (only when it changed).

pub mod cached;
pub mod cleanup;
pub mod config;
pub mod copies;
pub mod ensure;
pub mod kubeconfig;
pub mod mounted;
pub mod pdb;
mod phased;
pub mod reads;
pub mod required;
pub mod retry;
pub mod virtualworkspace;
pub mod workload;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, OwnerReference};
use kcp_core::ObjectClient;
use kcp_core::ObjectClientExt as _;
use kcp_core::runtime::conditions::{ConditionUpdate, now, set_condition};
use kcp_core::runtime::owner::controller_reference_to;
use kube::Resource;

use crate::addresser::Addresser;
use crate::api::Shard;
use crate::error::{Error, Result};
use crate::render::certmanager::Certificate;
use ensure::ensure;
pub(crate) use phased::{PhasedStatus, write_stopped};

/// What one pass reads besides its object; every `reconcile_*` function takes it.
#[derive(Clone, Copy)]
pub struct PassContext<'a> {
    /// The client the pass reads and writes through.
    pub client: &'a dyn ObjectClient,
    /// How kcp endpoints are reached (Shard cleanup, Kubeconfig RBAC).
    pub addresser: &'a dyn Addresser,
    /// The Shard controller's store, once every cache synced: a RootShard's Shards are then
    /// listed from it instead of the API server (see [`cached`]).
    pub shards: Option<&'a kube::runtime::reflector::Store<Shard>>,
    /// The metadata stores of Secrets and ConfigMaps, once every cache synced: the versions of
    /// mounted objects are then read from them (see [`mounted`]).
    pub mounts: Option<&'a mounted::MountStores>,
}

impl<'a> PassContext<'a> {
    /// A context without a Shard store: every read goes through `client`.
    pub fn new(client: &'a dyn ObjectClient, addresser: &'a dyn Addresser) -> Self {
        Self {
            client,
            addresser,
            shards: None,
            mounts: None,
        }
    }
}

/// The field manager and Event source of kcp-operator.
pub const FIELD_MANAGER: &str = "kcp-operator";

pub(crate) fn core(context: impl Into<String>) -> impl FnOnce(kcp_core::Error) -> Error {
    let context = context.into();
    move |source| Error::Core { context, source }
}

/// `Kind namespace/name` of an object, for messages.
pub(crate) fn describe<K: Resource<DynamicType = ()>>(obj: &K) -> String {
    format!(
        "{} {}/{}",
        K::kind(&()),
        obj.meta().namespace.as_deref().unwrap_or_default(),
        obj.meta().name.as_deref().unwrap_or_default()
    )
}

/// The controller reference to `owner` (read from the server, so it has a uid).
pub(crate) fn owner_ref<K>(owner: &K) -> Result<OwnerReference>
where
    K: Resource<DynamicType = ()>,
{
    controller_reference_to(owner).map_err(core(format!("owner reference of {}", describe(owner))))
}

/// What the Certificates of one pass look like.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct CertificateState {
    /// Whether every Certificate reports `Ready=True`.
    pub all_ready: bool,
    /// `status.revision` per Certificate name (ready ones).
    pub revisions: BTreeMap<String, i64>,
    /// The Certificates not ready yet.
    pub pending: Vec<String>,
}

/// Ensures every Certificate, owned by `owner`, and reports their readiness and revisions.
pub(crate) async fn ensure_certificates(
    client: &dyn ObjectClient,
    certificates: &[Certificate],
    owner: &OwnerReference,
) -> Result<CertificateState> {
    let mut state = CertificateState {
        all_ready: true,
        ..CertificateState::default()
    };
    for cert in certificates {
        let (_, live) = ensure(client, cert, Some(owner)).await?;
        let name = live.metadata.name.clone().unwrap_or_default();
        if live.is_ready() {
            let revision = live.status.as_ref().and_then(|s| s.revision).unwrap_or(0);
            state.revisions.insert(name, revision);
        } else {
            state.all_ready = false;
            state.pending.push(name);
        }
    }
    Ok(state)
}

/// The `tls.crt` of Secret `namespace/name`; `None` when the Secret or the key is missing.
pub(crate) async fn secret_cert(
    client: &dyn ObjectClient,
    namespace: &str,
    name: &str,
) -> Result<Option<Vec<u8>>> {
    let secret: Option<Secret> = client
        .get_typed(Some(namespace), name)
        .await
        .map_err(core(format!("reading Secret {namespace}/{name}")))?;
    Ok(secret
        .and_then(|s| s.data)
        .and_then(|mut d| d.remove("tls.crt"))
        .map(|b| b.0))
}

/// Fails with [`Error::MissingReference`], naming the field, when a Secret `object` refers to
/// in `namespace` (by field path) does not exist; checked before a pass writes anything.
pub(crate) async fn require_secrets(
    client: &dyn ObjectClient,
    object: &str,
    namespace: &str,
    refs: &[(
        &str,
        Option<&k8s_openapi::api::core::v1::LocalObjectReference>,
    )],
) -> Result<()> {
    for (field, reference) in refs {
        let Some(reference) = reference else { continue };
        let secret: Option<Secret> = client
            .get_typed(Some(namespace), &reference.name)
            .await
            .map_err(core(format!(
                "reading Secret {namespace}/{}",
                reference.name
            )))?;
        if secret.is_none() {
            return Err(Error::MissingReference {
                object: object.to_owned(),
                field: (*field).to_owned(),
                target: format!("Secret {namespace}/{}", reference.name),
            });
        }
    }
    Ok(())
}

/// Concatenated PEM blobs, joined by newlines, empty parts skipped.
pub fn merge_pem(parts: &[Vec<u8>]) -> Vec<u8> {
    let parts: Vec<&[u8]> = parts
        .iter()
        .filter(|p| !p.is_empty())
        .map(Vec::as_slice)
        .collect();
    parts.join(&b'\n')
}

/// Writes Secret `name` with `tls.crt` = the merged `tls.crt` of `sources` (owned by
/// `owner`); `Ok(false)` when a source Secret does not exist yet.
pub(crate) async fn ensure_merged_bundle(
    client: &dyn ObjectClient,
    namespace: &str,
    name: &str,
    labels: BTreeMap<String, String>,
    sources: &[String],
    owner: &OwnerReference,
) -> Result<bool> {
    let mut parts = Vec::new();
    for source in sources {
        match secret_cert(client, namespace, source).await? {
            Some(pem) => parts.push(pem),
            None => return Ok(false),
        }
    }
    let secret = Secret {
        metadata: crate::render::meta(name, namespace, labels),
        data: Some(BTreeMap::from([(
            "tls.crt".to_owned(),
            k8s_openapi::ByteString(merge_pem(&parts)),
        )])),
        ..Secret::default()
    };
    ensure(client, &secret, Some(owner)).await?;
    Ok(true)
}

/// Sets conditions (each with `observedGeneration`) in a condition list.
pub(crate) fn set_conditions(
    conditions: &mut Vec<Condition>,
    updates: &[ConditionUpdate],
    generation: Option<i64>,
) {
    let time = now();
    for update in updates {
        set_condition(
            conditions,
            update.clone().generation(generation),
            time.clone(),
        );
    }
}
