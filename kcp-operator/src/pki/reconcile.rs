//! One pass of the built-in issuer over a cert-manager Certificate: resolve its Issuer or
//! ClusterIssuer, (re)issue the Secret when [`plan::issuance`] says so, then write the
//! Certificate's status as cert-manager does (`Ready`, `notBefore`, `notAfter`,
//! `renewalTime`, `revision`) and come back at the renewal time.

use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kcp_core::ObjectClient;
use kcp_core::ObjectClientExt as _;
use kcp_core::runtime::conditions::ConditionUpdate;
use kcp_core::runtime::{Outcome, write_status};

use super::BuiltinPki;
use super::plan::{self, CA_CRT, Issuance, IssuerKey, Material, Signer, TLS_CRT, TLS_KEY};
use super::x509::{self, CaKeyPair, CertificateRequest, Inspected, SignError};
use crate::error::Result;
use crate::reconcile::{core, describe, set_conditions};
use crate::render::certmanager::{Certificate, ClusterIssuer, Issuer};

/// How long a Certificate that cannot be issued yet waits before it is looked at again (its
/// issuer's and CA Secret's events wake it earlier).
pub const NOT_READY_RETRY: Duration = Duration::from_secs(30);
/// The longest a renewal is scheduled ahead; later renewals are re-checked this often.
pub const MAX_RENEWAL_WAIT: Duration = Duration::from_secs(24 * 3600);

/// Why a Certificate is not issued now.
struct NotReady {
    reason: &'static str,
    message: String,
}

fn not_ready(reason: &'static str, message: impl Into<String>) -> NotReady {
    NotReady {
        reason,
        message: message.into(),
    }
}

fn invalid(_cert: &Certificate, e: &SignError) -> NotReady {
    not_ready("Failed", e.to_string())
}

fn secret_text(secret: &Secret, key: &str) -> Option<String> {
    secret
        .data
        .as_ref()?
        .get(key)
        .and_then(|b| String::from_utf8(b.0.clone()).ok())
        .filter(|s| !s.is_empty())
}

async fn signer(
    client: &dyn ObjectClient,
    pki: &BuiltinPki,
    cert: &Certificate,
) -> Result<std::result::Result<Signer, NotReady>> {
    let ns = cert.metadata.namespace.clone().unwrap_or_default();
    let key = match plan::issuer_of(&ns, &cert.spec.issuer_ref) {
        Ok(k) => k,
        Err(e) => return Ok(Err(invalid(cert, &e))),
    };
    let found = match &key {
        IssuerKey::Issuer(ns, name) => client
            .get_typed::<Issuer>(Some(ns), name)
            .await
            .map_err(core(format!("reading Issuer {ns}/{name}")))?
            .map(|i| (i.spec.ca, i.spec.self_signed.is_some(), ns.clone())),
        IssuerKey::ClusterIssuer(name) => client
            .get_typed::<ClusterIssuer>(None, name)
            .await
            .map_err(core(format!("reading ClusterIssuer {name}")))?
            .map(|i| {
                let ns = pki.cluster_resource_namespace.clone();
                (i.spec.ca, i.spec.self_signed.is_some(), ns)
            }),
    };
    let Some((ca, self_signed, secret_ns)) = found else {
        return Ok(Err(not_ready(
            "Pending",
            format!("{key:?} does not exist yet"),
        )));
    };
    Ok(plan::signer_for(ca.as_ref(), self_signed, &secret_ns).map_err(|e| invalid(cert, &e)))
}

/// A CA read from its Secret, with the PEM chain it carries.
struct Ca {
    pair: CaKeyPair,
    tls_crt: String,
    ca_crt: String,
}

async fn load_ca(
    client: &dyn ObjectClient,
    ns: &str,
    name: &str,
) -> Result<std::result::Result<Ca, NotReady>> {
    let secret: Option<Secret> = client
        .get_typed(Some(ns), name)
        .await
        .map_err(core(format!("reading Secret {ns}/{name}")))?;
    let Some(secret) = secret else {
        return Ok(Err(not_ready(
            "Pending",
            format!("CA Secret {ns}/{name} does not exist yet"),
        )));
    };
    let (Some(tls_crt), Some(tls_key)) =
        (secret_text(&secret, TLS_CRT), secret_text(&secret, TLS_KEY))
    else {
        return Ok(Err(not_ready(
            "Pending",
            format!("CA Secret {ns}/{name} has no tls.crt and tls.key yet"),
        )));
    };
    let ca_crt = secret_text(&secret, CA_CRT).unwrap_or_default();
    Ok(CaKeyPair::from_pem(&tls_crt, &tls_key)
        .map(|pair| Ca {
            pair,
            tls_crt,
            ca_crt,
        })
        .map_err(|e| not_ready("Failed", format!("CA Secret {ns}/{name}: {e}"))))
}

