//! The built-in PKI's decisions, as pure functions: which issuer signs a Certificate
//! ([`issuer_of`], [`signer_for`]), whether its Secret must be (re)issued ([`issuance`]), when
//! it is renewed ([`renewal_time`]), the certificate chain of the Secret ([`chain`]) and the
//! Secret itself ([`render_certificate_secret`]), with the keys and annotations cert-manager
//! writes.

use std::collections::BTreeMap;
use std::net::IpAddr;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::ObjectMeta;

use super::x509::{self, SignError};
use crate::render::certmanager::{CaIssuer, Certificate, CertificateSpec, IssuerReference};
use crate::render::duration;

/// `tls.crt`: the certificate and the intermediates above it.
pub const TLS_CRT: &str = "tls.crt";
/// `tls.key`: the private key.
pub const TLS_KEY: &str = "tls.key";
/// `ca.crt`: the root of the chain.
pub const CA_CRT: &str = "ca.crt";

/// cert-manager's annotation naming the Certificate a Secret belongs to.
pub const CERTIFICATE_NAME_ANNOTATION: &str = "cert-manager.io/certificate-name";
/// cert-manager's annotation naming the issuer of a Secret's certificate.
pub const ISSUER_NAME_ANNOTATION: &str = "cert-manager.io/issuer-name";
/// cert-manager's annotation with the issuer's kind.
pub const ISSUER_KIND_ANNOTATION: &str = "cert-manager.io/issuer-kind";
/// cert-manager's annotation with the issuer's group.
pub const ISSUER_GROUP_ANNOTATION: &str = "cert-manager.io/issuer-group";
/// cert-manager's label on the Secrets it manages.
pub const MANAGED_LABEL: &str = "controller.cert-manager.io/fao";

/// The issuer object a Certificate names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IssuerKey {
    /// A namespaced Issuer (namespace, name).
    Issuer(String, String),
    /// A ClusterIssuer.
    ClusterIssuer(String),
}

/// The issuer object `issuer_ref` names from `namespace`; an error for issuers of other API
/// groups (external issuers), which the built-in PKI cannot play.
pub fn issuer_of(namespace: &str, issuer_ref: &IssuerReference) -> Result<IssuerKey, SignError> {
    if !issuer_ref.group.is_empty()
        && issuer_ref.group != crate::render::certmanager::CERT_MANAGER_GROUP
    {
        return Err(SignError {
            field: "spec.issuerRef.group".into(),
            reason: format!(
                "{:?} is an external issuer; the built-in PKI signs for cert-manager.io Issuers and ClusterIssuers only",
                issuer_ref.group
            ),
        });
    }
    match issuer_ref.kind.as_str() {
        "" | "Issuer" => Ok(IssuerKey::Issuer(
            namespace.to_owned(),
            issuer_ref.name.clone(),
        )),
        "ClusterIssuer" => Ok(IssuerKey::ClusterIssuer(issuer_ref.name.clone())),
        other => Err(SignError {
            field: "spec.issuerRef.kind".into(),
            reason: format!("{other:?} is neither Issuer nor ClusterIssuer"),
        }),
    }
}

/// How a Certificate is signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signer {
    /// With its own key.
    SelfSigned,
    /// With the CA key pair in Secret (namespace, name).
    Ca(String, String),
}

/// The signer of an issuer with `ca`/`selfSigned`; a CA's Secret is read from
/// `secret_namespace` (the Issuer's namespace, or the cluster resource namespace of a
/// ClusterIssuer).
pub fn signer_for(
    ca: Option<&CaIssuer>,
    self_signed: bool,
    secret_namespace: &str,
) -> Result<Signer, SignError> {
    match (ca, self_signed) {
        (Some(ca), _) => Ok(Signer::Ca(secret_namespace.to_owned(), ca.secret_name.clone())),
        (None, true) => Ok(Signer::SelfSigned),
        (None, false) => Err(SignError {
            field: "spec".into(),
            reason: "the issuer is neither a CA nor a self-signed issuer (other issuer types need cert-manager)".into(),
        }),
    }
}

/// Whether a Certificate's Secret needs a new certificate, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Issuance {
    /// The Secret holds a valid certificate matching the spec; renew at this unix time.
    UpToDate {
        /// What the Secret's certificate says.
        current: x509::Inspected,
        /// The renewal time, unix seconds.
        renewal_at: i64,
    },
    /// A certificate must be issued.
    Needed {
        /// A cert-manager style reason (`DoesNotExist`, `MissingData`, `InvalidCertificate`,
        /// `IncorrectIssuer`, `SecretMismatch`, `Renewing`).
        reason: &'static str,
        /// A sentence for the `Issuing` condition.
        message: String,
    },
}

