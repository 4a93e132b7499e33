//! The Kubeconfig controller (spec section 5.9): a client Certificate `kubeconfig-cert-<kc>`
//! and the kubeconfig Secret `spec.secretRef.name`, both owned by the Kubeconfig (upstream
//! orphans them, spec section 9 item 2), rewritten as soon as the certificate Secret is renewed
//! (the controller watches it), with the certificate's expiry in status.
//!
//! The RBAC part (ClusterRoleBindings in the target workspace, behind the
//! `operator.kcp.io/cleanup-rbac` finalizer) is in [`super::cleanup`].

use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kcp_core::ObjectClient;
use kcp_core::ObjectClientExt as _;
use kcp_core::runtime::conditions::ConditionUpdate;
use kcp_core::runtime::{ConditionStatus, Outcome, write_status};

use super::cleanup::{RbacTarget, kubeconfig_rbac};
use super::config::apply_status;
use super::ensure::ensure;
use super::{core, describe, owner_ref};
use crate::addresser::Endpoint;
use crate::api::*;
use crate::error::{Error, Result};
use crate::render::certmanager::Certificate;
use crate::render::kubeconfig::{EmbeddedCredentials, render_kubeconfig_secret};
use crate::render::names::{self, Component};
use crate::render::pki::{IntermediateCa, render_kubeconfig_certificate};

/// The resolved target of a Kubeconfig: its RootShard, its base URL, whether it is a
/// FrontProxy, and the FrontProxy's CA bundle Secret.
struct Target {
    root_shard: RootShard,
    base_url: String,
    front_proxy: bool,
    ca_bundle: Option<String>,
    /// For a Shard target: its name and `shardBaseURL`.
    shard: Option<(String, String)>,
}

impl Target {
    fn endpoint(&self) -> Endpoint<'_> {
        match &self.shard {
            Some((name, url)) => Endpoint::Shard(name, url),
            None if self.front_proxy => Endpoint::RootShardProxy,
            None => Endpoint::RootShard,
        }
    }
}

async fn get<K>(client: &dyn ObjectClient, ns: &str, name: &str) -> Result<Option<K>>
where
    K: kube::Resource<DynamicType = ()>
        + serde::de::DeserializeOwned
        + Clone
        + Send
        + Sync
        + serde::Serialize,
{
    client
        .get_typed(Some(ns), name)
        .await
        .map_err(core(format!("reading {} {ns}/{name}", K::kind(&()))))
}

/// The base URL of a FrontProxy target: its `external`, else the deprecated
/// `externalHostname` (`:6443` added when it has no port), else the RootShard's external address.
pub fn front_proxy_url(fp: &FrontProxySpec, rs: &RootShardSpec) -> String {
    if let Some(e) = fp.external.as_ref().filter(|e| !e.hostname.is_empty()) {
        return format!("https://{}:{}", e.hostname, e.port);
    }
    let host = fp.external_hostname.as_str();
    if !host.is_empty() {
        return match has_port(host) {
            true => format!("https://{host}"),
            // A bare IPv6 address gets its brackets (upstream would write `https://::1:6443`).
            false if host.contains(':') => {
                let bare = host.trim_start_matches('[').trim_end_matches(']');
                format!("https://[{bare}]:6443")
            }
            false => format!("https://{host}:6443"),
        };
    }
    format!("https://{}:{}", rs.external.hostname, rs.external.port)
}

/// Whether `host` carries a port, as Go's `net.SplitHostPort` decides (upstream's test):
/// `[v6]:port` and `name:port` do; `name`, a bare IPv6 address and `[v6]` do not.
fn has_port(host: &str) -> bool {
    match host.strip_prefix('[') {
        Some(rest) => rest
            .split_once(']')
            .is_some_and(|(_, after)| after.starts_with(':')),
        None => host.matches(':').count() == 1,
    }
}

/// What a Kubeconfig's target object (a RootShard, Shard or FrontProxy) says about the
/// kubeconfig, before its RootShard is read.
struct Via {
    /// The RootShard the target belongs to.
    root_shard: String,
    /// A Shard target's URL (a RootShard's and a FrontProxy's need the RootShard).
    base_url: Option<String>,
    /// Whether the target is a FrontProxy.
    front_proxy: bool,
    /// A FrontProxy's extra CA bundle Secret.
    ca_bundle: Option<String>,
    /// A Shard target's name and `shardBaseURL`.
    shard: Option<(String, String)>,
}