/// Signs `cert`'s certificate and writes its Secret; returns what was issued.
async fn issue(
    client: &dyn ObjectClient,
    cert: &Certificate,
    live: Option<&Secret>,
    signer: &Signer,
    now: i64,
) -> Result<std::result::Result<Inspected, NotReady>> {
    let request = match CertificateRequest::from_spec(&cert.spec) {
        Ok(r) => r,
        Err(e) => return Ok(Err(invalid(cert, &e))),
    };
    let ca = match signer {
        Signer::SelfSigned => None,
        Signer::Ca(ns, name) => match load_ca(client, ns, name).await? {
            Ok(ca) => Some(ca),
            Err(n) => return Ok(Err(n)),
        },
    };
    let keep_key = cert
        .spec
        .private_key
        .as_ref()
        .is_some_and(|k| k.rotation_policy == "Never");
    let reuse = live
        .filter(|_| keep_key)
        .and_then(|s| secret_text(s, TLS_KEY));
    let signed = match x509::sign(
        &request,
        ca.as_ref().map(|c| &c.pair),
        reuse.as_deref(),
        now,
    ) {
        Ok(s) => s,
        Err(e) => return Ok(Err(invalid(cert, &e))),
    };
    let (tls_crt, ca_crt) = plan::chain(
        &signed.certificate_pem,
        ca.as_ref().map(|c| (c.tls_crt.as_str(), c.ca_crt.as_str())),
    );
    let material = Material {
        tls_crt,
        tls_key: signed.key_pem,
        ca_crt,
    };
    let secret = plan::render_certificate_secret(cert, live, &material);
    let target = format!(
        "Secret {}/{}",
        cert.metadata.namespace.as_deref().unwrap_or_default(),
        cert.spec.secret_name
    );
    match live {
        None => client.create_typed(&secret).await.map(|_| ()),
        Some(_) => client.replace_typed(&secret).await.map(|_| ()),
    }
    .map_err(core(format!("writing {target}")))?;
    let issued =
        x509::first_certificate_der(&signed.certificate_pem).and_then(|d| x509::inspect(&d));
    Ok(issued.ok_or_else(|| not_ready("Failed", "the signed certificate cannot be read back")))
}

fn rfc3339(seconds: i64) -> Option<String> {
    jiff::Timestamp::from_second(seconds)
        .ok()
        .map(|t| t.to_string())
}

async fn write_ready(
    client: &dyn ObjectClient,
    cert: &Certificate,
    current: &Inspected,
    renewal_at: i64,
    issued: bool,
) -> Result<()> {
    let generation = cert.metadata.generation;
    let ns = cert.metadata.namespace.clone().unwrap_or_default();
    let name = cert.metadata.name.clone().unwrap_or_default();
    write_status::<Certificate, _>(client, Some(&ns), &name, |c| {
        let s = c.status.get_or_insert_with(Default::default);
        let ready = ConditionUpdate::new("Ready", true, "Ready")
            .message("Certificate is up to date and has not expired");
        set_conditions(&mut s.conditions, &[ready], generation);
        s.conditions.retain(|c| c.type_ != "Issuing");
        s.not_before = rfc3339(current.not_before);
        s.not_after = rfc3339(current.not_after);
        s.renewal_time = rfc3339(renewal_at);
        s.revision = match (s.revision, issued) {
            (Some(r), true) => Some(r + 1),
            (None, _) => Some(1),
            (r, false) => r,
        };
    })
    .await
    .map_err(core(format!("writing the status of {}", describe(cert))))?;
    Ok(())
}

async fn write_not_ready(
    client: &dyn ObjectClient,
    cert: &Certificate,
    why: &NotReady,
) -> Result<()> {
    let generation = cert.metadata.generation;
    let ns = cert.metadata.namespace.clone().unwrap_or_default();
    let name = cert.metadata.name.clone().unwrap_or_default();
    let update = ConditionUpdate::new("Ready", false, why.reason).message(why.message.clone());
    write_status::<Certificate, _>(client, Some(&ns), &name, |c| {
        let s = c.status.get_or_insert_with(Default::default);
        set_conditions(&mut s.conditions, std::slice::from_ref(&update), generation);
    })
    .await
    .map_err(core(format!("writing the status of {}", describe(cert))))?;
    Ok(())
}

fn at_renewal(renewal_at: i64, now: i64) -> Outcome {
    let wait = Duration::from_secs(u64::try_from(renewal_at - now).unwrap_or(0).max(1));
    Outcome::RequeueAfter(wait.min(MAX_RENEWAL_WAIT))
}

/// One pass of the built-in issuer over `cert` at the current time.
pub async fn reconcile_certificate(
    client: &dyn ObjectClient,
    pki: &BuiltinPki,
    cert: &Certificate,
) -> Result<Outcome> {
    reconcile_certificate_at(client, pki, cert, jiff::Timestamp::now().as_second()).await
}

/// One pass of the built-in issuer over `cert` at `now` (unix seconds).
pub async fn reconcile_certificate_at(
    client: &dyn ObjectClient,
    pki: &BuiltinPki,
    cert: &Certificate,
    now: i64,
) -> Result<Outcome> {
    if cert.metadata.deletion_timestamp.is_some() {
        return Ok(Outcome::Done);
    }
    let ns = cert.metadata.namespace.clone().unwrap_or_default();
    let live: Option<Secret> = client
        .get_typed(Some(&ns), &cert.spec.secret_name)
        .await
        .map_err(core(format!(
            "reading Secret {ns}/{}",
            cert.spec.secret_name
        )))?;
    let reason = match plan::issuance(cert, live.as_ref(), now) {
        Issuance::UpToDate {
            current,
            renewal_at,
        } => {
            write_ready(client, cert, &current, renewal_at, false).await?;
            return Ok(at_renewal(renewal_at, now));
        }
        Issuance::Needed { reason, .. } => reason,
    };
    let outcome = match signer(client, pki, cert).await? {
        Ok(signer) => issue(client, cert, live.as_ref(), &signer, now).await?,
        Err(n) => Err(n),
    };
    match outcome {
        Ok(current) => {
            tracing::info!(certificate = %describe(cert), reason, "issued a certificate");
            let renewal_at = plan::renewal_time(
                current.not_before,
                current.not_after,
                cert.spec.renew_before.as_deref(),
            );
            write_ready(client, cert, &current, renewal_at, true).await?;
            Ok(at_renewal(renewal_at, now))
        }
        Err(why) => {
            write_not_ready(client, cert, &why).await?;
            Ok(Outcome::RequeueAfter(NOT_READY_RETRY))
        }
    }
}