fn needed(reason: &'static str, message: impl Into<String>) -> Issuance {
    Issuance::Needed {
        reason,
        message: message.into(),
    }
}

fn data<'a>(secret: &'a Secret, key: &str) -> Option<&'a [u8]> {
    secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .map(|b| b.0.as_slice())
        .filter(|b| !b.is_empty())
}

/// Whether `secret` (the Certificate's Secret, if any) must get a new certificate at `now`
/// (unix seconds): missing, incomplete, unreadable, from another issuer, not matching the spec
/// (subject, DNS names, IP addresses, CA flag), or due for renewal.
pub fn issuance(cert: &Certificate, secret: Option<&Secret>, now: i64) -> Issuance {
    let Some(secret) = secret else {
        return needed(
            "DoesNotExist",
            "Issuing certificate as Secret does not exist",
        );
    };
    let (Some(crt), Some(_)) = (data(secret, TLS_CRT), data(secret, TLS_KEY)) else {
        return needed(
            "MissingData",
            "Issuing certificate as Secret does not contain a certificate and key",
        );
    };
    let Some(current) = std::str::from_utf8(crt)
        .ok()
        .and_then(x509::first_certificate_der)
        .and_then(|der| x509::inspect(&der))
    else {
        return needed(
            "InvalidCertificate",
            "Issuing certificate as Secret contains an invalid certificate",
        );
    };
    let annotations = secret.metadata.annotations.clone().unwrap_or_default();
    let issuer = &cert.spec.issuer_ref;
    let issued_by = annotations.get(ISSUER_NAME_ANNOTATION).map(String::as_str);
    let issued_kind = annotations.get(ISSUER_KIND_ANNOTATION).map(String::as_str);
    if issued_by != Some(issuer.name.as_str()) || issued_kind != Some(issuer_kind(issuer)) {
        return needed(
            "IncorrectIssuer",
            format!(
                "Issuing certificate as Secret was previously issued by {}/{}",
                issued_kind.unwrap_or("?"),
                issued_by.unwrap_or("?")
            ),
        );
    }
    if !matches_spec(&cert.spec, &current) {
        return needed(
            "SecretMismatch",
            "Issuing certificate as Secret does not match the Certificate spec",
        );
    }
    let renewal_at = renewal_time(
        current.not_before,
        current.not_after,
        cert.spec.renew_before.as_deref(),
    );
    if now >= renewal_at {
        return needed("Renewing", "Renewing certificate as renewal was scheduled");
    }
    Issuance::UpToDate {
        current,
        renewal_at,
    }
}

fn issuer_kind(issuer: &IssuerReference) -> &str {
    if issuer.kind.is_empty() {
        "Issuer"
    } else {
        &issuer.kind
    }
}

fn sorted<T: Ord + Clone>(v: &[T]) -> Vec<T> {
    let mut v = v.to_vec();
    v.sort();
    v.dedup();
    v
}

/// Whether a certificate has the subject, SANs and CA flag a spec asks for.
pub fn matches_spec(spec: &CertificateSpec, current: &x509::Inspected) -> bool {
    let subject = x509::encode_name(&x509::subject(&spec.common_name, spec.subject.as_ref()));
    let ips: Vec<IpAddr> = spec
        .ip_addresses
        .iter()
        .filter_map(|i| i.parse().ok())
        .collect();
    subject == current.subject
        && sorted(&spec.dns_names) == sorted(&current.dns_names)
        && sorted(&ips) == sorted(&current.ip_addresses)
        && spec.is_ca == current.is_ca
}

/// When a certificate valid from `not_before` to `not_after` is renewed (unix seconds), as
/// cert-manager computes it: `renewBefore` before expiry when it is shorter than the
/// lifetime, else (and by default) a third of the lifetime before expiry.
pub fn renewal_time(not_before: i64, not_after: i64, renew_before: Option<&str>) -> i64 {
    let lifetime = not_after - not_before;
    let before = renew_before
        .and_then(duration::parse)
        .map(|ns| (ns / 1_000_000_000) as i64)
        .filter(|b| *b > 0 && *b < lifetime)
        .unwrap_or(lifetime / 3);
    not_after - before
}