/// Reads `target` in `ns`; `None` when it does not exist.
async fn via(client: &dyn ObjectClient, ns: &str, target: TargetRef<'_>) -> Result<Option<Via>> {
    let via = match target {
        TargetRef::RootShard(n) => Via {
            root_shard: n.to_owned(),
            base_url: None,
            front_proxy: false,
            ca_bundle: None,
            shard: None,
        },
        TargetRef::Shard(n) => {
            let Some(s) = get::<Shard>(client, ns, n).await? else {
                return Ok(None);
            };
            let c = &s.spec.common;
            let url = names::base_url(
                Component::Shard,
                n,
                ns,
                &c.cluster_domain,
                &c.shard_base_url,
            );
            Via {
                root_shard: s.spec.root_shard.name().unwrap_or_default().to_owned(),
                base_url: Some(url),
                front_proxy: false,
                ca_bundle: None,
                shard: Some((n.to_owned(), c.shard_base_url.clone())),
            }
        }
        TargetRef::FrontProxy(n) => {
            let Some(fp) = get::<FrontProxy>(client, ns, n).await? else {
                return Ok(None);
            };
            Via {
                root_shard: fp.spec.root_shard.name().unwrap_or_default().to_owned(),
                base_url: None,
                front_proxy: true,
                ca_bundle: fp
                    .spec
                    .ca_bundle_secret_ref
                    .as_ref()
                    .map(|r| r.name.clone()),
                shard: None,
            }
        }
    };
    Ok(Some(via))
}

/// The target of a Kubeconfig in `ns` and its RootShard; `None` when either does not exist.
async fn resolve(
    client: &dyn ObjectClient,
    ns: &str,
    target: TargetRef<'_>,
) -> Result<Option<Target>> {
    let Some(via) = via(client, ns, target).await? else {
        return Ok(None);
    };
    let Some(rs) = get::<RootShard>(client, ns, &via.root_shard).await? else {
        return Ok(None);
    };
    let base_url = match (via.base_url, target) {
        (Some(url), _) => url,
        (None, TargetRef::FrontProxy(n)) => match get::<FrontProxy>(client, ns, n).await? {
            Some(fp) => front_proxy_url(&fp.spec, &rs.spec),
            None => return Ok(None),
        },
        (None, _) => {
            let c = &rs.spec.common;
            names::base_url(
                Component::RootShard,
                &via.root_shard,
                ns,
                &c.cluster_domain,
                &c.shard_base_url,
            )
        }
    };
    Ok(Some(Target {
        root_shard: rs,
        base_url,
        front_proxy: via.front_proxy,
        ca_bundle: via.ca_bundle,
        shard: via.shard,
    }))
}

/// The material of the kubeconfig, once the certificates are issued.
async fn credentials(
    client: &dyn ObjectClient,
    ns: &str,
    kc: &Kubeconfig,
    target: &Target,
) -> Result<Result<EmbeddedCredentials, ConditionUpdate>> {
    let rs_name = target.root_shard.metadata.name.clone().unwrap_or_default();
    let not_ready = |reason: &str, message: String| {
        ConditionUpdate::new(CONDITION_AVAILABLE, false, reason).message(message)
    };
    let client_secret: Option<Secret> = get(client, ns, &kc.certificate_name()).await?;
    let Some(client_data) = client_secret.and_then(|s| s.data) else {
        return Ok(Err(not_ready(
            "ClientCertificateSecretNotReady",
            format!("Secret {} is not issued yet.", kc.certificate_name()),
        )));
    };
    let server_ca = IntermediateCa::Server.name(&rs_name);
    let Some(mut ca) = super::secret_cert(client, ns, &server_ca).await? else {
        return Ok(Err(not_ready(
            "ServerCASecretNotReady",
            format!("Secret {server_ca} is not issued yet."),
        )));
    };
    if let Some(bundle) = &target.ca_bundle {
        match super::secret_cert(client, ns, bundle).await? {
            Some(extra) => ca = super::merge_pem(&[ca, extra]),
            None => {
                return Ok(Err(not_ready(
                    "ServerCASecretError",
                    format!("Secret {bundle} has no tls.crt."),
                )));
            }
        }
    }
    let (Some(cert), Some(key)) = (client_data.get("tls.crt"), client_data.get("tls.key")) else {
        return Ok(Err(not_ready(
            "ClientCertificateSecretError",
            format!("Secret {} lacks tls.crt or tls.key.", kc.certificate_name()),
        )));
    };
    Ok(Ok(EmbeddedCredentials {
        base_url: target.base_url.clone(),
        ca,
        certificate: cert.0.clone(),
        key: key.0.clone(),
        front_proxy: target.front_proxy,
    }))
}

/// One pass over a Kubeconfig; `ctx.addresser` reaches kcp for the RBAC part.
///
/// The Secret does not wait for the RBAC: it is written first, and a failure to reach kcp (the
/// target workspace not existing yet, kcp unreachable from an out-of-cluster run) only delays
/// the ClusterRoleBindings, which are retried with backoff. A missing target is written to
/// status and retried with backoff too (its creation also wakes the Kubeconfig).
pub async fn reconcile_kubeconfig(
    ctx: &super::PassContext<'_>,
    kc: &Kubeconfig,
) -> Result<Outcome> {
    let (client, addresser) = (ctx.client, ctx.addresser);
    let ns = kc.metadata.namespace.clone().unwrap_or_default();
    if kc.metadata.deletion_timestamp.is_none() {
        crate::validate::kubeconfig(&describe(kc), &kc.spec)?;
    }
    let target_ref = kc.spec.target.resolve();
    let target = match target_ref {
        Some(t) => resolve(client, &ns, t).await?,
        None => None,
    };
    let rbac_target = target
        .as_ref()
        .filter(|t| t.root_shard.metadata.deletion_timestamp.is_none())
        .map(|t| RbacTarget {
            root_shard: &t.root_shard,
            endpoint: t.endpoint(),
        });
    if kc.metadata.deletion_timestamp.is_some() {
        kubeconfig_rbac(client, addresser, kc, rbac_target).await?;
        return Ok(Outcome::Done);
    }
    let previously = kc
        .status
        .as_ref()
        .and_then(|s| s.authorization.as_ref())
        .map(|a| a.provisioned_cluster.clone());
    let Some(target) = &target else {
        return no_target(client, kc, target_ref, previously).await;
    };
    let (available, not_after, outcome) = provision(client, &ns, kc, target).await?;
    let rbac = kubeconfig_rbac(client, addresser, kc, rbac_target).await;
    let observed = Observed {
        reference: ConditionUpdate::new(CONDITION_REFERENCE_VALID, true, "ReferenceValid")
            .message("The target exists."),
        available,
        stopped: None,
        not_after,
        provisioned: rbac.as_ref().map_or(previously, Clone::clone),
    };
    write_kubeconfig_status(client, kc, observed).await?;
    rbac?;
    Ok(outcome)
}

/// Writes that `kc`'s target (`target_ref`, if set) does not exist; the error about the
/// missing target, or done when none is set.
async fn no_target(
    client: &dyn ObjectClient,
    kc: &Kubeconfig,
    target_ref: Option<TargetRef<'_>>,
    previously: Option<String>,
) -> Result<Outcome> {
    let missing = target_ref.map(|t| missing_target(kc, t));
    let observed = Observed {
        reference: ConditionUpdate::new(CONDITION_REFERENCE_VALID, false, "ReferenceNotFound")
            .message(match &missing {
                Some(missing) => format!("{missing}."),
                None => format!("{}: the target does not exist.", describe(kc)),
            }),
        available: ConditionUpdate::new(CONDITION_AVAILABLE, false, "ReferenceNotFound")
            .message("No target."),
        // What the controller reports of the error below, so that it has nothing to change.
        stopped: missing
            .as_ref()
            .map(|m| crate::status::stopped(m.reason(), m.to_string())),
        not_after: None,
        provisioned: previously,
    };
    write_kubeconfig_status(client, kc, observed).await?;
    match missing {
        Some(missing) => Err(missing),
        None => Ok(Outcome::Done),
    }
}

fn missing_target(kc: &Kubeconfig, target: TargetRef<'_>) -> Error {
    Error::MissingReference {
        object: describe(kc),
        field: target.field().to_owned(),
        target: target.display_name(),
    }
}

/// What one pass found out about a Kubeconfig, for its status.
struct Observed {
    reference: ConditionUpdate,
    available: ConditionUpdate,
    /// `Ready` when the pass stopped on the Kubeconfig's input (else computed).
    stopped: Option<ConditionUpdate>,
    not_after: Option<String>,
    /// The workspace its ClusterRoleBindings live in.
    provisioned: Option<String>,
}