/// `tls.crt` and `ca.crt` of a certificate `leaf_pem` signed by a CA whose Secret holds
/// `ca_tls_crt` and `ca_ca_crt` (`None` for a self-signed certificate, which is its own CA):
/// the leaf followed by the CA's chain without its root, and the root.
pub fn chain(leaf_pem: &str, ca: Option<(&str, &str)>) -> (String, String) {
    let Some((ca_tls, ca_ca)) = ca else {
        return (leaf_pem.to_owned(), leaf_pem.to_owned());
    };
    let mut tls = leaf_pem.to_owned();
    let (mut root, mut last) = (None, None);
    for der in x509::certificates_der(ca_tls) {
        let pem = x509::certificate_pem(&der);
        if x509::inspect(&der).is_some_and(|c| c.self_issued) {
            root = Some(pem.clone());
        } else {
            tls.push_str(&pem);
        }
        last = Some(pem);
    }
    let ca_crt = root
        .or_else(|| (!x509::certificates_der(ca_ca).is_empty()).then(|| ca_ca.to_owned()))
        .or(last)
        .unwrap_or_default();
    (tls, ca_crt)
}

/// The PEM material of an issued certificate.
pub struct Material {
    /// `tls.crt`.
    pub tls_crt: String,
    /// `tls.key` (never logged).
    pub tls_key: String,
    /// `ca.crt`.
    pub ca_crt: String,
}

impl std::fmt::Debug for Material {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Material")
            .field("tls_crt", &self.tls_crt)
            .field("tls_key", &"[elided]")
            .field("ca_crt", &self.ca_crt)
            .finish()
    }
}

fn merged(
    live: Option<&BTreeMap<String, String>>,
    overlay: impl IntoIterator<Item = (String, String)>,
) -> Option<BTreeMap<String, String>> {
    let mut out = live.cloned().unwrap_or_default();
    out.extend(overlay);
    (!out.is_empty()).then_some(out)
}

/// The Secret of Certificate `cert` holding `material`, as cert-manager writes it: type
/// `kubernetes.io/tls` (kept when an existing Secret has another type), keys `tls.crt`,
/// `tls.key` and `ca.crt`, the `secretTemplate` labels and annotations, and the
/// `cert-manager.io/*` annotations; labels, annotations and keys of `live` are kept.
pub fn render_certificate_secret(
    cert: &Certificate,
    live: Option<&Secret>,
    material: &Material,
) -> Secret {
    let spec = &cert.spec;
    let template = spec.secret_template.clone().unwrap_or_default();
    let issuer = &spec.issuer_ref;
    let mut annotations = template.annotations.clone();
    for (k, v) in [
        (
            CERTIFICATE_NAME_ANNOTATION,
            cert.metadata.name.clone().unwrap_or_default(),
        ),
        (ISSUER_NAME_ANNOTATION, issuer.name.clone()),
        (ISSUER_KIND_ANNOTATION, issuer_kind(issuer).to_owned()),
        (
            ISSUER_GROUP_ANNOTATION,
            if issuer.group.is_empty() {
                crate::render::certmanager::CERT_MANAGER_GROUP.to_owned()
            } else {
                issuer.group.clone()
            },
        ),
        ("cert-manager.io/common-name", spec.common_name.clone()),
        ("cert-manager.io/alt-names", spec.dns_names.join(",")),
        ("cert-manager.io/ip-sans", spec.ip_addresses.join(",")),
        ("cert-manager.io/uri-sans", String::new()),
    ] {
        annotations.insert(k.to_owned(), v);
    }
    let mut labels = template.labels.clone();
    labels.insert(MANAGED_LABEL.to_owned(), "true".to_owned());
    let live_meta = live.map(|s| &s.metadata);
    let mut data = live.and_then(|s| s.data.clone()).unwrap_or_default();
    for (k, v) in [
        (TLS_CRT, &material.tls_crt),
        (TLS_KEY, &material.tls_key),
        (CA_CRT, &material.ca_crt),
    ] {
        data.insert(k.to_owned(), ByteString(v.as_bytes().to_vec()));
    }
    Secret {
        metadata: ObjectMeta {
            name: Some(spec.secret_name.clone()),
            namespace: cert.metadata.namespace.clone(),
            labels: merged(live_meta.and_then(|m| m.labels.as_ref()), labels),
            annotations: merged(live_meta.and_then(|m| m.annotations.as_ref()), annotations),
            ..live_meta.cloned().unwrap_or_default()
        },
        type_: Some(
            live.and_then(|s| s.type_.clone())
                .unwrap_or_else(|| "kubernetes.io/tls".to_owned()),
        ),
        data: Some(data),
        ..Secret::default()
    }
}