async fn write_kubeconfig_status(
    client: &dyn ObjectClient,
    kc: &Kubeconfig,
    observed: Observed,
) -> Result<()> {
    let ns = kc.metadata.namespace.clone().unwrap_or_default();
    let name = kc.metadata.name.clone().unwrap_or_default();
    let generation = kc.metadata.generation;
    let target_name = kc
        .spec
        .target
        .resolve()
        .map(|t| t.display_name())
        .unwrap_or_default();
    write_status::<Kubeconfig, _>(client, Some(&ns), &name, |obj| {
        let s = obj.status.get_or_insert_with(Default::default);
        let mut updates = vec![observed.reference.clone(), observed.available.clone()];
        updates.extend(observed.stopped.clone());
        apply_status(
            &mut s.conditions,
            &mut s.phase,
            &mut s.observed_generation,
            &updates,
            generation,
            false,
        );
        s.phase = kubeconfig_phase(&observed.reference).to_owned();
        s.target_name.clone_from(&target_name);
        s.certificate_not_after.clone_from(&observed.not_after);
        s.authorization =
            observed
                .provisioned
                .clone()
                .map(|provisioned_cluster| KubeconfigAuthorizationStatus {
                    provisioned_cluster,
                });
    })
    .await
    .map_err(core(format!("writing the status of {}", describe(kc))))?;
    Ok(())
}

/// Upstream's phase: `Ready` when the target reference is valid, `Failed` when it is not,
/// `Provisioning` before that is known. It says nothing about the Secret: the `Available`
/// condition (and the summary `Ready` condition) say whether the Secret is written, so tools
/// waiting for the phase keep upstream's meaning and a wait for the Secret uses
/// `kubectl wait --for=condition=Available`.
pub fn kubeconfig_phase(reference: &ConditionUpdate) -> &'static str {
    match reference.status {
        ConditionStatus::True => "Ready",
        ConditionStatus::False => "Failed",
        ConditionStatus::Unknown => "Provisioning",
    }
}

async fn provision(
    client: &dyn ObjectClient,
    ns: &str,
    kc: &Kubeconfig,
    target: &Target,
) -> Result<(ConditionUpdate, Option<String>, Outcome)> {
    let owner = owner_ref(kc)?;
    let rs_name = target.root_shard.metadata.name.clone().unwrap_or_default();
    let (_, cert) = ensure(
        client,
        &render_kubeconfig_certificate(kc, &rs_name),
        Some(&owner),
    )
    .await?;
    let server_ca: Option<Certificate> =
        get(client, ns, &IntermediateCa::Server.name(&rs_name)).await?;
    let not_after = cert.status.as_ref().and_then(|s| s.not_after.clone());
    let retry = Outcome::RequeueAfter(Duration::from_secs(5));
    if !cert.is_ready() {
        let c = ConditionUpdate::new(
            CONDITION_AVAILABLE,
            false,
            "ClientCertificateSecretNotReady",
        )
        .message("The client certificate is not issued yet.");
        return Ok((c, not_after, retry));
    }
    if !server_ca.is_some_and(|c| c.is_ready()) {
        let c = ConditionUpdate::new(CONDITION_AVAILABLE, false, "ServerCASecretNotReady")
            .message("The server CA is not issued yet.");
        return Ok((c, not_after, retry));
    }
    match credentials(client, ns, kc, target).await? {
        Err(condition) => Ok((condition, not_after, retry)),
        Ok(creds) => {
            ensure(client, &render_kubeconfig_secret(kc, &creds)?, Some(&owner)).await?;
            let c = ConditionUpdate::new(CONDITION_AVAILABLE, true, "SecretsReady")
                .message("The kubeconfig Secret is up to date.");
            Ok((c, not_after, Outcome::Done))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(external_hostname: &str) -> String {
        let fp = FrontProxySpec {
            external_hostname: external_hostname.into(),
            ..FrontProxySpec::default()
        };
        front_proxy_url(&fp, &RootShardSpec::default())
    }

    #[test]
    fn a_deprecated_external_hostname_keeps_its_port_or_gets_6443() {
        assert_eq!(url("kcp.example.com"), "https://kcp.example.com:6443");
        assert_eq!(url("kcp.example.com:443"), "https://kcp.example.com:443");
        assert_eq!(url("[2001:db8::1]:443"), "https://[2001:db8::1]:443");
    }

    #[test]
    fn a_bare_ipv6_external_hostname_is_bracketed() {
        assert_eq!(url("2001:db8::1"), "https://[2001:db8::1]:6443");
        assert_eq!(url("[2001:db8::1]"), "https://[2001:db8::1]:6443");
    }
}
